"""Nearest-neighbour search over a store's vectors in process: the default `VectorIndex`.

A matrix of unit rows is kept per model and brought up to date from the store's embedding
generations (`EmbeddingReads.embedding_changes`). A store whose database has a vector index
of its own may answer `nearest` from it instead. numpy is imported here only, and this
module only when vectors are first searched.

- **Exact** for a model with fewer than `APPROXIMATE_FROM` readable vectors, for a search
  among given candidates, and whenever asked (`exact=True`, or an index made with
  `approximate_from=None`): every readable row is scored.
- **Approximate** above that: an inverted file (IVF). When the matrix is built, its rows are
  grouped by spherical k-means into about 2·√n lists and stored list after list, so a list
  is one contiguous slice. A search scores the list centres, then only the rows of the
  lists nearest the query, best list first, until they hold `SCAN_SHARE` of the rows the
  caller may read, and picks the best from those exactly. Chosen by measurement against
  exact numpy, hnswlib, usearch and faiss (`bench/ann.py`, docs/performance.md): at
  100,000 vectors it scores a tenth of the matrix, with recall@10 about 0.98 on
  embedding-like data, builds in about a second on one core, needs nothing beyond numpy,
  and a scope filter is a mask over the rows it scans, as for exact search.

Writes never wait for the lists: a vector written since the build is a row past the listed
ones, scored on every search (exactly) until the next build folds it in; a removed or
replaced vector's row is switched off and never returned. The matrix is rebuilt, and the
lists with it, once switched-off rows make up a quarter of it or the rows written since
the build a quarter of the listed ones.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mnemodb.model.errors import InvalidArgument
from mnemodb.model.value import Value
from mnemodb.store.base import ReadTx, ScopeSet, StoredVector, VectorHit

__all__ = ["APPROXIMATE_FROM", "SCAN_SHARE", "MatrixVectorIndex"]

APPROXIMATE_FROM = 20_000
"""Readable vectors from which a search uses the lists: below, exact search over one model
costs about 2 ms or less (384 dimensions, one core) and is always right."""

SCAN_SHARE = 0.1
"""The share of the readable rows a search scores, nearest lists first. At 100,000
embedding-like vectors (bench/ann.py's), 10 % gave recall@10 0.985 for 1.5 ms of CPU, 5 %
0.978 for 0.9 ms, 2.5 % 0.978 for 0.6 ms, against 12 ms for exact search: the margin is
for real embeddings, on which an inverted file's recall comes out a little lower."""

MIN_SCANNED = 2_000
"""Rows a search scores at least, whatever the share: small lists near a query matter more
than their size says."""

LISTS_PER_ROOT = 2.0
"""Lists per square root of the listed rows (632 at 100,000)."""

TRAINING_ROWS_PER_LIST = 16
"""Rows k-means learns the centres from, per list (a sample: assigning every row is the
costly part)."""

TRAINING_ROUNDS = 6
"""k-means rounds. With 16 rows a list and 6 rounds the lists of 100,000 vectors take 1.2 s
of CPU (with 32 and 8: 1.8 s, and no better recall)."""

_ASSIGN_CHUNK = 16_384
"""Rows assigned to their list per matrix product (bounds the temporary's size)."""


@dataclass
class _VectorIndex:
    """One model's vectors as a matrix of unit rows, for exact search.

    Brought up to date by appending: a new or changed vector becomes a new row (a changed
    one's old row is switched off), a removed one is switched off. Rows are appended past
    the end of a shared buffer, which the index of the previous generation never reads, so
    a search still holding that index is not disturbed. A full rebuild happens on first use
    and once switched-off rows make up a quarter of the matrix."""

    version: int
    removals: int
    buffer: np.ndarray[Any, Any]
    """Unit rows; the first `len(pks)` are this index's, the rest is room to grow."""
    pks: np.ndarray[Any, Any]
    ids: list[str]
    scopes: np.ndarray[Any, Any]
    """Each row's scope as a small integer, a key of `scope_codes`."""
    scope_codes: dict[str, int]
    live: np.ndarray[Any, Any]
    """Rows that count: current, and with a direction (a zero vector matches nothing)."""
    row_of: dict[int, int]
    """Each node's current row. Shared with later generations and updated in place: only the
    builder, which holds the lock, reads it."""
    dim: int
    lists: _Lists | None = None
    """The inverted file over the first `lists.rows` rows; None: exact search only."""
    masks: dict[tuple[str, ...], _Readable] = field(default_factory=dict)
    """Rows a read set may see, kept per read set: computing one costs more than a search."""

    @property
    def unit(self) -> np.ndarray[Any, Any]:
        return self.buffer[: len(self.pks)]

    @property
    def dead(self) -> int:
        return len(self.pks) - len(self.row_of)

    @classmethod
    def build(cls, version: int, removals: int, rows: Sequence[StoredVector], *, list_from: int | None) -> _VectorIndex:
        """The index of `rows`, grouped into lists when at least `list_from` of them have a
        direction (None: never)."""
        dim = len(rows[0][3]) // 4
        matrix = np.frombuffer(b"".join(r[3] for r in rows), dtype="<f4").reshape(len(rows), dim)
        buffer = np.empty((len(rows) + max(64, len(rows) // 8), dim), dtype=np.float32)
        live = _unit_into(buffer[: len(rows)], matrix)
        lists: _Lists | None = None
        if list_from is not None and int(live.sum()) >= list_from:
            lists, order = _Lists.build(buffer[: len(rows)], live)
            buffer[: len(rows)] = buffer[order]
            live = live[order]
            rows = [rows[i] for i in order.tolist()]
        codes: dict[str, int] = {}
        return cls(
            version,
            removals,
            buffer,
            np.array([r[0] for r in rows], dtype=np.int64),
            [r[1] for r in rows],
            np.array([codes.setdefault(r[2], len(codes)) for r in rows], dtype=np.int32),
            codes,
            live,
            {r[0]: row for row, r in enumerate(rows)},
            dim,
            lists,
        )

    def advanced(
        self,
        version: int,
        removals: int,
        rows: Sequence[StoredVector],
        present: Sequence[int] | None,
        *,
        list_from: int | None,
    ) -> _VectorIndex | None:
        """This index at a later generation: `rows` written since, and with `present` (the
        nodes that still have a vector) when some were removed. None when a rebuild is due:
        too many rows switched off, too many written since the lists were made, or enough
        vectors for lists (`list_from`) in an index that has none."""
        if any(len(r[3]) != self.dim * 4 for r in rows):
            return None
        live = self.live.copy()
        if present is not None:
            keep = np.isin(self.pks, np.asarray(present, dtype=np.int64))
            for row in np.flatnonzero(~keep & live).tolist():
                self.row_of.pop(int(self.pks[row]), None)
            live &= keep
        start = len(self.pks)
        end = start + len(rows)
        buffer = self.buffer
        if end > len(buffer):
            buffer = np.empty((end + max(64, end // 2), self.dim), dtype=np.float32)
            buffer[:start] = self.buffer[:start]
        codes = self.scope_codes
        if any(r[2] not in codes for r in rows):
            codes = dict(codes)
        if rows:
            matrix = np.frombuffer(b"".join(r[3] for r in rows), dtype="<f4").reshape(len(rows), self.dim)
            live = np.concatenate([live, _unit_into(buffer[start:end], matrix)])
            for offset, r in enumerate(rows):
                replaced = self.row_of.get(r[0])
                if replaced is not None:
                    live[replaced] = False
                self.row_of[r[0]] = start + offset
        advanced = _VectorIndex(
            version,
            removals,
            buffer,
            np.concatenate([self.pks, np.array([r[0] for r in rows], dtype=np.int64)]),
            self.ids + [r[1] for r in rows],
            np.concatenate([self.scopes, np.array([codes.setdefault(r[2], len(codes)) for r in rows], np.int32)]),
            codes,
            live,
            self.row_of,
            self.dim,
            self.lists,
        )
        if advanced.dead * 4 > len(advanced.pks):
            return None
        if self.lists is None and list_from is not None and int(np.count_nonzero(live)) >= list_from:
            return None
        if self.lists is not None and (len(advanced.pks) - self.lists.rows) * 4 > self.lists.rows:
            return None  # the unlisted rows, scored on every search, have grown too many
        return advanced

    def readable(self, reads: Sequence[str]) -> _Readable:
        key = tuple(sorted(reads))
        readable = self.masks.get(key)
        if readable is None:
            codes = [self.scope_codes[s] for s in key if s in self.scope_codes]
            mask = np.isin(self.scopes, np.array(codes, dtype=np.int32)) & self.live
            mask.flags.writeable = False
            per_list = None if self.lists is None else self.lists.counts(mask)
            readable = _Readable(mask, int(np.count_nonzero(mask)), per_list)
            if len(self.masks) >= 64:
                self.masks.clear()
            self.masks[key] = readable
        return readable


@dataclass(frozen=True, eq=False, repr=False)
class _Readable(Value):
    """The rows one read set may see."""

    mask: np.ndarray[Any, Any]
    count: int
    per_list: np.ndarray[Any, Any] | None
    """How many of them each list holds (None: the index has no lists)."""


@dataclass(frozen=True, eq=False, repr=False)
class _Lists(Value):
    """An inverted file: the first `rows` rows of the matrix grouped by their nearest centre,
    list after list (list i is rows `bounds[i]` to `bounds[i + 1]`)."""

    centres: np.ndarray[Any, Any]
    """Unit rows, one per list."""
    bounds: np.ndarray[Any, Any]
    rows: int

    @classmethod
    def build(cls, unit: np.ndarray[Any, Any], live: np.ndarray[Any, Any]) -> tuple[_Lists, np.ndarray[Any, Any]]:
        """Lists over `unit`'s rows (those in `live` train the centres), and the order of
        the rows that stores them list after list."""
        centres = _train_centres(unit[live])
        assigned = np.empty(len(unit), dtype=np.int64)
        for start in range(0, len(unit), _ASSIGN_CHUNK):
            block = unit[start : start + _ASSIGN_CHUNK]
            assigned[start : start + len(block)] = np.argmax(block @ centres.T, axis=1)
        order = np.argsort(assigned, kind="stable")
        bounds = np.searchsorted(assigned[order], np.arange(len(centres) + 1))
        return cls(centres, bounds, len(unit)), order

    def counts(self, mask: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """How many rows of `mask` (over the whole matrix) each list holds."""
        before = np.concatenate([[0], np.cumsum(mask[: self.rows], dtype=np.int64)])
        counts: np.ndarray[Any, Any] = before[self.bounds[1:]] - before[self.bounds[:-1]]
        return counts

    def nearest_lists(self, query: np.ndarray[Any, Any], per_list: np.ndarray[Any, Any], wanted: int) -> list[int]:
        """The lists nearest `query`, best first, until they hold `wanted` rows of `per_list`."""
        order = np.argsort(-(self.centres @ query))
        held = np.cumsum(per_list[order])
        last = int(np.searchsorted(held, wanted))
        chosen: list[int] = order[: last + 1].tolist()
        return chosen


def _train_centres(unit: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Spherical k-means centres of `unit`'s rows, learnt from a fixed-seed sample, so that
    the same vectors always give the same lists."""
    lists = max(1, min(len(unit), round(LISTS_PER_ROOT * math.sqrt(len(unit)))))
    rng = np.random.default_rng(0)
    sample = unit[np.sort(rng.choice(len(unit), min(len(unit), TRAINING_ROWS_PER_LIST * lists), replace=False))]
    centres = sample[rng.choice(len(sample), lists, replace=False)].copy()
    for _ in range(TRAINING_ROUNDS):
        nearest = np.argmax(sample @ centres.T, axis=1)
        order = np.argsort(nearest, kind="stable")
        sizes = np.bincount(nearest, minlength=lists)
        filled = np.flatnonzero(sizes)
        sums = np.zeros_like(centres)
        sums[filled] = np.add.reduceat(sample[order], np.concatenate([[0], np.cumsum(sizes)[:-1]])[filled], axis=0)
        empty = np.flatnonzero(sizes == 0)
        if empty.size:  # a centre nothing chose starts again from a random row
            sums[empty] = sample[rng.choice(len(sample), empty.size, replace=False)]
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        centres = np.divide(sums, norms, out=np.zeros_like(sums), where=norms > 0)
    trained: np.ndarray[Any, Any] = centres.astype(np.float32, copy=False)
    return trained


def _unit_into(target: np.ndarray[Any, Any], matrix: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Write `matrix`'s rows scaled to unit length into `target`; which rows had a length."""
    norms = np.linalg.norm(matrix, axis=1)
    np.divide(matrix, norms[:, None], out=target, where=norms[:, None] > 0)
    target[norms == 0] = 0.0
    nonzero: np.ndarray[Any, Any] = norms > 0
    return nonzero


class MatrixVectorIndex:
    """Cosine search over one cached matrix per model, shared by every reader: exact, or
    through the matrix's lists from `approximate_from` readable vectors (None: always exact)."""

    def __init__(
        self,
        *,
        approximate_from: int | None = APPROXIMATE_FROM,
        scan_share: float = SCAN_SHARE,
        min_scanned: int = MIN_SCANNED,
    ) -> None:
        if approximate_from is not None and approximate_from < 1:
            raise ValueError("approximate_from must be at least 1 (None: always exact)")
        if not 0.0 < scan_share <= 1.0:
            raise ValueError("scan_share must be above 0 and at most 1")
        if min_scanned < 0:
            raise ValueError("min_scanned must not be negative")
        self.approximate_from = approximate_from
        self.scan_share = scan_share
        self.min_scanned = min_scanned
        self._indexes: dict[str, _VectorIndex] = {}
        self._lock = threading.Lock()

    def nearest(
        self,
        tx: ReadTx,
        model: str,
        query: Sequence[float],
        *,
        k: int,
        scopes: ScopeSet,
        candidates: Collection[str] | None = None,
        exact: bool = False,
    ) -> list[VectorHit]:
        vector = np.asarray(query, dtype=np.float32)
        index = self._index(tx, model)
        if index is None:
            return []
        if index.dim != len(vector):
            raise InvalidArgument(
                f"the query vector has {len(vector)} dimensions but model {model!r} stores {index.dim}-dimensional "
                "vectors"
            )
        norm = float(np.linalg.norm(vector))
        if norm == 0.0 or k <= 0:
            return []
        unit_query = vector / norm
        readable = index.readable(scopes)
        if (
            not exact
            and candidates is None
            and index.lists is not None
            and readable.per_list is not None
            and self.approximate_from is not None
            and readable.count >= self.approximate_from
        ):
            return self._approximate(index, readable, unit_query, k)
        mask = readable.mask
        if candidates is not None:
            wanted = set(candidates)
            mask = mask & np.array([node_id in wanted for node_id in index.ids], dtype=bool)
        rows = np.flatnonzero(mask)
        if rows.size == 0:
            return []
        if rows.size * 2 > len(index.ids):
            # Most rows count: score them all in place rather than copy the matrix's rows.
            scores = np.where(mask, index.unit @ unit_query, -np.inf).astype(np.float32)
        else:
            scores = np.full(len(index.ids), -np.inf, dtype=np.float32)
            scores[rows] = index.unit[rows] @ unit_query
        return _best(index, np.arange(len(index.ids)), scores, rows.size, k)

    def _approximate(
        self, index: _VectorIndex, readable: _Readable, unit_query: np.ndarray[Any, Any], k: int
    ) -> list[VectorHit]:
        """The best `k` among the readable rows of the lists nearest the query and of the rows
        written since the lists were made."""
        lists = index.lists
        assert lists is not None and readable.per_list is not None
        wanted = max(self.min_scanned, k, math.ceil(self.scan_share * readable.count))
        spans = [
            (int(lists.bounds[i]), int(lists.bounds[i + 1]))
            for i in lists.nearest_lists(unit_query, readable.per_list, wanted)
        ]
        spans.append((lists.rows, len(index.ids)))  # written since: always scored
        spans = [(start, stop) for start, stop in spans if stop > start]
        rows = np.concatenate([np.arange(start, stop) for start, stop in spans])
        scores = np.concatenate([index.unit[start:stop] @ unit_query for start, stop in spans]).astype(np.float32)
        counted = readable.mask[rows]
        scores[~counted] = -np.inf
        return _best(index, rows, scores, int(np.count_nonzero(counted)), k)

    def switched_off(self, model: str) -> int:
        """Rows of `model`'s cached matrix that no longer count (replaced or removed vectors),
        until the next rebuild: what an operator or a test may want to see."""
        index = self._indexes.get(model)
        return 0 if index is None else index.dead

    def listed(self, model: str) -> int:
        """Rows of `model`'s cached matrix grouped into lists (0: it is searched exactly only);
        the rows past them were written since, and are scored on every search."""
        index = self._indexes.get(model)
        return 0 if index is None or index.lists is None else index.lists.rows

    def _index(self, tx: ReadTx, model: str) -> _VectorIndex | None:
        version, removals = tx.embedding_changes(model)
        cached = self._indexes.get(model)
        # Generations only grow: an older one is a read that began before the cached index
        # was built, which it may use (what it may not see, its own reads filter out).
        if cached is not None and cached.version >= version:
            return cached
        with self._lock:
            cached = self._indexes.get(model)
            if cached is not None and cached.version >= version:
                return cached
            index: _VectorIndex | None = None
            if cached is not None:
                rows = tx.embeddings_of_model(model, since=cached.version)
                present = tx.embedded_nodes(model) if removals != cached.removals else None
                index = cached.advanced(version, removals, rows, present, list_from=self.approximate_from)
            if index is None:
                rows = tx.embeddings_of_model(model)
                index = _VectorIndex.build(version, removals, rows, list_from=self.approximate_from) if rows else None
            if index is None:
                self._indexes.pop(model, None)
            else:
                self._indexes[model] = index
            return index


def _best(
    index: _VectorIndex, rows: np.ndarray[Any, Any], scores: np.ndarray[Any, Any], counted: int, k: int
) -> list[VectorHit]:
    """The `k` best of `scores` (one per matrix row of `rows`; -inf: not counted), best first,
    ties by node id; `counted` is how many are finite."""
    if counted == 0:
        return []
    # The best few by score (a partial sort), then ties broken by node id.
    keep = min(counted, k * 4)
    best = np.argpartition(-scores, keep - 1)[:keep] if keep < scores.size else np.arange(scores.size)
    best = best[np.isfinite(scores[best])]
    ids = index.ids

    def rank(i: int) -> tuple[float, str]:
        return (-float(scores[i]), ids[int(rows[i])])

    order = sorted(best.tolist(), key=rank)[:k]
    if order:
        # The partition may have cut rows tied with the last one kept: ties go by node id
        # over all of them, not only over those it happened to keep.
        tied = np.flatnonzero(scores == scores[order[-1]]).tolist()
        if len(tied) > 1:
            order = sorted({*order, *tied}, key=rank)[:k]
    return [VectorHit(int(index.pks[rows[i]]), float(scores[i])) for i in order]
