"""The knowledge graph: entities with observations and named relations between them.

This is the engine API behind the knowledge-graph profile (and the native profile's
entity tools). Names identify entities: within the reader's scopes a name means the
oldest entity of that name. Relations are open edges between two entities; deleting one
removes it. Every write is one transaction with its change-log entries.
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from mnemodb.engine.patterns import COMPILE_SECONDS_PER_STEP, MAX_PATTERN_STEPS, compile_js
from mnemodb.graph.paths import shortest_path
from mnemodb.model import ops
from mnemodb.model.checks import check_query, check_text
from mnemodb.model.errors import InvalidArgument, NotFound, OperationTimeout
from mnemodb.model.ids import SHARED
from mnemodb.model.records import Entity, Relation
from mnemodb.model.value import Value
from mnemodb.search import graph_query as gq
from mnemodb.search.analyzer import query_terms
from mnemodb.search.ranking import ENTITY_FIELD_WEIGHTS

if TYPE_CHECKING:
    import regex

    from mnemodb.engine.engine import Engine
    from mnemodb.store.base import EntityKey, EntityMatch, ReadTx, TextClause

__all__ = [
    "OBSERVATION_PRESETS",
    "FoundEntity",
    "Graph",
    "GraphSearch",
    "KnowledgeGraph",
    "Neighbor",
    "NewEntity",
    "NewRelation",
    "ObservationMatch",
]

NeighborDirection = Literal["outgoing", "incoming", "both"]

# Named patterns for `observations_matching`, in JavaScript regex syntax, case-insensitive.
OBSERVATION_PRESETS: dict[str, str] = {
    "dated": r"^\[\d{4}-\d{2}-\d{2}\]",
    "techdebt": r"tech\s*debt|TODO|FIXME|HACK",
    "deprecated": r"deprecated",
    "purpose": r"purpose:",
    "quirk": r"quirk:",
}
# How long one pattern may spend over all observations before the call is refused. The
# `regex` module counts a search's timeout in the process's CPU time (every thread's), not
# in wall-clock time: on a machine that gives the process a seventh of a core, 2 s of it
# take longer than a call's default 15 s, and the call times out before the pattern does.
PATTERN_TIME_LIMIT_S = 2.0
# Near words per term that typo-tolerant search looks entities up by.
FUZZY_WORDS = 64
# The shortest word a name is searched for as a substring (what the trigram index can look up).
_MIN_SUBSTRING = 3


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class NewEntity(Value):
    name: str
    entity_type: str = ""
    observations: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class NewRelation(Value):
    from_name: str
    to_name: str
    relation_type: str
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Graph(Value):
    entities: tuple[Entity, ...]
    relations: tuple[Relation, ...]
    next_cursor: str | None = None


class FoundEntity(NamedTuple):
    """An entity as a search returns it: what the knowledge-graph face shows of it, without
    the node's id, scope, properties and times (a search returns thousands, each read,
    built and shown once)."""

    pk: int
    name: str
    entity_type: str
    observations: tuple[str, ...]
    extra: Mapping[str, Any]

    @classmethod
    def of(cls, entity: Entity) -> FoundEntity:
        return cls(entity.pk, entity.name, entity.entity_type, entity.observations, entity.extra)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class GraphSearch(Value):
    entities: tuple[FoundEntity, ...]
    relations: tuple[Relation, ...]
    scores: tuple[tuple[str, float], ...]
    """(name, score) of the ranked matches, best first; neighbours added after are not scored."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ObservationMatch(Value):
    entity: Entity
    observation: str
    score: float


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class CompiledPattern(Value):
    """A caller's observation pattern, ready to match: as written (`shown`), after presets
    (`source`), and compiled."""

    shown: str
    source: str
    compiled: regex.Pattern[str]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Neighbor(Value):
    name: str
    relation: Relation
    direction: Literal["outgoing", "incoming"]


def _encode_cursor(kind: str, pk: int) -> str:
    return base64.urlsafe_b64encode(f"{kind}:{pk}".encode()).decode().rstrip("=")


# A row key as `_encode_cursor` writes it: digits that fit a 64-bit integer.
_CURSOR_POSITION = re.compile(r"[0-9]{1,18}")
# More entities than any store holds: a larger page limit means the same (SQLite's LIMIT
# is a 64-bit integer, and the page reads one more than its limit).
_LARGEST_PAGE = 2**40


def _decode_cursor(cursor: str, kind: str) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        prefix, _, value = text.partition(":")
        if prefix != kind or not _CURSOR_POSITION.fullmatch(value):
            raise ValueError(prefix)
        return int(value)
    except (ValueError, UnicodeDecodeError):
        raise InvalidArgument("cursor is not one this server gave out; start again without it") from None


