"""TransferReads and TransferWrites: counts, dump and load between two stores."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemodb.model.ids import new_ulid
from mnemodb.store.base import Store
from store.contract.rows import T0, A, B, C, add_edge, add_entity, add_memory, add_node, digest, vector

NUL = "\x00"


def _fill(store: Store) -> dict[str, int]:
    with store.write() as tx:
        memory = add_memory(
            tx, f"a memory{NUL}", summary="sum", importance=4, memory_type="fact", tags=["x", "y"], props={"k": 1}
        )
        other = add_memory(tx, "in b", scope=B, at=T0 + 1)
        ada = add_entity(tx, f"Ada{NUL}", "person", ["one", f"two{NUL}"], at=T0 + 2)
        thing = add_node(tx, "Thing", scope=C, props={"flag": True}, at=T0 + 3)
        tx.touch_node(thing, T0 + 30)
        about = add_edge(tx, memory, ada, "about", props={"w": 0.5}, at=T0 + 4)
        closed = add_edge(tx, ada, other, "was", scope=B, valid_from=T0, at=T0 + 5)
        tx.close_edge(closed, T0 + 9)
        tx.set_edge_extra(about, {"upstream": [1, 2]})
        tx.set_embedding(memory, "m", vector(1.0, 2.0), 2, T0 + 50)
        tx.set_embedding(thing, "m", vector(3.0, 4.0), 2, T0 + 50)
    store.bump_access({memory: (3, T0 + 60)})
    return {"memory": memory, "other": other, "ada": ada, "thing": thing, "about": about, "closed": closed}


def _dump(store: Store) -> list[dict[str, Any]]:
    with store.read() as tx:
        return list(tx.dump())


def test_counts_per_kind_and_scope(store: Store) -> None:
    with store.read() as tx:
        assert tx.counts(None) == dict.fromkeys(
            ("nodes", "memories", "entities", "edges", "observations", "embeddings"), 0
        )
    _fill(store)
    with store.read() as tx:
        everywhere = tx.counts(None)
        in_a = tx.counts([A])
        in_c = tx.counts([C])
    assert everywhere == {"nodes": 4, "memories": 2, "entities": 1, "edges": 2, "observations": 2, "embeddings": 2}
    assert in_a == {"nodes": 2, "memories": 1, "entities": 1, "edges": 1, "observations": 2, "embeddings": 1}
    assert in_c == {"nodes": 1, "memories": 0, "entities": 0, "edges": 0, "observations": 0, "embeddings": 1}


def test_dump_is_nodes_then_edges_then_embeddings_oldest_first(store: Store) -> None:
    rows = _fill(store)
    records = _dump(store)
    kinds = [record["type"] for record in records]
    assert kinds == ["node"] * 4 + ["edge"] * 2 + ["embedding"] * 2
    with store.read() as tx:
        views = tx.node_views([rows["memory"], rows["other"], rows["ada"], rows["thing"]])
    assert [r["id"] for r in records[:4]] == [views[rows[k]].id for k in ("memory", "other", "ada", "thing")]
    assert [r["pk"] for r in records[4:6]] == [rows["about"], rows["closed"]]
    assert records[4]["extra"] == {"upstream": [1, 2]}
    assert [r["node"] for r in records[6:]] == [views[rows["memory"]].id, views[rows["thing"]].id]


def test_dump_then_load_round_trips_ids_and_free_pks(store: Store, other_store: Store) -> None:
    rows = _fill(store)
    records = _dump(store)
    with other_store.write() as tx:
        written = [tx.load(record) for record in records]
    assert all(written)
    assert _dump(other_store) == records
    with other_store.read() as tx:
        memory = tx.memory_by_pk(rows["memory"])
        ada = tx.entities_by_pk([rows["ada"]])[rows["ada"]]
        closed = tx.edge_by_pk(rows["closed"])
        assert tx.count_memories([A, B]) == 2
        assert tx.count_tags([A]) == 2
        assert [h.pk for h in tx.search_text(["memory"], [A], 10)] == [rows["memory"]]
        assert tx.embedded_nodes("m") == [rows["memory"], rows["thing"]]
    assert memory is not None and memory.content == f"a memory{NUL}" and memory.tags == ("x", "y")
    assert memory.access_count == 3
    assert ada.observations == ("one", f"two{NUL}")
    assert closed is not None and closed.valid_to == T0 + 9


def test_loading_what_is_already_here_writes_nothing(store: Store) -> None:
    _fill(store)
    records = _dump(store)
    with store.write() as tx:
        assert [tx.load(record) for record in records] == [False] * len(records)
    assert _dump(store) == records


def test_a_taken_pk_gets_a_new_one_and_the_id_is_kept(store: Store, other_store: Store) -> None:
    rows = _fill(store)
    records = _dump(store)
    with other_store.write() as tx:
        squatter = tx.insert_node(new_ulid(), A, "Squatter", {}, T0, pk=rows["memory"])
        for record in records:
            tx.load(record)
        moved = tx.memory_pk(A, digest(f"a memory{NUL}"))
        ids = {record["id"] for record in records if record["type"] == "node"}
        views = tx.node_views(tx.node_pks_with_labels(["Memory", "Entity", "Thing"]))
    assert squatter == rows["memory"]
    assert moved is not None and moved != rows["memory"]
    assert {view.id for view in views.values()} == ids


def test_the_same_content_under_another_id_is_not_loaded_again(store: Store, other_store: Store) -> None:
    with store.write() as tx:
        add_memory(tx, "shared words")
    with other_store.write() as tx:
        add_memory(tx, "shared words")
    (record,) = _dump(store)
    with other_store.write() as tx:
        assert tx.load(record) is False
        assert tx.count_memories([A]) == 1


def test_an_edge_or_vector_of_a_missing_node_is_refused_with_value_error(store: Store, other_store: Store) -> None:
    _fill(store)
    edges = [record for record in _dump(store) if record["type"] == "edge"]
    vectors = [record for record in _dump(store) if record["type"] == "embedding"]
    with other_store.write() as tx:
        with pytest.raises(ValueError):
            tx.load(edges[0])
        with pytest.raises(ValueError):
            tx.load(vectors[0])
        assert tx.edges_of_types(None, [A, B, C], valid_at=None, limit=10) == []
        assert tx.embedded_nodes("m") == []


TEXT = st.text(st.characters(exclude_categories=["Cs"]) | st.just(NUL), min_size=1, max_size=16)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=TEXT, tag=TEXT, name=TEXT, observation=TEXT, key=TEXT, value=TEXT)
def test_any_text_survives_dump_and_load(
    store: Store, other_store: Store, content: str, tag: str, name: str, observation: str, key: str, value: str
) -> None:
    with store.write() as tx:
        memory = add_memory(tx, content, tags=[tag], summary=value, props={key: value})
        entity = add_entity(tx, name, value, [observation], props={key: value})
        edge = add_edge(tx, memory, entity, value, props={key: value})
    try:
        records = _dump(store)
        with other_store.write() as tx:
            assert all(tx.load(record) for record in records)
        try:
            assert _dump(other_store) == records
        finally:
            with other_store.write() as tx:
                for pk in tx.node_pks_with_labels(["Memory", "Entity"]):
                    tx.delete_node(pk)
    finally:
        with store.write() as tx:
            tx.delete_edge(edge)
            tx.delete_node(memory)
            tx.delete_node(entity)
