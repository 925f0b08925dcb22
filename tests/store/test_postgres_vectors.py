"""The PostgreSQL store's pgvector search (`PgVectorIndex`) on a real server: the HNSW path
against the exact one, scope filters, index builds, and what stays exact."""

from __future__ import annotations

import itertools
import struct
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from mnemodb.model.errors import InvalidArgument
from mnemodb.model.ids import new_ulid
from mnemodb.store.base import VectorHit
from mnemodb.store.postgresql.store import PostgresStore
from mnemodb.store.postgresql.vectors import HNSW_MAX_DIM, PgVectorIndex, index_name
from postgres_server import PostgresServer

_names = itertools.count()
SCOPES = [new_ulid() for _ in range(4)]


@pytest.fixture
def store(postgres: PostgresServer) -> Iterator[PostgresStore]:
    opened = PostgresStore(f"{postgres.url()}?schema=vec_{next(_names)}_{new_ulid().lower()[-8:]}")
    try:
        yield opened
    finally:
        opened.close()


def _unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray[Any, Any]:
    rows: np.ndarray[Any, Any] = rng.standard_normal((n, dim)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


def _load(store: PostgresStore, model: str, rows: np.ndarray[Any, Any], scopes: Sequence[str] = SCOPES) -> list[int]:
    pks = []
    with store.write() as tx:
        for i, row in enumerate(rows):
            pk = tx.insert_node(new_ulid(), scopes[i % len(scopes)], "Thing", {}, 0)
            tx.set_embedding(pk, model, row.astype("<f4").tobytes(), len(row), 0)
            pks.append(pk)
    return pks


def _search(
    store: PostgresStore, index: PgVectorIndex, model: str, query: Sequence[float], scopes: Sequence[str], k: int = 10
) -> list[VectorHit]:
    with store.read() as tx:
        return index.nearest(tx, model, list(query), k=k, scopes=scopes)


def test_hnsw_finds_what_the_exact_scan_finds_filtered_or_not(store: PostgresStore) -> None:
    rng = np.random.default_rng(3)
    _load(store, "m", _unit(rng, 400, 16))
    exact = PgVectorIndex(store.database, exact_only=True)
    hnsw = PgVectorIndex(store.database, exact_below=0, build=False)
    assert hnsw.build_index("m")
    found = total = 0
    for q in _unit(rng, 20, 16):
        for reads in (SCOPES, SCOPES[:1], SCOPES[1:3]):
            truth = _search(store, exact, "m", q.tolist(), reads)
            hits = _search(store, hnsw, "m", q.tolist(), reads)
            assert len(hits) == len(truth) == 10
            with store.read() as tx:
                assert {label.scope for label in tx.labels_of([h.pk for h in hits]).values()} <= set(reads)
            scores = [h.score for h in hits]
            assert scores == sorted(scores, reverse=True)
            found += len({h.pk for h in hits} & {h.pk for h in truth})
            total += len(truth)
    assert hnsw.searches["hnsw"] == 60 and hnsw.searches["exact"] == 0
    assert exact.searches["exact"] == 60
    assert found / total >= 0.9
    # The planner matches the partial index (model and length are literals in the statement),
    # and the exact scan never uses it.
    with store.read() as tx:
        for reads in (SCOPES, SCOPES[:1]):
            assert index_name("m", 16) in hnsw.explain(tx, "m", [1.0] * 16, k=10, scopes=reads)
            assert "hnsw" not in exact.explain(tx, "m", [1.0] * 16, k=10, scopes=reads)


def test_exact_scores_are_the_cosine_similarities(store: PostgresStore) -> None:
    rng = np.random.default_rng(4)
    rows = _unit(rng, 50, 8) * 3.0
    pks = _load(store, "m", rows)
    query = rng.standard_normal(8)
    hits = _search(store, PgVectorIndex(store.database, exact_only=True), "m", query.tolist(), SCOPES, k=50)
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    expected = unit @ (query.astype(np.float32) / np.linalg.norm(query.astype(np.float32)))
    assert [h.pk for h in hits] == [pks[i] for i in np.argsort(-expected, kind="stable")]
    assert [h.score for h in hits] == pytest.approx(sorted(expected.tolist(), reverse=True), abs=1e-6)


def test_ties_at_the_cut_go_by_node_id_on_the_hnsw_path_too(store: PostgresStore) -> None:
    ids = sorted(new_ulid() for _ in range(30))
    same = struct.pack("<4f", 0.5, 0.5, 0.5, 0.5)
    with store.write() as tx:
        pks = {}
        for ident in reversed(ids):
            pks[ident] = tx.insert_node(ident, SCOPES[0], "Thing", {}, 0)
            tx.set_embedding(pks[ident], "m", same, 4, 0)
        other = tx.insert_node(new_ulid(), SCOPES[0], "Thing", {}, 0)
        tx.set_embedding(other, "m", struct.pack("<4f", 1.0, 0.0, 0.0, 0.0), 4, 0)
    hnsw = PgVectorIndex(store.database, exact_below=0, build=False)
    assert hnsw.build_index("m")
    hits = _search(store, hnsw, "m", [1.0, 1.0, 1.0, 1.0], SCOPES, k=3)
    assert [h.pk for h in hits] == [pks[ident] for ident in ids[:3]]
    assert hnsw.searches["hnsw"] == 1


def test_a_search_builds_the_index_in_the_background_then_uses_it(store: PostgresStore) -> None:
    rng = np.random.default_rng(5)
    _load(store, "m", _unit(rng, 120, 8))
    index = PgVectorIndex(store.database, exact_below=100)
    query = _unit(rng, 1, 8)[0].tolist()
    first = _search(store, index, "m", query, SCOPES)
    assert index.searches["exact"] == 1  # no index yet: exact, and the build begins
    index.wait_for_builds(60)
    assert _search(store, index, "m", query, SCOPES) == first
    assert index.searches["hnsw"] == 1
    with store.read() as tx:
        row = tx.conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [index_name("m", 8)]).fetchone()
    assert row is not None and "hnsw" in row[0] and "vector_cosine_ops" in row[0]
    # Too few readable vectors for the index (one scope: 30 of 120): exact.
    _search(store, index, "m", query, SCOPES[:1])
    assert index.searches["exact"] == 2


