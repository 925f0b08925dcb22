"""The engine's value types: what every profile reads and writes.

Frozen dataclasses inside; the MCP layer turns them into each profile's JSON shapes.
All times are integer milliseconds since the Unix epoch, UTC.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal, NamedTuple

from mnemodb.model.value import Value

Scalar = str | int | float | bool
"""A property value: JSON scalars only (no null, arrays or objects)."""

Props = Mapping[str, Scalar]

Direction = Literal["out", "in", "both"]

MEMORY = "Memory"
ENTITY = "Entity"

SUPERSEDES = "supersedes"
"""The edge type that says its source replaces its target: the target is no longer current."""
ABOUT = "about"
"""The edge type from a memory to an entity it is about."""

MEMORY_TYPES = ("general", "fact", "plan", "decision", "reflection", "lesson", "error", "gradient")
"""The memory types memdb defined; the engine accepts any non-empty type name."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Memory(Value):
    """A piece of remembered text with its metadata."""

    pk: int
    """Integer row id: stable for the life of the memory (memdb's integer `id`)."""
    id: str
    """ULID."""
    scope: str
    content: str
    hash: str
    """sha256 of the raw UTF-8 content, lower-case hex."""
    tags: tuple[str, ...]
    """Sorted, unique."""
    importance: int
    memory_type: str
    summary: str | None
    props: Props
    created_at: int
    updated_at: int
    access_count: int = 0
    last_accessed_at: int | None = None
    archived_at: int | None = None
    """When the memory was archived; None while it is not. An archived memory is kept and
    read by reference, but searches and listings leave it out unless asked
    (`ItemFilter.include_archived`)."""


class MemoryView(NamedTuple):
    """The fields of a memory a listing shows, without its ids, scope, properties and
    counts: read for a search's winners, which may be a hundred a query, where a full
    `Memory` each cost about a fifth of the search (3.7 us a record against a tuple's
    0.3 us)."""

    pk: int
    content: str
    summary: str | None
    tags: tuple[str, ...]
    """Sorted, unique."""
    importance: int
    memory_type: str
    created_at: int
    last_accessed_at: int | None
    hash: str


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Entity(Value):
    """A named thing memories and relations are about, with its observations."""

    pk: int
    id: str
    scope: str
    name: str
    entity_type: str
    observations: tuple[str, ...]
    props: Props
    created_at: int
    updated_at: int
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Fields an imported upstream line carried that mnemodb has no column for; kept as they were."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Relation(Value):
    """A relation between two entities, as the knowledge-graph face names it."""

    from_name: str
    to_name: str
    type: str
    pk: int
    """The edge's row id."""
    src_pk: int
    dst_pk: int
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Node(Value):
    """Any node, in the label + properties form the property-graph face uses."""

    pk: int
    id: str
    scope: str
    label: str
    props: Props
    created_at: int
    updated_at: int


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Edge(Value):
    """A typed, directed, time-bounded relation between two nodes."""

    pk: int
    id: str
    src: str
    """ULID of the source node."""
    dst: str
    type: str
    scope: str
    props: Props
    valid_from: int
    valid_to: int | None
    """None while the edge is open; the instant it stopped being true otherwise."""
    created_at: int
    src_pk: int
    dst_pk: int

    def is_valid_at(self, at: int) -> bool:
        """`valid_from` inclusive, `valid_to` exclusive."""
        return self.valid_from <= at and (self.valid_to is None or at < self.valid_to)


# `Edge`'s slots, written directly by `edge_of` (the order of its fields).
(
    _set_pk,
    _set_id,
    _set_src,
    _set_dst,
    _set_type,
    _set_scope,
    _set_props,
    _set_valid_from,
    _set_valid_to,
    _set_created_at,
    _set_src_pk,
    _set_dst_pk,
) = (getattr(Edge, f.name).__set__ for f in fields(Edge))
_new = object.__new__


def edge_of(
    pk: int,
    id: str,
    src: str,
    dst: str,
    type: str,
    scope: str,
    props: Props,
    valid_from: int,
    valid_to: int | None,
    created_at: int,
    src_pk: int,
    dst_pk: int,
) -> Edge:
    """`Edge(...)` of these fields, the same object, made without the frozen dataclass's
    `__init__`, which sets each of the twelve fields through `object.__setattr__`: 0.9 us
    an edge instead of 2.4. The stores build every edge they read with it (a two-hop walk
    reads dozens a call); `Edge` has no defaults and no `__post_init__` to skip."""
    edge = _new(Edge)
    _set_pk(edge, pk)
    _set_id(edge, id)
    _set_src(edge, src)
    _set_dst(edge, dst)
    _set_type(edge, type)
    _set_scope(edge, scope)
    _set_props(edge, props)
    _set_valid_from(edge, valid_from)
    _set_valid_to(edge, valid_to)
    _set_created_at(edge, created_at)
    _set_src_pk(edge, src_pk)
    _set_dst_pk(edge, dst_pk)
    return edge


