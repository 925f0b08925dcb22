"""The store contract: what the engine needs of a database, and nothing of how it is kept.

The engine talks to a `Store` only through transactions (`Store.read`, `Store.write`)
whose methods speak in records of the data model (`mnemodb.model.records`) and the small
typed results below, never in SQL. The contract is split by role: a transaction is every
role's reads (`ReadTx`) or every role's reads and writes (`WriteTx`). SQLite implements it
(`mnemodb.store.sqlite`); a second backend implements the same protocols and passes the
same contract suite (`tests/store/contract`).

Rules every method follows unless its docstring says otherwise:

- **Keys.** `pk` is the store's integer key of a node (memory, entity or any other node)
  or of an edge; `id` is the public ULID. A pk never changes and is never reused.
- **Scopes.** A `scopes` argument is the set of scopes the caller may read: rows outside
  it are as good as absent. An edge is visible when its own scope and both of its ends'
  scopes are in the set. Methods without a `scopes` argument do not filter: the engine
  checks what it hands on.
- **Missing keys.** Batch lookups (`..._by_pk`, `labels_of`, ...) leave out the keys that
  do not exist; single lookups return None for them. A write given a pk that does not
  exist changes nothing.
- **Order.** "Oldest first" is pk order, which is creation order for everything written
  live; "newest first" is descending pk unless a method says it goes by creation time (an
  import may load rows whose times are not in pk order). "Best first" is descending
  score, ties in ascending pk.
- **Text.** Any Unicode string the data model accepts (`model.rules.check_text`) is
  stored and read back unchanged, U+0000 included: a backend whose text type cannot hold
  it (PostgreSQL) escapes it reversibly inside the store. Lone surrogates never reach the
  store.
- **Time** arguments (`at`, `valid_from`, ...) are milliseconds since the Unix epoch,
  chosen by the engine (`Engine.clock`), never by the database.

Text search scores (`TextHit.score`, `ScoredPk.score`) are on the backend's own scale but
always **higher is better and positive for a match**; the engine only ever compares them
within one result set (`search.ranking.text_strengths`). How much a field counts is the
engine's decision, passed in (`MemoryFieldWeights`, `EntityFieldWeights`).

**Writers are serialised.** `Store.write()` must not let two write transactions overlap,
across threads and processes: the change log's gapless, commit-ordered `seq`, the rule of
one entity per name and scope, the check-then-insert of an open edge, and timestamps that
follow commit order all rest on it. SQLite takes its write lock up front (`BEGIN
IMMEDIATE`); a server database takes an exclusive transaction-scoped lock first.

**Derived data the store keeps by itself** (a backend may use triggers, as SQLite does,
or do it in its write methods): the word index of memory text (content, summary and turn
context); a memory's turn-context text, derived from its `context_from` link (see
`MemoryWrites.insert_memory`) and following edits and removals of the turns it was taken
from; the word and substring indexes of entity text (name, type and observations); the
per-scope memory and tag counters behind `count_memories` and `count_tags`; each node's
`version` (`node_versions`), which grows whenever the node's row is written
(`touch_node`, `replace_node_props`; the engine touches a node with every change of its
memory, tags, entity or observations, so a store need not count those again); and each
embedding model's generation (`embedding_changes`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from mnemodb.model.records import (
    Change,
    ChangeFilter,
    Direction,
    Edge,
    Entity,
    ItemFilter,
    Memory,
    MemoryView,
    NewEdgeRow,
    Node,
    Props,
    Relation,
    Scalar,
    Token,
)
from mnemodb.model.value import Value

__all__ = [
    "AccessStats",
    "Admin",
    "ChangeLogReads",
    "ChangeLogWrites",
    "Coverage",
    "EdgeReads",
    "EdgeWrites",
    "EdgesAround",
    "EdgesWalked",
    "EmbeddingChanges",
    "EmbeddingReads",
    "EmbeddingWrites",
    "EntityFieldWeights",
    "EntityKey",
    "EntityLink",
    "EntityMatch",
    "EntityReads",
    "EntityText",
    "EntityTextSearch",
    "EntityWrites",
    "ItemReads",
    "MemoryCandidates",
    "MemoryFieldWeights",
    "MemoryReads",
    "MemoryWrites",
    "MetaReads",
    "MetaWrites",
    "NodeKey",
    "NodeLabel",
    "NodeReached",
    "NodeReads",
    "NodeWrites",
    "ReadTx",
    "ScopeName",
    "ScopeSet",
    "ScoredPk",
    "Store",
    "StoreHealth",
    "StoredVector",
    "TextClause",
    "TextHit",
    "TextSearch",
    "TimeRange",
    "TokenReads",
    "TokenWrites",
    "TransferReads",
    "TransferWrites",
    "VectorHit",
    "VectorIndex",
    "WriteTx",
]

ScopeSet = Sequence[str]
"""The scopes a caller may read (see the module's rules)."""


# -- typed results and arguments -----------------------------------------------------------


class TextHit(NamedTuple):
    """A memory found by words or tags."""

    pk: int
    score: float
    """How well the words matched: positive, higher is better, comparable only within one
    result set; 0.0 for a hit by tag alone."""
    importance: int
    created_at: int


class ScoredPk(NamedTuple):
    """A node found by words: its pk and a score (positive, higher is better, comparable
    only within one result set)."""

    pk: int
    score: float


class MemoryCandidates(NamedTuple):
    """A memory search's candidates, read without their rows, and what bounds the
    relevance any of them can get: what a search ranks before it reads its winners."""

    text: dict[int, float]
    """The best matches by words, best first: `search_text`'s hits without their rows, pk
    -> score."""
    tagged: list[int]
    """The newest memories with a tag searched for, newest first: `memories_with_tags`'
    hits, by pk."""
    most_important: int
    """No candidate's importance is above it (10 when the store cannot tell)."""
    oldest: int | None
    """No candidate was created before it (None: no candidate)."""
    newest: int | None
    """No candidate was created after it (None: no candidate)."""


class NodeLabel(NamedTuple):
    label: str
    scope: str


class NodeKey(NamedTuple):
    """Who a node is and where it lives, without its properties: what a link needs of
    each end."""

    pk: int
    id: str
    scope: str
    label: str


class NodeReached(NamedTuple):
    """A node one hop of a walk leads to (`edges_walked`): its id, label and scope, and
    whether an edge of the type asked about enters it."""

    id: str
    label: str
    scope: str
    entered: bool


class EntityText(NamedTuple):
    """An entity's searchable text, as the substring search reads it."""

    pk: int
    name: str
    entity_type: str
    observations: str
    """The observations joined by single spaces."""
    observations_json: str
    """The observations as a JSON array of strings, in order (parsed only on a match)."""


class EntityMatch(NamedTuple):
    """An entity the substring search may have found, with what a search shows of it: no
    node fields (id, scope, properties, times), observations and extra fields as stored."""

    pk: int
    name: str
    entity_type: str
    observations_json: str
    """The observations as a JSON array of strings, in order."""
    extra_json: str | None
    """Fields an imported upstream line carried, as a JSON object (None: none)."""


class EntityKey(NamedTuple):
    """What a relation needs of an entity at one of its ends: who it is and where it lives,
    without its observations or properties."""

    pk: int
    id: str
    scope: str
    name: str


class EntityLink(NamedTuple):
    """An open relation between two entities: the light row a graph walk steps over."""

    relation_pk: int
    from_pk: int
    to_pk: int


class StoredVector(NamedTuple):
    pk: int
    id: str
    scope: str
    vector: bytes
    """Little-endian float32 values."""


class VectorHit(NamedTuple):
    pk: int
    score: float
    """Cosine similarity to the query, in [-1, 1]."""


class AccessStats(NamedTuple):
    reads: int
    last_at: int
    """When it was last read (ms; 0 when never)."""


class EdgesAround(NamedTuple):
    """What a detailed look-up reads around the nodes it shows, in one statement
    (`EdgeReads.edges_around`)."""

    edges: list[Edge]
    """The edges touching the nodes, oldest first, each once."""
    labels: dict[int, str]
    """The label of each edge's end that is not one of the nodes."""
    keys: dict[int, EntityKey]
    """The key of each of those ends that is an entity."""
    access: dict[int, AccessStats]
    """The access statistics of each of the nodes read at least once (the others: (0, 0))."""


class EdgesWalked(NamedTuple):
    """One hop of a walk, read in one statement (`EdgeReads.edges_walked`)."""

    edges: list[Edge]
    """The edges followed from the nodes walked from, oldest first, each once."""
    reached: dict[int, NodeReached]
    """Each node an edge leads to (its end away from the node it was followed from)."""


class ScopeName(NamedTuple):
    name: str
    scope: str
    created_at: int


class TimeRange(NamedTuple):
    oldest: int | None
    newest: int | None


class EmbeddingChanges(NamedTuple):
    generation: int
    """Grows whenever any vector of the model is set or removed (0: none ever)."""
    removals: int
    """How many of the model's vectors were ever removed."""


class Coverage(NamedTuple):
    current: int
    """Nodes whose vector was made from their current version."""
    total: int


class MemoryFieldWeights(NamedTuple):
    """How much a word match in each field of a memory counts, relative to the others."""

    content: float = 1.0
    summary: float = 1.0
    context: float = 1.0


class EntityFieldWeights(NamedTuple):
    """How much a word match in each field of an entity counts, relative to the others."""

    name: float = 1.0
    entity_type: float = 1.0
    observations: float = 1.0


TextClause = tuple[str | None, Sequence[str], Sequence[str]]
"""A substring condition on entity text: (field — "name", "type", "obs" — or None for any
of them; every one of these substrings; at least one of these substrings)."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class StoreHealth(Value):
    """What a store says of itself when asked to check (`Admin.check`)."""

    schema_version: int
    """The schema the database is at."""
    latest_schema: int
    """The schema this mnemodb writes."""
    problems: tuple[str, ...]
    """What the database's own consistency checks found wrong (none when sound)."""
    details: Mapping[str, Any]
    """Backend facts worth showing an operator (journal mode, WAL size, free pages...)."""


# -- reads, by role ------------------------------------------------------------------------


class MemoryReads(Protocol):
    """Memory rows: a node of label Memory with its content, tags and turn context."""

    def memory_by_hash(self, scopes: ScopeSet, digest: str) -> Memory | None:
        """The oldest memory in `scopes` whose content hash is `digest`."""
        ...

    def memory_pk(self, scope: str, digest: str) -> int | None:
        """The memory of exactly this scope whose content hash is `digest` (one at most: a
        scope holds each content once)."""
        ...

    def memory_by_pk(self, pk: int) -> Memory | None:
        """One memory with its tags (sorted), read counts and when it was archived."""
        ...

    def memories_by_pk(self, pks: Sequence[int]) -> dict[int, Memory]:
        """`memory_by_pk` for many; pks that are not memories are left out."""
        ...

    def memory_views(self, pks: Sequence[int]) -> dict[int, MemoryView]:
        """The shown fields of each memory in `pks` (tags sorted), as `memories_by_pk`
        reads them; pks that are not memories are left out."""
        ...

    def memory_contents(self, pks: Sequence[int], holding: str) -> dict[int, str]:
        """The content of each memory in `pks` whose content holds `holding` (a plain
        substring, case-sensitive); pks that are not such memories are left out."""
        ...

    def latest_memory(self, scope: str, before_pk: int, created_since: int) -> int | None:
        """The newest memory of `scope` with a pk below `before_pk` created at or after
        `created_since`: the turn a new turn follows (`MemoryWrites.insert_memory`)."""
        ...

    def count_memories(self, scopes: ScopeSet) -> int:
        """How many memories `scopes` hold (a counter, not a scan)."""
        ...

    def memories_per_scope(self) -> dict[str, int]:
        """How many memories each scope holds, scopes with none left out, by scope."""
        ...

    def count_tags(self, scopes: ScopeSet) -> int:
        """How many distinct tags the memories of `scopes` carry (a counter, not a scan)."""
        ...

    def memory_time_range(self, scopes: ScopeSet) -> TimeRange:
        """When the oldest and the newest memory of `scopes` were stored (None, None: none)."""
        ...

    def most_important(self, scopes: ScopeSet) -> int | None:
        """The highest importance among the memories of `scopes` that are not archived
        (None: there is none), read from an index rather than by a scan: what bounds the
        score of a memory a ranking has not scored."""
        ...


class NodeReads(Protocol):
    """Node rows: every item is a node (id, scope, label, props, times)."""

    def node_by_id(self, node_id: str) -> Node | None:
        """The node's own row: its stored props only (see `node_views` for the full view)."""
        ...

    def nodes_by_ids(self, node_ids: Sequence[str]) -> dict[str, Node]:
        """`node_by_id` for many ids in one read: the node of each id that exists, by id."""
        ...

    def node_keys_by_ids(self, node_ids: Sequence[str]) -> dict[str, NodeKey]:
        """`nodes_by_ids`, each node's key only (no properties to decode)."""
        ...

    def node_views(self, pks: Sequence[int]) -> dict[int, Node]:
        """Nodes as the property graph shows them: a memory's or entity's fields are among
        its props (`model.ops.node_props`). The fields come by the node's label: a Memory
        node's memory row, an Entity node's entity row, none for another label."""
        ...

    def node_view_by_id(self, node_id: str) -> Node | None:
        """`node_views` for one node, by id."""
        ...

    def labels_of(self, pks: Sequence[int]) -> dict[int, NodeLabel]:
        """Each existing node's label and scope."""
        ...

    def nodes_with_prop(self, label: str, prop: str, value: str | int | bool, scopes: ScopeSet) -> list[int]:
        """Nodes of `label` in `scopes` whose view's `prop` equals `value`, type included
        (True is not 1), oldest first."""
        ...

    def node_pks_with_labels(self, labels: Sequence[str]) -> list[int]:
        """Every node of these labels, oldest first (whatever its scope: for upkeep)."""
        ...

    def node_versions(self, pks: Sequence[int]) -> dict[int, int]:
        """Each node's version: how many times it has changed (see the module's derived data)."""
        ...

    def access_of(self, pk: int) -> AccessStats:
        """How often the node was read and when last ((0, 0) when never)."""
        ...

    def access_counts(self, pks: Sequence[int]) -> dict[int, int]:
        """Times each node was read; nodes never read are left out."""
        ...


class EdgeReads(Protocol):
    """Edges: typed, directed, time-bounded (`valid_from` inclusive, `valid_to` exclusive,
    None while open). "Valid at t" means valid_from <= t and (valid_to is None or t < valid_to)."""

    def edge_by_pk(self, pk: int) -> Edge | None:
        """One edge, open or closed, whatever its scope."""
        ...

    def edge_by_id(self, edge_id: str) -> Edge | None:
        """`edge_by_pk` by the edge's public id."""
        ...

    def find_edges(self, src: int, dst: int, edge_type: str, *, open_only: bool = False) -> list[Edge]:
        """Edges of this type from `src` to `dst`, oldest first; with `open_only`, those not
        closed."""
        ...

    def open_edge_keys(self, keys: Sequence[tuple[int, int, str]]) -> set[tuple[int, int, str]]:
        """Which of these (src, dst, type) have an open edge (`find_edges` with `open_only`
        for many at once, without reading the edges)."""
        ...

    def edges_of(
        self,
        pks: Sequence[int],
        direction: Direction,
        *,
        valid_at: int | None = None,
        scopes: ScopeSet | None = None,
        edge_types: Sequence[str] | None = None,
    ) -> list[Edge]:
        """Edges leaving (`out`), entering (`in`) or touching (`both`) any of `pks`, oldest
        first, each once; filtered by validity, visibility and type when given."""
        ...

    def edges_reached(
        self,
        ends: Mapping[int, str],
        direction: Direction,
        *,
        valid_at: int | None = None,
        scopes: ScopeSet | None = None,
        edge_types: Sequence[str] | None = None,
        leaving_out: Collection[int] = (),
    ) -> list[tuple[Edge, Node]]:
        """`edges_of` the nodes `ends` (pk -> id, each visible in `scopes` already: its
        scope is not looked up again), each with the view (`node_views`) of the end it
        leads to: one pair per way the edge is followed (an edge between two of `ends`
        twice when `both`), oldest edge first, leaving its source before entering its
        target; except the pairs that lead to a node of `leaving_out` (a traversal both
        ways has followed every edge of the nodes it left)."""
        ...

    def edges_reached_from_id(
        self,
        node_id: str,
        direction: Direction,
        *,
        valid_at: int | None = None,
        scopes: ScopeSet | None = None,
        edge_types: Sequence[str] | None = None,
    ) -> tuple[Node | None, list[tuple[Edge, Node]]]:
        """`node_view_by_id(node_id)` (None when there is no such node: then no pairs), and
        `edges_reached` from that node as if it were visible in `scopes` (the caller checks
        it and drops the pairs when it is not): a traversal's start and first hop."""
        ...

    def edges_around(self, nodes: Mapping[int, str], *, valid_at: int | None, scopes: ScopeSet) -> EdgesAround:
        """`edges_of` the nodes `nodes` (pk -> id, each visible in `scopes` already: its
        scope is not looked up again) both ways, valid at `valid_at` unless it is None and
        visible in `scopes`; with the label of each edge's other end, the key of each such
        end that is an entity, and `access_of` each of `nodes`: what a detailed look-up
        reads beside the items it shows, in one statement."""
        ...

    def edges_walked(
        self,
        ends: Mapping[int, str],
        direction: Direction,
        *,
        valid_at: int | None,
        scopes: ScopeSet,
        edge_types: Sequence[str] | None = None,
        entered_by: str | None = None,
        entered_at: int = 0,
        leaving_out: Collection[int] = (),
    ) -> EdgesWalked:
        """One hop of a walk from the nodes `ends` (pk -> id, each visible in `scopes`
        already: its scope is not looked up again): `edges_of` them in `direction`, valid at
        `valid_at` unless it is None, visible in `scopes` and of `edge_types` when given,
        except those that lead to a node of `leaving_out` (a walk both ways has read every
        edge of the nodes it left); with each node those edges lead to (an edge's target
        when followed out of its source, its source when followed into its target; one of
        `ends` too, when an edge joins two), its id, label and scope, and whether an edge of
        type `entered_by` valid at `entered_at` enters it from a node in `scopes`, the edge in
        `scopes` too (always False when `entered_by` is None; a walk leaves out memories
        superseded then): what a walk reads to take a step, in one statement."""
        ...

    def edges_among(self, pks: Sequence[int], *, valid_at: int | None = None) -> list[Edge]:
        """Edges with both ends among `pks`, oldest first."""
        ...

    def edges_of_types(
        self, types: Sequence[str] | None, scopes: ScopeSet, *, valid_at: int | None, limit: int
    ) -> list[Edge]:
        """Visible edges of these types (None: any), valid at `valid_at` unless it is None,
        newest first, at most `limit`."""
        ...


class EntityReads(Protocol):
    """Entities (a node with a name, a type and ordered observations) and the relations
    between them (edges between entities, as the knowledge graph sees them).

    "The entity a name means" in a set of scopes is the oldest entity of that name there;
    methods that list entities list only those."""

    def entity_by_name(self, scopes: ScopeSet, name: str) -> Entity | None:
        """The entity `name` means in `scopes` (exact, case-sensitive)."""
        ...

    def entity_around(self, scopes: ScopeSet, name: str, *, valid_at: int | None) -> tuple[Entity, EdgesAround] | None:
        """`entity_by_name`, and `edges_around` that entity (None when no entity has the
        name): a detailed look-up of one entity by name, in one statement rather than two."""
        ...

    def entity_by_name_nocase(self, scopes: ScopeSet, name: str) -> Entity | None:
        """The entity whose name equals `name` ignoring case, when exactly one name does
        (None when none or several)."""
        ...

    def entities_named(self, scopes: ScopeSet, names: Sequence[str]) -> dict[str, Entity]:
        """The entity each name means, for the names that exist."""
        ...

    def entity_keys_named(self, scopes: ScopeSet, names: Sequence[str]) -> dict[str, EntityKey]:
        """`entities_named`, each entity's key only: what relating entities by name reads."""
        ...

    def entities_by_pk(self, pks: Sequence[int]) -> dict[int, Entity]:
        """Entities with their observations in order."""
        ...

    def entities_reached(self, ids: Mapping[int, str], scope: str | None) -> dict[int, Entity]:
        """`entities_by_pk` of the nodes a walk reached (pk: id, as the walk read them in this
        transaction): their ids, and their scope when the caller knows every one is in
        `scope`, are not read again."""
        ...

    def entity_keys_by_pk(self, pks: Sequence[int]) -> dict[int, EntityKey]:
        """`entities_by_pk`, each entity's key only: what labelling a relation's end reads."""
        ...

    def entity_pks(self, scopes: ScopeSet, *, after: int = 0, limit: int | None = None) -> list[int]:
        """The entities names mean, oldest first, from just after pk `after`."""
        ...

    def entity_pks_of_type(self, scopes: ScopeSet, entity_type: str) -> list[int]:
        """The entities names mean whose type equals `entity_type` ignoring case, oldest first."""
        ...

    def entity_names_starting(self, scopes: ScopeSet, prefix: str, limit: int) -> list[str]:
        """Distinct names starting with `prefix` (ignoring the case of ASCII letters),
        ordered ignoring that case, at most `limit`."""
        ...

    def entity_texts(self, scopes: ScopeSet, pks: Sequence[int] | None = None) -> Iterator[EntityText]:
        """The searchable text of the given entities (None: every entity a name means in
        `scopes`), oldest first."""
        ...

    def entity_links(self, pks: Sequence[int], scopes: ScopeSet) -> list[EntityLink]:
        """Visible open relations between entities with an end among `pks`, oldest first."""
        ...

    def relations_by_pk(self, pks: Sequence[int]) -> dict[int, Relation]:
        """Relations (edges between entities) by edge pk."""
        ...

    def relations_touching(self, pks: Sequence[int], scopes: ScopeSet, *, both_ends: bool = False) -> list[Relation]:
        """Visible open relations with one end (with `both_ends`: both ends) among `pks`,
        oldest first."""
        ...

    def relations_matching(
        self,
        scopes: ScopeSet,
        *,
        relation_type: str | None = None,
        ignore_case: bool = False,
        from_pk: int | None = None,
        to_pk: int | None = None,
        after: int = 0,
        limit: int | None = None,
    ) -> list[Relation]:
        """Visible open relations, filtered by type (ASCII case ignored with `ignore_case`)
        and ends, oldest first from just after edge pk `after`."""
        ...


class TextSearch(Protocol):
    """Search by analysed words. `terms` are the engine's analysed query words
    (`search.analyzer`); a row matches when it holds any of them, stemmed the way the
    index stems (Porter, for English). Hits are best first (see `TextHit.score`)."""

    def search_text(
        self,
        terms: Sequence[str],
        scopes: ScopeSet,
        limit: int,
        *,
        content_only: bool = False,
        include_archived: bool = False,
    ) -> list[TextHit]:
        """Memories whose content or summary (with `content_only`: content) holds a term,
        archived ones left out unless `include_archived`. The turn context is not searched
        here (see `filtered_text_search`)."""
        ...

    def memories_with_tags(
        self, tags: Sequence[str], scopes: ScopeSet, limit: int, *, include_archived: bool = False
    ) -> list[TextHit]:
        """The newest memories carrying any of `tags`, newest first, score 0.0; archived ones
        left out unless `include_archived`."""
        ...

    def memory_candidates(
        self,
        terms: Sequence[str],
        tags: Sequence[str],
        scopes: ScopeSet,
        limit: int,
        *,
        include_archived: bool = False,
    ) -> MemoryCandidates:
        """`search_text(terms, scopes, limit)` and `memories_with_tags(tags, scopes, limit)`
        (archived memories left out unless `include_archived`) by pk and score alone, in as
        few statements as the store can, with bounds on the importance and creation time of
        every memory they hold."""
        ...

    def filtered_text_search(
        self,
        terms: Sequence[str],
        scopes: ScopeSet,
        limit: int,
        where: ItemFilter,
        at: int,
        weights: MemoryFieldWeights,
    ) -> list[TextHit]:
        """Memories meeting `where` (edges judged as valid at `at`) whose content, summary or
        turn context holds a term, each field weighted by `weights`."""
        ...

    def filtered_tagged(
        self, tags: Sequence[str], scopes: ScopeSet, limit: int, where: ItemFilter, at: int
    ) -> list[TextHit]:
        """`memories_with_tags` for memories meeting `where`."""
        ...

    def node_text_search(self, terms: Sequence[str], scopes: ScopeSet, limit: int) -> list[ScoredPk]:
        """Nodes whose declared text (`NodeWrites.set_node_text`) holds a term."""
        ...

    def entity_word_search(
        self, terms: Sequence[str], scopes: ScopeSet, limit: int, weights: EntityFieldWeights
    ) -> list[ScoredPk]:
        """The entities names mean whose name, type or observations hold a term, each field
        weighted by `weights`."""
        ...


class EntityTextSearch(Protocol):
    """Substring search over entity text, for the knowledge graph's literal semantics."""

    def entity_text_search(self, clauses: Sequence[TextClause], scopes: ScopeSet) -> list[int] | None:
        """A superset of the entities names mean whose text meets every clause, oldest
        first; the engine checks each candidate exactly. None when the index cannot narrow
        the search (a substring shorter than the index's grain, three characters for
        trigrams): the engine then reads every entity's text (`entity_texts`)."""
        ...

    def entity_text_matches(self, clauses: Sequence[TextClause], scopes: ScopeSet) -> list[EntityMatch] | None:
        """`entity_text_search`'s candidates, each with its name, type, observations and
        extra fields, in one read: for a search that returns every match whole. None when
        `entity_text_search` is None."""
        ...


class ItemReads(Protocol):
    """Memories and entities under an `ItemFilter` (the native face's listing and recall).
    A filter's edge conditions count only edges visible to `scopes` and valid at `at`; an
    archived memory meets a filter only with `include_archived`."""

    def list_memories(self, scopes: ScopeSet, where: ItemFilter, at: int, offset: int, limit: int) -> list[int]:
        """Memories meeting `where`, newest by creation time first (ties: higher pk first),
        a page of them."""
        ...

    def list_entities(self, scopes: ScopeSet, where: ItemFilter, at: int, offset: int, limit: int) -> list[int]:
        """Entities names mean meeting `where`, newest by creation time first (ties: higher pk
        first), a page of them."""
        ...

    def admitted(self, pks: Sequence[int], kind: str, where: ItemFilter, at: int, scopes: ScopeSet) -> set[int]:
        """Which of these memories (`kind` "memory") or entities ("entity") meet `where`."""
        ...

    def facets(self, scopes: ScopeSet, top: int) -> dict[str, list[tuple[str, int]]]:
        """The `top` most common tags, memory types, entity types and relation types
        (keys "tags", "memory_types", "entity_types", "relation_types") with their
        counts, most common first, ties by value."""
        ...

    def memory_growth(self, scopes: ScopeSet, start: int, step: int, buckets: int) -> list[int]:
        """How many memories (archived ones too) were created in each of `buckets`
        consecutive spans of `step` ms from `start`: the first span is [start, start+step)."""
        ...

    def largest_entities(self, scopes: ScopeSet, limit: int) -> list[tuple[int, int]]:
        """(pk, observations) of the `limit` entities with the most observations, most first,
        ties by pk."""
        ...


class EmbeddingReads(Protocol):
    """Vectors, one per (node, model), with the node version they were made from."""

    def embedding_dim(self, model: str, *, excluding: int | None = None) -> int | None:
        """The length of `model`'s vectors, not counting node `excluding`'s (None: none)."""
        ...

    def embeddings_of_model(self, model: str, *, since: int | None = None) -> list[StoredVector]:
        """Every vector of `model`, oldest node first; with `since`, those set after that
        generation (`embedding_changes`)."""
        ...

    def embedded_nodes(self, model: str) -> list[int]:
        """The nodes with a `model` vector, in pk order."""
        ...

    def embedding_changes(self, model: str) -> EmbeddingChanges:
        """How far `model`'s vectors have changed: what a cached vector index compares."""
        ...

    def unembedded(self, model: str, labels: Sequence[str], limit: int, *, after: int = 0) -> list[int]:
        """Nodes of `labels` past pk `after` with no `model` vector, or with one made from
        an older version of the node, in pk order, at most `limit`."""
        ...

    def embedding_coverage(self, model: str, labels: Sequence[str]) -> Coverage:
        """How many nodes of `labels` have a current `model` vector, of how many."""
        ...


class ChangeLogReads(Protocol):
    """The change log: every caller write, in commit order. `seq` is gapless and grows in
    commit order (a reader that has seen n has seen everything before n)."""

    def current_seq(self) -> int:
        """The last entry's seq (0 for an empty log)."""
        ...

    def last_change_at(self) -> int | None:
        """When the last entry was made (None for an empty log): read by a writer, under the
        write lock, as the floor its clock is held to, so times never go backwards, even
        across hosts whose clocks disagree."""
        ...

    def changes(self, since_seq: int, limit: int | None) -> list[Change]:
        """Entries from `since_seq` on (inclusive), in seq order, at most `limit`."""
        ...

    def changes_of(self, target: str) -> list[Change]:
        """Every entry about one node or edge id, in seq order."""
        ...

    def change_page(
        self, scopes: ScopeSet | None, where: ChangeFilter, before_seq: int | None, limit: int
    ) -> list[Change]:
        """Entries meeting `where`, newest first (by time, then seq), at most `limit`: those
        of `scopes` and those without a scope (`scopes` None: every entry). With
        `before_seq`, only entries that come after entry `before_seq` in that order (the
        next page after one that ended there; a seq past the last entry bounds nothing).
        Indexed: a page costs about the same however long the log is."""
        ...


class MetaReads(Protocol):
    def get_meta(self, key: str) -> str | None:
        """A stored setting (None when unset)."""
        ...


class TokenReads(Protocol):
    """Access tokens (stored by hash only) and scope names."""

    def token_by_hash(self, digest: str) -> Token | None:
        """The live (not revoked) token with this hash."""
        ...

    def tokens(self, *, revoked: bool = False) -> list[Token]:
        """Live tokens (with `revoked`, revoked ones too), oldest first."""
        ...

    def live_token_count(self) -> int:
        """How many tokens are not revoked."""
        ...

    def scope_named(self, name: str) -> str | None:
        """The scope a person's name for it stands for (names ignore case)."""
        ...

    def scope_names(self) -> list[ScopeName]:
        """Every named scope, by name."""
        ...


class TransferReads(Protocol):
    def counts(self, scopes: ScopeSet | None) -> dict[str, int]:
        """Rows per kind in `scopes` (None: everywhere): keys "nodes", "memories",
        "entities", "edges", "observations", "embeddings"."""
        ...

    def dump(self) -> Iterator[dict[str, Any]]:
        """Every node, then every edge, then every embedding as plain records (the export
        format, `docs/cli.md`), oldest first."""
        ...


class ReadTx(
    MemoryReads,
    NodeReads,
    EdgeReads,
    EntityReads,
    TextSearch,
    EntityTextSearch,
    ItemReads,
    EmbeddingReads,
    ChangeLogReads,
    MetaReads,
    TokenReads,
    TransferReads,
    Protocol,
):
    """A consistent snapshot of the store: every read in it sees the same committed state,
    taken no later than its first read. A thread holds one read transaction at a time."""


# -- writes, by role -----------------------------------------------------------------------


class NodeWrites(Protocol):
    def insert_node(self, node_id: str, scope: str, label: str, props: Props, at: int, *, pk: int | None = None) -> int:
        """A new node created and updated at `at`; its pk (`pk` when given and free)."""
        ...

    def touch_node(self, pk: int, at: int) -> None:
        """Mark the node updated at `at` (its version grows)."""
        ...

    def replace_node_props(self, pk: int, props: Mapping[str, Scalar], at: int) -> None:
        """The node's stored props become exactly `props`; updated at `at`."""
        ...

    def delete_node(self, pk: int) -> None:
        """Remove the node with everything that hangs off it: its memory or entity row,
        tags, observations, edges at either end, vectors, read counts and index rows."""
        ...

    def ensure_prop_index(self, label: str, prop: str) -> None:
        """Make `nodes_with_prop` fast for this (label, prop) pair (idempotent)."""
        ...

    def set_node_text(self, pk: int, text: str | None) -> None:
        """The node's declared text for `node_text_search` (None: none). Derived data,
        written by the engine's upkeep."""
        ...

    def clear_node_text(self) -> None:
        """Forget every node's declared text (before a reindex)."""
        ...


class MemoryWrites(Protocol):
    def insert_memory(
        self,
        pk: int,
        scope: str,
        digest: str,
        content: str,
        summary: str | None,
        importance: int,
        memory_type: str,
        *,
        context_from: int | None = None,
    ) -> None:
        """The memory row of node `pk`. `context_from` is the turn it follows (chosen by the
        engine: `MemoryReads.latest_memory`); the store derives the turn-context text from
        it: the content of that turn, preceded by that of the turn it in turn follows,
        joined by a space. The context follows those turns when they are edited or removed."""
        ...

    def update_memory(self, pk: int, fields: Mapping[str, Any]) -> None:
        """Set some of the memory's fields ("hash", "content", "summary", "importance",
        "memory_type"); ValueError for any other name."""
        ...

    def set_archived(self, pk: int, at: int | None) -> None:
        """Mark the memory archived at `at` (None: not archived). The node itself is not
        touched: the engine touches it."""
        ...

    def add_tags(self, pk: int, tags: Iterable[str]) -> list[str]:
        """Add tags the memory does not carry yet; those added, in the order given."""
        ...

    def replace_tags(self, pk: int, tags: Iterable[str]) -> None:
        """The memory's tags become exactly `tags`."""
        ...


class EdgeWrites(Protocol):
    def insert_edge(
        self,
        edge_id: str,
        src: int,
        dst: int,
        edge_type: str,
        scope: str,
        props: Props,
        valid_from: int,
        at: int,
        *,
        pk: int | None = None,
    ) -> int:
        """A new open edge; its pk (`pk` when given and free)."""
        ...

    def insert_edges(self, rows: Sequence[NewEdgeRow]) -> list[int]:
        """New open edges, in order: what `insert_edge` of each row in turn writes (in one
        statement where the store can); their pks, in order."""
        ...

    def close_edge(self, pk: int, valid_to: int) -> None:
        """End the edge's validity at `valid_to`."""
        ...

    def delete_edge(self, pk: int) -> None:
        """Remove the edge and its history (closing keeps it: `close_edge`)."""
        ...

    def set_edge_extra(self, pk: int, extra: Mapping[str, Any] | None) -> None:
        """Fields a foreign format keeps on a relation (None or empty: none)."""
        ...


class EntityWrites(Protocol):
    def insert_entity(
        self,
        pk: int,
        scope: str,
        name: str,
        entity_type: str,
        extra: Mapping[str, Any] | None = None,
        observations: Sequence[str] = (),
        at: int = 0,
    ) -> list[str]:
        """The entity row of node `pk` with its first observations (duplicates dropped);
        the observations kept, in order."""
        ...

    def rename_entity(self, pk: int, name: str | None = None, entity_type: str | None = None) -> None:
        """Change the entity's name and/or type."""
        ...

    def add_observations(self, entity_pk: int, contents: Sequence[str], at: int) -> list[str]:
        """Append observations the entity does not hold yet; those added, in order."""
        ...

    def delete_observations(self, entity_pk: int, contents: Sequence[str]) -> list[str]:
        """Remove these observations; those that were there."""
        ...


class EmbeddingWrites(Protocol):
    def set_embedding(
        self, pk: int, model: str, vector: bytes, dim: int, at: int, *, node_version: int | None = None
    ) -> None:
        """Set the node's `model` vector (little-endian float32), made from `node_version`
        of the node (None: its current version). The model's generation grows."""
        ...

    def delete_embeddings(self, pk: int) -> None:
        """Remove every vector of the node. The models' generations and removals grow."""
        ...


class ChangeLogWrites(Protocol):
    def append_change(
        self,
        at: int,
        scope: str | None,
        op: str,
        target: str | None,
        data: Mapping[str, Any],
        *,
        actor: str | None = None,
    ) -> int:
        """Append an entry, made by `actor` (the grant's name; None: made without one); its
        seq, the last one plus one (see `ChangeLogReads`)."""
        ...

    def append_changes(
        self,
        at: int,
        entries: Sequence[tuple[str | None, str, str | None, Mapping[str, Any]]],
        *,
        actor: str | None = None,
    ) -> int:
        """Append entries (scope, op, target, data), all at `at` and by `actor`, in their
        order: what `append_change` of each in turn appends; the seq of the last (the log's
        last seq when there are none)."""
        ...

    def rewrite_change(self, seq: int, data: Mapping[str, Any]) -> None:
        """Replace one entry's data, keeping its seq, time, op and target: how a forgotten
        item's text leaves the log."""
        ...


class MetaWrites(Protocol):
    def set_meta(self, key: str, value: str) -> None:
        """Store a setting, replacing its value."""
        ...


class TokenWrites(Protocol):
    def insert_token(self, token: Token, digest: str) -> None:
        """Store a token under the hash of its secret (the secret itself is never stored)."""
        ...

    def revoke_token(self, token_id: str, at: int) -> None:
        """Mark the token revoked at `at`: `token_by_hash` no longer finds it."""
        ...

    def name_scope(self, name: str, scope: str, at: int) -> None:
        """Give a scope a name people can use for it (ValueError when the name is taken)."""
        ...


class TransferWrites(Protocol):
    def load(self, record: Mapping[str, Any]) -> bool:
        """Insert one record of the export format unless it is already here (same id);
        True when something was written. Records come checked by the engine; ValueError,
        with the reason, for one the database cannot take. Integer keys of the source are
        kept when free."""
        ...


class WriteTx(
    ReadTx,
    NodeWrites,
    MemoryWrites,
    EdgeWrites,
    EntityWrites,
    EmbeddingWrites,
    ChangeLogWrites,
    MetaWrites,
    TokenWrites,
    TransferWrites,
    Protocol,
):
    """A read-write transaction: every change it makes commits together or not at all, and
    no other writer runs meanwhile (see the module's rules)."""

    def savepoint(self) -> AbstractContextManager[None]:
        """Changes made inside are undone alone if the block raises; the transaction goes on."""
        ...


# -- vector search -------------------------------------------------------------------------


class VectorIndex(Protocol):
    """Nearest-neighbour search over one store's vectors.

    The default (`mnemodb.store.vectors.MatrixVectorIndex`) scores readable vectors from a
    matrix it keeps up to date through `EmbeddingReads`, exactly or, for many vectors,
    through an inverted file; a server database may answer from an index of its own."""

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
        """The `k` nodes in `scopes` (and among the node ids `candidates`, when given) whose
        `model` vector is most similar to `query` (finite float32 values, checked by the
        engine), best first, ties by node id; zero vectors match nothing. InvalidArgument
        when `query`'s length is not the model's. An index may answer approximately (the
        nearest few, most of the time) unless `exact`.

        The vectors are those `tx` sees or those of a later commit: an index shared by every
        reader may be ahead of a read that began before a write. A caller reads its hits
        through `tx`, which leaves out the nodes that read does not see."""
        ...


# -- the store -----------------------------------------------------------------------------


class Admin(Protocol):
    """What an operator and the composition roots need of a store as a whole."""

    @property
    def location(self) -> str:
        """Where the data lives, as a person would name it (a path, or a URL without its
        password)."""
        ...

    def deadline(self, seconds: float | None) -> AbstractContextManager[None]:
        """Abort, with `OperationTimeout`, and roll back any statement this thread runs
        after `seconds` (None: no limit)."""
        ...

    def files(self) -> list[str]:
        """The files the data lives in while the store is open (none for a database server):
        what an export or a backup must never be written over."""
        ...

    def backup(self, target: str, progress: Callable[[int, int], None] | None = None) -> None:
        """A consistent copy of the whole database, taken while it stays in use, that
        replaces `target` only once complete. `progress(done, total)` as it goes."""
        ...

    def check(self, *, thorough: bool = False) -> StoreHealth:
        """Run the database's own consistency checks (`thorough`: every page and index
        entry, which reads everything) and say what was found."""
        ...

    def size_bytes(self) -> int:
        """The space the data takes (files, or the database's own figure)."""
        ...

    def warm(self, *, wait: bool = False) -> None:
        """Ask the machine to bring the data's files into its file cache, so that the first
        reads after a start do not wait on the disk: on a thread of the store's own, or on
        the caller's with `wait`. Nothing for a database server (it keeps its own cache),
        an in-memory database, or files too large for the memory available."""
        ...

    def close(self) -> None:
        """Release connections and files; the store is unusable afterwards."""
        ...


class Store(Admin, Protocol):
    """A database holding one mnemodb graph."""

    def read(self) -> AbstractContextManager[ReadTx]:
        """A read transaction: a consistent snapshot, never blocked by the writer."""
        ...

    def write(self) -> AbstractContextManager[WriteTx]:
        """A write transaction, serialised against every other writer (see the module's
        rules); commits when the block ends, rolls back if it raises."""
        ...

    @property
    def vectors(self) -> VectorIndex:
        """This store's nearest-neighbour search."""
        ...

    def bump_access(self, hits: Mapping[int, tuple[int, int]]) -> None:
        """Add read counts: node pk -> (reads, last read ms). Best effort, outside any
        transaction of the caller's; never logged."""
        ...
