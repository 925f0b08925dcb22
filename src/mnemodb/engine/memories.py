"""The memdb face: memories addressed by their content's hash, with tags, importance and
type, searched by words and followed over relations between memories.

It is what the memdb profile serves, over the engine's core: a memory is stored through
the one write path for memories (`Writes.check_new_memory`, `Writes.store_memory`),
changed in place through `Writes.update_memory`, related through `Writes.open_edge`, and
every change is logged by `Engine.log`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from mnemodb.graph.traversal import expand
from mnemodb.model.checks import check_query, check_text
from mnemodb.model.errors import Conflict, InvalidArgument, NotFound
from mnemodb.model.ids import content_hash
from mnemodb.model.records import (
    MEMORY,
    Direction,
    Edge,
    ItemFilter,
    ItemResult,
    Memory,
    MemoryLink,
    MemoryView,
    NewMemory,
    Props,
    Recall,
    RelatedMemory,
    SearchHit,
    StoredMemory,
)
from mnemodb.model.rules import check_importance, normalize_tags
from mnemodb.model.value import Value
from mnemodb.search.analyzer import query_terms, tag_candidates
from mnemodb.search.ranking import Scored, relevance, relevances, text_strengths, within_reach

if TYPE_CHECKING:
    from mnemodb.engine.engine import Engine
    from mnemodb.store.base import ReadTx, WriteTx

__all__ = ["Memories"]


S = TypeVar("S", bound=Scored)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class _Ranked(Value, Generic[S]):
    """A memory search's outcome, before it is shaped for a reply."""

    best: list[int]  # the winners' pks, best first
    scores: dict[int, float]  # the score of every candidate read (those within reach)
    winners: Mapping[int, S]  # the candidates read, the winners among them, as the caller's reader read them
    strength: dict[int, float]  # text strength by pk
    tagged: set[int]  # the pks found by tag
    now: int  # the time scored at (ms)


_DIRECTIONS: dict[str, Direction] = {"outgoing": "out", "out": "out", "incoming": "in", "in": "in", "both": "both"}


