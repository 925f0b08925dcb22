"""The statements a SQLite read runs, caught as it runs them, and SQLite's own plans of
them: for the tests that pin which index each read walks."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from mnemodb.store.sqlite import SqliteStore
from mnemodb.store.sqlite.store import SqliteReadTx

T = TypeVar("T")


def traced(store: SqliteStore, read: Callable[[SqliteReadTx], T]) -> tuple[T, list[str]]:
    """What `read` gives in a read transaction of `store`, and every statement it ran."""
    statements: list[str] = []
    with store.read() as tx:
        tx.conn.set_trace_callback(statements.append)
        try:
            result = read(tx)
        finally:
            tx.conn.set_trace_callback(None)
    return result, statements


def plan_rows(path: Path, statements: Sequence[str]) -> list[list[tuple[int, int, str]]]:
    """Each statement's plan on the database at `path`, as (id, parent, detail) rows."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return [[(r[0], r[1], r[3]) for r in conn.execute(f"EXPLAIN QUERY PLAN {s}")] for s in statements]


def plans_of(path: Path, statements: Sequence[str]) -> list[str]:
    """Each statement's plan on the database at `path`, its steps joined by " / "."""
    return [" / ".join(detail for _, _, detail in rows) for rows in plan_rows(path, statements)]
