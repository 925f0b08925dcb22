"""The in-process vector index (`MatrixVectorIndex`, the SQLite store's) over a real store of
the chosen backend: its inverted file against exact search on seeded clustered data, under
writes, changes and removals, and under scope filters."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine.helpers import store_at
from mnemodb.model.errors import InvalidArgument
from mnemodb.model.ids import new_ulid
from mnemodb.store.base import Store, VectorHit
from mnemodb.store.vectors import MatrixVectorIndex

MODEL = "m"
DIM = 32
BIG, SMALL = new_ulid(), new_ulid()
"""Two scopes: most vectors are in BIG; SMALL holds fewer than `LIST_FROM`."""
LIST_FROM = 500


@pytest.fixture
def store(db_path: Path) -> Iterator[Store]:
    opened = store_at(db_path)
    try:
        yield opened
    finally:
        opened.close()


def _clustered(rng: np.random.Generator, n: int, centres: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Unit vectors around random centres (as embeddings cluster by topic)."""
    rows = centres[rng.integers(0, len(centres), n)] + 0.35 * rng.standard_normal((n, DIM))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    unit: np.ndarray[Any, Any] = rows.astype(np.float32)
    return unit


def _write(store: Store, rows: np.ndarray[Any, Any], scope: str) -> list[int]:
    with store.write() as tx:
        pks = [tx.insert_node(new_ulid(), scope, "Thing", {}, 0) for _ in rows]
        for pk, row in zip(pks, rows, strict=True):
            tx.set_embedding(pk, MODEL, row.astype("<f4").tobytes(), DIM, 0)
    return pks


def _search(
    store: Store, index: MatrixVectorIndex, query: Sequence[float], scopes: Sequence[str], *, exact: bool = False
) -> list[VectorHit]:
    with store.read() as tx:
        return index.nearest(tx, MODEL, list(query), k=10, scopes=scopes, exact=exact)


@pytest.fixture
def data(store: Store) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], list[int]]:
    """3,000 vectors in BIG, 300 in SMALL, around 40 shared centres; 40 queries."""
    rng = np.random.default_rng(11)
    centres = rng.standard_normal((40, DIM))
    pks = _write(store, _clustered(rng, 3000, centres), BIG)
    pks += _write(store, _clustered(rng, 300, centres), SMALL)
    return centres, _clustered(rng, 40, centres), pks


def _index() -> MatrixVectorIndex:
    # Lists from 500 readable vectors (not 20,000), a tenth of them scored, no floor: the
    # approximate path on a store small enough for a test.
    return MatrixVectorIndex(approximate_from=LIST_FROM, scan_share=0.1, min_scanned=0)


def test_the_lists_find_what_exact_search_finds(store: Store, data: Any) -> None:
    _, queries, _ = data
    approximate, exact = _index(), MatrixVectorIndex(approximate_from=None)
    found = 0
    for q in queries:
        truth = _search(store, exact, q.tolist(), [BIG, SMALL])
        hits = _search(store, approximate, q.tolist(), [BIG, SMALL])
        assert len(hits) == 10
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        found += len({h.pk for h in hits} & {h.pk for h in truth})
        # Asked to be exact, the same index scores every row.
        assert _search(store, approximate, q.tolist(), [BIG, SMALL], exact=True) == truth
    assert approximate.listed(MODEL) == 3300 and exact.listed(MODEL) == 0
    assert found / (10 * len(queries)) >= 0.95


def test_a_scope_filter_is_applied_and_a_small_readable_set_is_searched_exactly(store: Store, data: Any) -> None:
    _, queries, pks = data
    approximate, exact = _index(), MatrixVectorIndex(approximate_from=None)
    found = 0
    in_small = set(pks[3000:])
    for q in queries:
        big = _search(store, approximate, q.tolist(), [BIG])
        assert big and not {h.pk for h in big} & in_small
        found += len({h.pk for h in big} & {h.pk for h in _search(store, exact, q.tolist(), [BIG])})
        # 300 readable vectors, under LIST_FROM: the exact answer, every time.
        assert _search(store, approximate, q.tolist(), [SMALL]) == _search(store, exact, q.tolist(), [SMALL])
    assert approximate.listed(MODEL) > 0
    assert found / (10 * len(queries)) >= 0.95


def test_vectors_written_changed_or_removed_after_the_lists_are_made_are_seen_at_once(store: Store, data: Any) -> None:
    centres, queries, _ = data
    index = _index()
    q0, q1 = queries[0], queries[1]
    before = _search(store, index, q0.tolist(), [BIG, SMALL])
    listed = index.listed(MODEL)
    assert listed == 3300
    # A new vector equal to the query is its best match, though no list holds it.
    [new] = _write(store, q0[None, :], BIG)
    hits = _search(store, index, q0.tolist(), [BIG, SMALL])
    assert hits[0].pk == new and hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert index.listed(MODEL) == listed
    # A listed vector changed to the other query moves with it.
    moved = before[0].pk
    with store.write() as tx:
        tx.set_embedding(moved, MODEL, q1.astype("<f4").tobytes(), DIM, 1)
    assert _search(store, index, q1.tolist(), [BIG, SMALL])[0].pk == moved
    assert moved not in {h.pk for h in _search(store, index, q0.tolist(), [BIG, SMALL])}
    # Removed vectors are never returned, listed or not.
    gone = {new, moved, before[1].pk}
    with store.write() as tx:
        for pk in gone:
            tx.delete_embeddings(pk)
    for q in (q0, q1, *queries[2:6]):
        assert not gone & {h.pk for h in _search(store, index, q.tolist(), [BIG, SMALL])}
    assert index.listed(MODEL) == listed
    # Once the rows written since outnumber a quarter of the listed ones, the lists are made
    # again over all of them, and still agree with exact search.
    rng = np.random.default_rng(5)
    _write(store, _clustered(rng, 900, centres), BIG)
    exact = MatrixVectorIndex(approximate_from=None)
    found = 0
    for q in queries:
        found += len(
            {h.pk for h in _search(store, index, q.tolist(), [BIG, SMALL])}
            & {h.pk for h in _search(store, exact, q.tolist(), [BIG, SMALL])}
        )
    assert index.listed(MODEL) == 3300 + 1 + 900 - 3
    assert found / (10 * len(queries)) >= 0.95


def test_a_store_that_grows_past_the_threshold_gets_lists(store: Store) -> None:
    rng = np.random.default_rng(2)
    centres = rng.standard_normal((10, DIM))
    index = _index()
    _write(store, _clustered(rng, 100, centres), BIG)
    assert len(_search(store, index, centres[0].tolist(), [BIG])) == 10
    assert index.listed(MODEL) == 0
    _write(store, _clustered(rng, 450, centres), BIG)
    assert len(_search(store, index, centres[0].tolist(), [BIG])) == 10
    assert index.listed(MODEL) == 550


def test_a_query_of_the_wrong_length_and_bad_settings_are_refused(store: Store, data: Any) -> None:
    with pytest.raises(InvalidArgument, match="32-dimensional"):
        _search(store, _index(), [1.0, 0.0], [BIG])
    with pytest.raises(ValueError, match="approximate_from"):
        MatrixVectorIndex(approximate_from=0)
    with pytest.raises(ValueError, match="scan_share"):
        MatrixVectorIndex(scan_share=0.0)
    with pytest.raises(ValueError, match="min_scanned"):
        MatrixVectorIndex(min_scanned=-1)
