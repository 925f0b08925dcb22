"""The operations the change log records, as plain JSON-ready dicts.

Each committed write appends one entry per operation, in the same transaction as the
write. An entry is `(scope, op, target, data)`; `target` is the ULID the operation is
about. The shapes are documented in docs/design.md; profiles render them in their own
formats (topodb's externally-tagged ops, for example).
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Mapping, Sequence
from typing import Any

from mnemodb.model.records import Edge, Entity, Memory, Props

Op = tuple[str | None, str, str | None, dict[str, Any]]

CREATE_NODE = "create_node"
UPDATE_NODE = "update_node"
REMOVE_NODE = "remove_node"
CREATE_EDGE = "create_edge"
CLOSE_EDGE = "close_edge"
REMOVE_EDGE = "remove_edge"
ADD_TAGS = "add_tags"
ADD_OBSERVATIONS = "add_observations"
REMOVE_OBSERVATIONS = "remove_observations"
SET_EMBEDDING = "set_embedding"
SET_PROPS = "set_props"
ARCHIVE_NODE = "archive_node"
UNARCHIVE_NODE = "unarchive_node"
ALL_OPS = (
    CREATE_NODE,
    UPDATE_NODE,
    REMOVE_NODE,
    CREATE_EDGE,
    CLOSE_EDGE,
    REMOVE_EDGE,
    ADD_TAGS,
    ADD_OBSERVATIONS,
    REMOVE_OBSERVATIONS,
    SET_EMBEDDING,
    SET_PROPS,
    ARCHIVE_NODE,
    UNARCHIVE_NODE,
)


def node_record(
    node_id: str,
    scope: str,
    label: str,
    props: Props,
    *,
    memory: Mapping[str, Any] | None = None,
    entity: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    data: dict[str, Any] = {"id": node_id, "label": label, "scope": scope, "props": dict(props)}
    if memory is not None:
        data["memory"] = dict(memory)
    if entity is not None:
        data["entity"] = dict(entity)
    return data


def node_props(data: Mapping[str, Any]) -> dict[str, Any]:
    """A `create_node` entry's properties as the node's view shows them: a memory's content
    (and importance, type and summary unless they are the defaults), an entity's name (and
    type when set), then the node's own properties."""
    props: dict[str, Any] = {}
    memory = data.get("memory")
    if memory:
        props["content"] = memory["content"]
        if memory.get("importance"):
            props["importance"] = memory["importance"]
        if memory.get("memory_type", "general") != "general":
            props["memory_type"] = memory["memory_type"]
        if memory.get("summary") is not None:
            props["summary"] = memory["summary"]
    entity = data.get("entity")
    if entity:
        props["name"] = entity["name"]
        if entity.get("entity_type"):
            props["entityType"] = entity["entity_type"]
    for key, value in (data.get("props") or {}).items():
        props.setdefault(key, value)
    return props


def memory_fields(memory: Memory) -> dict[str, Any]:
    return {
        "hash": memory.hash,
        "content": memory.content,
        "summary": memory.summary,
        "importance": memory.importance,
        "memory_type": memory.memory_type,
        "tags": list(memory.tags),
    }


def memory_created(memory: Memory) -> Op:
    data = node_record(memory.id, memory.scope, "Memory", memory.props, memory=memory_fields(memory))
    return memory.scope, CREATE_NODE, memory.id, data


def entity_created(entity: Entity) -> Op:
    fields = {
        "name": entity.name,
        "entity_type": entity.entity_type,
        "observations": list(entity.observations),
    }
    data = node_record(entity.id, entity.scope, "Entity", entity.props, entity=fields)
    return entity.scope, CREATE_NODE, entity.id, data


def record_created(record: Mapping[str, Any]) -> Op:
    """The create op for a node record in dump format (import and migration)."""
    memory = record.get("memory")
    entity = record.get("entity")
    if entity is not None:
        entity = {**entity, "observations": [o["content"] for o in entity.get("observations", [])]}
    data = node_record(
        record["id"],
        record["scope"],
        record["label"],
        record.get("props") or {},
        memory=memory,
        entity=entity,
    )
    return record["scope"], CREATE_NODE, record["id"], data


