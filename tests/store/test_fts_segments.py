"""The full-text indexes are merged off the writing call's path, once writes pause: a
steady stream of writes sees no merge step while it lasts; after many small write
transactions and a pause each index holds fewer than `SPARE_SEGMENTS` segments more than
one a level; merging changes no search's results; a process killed during a merge step,
or between two, leaves the indexes whole, and the next store to open the file finishes
the merge."""

from __future__ import annotations

import contextlib
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from mnemodb.engine import Engine
from mnemodb.engine.items import Note
from mnemodb.model.records import NewMemory
from mnemodb.store.sqlite import SqliteStore, checkpoint
from mnemodb.store.sqlite.segments import INDEXES, SPARE_SEGMENTS, levels, merge, needs_merge
from support import wait_for

WORDS = [
    "amber",
    "basalt",
    "cobalt",
    "dune",
    "ember",
    "fjord",
    "garnet",
    "harbor",
    "iris",
    "jasper",
    "kelp",
    "lagoon",
    "marble",
    "nectar",
    "onyx",
    "pebble",
]
SINGLES = 200
"""Single writes that leave several small segments more than one a level in each index."""
QUERIES = ("amber", "cobalt fjord", "lagoon", "garnet OR onyx", "pebble iris", "ent")


def _text(i: int) -> str:
    """A sentence whose words differ from one memory to the next."""
    return " ".join(WORDS[(i * k) % len(WORDS)] + str(i % (k + 3)) for k in range(1, 9)) + f" {WORDS[i % 16]}"


def _write_singly(engine: Engine, start: int, count: int) -> None:
    """One memory about one entity a transaction, as single `remember` calls write them."""
    for i in range(start, start + count):
        engine.items.remember([Note(NewMemory(_text(i)), about=(f"entity {WORDS[i % 16]} {i}",))])


def _write_in_bulk(engine: Engine, start: int, count: int) -> None:
    engine.items.remember([Note(NewMemory(_text(i) + " " + _text(i + 1))) for i in range(start, start + count)])


def _structure(db: Path) -> dict[str, list[tuple[int, bool]]]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return {index: levels(conn, index) for index in INDEXES}


def _unmerged(db: Path) -> list[str]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return [index for index in INDEXES if needs_merge(conn, index)]


def _found(db: Path) -> dict[tuple[str, str], list[tuple[int, float]]]:
    """Each query's rows and ranks in each index that holds text."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return {
            (index, query): conn.execute(
                f"SELECT rowid, rank FROM {index} WHERE {index} MATCH ? ORDER BY rank, rowid", (query,)
            ).fetchall()
            for index in INDEXES
            if index != "node_text"
            for query in QUERIES
        }


def _check_indexes(db: Path) -> None:
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        for index in INDEXES:
            conn.execute(f"INSERT INTO {index} ({index}) VALUES ('integrity-check')")


NEVER_S = 1e9
"""A pause the writes of a test never reach."""


@pytest.fixture
def unmerging(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stores that never merge their segments: the writes never pause long enough."""
    monkeypatch.setattr(checkpoint, "MERGE_PAUSE_S", NEVER_S)


