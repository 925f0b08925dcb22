"""VectorIndex: `store.vectors.nearest`, exact cosine search over a store's vectors."""

from __future__ import annotations

import math
import threading
from collections.abc import Collection, Sequence

import pytest

from mnemodb.model.errors import InvalidArgument
from mnemodb.model.ids import new_ulid
from mnemodb.store.base import Store, VectorHit
from store.contract.rows import T0, A, B, C, add_node, node_id, pks_of, vector


def _nearest(
    store: Store,
    query: Sequence[float],
    *,
    k: int = 10,
    scopes: Sequence[str] = (A,),
    candidates: Collection[str] | None = None,
    model: str = "m",
) -> list[VectorHit]:
    with store.read() as tx:
        return store.vectors.nearest(tx, model, query, k=k, scopes=scopes, candidates=candidates)


def _node_with(store: Store, values: Sequence[float], *, scope: str = A, ident: str | None = None) -> int:
    with store.write() as tx:
        pk = add_node(tx, scope=scope, node_id=ident)
        tx.set_embedding(pk, "m", vector(*values), len(values), T0)
    return pk


def test_best_first_by_cosine_similarity(store: Store) -> None:
    same = _node_with(store, (3.0, 0.0))
    near = _node_with(store, (1.0, 1.0))
    square = _node_with(store, (0.0, 2.0))
    opposite = _node_with(store, (-1.0, 0.0))
    hits = _nearest(store, (1.0, 0.0))
    assert pks_of(hits) == [same, near, square, opposite]
    scores = [hit.score for hit in hits]
    assert scores == pytest.approx([1.0, math.sqrt(0.5), 0.0, -1.0], abs=1e-6)
    assert pks_of(_nearest(store, (1.0, 0.0), k=2)) == [same, near]
    assert _nearest(store, (1.0, 0.0), k=0) == []


def test_ties_go_by_node_id(store: Store) -> None:
    ids = sorted(new_ulid() for _ in range(3))
    # Inserted in the reverse of id order, so pk order and id order disagree.
    pks = {ident: _node_with(store, (1.0, 1.0), ident=ident) for ident in reversed(ids)}
    hits = _nearest(store, (2.0, 2.0))
    assert pks_of(hits) == [pks[ident] for ident in ids]
    assert pks_of(_nearest(store, (2.0, 2.0), k=1)) == [pks[ids[0]]]


def test_ties_go_by_node_id_among_many(store: Store) -> None:
    ids = sorted(new_ulid() for _ in range(40))
    pks = {ident: _node_with(store, (0.5, 0.5), ident=ident) for ident in reversed(ids)}
    _node_with(store, (0.0, 1.0))
    assert pks_of(_nearest(store, (1.0, 1.0), k=3)) == [pks[ident] for ident in ids[:3]]


def test_scopes_and_candidates_narrow_the_search(store: Store) -> None:
    in_a = _node_with(store, (1.0, 0.0))
    in_b = _node_with(store, (1.0, 0.1), scope=B)
    in_c = _node_with(store, (1.0, 0.2), scope=C)
    with store.read() as tx:
        id_a, id_c = node_id(tx, in_a), node_id(tx, in_c)
    assert pks_of(_nearest(store, (1.0, 0.0), scopes=[A, B])) == [in_a, in_b]
    assert pks_of(_nearest(store, (1.0, 0.0), scopes=[C])) == [in_c]
    assert _nearest(store, (1.0, 0.0), scopes=[]) == []
    assert pks_of(_nearest(store, (1.0, 0.0), scopes=[A, B, C], candidates={id_c, id_a})) == [in_a, in_c]
    assert pks_of(_nearest(store, (1.0, 0.0), scopes=[A, B], candidates=[id_c])) == []
    assert _nearest(store, (1.0, 0.0), scopes=[A, B, C], candidates=[]) == []


def test_zero_vectors_match_nothing(store: Store) -> None:
    _node_with(store, (0.0, 0.0))
    real = _node_with(store, (0.0, 1.0))
    assert pks_of(_nearest(store, (1.0, 1.0))) == [real]
    assert _nearest(store, (0.0, 0.0)) == []


def test_a_query_of_another_length_is_refused(store: Store) -> None:
    _node_with(store, (1.0, 0.0, 0.0))
    with pytest.raises(InvalidArgument):
        _nearest(store, (1.0, 0.0))
    with pytest.raises(InvalidArgument):
        _nearest(store, (1.0, 0.0, 0.0, 0.0))


def test_a_model_without_vectors_finds_nothing(store: Store) -> None:
    _node_with(store, (1.0, 0.0))
    assert _nearest(store, (1.0, 0.0), model="unknown") == []


def test_the_search_follows_vector_writes(store: Store) -> None:
    first = _node_with(store, (1.0, 0.0))
    second = _node_with(store, (0.0, 1.0))
    assert pks_of(_nearest(store, (1.0, 0.1))) == [first, second]
    with store.write() as tx:
        tx.set_embedding(second, "m", vector(1.0, 0.2), 2, T0)
    assert pks_of(_nearest(store, (1.0, 0.2))) == [second, first]
    with store.write() as tx:
        tx.delete_embeddings(second)
    assert pks_of(_nearest(store, (1.0, 0.2))) == [first]
    third = _node_with(store, (1.0, 0.3))
    with store.write() as tx:
        tx.delete_node(first)
    assert pks_of(_nearest(store, (1.0, 0.0))) == [third]
    for _ in range(6):
        with store.write() as tx:
            tx.set_embedding(third, "m", vector(1.0, 0.3), 2, T0)
    assert pks_of(_nearest(store, (1.0, 0.0))) == [third]


def test_an_older_read_sees_its_own_nodes_whatever_the_index_state(store: Store) -> None:
    old = _node_with(store, (1.0, 0.0))
    with store.read() as tx:
        assert pks_of(store.vectors.nearest(tx, "m", (1.0, 0.0), k=10, scopes=[A])) == [old]
        new = _node_with(store, (1.0, 0.0))
        # Another read, after the write (in a thread of its own, as reads do not nest),
        # brings the search up to date...
        later: list[VectorHit] = []
        reader = threading.Thread(target=lambda: later.extend(_nearest(store, (1.0, 0.0))))
        reader.start()
        reader.join()
        assert set(pks_of(later)) == {old, new}
        # ...and the earlier one may be answered from that later state, but what it reads
        # of the hits is still its own snapshot.
        hits = pks_of(store.vectors.nearest(tx, "m", (1.0, 0.0), k=10, scopes=[A]))
        assert old in hits
        assert [pk for pk in hits if pk in tx.labels_of(hits)] == [old]