def _found(rows: Sequence[EntityMatch]) -> Iterable[FoundEntity]:
    """The store's rows as found entities, their observation arrays decoded in one call
    rather than one a row (each call has its own fixed cost; a search reads thousands)."""
    arrays = json.loads("[" + ",".join(row.observations_json for row in rows) + "]")
    make = FoundEntity
    for row, observations in zip(rows, arrays, strict=True):
        extra = row.extra_json
        yield make(
            row.pk,
            row.name,
            row.entity_type,
            tuple(observations),
            {} if not extra or extra == "{}" else dict(json.loads(extra)),
        )


_REGEX_SYNTAX = re.compile(r"[\\^$.|?*+()\[\]{}]")


class KnowledgeGraph:
    """Entities, observations and relations, addressed by name."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._vocabularies: dict[tuple[str, ...], tuple[int, set[str]]] = {}
        self._vocabulary_lists: dict[tuple[str, ...], list[str]] = {}

    # -- helpers -------------------------------------------------------------------------------

    def _reads(self, scopes: Sequence[str] | None) -> tuple[str, ...]:
        return self._engine.scopes(scopes)

    def _visible(self, scopes: Sequence[str] | None, write_scope: str) -> tuple[str, ...]:
        """Where a name must be looked up before it is created: what the caller reads, and
        the scope it writes to."""
        return tuple(dict.fromkeys((*self._reads(scopes), write_scope)))

    @staticmethod
    def _check_text(value: str, what: str) -> str:
        return check_text(value, what)

    # -- writes --------------------------------------------------------------------------------

    def create_entities(
        self, items: Sequence[NewEntity], *, scope: str | None = None, scopes: Sequence[str] | None = None
    ) -> list[Entity]:
        """Create the entities whose names are new; return them, in the order given.

        An entity named twice in one call is created once, with the observations of both.
        """
        for item in items:
            self._check_text(item.name, "entity name")
            if not item.name:
                raise InvalidArgument("entity name must not be empty")
            self._check_text(item.entity_type, "entity type")
            for observation in item.observations:
                self._check_text(observation, "observation")
        target = self._engine.scope_to_write(scope)
        visible = self._visible(scopes, target)
        merged: dict[str, NewEntity] = {}
        for item in items:
            first = merged.get(item.name)
            if first is None:
                merged[item.name] = item
            else:
                combined = tuple(dict.fromkeys((*first.observations, *item.observations)))
                merged[item.name] = NewEntity(first.name, first.entity_type, combined, first.extra)
        created: list[Entity] = []
        with self._engine.change() as tx:
            at = self._engine.clock()
            existing = tx.entities_named(visible, list(merged))
            for name, item in merged.items():
                if name in existing:
                    continue
                created.append(self._engine.writes.insert_entity(tx, item, target, at))
        return created

    def create_relations(
        self, items: Sequence[NewRelation], *, scope: str | None = None, scopes: Sequence[str] | None = None
    ) -> list[Relation]:
        """Create the relations not already there; every endpoint must exist (else nothing is written)."""
        for item in items:
            self._check_text(item.relation_type, "relation type")
            if not item.relation_type:
                raise InvalidArgument("relation type must not be empty")
        target = self._engine.scope_to_write(scope)
        visible = self._visible(scopes, target)
        created: list[Relation] = []
        with self._engine.change() as tx:
            at = self._engine.clock()
            names = [n for item in items for n in (item.from_name, item.to_name)]
            # The ends' keys only: a relation is made and told from who its ends are, not
            # from their observations.
            entities = tx.entity_keys_named(visible, [self._check_text(n, "entity name") for n in names])
            for name in names:
                if name not in entities:
                    raise NotFound(f"Entity with name {name} not found")
            keys = [(entities[item.from_name].pk, entities[item.to_name].pk, item.relation_type) for item in items]
            # What is there already, for the whole call in one read; `seen` keeps what the
            # call itself opens (a relation given twice is made once).
            seen = tx.open_edge_keys(keys)
            # Checked one by one, written together once all are.
            edges = self._engine.writes.new_edges(tx)
            made: list[tuple[EntityKey, EntityKey, NewRelation]] = []
            for item, key in zip(items, keys, strict=True):
                if key in seen:
                    continue
                seen.add(key)
                src, dst = entities[item.from_name], entities[item.to_name]
                if src.scope != dst.scope and SHARED not in (src.scope, dst.scope):
                    raise InvalidArgument(
                        f"{item.from_name} and {item.to_name} live in different private scopes; "
                        "a relation may cross scopes only to or from the shared scope"
                    )
                edges.add(
                    src.pk,
                    dst.pk,
                    src.scope,
                    dst.scope,
                    item.relation_type,
                    target,
                    {},
                    at,
                    at,
                    extra=item.extra,
                    end_ids=(src.id, dst.id),  # the edge built from what was written, not read back
                )
                made.append((src, dst, item))
            logged: list[ops.Op] = []
            for edge, (src, dst, item) in zip(edges.write(logged), made, strict=True):
                created.append(
                    Relation(src.name, dst.name, item.relation_type, edge.pk, src.pk, dst.pk, dict(item.extra))
                )
            self._engine.log_many(tx, logged, at)
        return created

    def add_observations(
        self, items: Sequence[tuple[str, Sequence[str]]], *, scopes: Sequence[str] | None = None
    ) -> list[tuple[str, list[str]]]:
        """Add observations to existing entities, skipping ones they have; all or nothing."""
        for name, contents in items:
            self._check_text(name, "entity name")
            for content in contents:
                self._check_text(content, "observation")
        reads = self._reads(scopes)
        results: list[tuple[str, list[str]]] = []
        with self._engine.change() as tx:
            at = self._engine.clock()
            entities = tx.entities_named(reads, [name for name, _ in items])
            for name, contents in items:
                entity = entities.get(name)
                if entity is None:
                    raise NotFound(f"Entity with name {name} not found")
                added = self._engine.writes.add_observations(tx, entity, contents, at)
                results.append((name, added))
        return results

    def delete_entities(self, names: Sequence[str], *, scopes: Sequence[str] | None = None) -> int:
        """Delete entities (and every relation touching them); unknown names are ignored."""
        reads = self._reads(scopes)
        with self._engine.change() as tx:
            at = self._engine.clock()
            entities = tx.entities_named(reads, [self._check_text(n, "entity name") for n in names])
            for entity in entities.values():
                self._engine.writes.remove_node(tx, entity, at)
            return len(entities)

    def delete_observations(
        self, items: Sequence[tuple[str, Sequence[str]]], *, scopes: Sequence[str] | None = None
    ) -> int:
        """Remove observations; unknown entities and observations are ignored."""
        reads = self._reads(scopes)
        removed_count = 0
        with self._engine.change() as tx:
            at = self._engine.clock()
            entities = tx.entities_named(reads, [self._check_text(name, "entity name") for name, _ in items])
            for name, contents in items:
                entity = entities.get(name)
                if entity is None:
                    continue
                removed_count += len(self._engine.writes.remove_observations(tx, entity, contents, at))
        return removed_count

    def delete_relations(self, items: Sequence[NewRelation], *, scopes: Sequence[str] | None = None) -> int:
        """Delete relations matching (from, to, type) exactly; the rest is ignored."""
        reads = self._reads(scopes)
        deleted = 0
        with self._engine.change() as tx:
            at = self._engine.clock()
            names = [n for item in items for n in (item.from_name, item.to_name)]
            entities = tx.entities_named(reads, [self._check_text(n, "entity name") for n in names])
            for item in items:
                src, dst = entities.get(item.from_name), entities.get(item.to_name)
                if src is None or dst is None:
                    continue
                for edge in tx.find_edges(src.pk, dst.pk, item.relation_type, open_only=True):
                    if edge.scope in reads:
                        self._engine.writes.remove_edge(tx, edge, at)
                        deleted += 1
        return deleted

    # -- reads ---------------------------------------------------------------------------------

    @staticmethod
    def _ordered(entities: Mapping[int, Entity], pks: Iterable[int]) -> tuple[Entity, ...]:
        return tuple(entities[pk] for pk in pks if pk in entities)

    def read(
        self, *, limit: int | None = None, cursor: str | None = None, scopes: Sequence[str] | None = None
    ) -> Graph:
        """The graph in creation order: every entity, and every relation between entities.

        With `limit`, a page of that many entities and the relations that start at them;
        `next_cursor` fetches the next page (None on the last).
        """
        if limit is not None and limit < 1:
            raise InvalidArgument("limit must be at least 1")
        if limit is not None:
            limit = min(limit, _LARGEST_PAGE)
        reads = self._reads(scopes)
        after = _decode_cursor(cursor, "e") if cursor else 0
        with self._engine.store.read() as tx:
            if limit is None and cursor is None:
                pks = tx.entity_pks(reads)
                entities = tx.entities_by_pk(pks)
                members = set(pks)
                relations = tuple(
                    r for r in tx.relations_matching(reads) if r.src_pk in members and r.dst_pk in members
                )
                return Graph(self._ordered(entities, pks), relations)
            pks = tx.entity_pks(reads, after=after, limit=None if limit is None else limit + 1)
            more = limit is not None and len(pks) > limit
            pks = pks[:limit]
            entities = tx.entities_by_pk(pks)
            # Each relation comes once, with the page of the entity it starts at.
            starting = [r for r in tx.relations_touching(pks, reads) if r.src_pk in entities]
            targets = tx.labels_of([r.dst_pk for r in starting])
            relations = tuple(r for r in starting if targets.get(r.dst_pk, ("", ""))[1] in reads)
        next_cursor = _encode_cursor("e", pks[-1]) if more and pks else None
        return Graph(self._ordered(entities, pks), relations, next_cursor)

    def names_starting(
        self, prefix: str, *, limit: int = 100, scopes: Sequence[str] | None = None
    ) -> tuple[list[str], bool]:
        """Entity names that start with `prefix` (ASCII case ignored), in order: at most
        `limit`, and whether there are more (for completing a name as it is typed)."""
        reads = self._reads(scopes)
        if "\x00" in check_query(prefix, "prefix"):
            return [], False  # no name holds one that LIKE could see past: it ends the pattern
        with self._engine.store.read() as tx:
            names = tx.entity_names_starting(reads, prefix, limit + 1)
        return names[:limit], len(names) > limit

    def open(self, names: Sequence[str], *, scopes: Sequence[str] | None = None) -> Graph:
        """The named entities (unknown names skipped), in creation order, and the relations among them."""
        reads = self._reads(scopes)
        with self._engine.store.read() as tx:
            found = tx.entities_named(reads, [self._check_text(n, "entity name") for n in names])
            pks = sorted(e.pk for e in found.values())
            relations = tx.relations_touching(pks, reads, both_ends=True)
        by_pk = {e.pk: e for e in found.values()}
        return Graph(self._ordered(by_pk, pks), tuple(relations))

    def _candidates(self, tx: ReadTx, query: gq.FieldQuery, reads: Sequence[str], *, fuzzy: bool) -> list[int] | None:
        """Entities that may match (a superset) from the trigram index, or None when the
        query cannot narrow them (a term under three characters, exclusions only)."""
        exact = tx.entity_text_search(self._clauses(query), reads)
        if not fuzzy or exact is None:
            return exact
        terms = [t for clause in (*query.fields.values(), query.all) if clause is not None for t in clause.positive]
        if any(len(t) < 3 for t in terms):
            return None
        # A typo does not contain the exact text: add the entities holding a word within
        # the term's edit distance.
        from rapidfuzz import process  # here, not at the top: most servers never search fuzzily
        from rapidfuzz.distance import OSA

        words = self._vocabulary(tx, reads)
        near: dict[str, None] = {}
        for term in terms:
            distance = max(1, len(term) // 4)
            for word, _, _ in process.extract(
                term, words, scorer=OSA.distance, score_cutoff=distance, limit=FUZZY_WORDS
            ):
                if len(word) >= 3:
                    near.setdefault(word, None)
        found = dict.fromkeys(exact)
        if near:
            for pk in tx.entity_text_search([(None, (), tuple(near))], reads) or ():
                found.setdefault(pk, None)
        return sorted(found)

    @staticmethod
    def _clauses(query: gq.FieldQuery) -> list[TextClause]:
        """The substring conditions of `query` the trigram index can look entities up by."""
        clauses: list[TextClause] = []
        for column, clause in (*query.fields.items(), (None, query.all)):
            if clause is None or clause.empty:
                continue
            every = (*clause.required, *clause.phrases)
            clauses.append((column, every, clause.optional if not every else ()))
        return clauses

    def _vocabulary(self, tx: ReadTx, reads: Sequence[str]) -> list[str]:
        """Every word of the entities' names, types and observations in `reads`, lower-cased.

        Built on first use, then extended from the change log, so a fuzzy search never
        rereads the whole graph; words of deleted things stay (candidates are checked).
        """
        key = tuple(sorted(reads))
        seq = tx.current_seq()
        cached = self._vocabularies.get(key)
        if cached is None:
            known: set[str] = set()
            for _, name, kind, obs, _items in tx.entity_texts(reads):
                known.update(f"{name} {kind} {obs}".lower().split())
        else:
            done, known = cached
            if done == seq:
                return self._vocabulary_lists[key]
            for change in tx.changes(done + 1, None):
                if change.scope not in reads:
                    continue
                entity = change.data.get("entity") if change.op == ops.CREATE_NODE else None
                if entity is not None:
                    known.update(f"{entity.get('name', '')} {entity.get('entity_type', '')}".lower().split())
                    for observation in entity.get("observations", []):
                        known.update(str(observation).lower().split())
                elif change.op == ops.ADD_OBSERVATIONS:
                    for observation in change.data.get("contents", []):
                        known.update(str(observation).lower().split())
                elif change.op in (ops.SET_PROPS, ops.UPDATE_NODE):
                    # A rename or a new type, through any face; other fields' words do no harm.
                    fields = change.data.get("props") or change.data.get("set") or {}
                    for field_name in ("name", "entityType", "entity_type"):
                        value = fields.get(field_name)
                        if isinstance(value, str):
                            known.update(value.lower().split())
        self._vocabularies[key] = (seq, known)
        self._vocabulary_lists[key] = list(known)
        return self._vocabulary_lists[key]

    def _matching(
        self, tx: ReadTx, query: gq.FieldQuery, reads: Sequence[str], *, fuzzy: bool
    ) -> list[tuple[int, gq.EntityText, str]]:
        """Entities the query matches, in creation order, checked exactly on their text
        (read from the search index in one query, not as whole entities): (pk, the
        lower-cased text with each observation, the observations as a JSON array)."""
        candidates = self._candidates(tx, query, reads, fuzzy=fuzzy)
        out = []
        for pk, name, kind, obs, items in tx.entity_texts(reads, candidates):
            text = gq.EntityText(name.lower(), kind.lower(), obs.lower())
            if gq.entity_matches(text, query, fuzzy=fuzzy):
                # Only a match's observations are parsed, lower-cased in one pass for scores.
                observations = tuple(json.loads(items.lower()))
                out.append((pk, gq.EntityText(text.name, text.type, text.obs, observations), items))
        return out

    def search(
        self,
        query: str,
        *,
        include_neighbors: bool = False,
        fuzzy: bool = False,
        limit: int | None = None,
        scopes: Sequence[str] | None = None,
    ) -> GraphSearch:
        """Entities matching the query language, best first; see `mnemodb.search.graph_query`."""
        reads = self._reads(scopes)
        with self._engine.store.read() as tx:
            if limit is not None and limit > 0:
                ranked = self.ranked(tx, query, reads, fuzzy=fuzzy)[:limit]
                # Only the entities returned are read in full.
                read = tx.entities_by_pk([pk for pk, _ in ranked])
                entities = {pk: FoundEntity.of(entity) for pk, entity in read.items()}
                scored = [(score, pk) for pk, score in ranked]
            else:
                found = self._ranked_entities(tx, query, reads, fuzzy=fuzzy)
                entities = {entity.pk: entity for entity, _ in found}
                scored = [(score, entity.pk) for entity, score in found]
            if not scored:
                return GraphSearch((), (), ())
            final = {pk: entities[pk] for _, pk in scored if pk in entities}
            relations = tx.relations_touching(list(final), reads)
            if include_neighbors:
                extra_pks = []
                for relation in relations:
                    for pk in (relation.src_pk, relation.dst_pk):
                        if pk not in final and pk not in extra_pks:
                            extra_pks.append(pk)
                neighbours = tx.entities_by_pk(extra_pks)
                for pk in extra_pks:
                    if pk in neighbours:
                        final[pk] = FoundEntity.of(neighbours[pk])
                relations = tx.relations_touching(list(final), reads)
        return GraphSearch(
            tuple(final.values()),
            tuple(relations),
            tuple((final[pk].name, score) for score, pk in scored if pk in final),
        )

    def _ranked_entities(
        self, tx: ReadTx, query: str, reads: Sequence[str], *, fuzzy: bool
    ) -> list[tuple[FoundEntity, float]]:
        """Every entity the query matches, as a search returns it, with its score, best first.

        Every match is returned whole, so when the index narrows the candidates exactly
        enough (no typo tolerance), they are read with the index's look-up, in one
        statement, and checked, scored and returned from that one read, rather than read as
        text to rank and then again."""
        parsed = gq.parse(check_query(query))
        if parsed.empty:
            return []
        candidates = None if fuzzy else tx.entity_text_matches(self._clauses(parsed), reads)
        if candidates is None:
            ranked = self.ranked(tx, query, reads, fuzzy=fuzzy)
            entities = tx.entities_by_pk([pk for pk, _ in ranked])
            return [(FoundEntity.of(entities[pk]), score) for pk, score in ranked if pk in entities]
        terms = gq.ScoreTerms.of(query)
        scored: list[tuple[FoundEntity, float]] = []
        # Bound once: this loop runs for every candidate, thousands a search.
        text_of, matches, score = gq.EntityText.of, gq.entity_matches, gq.score_entity
        # In any order: the sort below orders ties by pk.
        for entity in _found(candidates):
            text = text_of(entity.name, entity.entity_type, entity.observations)
            if matches(text, parsed):
                scored.append((entity, score(text, terms)))
        scored.sort(key=lambda s: (-s[1], s[0].pk))
        return scored

    def ranked(self, tx: ReadTx, query: str, reads: Sequence[str], *, fuzzy: bool = False) -> list[tuple[int, float]]:
        """(entity pk, score) of every entity the query matches, best first, inside a read."""
        parsed = gq.parse(check_query(query))
        if parsed.empty:
            return []
        matching = self._matching(tx, parsed, reads, fuzzy=fuzzy)
        terms = gq.ScoreTerms.of(query)
        scored: list[tuple[int, float]] = [(pk, gq.score_entity(text, terms, fuzzy=fuzzy)) for pk, text, _ in matching]
        scored.sort(key=lambda s: (-s[1], s[0]))
        return scored

    def ranked_by_words(
        self, tx: ReadTx, query: str, reads: Sequence[str], *, limit: int, first: int | None = None
    ) -> list[tuple[int, float]] | None:
        """(entity pk, score) of the entities a plain question's words find, best first, at
        most `limit`, inside a read; None when the words find nothing, or the query speaks the
        query language (`name:` fields, `+required`, `-excluded`, `"phrases"`), which the
        caller then answers by substrings (`ranked`).

        With `first`, the answer may leave out what ranks below the first `first` places:
        when that many entities hold the words, the substring matches are not looked for.

        The words are a memory search's: stemmed, without stop words and one-letter words,
        so "how should I contact Tom" looks for "contact" and "tom", and finds "Tom Becker"
        but not "customer", which only holds "tom" in the middle. Names written as one word
        (`AuthService`) are also found when they hold every such word as a substring ("auth
        service"), ranked after the entities that hold the words themselves."""
        parsed = gq.parse(check_query(query))
        plain = parsed.all
        if parsed.fields or plain is None or plain.required or plain.excluded or plain.phrases:
            return None
        terms = [t for t in query_terms(query) if len(t) > 1]
        if not terms:
            return None
        hits = tx.entity_word_search(terms, reads, limit, ENTITY_FIELD_WEIGHTS)
        if first is not None and len(hits) >= first and hits[-1].score > 0:
            # The substring matches would rank below every word hit (see below): past the
            # first places.
            return [(pk, score) for pk, score in hits]
        found = {pk for pk, _ in hits}
        spelled = [t for t in terms if len(t) >= _MIN_SUBSTRING]
        joined: list[int] = []
        if spelled and len(hits) < limit:
            candidates = tx.entity_text_search([("name", spelled, [])], reads) or []
            fresh = [pk for pk in candidates if pk not in found]
            for pk, name, _kind, _obs, _items in tx.entity_texts(reads, fresh[: limit * 4]):
                lowered = name.lower()
                if all(t in lowered for t in spelled):
                    joined.append(pk)
        if not hits and not joined:
            return None
        # Below every word hit, in the order they were made.
        floor = min((score for _, score in hits), default=1.0)
        ranked = list(hits) + [(pk, floor / 2) for pk in joined]
        return ranked[:limit]

    def search_observations(
        self,
        query: str,
        *,
        limit: int = 10,
        fuzzy: bool = False,
        scopes: Sequence[str] | None = None,
    ) -> list[ObservationMatch]:
        """Single observations matching the query (no field prefixes), best first."""
        clause = gq.parse_terms(check_query(query))
        if clause.empty or limit <= 0 or not clause.positive:
            return []
        reads = self._reads(scopes)
        # Entities are narrowed on their positive terms only: an excluded word in one
        # observation must not hide the entity's other observations.
        positive = gq.ParsedQuery(clause.required, (), clause.optional, clause.phrases)
        found: list[tuple[int, int, int, str]] = []
        terms = gq.ScoreTerms.of(query)
        with self._engine.store.read() as tx:
            for pk, text, items in self._matching(tx, gq.FieldQuery({"obs": positive}), reads, fuzzy=fuzzy):
                written: list[str] | None = None
                for position, lowered in enumerate(text.observations):
                    if not gq.clause_matches(lowered, clause, fuzzy=fuzzy):
                        continue
                    score = gq.score_observation(lowered, terms, fuzzy=fuzzy)
                    if score > 0:
                        written = written if written is not None else json.loads(items)
                        found.append((score, pk, position, written[position]))
            found.sort(key=lambda m: (-m[0], m[1], m[2]))
            found = found[:limit]
            entities = tx.entities_by_pk(sorted({pk for _, pk, _, _ in found}))
        return [
            ObservationMatch(entities[pk], observation, score) for score, pk, _, observation in found if pk in entities
        ]

    def neighbors(
        self,
        name: str,
        *,
        direction: NeighborDirection = "both",
        relation_type: str | None = None,
        scopes: Sequence[str] | None = None,
    ) -> list[Neighbor]:
        """Entities one relation away, with the relation and which way it points; [] for an unknown name."""
        if direction not in ("outgoing", "incoming", "both"):
            raise InvalidArgument("direction must be incoming, outgoing or both")
        reads = self._reads(scopes)
        with self._engine.store.read() as tx:
            entity = tx.entities_named(reads, [self._check_text(name, "entity name")]).get(name)
            if entity is None:
                return []
            relations = tx.relations_touching([entity.pk], reads)
        out: list[Neighbor] = []
        for relation in relations:
            if relation_type is not None and relation.type != relation_type:
                continue
            if direction in ("outgoing", "both") and relation.src_pk == entity.pk:
                out.append(Neighbor(relation.to_name, relation, "outgoing"))
            if direction in ("incoming", "both") and relation.dst_pk == entity.pk:
                out.append(Neighbor(relation.from_name, relation, "incoming"))
        return out

    def find_path(
        self, from_name: str, to_name: str, *, max_depth: int = 10, scopes: Sequence[str] | None = None
    ) -> Graph | None:
        """A shortest chain of relations (followed either way) between two entities, at most
        `max_depth` long; None when there is none or either entity is unknown.

        The search (`graph.paths`) reads light (relation, from, to) rows hop by hop; only
        the path found is read in full.
        """
        reads = self._reads(scopes)
        with self._engine.store.read() as tx:
            named = tx.entities_named(reads, [self._check_text(n, "entity name") for n in (from_name, to_name)])
            start, goal = named.get(from_name), named.get(to_name)
            if start is None or goal is None:
                return None
            found = shortest_path(
                start.pk, goal.pk, lambda frontier: tx.entity_links(frontier, reads), max_hops=max_depth
            )
            if found is None:
                return None
            chain, links = found
            entities = tx.entities_by_pk(chain)
            relations = tx.relations_by_pk(links)
        return Graph(self._ordered(entities, chain), tuple(relations[pk] for pk in links))

    def subgraph(self, names: Sequence[str], *, depth: int = 1, scopes: Sequence[str] | None = None) -> Graph:
        """The named entities grown by `depth` hops over relations, and the relations inside."""
        reads = self._reads(scopes)
        with self._engine.store.read() as tx:
            found = tx.entities_named(reads, [self._check_text(n, "entity name") for n in names])
            members = {e.pk for e in found.values()}
            # Each hop reads the relations of the entities the last one added only: the
            # relations of every member but the last hop's are then read once, and those
            # among the last hop's are read at the end (a read of every member's relations
            # each hop, and of all of them again at the end, read each several times).
            touching: dict[int, Relation] = {}
            frontier = sorted(members)
            for _ in range(max(0, depth)):
                if not frontier:
                    break
                added: set[int] = set()
                for relation in tx.relations_touching(frontier, reads):
                    touching[relation.pk] = relation
                    added.update(end for end in (relation.src_pk, relation.dst_pk) if end not in members)
                members |= added
                frontier = sorted(added)
            pks = sorted(members)
            entities = tx.entities_by_pk(pks)
            for relation in tx.relations_touching(frontier, reads, both_ends=True):
                touching[relation.pk] = relation
        # Every relation read has both ends among the members: each hop took in its ends.
        return Graph(self._ordered(entities, pks), tuple(touching[pk] for pk in sorted(touching)))

    def of_type(self, entity_type: str, *, scopes: Sequence[str] | None = None) -> Graph:
        """Entities whose type equals `entity_type` (ignoring case), and the relations among them."""
        reads = self._reads(scopes)
        with self._engine.store.read() as tx:
            pks = tx.entity_pks_of_type(reads, self._check_text(entity_type, "entity type"))
            entities = tx.entities_by_pk(pks)
            relations = tx.relations_touching(pks, reads, both_ends=True)
        return Graph(self._ordered(entities, pks), tuple(relations))

    def relations(
        self,
        *,
        relation_type: str | None = None,
        from_name: str | None = None,
        to_name: str | None = None,
        scopes: Sequence[str] | None = None,
    ) -> Graph:
        """Relations by type (ignoring case), source and target name, and the entities at their ends."""
        reads = self._reads(scopes)
        with self._engine.store.read() as tx:
            names = [n for n in (from_name, to_name) if n is not None]
            named = tx.entities_named(reads, [self._check_text(n, "entity name") for n in names])
            if any(n not in named for n in names):
                return Graph((), ())
            found = tx.relations_matching(
                reads,
                relation_type=relation_type,
                ignore_case=True,
                from_pk=named[from_name].pk if from_name is not None else None,
                to_pk=named[to_name].pk if to_name is not None else None,
            )
            if relation_type is not None and not relation_type.isascii():
                wanted = relation_type.lower()
                found = [r for r in found if r.type.lower() == wanted]
            pks = sorted({pk for r in found for pk in (r.src_pk, r.dst_pk)})
            entities = tx.entities_by_pk(pks)
        return Graph(self._ordered(entities, pks), tuple(found))

    def with_observations_matching(
        self, pattern: str, *, scopes: Sequence[str] | None = None, time_limit: float = PATTERN_TIME_LIMIT_S
    ) -> tuple[Entity, ...]:
        """Entities with an observation matching a preset name or a JavaScript-style regex
        (case-insensitive). InvalidArgument for a bad pattern, or one that runs past
        `time_limit` (the pattern's fault, so it says so rather than timing the call out)."""
        reads = self._reads(scopes)
        # Compiled (or refused) before the read opens: whether a pattern fits the call's time
        # must not depend on how long a connection takes to come.
        compiled = self.compile_pattern(pattern)
        with self._engine.store.read() as tx:
            hits = self.matching_pattern(tx, compiled, reads, time_limit=time_limit)
            entities = tx.entities_by_pk(hits)
        return self._ordered(entities, hits)

    def compile_pattern(self, pattern: str) -> CompiledPattern:
        """`pattern` (a preset name or a JavaScript-style regex) compiled for
        `matching_pattern`; InvalidArgument for a bad one or one whose compile would not
        fit in what is left of the call's time limit."""
        source = OBSERVATION_PRESETS.get(check_query(pattern, "pattern").lower(), pattern)
        # A compile cannot be stopped once begun (and holds the GIL), so it must fit in
        # what is left of the call's time limit.
        left = self._engine.time_left()
        budget = MAX_PATTERN_STEPS if left is None else min(MAX_PATTERN_STEPS, int(left / COMPILE_SECONDS_PER_STEP))
        return CompiledPattern(pattern, source, compile_js(source, shown=pattern, max_steps=budget))

    def _match_limit(self, time_limit: float) -> float:
        """How long matching may take: `time_limit`, or what is left of the call's, if less."""
        left = self._engine.time_left()
        return time_limit if left is None else min(time_limit, left)

    def observation_matcher(self, pattern: str, *, time_limit: float = PATTERN_TIME_LIMIT_S) -> Callable[[str], bool]:
        """A test of one observation against `pattern` (as in `with_observations_matching`);
        a test that runs past `time_limit` counts as no match."""
        compiled = self.compile_pattern(pattern).compiled

        def matches(observation: str) -> bool:
            try:
                return compiled.search(observation, timeout=self._match_limit(time_limit)) is not None
            except TimeoutError:
                return False

        return matches

    def matching_pattern(
        self, tx: ReadTx, pattern: CompiledPattern, reads: Sequence[str], *, time_limit: float = PATTERN_TIME_LIMIT_S
    ) -> list[int]:
        """Pks of the entities with an observation matching `pattern` (see
        `with_observations_matching`), in creation order, inside a read."""
        source, compiled = pattern.source, pattern.compiled
        started = time.monotonic()
        deadline = started + time_limit
        # The call's own limit, when it ends sooner, is the call timing out, not the pattern.
        left = self._engine.time_left()
        call_deadline = float("inf") if left is None else started + left
        too_long = f"the pattern /{pattern.shown}/ ran longer than {time_limit:g}s over the observations; simplify it"

        def out_of_time() -> Exception:
            if time.monotonic() >= call_deadline:
                return OperationTimeout("the call's time limit ran out while matching its pattern")
            return InvalidArgument(too_long)

        hits: list[int] = []
        # A plain word (no regex syntax) is looked up in the substring index first.
        literal = source if not _REGEX_SYNTAX.search(source) and len(source) >= 3 else None
        candidates = tx.entity_text_search([("obs", [literal], [])], reads) if literal else None
        for pk, _name, _kind, _obs, items in tx.entity_texts(reads, candidates):
            for observation in json.loads(items) if items else ():
                remaining = min(deadline, call_deadline) - time.monotonic()
                if remaining <= 0:
                    raise out_of_time()
                try:
                    matched = compiled.search(observation, timeout=remaining) is not None
                except TimeoutError:
                    raise out_of_time() from None
                if matched:
                    hits.append(pk)
                    break
        return hits
