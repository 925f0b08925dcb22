"""How the SQLite store finds an entity by name ignoring case: through the index on
(scope, name NOCASE), never by reading every entity of a scope. The statements are the
ones the store runs (caught as it runs them), each planned by SQLite itself."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from mnemodb.model.ids import SHARED, new_ulid
from mnemodb.model.records import ENTITY
from mnemodb.store.sqlite import SqliteStore
from mnemodb.store.sqlite.schema import APPLICATION_ID, MIGRATIONS
from store.contract.rows import T0
from store.sqlite_plans import plans_of, traced

OTHER = new_ulid()


def _store_with_entities(path: Path) -> SqliteStore:
    store = SqliteStore(path)
    with store.write() as tx:
        for i in range(300):
            scope = SHARED if i % 2 else OTHER
            pk = tx.insert_node(new_ulid(), scope, ENTITY, {}, T0)
            tx.insert_entity(pk, scope, f"Entity {i}", "thing", None, (), T0)
    return store


def _plans_of_lookup(store: SqliteStore, path: Path, scopes: list[str], name: str) -> tuple[list[str], bool]:
    """Every statement `entity_by_name_nocase` ran, as SQLite plans it, and whether it found one."""
    found, statements = traced(store, lambda tx: tx.entity_by_name_nocase(scopes, name) is not None)
    lookups = [s for s in statements if "FROM entity" in s and "NOCASE" in s]
    assert lookups, statements
    return plans_of(path, lookups), found


@pytest.mark.parametrize("scopes", [[SHARED], [SHARED, OTHER]], ids=["one scope", "two scopes"])
@pytest.mark.parametrize(("name", "exists"), [("entity 7", True), ("NOBODY", False)])
def test_a_name_ignoring_case_is_looked_up_by_index(tmp_path: Path, scopes: list[str], name: str, exists: bool) -> None:
    path = tmp_path / "names.db"
    store = _store_with_entities(path)
    try:
        plans, found = _plans_of_lookup(store, path, scopes, name)
    finally:
        store.close()
    assert found is exists
    for plan in plans:
        assert "entity_scope_name_nocase (scope=? AND name=?)" in plan, plan
        assert "SCAN" not in plan, plan


def test_a_database_of_schema_14_gains_the_index_and_its_names_are_found_ignoring_case(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path, isolation_level=None) as conn:
        for migration in MIGRATIONS[:14]:
            conn.executescript(migration)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute("PRAGMA user_version = 14")
        conn.execute(
            "INSERT INTO node (pk, id, scope, label, props, created_at, updated_at) "
            "VALUES (1, ?, 'shared', 'Entity', '{}', ?, ?)",
            [new_ulid(), T0, T0],
        )
        conn.execute("INSERT INTO entity (node, scope, name, entity_type) VALUES (1, 'shared', 'Ada Lovelace', '')")
    store = SqliteStore(path)
    try:
        plans, found = _plans_of_lookup(store, path, [SHARED], "ADA LOVELACE")
    finally:
        store.close()
    assert found
    assert all("entity_scope_name_nocase" in plan for plan in plans), plans
