"""Counts over the store: what the stats tools and the operator's metrics report."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mnemodb.model.errors import InvalidArgument
from mnemodb.model.records import Entity, MemoryStats, Stats

if TYPE_CHECKING:
    from mnemodb.engine.engine import Engine

__all__ = ["Statistics"]

DAY_MS = 86_400_000


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

    def growth(self, *, spans: int = 24, scopes: Sequence[str] | None = None) -> list[tuple[int, int]]:
        """Memories created over time: (the span's start in ms, memories created in it) for
        `spans` equal spans of whole days from the oldest memory's day to the newest's; empty
        when there is none."""
        if not 1 <= spans <= 1000:
            raise InvalidArgument("spans must be from 1 to 1,000")
        read = self._engine.scopes(scopes)
        with self._engine.store.read() as tx:
            oldest, newest = tx.memory_time_range(read)
            if oldest is None or newest is None:
                return []
            start = oldest - oldest % DAY_MS
            days = (newest - start) // DAY_MS + 1
            step = -(-days // spans) * DAY_MS
            count = -(-(newest - start + 1) // step)
            return [(start + i * step, n) for i, n in enumerate(tx.memory_growth(read, start, step, count))]

    def largest_entities(self, *, limit: int = 10, scopes: Sequence[str] | None = None) -> list[tuple[Entity, int]]:
        """The entities with the most observations, with how many, most first."""
        if not 1 <= limit <= 100:
            raise InvalidArgument("limit must be from 1 to 100")
        read = self._engine.scopes(scopes)
        with self._engine.store.read() as tx:
            largest = tx.largest_entities(read, limit)
            entities = tx.entities_by_pk([pk for pk, _ in largest])
        return [(entities[pk], n) for pk, n in largest if pk in entities]

    def memories_per_scope(self) -> dict[str, int]:
        """Every scope's number of memories, whatever the read scopes (for an operator's
        metrics, not for tools)."""
        with self._engine.store.read() as tx:
            return tx.memories_per_scope()
