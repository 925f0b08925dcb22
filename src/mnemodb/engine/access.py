"""Access statistics, counted off the read path.

A read only appends (node, time) to an in-memory queue; a background thread folds the
queue into `node_access` every `interval` seconds, or sooner once `batch` distinct nodes
are waiting. Reads never wait for a write lock this way. Counts are best effort: when
the queue is full, further hits are dropped rather than slowing reads down.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable, Mapping

from mnemodb.model.errors import EngineError

log = logging.getLogger(__name__)


class AccessRecorder:
    def __init__(
        self,
        flush: Callable[[Mapping[int, tuple[int, int]]], None],
        *,
        interval: float = 0.1,
        batch: int = 256,
        capacity: int = 4096,
    ) -> None:
        self._flush = flush
        self._interval = interval
        self._batch = batch
        self._capacity = capacity
        self._pending: dict[int, tuple[int, int]] = {}
        self._queued = 0
        self._lock = threading.Lock()
        # Held for a whole take-and-write, so `flush()` returns only once every hit
        # recorded before it is in the database, even if the background thread had
        # already taken them.
        self._flushing = threading.Lock()
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def record(self, pks: Iterable[int], at: int) -> None:
        with self._lock:
            for pk in pks:
                if self._queued >= self._capacity:
                    break
                count, _ = self._pending.get(pk, (0, 0))
                self._pending[pk] = (count + 1, at)
                self._queued += 1
            waiting = len(self._pending)
            if self._thread is None and not self._stopped.is_set():
                self._thread = threading.Thread(target=self._run, name="mnemodb-access", daemon=True)
                self._thread.start()
        if waiting >= self._batch:
            self._wake.set()

    def _take(self) -> dict[int, tuple[int, int]]:
        with self._lock:
            pending, self._pending, self._queued = self._pending, {}, 0
        return pending

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

    def _run(self) -> None:
        while not self._stopped.is_set():
            self._wake.wait(self._interval)
            self._wake.clear()
            self.flush()

    def close(self) -> None:
        self._stopped.set()
        self._wake.set()
        thread = self._thread
        if thread is not None:
            with contextlib.suppress(RuntimeError):
                thread.join(timeout=5)
        self.flush()
