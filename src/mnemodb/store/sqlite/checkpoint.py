"""Checkpoints of the write-ahead log on a thread of their own, off the writing call's path.

In WAL mode a commit appends pages to the log; a checkpoint copies them into the database
file. SQLite's own automatic checkpoint runs inside the commit that takes the log past 1,000
pages, on the writer's thread: it copies those pages and flushes the log and the database
to disk (two fsyncs at `synchronous = NORMAL`), and the call that happened to commit then
waits for both before it can answer. On a 10,000-entity store, bulk calls of 100 entities
or relations passed that mark about once in four calls; a flush on this class of disk took
1-25 ms (median 10 ms) for 400 KB, against 5-10 ms for the whole call.

Here the writer only reads how many pages the log holds that are not in the database yet
(two numbers in the log's shared-memory index, one `pread`), and past the same 1,000 pages
it wakes a thread that runs a PASSIVE checkpoint on a connection of its own. SQLite lets a
checkpoint run beside the writer, and releases the interpreter's lock while it runs, so the
call answers without waiting. Durability does not change: a checkpoint only copies pages
that were committed to the log already, whichever thread copies them, and a process killed
during one leaves the log to be copied again on the next open, as before.

The log starts again from its beginning when a writer begins once every page in it has
been copied. Writes that never pause can leave the thread no such moment; once the log
holds `FALLBACK_PAGES` pages in all, the writer copies what is left itself after its
commit (waiting for the thread's checkpoint, if one runs), as SQLite's own checkpoint did
at 1,000, and the next write starts the log again. So the log stays under about 16 MB.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import sys
import threading
from collections.abc import Callable

__all__ = ["FALLBACK_PAGES", "PAGES", "Checkpointer"]

log = logging.getLogger(__name__)

PAGES = 1000
"""Pages in the log not yet in the database that wake the thread: SQLite's own default mark."""
FALLBACK_PAGES = 4 * PAGES
"""Pages in the log (copied or not) past which the writer copies what is left itself."""

# The log's shared-memory index (the `-shm` file; https://www.sqlite.org/walformat.html):
# a 48-byte header, a second copy of it, then the checkpoint information. Its integers are
# in the machine's own byte order.
_MAX_FRAME = slice(16, 20)
"""The header's mxFrame: the last valid page (frame) in the log."""
_HEADER = slice(0, 48)
_SECOND_HEADER = slice(48, 96)
_BACKFILL = slice(96, 100)
"""nBackfill: the log's pages already copied into the database."""
_INDEX_BYTES = 100


class Checkpointer:
    """The checkpoint thread of one database file, started on first need. `committed` is
    called by the writer after each commit; `close` before the writer's connection closes
    (so that connection, the last to close, still folds the log into the file)."""

    def __init__(self, path: str, connect: Callable[[], sqlite3.Connection], index_fd: int) -> None:
        self._path = path
        self._connect = connect
        self._index_fd = index_fd
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._checkpointing = threading.Lock()
        """Held by whichever thread is running a checkpoint."""

    @classmethod
    def open(cls, path: str, connect: Callable[[], sqlite3.Connection]) -> Checkpointer | None:
        """A checkpointer for the database at `path`, or None when its log's index cannot be
        read (then the writer keeps SQLite's automatic checkpoint as it is)."""
        try:
            fd = os.open(path + "-shm", os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return None
        checkpointer = cls(path, connect, fd)
        if checkpointer.pending() is None:
            os.close(fd)
            return None
        return checkpointer

    def pending(self) -> int | None:
        """Pages in the log not yet copied into the database; None if the index cannot be
        read, or was being rewritten at that moment (its two header copies differ)."""
        index = self._index()
        return None if index is None else index[1]

    def _index(self) -> tuple[int, int] | None:
        """(pages in the log, pages of it not yet copied), or None (see `pending`)."""
        try:
            index = os.pread(self._index_fd, _INDEX_BYTES, 0)
        except OSError:
            return None
        if len(index) < _INDEX_BYTES or index[_HEADER] != index[_SECOND_HEADER]:
            return None
        order = sys.byteorder
        frames = int.from_bytes(index[_MAX_FRAME], order)
        return frames, frames - int.from_bytes(index[_BACKFILL], order)

    def committed(self, writer: sqlite3.Connection) -> None:
        """After a commit on `writer`, outside its transaction: wake the thread once the log
        holds `PAGES` pages to copy; past `FALLBACK_PAGES` in all, copy them on `writer`,
        once the thread's checkpoint (if one runs) is over."""
        index = self._index()
        if index is None or self._stopping:
            return
        frames, pending = index
        if frames >= FALLBACK_PAGES and pending > 0:
            # Writes that never pause leave the thread no moment when the whole log is
            # copied, so the log never starts again from its beginning: the writer copies
            # the rest itself, and the next write starts the log again, as SQLite's own
            # checkpoint at 1,000 pages did.
            with self._checkpointing:
                try:
                    writer.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error as exc:
                    log.debug("checkpoint of %s did not run: %s", self._path, exc)
            return
        if pending < PAGES:
            return
        if self._thread is None:
            with self._lock:
                if self._thread is None and not self._stopping:
                    self._thread = threading.Thread(target=self._run, name="mnemodb-checkpoint", daemon=True)
                    self._thread.start()
        self._wake.set()

    def _run(self) -> None:
        try:
            conn = self._connect()
        except Exception:
            log.warning("cannot open a connection to checkpoint %s: the writer checkpoints it", self._path)
            return
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stopping:
                    return
                try:
                    with self._checkpointing:
                        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error as exc:
                    # Busy (another process checkpointing), a full disk: the next commit past
                    # the mark wakes this again, and the writer's own mark bounds the log.
                    log.debug("checkpoint of %s did not run: %s", self._path, exc)
        finally:
            with contextlib.suppress(sqlite3.Error):
                conn.close()

    def close(self) -> None:
        """Stop the thread (after the checkpoint it is running, if any) and close its connection."""
        with self._lock:
            self._stopping = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
        with contextlib.suppress(OSError):
            os.close(self._index_fd)
