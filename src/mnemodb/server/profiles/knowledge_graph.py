"""The `knowledge-graph` profile: the official server-memory's 9 tools and better-memory's
7, with their parameters, result shapes and messages, over the engine's graph API.

Deliberate differences (each fixing an upstream data bug) are listed in docs/compatibility.md:
duplicates within one `create_entities` call are stored once, relations to missing
entities are refused, fuzzy search keeps exclusions and field filters and no longer
matches every entity without observations, and several processes on one store never
lose each other's writes.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from mnemodb.engine import Engine, EngineError, Entity
from mnemodb.engine.graph import FoundEntity, Graph, NewEntity, NewRelation
from mnemodb.model.records import Relation
from mnemodb.server.profile import (
    Profile,
    Resource,
    StructuredText,
    Tool,
    ToolAnnotations,
    ToolResult,
    compact_json,
    exact_json,
    tool,
    tool_result,
)
from mnemodb.server.schema import Arr, Bool, Enum, Field, Invalid, Num, Obj, Str
from mnemodb.server.settings import Settings, env_value, load_standard_settings

log = logging.getLogger("mnemodb.server")

NO_PATH = "No path found between the specified entities"


class Message:
    """A result whose text is a sentence and whose structured content says it succeeded."""

    def __init__(self, text: str) -> None:
        self.text = text


class NoPath:
    """find_path's answer when there is no path: a sentence, and null fields."""


class PlainReply(dict[str, Any]):
    """A result of strings, integers, lists and string-keyed objects alone (no extra fields
    an imported line carried, which may hold any JSON value): JSON that orjson writes byte
    for byte as the standard library's compact encoder does without ASCII escaping, in
    about a quarter of its time (the text of a search's 2 MB reply at 100,000 entities:
    3.3 ms against 14.1, on a busy machine)."""


def _compact_json(value: Any) -> str:
    return compact_json(value) if isinstance(value, PlainReply) else exact_json(value)


# -- shapes ---------------------------------------------------------------------------------------


def entity_shape(entity: Entity | FoundEntity) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": entity.name,
        "entityType": entity.entity_type,
        "observations": list(entity.observations),
    }
    # Checked first: a search shapes thousands of entities, nearly all without extra fields.
    if entity.extra:
        for key, value in entity.extra.items():
            out.setdefault(key, value)
    return out


def relation_shape(relation: Relation) -> dict[str, Any]:
    out: dict[str, Any] = {"from": relation.from_name, "to": relation.to_name, "relationType": relation.type}
    if relation.extra:
        for key, value in relation.extra.items():
            out.setdefault(key, value)
    return out


def graph_shape(graph: Graph) -> dict[str, Any]:
    out: dict[str, Any] = {
        "entities": [entity_shape(e) for e in graph.entities],
        "relations": [relation_shape(r) for r in graph.relations],
    }
    if graph.next_cursor is not None:
        out["nextCursor"] = graph.next_cursor
    return out


def _count(value: Any) -> int | None:
    """A JavaScript-style count: absent, zero or negative means none given; fractions round down."""
    if value is None or not math.isfinite(value) or value <= 0:
        return None
    return int(value)


# -- parameters ---------------------------------------------------------------------------------------

ENTITY = Obj(
    fields={
        "name": Str(description="The name of the entity"),
        "entityType": Str(description="The type of the entity"),
        "observations": Arr(items=Str(), description="An array of observation contents associated with the entity"),
    },
    required=("name", "entityType", "observations"),
    strict=False,
)
RELATION = Obj(
    fields={
        "from": Str(description="The name of the entity where the relation starts"),
        "to": Str(description="The name of the entity where the relation ends"),
        "relationType": Str(description="The type of the relation"),
    },
    required=("from", "to", "relationType"),
    strict=False,
)


def _params(fields: Mapping[str, Field], *required: str) -> Obj:
    # The upstream servers strip unknown keys rather than refusing them.
    return Obj(fields=dict(fields), required=required, strict=False)


def _entity_list_schema() -> dict[str, Any]:
    return {"type": "array", "items": ENTITY.json_schema()}


