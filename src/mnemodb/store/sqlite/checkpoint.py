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

The same thread merges the segments of the full-text indexes (`segments.py`), but only
once writes pause: when no commit has come for `MERGE_PAUSE_S` (each commit starts the
wait again), after `MERGE_COMMITS` commits or when a store opened a file that needs it.
Merging as soon as 4 commits had come instead ran the steps between a bulk writer's
commits, each of which then waited for a step: 2,000 relations written in process after
2,000 entities took 0.10 s instead of 0.06, and the server's CPU per bulk relation at
100,000 entities went from 0.067 ms to 0.124. A merge is a write; the thread runs it in
short steps, each taking the store's write lock in turn with the callers (`turn`) and
SQLite's write lock only when no other process holds it, so a writer of another process
is never refused for it; and a step stops the merge as soon as a commit has come since
the pause began (a caller that waited for the lock during the step), to go on at the
next pause. The access statistics' own flushes (a few a second while searches run) are
commits that neither start the wait again nor ask for a merge: they write no text, and a
flush waits one step at most.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable

from mnemodb.store.sqlite import descriptors
from mnemodb.store.sqlite.segments import INDEXES, merge

__all__ = ["FALLBACK_PAGES", "MERGE_COMMITS", "MERGE_PAUSE_S", "PAGES", "Checkpointer"]

log = logging.getLogger(__name__)

