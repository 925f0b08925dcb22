"""What a detailed look-up reads beside its items in the SQLite store (`edges_around`): one
statement, its relations by each end's index, the other end and its entity row by key,
the items' access rows by key, never a scan. The statement is the one the store runs
(caught as it runs it), planned by SQLite itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemodb.model.ids import SHARED, new_ulid
from mnemodb.model.records import ENTITY, MEMORY
from mnemodb.store.sqlite import SqliteStore
from store.contract.rows import T0, digest
from store.sqlite_plans import plan_rows, traced


def _store_with_a_chain(path: Path) -> tuple[SqliteStore, dict[int, str]]:
    """300 entities, each related to the one before it and with a memory about it; the
    entities' ids by pk, and access counts for some."""
    store = SqliteStore(path)
    ids: dict[int, str] = {}
    with store.write() as tx:
        for i in range(300):
            node_id = new_ulid()
            pk = tx.insert_node(node_id, SHARED, ENTITY, {}, T0)
            tx.insert_entity(pk, SHARED, f"Entity {i}", "thing", None, (), T0)
            if ids:
                tx.insert_edge(new_ulid(), pk, max(ids), "follows", SHARED, {}, T0, T0)
            memory = tx.insert_node(new_ulid(), SHARED, MEMORY, {}, T0)
            tx.insert_memory(memory, SHARED, digest(f"note {i}"), f"note {i}", None, 0, "general")
            tx.insert_edge(new_ulid(), memory, pk, "about", SHARED, {}, T0, T0)
            ids[pk] = node_id
    store.bump_access(dict.fromkeys(list(ids)[::3], (1, T0)))
    return store, ids


@pytest.mark.parametrize("valid", [True, False])
@pytest.mark.parametrize("count", [1, 3])
def test_a_look_up_reads_its_relations_ends_and_access_by_index_in_one_statement(
    tmp_path: Path, valid: bool, count: int
) -> None:
    path = tmp_path / "look-up.db"
    store, ids = _store_with_a_chain(path)
    nodes = {pk: ids[pk] for pk in list(ids)[100 : 100 + count]}
    try:
        around, statements = traced(
            store, lambda tx: tx.edges_around(nodes, valid_at=T0 + 1 if valid else None, scopes=[SHARED])
        )
    finally:
        store.close()
    assert len(around.edges) == 3 * count - (count - 1)  # a chain's links between two of them once
    assert set(around.access) == {pk for pk in nodes if (pk - min(ids)) % 6 == 0}
    assert len(statements) == 1
    (rows,) = plan_rows(path, statements)
    steps = [detail for _, _, detail in rows]
    assert steps == [
        "COMPOUND QUERY",
        "LEFT-MOST SUBQUERY",
        "SEARCH e USING INDEX edge_src (src=?)",
        "SEARCH d USING INTEGER PRIMARY KEY (rowid=?)",
        "SEARCH k USING INTEGER PRIMARY KEY (rowid=?) LEFT-JOIN",
        "UNION ALL",
        "SEARCH e USING INDEX edge_dst (dst=?)",
        "SEARCH s USING INTEGER PRIMARY KEY (rowid=?)",
        "SEARCH k USING INTEGER PRIMARY KEY (rowid=?) LEFT-JOIN",
        "UNION ALL",
        "SEARCH node_access USING INTEGER PRIMARY KEY (rowid=?)",
    ], steps


@pytest.mark.parametrize("valid", [True, False])
def test_a_look_up_by_name_finds_the_entity_and_reads_around_it_by_index_in_one_statement(
    tmp_path: Path, valid: bool
) -> None:
    path = tmp_path / "look-up.db"
    store, _ = _store_with_a_chain(path)
    try:
        found, statements = traced(
            store, lambda tx: tx.entity_around([SHARED], "Entity 100", valid_at=T0 + 1 if valid else None)
        )
    finally:
        store.close()
    assert found is not None
    entity, around = found
    assert entity.name == "Entity 100" and len(around.edges) == 3  # its two links in the chain, its note
    assert len(statements) == 1
    (rows,) = plan_rows(path, statements)
    steps = [detail for _, _, detail in rows]
    # Each part finds the entity by its name's index entry (a subquery of its own), then
    # reads by key: the entity's part its access row too.
    by_name = "SEARCH entity USING COVERING INDEX entity_scope_name (scope=? AND name=?)"
    assert [s for s in steps if not s.startswith(("SCALAR SUBQUERY", "REUSE SUBQUERY"))] == [
        "COMPOUND QUERY",
        "LEFT-MOST SUBQUERY",
        "SEARCH n USING INTEGER PRIMARY KEY (rowid=?)",
        by_name,
        "SEARCH e USING INTEGER PRIMARY KEY (rowid=?)",
        "SEARCH t USING INTEGER PRIMARY KEY (rowid=?) LEFT-JOIN",
        "SEARCH a USING INTEGER PRIMARY KEY (rowid=?) LEFT-JOIN",
        "UNION ALL",
        "SEARCH e USING INDEX edge_src (src=?)",
        by_name,
        "SEARCH d USING INTEGER PRIMARY KEY (rowid=?)",
        "SEARCH k USING INTEGER PRIMARY KEY (rowid=?) LEFT-JOIN",
        "UNION ALL",
        "SEARCH e USING INDEX edge_dst (dst=?)",
        by_name,
        "SEARCH s USING INTEGER PRIMARY KEY (rowid=?)",
        "SEARCH k USING INTEGER PRIMARY KEY (rowid=?) LEFT-JOIN",
    ], steps
