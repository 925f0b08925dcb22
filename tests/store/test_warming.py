"""Warming a SQLite file: the kernel asked to bring it into its file cache (warming.py).

The file cache is read with mincore(2) over a mapping of the file that never touches its
pages, and emptied of the file with posix_fadvise(DONTNEED) after an fsync, so these run
where Linux answers both; elsewhere they are skipped."""

from __future__ import annotations

import ctypes
import mmap
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mnemodb.engine import Engine
from mnemodb.store import open_store
from mnemodb.store.sqlite import warming

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not hasattr(os, "posix_fadvise"), reason="Linux's file cache calls"
)


def cached_share(path: Path) -> float:
    """The share of the file's pages in the file cache, without reading any."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    size = path.stat().st_size
    with path.open("rb") as file:
        address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, file.fileno(), 0)
    assert address not in (None, ctypes.c_void_p(-1).value)
    try:
        pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
        vector = (ctypes.c_ubyte * pages)()
        assert libc.mincore(address, size, vector) == 0, ctypes.get_errno()
        return sum(byte & 1 for byte in vector) / pages
    finally:
        libc.munmap(address, size)


def drop_from_cache(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


@pytest.fixture
def cold_file(tmp_path: Path) -> Path:
    """A closed database of a few megabytes, none of it in the file cache."""
    db = tmp_path / "memory.db"
    with Engine.open(str(db)) as engine:
        for n in range(300):
            engine.memories.store(f"memory number {n}: " + "a sentence of words to fill a page " * 40)
    drop_from_cache(db)
    if cached_share(db) > 0.1:
        pytest.skip("this file system keeps the file cached (tmpfs, say)")
    return db


def test_warming_brings_the_database_file_into_the_file_cache(cold_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Windows of 256 KB: the file takes several, as a large one takes several of 8 MB.
    monkeypatch.setattr(warming, "WINDOW", 256 * 1024)
    assert cold_file.stat().st_size > 4 * warming.WINDOW
    store = open_store(str(cold_file))
    try:
        store.warm(wait=True)
        assert cached_share(cold_file) > 0.9
    finally:
        store.close()


def test_warming_on_the_stores_thread_asks_the_kernel_and_returns_at_once(cold_file: Path) -> None:
    store = open_store(str(cold_file))
    try:
        store.warm()
        # The kernel reads what it was asked for in its own time: waited for, within a
        # bound no healthy disk comes near (a few megabytes).
        deadline = time.monotonic() + 30
        while cached_share(cold_file) < 0.9 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert cached_share(cold_file) > 0.9
    finally:
        store.close()


def test_files_larger_than_a_quarter_of_the_memory_available_are_left_alone(
    cold_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(warming, "memory_available", lambda: 4 * cold_file.stat().st_size - 4096)
    assert warming.warm_files([str(cold_file)], lambda: False, read=True) == 0
    assert cached_share(cold_file) < 0.1
    monkeypatch.setattr(warming, "memory_available", lambda: 4 * cold_file.stat().st_size)
    assert warming.warm_files([str(cold_file)], lambda: False, read=True) == cold_file.stat().st_size
    assert cached_share(cold_file) > 0.9


def test_warming_stops_once_asked_to(cold_file: Path) -> None:
    assert warming.warm_files([str(cold_file)], lambda: True, read=True) == 0
    assert cached_share(cold_file) < 0.1


def test_a_missing_file_is_passed_over(tmp_path: Path, cold_file: Path) -> None:
    asked = warming.warm_files([str(tmp_path / "missing.db"), str(cold_file)], lambda: False)
    assert asked == cold_file.stat().st_size


def test_a_fifo_in_a_files_place_is_passed_over_without_waiting(tmp_path: Path, cold_file: Path) -> None:
    fifo = tmp_path / "memory.db-wal"
    os.mkfifo(fifo)
    assert warming.warm_files([str(fifo), str(cold_file)], lambda: False) == cold_file.stat().st_size


def test_without_the_memory_available_nothing_is_asked(cold_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warming, "memory_available", lambda: None)
    assert warming.warm_files([str(cold_file)], lambda: False) == 0


def test_the_memory_available_is_read_from_the_kernel() -> None:
    available = warming.memory_available()
    assert available is not None and available > 0


def test_warming_keeps_the_locks_sqlite_holds_on_the_file(tmp_path: Path) -> None:
    """Closing any descriptor of a file releases the process's locks on it: warming must
    not, or another process closing its last connection takes itself for the file's last
    user and deletes the log under this one's feet."""
    db = tmp_path / "memory.db"
    store = open_store(str(db))
    try:
        with store.write() as tx:
            tx.set_meta("warmed", "no")
        with store.read() as tx:
            assert tx.get_meta("warmed") == "no"
        store.warm(wait=True)
        store.warm(wait=True)
        other = (
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
            "c.execute('SELECT count(*) FROM node').fetchone(); c.close()"
        )
        subprocess.run([sys.executable, "-c", other, str(db)], check=True, timeout=60)
        assert Path(f"{db}-wal").exists(), "another process deleted the log this store still uses"
        with store.write() as tx:
            tx.set_meta("warmed", "yes")
        with store.read() as tx:
            assert tx.get_meta("warmed") == "yes"
    finally:
        store.close()


def test_an_in_memory_database_has_nothing_to_warm() -> None:
    store = open_store(":memory:")
    try:
        store.warm(wait=True)
        store.warm()
    finally:
        store.close()