PAGES = 1000
"""Pages in the log not yet in the database that wake the thread: SQLite's own default mark."""
FALLBACK_PAGES = 4 * PAGES
"""Pages in the log (copied or not) past which the writer copies what is left itself."""
MERGE_COMMITS = 4
"""Commits after which a merge is due (at the next pause): each commit that writes to an
index adds one segment, and FTS5's own merging keeps a few of each size. A store that
writes less, a command run once say, starts no thread for it."""
MERGE_PAUSE_S = 0.25
"""How long no commit must come before the thread merges the full-text indexes' segments.
Far longer than the gap between the calls of a bulk writer (a client's own turn, a few
milliseconds; the slowest bulk relation call over stdio took 60-97 ms in `peers.py`), so
its writes see no merge; short enough that searches read merged indexes soon after the
writes stop: a file seeded with 10,000 entities is merged 0.4 s after the last write (12
steps), one of 100,000 after 1.4 s (188 steps). A writer that comes back while a merge
runs waits for one step at most (about 1.5 ms at 100,000 entities)."""
_OPEN_TRIES = 50
_OPEN_RETRY_S = 0.001
"""How often, and how far apart, `Checkpointer.open` reads an index being rewritten."""
_TURN_WAIT_S = 0.05
"""How long the thread waits for the store's write lock before a merge step: an access
flush may hold it (a caller's commit in the meantime ends the merge anyway)."""
_YIELD_S = 0.001
"""The pause after each merge step, in which a caller waiting for the write lock takes it."""

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

    def __init__(
        self,
        path: str,
        connect: Callable[[], sqlite3.Connection],
        index_fd: int,
        turn: threading.RLock | None = None,
        merge_pause_s: float | None = None,
    ) -> None:
        self._path = path
        self._connect = connect
        self._index_fd = index_fd
        self._index_key: tuple[int, int] | None = None
        """The descriptor's key in `descriptors`, until it is given back."""
        self._turn = turn
        """The store's write lock, when the thread merges the full-text indexes."""
        self._merge_pause_s = MERGE_PAUSE_S if merge_pause_s is None else merge_pause_s
        self._last_write = time.monotonic()
        """When the last commit that starts the pause again came (or the store opened)."""
        self._pause_began = self._last_write
        """`_last_write` as the merge running now found it: a newer one ends the merge."""
        self._commits = 0
        self.merge_steps = 0
        """Merge steps committed so far (each one transaction)."""
        self._copy_due = False
        self._merge_due = False
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._checkpointing = threading.Lock()
        """Held by whichever thread is running a checkpoint."""

    @classmethod
    def open(
        cls,
        path: str,
        connect: Callable[[], sqlite3.Connection],
        turn: threading.RLock | None = None,
        merge_pause_s: float | None = None,
    ) -> Checkpointer | None:
        """A checkpointer for the database at `path`, or None when its log's index cannot be
        read (then the writer keeps SQLite's automatic checkpoint as it is). With `turn`
        (the store's write lock), it also merges the full-text indexes' segments, once no
        commit has come for `merge_pause_s` (default `MERGE_PAUSE_S`)."""
        index = descriptors.take(path + "-shm")
        if index is None:
            return None
        checkpointer = cls(path, connect, index[0], turn, merge_pause_s)
        checkpointer._index_key = index[1]
        # The index's two header copies differ while another process rewrites it: read
        # again for a while before giving up, since giving up may close the descriptor
        # (see `descriptors.py`) while the store's connections use the index.
        for _ in range(_OPEN_TRIES):
            if checkpointer.pending() is not None:
                return checkpointer
            time.sleep(_OPEN_RETRY_S)
        checkpointer.close_index()
        return None

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

    def committed(self, writer: sqlite3.Connection, pauses_merging: bool = True) -> None:
        """After a commit on `writer`, outside its transaction: wake the thread once the log
        holds `PAGES` pages to copy, or every `MERGE_COMMITS` commits to merge at the next
        pause of the writes; past `FALLBACK_PAGES` in all, copy them on `writer`, once the
        thread's checkpoint (if one runs) is over. A commit with `pauses_merging` false (the access statistics'
        flush, which writes no text) neither asks for a merge nor starts the pause again."""
        index = self._index()
        if index is None or self._stopping:
            return
        frames, pending = index
        wake = False
        if pauses_merging and self._turn is not None:
            # One clock read a commit; the thread is woken only when a merge becomes due,
            # and sleeps until the pause is over (see `_run`). Counted under the store's
            # write lock, which every commit holds.
            self._last_write = time.monotonic()
            self._commits += 1
            if self._commits >= MERGE_COMMITS and not self._merge_due:
                self._commits = 0
                self._merge_due = wake = True
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
        elif pending >= PAGES:
            self._copy_due = wake = True
        if wake:
            self._start()

    def merge_soon(self) -> None:
        """Have the thread merge the full-text indexes' segments at the first pause (a store
        just opened on a file whose indexes need merging: it may be about to be written in
        bulk, which the pause lets go first)."""
        if self._turn is not None:
            self._last_write = time.monotonic()
            self._merge_due = True
            self._start()

    def _start(self) -> None:
        """Wake the thread, started first if it is not running yet."""
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
            # The thread never waits for SQLite's write lock: a merge step finding it taken
            # gives way (a checkpoint in PASSIVE mode waits for no lock anyway).
            conn.execute("PRAGMA busy_timeout = 0")
            while True:
                self._wake.wait(self._until_pause())
                self._wake.clear()
                if self._stopping:
                    return
                # Cleared before the work: a commit during it asks for it again.
                copy, self._copy_due = self._copy_due, False
                if self._merge_due and self._until_pause() == 0.0:
                    self._merge_due = False
                    self._pause_began = self._last_write
                    if not self._merge(conn):
                        # A commit came, or another process held the lock: at the next pause.
                        self._last_write = max(self._last_write, time.monotonic())
                        self._merge_due = True
                    # The merge's own pages, if they took the log past the mark.
                    copy = copy or (self.pending() or 0) >= PAGES
                if copy:
                    self._checkpoint(conn)
        except sqlite3.Error as exc:
            log.warning("the checkpoint thread of %s stopped: %s", self._path, exc)
        finally:
            with contextlib.suppress(sqlite3.Error):
                conn.close()

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        try:
            with self._checkpointing:
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error as exc:
            # Busy (another process checkpointing), a full disk: the next commit past
            # the mark wakes this again, and the writer's own mark bounds the log.
            log.debug("checkpoint of %s did not run: %s", self._path, exc)

    def _until_pause(self) -> float | None:
        """Seconds until the writes will have paused long enough to merge (0.0 once they
        have), or None when no merge is due (the thread sleeps until woken)."""
        if not self._merge_due:
            return None
        return max(0.0, self._last_write + self._merge_pause_s - time.monotonic())

    def _merge(self, conn: sqlite3.Connection) -> bool:
        """Merge until done (True), or until a commit or another process's writer comes
        first (False)."""
        try:
            return merge(conn, INDEXES, self._take_turn, self._end_turn)
        except sqlite3.Error as exc:
            # A full disk, a damaged index: the merge is left as it was, which searches
            # read as well, and tried again after the next commit's pause.
            log.debug("merging the full-text indexes of %s did not run: %s", self._path, exc)
            return True

    def _take_turn(self) -> bool:
        turn = self._turn
        if turn is None or self._stopping or self._last_write != self._pause_began:
            return False
        if not turn.acquire(timeout=_TURN_WAIT_S):
            return False
        if self._last_write != self._pause_began:
            # The caller that held the lock committed: the writes go on.
            turn.release()
            return False
        return True

    def _end_turn(self, committed: bool) -> None:
        if committed:
            self.merge_steps += 1
        if self._turn is not None:
            self._turn.release()
        # A caller waiting for the lock takes it now (a lock released and at once taken
        # again by the same thread would not let it); its commit then ends the merge.
        time.sleep(_YIELD_S)

    def close(self, *, keep_index: bool = False) -> None:
        """Stop the thread (after the checkpoint it is running, if any) and close its
        connection and, unless `keep_index`, its descriptor of the log's index. A store
        keeps the descriptor until its own connections are closed (`close_index`):
        closing it releases every POSIX lock the process holds on the index, theirs too."""
        with self._lock:
            self._stopping = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
        if not keep_index:
            self.close_index()

    def close_index(self) -> None:
        """Give up the descriptor of the log's index (once the store's connections are
        closed); the last checkpointer of the process on it closes it."""
        key, self._index_key = self._index_key, None
        if key is not None:
            descriptors.give_back(key)