def _relation_list_schema() -> dict[str, Any]:
    return {"type": "array", "items": RELATION.json_schema()}


def _output(properties: Mapping[str, Any], *required: str) -> dict[str, Any]:
    return {"type": "object", "properties": dict(properties), "required": list(required)}


GRAPH_OUTPUT = _output(
    {"entities": _entity_list_schema(), "relations": _relation_list_schema()}, "entities", "relations"
)
MESSAGE_OUTPUT = _output({"success": {"type": "boolean"}, "message": {"type": "string"}}, "success", "message")

# server-memory's hints for its 9 tools; better-memory's for the 7 it added.
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
DELETE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
EXPLORE = ToolAnnotations(read_only_hint=True, open_world_hint=False)


# -- tools ---------------------------------------------------------------------------------------------


def create_entities(engine: Engine, a: dict[str, Any]) -> Any:
    items = [NewEntity(e["name"], e["entityType"], tuple(e["observations"])) for e in a["entities"]]
    return {"entities": [entity_shape(e) for e in engine.graph.create_entities(items)]}


def create_relations(engine: Engine, a: dict[str, Any]) -> Any:
    items = [NewRelation(r["from"], r["to"], r["relationType"]) for r in a["relations"]]
    return {"relations": [relation_shape(r) for r in engine.graph.create_relations(items)]}


def add_observations(engine: Engine, a: dict[str, Any]) -> Any:
    results = engine.graph.add_observations([(o["entityName"], o["contents"]) for o in a["observations"]])
    return {"results": [{"entityName": name, "addedObservations": added} for name, added in results]}


def delete_entities(engine: Engine, a: dict[str, Any]) -> Any:
    engine.graph.delete_entities(a["entityNames"])
    return Message("Entities deleted successfully")


def delete_observations(engine: Engine, a: dict[str, Any]) -> Any:
    engine.graph.delete_observations([(d["entityName"], d["observations"]) for d in a["deletions"]])
    return Message("Observations deleted successfully")


def delete_relations(engine: Engine, a: dict[str, Any]) -> Any:
    engine.graph.delete_relations([NewRelation(r["from"], r["to"], r["relationType"]) for r in a["relations"]])
    return Message("Relations deleted successfully")


def read_graph(engine: Engine, a: dict[str, Any]) -> Any:
    return graph_shape(engine.graph.read(limit=_count(a.get("limit")), cursor=a.get("cursor")))


def search_nodes(engine: Engine, a: dict[str, Any]) -> Any:
    found = engine.graph.search(
        a["query"],
        include_neighbors=bool(a.get("includeNeighbors", False)),
        fuzzy=bool(a.get("fuzzy", False)),
        limit=_count(a.get("limit")),
    )
    # Shaped here rather than by `entity_shape` and `relation_shape`, which take the
    # fields a line carried: a reply holds thousands of entities, nearly all without.
    plain = True
    entities: list[dict[str, Any]] = []
    for e in found.entities:
        if e.extra:
            plain = False
            entities.append(entity_shape(e))
        else:
            entities.append({"name": e.name, "entityType": e.entity_type, "observations": list(e.observations)})
    relations: list[dict[str, Any]] = []
    for r in found.relations:
        if r.extra:
            plain = False
            relations.append(relation_shape(r))
        else:
            relations.append({"from": r.from_name, "to": r.to_name, "relationType": r.type})
    reply = {
        "entities": entities,
        "relations": relations,
        "scores": [{"name": name, "score": score} for name, score in found.scores],
    }
    return PlainReply(reply) if plain else reply


def open_nodes(engine: Engine, a: dict[str, Any]) -> Any:
    return graph_shape(engine.graph.open(a["names"]))


def search_observations(engine: Engine, a: dict[str, Any]) -> Any:
    limit = a.get("limit", 10)
    count = _count(limit) or 0
    matches = engine.graph.search_observations(a["query"], limit=count, fuzzy=bool(a.get("fuzzy", False)))
    out: dict[str, Any] = {
        "matches": [
            {
                "entityName": m.entity.name,
                "entityType": m.entity.entity_type,
                "observation": m.observation,
                "score": m.score,
            }
            for m in matches
        ]
    }
    if a.get("includeEntity") and matches:
        seen: dict[str, Entity] = {}
        for m in matches:
            seen.setdefault(m.entity.name, m.entity)
        out["entities"] = [entity_shape(e) for e in seen.values()]
    return out


