"""How the SQLite store reads the highest importance of a scope's memories: one seek in the
partial index on (scope, importance) of the memories not archived, never a scan of the
scope's memories. The statements are the ones the store runs (caught as it runs them),
each planned by SQLite itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemodb.model.ids import SHARED, new_ulid
from mnemodb.model.records import MEMORY
from mnemodb.store.sqlite import SqliteStore
from store.contract.rows import T0, digest
from store.sqlite_plans import plans_of, traced

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
        most, statements = traced(store, lambda tx: tx.most_important(scopes))
    finally:
        store.close()
    assert most == 10
    reads = [s for s in statements if "importance" in s]
    assert len(reads) == len(scopes), statements
    for plan in plans_of(path, reads):
        assert "memory_scope_importance (scope=?)" in plan, plan
        assert "SCAN" not in plan, plan
