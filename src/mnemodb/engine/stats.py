"""Counts over the store: what the stats tools and the operator's metrics report."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mnemodb.model.records import MemoryStats, Stats

if TYPE_CHECKING:
    from mnemodb.engine.engine import Engine

__all__ = ["Statistics"]


class Statistics:
    """How much the store holds, within the scopes a caller reads (or every scope, for an
    operator's metrics)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def totals(self, *, scopes: Sequence[str] | None = None) -> Stats:
        """Every kind of record counted, the oldest and newest memory's time, the change
        log's position and the database's size."""
        read = self._engine.scopes(scopes)
        with self._engine.store.read() as tx:
            counts = tx.counts(read)
            oldest, newest = tx.memory_time_range(read)
            return Stats(
                memories=counts["memories"],
                tags=tx.count_tags(read),
                entities=counts["entities"],
                observations=counts["observations"],
                edges=counts["edges"],
                nodes=counts["nodes"],
                embeddings=counts["embeddings"],
                oldest_memory_at=oldest,
                newest_memory_at=newest,
                current_seq=tx.current_seq(),
                size_bytes=self._engine.store.size_bytes(),
            )

    def memory_totals(self, *, scopes: Sequence[str] | None = None) -> MemoryStats:
        """Memory and distinct-tag counts and the oldest and newest memory's time."""
        read = self._engine.scopes(scopes)
        with self._engine.store.read() as tx:
            oldest, newest = tx.memory_time_range(read)
            return MemoryStats(tx.count_memories(read), tx.count_tags(read), oldest, newest)

    def memories_per_scope(self) -> dict[str, int]:
        """Every scope's number of memories, whatever the read scopes (for an operator's
        metrics, not for tools)."""
        with self._engine.store.read() as tx:
            return tx.memories_per_scope()