def node_updated(scope: str, node_id: str, changes: Mapping[str, Any]) -> Op:
    return scope, UPDATE_NODE, node_id, {"id": node_id, "set": dict(changes)}


def node_removed(scope: str, node_id: str) -> Op:
    return scope, REMOVE_NODE, node_id, {"id": node_id}


def tags_added(scope: str, node_id: str, tags: Sequence[str]) -> Op:
    return scope, ADD_TAGS, node_id, {"id": node_id, "tags": list(tags)}


def memory_archived(memory: Memory) -> Op:
    """A memory archived: kept, but left out of searches and listings from the entry's time."""
    return memory.scope, ARCHIVE_NODE, memory.id, {"id": memory.id}


def memory_unarchived(memory: Memory) -> Op:
    return memory.scope, UNARCHIVE_NODE, memory.id, {"id": memory.id}


def edge_created(edge: Edge) -> Op:
    return edge_opened(edge.id, edge.src, edge.dst, edge.type, edge.scope, edge.props, edge.valid_from)


def edge_opened(edge_id: str, src: str, dst: str, edge_type: str, scope: str, props: Props, valid_from: int) -> Op:
    """`edge_created` of the edge these fields make, for a writer that has them but not
    the edge (a batch of links, whose caller wants their ids only)."""
    record = {
        "id": edge_id,
        "from": src,
        "to": dst,
        "type": edge_type,
        "scope": scope,
        "props": dict(props),
        "valid_from": valid_from,
    }
    return scope, CREATE_EDGE, edge_id, record


def edge_record(edge: Edge) -> dict[str, Any]:
    return edge_created(edge)[3]


def edge_closed(edge: Edge, valid_to: int) -> Op:
    return edge.scope, CLOSE_EDGE, edge.id, {"id": edge.id, "valid_to": valid_to}


def edge_removed(edge: Edge) -> Op:
    return edge.scope, REMOVE_EDGE, edge.id, {"id": edge.id}


def observations_added(entity: Entity, contents: Sequence[str]) -> Op:
    return entity.scope, ADD_OBSERVATIONS, entity.id, {"id": entity.id, "contents": list(contents)}


def observations_removed(entity: Entity, contents: Sequence[str]) -> Op:
    return entity.scope, REMOVE_OBSERVATIONS, entity.id, {"id": entity.id, "contents": list(contents)}


def embedding_set(scope: str, node_id: str, model: str, vector: bytes) -> Op:
    """A vector given as float32 little-endian bytes, logged as their base64 text: a quarter
    of the size of the same floats written as JSON numbers, and exact."""
    return scope, SET_EMBEDDING, node_id, {"id": node_id, "model": model, "f32": base64.b64encode(vector).decode()}


def embedding_vector(data: Mapping[str, Any]) -> list[float]:
    """The vector of a `set_embedding` entry; entries written under schema 5 or earlier hold a list."""
    if "f32" in data:
        blob = base64.b64decode(data["f32"])
        return list(struct.unpack(f"<{len(blob) // 4}f", blob))
    return [float(v) for v in data["vector"]]


def props_set(scope: str, node_id: str, props: Mapping[str, Any]) -> Op:
    """Properties set on a node by the property-graph face; a None value removed the key."""
    return scope, SET_PROPS, node_id, {"id": node_id, "props": dict(props)}


def redacted(op: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """An entry's data with every text, tag, property value and vector taken out, its
    shape kept (so each reader of the log still reads it), and marked `redacted`."""
    out = dict(data)
    if op == CREATE_NODE:
        out["props"] = {}
        if "memory" in out:
            out["memory"] = {**out["memory"], "content": "", "hash": "", "summary": None, "tags": []}
        if "entity" in out:
            out["entity"] = {**out["entity"], "name": "", "observations": []}
    elif op == UPDATE_NODE:
        out["set"] = {}
    elif op == SET_PROPS:
        out["props"] = {}
    elif op == ADD_TAGS:
        out["tags"] = []
    elif op in (ADD_OBSERVATIONS, REMOVE_OBSERVATIONS):
        out["contents"] = []
    elif op == SET_EMBEDDING:
        out.pop("vector", None)
        out["f32"] = ""
    else:
        return out
    out["redacted"] = True
    return out
