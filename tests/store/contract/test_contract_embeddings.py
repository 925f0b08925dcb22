"""EmbeddingReads and EmbeddingWrites: one vector per (node, model), generations, staleness."""

from __future__ import annotations

from mnemodb.model.records import MEMORY
from mnemodb.store.base import Coverage, EmbeddingChanges, Store, StoredVector
from store.contract.rows import T0, B, add_entity, add_memory, add_node, node_id, vector


def test_a_vector_reads_back_with_its_node(store: Store) -> None:
    with store.write() as tx:
        pk = add_node(tx, scope=B)
        tx.set_embedding(pk, "m", vector(1.0, 2.0, 3.0), 3, T0)
        ident = node_id(tx, pk)
    with store.read() as tx:
        assert tx.embeddings_of_model("m") == [StoredVector(pk, ident, B, vector(1.0, 2.0, 3.0))]
        assert tx.embeddings_of_model("other") == []
        assert tx.embedded_nodes("m") == [pk]
        assert tx.embedding_dim("m") == 3
        assert tx.embedding_dim("other") is None


def test_set_embedding_replaces_the_nodes_vector_for_that_model(store: Store) -> None:
    with store.write() as tx:
        pk = add_node(tx)
        tx.set_embedding(pk, "m", vector(1.0, 0.0), 2, T0)
        tx.set_embedding(pk, "m", vector(0.0, 1.0), 2, T0 + 1)
        tx.set_embedding(pk, "n", vector(5.0), 1, T0)
    with store.read() as tx:
        assert [v.vector for v in tx.embeddings_of_model("m")] == [vector(0.0, 1.0)]
        assert [v.vector for v in tx.embeddings_of_model("n")] == [vector(5.0)]


def test_embeddings_oldest_node_first(store: Store) -> None:
    with store.write() as tx:
        pks = [add_node(tx) for _ in range(4)]
        for pk in reversed(pks):
            tx.set_embedding(pk, "m", vector(float(pk)), 1, T0)
    with store.read() as tx:
        assert [v.pk for v in tx.embeddings_of_model("m")] == pks
        assert tx.embedded_nodes("m") == pks


def test_embedding_dim_can_leave_one_node_out(store: Store) -> None:
    with store.write() as tx:
        only = add_node(tx)
        tx.set_embedding(only, "m", vector(1.0, 2.0), 2, T0)
    with store.read() as tx:
        assert tx.embedding_dim("m", excluding=only) is None
        assert tx.embedding_dim("m", excluding=only + 1) == 2


def test_generations_grow_on_every_set_and_removal(store: Store) -> None:
    with store.read() as tx:
        assert tx.embedding_changes("m") == EmbeddingChanges(0, 0)
    with store.write() as tx:
        one, two = add_node(tx), add_node(tx)
        tx.set_embedding(one, "m", vector(1.0), 1, T0)
        first = tx.embedding_changes("m")
        tx.set_embedding(two, "m", vector(2.0), 1, T0)
        second = tx.embedding_changes("m")
        tx.set_embedding(one, "m", vector(3.0), 1, T0)
        third = tx.embedding_changes("m")
        tx.set_embedding(one, "other", vector(3.0), 1, T0)
        assert tx.embedding_changes("m") == third
    assert 0 < first.generation < second.generation < third.generation
    assert first.removals == second.removals == third.removals == 0
    with store.write() as tx:
        tx.delete_embeddings(one)
        removed = tx.embedding_changes("m")
        other = tx.embedding_changes("other")
    assert removed.generation > third.generation
    assert removed.removals == 1
    assert other.removals == 1
    with store.write() as tx:
        tx.delete_node(two)  # its vector goes with it
        gone = tx.embedding_changes("m")
        assert tx.embedded_nodes("m") == []
    assert gone.generation > removed.generation and gone.removals == 2


def test_embeddings_since_a_generation(store: Store) -> None:
    with store.write() as tx:
        one, two, three = add_node(tx), add_node(tx), add_node(tx)
        tx.set_embedding(one, "m", vector(1.0), 1, T0)
        tx.set_embedding(two, "m", vector(2.0), 1, T0)
        seen = tx.embedding_changes("m").generation
        tx.set_embedding(three, "m", vector(3.0), 1, T0)
        tx.set_embedding(one, "m", vector(4.0), 1, T0)
    with store.read() as tx:
        since = tx.embeddings_of_model("m", since=seen)
        latest = tx.embeddings_of_model("m", since=tx.embedding_changes("m").generation)
    assert [(v.pk, v.vector) for v in since] == [(one, vector(4.0)), (three, vector(3.0))]
    assert latest == []


def test_unembedded_and_coverage_follow_node_versions(store: Store) -> None:
    with store.write() as tx:
        first = add_memory(tx, "first")
        second = add_memory(tx, "second")
        third = add_memory(tx, "third")
        add_entity(tx, "Not of the label")
    with store.read() as tx:
        assert tx.unembedded("m", [MEMORY], 10) == [first, second, third]
        assert tx.unembedded("m", [MEMORY], 2) == [first, second]
        assert tx.unembedded("m", [MEMORY], 10, after=first) == [second, third]
        assert tx.embedding_coverage("m", [MEMORY]) == Coverage(0, 3)
    with store.write() as tx:
        tx.set_embedding(first, "m", vector(1.0), 1, T0)  # of the current version
        version = tx.node_versions([second])[second]
        tx.set_embedding(second, "m", vector(1.0), 1, T0, node_version=version)
    with store.read() as tx:
        assert tx.unembedded("m", [MEMORY], 10) == [third]
        assert tx.embedding_coverage("m", [MEMORY]) == Coverage(2, 3)
        assert tx.unembedded("other", [MEMORY], 10) == [first, second, third]
    with store.write() as tx:
        tx.update_memory(second, {"content": "second, edited"})
        tx.touch_node(second, T0 + 1)  # as the engine does with every edit: the vector is stale now
        tx.touch_node(first, T0 + 1)
    with store.read() as tx:
        coverage = tx.embedding_coverage("m", [MEMORY])
        assert tx.unembedded("m", [MEMORY], 10) == [first, second, third]
    assert (coverage.current, coverage.total) == (0, 3)


def test_a_vector_made_from_an_older_version_is_stale(store: Store) -> None:
    with store.write() as tx:
        pk = add_node(tx)
        tx.touch_node(pk, T0 + 1)
        version = tx.node_versions([pk])[pk]
        tx.set_embedding(pk, "m", vector(1.0), 1, T0, node_version=version - 1)
    with store.read() as tx:
        assert tx.unembedded("m", ["Thing"], 10) == [pk]
        assert tx.embedding_coverage("m", ["Thing"]) == Coverage(0, 1)


def test_writes_of_vectors_for_a_missing_node_change_nothing(store: Store) -> None:
    with store.write() as tx:
        pk = add_node(tx)
        tx.set_embedding(pk, "m", vector(1.0), 1, T0)
        before = tx.embedding_changes("m")
        tx.delete_embeddings(pk + 100)
        tx.set_embedding(pk + 100, "m", vector(2.0), 1, T0)
        assert tx.embedding_changes("m") == before
        assert tx.embedded_nodes("m") == [pk]
