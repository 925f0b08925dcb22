"""What relating entities by name reads in the SQLite store before it writes: the ends'
keys by (scope, name) and the relations already open between them, each through an index,
never by reading every entity or every edge. The statements are the ones the store runs
(caught as it runs them), each planned by SQLite itself."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from mnemodb.model.ids import SHARED, new_ulid
from mnemodb.model.records import ENTITY
from mnemodb.store.sqlite import SqliteStore
from mnemodb.store.sqlite.store import SqliteReadTx
from store.contract.rows import T0
from store.sqlite_plans import plans_of, traced


def _store_with_related_entities(path: Path) -> tuple[SqliteStore, list[int]]:
    """300 entities, each related to the one before it."""
    store = SqliteStore(path)
    pks: list[int] = []
    with store.write() as tx:
        for i in range(300):
            pk = tx.insert_node(new_ulid(), SHARED, ENTITY, {}, T0)
            tx.insert_entity(pk, SHARED, f"Entity {i}", "thing", None, (), T0)
            if pks:
                tx.insert_edge(new_ulid(), pk, pks[-1], "follows", SHARED, {}, T0, T0)
            pks.append(pk)
    return store, pks


def _plans(store: SqliteStore, path: Path, read: Callable[[SqliteReadTx], object], table: str) -> list[str]:
    """Every statement `read` ran that reads `table`, as SQLite plans it."""
    _, statements = traced(store, read)
    reads = [s for s in statements if f"FROM {table}" in s or f"JOIN {table}" in s]
    assert reads, statements
    return plans_of(path, reads)


def test_the_ends_keys_are_looked_up_by_scope_and_name(tmp_path: Path) -> None:
    path = tmp_path / "relations.db"
    store, _ = _store_with_related_entities(path)
    try:
        plans = _plans(store, path, lambda tx: tx.entity_keys_named([SHARED], ["Entity 3", "Entity 200"]), "entity")
    finally:
        store.close()
    for plan in plans:
        assert "entity_scope_name (scope=? AND name=?)" in plan, plan
        assert "SCAN e" not in plan and "SCAN n" not in plan, plan


def test_the_open_relations_are_looked_up_by_their_ends(tmp_path: Path) -> None:
    path = tmp_path / "relations.db"
    store, pks = _store_with_related_entities(path)
    keys = [(pks[5], pks[4], "follows"), (pks[4], pks[5], "follows")]
    try:
        with store.read() as tx:
            assert tx.open_edge_keys(keys) == {(pks[5], pks[4], "follows")}
        plans = _plans(store, path, lambda tx: tx.open_edge_keys(keys), "edge")
    finally:
        store.close()
    for plan in plans:
        assert "SEARCH e USING INDEX edge_" in plan, plan
        assert "SCAN e" not in plan, plan


def test_the_open_relations_are_looked_up_by_an_end_and_the_type(tmp_path: Path) -> None:
    # The index walked reads only the end's edges of the types asked, not all of them.
    path = tmp_path / "relations.db"
    store, pks = _store_with_related_entities(path)
    keys = [(pks[5], pks[4], "follows"), (pks[7], pks[9], "likes")]
    try:
        plans = _plans(store, path, lambda tx: tx.open_edge_keys(keys), "edge")
    finally:
        store.close()
    for plan in plans:
        assert "(src=? AND type=?)" in plan or "(dst=? AND type=?)" in plan, plan
