"""One write path per primitive: every face that stores a memory, changes or archives
one, creates an entity, adds or removes observations, opens, closes or removes an edge,
or removes a node does it here, inside its own transaction (`Engine.change()`), so each
primitive is checked, written and logged (`Engine.log`) one way whichever face asked for
it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from mnemodb.model import ops
from mnemodb.model.checks import check_props, check_text
from mnemodb.model.errors import InvalidArgument
from mnemodb.model.ids import content_hash, new_ulid, new_ulids
from mnemodb.model.records import (
    ENTITY,
    MEMORY,
    Edge,
    Entity,
    Memory,
    NewEdgeRow,
    NewMemory,
    Node,
    Props,
    StoredMemory,
    edge_of,
)
from mnemodb.model.rules import TURN_CONTEXT_WINDOW_MS, check_edge_ends, check_importance, normalize_tags

if TYPE_CHECKING:
    from mnemodb.engine.engine import Engine
    from mnemodb.engine.graph import NewEntity
    from mnemodb.store.base import WriteTx

__all__ = ["NewEdges", "Writes"]


class Writes:
    """The primitives every face writes through, each inside the caller's transaction."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    # -- memories --------------------------------------------------------------------------------

    def check_new_memory(self, item: NewMemory) -> NewMemory:
        """The item with canonical tags and clean props, or InvalidArgument: checked before any write."""
        content = check_text(item.content, "content")
        if not content:
            raise InvalidArgument("content must not be empty")
        check_importance(item.importance)
        if not check_text(item.memory_type, "memory_type"):
            raise InvalidArgument("memory_type must not be empty")
        if item.summary is not None:
            check_text(item.summary, "summary")
        return replace(item, tags=normalize_tags(item.tags), props=check_props(item.props))

    def store_memory(self, tx: WriteTx, item: NewMemory, scope: str, at: int, *, turn: bool = False) -> StoredMemory:
        """The one way a new memory is written: one item `check_new_memory` passed, inside
        the caller's transaction. Content the scope already holds is the same memory, which
        gets the item's tags. A `turn` is also found by the words of the two turns before it
        (see `Memories.store_many`)."""
        digest = content_hash(item.content)
        existing_pk = tx.memory_pk(scope, digest)
        if existing_pk is not None:
            # Same content, same memory: merge the tags, keep everything else.
            added = tx.add_tags(existing_pk, item.tags)
            if added:
                tx.touch_node(existing_pk, at)
            existing = tx.memory_by_pk(existing_pk)
            assert existing is not None
            if added:
                self._engine.log(tx, ops.tags_added(scope, existing.id, added), at)
            return StoredMemory(existing, False)
        node_id = new_ulid()
        pk = tx.insert_node(node_id, scope, MEMORY, item.props, at)
        context_from = tx.latest_memory(scope, pk, at - TURN_CONTEXT_WINDOW_MS) if turn else None
        tx.insert_memory(
            pk, scope, digest, item.content, item.summary, item.importance, item.memory_type, context_from=context_from
        )
        tx.add_tags(pk, item.tags)
        memory = Memory(
            pk=pk,
            id=node_id,
            scope=scope,
            content=item.content,
            hash=digest,
            tags=item.tags,
            importance=item.importance,
            memory_type=item.memory_type,
            summary=item.summary,
            props=item.props,
            created_at=at,
            updated_at=at,
        )
        self._engine.log(tx, ops.memory_created(memory), at)
        return StoredMemory(memory, True)

    def update_memory(
        self,
        tx: WriteTx,
        memory: Memory,
        at: int,
        *,
        fields: Mapping[str, Any] | None = None,
        tags: Iterable[str] | None = None,
    ) -> None:
        """The one way a memory's own fields (checked by the caller) and its tags change in
        place, inside the caller's transaction: `tags` (normalized) replace the memory's
        when given, and what changed is logged as one update."""
        changes: dict[str, Any] = dict(fields or {})
        tx.update_memory(memory.pk, changes)
        if tags is not None:
            new_tags = normalize_tags(tags)
            if new_tags != memory.tags:
                tx.replace_tags(memory.pk, new_tags)
                changes["tags"] = list(new_tags)
        if changes:
            tx.touch_node(memory.pk, at)
            self._engine.log(tx, ops.node_updated(memory.scope, memory.id, changes), at)

    def set_archived(self, tx: WriteTx, memory: Memory, archived: bool, at: int) -> Memory:
        """The one way a memory is archived (kept, but left out of searches and listings) or
        brought back, inside the caller's transaction; the memory as it is after. A memory
        already in that state is left as it is, unlogged (an archived one keeps its time),
        once the grant in force may change it: a scope it only reads says no either way."""
        self._engine.check_writable(memory.scope)
        if (memory.archived_at is not None) == archived:
            return memory
        tx.set_archived(memory.pk, at if archived else None)
        # Touched like any change, so its time of last change and a read of its past
        # (`model.history`) see it.
        tx.touch_node(memory.pk, at)
        self._engine.log(tx, ops.memory_archived(memory) if archived else ops.memory_unarchived(memory), at)
        after = tx.memory_by_pk(memory.pk)
        assert after is not None
        return after

    # -- edges between any nodes ---------------------------------------------------------------

    def open_edge(
        self,
        tx: WriteTx,
        src: int,
        dst: int,
        src_scope: str,
        dst_scope: str,
        edge_type: str,
        scope: str,
        props: Props,
        valid_from: int,
        at: int,
        *,
        edge_id: str | None = None,
        extra: Mapping[str, Any] | None = None,
        end_ids: tuple[str, str] | None = None,
    ) -> Edge:
        """The one way a caller's relation is written (every face comes here, alone or in
        a batch, `new_edges`): the scope rules, the row, and its change-log entry. Faces that
        word the cross-scope refusal in their own protocol's terms check it first; the check
        here stands either way. A caller that knows the ids of the two ends passes them
        (`end_ids`): the edge is then made from what was written, not read back."""
        edges = self.new_edges(tx)
        edges.add(
            src,
            dst,
            src_scope,
            dst_scope,
            edge_type,
            scope,
            props,
            valid_from,
            at,
            edge_id=edge_id,
            extra=extra,
            end_ids=end_ids,
        )
        return edges.write()[0]

    def new_edges(self, tx: WriteTx) -> NewEdges:
        """A batch of relations to open in `tx`: each checked as it is added, all written
        together (`NewEdges`)."""
        return NewEdges(self._engine, tx)

    def close_edge(self, tx: WriteTx, edge: Edge, valid_to: int, at: int) -> int:
        """Mark an open edge no longer true from `valid_to`; the seq of its log entry."""
        tx.close_edge(edge.pk, valid_to)
        return self._engine.log(tx, ops.edge_closed(edge, valid_to), at)

    def remove_edge(self, tx: WriteTx, edge: Edge, at: int) -> int:
        """Delete an edge, history and all; the seq of its log entry."""
        tx.delete_edge(edge.pk)
        return self._engine.log(tx, ops.edge_removed(edge), at)

    # -- nodes and entities ----------------------------------------------------------------------

    def remove_node(self, tx: WriteTx, node: Memory | Entity | Node, at: int) -> int:
        """Delete a node and, by cascade, the edges touching it, once the grant in force may
        (`Engine.check_deletable`); the seq of its log entry."""
        self._engine.check_deletable(tx, node.pk)
        tx.delete_node(node.pk)
        return self._engine.log(tx, ops.node_removed(node.scope, node.id), at)

    def insert_entity(
        self, tx: WriteTx, item: NewEntity, scope: str, at: int, props: Mapping[str, Any] | None = None
    ) -> Entity:
        """The one way a new entity is written, with its change-log entry. The caller has
        checked that none of its name is there (or, for an import, that one may be)."""
        node_id = new_ulid()
        pk = tx.insert_node(node_id, scope, ENTITY, dict(props or {}), at)
        kept = tx.insert_entity(pk, scope, item.name, item.entity_type, item.extra or None, item.observations, at)
        entity = Entity(
            pk, node_id, scope, item.name, item.entity_type, tuple(kept), dict(props or {}), at, at, dict(item.extra)
        )
        self._engine.log(tx, ops.entity_created(entity), at)
        return entity

    def add_observations(self, tx: WriteTx, entity: Entity, contents: Sequence[str], at: int) -> list[str]:
        """Give an entity the observations it lacks, in order; the ones added."""
        added = tx.add_observations(entity.pk, list(contents), at)
        if added:
            tx.touch_node(entity.pk, at)
            self._engine.log(tx, ops.observations_added(entity, added), at)
        return added

    def remove_observations(self, tx: WriteTx, entity: Entity, contents: Sequence[str], at: int) -> list[str]:
        """Take observations from an entity (those it does not have are ignored); the ones removed."""
        removed = tx.delete_observations(entity.pk, list(contents))
        if removed:
            tx.touch_node(entity.pk, at)
            self._engine.log(tx, ops.observations_removed(entity, removed), at)
        return removed


