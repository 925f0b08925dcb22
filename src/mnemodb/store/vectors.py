"""Exact nearest-neighbour search over a store's vectors: the default `VectorIndex`.

Every readable vector of a model is scored against the query, from a matrix of unit rows
kept per model and brought up to date from the store's embedding generations
(`EmbeddingReads.embedding_changes`). A store whose database has a vector index of its
own may answer `nearest` from it instead. numpy is imported here only, and this module
only when vectors are first searched.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mnemodb.model.errors import InvalidArgument
from mnemodb.store.base import ReadTx, ScopeSet, StoredVector, VectorHit

__all__ = ["ExactVectorIndex"]


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
    masks: dict[tuple[str, ...], np.ndarray[Any, Any]] = field(default_factory=dict)
    """Rows a read set may see, kept per read set: computing one costs more than a search."""

    @property
    def unit(self) -> np.ndarray[Any, Any]:
        return self.buffer[: len(self.pks)]

    @property
    def dead(self) -> int:
        return len(self.pks) - len(self.row_of)

    @classmethod
    def build(cls, version: int, removals: int, rows: Sequence[StoredVector]) -> _VectorIndex:
        dim = len(rows[0][3]) // 4
        matrix = np.frombuffer(b"".join(r[3] for r in rows), dtype="<f4").reshape(len(rows), dim)
        buffer = np.empty((len(rows) + max(64, len(rows) // 8), dim), dtype=np.float32)
        live = _unit_into(buffer[: len(rows)], matrix)
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
        )

    def advanced(
        self,
        version: int,
        removals: int,
        rows: Sequence[StoredVector],
        present: Sequence[int] | None,
    ) -> _VectorIndex | None:
        """This index at a later generation: `rows` written since, and with `present` (the
        nodes that still have a vector) when some were removed. None when a rebuild is due."""
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
        )
        return None if advanced.dead * 4 > len(advanced.pks) else advanced

    def readable(self, reads: Sequence[str]) -> np.ndarray[Any, Any]:
        key = tuple(sorted(reads))
        mask = self.masks.get(key)
        if mask is None:
            codes = [self.scope_codes[s] for s in key if s in self.scope_codes]
            mask = np.isin(self.scopes, np.array(codes, dtype=np.int32)) & self.live
            mask.flags.writeable = False
            if len(self.masks) >= 64:
                self.masks.clear()
            self.masks[key] = mask
        return mask


def _unit_into(target: np.ndarray[Any, Any], matrix: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Write `matrix`'s rows scaled to unit length into `target`; which rows had a length."""
    norms = np.linalg.norm(matrix, axis=1)
    np.divide(matrix, norms[:, None], out=target, where=norms[:, None] > 0)
    target[norms == 0] = 0.0
    nonzero: np.ndarray[Any, Any] = norms > 0
    return nonzero


class ExactVectorIndex:
    """Exact cosine search, one cached matrix per model, shared by every reader."""

    def __init__(self) -> None:
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
        mask = index.readable(scopes)
        if candidates is not None:
            wanted = set(candidates)
            mask = mask & np.array([node_id in wanted for node_id in index.ids], dtype=bool)
        rows = np.flatnonzero(mask)
        if rows.size == 0:
            return []
        if rows.size * 2 > len(index.ids):
            # Most rows count: score them all in place rather than copy the matrix's rows.
            scores = np.where(mask, index.unit @ (vector / norm), -np.inf).astype(np.float32)
        else:
            scores = np.full(len(index.ids), -np.inf, dtype=np.float32)
            scores[rows] = index.unit[rows] @ (vector / norm)
        # The best few by score (a partial sort), then ties broken by node id.
        keep = min(rows.size, k * 4)
        best = np.argpartition(-scores, keep - 1)[:keep] if keep < scores.size else np.arange(scores.size)
        best = best[np.isfinite(scores[best])]
        order = sorted(best.tolist(), key=lambda i: (-float(scores[i]), index.ids[i]))[:k]
        if order:
            # The partition may have cut rows tied with the last one kept: ties go by node id
            # over all of them, not only over those it happened to keep.
            tied = np.flatnonzero(scores == scores[order[-1]]).tolist()
            if len(tied) > 1:
                order = sorted({*order, *tied}, key=lambda i: (-float(scores[i]), index.ids[i]))[:k]
        return [VectorHit(int(index.pks[i]), float(scores[i])) for i in order]

    def switched_off(self, model: str) -> int:
        """Rows of `model`'s cached matrix that no longer count (replaced or removed vectors),
        until the next rebuild: what an operator or a test may want to see."""
        index = self._indexes.get(model)
        return 0 if index is None else index.dead

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
                index = cached.advanced(version, removals, rows, present)
            if index is None:
                rows = tx.embeddings_of_model(model)
                index = _VectorIndex.build(version, removals, rows) if rows else None
            if index is None:
                self._indexes.pop(model, None)
            else:
                self._indexes[model] = index
            return index
