"""The property graph: nodes with a label and scalar properties, typed temporal edges,
vectors, an index spec, and atomic batches of commands.

This is the engine API behind the topodb profile. It sees every node of the store: a
memory is a `Memory` node whose `content` property is the memory's text, an entity an
`Entity` node whose `name` property is its name, and any other label a client uses is
a plain node with properties.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from mnemodb.engine.graph import NewEntity
from mnemodb.model import ops
from mnemodb.model.checks import check_props, check_query, check_text
from mnemodb.model.errors import Conflict, InvalidArgument
from mnemodb.model.history import as_node, replay
from mnemodb.model.ids import SHARED, content_hash, new_ulid, new_ulids
from mnemodb.model.records import ENTITY, MEMORY, Direction, Edge, ItemFilter, NewMemory, Node, Scalar
from mnemodb.model.rules import MEMORY_FIELDS, fits_memory_field
from mnemodb.model.value import Value
from mnemodb.search.analyzer import words

if TYPE_CHECKING:
    import numpy as np

    from mnemodb.engine.engine import Engine
    from mnemodb.engine.writes import NewEdges
    from mnemodb.store.base import NodeKey, ReadTx, VectorHit, WriteTx

# A ranked hit: (pk, score) first.
_Hit = TypeVar("_Hit", bound=tuple[int, float])

__all__ = [
    "DEFAULT_SPEC",
    "CloseEdge",
    "Command",
    "CreateNode",
    "IndexSpec",
    "Link",
    "PropertyGraph",
    "Ref",
    "RemoveNode",
    "SetEmbedding",
    "SetProps",
]

SPEC_META_KEY = "index_spec"
MAX_HOPS = 4


# -- the index spec ------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False, repr=False)
class IndexSpec(Value):
    """Which (label, property) pairs are looked up by exact value, and which are searched as text."""

    equality: tuple[tuple[str, str], ...] = ()
    text: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        # Kept sorted, so that two specs listing the same pairs are equal.
        object.__setattr__(self, "equality", tuple(sorted(self.equality)))
        object.__setattr__(self, "text", tuple(sorted(self.text)))
        for pairs in (self.equality, self.text):
            if len(set(pairs)) != len(pairs):
                label, prop = next(p for p in pairs if pairs.count(p) > 1)
                raise InvalidArgument(f"duplicate index declaration for ({label}, {prop})")

    def to_json(self) -> dict[str, Any]:
        return {
            "equality": [{"label": label, "prop": prop} for label, prop in sorted(self.equality)],
            "text": [{"label": label, "prop": prop} for label, prop in sorted(self.text)],
        }

    @classmethod
    def from_json(cls, data: Any) -> IndexSpec:
        """Parse `{"equality": [{"label", "prop"}], "text": [...]}`: both lists are required,
        other keys are ignored. InvalidArgument says what is wrong."""
        if not isinstance(data, dict):
            raise InvalidArgument("an index spec is a JSON object with `equality` and `text` lists")

        def pairs(name: str) -> tuple[tuple[str, str], ...]:
            if name not in data:
                raise InvalidArgument(f"missing field `{name}`")
            items = data[name]
            if not isinstance(items, list):
                raise InvalidArgument(f"`{name}` must be a list of {{label, prop}} objects")
            out = []
            for item in items:
                if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in ("label", "prop")):
                    raise InvalidArgument(f"every `{name}` entry is an object with string `label` and `prop`")
                out.append((item["label"], item["prop"]))
            return tuple(out)

        return cls(pairs("equality"), pairs("text"))

    def text_props(self, label: str) -> list[str]:
        return [prop for lab, prop in self.text if lab == label]


DEFAULT_SPEC = IndexSpec(equality=(("Entity", "name"),), text=(("Memory", "content"),))


# -- batch commands --------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False, repr=False)
class Ref(Value):
    """The id produced by an earlier command of the same batch (0-based)."""

    index: int


NodeRef = str | Ref


@dataclass(frozen=True, eq=False, repr=False)
class CreateNode(Value):
    label: str
    props: Mapping[str, Scalar] = field(default_factory=dict)
    scope: str | None = None


@dataclass(frozen=True, eq=False, repr=False)
class Link(Value):
    src: NodeRef
    dst: NodeRef
    edge_type: str
    props: Mapping[str, Scalar] = field(default_factory=dict)
    scope: str | None = None
    valid_from: int | None = None


@dataclass(frozen=True, eq=False, repr=False)
class SetProps(Value):
    node: NodeRef
    props: Mapping[str, Scalar | None]


@dataclass(frozen=True, eq=False, repr=False)
class RemoveNode(Value):
    node: NodeRef


@dataclass(frozen=True, eq=False, repr=False)
class CloseEdge(Value):
    edge: NodeRef
    valid_to: int | None = None


@dataclass(frozen=True, eq=False, repr=False)
class SetEmbedding(Value):
    node: NodeRef
    model: str
    vector: tuple[float, ...]


Command = CreateNode | Link | SetProps | RemoveNode | CloseEdge | SetEmbedding


class CommandFailed(InvalidArgument):
    """A batch command was refused. The parts let a profile word it its own way: `op` is the
    operation (CreateNode, CreateEdge, SetNodeProps, RemoveNode, CloseEdge, SetEmbedding),
    `subject` the node or edge id at fault and `subject_kind` which of the two it is, `end`
    which endpoint of a new edge (`from` or `to`), `edge` the id a new edge would have had,
    and `reason` what is wrong (`not found`, `already closed`, or a sentence)."""

    def __init__(
        self,
        op: str,
        reason: str,
        *,
        subject: str | None = None,
        subject_kind: str | None = None,
        end: str | None = None,
        edge: str | None = None,
    ) -> None:
        what = f"{end} " if end else ""
        about = f"{what}{subject_kind} {subject} {reason}" if subject else reason
        super().__init__(f"{op}: {about}")
        self.op = op
        self.reason = reason
        self.subject = subject
        self.subject_kind = subject_kind
        self.end = end
        self.edge = edge


class PropertyGraph:
    """Nodes, edges, vectors and batches, addressed by ULID."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._spec: IndexSpec | None = None
        self._text_seq = -1

    # -- the spec --------------------------------------------------------------------------------

    @property
    def spec(self) -> IndexSpec:
        if self._spec is not None:
            return self._spec
        with self._engine.store.read() as tx:
            return self._spec_in(tx)

    def _spec_in(self, tx: ReadTx) -> IndexSpec:
        """The spec, read through `tx` if not known yet: inside a write another transaction
        cannot begin where reads share the writer's connection (an in-memory store)."""
        if self._spec is None:
            stored = tx.get_meta(SPEC_META_KEY)
            self._spec = IndexSpec.from_json(json.loads(stored)) if stored else DEFAULT_SPEC
        return self._spec

    def use_spec(self, spec: IndexSpec | None) -> IndexSpec:
        """Take `spec` (stored, and indexes rebuilt if it differs), or keep the stored one
        (the default for a new store)."""
        with self._engine.change() as tx:
            stored = tx.get_meta(SPEC_META_KEY)
            current = IndexSpec.from_json(json.loads(stored)) if stored else None
            chosen = spec or current or DEFAULT_SPEC
            if chosen != current:
                tx.set_meta(SPEC_META_KEY, json.dumps(chosen.to_json(), separators=(",", ":")))
            for label, prop in chosen.equality:
                tx.ensure_prop_index(label, prop)
            if chosen != current:
                self._reindex_text(tx, chosen)
                tx.set_meta("node_text_seq", str(tx.current_seq()))
        self._spec = chosen
        self._text_seq = -1
        return chosen

    # -- node text (declared text properties other than a memory's content) -------------------

    def _text_of(self, node: Node, spec: IndexSpec) -> str | None:
        props = [p for p in spec.text_props(node.label) if not (node.label == MEMORY and p == "content")]
        parts = [node.props[p] for p in props if isinstance(node.props.get(p), str)]
        return " ".join(str(p) for p in parts) or None

    def _reindex_text(self, tx: WriteTx, spec: IndexSpec) -> None:
        tx.clear_node_text()
        labels = sorted({label for label, _ in spec.text})
        pks = tx.node_pks_with_labels(labels)
        for start in range(0, len(pks), 500):
            for pk, node in tx.node_views(pks[start : start + 500]).items():
                tx.set_node_text(pk, self._text_of(node, spec))

    def _catch_up_text(self) -> None:
        """Index declared text of nodes any profile changed since the last search."""
        spec = self.spec
        with self._engine.store.read() as tx:
            seq = tx.current_seq()
            if seq == self._text_seq:
                return
            indexed = int(tx.get_meta("node_text_seq") or 0)
        if indexed >= seq:
            self._text_seq = seq
            return
        labels = {label for label, _ in spec.text}
        with self._engine.upkeep() as tx:
            indexed = int(tx.get_meta("node_text_seq") or 0)
            changed: dict[str, None] = {}
            for change in tx.changes(indexed + 1, None):
                if change.target and change.op in (ops.CREATE_NODE, ops.UPDATE_NODE, ops.SET_PROPS):
                    changed.setdefault(change.target, None)
            for node_id in changed:
                node = tx.node_view_by_id(node_id)
                if node is not None and node.label in labels:
                    tx.set_node_text(node.pk, self._text_of(node, spec))
            current = tx.current_seq()
            tx.set_meta("node_text_seq", str(current))
        self._text_seq = current

    # -- reads -----------------------------------------------------------------------------------

    def _visible(self, node: Node | None, reads: Sequence[str]) -> Node | None:
        return node if node is not None and node.scope in reads else None

    def get_node(self, node_id: str, *, scopes: Sequence[str] | None = None, as_of: int | None = None) -> Node | None:
        """The node (None when absent or outside the scopes); with `as_of`, as it was then."""
        reads = self._engine.scopes(scopes)
        with self._engine.store.read() as tx:
            node = tx.node_view_by_id(node_id)
            if as_of is not None and (node is None or node.updated_at > as_of or node.created_at > as_of):
                node = self._node_at(tx, node_id, as_of, node)
        found = self._visible(node, reads)
        if found is not None and as_of is None:
            self._engine.record_access([found.pk])
        return found

    def _node_at(self, tx: ReadTx, node_id: str, at: int, current: Node | None) -> Node | None:
        """A node rebuilt from its change-log entries up to `at` (None if it did not exist
        then), by the one replay (`model.history`)."""
        created_at = current.created_at if current is not None else None
        past = replay(tx.changes_of(node_id), at, created_at=created_at)
        return None if past is None else as_node(past, current.pk if current is not None else 0)

    def find_by_prop(
        self,
        label: str,
        prop: str,
        value: str | int | bool | float,
        *,
        scopes: Sequence[str] | None = None,
        include_archived: bool = False,
    ) -> list[Node]:
        """Nodes whose equality-indexed property has exactly this value (type included);
        archived memories only with `include_archived`."""
        if (label, prop) not in self.spec.equality:
            raise InvalidArgument(f"({label}, {prop}) is not equality-indexed")
        if isinstance(value, float):
            raise InvalidArgument("Float values are not equality-indexable")
        reads = self._engine.scopes(scopes)
        with self._engine.store.read() as tx:
            pks = tx.nodes_with_prop(label, prop, value, reads)
            if not include_archived:
                archived = self._archived(tx, pks, reads)
                pks = [pk for pk in pks if pk not in archived]
            views = tx.node_views(pks)
        # The store gives candidates; the node as every face shows it decides.
        found = [
            views[pk]
            for pk in pks
            if pk in views and _same(views[pk].props.get(prop), value) and views[pk].scope in reads
        ]
        self._engine.record_access(n.pk for n in found)
        return found

    def search_text(
        self, query: str, *, k: int = 10, scopes: Sequence[str] | None = None, include_archived: bool = False
    ) -> list[tuple[Node, float]]:
        """Nodes whose text-indexed properties match the query's words, best first (BM25);
        archived memories only with `include_archived`."""
        if k <= 0:
            raise InvalidArgument("text search requires k > 0")
        terms = list(dict.fromkeys(words(check_query(query))))
        if not terms:
            raise InvalidArgument("query has no searchable terms")
        reads = self._engine.scopes(scopes)
        spec = self.spec
        # Declared text other than a memory's content: without any (the default spec), the
        # node text index is empty and is not searched.
        declared = any(not (label == MEMORY and prop == "content") for label, prop in spec.text)
        if declared:
            self._catch_up_text()
        ranked: list[tuple[float, str, int]] = []
        with self._engine.store.read() as tx:
            if (MEMORY, "content") in spec.text:
                for hit in tx.search_text(terms, reads, k, content_only=True, include_archived=include_archived):
                    ranked.append((hit.score, "", hit.pk))
            if declared:
                for pk, score in self._unarchived(
                    lambda n: tx.node_text_search(terms, reads, n), k, tx, reads, include_archived
                ):
                    ranked.append((score, "", pk))
            views = tx.node_views([pk for _, _, pk in ranked])
        best: dict[int, float] = {}
        for score, _, pk in ranked:  # a memory may match in both indexes: keep its better score
            if pk in views and score > best.get(pk, -1.0):
                best[pk] = score
        hits = sorted(((score, views[pk]) for pk, score in best.items()), key=lambda h: (-h[0], h[1].id))[:k]
        self._engine.record_access(node.pk for _, node in hits)
        return [(node, score) for score, node in hits]

    def traverse(
        self,
        seed_id: str,
        *,
        max_hops: int = 2,
        direction: Direction = "both",
        edge_types: Sequence[str] | None = None,
        scopes: Sequence[str] | None = None,
        as_of: int | None = None,
    ) -> tuple[list[Node], list[Edge]]:
        """The nodes and edges within `max_hops` of a node over edges valid at the time."""
        if not 1 <= max_hops <= MAX_HOPS:
            raise InvalidArgument(f"max_hops must be in 1..={MAX_HOPS}, got {max_hops}")
        reads = self._engine.scopes(scopes)
        at = self._engine.clock() if as_of is None else as_of
        with self._engine.store.read() as tx:
            # An empty type filter admits no edge: the seed alone. Otherwise the seed and
            # the first hop are read together, a statement less (the hop is dropped when
            # the seed is not to be seen).
            first: list[tuple[Edge, Node]] = []
            if edge_types is None or edge_types:
                seed, first = tx.edges_reached_from_id(
                    seed_id, direction, valid_at=at, scopes=reads, edge_types=edge_types
                )
            else:
                seed = tx.node_view_by_id(seed_id)
            if seed is None or seed.scope not in reads or seed.created_at > at:
                return [], []
            visited: dict[int, int] = {seed.pk: 0}
            followed: dict[int, Edge] = {}
            # Each hop is one read of the edges with the views of the nodes they reach: a
            # node's scope and birth decide whether it is entered, and the reply is made of
            # the same views (an edge read, then a view read, cost a statement more a hop).
            views: dict[int, Node] = {seed.pk: seed}
            frontier = [seed.pk] if edge_types is None or edge_types else []
            # Both ways, every edge of a node the walk has left (visited before this hop's
            # frontier) was followed when it was left: the edges that lead back to such a
            # node are not read again, with the views of their ends (a fifth of a 2-hop
            # traversal's rows in a tree, each leading back to the seed).
            left: list[int] = []
            for hop in range(1, max_hops + 1):
                if not frontier:
                    break
                next_frontier: list[int] = []
                if hop == 1:
                    reached = first
                else:
                    ends = {pk: views[pk].id for pk in frontier}  # each entered, so visible
                    reached = tx.edges_reached(
                        ends, direction, valid_at=at, scopes=reads, edge_types=edge_types, leaving_out=left
                    )
                for edge, view in reached:
                    pk = view.pk
                    if view.scope not in reads or (as_of is not None and view.created_at > at):
                        continue
                    followed.setdefault(edge.pk, edge)
                    views.setdefault(pk, view)
                    if pk not in visited:
                        visited[pk] = hop
                        next_frontier.append(pk)
                if direction == "both":
                    left += frontier
                frontier = next_frontier
            nodes = [views[pk] for pk in visited]
            if as_of is not None:
                nodes = [self._node_at(tx, n.id, at, n) or n if n.updated_at > at else n for n in nodes]
        if as_of is None:
            self._engine.record_access(n.pk for n in nodes)
        return nodes, list(followed.values())

    def access_stats(self, node_id: str, *, scopes: Sequence[str] | None = None) -> tuple[int, int] | None:
        """(times read, last read in ms) for a node; (0, 0) if never read; None when not visible."""
        reads = self._engine.scopes(scopes)
        with self._engine.store.read() as tx:
            node = tx.node_by_id(node_id)
            if node is None or node.scope not in reads:
                return None
            return tx.access_of(node.pk)

    def search_vectors(
        self,
        model: str,
        vector: Sequence[float],
        *,
        k: int = 10,
        candidates: Sequence[str] | None = None,
        scopes: Sequence[str] | None = None,
        include_archived: bool = False,
        exact: bool = False,
    ) -> list[tuple[Node, float]]:
        """Nodes whose `model` embedding is most similar (cosine) to `vector`; archived
        memories only with `include_archived`. Above a store's own size the nearest few
        are found through an index, most of the time (recall@10 about 0.98); `exact` scores
        every vector instead."""
        reads = self._engine.scopes(scopes)
        with self._engine.store.read() as tx:
            picked = self._unarchived(
                lambda n: self.nearest(tx, model, vector, k=n, candidates=candidates, scopes=reads, exact=exact),
                k,
                tx,
                reads,
                include_archived,
            )
            views = tx.node_views([pk for pk, _ in picked])
        hits = [(views[pk], score) for pk, score in picked if pk in views]
        self._engine.record_access(node.pk for node, _ in hits)
        return hits

    def _archived(self, tx: ReadTx, pks: Sequence[int], reads: Sequence[str]) -> set[int]:
        """The archived memories among these nodes."""
        memories = [pk for pk, (label, _) in tx.labels_of(list(pks)).items() if label == MEMORY]
        if not memories:
            return set()
        return set(memories) - tx.admitted(memories, "memory", ItemFilter(), self._engine.clock(), reads)

    def _unarchived(
        self,
        best: Callable[[int], Sequence[_Hit]],
        k: int,
        tx: ReadTx,
        reads: Sequence[str],
        include_archived: bool,
    ) -> list[_Hit]:
        """The `k` best of `best(n)` (a ranking's first n hits) once archived memories are
        left out (unless `include_archived`): a wider ranking is asked for while they took
        places and it had more to give."""
        want = k
        while True:
            hits = best(want)
            if include_archived:
                return list(hits)
            archived = self._archived(tx, [hit[0] for hit in hits], reads)
            kept = [hit for hit in hits if hit[0] not in archived]
            if len(kept) >= k or len(hits) < want:
                return kept[:k]
            want *= 4

    def nearest(
        self,
        tx: ReadTx,
        model: str,
        vector: Sequence[float],
        *,
        k: int,
        candidates: Sequence[str] | None = None,
        scopes: Sequence[str],
        exact: bool = False,
    ) -> list[VectorHit]:
        """The `k` nodes nearest to `vector` under `model` (cosine), inside a read; through
        the store's index unless `exact`."""
        if k <= 0 or not vector:
            raise InvalidArgument("vector search requires k > 0 and a non-empty query vector")
        query = _f32_vector(vector).tolist()
        return self._engine.store.vectors.nearest(
            tx, model, query, k=k, scopes=scopes, candidates=candidates, exact=exact
        )

    # -- writes ------------------------------------------------------------------------------------

    def submit(self, commands: Sequence[Command]) -> tuple[list[str | None], int]:
        """Run commands in order in one transaction: all commit, or none (the error says which
        failed). Returns the id each produced (None for those producing none) and the last seq."""
        if not commands:
            raise InvalidArgument("empty op batch")
        _check_embeddings(commands)
        produced: list[str | None] = []
        # The ends the batch's links name by id, read together up front (a node a command
        # removes is dropped from them); those named by back-reference are read one by one.
        named = [ref for c in commands if isinstance(c, Link) for ref in (c.src, c.dst) if isinstance(ref, str)]
        with self._engine.change() as tx:
            at = self._engine.clock()
            link_ends = tx.node_keys_by_ids(named) if named else None
            seq = 0
            # A run of links is checked link by link and written, with its log entries,
            # before the next other command (or at the end): the log's order.
            links = self._engine.writes.new_edges(tx)
            # The ids of a run of links, made together as the run starts (last first): ids
            # follow the order the batch makes them in, as one by one.
            link_ids: list[str] = []
            for i, command in enumerate(commands):
                if not isinstance(command, Link):
                    if links:
                        seq = self._write_links(tx, links, at)
                elif not link_ids:
                    run = next((j for j in range(i, len(commands)) if not isinstance(commands[j], Link)), len(commands))
                    link_ids = new_ulids(run - i)[::-1]
                new_id, seq = self._run(tx, command, produced, at, seq, links, link_ends, link_ids)
                produced.append(new_id)
            if links:
                seq = self._write_links(tx, links, at)
        return produced, seq

    def _write_links(self, tx: WriteTx, links: NewEdges, at: int) -> int:
        """Write the links `links` holds, with their log entries: the seq of the last."""
        logged: list[ops.Op] = []
        links.write(logged, edges=False)  # a batch tells of its links by id
        return self._engine.log_many(tx, logged, at)

    def _resolve(self, ref: NodeRef, produced: Sequence[str | None]) -> str:
        if isinstance(ref, Ref):
            if not 0 <= ref.index < len(produced):
                raise InvalidArgument(f"back-reference #{ref.index} must point to an earlier command")
            value = produced[ref.index]
            if value is None:
                raise InvalidArgument(f"back-reference #{ref.index} refers to a command that produces no id")
            return value
        return ref

    def _node(self, tx: WriteTx, ref: NodeRef, produced: Sequence[str | None], op: str) -> Node:
        node_id = self._resolve(ref, produced)
        # The node's row only: every command reads its key, label and scope, none the
        # properties a view adds (a memory's text, an entity's name).
        node = tx.node_by_id(node_id)
        # Under a token's grant, a node of a scope it may not use does not exist for it (the
        # same answer as for an id nobody has, so the id's existence is not told either).
        if node is None or self._engine.hidden(node.scope):
            raise CommandFailed(op, "not found", subject=node_id, subject_kind="node")
        return node

    def _link_end(
        self,
        tx: WriteTx,
        ref: NodeRef,
        produced: Sequence[str | None],
        end: str,
        edge: str,
        known: Mapping[str, NodeKey] | None,
    ) -> Node | NodeKey:
        """`_node` of a link's end: read with the batch's others (`known`: a node missing
        there is missing), as its key only, unless named by back-reference."""
        node_id = self._resolve(ref, produced)
        node = tx.node_by_id(node_id) if known is None or isinstance(ref, Ref) else known.get(node_id)
        if node is None or self._engine.hidden(node.scope):
            raise CommandFailed("CreateEdge", "not found", subject=node_id, subject_kind="node", end=end, edge=edge)
        return node

    def apply(self, tx: WriteTx, command: Command, at: int) -> str | None:
        """Run one command inside the caller's transaction (no back-references): the id it made."""
        if isinstance(command, SetEmbedding):
            _check_embeddings([command])
        links = self._engine.writes.new_edges(tx)
        new_id, _ = self._run(tx, command, [], at, 0, links)
        if links:
            self._write_links(tx, links, at)
        return new_id

    def apply_props(self, tx: WriteTx, node_id: str, props: Mapping[str, Scalar | None], at: int) -> None:
        """Set (and, for None, remove) properties of a node inside the caller's transaction."""
        self.apply(tx, SetProps(node_id, props), at)

    def _run(
        self,
        tx: WriteTx,
        command: Command,
        produced: Sequence[str | None],
        at: int,
        seq: int,
        links: NewEdges,
        link_ends: dict[str, NodeKey] | None = None,
        link_ids: list[str] | None = None,
    ) -> tuple[str | None, int]:
        """Run one command: the id it made and the seq of its last log entry. `link_ends` holds
        the nodes the batch's links name by id, read before it ran, and `link_ids` the ids
        the rest of the run of links it is in takes, last first. A link is checked and added to `links`, for the
        caller to write with the rest of its run (the seq returned for it is `seq`)."""
        engine = self._engine
        match command:
            case CreateNode(label=label, props=props, scope=scope):
                target = engine.scope_to_write(scope)
                return self._create(tx, check_text(label, "label"), check_props(props), target, at)
            case Link(src=src, dst=dst, edge_type=edge_type, props=props, scope=scope, valid_from=valid_from):
                if not check_text(edge_type, "edge type"):
                    raise InvalidArgument("edge type must not be empty")
                props = check_props(props)
                edge_id = link_ids.pop() if link_ids else new_ulid()
                a = self._link_end(tx, src, produced, "from", edge_id, link_ends)
                b = self._link_end(tx, dst, produced, "to", edge_id, link_ends)
                if a.scope != b.scope and SHARED not in (a.scope, b.scope):
                    raise CommandFailed(
                        "CreateEdge", "cross-scope edge requires at least one Shared endpoint", edge=edge_id
                    )
                start = at if valid_from is None else valid_from
                edge_scope = engine.scope_to_write(scope)
                links.add(
                    a.pk,
                    b.pk,
                    a.scope,
                    b.scope,
                    edge_type,
                    edge_scope,
                    dict(props),
                    start,
                    at,
                    edge_id=edge_id,
                    end_ids=(a.id, b.id),
                )
                return edge_id, seq
            case SetProps(node=ref, props=props):
                props = {
                    **check_props({k: v for k, v in props.items() if v is not None}),
                    **{check_text(k, "property name"): None for k, v in props.items() if v is None},
                }
                node = self._node(tx, ref, produced, "SetNodeProps")
                return None, self._set_props(tx, node, props, at)
            case RemoveNode(node=ref):
                node = self._node(tx, ref, produced, "RemoveNode")
                if link_ends is not None:
                    link_ends.pop(node.id, None)
                return None, self._engine.writes.remove_node(tx, node, at)
            case CloseEdge(edge=ref, valid_to=valid_to):
                edge_id = self._resolve(ref, produced)
                edge = tx.edge_by_id(edge_id)
                ends = tx.labels_of([edge.src_pk, edge.dst_pk]).values() if edge is not None else ()
                if edge is None or self._engine.hidden(edge.scope, [scope for _, scope in ends]):
                    raise CommandFailed("CloseEdge", "not found", subject=edge_id, subject_kind="edge")
                if edge.valid_to is not None:
                    raise CommandFailed("CloseEdge", "already closed", subject=edge_id, subject_kind="edge")
                end = at if valid_to is None else valid_to
                return None, self._engine.writes.close_edge(tx, edge, end, at)
            case SetEmbedding(node=ref, model=model, vector=vector):
                check_text(model, "model")
                node = self._node(tx, ref, produced, "SetEmbedding")
                values = _f32_vector(vector)
                if not values.size:
                    raise InvalidArgument(f"embedding for model {_quoted(model)} must have at least one dimension")
                # The length is the model's while other nodes hold vectors of it.
                dim = tx.embedding_dim(model, excluding=node.pk)
                if dim is not None and dim != values.size:
                    raise InvalidArgument(
                        f"embedding dim {values.size} does not match existing slab dim {dim} for model {_quoted(model)}"
                    )
                tx.delete_embeddings(node.pk)  # one vector per node: a new model replaces the old
                blob = values.astype("<f4").tobytes()
                tx.set_embedding(node.pk, model, blob, int(values.size), at)
                return None, self._engine.log(tx, ops.embedding_set(node.scope, node.id, model, blob), at)
        raise InvalidArgument(f"unknown command {command!r}")

    def _create(self, tx: WriteTx, label: str, props: Mapping[str, Scalar], scope: str, at: int) -> tuple[str, int]:
        engine = self._engine
        if label == MEMORY:
            content = props.get("content")
            if not isinstance(content, str):
                raise InvalidArgument("a Memory node needs a string `content` property")
            fields = {k: v for k, v in props.items() if k in MEMORY_FIELDS and fits_memory_field(k, v)}
            rest = {k: v for k, v in props.items() if k != "content" and k not in fields}
            summary = fields.get("summary")
            item = engine.writes.check_new_memory(
                NewMemory(
                    content,
                    importance=int(fields.get("importance", 0)),
                    memory_type=str(fields.get("memory_type", "general")),
                    summary=summary if isinstance(summary, str) else None,
                    props=rest,
                )
            )
            existing = tx.memory_pk(scope, content_hash(content))
            if existing is not None:
                # The same text in one scope is one memory: its id comes back.
                node = tx.node_views([existing])[existing]
                return node.id, tx.current_seq()
            stored = engine.writes.store_memory(tx, item, scope, at)
            return stored.memory.id, tx.current_seq()
        if label == ENTITY:
            name = props.get("name")
            if not isinstance(name, str) or not name:
                raise InvalidArgument("an Entity node needs a non-empty string `name` property")
            same = tx.entities_named([scope], [name]).get(name)
            if same is not None:
                # One name in one scope is one entity (the knowledge-graph face addresses
                # entities by name): its id comes back.
                return same.id, tx.current_seq()
            kind = props.get("entityType")
            typed = isinstance(kind, str)
            rest = {k: v for k, v in props.items() if k != "name" and not (k == "entityType" and typed)}
            entity = engine.writes.insert_entity(tx, NewEntity(name, str(kind) if typed else ""), scope, at, rest)
            return entity.id, tx.current_seq()
        node_id = new_ulid()
        tx.insert_node(node_id, scope, label, dict(props), at)
        seq = self._engine.log(tx, (scope, ops.CREATE_NODE, node_id, ops.node_record(node_id, scope, label, props)), at)
        return node_id, seq

    def _set_props(self, tx: WriteTx, node: Node, props: Mapping[str, Scalar | None], at: int) -> int:
        """Set and remove properties. A memory's content and an entity's name must stay
        strings; a memory's importance, type and summary and an entity's type go to their
        own fields when the value fits them (otherwise the field is cleared and the value
        kept as a plain property), and removing one clears it."""
        stored = tx.node_by_id(node.id)
        assert stored is not None
        own = dict(stored.props)
        memory: dict[str, Any] = {}
        for key, value in props.items():
            if node.label == MEMORY and key == "content":
                if not isinstance(value, str) or not value:
                    raise InvalidArgument("a memory's content must be a non-empty string (it cannot be removed)")
                clash = tx.memory_pk(node.scope, content_hash(value))
                if clash is not None and clash != node.pk:
                    raise Conflict("Content already exists as another memory")
                memory.update(content=value, hash=content_hash(value))
                continue
            if node.label == ENTITY and key == "name":
                if not isinstance(value, str) or not value:
                    raise InvalidArgument("an entity's name must be a non-empty string (it cannot be removed)")
                tx.rename_entity(node.pk, name=value)
                continue
            fits = value is not None and fits_memory_field(key, value)
            if node.label == MEMORY and key in MEMORY_FIELDS:
                memory[key] = value if fits else MEMORY_FIELDS[key]
            elif node.label == ENTITY and key == "entityType":
                tx.rename_entity(node.pk, entity_type=str(value) if fits else "")
            else:
                fits = False
            if value is None or fits:
                own.pop(key, None)
            else:
                own[key] = value
        if memory:
            tx.update_memory(node.pk, memory)
        tx.replace_node_props(node.pk, own, at)
        spec = self._spec_in(tx)
        if node.label in {label for label, _ in spec.text}:
            after = tx.node_views([node.pk])[node.pk]
            tx.set_node_text(node.pk, self._text_of(after, spec))
        return self._engine.log(tx, ops.props_set(node.scope, node.id, props), at)