class NewEdges:
    """Relations a caller opens in one transaction (`Writes.new_edges`): each is checked
    when it is added (`add`), in the caller's order, so a refusal is the one the caller's
    own checks before and after it would meet, and all are written together (`write`), in
    one statement where the store can, with their change-log entries in the same order.
    What is written is what `open_edge` of each in turn would write: a relation costs one
    row of a shared statement, and the scope rules are checked once for each combination
    of scopes (they depend on nothing else)."""

    def __init__(self, engine: Engine, tx: WriteTx) -> None:
        self._engine = engine
        self._tx = tx
        self._ids: list[str | None] = []
        self._rows: list[tuple[int, int, str, str, Props, int, int]] = []
        self._ends: list[tuple[str, str] | None] = []
        self._extras: list[tuple[int, Mapping[str, Any]]] = []
        self._allowed: set[tuple[str, str, str]] = set()

    def __len__(self) -> int:
        return len(self._ids)

    def add(
        self,
        src: int,
        dst: int,
        src_scope: str,
        dst_scope: str,
        edge_type: str,
        scope: str,
        props: Props,
        valid_from: int,
        at: int,
        *,
        edge_id: str | None = None,
        extra: Mapping[str, Any] | None = None,
        end_ids: tuple[str, str] | None = None,
    ) -> int:
        """Check one relation and keep it to be written: its place in `write`'s list."""
        scopes = (scope, src_scope, dst_scope)
        if scopes not in self._allowed:
            check_edge_ends(src_scope, dst_scope)
            self._engine.check_edge_scope(scope, src_scope, dst_scope)
            self._engine.check_writable(scope)  # where its log entry goes: the edge's scope
            self._allowed.add(scopes)
        place = len(self._rows)
        self._ids.append(edge_id)  # None: made with the others' when they are written
        self._rows.append((src, dst, edge_type, scope, props, valid_from, at))
        self._ends.append(end_ids)
        if extra:
            self._extras.append((place, extra))
        return place

    def write(self, log_later: list[ops.Op] | None = None, *, edges: bool = True) -> list[Edge]:
        """Write the relations added since the last `write`, and log them: each now
        (`Engine.log`), or, given `log_later`, by adding its entry to it, for the caller to
        log with others in one go (`Engine.log_many`), in the same order. The edges, in the
        order they were added, each made from what was written where the caller gave its
        ends' ids (read back otherwise); none for a caller that wants none (`edges=False`)."""
        given, ends, extras = self._ids, self._ends, self._extras
        if not given:
            return []
        fresh = iter(new_ulids(given.count(None)))
        rows: list[NewEdgeRow] = [
            (next(fresh) if edge_id is None else edge_id, *row) for edge_id, row in zip(given, self._rows, strict=True)
        ]
        self._ids, self._rows, self._ends, self._extras = [], [], [], []
        tx = self._tx
        pks = tx.insert_edges(rows)
        for place, extra in extras:
            tx.set_edge_extra(pks[place], extra)
        made: list[Edge] = []
        logged: list[ops.Op] = []
        for pk, (edge_id, src, dst, kind, scope, props, start, at), end_ids in zip(pks, rows, ends, strict=True):
            if end_ids is None:
                read = tx.edge_by_pk(pk)
                assert read is not None
                made.append(read)
                logged.append(ops.edge_created(read))
                continue
            from_id, to_id = end_ids
            logged.append(ops.edge_opened(edge_id, from_id, to_id, kind, scope, props, start))
            if edges:
                made.append(edge_of(pk, edge_id, from_id, to_id, kind, scope, dict(props), start, None, at, src, dst))
        if log_later is None:
            for op, (*_, at) in zip(logged, rows, strict=True):
                self._engine.log(tx, op, at)
        else:
            log_later += logged
        return made if edges else []