class Memories:
    """Memories by content hash: store, get, update, delete, search, recall, relate."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def _memory_in(self, tx: ReadTx, digest: str, scopes: Sequence[str]) -> Memory | None:
        return tx.memory_by_hash(scopes, check_text(digest, "hash").lower())

    def store(
        self,
        content: str,
        tags: Iterable[str] = (),
        importance: int = 0,
        memory_type: str = "general",
        *,
        summary: str | None = None,
        props: Props | None = None,
        scope: str | None = None,
    ) -> StoredMemory:
        """Store a memory; storing content the scope already holds merges tags and returns it."""
        item = self._engine.writes.check_new_memory(
            NewMemory(content, tuple(tags), importance, memory_type, summary, dict(props or {}))
        )
        target = self._engine.scope_to_write(scope)
        with self._engine.change() as tx:
            at = self._engine.clock()
            return self._engine.writes.store_memory(tx, item, target, at)

    def store_many(
        self, items: Sequence[NewMemory], *, scope: str | None = None, turns: bool = False
    ) -> list[ItemResult]:
        """Store many memories in one transaction; each item succeeds or fails on its own.

        With `turns`, the items are consecutive turns of a conversation, oldest first: the
        native search also finds each by the words of the two turns before it in the scope
        (the nearer stored within half an hour), at half the weight of its own words.

        Every item is checked before anything is written, so a rejected item touches
        nothing and the others are stored together, all or none.
        """
        target = self._engine.scope_to_write(scope)
        results: list[ItemResult] = []
        checked: list[tuple[int, NewMemory]] = []
        for index, item in enumerate(items):
            try:
                checked.append((index, self._engine.writes.check_new_memory(item)))
            except InvalidArgument as exc:
                results.append(ItemResult(index, error=str(exc)))
        with self._engine.change() as tx:
            at = self._engine.clock()
            results += [
                ItemResult(index, self._engine.writes.store_memory(tx, item, target, at, turn=turns))
                for index, item in checked
            ]
        return sorted(results, key=lambda r: r.index)

    def get(self, digest: str, *, scopes: Sequence[str] | None = None) -> Memory | None:
        """The memory with this content hash (any case), or None."""
        with self._engine.store.read() as tx:
            memory = self._memory_in(tx, digest, self._engine.scopes(scopes))
        if memory is not None:
            self._engine.record_access([memory.pk])
        return memory

    def update(
        self,
        digest: str,
        *,
        content: str | None = None,
        tags: Iterable[str] | None = None,
        importance: int | None = None,
        memory_type: str | None = None,
        scopes: Sequence[str] | None = None,
    ) -> tuple[Memory, Memory]:
        """Change a memory in place (its id and relations stay). Returns (before, after)."""
        new_tags = normalize_tags(tags) if tags is not None else None
        if content is not None:
            check_text(content, "content")
            if not content:
                raise InvalidArgument("content must not be empty")
        if importance is not None:
            check_importance(importance)
        if memory_type is not None and not check_text(memory_type, "memory_type"):
            raise InvalidArgument("memory_type must not be empty")
        with self._engine.change() as tx:
            at = self._engine.clock()
            before = self._memory_in(tx, digest, self._engine.scopes(scopes))
            if before is None:
                raise NotFound("Memory not found")
            fields: dict[str, Any] = {}
            if content is not None and content != before.content:
                new_hash = content_hash(content)
                clash = tx.memory_by_hash([before.scope], new_hash)
                if clash is not None and clash.pk != before.pk:
                    raise Conflict("Content already exists as another memory")
                fields.update(content=content, hash=new_hash)
            if importance is not None and importance != before.importance:
                fields["importance"] = importance
            if memory_type is not None and memory_type != before.memory_type:
                fields["memory_type"] = memory_type
            self._engine.writes.update_memory(tx, before, at, fields=fields, tags=new_tags)
            after = tx.memory_by_pk(before.pk)
            assert after is not None
        return before, after

    def delete(self, digest: str, *, scopes: Sequence[str] | None = None) -> bool:
        """Delete a memory and its relations. False when there is no such memory."""
        with self._engine.change() as tx:
            at = self._engine.clock()
            return self._delete_one(tx, digest, self._engine.scopes(scopes), at)

    def _delete_one(self, tx: WriteTx, digest: str, scopes: Sequence[str], at: int) -> bool:
        memory = self._memory_in(tx, digest, scopes)
        if memory is None:
            return False
        self._engine.writes.remove_node(tx, memory, at)
        return True

    def delete_many(self, digests: Sequence[str], *, scopes: Sequence[str] | None = None) -> list[ItemResult]:
        """Delete many memories in one transaction; each result says whether it was deleted."""
        read = self._engine.scopes(scopes)
        with self._engine.change() as tx:
            at = self._engine.clock()
            return [ItemResult(i, self._delete_one(tx, d, read, at)) for i, d in enumerate(digests)]

    # -- search -------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        scopes: Sequence[str] | None = None,
        limit: int = 100,
        record_access: bool = True,
        include_archived: bool = False,
        explain: bool = True,
    ) -> list[SearchHit]:
        """Memories matching the query's words or tags, most relevant first; archived
        memories only with `include_archived`. Without `explain`, the hits' `components`
        are left empty (the scores are the same)."""
        ranked = self._rank(query, scopes, limit, include_archived, lambda tx, pks: tx.memories_by_pk(pks))
        if ranked is None:
            return []
        best, scores, memories = ranked.best, ranked.scores, ranked.winners
        if not explain:
            hits = [SearchHit(memories[pk], scores[pk]) for pk in best if pk in memories]
        else:
            hits = []
            for pk in best:
                memory = memories.get(pk)
                if memory is not None:
                    _, parts = relevance(
                        ranked.strength.get(pk, 0.0),
                        pk in ranked.tagged,
                        memory.importance,
                        memory.created_at,
                        ranked.now,
                        self._engine.weights,
                    )
                    hits.append(SearchHit(memory, scores[pk], parts))
        if record_access:
            self._engine.record_access(h.memory.pk for h in hits)
        return hits

    def search_views(
        self, query: str, *, scopes: Sequence[str] | None = None, limit: int = 100
    ) -> list[tuple[MemoryView, float]]:
        """`search` without archived memories or explanations, each winner read as the
        fields a listing shows (`MemoryView`) with its relevance: the same memories, in
        the same order, with the same scores."""
        ranked = self._rank(query, scopes, limit, False, lambda tx, pks: tx.memory_views(pks))
        if ranked is None:
            return []
        views, scores = ranked.winners, ranked.scores
        shown = [pk for pk in ranked.best if pk in views]
        # The shown pks as a list: the recorder counts a list without copying it.
        self._engine.record_access(shown)
        return [(views[pk], scores[pk]) for pk in shown]

    def _rank(
        self,
        query: str,
        scopes: Sequence[str] | None,
        limit: int,
        include_archived: bool,
        read_winners: Callable[[ReadTx, Sequence[int]], Mapping[int, S]],
    ) -> _Ranked[S] | None:
        """A search's winners, best first, read by `read_winners` in the same read (with
        the other candidates that could have been among them). None when the query has no
        word or tag to look for."""
        if limit < 1:
            raise InvalidArgument("limit must be at least 1")
        read = self._engine.scopes(scopes)
        terms = query_terms(check_query(query))
        tag_terms = tag_candidates(query)
        if not terms and not tag_terms:
            return None
        # The candidates are read light (pk and text score) and only those that can still
        # be among the winners in full. The pool is wider than the limit so importance and
        # recency can lift a slightly weaker match.
        pool = limit + max(limit // 2, 25)
        now = self._engine.clock()
        weights = self._engine.weights
        with self._engine.store.read() as tx:
            found = tx.memory_candidates(terms, tag_terms, read, pool, include_archived=include_archived)
            strength = text_strengths(found.text)
            tagged = set(found.tagged)
            raise_by = weights.tag_match
            # Each candidate's match, as `relevance` computes it: its text strength, raised
            # by a tag equal to a query word.
            # No tag among the query's words (the usual search) raises nothing: a plain copy.
            matches = (
                {pk: s + (1.0 - s) * raise_by if pk in tagged else s for pk, s in strength.items()}
                if tagged
                else dict(strength)
            )
            for pk in found.tagged:
                if pk not in matches:
                    matches[pk] = raise_by
            reach = list(matches)
            if found.oldest is not None and found.newest is not None:
                reach = within_reach(matches, limit, now, found.most_important, found.oldest, found.newest, weights)
            winners = read_winners(tx, reach)
        # Every candidate within reach is scored, the winners alone explained: the parts of
        # a score cost as much again as the score (0.1 ms a search of 10,000 memories).
        scores = relevances(matches, winners, now, weights)
        # Most relevant first, a tie to the newer memory (the higher pk): the pks in
        # descending order, then a stable sort by score alone. Two sorts on plain numbers
        # cost a fifth of one over (-score, -pk) tuples (24 against 126 us for 80 winners).
        best = sorted(scores, reverse=True)
        best.sort(key=scores.__getitem__, reverse=True)
        del best[limit:]
        return _Ranked(best, scores, winners, strength, tagged, now)

    def recall(
        self,
        query: str,
        depth: int = 1,
        *,
        scopes: Sequence[str] | None = None,
        limit: int = 50,
        include_archived: bool = False,
    ) -> Recall:
        """Search, then follow relations between memories up to `depth` hops (both ways).

        Seeds come first in relevance order, then memories one hop away, and so on; at
        most `limit` memories. Each carries the relevance 1 / (1 + hops). The links are
        the open relations whose both ends were returned. Archived memories are neither
        found nor reached, unless `include_archived`.
        """
        if not 0 <= depth <= 3:
            raise InvalidArgument("depth must be from 0 to 3")
        read = self._engine.scopes(scopes)
        hits = self.search(query, scopes=read, record_access=False, include_archived=include_archived, explain=False)
        if not hits or depth == 0:
            self._engine.record_access(h.memory.pk for h in hits[:limit])
            return Recall(tuple(RelatedMemory(h.memory, 0, h.score) for h in hits), ())
        now = self._engine.clock()
        with self._engine.store.read() as tx:

            def memories_in_scope(pks: Iterable[int]) -> set[int]:
                labels = tx.labels_of(list(pks))
                found = [pk for pk, (label, scope) in labels.items() if label == MEMORY and scope in read]
                if include_archived or not found:
                    return set(found)
                return tx.admitted(found, "memory", ItemFilter(), now, read)

            reached = expand(
                tx,
                [h.memory.pk for h in hits],
                depth,
                direction="both",
                valid_at=now,
                edge_scopes=read,
                admit=memories_in_scope,
                limit=limit,
            )
            memories = tx.memories_by_pk(list(reached.depth))
            edges = tx.edges_among(list(reached.depth), valid_at=now)
        related = tuple(
            RelatedMemory(memories[pk], d, 1.0 / (1 + d)) for pk, d in reached.depth.items() if pk in memories
        )
        self._engine.record_access(r.memory.pk for r in related)
        return Recall(related, self._memory_links(edges, memories))

    @staticmethod
    def _memory_links(edges: Iterable[Edge], memories: Mapping[int, Memory]) -> tuple[MemoryLink, ...]:
        links = [
            MemoryLink(e, memories[e.src_pk].hash, memories[e.dst_pk].hash)
            for e in edges
            if e.src_pk in memories and e.dst_pk in memories
        ]
        links.sort(key=lambda x: (x.edge.type, x.from_hash, x.to_hash, x.edge.created_at, x.edge.pk))
        return tuple(links)

    # -- relations between memories -------------------------------------------------------------

    def relate(
        self, from_hash: str, to_hash: str, relation_type: str, *, scope: str | None = None
    ) -> tuple[MemoryLink, bool]:
        """Link two memories; an open link of the same type is returned as it is."""
        check_text(relation_type, "relation type")
        if not relation_type:
            raise InvalidArgument("relation type must not be empty")
        edge_scope = self._engine.scope_to_write(scope)
        read = self._engine.read_scopes
        with self._engine.change() as tx:
            at = self._engine.clock()
            src = self._memory_in(tx, from_hash, read)
            if src is None:
                raise NotFound(f"Memory not found: {from_hash.lower()}")
            dst = self._memory_in(tx, to_hash, read)
            if dst is None:
                raise NotFound(f"Memory not found: {to_hash.lower()}")
            if src.pk == dst.pk:
                raise InvalidArgument("Cannot create self-referential relationship")
            # Any edge not yet closed is the same relation, whatever its valid_from.
            existing = tx.find_edges(src.pk, dst.pk, relation_type, open_only=True)
            if existing:
                return MemoryLink(existing[0], src.hash, dst.hash), False
            edge = self._engine.writes.open_edge(
                tx, src.pk, dst.pk, src.scope, dst.scope, relation_type, edge_scope, {}, at, at
            )
            return MemoryLink(edge, src.hash, dst.hash), True

    def links(self, digest: str, direction: str = "both", *, scopes: Sequence[str] | None = None) -> list[MemoryLink]:
        """Open relations between this memory and other memories; [] for an unknown hash."""
        way = _DIRECTIONS.get(direction)
        if way is None:
            raise InvalidArgument("direction must be outgoing, incoming or both")
        read = self._engine.scopes(scopes)
        now = self._engine.clock()
        with self._engine.store.read() as tx:
            memory = self._memory_in(tx, digest, read)
            if memory is None:
                return []
            edges = tx.edges_of([memory.pk], way, valid_at=now, scopes=read)
            ends = {e.src_pk for e in edges} | {e.dst_pk for e in edges}
            memories = {pk: m for pk, m in tx.memories_by_pk(list(ends)).items() if m.scope in read}
        return list(self._memory_links(edges, memories))

    def unrelate(
        self, from_hash: str, to_hash: str, relation_type: str, *, scopes: Sequence[str] | None = None
    ) -> bool:
        """Delete the relation(s) of this type from one memory to the other."""
        read = self._engine.scopes(scopes)
        with self._engine.change() as tx:
            at = self._engine.clock()
            src = self._memory_in(tx, from_hash, read)
            dst = self._memory_in(tx, to_hash, read)
            if src is None or dst is None:
                return False
            edges = [e for e in tx.find_edges(src.pk, dst.pk, relation_type) if e.scope in read]
            for edge in edges:
                self._engine.writes.remove_edge(tx, edge, at)
            return bool(edges)