def _check_embeddings(commands: Sequence[Command]) -> None:
    """Refuse a batch whose embeddings are empty or disagree on a model's dimension, before
    anything runs."""
    dims: dict[str, int] = {}
    for command in commands:
        if isinstance(command, SetEmbedding):
            size = len(command.vector)
            if not size:
                raise InvalidArgument(f"embedding for model {_quoted(command.model)} must have at least one dimension")
            first = dims.setdefault(command.model, size)
            if first != size:
                raise InvalidArgument(
                    f"inconsistent embedding dim for model {_quoted(command.model)} within batch: {first} vs {size}"
                )


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _f32_vector(values: Sequence[float]) -> np.ndarray[Any, Any]:
    """`values` as float32; InvalidArgument for a value that is not a finite float32."""
    import numpy as np  # here, not at the top: a server that never sees a vector never loads numpy

    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise InvalidArgument("expected a JSON array of numbers")
    with np.errstate(over="ignore"):
        narrowed = array.astype(np.float32)
    bad = np.flatnonzero(~np.isfinite(narrowed))
    if bad.size:
        raise InvalidArgument(f"vector element {int(bad[0])} is not finite")
    return narrowed


def _same(a: Any, b: Any) -> bool:
    """Equal in value and in JSON type (True is not 1)."""
    return type(a) is type(b) and a == b
