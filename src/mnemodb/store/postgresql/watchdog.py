"""Per-call time limits: a statement still running when its caller's deadline passes is
cancelled on the server (the transaction then rolls back).

One daemon thread watches every armed deadline of the process, so a call with a limit
costs a heap push, not a thread. PostgreSQL drops a cancel request that arrives while a
connection is between statements, so a cancel sent just after a statement ended does not
hit the next one; `disarm` (before COMMIT) guarantees none is sent later.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg

from mnemodb.model.errors import OperationTimeout

__all__ = ["cancelled_at"]


class _Watchdog:
    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._heap: list[tuple[float, int]] = []
        self._armed: dict[int, psycopg.Connection[Any]] = {}
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None

    def arm(self, conn: psycopg.Connection[Any], deadline: float) -> int:
        with self._lock:
            key = next(self._ids)
            self._armed[key] = conn
            heapq.heappush(self._heap, (deadline, key))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="mnemodb-pg-deadlines", daemon=True)
                self._thread.start()
            self._lock.notify()
            return key

    def disarm(self, key: int) -> None:
        with self._lock:
            self._armed.pop(key, None)

    def _run(self) -> None:
        with self._lock:
            while True:
                while self._heap and self._heap[0][1] not in self._armed:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._lock.wait()
                    continue
                deadline, key = self._heap[0]
                wait = deadline - time.monotonic()
                if wait > 0:
                    self._lock.wait(wait)
                    continue
                heapq.heappop(self._heap)
                conn = self._armed.pop(key)
                # Under the lock: once `disarm` has returned, no cancel can still be on its way.
                with contextlib.suppress(Exception):
                    conn.cancel_safe(timeout=2.0)


_WATCHDOG = _Watchdog()


@contextlib.contextmanager
def cancelled_at(conn: psycopg.Connection[Any], deadline: float | None) -> Iterator[Callable[[], None]]:
    """Within the block, a statement of `conn` still running at `deadline` (a
    `time.monotonic()` value; None: no limit) is cancelled. Yields `disarm`. A deadline
    already past raises OperationTimeout before anything runs."""
    if deadline is None:
        yield lambda: None
        return
    if deadline <= time.monotonic():
        raise OperationTimeout("the operation ran past its time limit before it started")
    key = _WATCHDOG.arm(conn, deadline)
    try:
        yield lambda: _WATCHDOG.disarm(key)
    finally:
        _WATCHDOG.disarm(key)