# `Node`'s slots (a node view's), written directly by `node_of` (the order of its fields).
_set_v_pk, _set_v_id, _set_v_scope, _set_v_label, _set_v_props, _set_v_created_at, _set_v_updated_at = (
    getattr(Node, f.name).__set__ for f in fields(Node)
)


def node_of(pk: int, id: str, scope: str, label: str, props: Props, created_at: int, updated_at: int) -> Node:
    """`Node(...)` of these fields, made as `edge_of` makes an edge: without the frozen
    dataclass's `__init__` (a traversal builds a view of every node it reaches). `Node` has
    no defaults and no `__post_init__` to skip."""
    node = _new(Node)
    _set_v_pk(node, pk)
    _set_v_id(node, id)
    _set_v_scope(node, scope)
    _set_v_label(node, label)
    _set_v_props(node, props)
    _set_v_created_at(node, created_at)
    _set_v_updated_at(node, updated_at)
    return node


# `Memory`'s and `Entity`'s slots, written directly by `memory_of` and `entity_of`.
_MEMORY_SLOTS = tuple(getattr(Memory, f.name).__set__ for f in fields(Memory))
_ENTITY_SLOTS = tuple(getattr(Entity, f.name).__set__ for f in fields(Entity))
(
    _set_m_pk,
    _set_m_id,
    _set_m_scope,
    _set_m_content,
    _set_m_hash,
    _set_m_tags,
    _set_m_importance,
    _set_m_memory_type,
    _set_m_summary,
    _set_m_props,
    _set_m_created_at,
    _set_m_updated_at,
    _set_m_access_count,
    _set_m_last_accessed_at,
    _set_m_archived_at,
) = _MEMORY_SLOTS
(
    _set_n_pk,
    _set_n_id,
    _set_n_scope,
    _set_n_name,
    _set_n_entity_type,
    _set_n_observations,
    _set_n_props,
    _set_n_created_at,
    _set_n_updated_at,
    _set_n_extra,
) = _ENTITY_SLOTS


def memory_of(
    pk: int,
    id: str,
    scope: str,
    content: str,
    hash: str,
    tags: tuple[str, ...],
    importance: int,
    memory_type: str,
    summary: str | None,
    props: Props,
    created_at: int,
    updated_at: int,
    access_count: int,
    last_accessed_at: int | None,
    archived_at: int | None,
) -> Memory:
    """`Memory(...)` of every field, made as `edge_of` makes an edge (a walk or a search
    builds dozens a call; `Memory` has no `__post_init__` to skip)."""
    memory = _new(Memory)
    _set_m_pk(memory, pk)
    _set_m_id(memory, id)
    _set_m_scope(memory, scope)
    _set_m_content(memory, content)
    _set_m_hash(memory, hash)
    _set_m_tags(memory, tags)
    _set_m_importance(memory, importance)
    _set_m_memory_type(memory, memory_type)
    _set_m_summary(memory, summary)
    _set_m_props(memory, props)
    _set_m_created_at(memory, created_at)
    _set_m_updated_at(memory, updated_at)
    _set_m_access_count(memory, access_count)
    _set_m_last_accessed_at(memory, last_accessed_at)
    _set_m_archived_at(memory, archived_at)
    return memory


def entity_of(
    pk: int,
    id: str,
    scope: str,
    name: str,
    entity_type: str,
    observations: tuple[str, ...],
    props: Props,
    created_at: int,
    updated_at: int,
    extra: Mapping[str, Any],
) -> Entity:
    """`Entity(...)` of every field, made as `edge_of` makes an edge (a walk builds dozens
    a call; `Entity` has no `__post_init__` to skip)."""
    entity = _new(Entity)
    _set_n_pk(entity, pk)
    _set_n_id(entity, id)
    _set_n_scope(entity, scope)
    _set_n_name(entity, name)
    _set_n_entity_type(entity, entity_type)
    _set_n_observations(entity, observations)
    _set_n_props(entity, props)
    _set_n_created_at(entity, created_at)
    _set_n_updated_at(entity, updated_at)
    _set_n_extra(entity, extra)
    return entity


# `Relation`'s slots, written directly by `relation_of` (the order of its fields).
(
    _set_from_name,
    _set_to_name,
    _set_relation_type,
    _set_relation_pk,
    _set_relation_src_pk,
    _set_relation_dst_pk,
    _set_relation_extra,
) = (getattr(Relation, f.name).__set__ for f in fields(Relation))


def relation_of(
    from_name: str, to_name: str, type: str, pk: int, src_pk: int, dst_pk: int, extra: Mapping[str, Any]
) -> Relation:
    """`Relation(...)` of these fields, the same object, made without the frozen
    dataclass's `__init__`, as `edge_of` makes an edge: a knowledge-graph search at 100,000
    entities reads thousands of relations a call. `Relation` has no `__post_init__`."""
    relation = _new(Relation)
    _set_from_name(relation, from_name)
    _set_to_name(relation, to_name)
    _set_relation_type(relation, type)
    _set_relation_pk(relation, pk)
    _set_relation_src_pk(relation, src_pk)
    _set_relation_dst_pk(relation, dst_pk)
    _set_relation_extra(relation, extra)
    return relation


