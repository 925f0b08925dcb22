"""How the SQLite store reads the highest importance of a scope's memories: one seek in the
partial index on (scope, importance) of the memories not archived, never a scan of the
scope's memories. The statements are the ones the store runs (caught as it runs them),
each planned by SQLite itself."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from mnemodb.model.ids import SHARED, new_ulid
from mnemodb.model.records import MEMORY
from mnemodb.store.sqlite import SqliteStore
from store.contract.rows import T0, digest

OTHER = new_ulid()


@pytest.mark.parametrize("scopes", [[SHARED], [SHARED, OTHER]], ids=["one scope", "two scopes"])
def test_the_most_important_memory_is_read_by_index(tmp_path: Path, scopes: list[str]) -> None:
    path = tmp_path / "importance.db"
    store = SqliteStore(path)
    try:
        with store.write() as tx:
            for i in range(300):
                scope = SHARED if i % 2 else OTHER
                pk = tx.insert_node(new_ulid(), scope, MEMORY, {}, T0)
                tx.insert_memory(pk, scope, digest(f"memory {i}"), f"memory {i}", None, i % 11, "general")
                if i % 7 == 0:
                    tx.set_archived(pk, T0)
        statements: list[str] = []
        with store.read() as tx:
            tx.conn.set_trace_callback(statements.append)
            try:
                most = tx.most_important(scopes)
            finally:
                tx.conn.set_trace_callback(None)
    finally:
        store.close()
    assert most == 10
    reads = [s for s in statements if "importance" in s]
    assert len(reads) == len(scopes), statements
    with sqlite3.connect(path) as conn:
        plans = [" / ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {s}")) for s in reads]
    for plan in plans:
        assert "memory_scope_importance (scope=?)" in plan, plan
        assert "SCAN" not in plan, plan
