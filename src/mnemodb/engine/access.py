"""Access statistics, counted off the read path.

A read only adds its nodes to an in-memory tally (node -> reads, last read); a
background thread folds the tally into `node_access` about `interval` seconds after the
first read it holds, or sooner once `batch` distinct nodes are waiting. Reads never wait
for a write lock this way, and a node read many times in one interval costs one row
write. Counts are best effort: once `capacity` distinct nodes are waiting, reads of
further nodes are dropped rather than letting the tally grow; nodes already in it go on
counting. With nothing waiting the thread sleeps until the next read.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping

from mnemodb.model.errors import EngineError

log = logging.getLogger(__name__)


_COUNTED_ONE_BY_ONE = 8
"""The most nodes of one read `AccessRecorder.record` counts in a loop of its own rather than
by `Counter.update`."""


class AccessRecorder:
    def __init__(
        self,
        flush: Callable[[Mapping[int, tuple[int, int]]], None],
        *,
        interval: float = 0.1,
        batch: int = 4096,
        capacity: int = 16384,
    ) -> None:
        if interval <= 0 or batch < 1 or capacity < batch:
            raise ValueError("interval must be positive, batch at least 1 and capacity at least batch")
        self._flush = flush
        self._interval = interval
        # Large batches: a write of access counts competes with searches for the
        # interpreter, and at 256 nodes a batch it cost a memory search at 10,000
        # memories about a fifth of its CPU time.
        self._batch = batch
        self._capacity = capacity
        # What is waiting: reads per node, and each node's last read. Two maps, so that
        # the common read (a search's hundred winners, with room to spare) is counted by
        # two calls that loop in C rather than a Python step per node.
        self._counts: Counter[int] = Counter()
        self._last: dict[int, int] = {}
        self._stopped = False
        # Guards `_counts`, `_last` and `_stopped`; the thread waits on it for work.
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        # Held for a whole take-and-write, so `flush()` returns only once every hit
        # recorded before it is in the database, even if the background thread had
        # already taken them.
        self._flushing = threading.Lock()
        self._thread: threading.Thread | None = None

    def record(self, pks: Iterable[int], at: int) -> None:
        read = pks if isinstance(pks, (list, tuple)) else list(pks)
        # The condition's lock taken as itself: entering the condition is a call in Python
        # around the same lock's, paid by every read.
        with self._lock:
            counts, last = self._counts, self._last
            was_empty = not counts
            if len(counts) + len(read) <= self._capacity:
                if len(read) <= _COUNTED_ONE_BY_ONE:
                    # A point read's few nodes: `Counter.update` is a Python function that
                    # first asks whether its argument is a mapping (an ABC's check), which
                    # costs more than counting them here (callgrind: a read of one node
                    # 21.5 k -> 15.9 k instructions, with the lock taken as itself).
                    for pk in read:
                        counts[pk] = counts.get(pk, 0) + 1
                        last[pk] = at
                else:
                    counts.update(read)
                    last.update(dict.fromkeys(read, at))
            else:
                for pk in read:
                    if pk in counts:
                        counts[pk] += 1
                        last[pk] = at
                    elif len(counts) < self._capacity:
                        counts[pk] = 1
                        last[pk] = at
            if not counts:
                return
            if self._thread is None and not self._stopped:
                self._thread = threading.Thread(target=self._run, name="mnemodb-access", daemon=True)
                self._thread.start()
            # The thread is woken when its interval starts and when a batch is full,
            # not on every read.
            if was_empty or len(counts) >= self._batch:
                self._changed.notify()

    def _take(self) -> dict[int, tuple[int, int]]:
        with self._changed:
            counts, last = self._counts, self._last
            self._counts, self._last = Counter(), {}
        return {pk: (count, last[pk]) for pk, count in counts.items()}

    def flush(self) -> None:
        with self._flushing:
            pending = self._take()
            if not pending:
                return
            try:
                self._flush(pending)
            except EngineError as exc:  # a read-only or full database: said once per flush, briefly
                log.warning("could not record access statistics for %d nodes: %s", len(pending), exc)
            except Exception:  # access counts must never take the server down
                log.warning("could not record access statistics for %d nodes", len(pending), exc_info=True)

    def _wait_for_work(self) -> bool:
        """Sleep until reads are waiting, then until `interval` has passed or a batch is
        full. False once the recorder is stopped."""
        with self._changed:
            while not self._counts and not self._stopped:
                self._changed.wait()
            due = time.monotonic() + self._interval
            while len(self._counts) < self._batch and not self._stopped:
                left = due - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(left)
            return not self._stopped

    def _run(self) -> None:
        while self._wait_for_work():
            self.flush()

    def close(self) -> None:
        with self._changed:
            self._stopped = True
            self._changed.notify_all()
            thread = self._thread
        if thread is not None:
            with contextlib.suppress(RuntimeError):
                thread.join(timeout=5)
        self.flush()
