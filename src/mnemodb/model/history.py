"""An item as it was: one replay of its change-log entries, for every face that reads the past.

The native tools show a past memory or entity (`Memory`, `Entity`: text, tags, type,
importance, observations); the property-graph face shows a past node (label and the
properties its view has). Both are projections of one `PastItem`, which `replay` builds
from the item's entries in log order: a rule about what an entry changed is written once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from mnemodb.model import ops
from mnemodb.model.ids import content_hash
from mnemodb.model.records import Change, Entity, Memory, Node
from mnemodb.model.rules import MEMORY_FIELDS, fits_memory_field
from mnemodb.model.value import Value

__all__ = ["PastItem", "as_item", "as_node", "replay", "steps"]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class PastItem(Value):
    """What an item was after some of its entries: its own fields (a memory's or an
    entity's, empty for another node) and its properties."""

    id: str
    scope: str
    label: str
    created_at: int
    updated_at: int
    memory: Mapping[str, Any] | None = None
    entity: Mapping[str, Any] | None = None
    props: Mapping[str, Any] = field(default_factory=dict)


def replay(
    changes: Iterable[Change], at: int, *, created_at: int | None = None, as_created: bool = False
) -> PastItem | None:
    """The item at `at` from its entries (oldest first); None if it did not exist then.

    `created_at` is the item's own creation time where it still exists: an imported item
    was logged when it was imported but existed from then, so its creation entry counts
    from `created_at`. With `as_created`, an item created after `at` is as it was created
    (what a walk over edges valid at `at` shows of an item it reaches) rather than None."""
    past: PastItem | None = None
    for change in changes:
        first = change.op == ops.CREATE_NODE and past is None
        imported_earlier = first and created_at is not None and created_at <= at
        if change.at > at and not (imported_earlier or (first and as_created)):
            break
        past = _applied(past, change, created_at)
    if past is not None and past.memory is not None and (past.memory["archived_at"] or 0) > at:
        # Archived later than `at` (an imported memory carries the time it was archived).
        past = replace(past, memory={**past.memory, "archived_at": None})
    return past


def steps(changes: Iterable[Change]) -> Iterator[tuple[Change, PastItem | None]]:
    """Each entry (oldest first) with the item as it was right after it: an item's history
    told change by change, in one pass."""
    past: PastItem | None = None
    for change in changes:
        past = _applied(past, change, None)
        yield change, past


def _applied(past: PastItem | None, change: Change, created_at: int | None) -> PastItem | None:
    data = change.data
    if change.op == ops.CREATE_NODE:
        born = change.at if created_at is None else min(change.at, created_at)
        memory = data.get("memory")
        entity = data.get("entity")
        return PastItem(
            id=data["id"],
            scope=data["scope"],
            label=data["label"],
            created_at=born,
            updated_at=born,
            memory=_memory_fields(memory) if memory else None,
            entity=_entity_fields(entity) if entity else None,
            props=dict(data.get("props") or {}),
        )
    if past is None or change.op == ops.REMOVE_NODE:
        return None
    if change.op == ops.UPDATE_NODE:
        changed = data.get("set") or {}
        if past.memory is not None:
            memory = {**past.memory, **{k: v for k, v in changed.items() if k in past.memory}}
            if "tags" in changed:
                memory["tags"] = tuple(changed["tags"])
            return replace(past, memory=memory, updated_at=change.at)
        if past.entity is not None:
            entity = {**past.entity, **{k: v for k, v in changed.items() if k in ("name", "entity_type")}}
            return replace(past, entity=entity, updated_at=change.at)
        return replace(past, updated_at=change.at)
    if change.op in (ops.ARCHIVE_NODE, ops.UNARCHIVE_NODE) and past.memory is not None:
        archived_at = change.at if change.op == ops.ARCHIVE_NODE else None
        return replace(past, memory={**past.memory, "archived_at": archived_at}, updated_at=change.at)
    if change.op == ops.ADD_TAGS and past.memory is not None:
        tags = tuple(dict.fromkeys((*past.memory["tags"], *data.get("tags", ()))))
        return replace(past, memory={**past.memory, "tags": tags}, updated_at=change.at)
    if change.op in (ops.ADD_OBSERVATIONS, ops.REMOVE_OBSERVATIONS) and past.entity is not None:
        contents = data.get("contents", ())
        before = past.entity["observations"]
        if change.op == ops.ADD_OBSERVATIONS:
            observations = tuple(dict.fromkeys((*before, *contents)))
        else:
            gone = set(contents)
            observations = tuple(o for o in before if o not in gone)
        return replace(past, entity={**past.entity, "observations": observations}, updated_at=change.at)
    if change.op == ops.SET_PROPS:
        return _props_set(past, data.get("props") or {}, change.at)
    return past


def _memory_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "content": fields["content"],
        "summary": fields.get("summary"),
        "importance": fields.get("importance", 0),
        "memory_type": fields.get("memory_type", "general"),
        "tags": tuple(fields.get("tags", ())),
        "archived_at": fields.get("archived_at"),
    }


def _entity_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "name": fields["name"],
        "entity_type": fields.get("entity_type", ""),
        "observations": tuple(fields.get("observations", ())),
    }


def _props_set(past: PastItem, props: Mapping[str, Any], at: int) -> PastItem:
    """A property-graph write: a memory's or an entity's own fields go to the field (a value
    a field cannot hold resets it and is kept as a property), the rest to the properties;
    None removes."""
    own = dict(past.props)
    memory = dict(past.memory) if past.memory is not None else None
    entity = dict(past.entity) if past.entity is not None else None
    for key, value in props.items():
        if memory is not None and key == "content" and isinstance(value, str):
            memory["content"] = value
        elif memory is not None and key in MEMORY_FIELDS:
            fits = value is not None and fits_memory_field(key, value)
            memory[key] = value if fits else MEMORY_FIELDS[key]
            if not fits and value is not None:
                own[key] = value
            else:
                own.pop(key, None)
        elif entity is not None and key == "name" and isinstance(value, str):
            entity["name"] = value
        elif entity is not None and key == "entityType":
            entity["entity_type"] = value if isinstance(value, str) else ""
        elif value is None:
            own.pop(key, None)
        else:
            own[key] = value
    return replace(past, memory=memory, entity=entity, props=own, updated_at=at)


def as_item(past: PastItem, now: Memory | Entity) -> Memory | Entity:
    """`now` as it was: its identity and creation stay, its fields and properties are the
    past's."""
    if isinstance(now, Memory) and past.memory is not None:
        content = past.memory["content"]
        return replace(
            now,
            content=content,
            hash=content_hash(content),
            summary=past.memory["summary"],
            importance=past.memory["importance"],
            memory_type=past.memory["memory_type"],
            tags=tuple(past.memory["tags"]),
            props=dict(past.props),
            updated_at=past.updated_at,
            archived_at=past.memory["archived_at"],
        )
    if isinstance(now, Entity) and past.entity is not None:
        return replace(
            now,
            name=past.entity["name"],
            entity_type=past.entity["entity_type"],
            observations=tuple(past.entity["observations"]),
            props=dict(past.props),
            updated_at=past.updated_at,
        )
    return replace(now, props=dict(past.props), updated_at=past.updated_at)


def as_node(past: PastItem, pk: int) -> Node:
    """The past as the property-graph view shows a node, by the rule a creation entry's
    view follows (`ops.node_props`)."""
    view = {"memory": past.memory, "entity": past.entity, "props": past.props}
    return Node(pk, past.id, past.scope, past.label, ops.node_props(view), past.created_at, past.updated_at)
