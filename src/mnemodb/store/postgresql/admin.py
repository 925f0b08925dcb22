"""Backup, health check and size of a PostgreSQL store. (Being written.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from mnemodb.model.errors import StoreFailed
from mnemodb.store.base import StoreHealth

if TYPE_CHECKING:
    from mnemodb.store.postgresql.store import PostgresStore


def backup(store: PostgresStore, target: str, progress: Callable[[int, int], None] | None = None) -> None:
    raise StoreFailed("backup of a PostgreSQL store is not written yet")


def check(store: PostgresStore, *, thorough: bool = False) -> StoreHealth:
    raise StoreFailed("check of a PostgreSQL store is not written yet")


def size_bytes(store: PostgresStore) -> int:
    with store.read() as tx:
        row = tx.conn.execute(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = %s AND c.relkind IN ('r', 'm')",
            [store.database.schema],
        ).fetchone()
    return int(row[0]) if row else 0