def get_neighbors(engine: Engine, a: dict[str, Any]) -> Any:
    neighbors = engine.graph.neighbors(
        a["entityName"], direction=a.get("direction", "both"), relation_type=a.get("relationType")
    )
    return {
        "neighbors": [
            {"entity": n.name, "relation": relation_shape(n.relation), "direction": n.direction} for n in neighbors
        ]
    }


def find_path(engine: Engine, a: dict[str, Any]) -> Any:
    depth = a.get("maxDepth", 10)
    path = engine.graph.find_path(
        a["fromEntity"], a["toEntity"], max_depth=math.floor(depth) if math.isfinite(depth) else 10
    )
    if path is None:
        return NoPath()
    return {
        "path": [entity_shape(e) for e in path.entities],
        "relations": [relation_shape(r) for r in path.relations],
        "length": len(path.relations),
    }


def get_subgraph(engine: Engine, a: dict[str, Any]) -> Any:
    depth = a.get("depth", 1)
    return graph_shape(engine.graph.subgraph(a["entityNames"], depth=math.floor(depth) if math.isfinite(depth) else 1))


def filter_by_type(engine: Engine, a: dict[str, Any]) -> Any:
    return graph_shape(engine.graph.of_type(a["entityType"]))


def filter_relations(engine: Engine, a: dict[str, Any]) -> Any:
    found = engine.graph.relations(
        relation_type=a.get("relationType"), from_name=a.get("fromEntity"), to_name=a.get("toEntity")
    )
    return {
        "relations": [relation_shape(r) for r in found.relations],
        "entities": [entity_shape(e) for e in found.entities],
    }


def filter_observations(engine: Engine, a: dict[str, Any]) -> Any:
    return {"entities": [entity_shape(e) for e in engine.graph.with_observations_matching(a["pattern"])]}