@pytest.fixture
def eager(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stores that merge as soon as no commit is under way."""
    monkeypatch.setattr(checkpoint, "MERGE_PAUSE_S", 0.0)


def _merge_steps(engine: Engine) -> int:
    checkpointer = engine.store._checkpointer  # type: ignore[attr-defined]
    assert checkpointer is not None
    steps: int = checkpointer.merge_steps
    return steps


def _written_unmerged(db: Path, bulk: bool = False) -> dict[tuple[str, str], list[tuple[int, float]]]:
    with Engine.open(str(db)) as engine:
        if bulk:
            # Two large segments on one level: merging them takes many steps of one page.
            _write_in_bulk(engine, 1000, 300)
            _write_in_bulk(engine, 2000, 300)
        _write_singly(engine, 0, SINGLES)
    assert any(segments > 1 for segments, _ in _structure(db)["memory_fts"]), "a level of memory_fts to merge"
    return _found(db)


def _spare(structure: list[tuple[int, bool]]) -> int:
    """Segments more than one a level."""
    return sum(segments - 1 for segments, _ in structure if segments > 1)


def _write_a_stream(engine: Engine) -> None:
    """Four bulk writes of 100 memories, then `SINGLES` one at a time: many small segments
    in every full-text index."""
    for k in range(1, 5):
        _write_in_bulk(engine, 1000 * k, 100)
    _write_singly(engine, 0, SINGLES)


def test_a_steady_stream_of_writes_sees_no_merge_step(tmp_path: Path, unmerging: None) -> None:
    db = tmp_path / "memory.db"
    with Engine.open(str(db)) as engine:
        _write_a_stream(engine)
        # Searches' access statistics are flushed as writes too: they do not end the pause.
        for _ in range(20):
            engine.store.bump_access({1: (1, 0)})
        assert _merge_steps(engine) == 0
        assert _unmerged(db)


def test_the_segments_are_merged_once_the_writes_pause(tmp_path: Path, eager: None) -> None:
    db = tmp_path / "memory.db"
    with Engine.open(str(db)) as engine:
        _write_a_stream(engine)
        assert wait_for(lambda: not _unmerged(db), 60.0)
        assert _merge_steps(engine) > 0
        assert engine.stats().memories == 4 * 100 + SINGLES
    _check_indexes(db)


def test_a_commit_ends_the_merge_until_the_next_pause(tmp_path: Path, unmerging: None) -> None:
    """A merge under way gives way to the caller's writes: the steps stop at the first
    commit after the pause began, and go on only when the writes pause again. The thread's
    own turns are driven here, one by one (its pause is never reached)."""
    db = tmp_path / "memory.db"
    before = _written_unmerged(db, bulk=True)
    store = SqliteStore(str(db))
    try:
        checkpointer = store._checkpointer
        assert checkpointer is not None
        with contextlib.closing(store._connect()) as conn:
            conn.execute("PRAGMA busy_timeout = 0")
            checkpointer._pause_began = checkpointer._last_write
            steps: list[int] = []

            def take_turn() -> bool:
                return checkpointer._take_turn()

            def end_turn(committed: bool) -> None:
                checkpointer._end_turn(committed)
                steps.append(checkpointer.merge_steps)
                if len(steps) == 2:
                    # A caller's write commits between two steps.
                    with store.write() as tx:
                        tx.conn.execute("SELECT 1")

            assert not merge(conn, INDEXES, take_turn, end_turn, pages=1)
            assert steps == [1, 2]
            assert _unmerged(db)
            # The next pause: the steps go on from there to the end.
            checkpointer._pause_began = checkpointer._last_write
            assert merge(conn, INDEXES, take_turn, end_turn, pages=1)
            assert not _unmerged(db)
    finally:
        store.close()
    assert _found(db) == before


def test_many_small_writes_end_in_few_segments(tmp_path: Path, eager: None) -> None:
    db = tmp_path / "memory.db"
    with Engine.open(str(db)) as engine:
        for k in range(1, 9):
            _write_in_bulk(engine, 1000 * k, 200)
        _write_singly(engine, 0, 300)
        assert wait_for(lambda: not _unmerged(db), 60.0)
        assert engine.stats().memories == 8 * 200 + 300
    structure = _structure(db)
    for index in INDEXES:
        assert _spare(structure[index]) < SPARE_SEGMENTS, (index, structure[index])
        assert not any(merging for _, merging in structure[index]), (index, structure[index])
    # FTS5's own merging alone left 20 segments in memory_fts after the same writes, and
    # 15 in each entity index (14 of them on the smallest level).
    assert sum(segments for segments, _ in structure["memory_fts"]) <= 9, structure["memory_fts"]
    for index in ("entity_text", "entity_words", "entity_name_text"):
        assert sum(segments for segments, _ in structure[index]) <= 8, (index, structure[index])
    _check_indexes(db)


def test_merging_changes_no_search_result(tmp_path: Path, unmerging: None) -> None:
    db = tmp_path / "memory.db"
    before = _written_unmerged(db)
    assert any(before.values())
    unmerged = _unmerged(db)
    assert unmerged
    structure = _structure(db)
    with contextlib.closing(sqlite3.connect(db, isolation_level=None)) as conn:
        assert merge(conn, INDEXES, lambda: True, lambda _: None)
    assert _unmerged(db) == []
    merged = _structure(db)
    for index in unmerged:
        assert all(segments <= 1 for segments, _ in merged[index]), (index, merged[index])
        assert sum(n for n, _ in merged[index]) < sum(n for n, _ in structure[index])
    assert _found(db) == before
    _check_indexes(db)


def test_a_merge_gives_way_to_a_writer_of_another_process(tmp_path: Path, unmerging: None) -> None:
    db = tmp_path / "memory.db"
    before = _written_unmerged(db)
    unmerged = _unmerged(db)
    assert unmerged
    with (
        contextlib.closing(sqlite3.connect(db, isolation_level=None)) as writer,
        contextlib.closing(sqlite3.connect(db, isolation_level=None, timeout=0)) as upkeep,
    ):
        writer.execute("BEGIN IMMEDIATE")
        assert not merge(upkeep, unmerged, lambda: True, lambda _: None)
        assert not upkeep.in_transaction
        assert _unmerged(db) == unmerged
        writer.execute("COMMIT")
        assert merge(upkeep, unmerged, lambda: True, lambda _: None)
    assert _unmerged(db) == []
    assert _found(db) == before


_IN_A_STEP = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('merge', 1)")
print("merging", flush=True)
sys.stdin.readline()
"""

_BETWEEN_STEPS = """
import sqlite3, sys
from mnemodb.store.sqlite.segments import levels
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
while not any(merging for _, merging in levels(conn, "memory_fts")):
    before = conn.total_changes
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('merge', 1)")
    conn.execute("COMMIT")
    if conn.total_changes - before < 2:
        sys.exit("nothing left to merge")
print("between", flush=True)
sys.stdin.readline()
"""


def _killed_at_its_word(db: Path, script: str) -> None:
    """Run `script` on `db` and kill it (SIGKILL) once it has said where it is."""
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() in ("merging", "between")
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()


def test_a_process_killed_in_a_merge_step_loses_nothing(tmp_path: Path, unmerging: None) -> None:
    db = tmp_path / "memory.db"
    before = _written_unmerged(db, bulk=True)
    structure = _structure(db)["memory_fts"]
    _killed_at_its_word(db, _IN_A_STEP)
    # The step was rolled back whole: the index is as it was.
    assert _structure(db)["memory_fts"] == structure
    assert _found(db) == before
    _check_indexes(db)


def test_a_merge_left_between_steps_is_whole_and_finished_by_the_next_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unmerging: None
) -> None:
    db = tmp_path / "memory.db"
    before = _written_unmerged(db, bulk=True)
    _killed_at_its_word(db, _BETWEEN_STEPS)
    assert any(merging for _, merging in _structure(db)["memory_fts"]), "a merge is under way"
    assert _found(db) == before
    _check_indexes(db)
    # The next store merges at its first pause, which no write delays here.
    monkeypatch.setattr(checkpoint, "MERGE_PAUSE_S", 0.0)
    with Engine.open(str(db)) as engine:
        assert wait_for(lambda: not _unmerged(db), 60.0)
        assert engine.stats().memories == SINGLES + 600
    assert _found(db) == before
    _check_indexes(db)