def test_models_of_different_lengths_have_indexes_of_their_own(store: PostgresStore) -> None:
    rng = np.random.default_rng(6)
    short = _load(store, "short", _unit(rng, 60, 4))
    long = _load(store, "long", _unit(rng, 60, 12))
    index = PgVectorIndex(store.database, exact_below=0, build=False)
    assert index.build_index("short") and index.build_index("long")
    assert {h.pk for h in _search(store, index, "short", [1.0, 0.0, 0.0, 0.0], SCOPES, k=60)} == set(short)
    assert {h.pk for h in _search(store, index, "long", [1.0] * 12, SCOPES, k=60)} == set(long)
    with pytest.raises(InvalidArgument):
        _search(store, index, "short", [1.0] * 12, SCOPES)
    assert _search(store, index, "unknown", [1.0] * 4, SCOPES) == []
    with store.read() as tx:
        names = {r[0] for r in tx.conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'embedding'")}
    assert {index_name("short", 4), index_name("long", 12)} <= names


def test_candidates_zero_vectors_and_long_vectors_stay_exact(store: PostgresStore) -> None:
    rng = np.random.default_rng(7)
    pks = _load(store, "m", _unit(rng, 40, 4))
    with store.write() as tx:
        zero = tx.insert_node(new_ulid(), SCOPES[0], "Thing", {}, 0)
        tx.set_embedding(zero, "m", struct.pack("<4f", 0, 0, 0, 0), 4, 0)
        ids = [r[0] for r in tx.conn.execute("SELECT id FROM node WHERE pk = ANY(%s) ORDER BY pk", [pks[:3]])]
    index = PgVectorIndex(store.database, exact_below=0, build=False)
    assert index.build_index("m")
    with store.read() as tx:
        hits = index.nearest(tx, "m", [1.0, 0.0, 0.0, 0.0], k=10, scopes=SCOPES, candidates=ids)
        assert {h.pk for h in hits} == set(pks[:3])
        assert index.nearest(tx, "m", [0.0, 0.0, 0.0, 0.0], k=10, scopes=SCOPES) == []
        assert zero not in {h.pk for h in index.nearest(tx, "m", [1.0, 1.0, 1.0, 1.0], k=50, scopes=SCOPES)}
    assert index.searches["exact"] == 1 and index.searches["hnsw"] == 1
    # Longer than HNSW indexes: exact, never a build.
    dim = HNSW_MAX_DIM + 1
    wide = _load(store, "wide", _unit(rng, 3, dim))
    assert not index.build_index("wide")
    hits = _search(store, index, "wide", [1.0] * dim, SCOPES)
    assert {h.pk for h in hits} == set(wide)


def test_a_search_asked_to_be_exact_skips_a_ready_hnsw_index(store: PostgresStore) -> None:
    rng = np.random.default_rng(8)
    _load(store, "m", _unit(rng, 200, 16))
    exact = PgVectorIndex(store.database, exact_only=True)
    hnsw = PgVectorIndex(store.database, exact_below=0, build=False)
    assert hnsw.build_index("m")
    for q in _unit(rng, 5, 16):
        with store.read() as tx:
            asked = hnsw.nearest(tx, "m", q.tolist(), k=10, scopes=SCOPES, exact=True)
        assert asked == _search(store, exact, "m", q.tolist(), SCOPES)
    assert hnsw.searches["exact"] == 5 and hnsw.searches["hnsw"] == 0