TOOLS: Sequence[Tool] = (
    tool(
        "create_entities",
        "Create Entities",
        "Create entities in the knowledge graph: each has a unique name, a type and observations (facts "
        "about it). Names that already exist are left as they are.",
        _params({"entities": Arr(items=ENTITY)}, "entities"),
        create_entities,
        WRITE,
        _output({"entities": _entity_list_schema()}, "entities"),
    ),
    tool(
        "create_relations",
        "Create Relations",
        "Connect entities with directed, typed relations, phrased in the active voice (Alice works_at "
        "Acme). Both entities must exist; a relation that already exists is skipped.",
        _params({"relations": Arr(items=RELATION)}, "relations"),
        create_relations,
        WRITE,
        _output({"relations": _relation_list_schema()}, "relations"),
    ),
    tool(
        "add_observations",
        "Add Observations",
        "Add observations (one fact each) to existing entities. Observations an entity already has are "
        "skipped; an unknown entity fails the whole call.",
        _params(
            {
                "observations": Arr(
                    items=Obj(
                        fields={
                            "entityName": Str(description="The name of the entity to add the observations to"),
                            "contents": Arr(items=Str(), description="An array of observation contents to add"),
                        },
                        required=("entityName", "contents"),
                        strict=False,
                    )
                )
            },
            "observations",
        ),
        add_observations,
        WRITE,
        _output(
            {
                "results": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "entityName": {"type": "string"},
                            "addedObservations": {"type": "array", "items": {"type": "string"}},
                        },
                        "required": ["entityName", "addedObservations"],
                    },
                }
            },
            "results",
        ),
    ),
    tool(
        "delete_entities",
        "Delete Entities",
        "Delete entities and every relation to or from them. Unknown names are ignored.",
        _params({"entityNames": Arr(items=Str(), description="An array of entity names to delete")}, "entityNames"),
        delete_entities,
        DELETE,
        MESSAGE_OUTPUT,
    ),
    tool(
        "delete_observations",
        "Delete Observations",
        "Remove specific observations from entities. Unknown entities and observations are ignored.",
        _params(
            {
                "deletions": Arr(
                    items=Obj(
                        fields={
                            "entityName": Str(description="The name of the entity containing the observations"),
                            "observations": Arr(items=Str(), description="An array of observations to delete"),
                        },
                        required=("entityName", "observations"),
                        strict=False,
                    )
                )
            },
            "deletions",
        ),
        delete_observations,
        DELETE,
        MESSAGE_OUTPUT,
    ),
    tool(
        "delete_relations",
        "Delete Relations",
        "Delete relations that match from, to and relationType exactly. Others are ignored.",
        _params({"relations": Arr(items=RELATION, description="An array of relations to delete")}, "relations"),
        delete_relations,
        DELETE,
        MESSAGE_OUTPUT,
    ),
    tool(
        "read_graph",
        "Read Graph",
        "Read the whole knowledge graph. On a large graph, pass `limit` to get a page of that many "
        "entities (with the relations starting at them) and `cursor` from the previous page's "
        "`nextCursor` for the next one; prefer search_nodes or open_nodes to find specific entities.",
        _params(
            {
                "limit": Num(minimum=1, description="Entities per page (optional; without it, everything)"),
                "cursor": Str(description="nextCursor from the previous page"),
            }
        ),
        read_graph,
        READ,
        GRAPH_OUTPUT,
    ),
    tool(
        "search_nodes",
        "Search Nodes",
        "Search entities by name, type and observations. Words are OR'ed; +word is required, -word "
        'excluded, "exact phrase", name:/type:/obs: limit a term to one field (name:"auth service"). '
        "fuzzy tolerates typos; includeNeighbors adds entities one relation away; limit caps the "
        "ranked results. Returns matching entities best first, relations touching them, and scores.",
        _params(
            {
                "query": Str(
                    description='The search query (supports +required, -excluded, "phrases", name:, type:, obs:)'
                ),
                "includeNeighbors": Bool(description="Also return the entities directly related to the matches"),
                "fuzzy": Bool(description="Tolerate typos"),
                "limit": Num(description="Maximum number of ranked results (0 or absent: all)"),
            },
            "query",
        ),
        search_nodes,
        READ,
        _output(
            {
                "entities": _entity_list_schema(),
                "relations": _relation_list_schema(),
                "scores": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "score": {"type": "number"}},
                        "required": ["name", "score"],
                    },
                },
            },
            "entities",
            "relations",
            "scores",
        ),
    ),
    tool(
        "open_nodes",
        "Open Nodes",
        "Fetch entities by exact name, with the relations between them. Unknown names are skipped.",
        _params({"names": Arr(items=Str(), description="An array of entity names to retrieve")}, "names"),
        open_nodes,
        READ,
        GRAPH_OUTPUT,
    ),
    tool(
        "search_observations",
        "Search Observations",
        "Search single observations rather than whole entities, when you need specific facts: same query "
        "syntax as search_nodes (without field prefixes). Returns the best matching observations with "
        "their entity's name and type (limit, default 10); includeEntity adds the full entities.",
        _params(
            {
                "query": Str(description="The search query"),
                "limit": Num(description="Maximum number of observations to return (default 10)"),
                "includeEntity": Bool(description="Also return the full entities the observations belong to"),
                "fuzzy": Bool(description="Tolerate typos"),
            },
            "query",
        ),
        search_observations,
        EXPLORE,
        _output(
            {
                "matches": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "entityName": {"type": "string"},
                            "entityType": {"type": "string"},
                            "observation": {"type": "string"},
                            "score": {"type": "number"},
                        },
                        "required": ["entityName", "entityType", "observation", "score"],
                    },
                },
                "entities": _entity_list_schema(),
            },
            "matches",
        ),
    ),
    tool(
        "get_neighbors",
        "Get Neighbors",
        "List the entities directly connected to one entity, with each relation and its direction "
        "(outgoing, incoming or both, the default), optionally of one relation type.",
        _params(
            {
                "entityName": Str(description="The entity to find neighbors for"),
                "direction": Enum(values=("incoming", "outgoing", "both"), description="Which relations to follow"),
                "relationType": Str(description="Only relations of this type"),
            },
            "entityName",
        ),
        get_neighbors,
        EXPLORE,
        _output(
            {
                "neighbors": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "entity": {"type": "string"},
                            "relation": RELATION.json_schema(),
                            "direction": {"type": "string", "enum": ["outgoing", "incoming"]},
                        },
                        "required": ["entity", "relation", "direction"],
                    },
                }
            },
            "neighbors",
        ),
    ),
    tool(
        "find_path",
        "Find Path",
        "Find the shortest chain of relations (followed in either direction) between two entities, at "
        "most maxDepth long (default 10). Returns the entities along it, the relations and the length.",
        _params(
            {
                "fromEntity": Str(description="The entity to start from"),
                "toEntity": Str(description="The entity to reach"),
                "maxDepth": Num(description="Maximum path length (default 10)"),
            },
            "fromEntity",
            "toEntity",
        ),
        find_path,
        EXPLORE,
        {
            "type": "object",
            "properties": {
                "path": {"anyOf": [_entity_list_schema(), {"type": "null"}]},
                "relations": {"anyOf": [_relation_list_schema(), {"type": "null"}]},
                "length": {"anyOf": [{"type": "number"}, {"type": "null"}]},
            },
            "required": ["path", "relations", "length"],
        },
    ),
    tool(
        "get_subgraph",
        "Get Subgraph",
        "Extract the neighbourhood of some entities: them, everything within `depth` relations (default "
        "1), and the relations among those entities.",
        _params(
            {
                "entityNames": Arr(items=Str(), description="The entities to start from"),
                "depth": Num(description="How many relations away to go (default 1)"),
            },
            "entityNames",
        ),
        get_subgraph,
        EXPLORE,
        GRAPH_OUTPUT,
    ),
    tool(
        "filter_by_type",
        "Filter By Type",
        "All entities of one type (case-insensitive), with the relations among them.",
        _params({"entityType": Str(description="The entity type")}, "entityType"),
        filter_by_type,
        EXPLORE,
        GRAPH_OUTPUT,
    ),
    tool(
        "filter_relations",
        "Filter Relations",
        "Relations by type (case-insensitive), source and/or target entity, with the entities at their "
        "ends. With no filter, every relation.",
        _params(
            {
                "relationType": Str(description="Only relations of this type"),
                "fromEntity": Str(description="Only relations starting at this entity"),
                "toEntity": Str(description="Only relations ending at this entity"),
            }
        ),
        filter_relations,
        EXPLORE,
        _output({"relations": _relation_list_schema(), "entities": _entity_list_schema()}, "relations", "entities"),
    ),
    tool(
        "filter_observations",
        "Filter By Observation Pattern",
        "Entities with an observation matching a pattern: a preset (dated = starts with [YYYY-MM-DD], "
        "techdebt = TODO/FIXME/HACK/tech debt, deprecated, purpose = 'Purpose:', quirk = 'Quirk:') or a "
        "regular expression (JavaScript syntax, case-insensitive).",
        _params({"pattern": Str(description="A preset name or a regular expression")}, "pattern"),
        filter_observations,
        EXPLORE,
        _output({"entities": _entity_list_schema()}, "entities"),
    ),
)

