"""SQLite's write-ahead log is copied into the database by a thread of its own once it holds
`PAGES` pages not yet copied, off the writing call's path; the writer copies what is left
itself once the log holds `FALLBACK_PAGES` pages, a bound on its size; closing stops the
thread and folds the log into the file."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

from mnemodb.engine import Engine
from mnemodb.engine.items import Note
from mnemodb.model.records import NewMemory
from mnemodb.store import open_store
from mnemodb.store.sqlite.checkpoint import FALLBACK_PAGES, PAGES, Checkpointer
from support import wait_for

THREAD = "mnemodb-checkpoint"
PAGE = 4096


def _threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == THREAD]


def _probe(db: Path) -> Checkpointer:
    """Reads how many pages of the log are not yet in the file (its thread never starts)."""
    probe = Checkpointer.open(str(db), lambda: sqlite3.connect(db))
    assert probe is not None
    return probe


def _remember(engine: Engine, start: int, count: int) -> None:
    # Two kilobytes of text a memory: about a page of the log each, with its indexes.
    engine.items.remember(
        [Note(NewMemory(f"memory {i} " + "lorem ipsum dolor " * 110)) for i in range(start, start + count)]
    )


def test_the_thread_copies_the_log_once_it_passes_the_mark(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    before = _threads()
    with Engine.open(str(db)) as engine:
        probe = _probe(db)
        try:
            _remember(engine, 0, 10)
            assert (probe.pending() or 0) < PAGES
            assert _threads() == before, "no thread before the log holds enough to copy"
            written = 10
            while (probe.pending() or 0) < PAGES and written < 5000:
                _remember(engine, written, 100)
                written += 100
            # Without another write, the log's pages are copied into the file: by the thread,
            # since the writer's own mark is four times higher.
            assert len(_threads()) == len(before) + 1
            assert wait_for(lambda: (probe.pending() or 0) < PAGES, 30.0)
            assert engine.stats().memories == written
        finally:
            probe.close()
    # Closing stops the thread and folds the log into the file, as before.
    assert _threads() == before
    assert not os.path.exists(f"{db}-wal")
    with contextlib.closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT count(*) FROM memory").fetchone()[0] == written


def test_the_log_stays_within_the_writers_own_mark(tmp_path: Path) -> None:
    """A steady stream of writes leaves the thread no moment to find the whole log copied,
    so the log does not start again from its beginning; the writer's own checkpoint past
    `FALLBACK_PAGES` still bounds it."""
    db = tmp_path / "memory.db"
    with Engine.open(str(db)) as engine:
        probe = _probe(db)
        try:
            written = 0
            while written < 2 * FALLBACK_PAGES:
                _remember(engine, written, 200)
                written += 200
                # A write is about 450 pages of log, the bound is checked at each commit.
                assert os.path.getsize(f"{db}-wal") <= (FALLBACK_PAGES + 1000) * (PAGE + 24) + 32
        finally:
            probe.close()


def test_a_store_that_cannot_write_has_no_thread(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with Engine.open(str(db)) as engine:
        _remember(engine, 0, 10)
    before = _threads()
    with Engine.open(str(db), read_only=True) as engine:
        assert engine.stats().memories == 10
        assert _threads() == before
    assert Checkpointer.open(str(tmp_path / "none.db"), lambda: sqlite3.connect(":memory:")) is None


# SQLite's unix VFS: the byte of the log's index every connection using it holds a shared
# lock on, so that a process opening the file can tell it is not the first (and must not
# rebuild the index under the others).
_INDEX_IN_USE_BYTE = 128


def _index_in_use_elsewhere(shm: Path) -> bool:
    """Whether another process finds the index's in-use byte locked."""
    probe = (
        "import fcntl, os, sys\n"
        "fd = os.open(sys.argv[1], os.O_RDWR)\n"
        "try:\n"
        f"    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, {_INDEX_IN_USE_BYTE})\n"
        "except OSError:\n"
        "    print('held')\n"
        "else:\n"
        "    print('free')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(shm)], check=False, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip() == "held"


def test_closing_one_store_keeps_the_locks_of_another_on_the_same_file(tmp_path: Path) -> None:
    """Closing any descriptor of a file releases every lock the process holds on it: a
    store that closes must leave another store of the process on the same file its locks
    on the log's index, or a process opening the file next takes itself for the first and
    rebuilds the index under the open store."""
    db = tmp_path / "memory.db"
    staying = open_store(str(db))
    try:
        with staying.write() as tx:
            tx.set_meta("state", "before")
        assert _index_in_use_elsewhere(Path(f"{db}-shm"))
        leaving = open_store(str(db))
        with leaving.read() as tx:
            assert tx.get_meta("state") == "before"
        leaving.close()
        assert _index_in_use_elsewhere(Path(f"{db}-shm")), "closing one store released the other's locks"
        with staying.write() as tx:
            tx.set_meta("state", "after")
        with staying.read() as tx:
            assert tx.get_meta("state") == "after"
    finally:
        staying.close()
