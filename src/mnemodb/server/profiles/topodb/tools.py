"""The topodb tool table: each tool's name, parameters (serde-worded), output schema and body."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mnemodb.engine import Engine
from mnemodb.server.profile import Tool
from mnemodb.server.profiles.topodb.handlers import TopodbTools
from mnemodb.server.serde_params import JSON_SCHEMA_2020_12, Param, Params, sorted_json

# Tools whose engine refusals keep the engine's `rejected: ` prefix, as topodb-mcp sent them.
REJECTED_PREFIX = frozenset({"search_memories", "find_by_prop", "traverse"})
# The tools that change nothing. Upstream's tools carry no annotations, and so neither do
# these: the server still needs to know which calls it may stop and run again.
READS = frozenset(
    {
        "access_stats",
        "db_info",
        "find_by_prop",
        "get_changes",
        "get_node",
        "search_memories",
        "search_vectors",
        "traverse",
    }
)

_SCOPE_READ = Param(
    "scope",
    "string",
    'One scope to read: "shared" or a scope ULID. Ignored when `scopes` is given; with neither, '
    "the server's default read scopes apply.",
    optional=True,
)
_SCOPES_READ = Param(
    "scopes",
    "strings",
    'Several scopes to read at once ("shared" and/or scope ULIDs). Wins over `scope`. Must not be '
    "empty: an empty set would admit nothing.",
    optional=True,
    min_items=1,
)
_SCOPE_WRITE = Param(
    "scope",
    "string",
    'The scope to write into: "shared" or a scope ULID. Default: the server\'s write scope.',
    optional=True,
)
_PROPS_IN = {"additionalProperties": True, "type": ["object", "null"]}
_NEW_PROPS = Param(
    "props", "json", "More properties: string, number or boolean values.", optional=True, schema=_PROPS_IN
)
_VECTOR = {"items": {"type": "number"}, "minItems": 1, "type": "array"}


def _k(what: str) -> Param:
    return Param("k", "usize", f"How many {what} to return at most (at least 1).", default=10, minimum=1)


def _output(properties: Mapping[str, Any], *required: str, defs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"$schema": JSON_SCHEMA_2020_12, "properties": dict(properties), "type": "object"}
    if defs:
        out["$defs"] = dict(defs)
    schema: dict[str, Any] = sorted_json(out)
    schema["required"] = list(required)
    return schema


_NODE_OUT = {"description": "A node: its id, label, properties and scope."}
_SEQ_OUT = _output(
    {
        "seq": {
            "description": "The change-log sequence number of this write.",
            "minimum": 0,
            "type": "integer",
        }
    },
    "seq",
)
_HIT_DEFS = {
    "SearchHit": {
        "properties": {
            "node": _NODE_OUT,
            "score": {"description": "Higher is more relevant.", "format": "float", "type": "number"},
        },
        "required": ["node", "score"],
        "type": "object",
    }
}


def _hits_out(description: str) -> dict[str, Any]:
    return _output(
        {"hits": {"description": description, "items": {"$ref": "#/$defs/SearchHit"}, "type": "array"}},
        "hits",
        defs=_HIT_DEFS,
    )


def _id_out(what: str) -> dict[str, Any]:
    return _output({"id": {"description": f"The {what}'s ULID.", "type": "string"}}, "id")


def build_tools(bodies: TopodbTools) -> tuple[Tool, ...]:
    def tool(
        name: str,
        description: str,
        params: Sequence[Param],
        run: Callable[[Engine, dict[str, Any]], Any],
        output: Mapping[str, Any],
        *,
        strict: bool = True,
    ) -> Tool:
        params_ = Params(tuple(params), deny_unknown=strict)
        return Tool(name, description, params_, run, output_schema=output, reads_only=name in READS)

    node_id = Param("id", "string", "The node's ULID.", required=True)
    tools = [
        tool(
            "access_stats",
            "How often a node was returned by reads, and when last. Reading the statistics is not itself "
            "counted. Useful to find memories nobody uses any more.",
            [node_id, _SCOPE_READ, _SCOPES_READ],
            bodies.access_stats,
            _output(
                {
                    "access_count": {
                        "description": "Times the node was returned by a read.",
                        "minimum": 0,
                        "type": ["integer", "null"],
                    },
                    "found": {
                        "description": "False when the node does not exist or is outside the scopes read.",
                        "type": "boolean",
                    },
                    "last_accessed_at": {
                        "description": "When it was last returned (ms since the epoch; 0 if never).",
                        "format": "int64",
                        "type": ["integer", "null"],
                    },
                },
                "found",
            ),
        ),
        tool(
            "close_edge",
            "End an open edge: it stops being valid at `valid_to` (default: now), and traversal no longer "
            "follows it. Fails if the edge does not exist or is already closed. Returns the write's seq.",
            [
                Param("id", "string", "The edge's ULID.", required=True),
                Param(
                    "valid_to",
                    "i64",
                    "When the edge stopped being true, in ms since the epoch. Default: now.",
                    optional=True,
                ),
            ],
            bodies.close_edge,
            _SEQ_OUT,
        ),
        tool(
            "create_entity",
            "Create an entity node (a person, project, concept...) that memories can be linked to. Look it "
            "up with find_by_prop first; the same name in the same scope returns the existing entity.",
            [
                Param("name", "string", "The entity's name (exact lookups go through find_by_prop).", required=True),
                _NEW_PROPS,
                _SCOPE_WRITE,
            ],
            bodies.create_entity,
            _id_out("entity"),
        ),
        tool(
            "create_memory",
            "Store a memory. `content` is the searchable text; `props` carries structured details. Returns "
            "the node id, to link the memory to entities. The same text in the same scope returns the "
            "existing memory.",
            [
                Param("content", "string", "The memory's text.", required=True),
                _NEW_PROPS,
                _SCOPE_WRITE,
            ],
            bodies.create_memory,
            _id_out("memory"),
        ),
        tool(
            "db_info",
            "The database this server uses, its latest change sequence number (the starting point for "
            "get_changes), the default write scope and the default read scopes. Call it first. Passing the "
            "write scope as a read's `scope` narrows that read when the default read set is wider.",
            [],
            bodies.db_info,
            _output(
                {
                    "current_seq": {
                        "description": "The latest change-log sequence number (0 when empty).",
                        "minimum": 0,
                        "type": "integer",
                    },
                    "default_read_scopes": {
                        "description": "Scopes a read without `scope`/`scopes` looks through.",
                        "items": {"type": "string"},
                        "type": "array",
                    },
                    "default_scope": {"description": "The scope a write without `scope` lands in.", "type": "string"},
                    "path": {"description": "The database file.", "type": "string"},
                },
                "path",
                "current_seq",
                "default_scope",
                "default_read_scopes",
            ),
            strict=False,
        ),
        tool(
            "find_by_prop",
            "Nodes whose property has exactly this value (type and case included), for (label, property) "
            "pairs the index spec declares equality-indexed, such as an Entity's name. For words and "
            "phrases use search_memories.",
            [
                Param("label", "string", 'The node label, e.g. "Entity".', required=True),
                Param("prop", "string", "The property; it must be equality-indexed for this label.", required=True),
                Param(
                    "value",
                    "json",
                    'The value: a string, integer or boolean ("1815" does not match 1815).',
                    required=True,
                    schema={"type": ["string", "integer", "boolean"]},
                ),
                _SCOPE_READ,
                _SCOPES_READ,
            ],
            bodies.find_by_prop,
            _output({"nodes": {"description": "The matching nodes, by id.", "items": {}, "type": "array"}}, "nodes"),
        ),
        tool(
            "get_changes",
            "The change log from a sequence number on (inclusive), across every scope: for syncing and "
            "consolidation. db_info gives the latest seq. `limit` pages through a long log. Only available "
            "when the server runs with --allow-unscoped-changes.",
            [
                Param(
                    "since_seq",
                    "u64",
                    "The first sequence number to return (0 and 1 both mean the start).",
                    required=True,
                ),
                Param(
                    "limit",
                    "u64",
                    "At most this many operations (default: all); continue from the last seq + 1.",
                    optional=True,
                    minimum=1,
                ),
            ],
            bodies.get_changes,
            _output(
                {
                    "ops": {
                        "description": "Operations, oldest first.",
                        "items": {"$ref": "#/$defs/ChangeEventJson"},
                        "type": "array",
                    }
                },
                "ops",
                defs={
                    "ChangeEventJson": {
                        "properties": {
                            "op": {"description": "The operation."},
                            "seq": {
                                "description": "Its position in the change log.",
                                "minimum": 0,
                                "type": "integer",
                            },
                        },
                        "required": ["seq", "op"],
                        "type": "object",
                    }
                },
            ),
        ),
        tool(
            "get_node",
            "One node by id: its label and properties. `found` is false when it does not exist or lies "
            "outside the scopes read. With `as_of`, the node as it was at that time.",
            [
                Param("id", "string", "The node's ULID.", required=True),
                _SCOPE_READ,
                _SCOPES_READ,
                Param(
                    "as_of",
                    "i64",
                    "Read the node as it was at this time (ms since the epoch). Default: now.",
                    optional=True,
                ),
            ],
            bodies.get_node,
            _output(
                {
                    "found": {
                        "description": "Whether the node exists and is visible in the scopes read.",
                        "type": "boolean",
                    },
                    "node": {"description": "The node, when found."},
                },
                "found",
            ),
        ),
        tool(
            "link",
            "Connect two existing nodes with a typed edge that is valid from `valid_from` (default: now), "
            "e.g. a memory to the entities it is about. Nodes in two different private scopes can only be "
            "linked through the shared scope. Returns the edge id.",
            [
                Param("from_id", "string", "The source node's ULID.", required=True),
                Param("to_id", "string", "The target node's ULID.", required=True),
                Param(
                    "edge_type", "string", 'The edge type, e.g. "works_on"; traverse can filter on it.', required=True
                ),
                _SCOPE_WRITE,
                Param(
                    "props",
                    "json",
                    "Properties of the edge: string, number or boolean values.",
                    optional=True,
                    schema=_PROPS_IN,
                ),
                Param(
                    "valid_from",
                    "i64",
                    "When the relation became true, in ms since the epoch. Default: now.",
                    optional=True,
                ),
            ],
            bodies.link,
            _id_out("edge"),
        ),
        tool(
            "remove_node",
            "Delete a node for good, with every edge touching it. Fails if it does not exist. Returns the write's seq.",
            [Param("id", "string", "The node's ULID.", required=True)],
            bodies.remove_node,
            _SEQ_OUT,
        ),
        tool(
            "search_memories",
            "Full-text search (BM25) over the text-indexed properties, by default memory content. Returns "
            "up to k nodes, best first, with scores.",
            [Param("query", "string", "Words to look for.", required=True), _k("results"), _SCOPE_READ, _SCOPES_READ],
            bodies.search_memories,
            _hits_out("Best first."),
        ),
        tool(
            "search_vectors",
            "Nodes whose embedding under `model` is most similar (cosine) to the query vector, which the "
            "caller computes. `candidates` limits the search to given nodes, e.g. a traversal's. Fails if "
            "k is 0, the vector is empty, or its length differs from the model's vectors.",
            [
                Param("model", "string", "The embedding model's name.", required=True),
                Param("vector", "json", "The query embedding: finite numbers.", required=True, schema=_VECTOR),
                _k("results"),
                _SCOPE_READ,
                _SCOPES_READ,
                Param("candidates", "strings", "Only score these node ULIDs.", optional=True),
            ],
            bodies.search_vectors,
            _hits_out("Most similar first."),
        ),
        tool(
            "set_embedding",
            "Store a node's embedding under `model` (computed by the caller). A node keeps one embedding; a "
            "new one replaces it. Fails if the node does not exist, the vector is empty or not finite, or "
            "its length differs from the model's other vectors. Returns the write's seq.",
            [
                Param("id", "string", "The node's ULID.", required=True),
                Param("model", "string", "The embedding model's name.", required=True),
                Param("vector", "json", "The embedding: finite numbers.", required=True, schema=_VECTOR),
            ],
            bodies.set_embedding,
            _SEQ_OUT,
        ),
        tool(
            "set_node_props",
            "Set properties on an existing node; a null value removes that property. Fails if the node does "
            "not exist. Returns the write's seq.",
            [
                Param("id", "string", "The node's ULID.", required=True),
                Param(
                    "props",
                    "json",
                    "Properties to set (string, number or boolean) or remove (null).",
                    required=True,
                    schema={"additionalProperties": True, "type": "object"},
                ),
            ],
            bodies.set_node_props,
            _SEQ_OUT,
        ),
        tool(
            "submit_batch",
            "Run several writes at once, all or nothing. `commands` is a list of objects whose `op` is "
            "create_memory {content, scope?, props?}, create_entity {name, scope?, props?}, link {from, to, "
            "type, scope?, props?, valid_from?}, set_node_props {id, props}, remove_node {id}, close_edge "
            '{id, valid_to?} or set_embedding {id, model, vector}. An id may be "#N": the id made by the '
            "Nth earlier command (from 0). Returns each command's new id, or null.",
            [
                Param(
                    "commands",
                    "json",
                    'The commands, in order; "#N" in an id field refers to command N (0-based, earlier only).',
                    required=True,
                    schema={"items": {}, "type": "array"},
                )
            ],
            bodies.submit_batch,
            _output(
                {
                    "ids": {
                        "description": "Per command: the node or edge id it made, or null.",
                        "items": {"type": ["string", "null"]},
                        "type": "array",
                    }
                },
                "ids",
            ),
        ),
        tool(
            "traverse",
            "The nodes and edges around a node, up to max_hops (1 to 4) away, over edges valid now (or at "
            "`as_of`). Filter by direction and edge type. The start node is included.",
            [
                Param("seed_id", "string", "The ULID of the node to start from.", required=True),
                Param("max_hops", "u8", "How far to walk: 1 to 4.", default=2, minimum=1, maximum=4),
                Param(
                    "direction",
                    ("out", "in", "both"),
                    "Follow outgoing edges, incoming ones, or both.",
                    default="both",
                    enum_name="DirectionParam",
                    enum_description="Which edges to follow from a node.",
                ),
                Param("edge_types", "strings", "Only follow edges of these types.", optional=True),
                _SCOPE_READ,
                _SCOPES_READ,
                Param(
                    "as_of",
                    "i64",
                    "Walk the graph as it was at this time (ms since the epoch). Default: now.",
                    optional=True,
                ),
            ],
            bodies.traverse,
            _output({"subgraph": {"description": "`{nodes, edges}` reached from the start node."}}, "subgraph"),
        ),
    ]
    return tuple(tools)
