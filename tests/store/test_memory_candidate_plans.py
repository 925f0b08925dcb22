"""What the SQLite store runs to read a memory search's candidates: the tag look-up only
where a memory of the scopes read has a tag, and FTS5's rank read once a match. The
statements are the ones the store runs (caught as it runs them)."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from mnemodb.store.sqlite import SqliteStore
from store.contract.rows import A, B, add_memory
from store.sqlite_plans import plans_of, traced


def _tag_reads(statements: list[str]) -> list[str]:
    return [s for s in statements if "FROM memory_tag" in s]


def test_no_tag_is_looked_up_where_no_memory_read_has_one(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "tags.db")
    try:
        with store.write() as tx:
            for i in range(5):
                add_memory(tx, f"river number {i}", scope=A)
            # A tag in another scope: still none among the memories of A.
            add_memory(tx, "river elsewhere", scope=B, tags=["river"])
        untagged, statements = traced(store, lambda tx: tx.memory_candidates(["river"], ["river"], [A], 10))
        assert untagged.tagged == [] and len(untagged.text) == 5
        assert _tag_reads(statements) == [], statements

        with store.write() as tx:
            tagged_pk = add_memory(tx, "a stone", scope=A, tags=["river"])
        tagged, statements = traced(store, lambda tx: tx.memory_candidates(["river"], ["river"], [A], 10))
        assert tagged.tagged == [tagged_pk]
        assert len(_tag_reads(statements)) == 1, statements
        # Both scopes read: B's tagged memory is found too.
        both = traced(store, lambda tx: tx.memory_candidates(["river"], ["river"], [A, B], 10))[0]
        assert len(both.tagged) == 2
    finally:
        store.close()


def test_the_rank_is_read_once_a_match(tmp_path: Path) -> None:
    path = tmp_path / "rank.db"
    store = SqliteStore(path)
    try:
        with store.write() as tx:
            for i in range(5):
                add_memory(tx, f"river number {i}" + " stone" * i, scope=A)
        found, statements = traced(store, lambda tx: tx.memory_candidates(["river"], [], [A], 3))
    finally:
        store.close()
    # The best first, as positive scores.
    assert len(found.text) == 3 and all(score > 0 for score in found.text.values())
    assert list(found.text.values()) == sorted(found.text.values(), reverse=True)
    (ranked,) = [s for s in statements if "MATCH" in s]
    with contextlib.closing(sqlite3.connect(path)) as conn:
        (rank_column,) = conn.execute("SELECT cid FROM pragma_table_xinfo('memory_fts') WHERE name = 'rank'").fetchone()
        program = conn.execute(f"EXPLAIN {ranked}").fetchall()
    # Each read of the rank column runs bm25 for the row again.
    reads = [op for op in program if op[1] == "VColumn" and op[3] == rank_column]
    assert len(reads) == 1, program


def test_the_winners_are_read_memory_first_with_their_tags(tmp_path: Path) -> None:
    path = tmp_path / "views.db"
    store = SqliteStore(path)
    try:
        with store.write() as tx:
            plain = [add_memory(tx, f"river number {i}", scope=A) for i in range(3)]
        untagged, statements = traced(store, lambda tx: tx.memory_views(plain))
        with store.write() as tx:
            tagged = add_memory(tx, "a stone", scope=A, tags=["wet", "cold"])
        views = traced(store, lambda tx: tx.memory_views([*plain, tagged]))[0]
    finally:
        store.close()
    assert [untagged[pk].tags for pk in plain] == [(), (), ()]
    assert [views[pk].tags for pk in plain] == [(), (), ()] and views[tagged].tags == ("cold", "wet")
    (read,) = [s for s in statements if "FROM memory m" in s]
    (steps,) = plans_of(path, [read])
    # Sought by the pks given, then the node and the access counts by the memory's pk.
    assert steps.startswith("SEARCH m USING INTEGER PRIMARY KEY"), steps
    assert "SEARCH n USING INTEGER PRIMARY KEY" in steps and "SEARCH a USING INTEGER PRIMARY KEY" in steps, steps