INSTRUCTIONS = """\
A knowledge graph that persists between conversations: entities (people, projects,
concepts) with observations (one fact each), and directed relations between them.
Search before creating (search_nodes, or open_nodes for exact names) so the same
thing is not stored twice; record corrections by deleting the wrong observation and
adding the right one. On a large graph prefer search_nodes, search_observations,
open_nodes and get_subgraph to read_graph, or page read_graph with limit and cursor.
"""


# Tools whose text is the bare list their structured content wraps, as upstream sent it.
LIST_TEXT = {
    "create_entities": "entities",
    "create_relations": "relations",
    "add_observations": "results",
    "get_neighbors": "neighbors",
}


class KnowledgeGraphProfile(Profile):
    name = "knowledge-graph"
    server_name = "memory-server"
    instructions = INSTRUCTIONS
    tools = TOOLS
    json_schema_dialect = "http://json-schema.org/draft-07/schema#"
    forbid_tasks = True
    resources = (
        Resource(
            uri="memory://knowledge-graph",
            name="knowledge-graph",
            title="Knowledge Graph",
            description="The full knowledge graph with all entities and relations",
            mime_type="application/json",
            read=lambda engine: json.dumps(graph_shape(engine.graph.read()), separators=(",", ":"), ensure_ascii=False),
            subscribable=True,
        ),
    )

    @staticmethod
    def _text(text: str, structured: Mapping[str, Any] | None, *, is_error: bool = False) -> ToolResult:
        return tool_result(text, dict(structured) if structured is not None else None, is_error=is_error)

    def success(self, tool: Tool, value: Any) -> ToolResult:
        if isinstance(value, Message):
            return self._text(value.text, {"success": True, "message": value.text})
        if isinstance(value, NoPath):
            return self._text(NO_PATH, {"path": None, "relations": None, "length": None})
        if tool.name in LIST_TEXT:
            return self._text(json.dumps(value[LIST_TEXT[tool.name]], separators=(",", ":"), ensure_ascii=False), value)
        return self._text(StructuredText(_compact_json(value)), value)

    def failure(self, tool: Tool, error: Exception) -> ToolResult:
        if isinstance(error, EngineError | ValueError):
            message = str(error)
        else:
            log.exception("tool %s failed unexpectedly", tool.name, exc_info=error)
            message = f"Internal error: {type(error).__name__} (details in the server log)"
        return self._text(message, None, is_error=True)

    def timeout(self, tool: Tool, timeout_ms: int) -> ToolResult:
        return self._text(f"Tool {tool.name} timed out after {timeout_ms}ms; nothing was changed", None, is_error=True)

    def invalid(self, tool: Tool, error: Invalid) -> ToolResult:
        issues = json.dumps(error.issues, indent=2, ensure_ascii=False)
        text = f"MCP error -32602: Input validation error: Invalid arguments for tool {tool.name}: {issues}"
        return self._text(text, None, is_error=True)

    def unknown_tool(self, name: str) -> ToolResult:
        return self._text(f"MCP error -32602: Tool {name} not found", None, is_error=True)