NewEdgeRow = tuple[str, int, int, str, str, Props, int, int]
"""A new open edge as the store writes it: (id, src pk, dst pk, type, scope, props,
valid_from, created_at)."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Change(Value):
    """One entry of the change log: an operation a committed write performed."""

    seq: int
    at: int
    scope: str | None
    op: str
    target: str | None
    data: Mapping[str, Any]
    actor: str | None = None
    """The name of the grant the change was made under (an access token's name, or
    `jwt:SUBJECT`); None for a change made without one (stdio, the command line, an
    HTTP server without tokens)."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ChangeFilter(Value):
    """Conditions a change-log entry must meet, every one of them; the empty filter admits all."""

    ops: tuple[str, ...] = ()
    """The entry's op is one of these (none: any op)."""
    target: str | None = None
    """The entry is about this node or edge id."""
    actors: tuple[str | None, ...] = ()
    """The entry was made by one of these grants (None: by a change made without one);
    none: by anyone."""
    at_from: int | None = None
    """Made at or after this time (ms)."""
    at_to: int | None = None
    """Made before this time (ms)."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class NewMemory(Value):
    """The fields a caller gives to store a memory."""

    content: str
    tags: tuple[str, ...] = ()
    importance: int = 0
    memory_type: str = "general"
    summary: str | None = None
    props: Props = field(default_factory=dict)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ItemFilter(Value):
    """Conditions an item must meet, every one of them; the empty filter admits every
    item but archived memories.

    Memories and entities share the time range, the type and the property conditions;
    the others are about memories only (an entity never meets them).
    """

    types: tuple[str, ...] = ()
    """A memory's type or an entity's type is one of these (ignoring case)."""
    created_from: int | None = None
    """Created at or after this time (ms)."""
    created_to: int | None = None
    """Created before this time (ms)."""
    props: tuple[tuple[str, Scalar], ...] = ()
    """Each of these properties has this value."""
    tags: tuple[str, ...] = ()
    """A memory with every one of these tags."""
    min_importance: int | None = None
    max_importance: int | None = None
    linked_to: tuple[int, ...] = ()
    """A memory with an open edge, either way, to one of these nodes (pks)."""
    current_only: bool = False
    """Leave out memories that an open `supersedes` edge points at."""
    pks: tuple[int, ...] | None = None
    """Only these items (None: no such restriction)."""
    include_archived: bool = False
    """Admit archived memories too (by default they are left out)."""

    @property
    def memories_only(self) -> bool:
        return bool(self.tags or self.min_importance is not None or self.max_importance is not None or self.linked_to)

    @property
    def narrowing(self) -> bool:
        """Whether it sets a condition past the readable scopes, archiving and superseding:
        `replace(self, include_archived=True, current_only=False) != ItemFilter(include_archived=True)`,
        without building a filter (a search asks several times a call)."""
        return bool(
            self.types
            or self.created_from is not None
            or self.created_to is not None
            or self.props
            or self.tags
            or self.min_importance is not None
            or self.max_importance is not None
            or self.linked_to
            or self.pks is not None
        )


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class StoredMemory(Value):
    """The outcome of storing one memory: the memory and whether it was new."""

    memory: Memory
    is_new: bool


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ItemResult(Value):
    """The outcome of one item of a batch: a value, or the reason it failed."""

    index: int
    value: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class SearchHit(Value):
    """A memory found by a search, with its relevance and how it was made."""

    memory: Memory
    score: float
    components: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class MemoryLink(Value):
    """A relation between two memories, with both endpoints' content hashes."""

    edge: Edge
    from_hash: str
    to_hash: str


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class RelatedMemory(Value):
    """A memory reached from search seeds by following relations."""

    memory: Memory
    depth: int
    score: float


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Recall(Value):
    """Search seeds expanded over relations: memories and the edges between them."""

    memories: tuple[RelatedMemory, ...]
    links: tuple[MemoryLink, ...]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Stats(Value):
    memories: int
    tags: int
    entities: int
    observations: int
    edges: int
    nodes: int
    embeddings: int
    oldest_memory_at: int | None
    newest_memory_at: int | None
    current_seq: int
    size_bytes: int


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class MemoryStats(Value):
    """What memories a set of scopes holds; cheap at any size (kept by counters)."""

    memories: int
    tags: int
    oldest_at: int | None
    newest_at: int | None


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ImportReport(Value):
    written: int
    unchanged: int
    errors: tuple[str, ...]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Token(Value):
    """An access token for the HTTP server, as stored: never the token itself."""

    id: str
    name: str
    read_scopes: tuple[str, ...]
    """The scopes its holder may read; every scope it may write is among them."""
    write_scope: str
    """Where its holder's writes go when a call names no scope; one of `read_scopes`, and of
    `write_scopes` unless the token is read-only."""
    write_scopes: tuple[str, ...]
    """The scopes its holder may write (create, change, relate, close, delete in); none for
    a read-only token."""
    created_at: int
    revoked_at: int | None = None

    @property
    def read_only(self) -> bool:
        return not self.write_scopes