def build() -> KnowledgeGraphProfile:
    return KnowledgeGraphProfile()


# -- settings --------------------------------------------------------------------------------------

MEMORY_FILE = "memory.jsonl"
LEGACY_MEMORY_FILE = "memory.json"
MEMORY_DB_SUFFIX = ".mnemodb.db"


def memory_file_db(memory_file: str) -> str:
    """The database kept beside a server-memory file: `/x/memory.jsonl` -> `/x/memory.mnemodb.db`."""
    path = Path(memory_file)
    return str(path.with_name(path.stem + MEMORY_DB_SUFFIX))


def memory_file_path(env: Mapping[str, str]) -> tuple[str | None, bool]:
    """The server-memory file, absolute, and whether MEMORY_FILE_PATH named it.

    MEMORY_FILE_PATH (trimmed; empty means unset) names it; a relative path is taken
    from the working directory (upstream took it from its own install directory, which
    has no counterpart here). Unset, it is `memory.jsonl` in the working directory, or,
    when only the legacy `memory.json` is there, that file (upstream renamed it; mnemodb
    reads it and leaves it in place). None when unset and neither file exists.
    """
    raw = env_value(env, "MEMORY_FILE_PATH")
    if raw is not None and raw.strip():
        return os.path.abspath(os.path.expanduser(raw.strip())), True
    current = Path(os.getcwd())
    for name in (MEMORY_FILE, LEGACY_MEMORY_FILE):
        candidate = current / name
        if candidate.exists():
            return str(candidate), False
    return None, False


def load_settings(profile: str, args: argparse.Namespace, env: Mapping[str, str]) -> Settings:
    """The usual settings, with the server-memory file to import on start; the database,
    without --db, is kept beside the file MEMORY_FILE_PATH names."""
    memory_file, named = memory_file_path(env)
    beside = memory_file_db(memory_file) if named and memory_file is not None else None
    settings = load_standard_settings(profile, args, env, derived_db=beside)
    return replace(settings, memory_file=memory_file)


__all__ = ["KnowledgeGraphProfile", "build", "load_settings"]
