"""The `topodb` profile: topodb-mcp 0.0.4's 16 tools over the engine's property graph.

A client written for `topodb-mcp --db agent.redb --scope X` works unchanged: the same tool
names, parameters (unknown fields refused), JSON shapes, error transport (argument errors
as `isError` results worded like serde, every other failure a JSON-RPC error) and
messages. Deliberate differences, each listed in docs/compatibility.md: a vector of the wrong
dimension is an error rather than an empty result, storing the same memory text or
entity name twice in one scope returns the first node, `get_changes` takes an optional
`limit`, and `get_node` and `traverse` take `as_of` to read the graph as it was.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import PurePath
from typing import Any, NoReturn

import numpy as np
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, CallToolResult, TextContent

from mnemodb.engine import Engine, EngineError
from mnemodb.engine.properties import (
    CloseEdge,
    Command,
    CommandFailed,
    CreateNode,
    Link,
    NodeRef,
    Ref,
    RemoveNode,
    SetEmbedding,
    SetProps,
)
from mnemodb.engine.tokens import current_grant
from mnemodb.model import ops
from mnemodb.model.ids import SHARED
from mnemodb.model.records import Change, Edge, Node, Scalar
from mnemodb.model.rules import MEMORY_FIELDS
from mnemodb.server.profile import Profile, Tool
from mnemodb.server.schema import Invalid
from mnemodb.server.serde_params import I64_MAX, I64_MIN, JSON_SCHEMA_2020_12, U64_MAX, Param, Params, sorted_json

log = logging.getLogger("mnemodb.server")

SCOPES_EMPTY = (
    "`scopes` must not be empty (an empty scope set admits nothing); omit it to use the server's default read scopes"
)
CHANGES_DISABLED = (
    "get_changes is disabled: it is the one unscoped read (the op log spans every scope in the db), "
    "so it is off by default. Restart topodb-mcp with --allow-unscoped-changes to enable it."
)
UNSUPPORTED = "unsupported over MCP v0"
INT_RANGE = f"integer out of supported range (max {I64_MAX})"
NOT_AN_OBJECT = "expected a JSON object for props"
NOT_AN_ARRAY = "expected a JSON array of numbers"
NOT_A_BATCH = "batch must be a JSON array of command objects"
# `k` may be any u64; more hits than this never exist, and the database takes 64-bit limits.
MAX_K = 1 << 40

INSTRUCTIONS = (
    "mnemodb serving the topodb tool set: agent memory as a property graph whose edges are valid "
    "over time. Every read looks through a set of scopes: pass `scopes` (a list) or `scope` (one), "
    "or leave both out for the server's default read set. Every write lands in exactly one scope: "
    "pass `scope`, or leave it out for the server's default write scope. The default read set may "
    "be wider than the write scope; db_info shows both, so call it first."
)


class ToolError(Exception):
    """A failure already worded the way topodb-mcp words it, sent as a JSON-RPC error."""

    def __init__(self, message: str, code: int = INVALID_PARAMS) -> None:
        super().__init__(message)
        self.code = code


# -- ids, scopes and values as topodb-mcp reads them ------------------------------------------------

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_DIGITS = {c: i for i, c in enumerate(_CROCKFORD)} | {c.lower(): i for i, c in enumerate(_CROCKFORD)}


def ulid_value(text: str) -> int:
    """A ULID's 128-bit value, decoded as topodb-mcp decodes it: exactly 26 Crockford base32
    characters in either case, no I/L/O/U aliases, and a value past 128 bits wraps.
    ValueError says `invalid length` or `invalid character`."""
    if len(text) != 26:
        raise ValueError("invalid length")
    value = 0
    for ch in text:
        digit = _DIGITS.get(ch)
        if digit is None:
            raise ValueError("invalid character")
        value = (value << 5) | digit
    return value & ((1 << 128) - 1)


def ulid_text(value: int) -> str:
    return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


def rust_debug(text: str) -> str:
    """A string quoted the way Rust's `{:?}` quotes it."""
    return json.dumps(text, ensure_ascii=False)


def parse_id(text: str, what: str = "node") -> str:
    try:
        return ulid_text(ulid_value(text))
    except ValueError as exc:
        raise ToolError(f"invalid {what} id {rust_debug(text)}: {exc}") from None


def parse_scope(text: str) -> str:
    if text.lower() == SHARED:
        return SHARED
    try:
        return ulid_text(ulid_value(text))
    except ValueError as exc:
        raise ToolError(f'invalid scope {rust_debug(text)} (expected "shared" or a ULID): {exc}') from None


def read_scopes(args: Mapping[str, Any]) -> list[str] | None:
    """The read set a call asked for: `scopes` if given, else `scope`, else None (the default)."""
    scopes = args.get("scopes")
    if scopes is not None:
        if not scopes:
            raise ToolError(SCOPES_EMPTY)
        return [parse_scope(s) for s in scopes]
    if args.get("scope") is not None:
        return [parse_scope(args["scope"])]
    return None


def write_scope(args: Mapping[str, Any]) -> str | None:
    return parse_scope(args["scope"]) if args.get("scope") is not None else None


def prop_value(value: Any) -> Scalar:
    """A JSON scalar as a property value (Str, Int, Float or Bool)."""
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        if value > U64_MAX or value < I64_MIN:  # beyond 64 bits JSON numbers are read as floats
            return float(value)
        if value > I64_MAX:
            raise ToolError(INT_RANGE)
        return value
    if isinstance(value, float):
        return value
    raise ToolError(UNSUPPORTED)


def props_in(value: Any, *, reserved: str | None = None, removals: bool = False) -> dict[str, Any]:
    """A `props` object as property values; with `removals`, null stays (it removes the key)."""
    if not isinstance(value, dict):
        raise ToolError(NOT_AN_OBJECT)
    out: dict[str, Any] = {}
    for key, item in value.items():
        if reserved is not None and key == reserved:
            raise ToolError(
                f"props must not include {rust_debug(reserved)}: it is already set from the tool's own parameter"
            )
        out[key] = None if item is None and removals else prop_value(item)
    return out


def vector_in(value: Any) -> tuple[float, ...]:
    """A JSON array of numbers as float32 values; ToolError names the first bad element."""
    if not isinstance(value, list):
        raise ToolError(NOT_AN_ARRAY)
    for i, item in enumerate(value):
        if isinstance(item, bool) or not isinstance(item, int | float):
            raise ToolError(f"vector element {i} is not a number: {json.dumps(item, separators=(',', ':'))}")
    with np.errstate(over="ignore"):
        narrowed = np.asarray(value, dtype=np.float64).astype(np.float32)
    bad = np.flatnonzero(~np.isfinite(narrowed))
    if bad.size:
        raise ToolError(f"vector element {int(bad[0])} is not finite")
    return tuple(narrowed.tolist())


# -- shapes ------------------------------------------------------------------------------------


def f32(value: float) -> float:
    """A score as topodb-mcp sends it: a float32, widened to a double."""
    return float(np.float32(value))


def node_json(node: Node) -> dict[str, Any]:
    return {"id": node.id, "label": node.label, "props": dict(node.props), "scope": node.scope}


def edge_json(edge: Edge) -> dict[str, Any]:
    return {
        "from": edge.src,
        "id": edge.id,
        "props": dict(edge.props),
        "scope": edge.scope,
        "to": edge.dst,
        "type": edge.type,
        "valid_from": edge.valid_from,
        "valid_to": edge.valid_to,
    }


def tagged(value: Any) -> Any:
    """A property value in the change log's externally tagged form."""
    if value is None:
        return None
    if isinstance(value, bool):
        return {"Bool": value}
    if isinstance(value, int):
        return {"Int": value}
    if isinstance(value, float):
        return {"Float": value}
    return {"Str": str(value)}


def scope_tagged(scope: str) -> Any:
    return "Shared" if scope == SHARED else {"Id": scope}


def op_json(change: Change) -> dict[str, Any]:
    """One change-log entry as topodb's op. Operations topodb has no op for are written as
    the nearest one a topodb reader understands: a memory edit or a tag or observation
    change is a `SetNodeProps` of what changed in the node's properties (possibly none),
    and an edge deleted by another profile is a `CloseEdge` at the time it went."""
    data = change.data
    node_id = data.get("id", change.target)
    if change.op == "create_node":
        props = {k: tagged(v) for k, v in ops.node_props(data).items()}
        return {
            "CreateNode": {"id": node_id, "label": data["label"], "props": props, "scope": scope_tagged(data["scope"])}
        }
    if change.op == "create_edge":
        return {
            "CreateEdge": {
                "from": data["from"],
                "id": node_id,
                "props": {k: tagged(v) for k, v in (data.get("props") or {}).items()},
                "scope": scope_tagged(data["scope"]),
                "to": data["to"],
                "ty": data["type"],
                "valid_from": data["valid_from"],
            }
        }
    if change.op == "set_props":
        return {"SetNodeProps": {"id": node_id, "props": {k: tagged(v) for k, v in data["props"].items()}}}
    if change.op == "update_node":
        shown = {k: v for k, v in (data.get("set") or {}).items() if k in ("content", *MEMORY_FIELDS)}
        # A field set back to its default is no longer shown: a removal.
        props = {k: None if k in MEMORY_FIELDS and v == MEMORY_FIELDS[k] else tagged(v) for k, v in shown.items()}
        return {"SetNodeProps": {"id": node_id, "props": props}}
    if change.op == "remove_node":
        return {"RemoveNode": {"id": node_id}}
    if change.op == "close_edge":
        return {"CloseEdge": {"id": node_id, "valid_to": data["valid_to"]}}
    if change.op == "remove_edge":
        return {"CloseEdge": {"id": node_id, "valid_to": change.at}}
    if change.op == "set_embedding":
        return {
            "SetEmbedding": {
                "id": node_id,
                "model": data["model"],
                "vector": ops.embedding_vector(data),
            }
        }
    return {"SetNodeProps": {"id": node_id, "props": {}}}


def debug_id(value: str, kind: str = "node") -> str:
    """An id as topodb's engine prints it in errors: `NodeId(Ulid(<128-bit value>))`."""
    wrapper = "EdgeId" if kind == "edge" else "NodeId"
    return f"{wrapper}(Ulid({ulid_value(value)}))"


def engine_message(error: EngineError) -> str:
    """An engine refusal in topodb's words (ids written as its engine writes them)."""
    if isinstance(error, CommandFailed):
        if error.op == "CreateEdge":
            head = f"CreateEdge {debug_id(error.edge, 'edge')}" if error.edge else "CreateEdge"
            if error.subject:
                return f"{head}: {error.end} node {debug_id(error.subject)} {error.reason}"
            return f"{head}: {error.reason}"
        if error.subject:
            kind = error.subject_kind or "node"
            return f"{error.op}: {kind} {debug_id(error.subject, kind)} {error.reason}"
    return str(error)


# -- tools -----------------------------------------------------------------------------------


class TopodbTools:
    """The tool bodies, bound to the server's settings."""

    def __init__(self, *, db_path: str, allow_unscoped_changes: bool) -> None:
        self.db_path = db_path
        self.allow_unscoped_changes = allow_unscoped_changes

    def db_info(self, engine: Engine, a: dict[str, Any]) -> Any:
        # A call under a token (a team server) gets the file's name only: where the server
        # keeps its files is the operator's business, and the directories often name a user.
        # The key stays, since topodb clients read it.
        path = self.db_path if current_grant() is None else PurePath(self.db_path).name
        return {
            "current_seq": engine.current_seq(),
            "default_read_scopes": list(engine.read_scopes),
            "default_scope": engine.write_scope,
            "path": path,
        }

    def get_node(self, engine: Engine, a: dict[str, Any]) -> Any:
        node_id = parse_id(a["id"])
        node = engine.nodes.get_node(node_id, scopes=read_scopes(a), as_of=a["as_of"])
        return {"found": False} if node is None else {"found": True, "node": node_json(node)}

    def find_by_prop(self, engine: Engine, a: dict[str, Any]) -> Any:
        value = prop_value(a["value"])
        nodes = engine.nodes.find_by_prop(a["label"], a["prop"], value, scopes=read_scopes(a))
        return {"nodes": [node_json(n) for n in sorted(nodes, key=lambda n: n.id)]}

    def search_memories(self, engine: Engine, a: dict[str, Any]) -> Any:
        hits = engine.nodes.search_text(a["query"], k=min(a["k"], MAX_K), scopes=read_scopes(a))
        return {"hits": [{"node": node_json(node), "score": f32(score)} for node, score in hits]}

    def traverse(self, engine: Engine, a: dict[str, Any]) -> Any:
        seed = parse_id(a["seed_id"])
        nodes, edges = engine.nodes.traverse(
            seed,
            max_hops=a["max_hops"],
            direction=a["direction"],
            edge_types=a["edge_types"],
            scopes=read_scopes(a),
            as_of=a["as_of"],
        )
        return {"subgraph": {"edges": [edge_json(e) for e in edges], "nodes": [node_json(n) for n in nodes]}}

    def access_stats(self, engine: Engine, a: dict[str, Any]) -> Any:
        node_id = parse_id(a["id"])
        stats = engine.nodes.access_stats(node_id, scopes=read_scopes(a))
        if stats is None:
            return {"found": False}
        count, last = stats
        return {"access_count": count, "found": True, "last_accessed_at": last}

    def search_vectors(self, engine: Engine, a: dict[str, Any]) -> Any:
        scopes = read_scopes(a)
        vector = vector_in(a["vector"])
        candidates = [parse_id(c) for c in a["candidates"]] if a["candidates"] is not None else None
        hits = engine.nodes.search_vectors(
            a["model"], vector, k=min(a["k"], MAX_K), candidates=candidates, scopes=scopes
        )
        return {"hits": [{"node": node_json(node), "score": f32(score)} for node, score in hits]}

    def get_changes(self, engine: Engine, a: dict[str, Any]) -> Any:
        if not self.allow_unscoped_changes:
            raise ToolError(CHANGES_DISABLED)
        since = min(max(1, a["since_seq"]), I64_MAX)
        limit = min(a["limit"], I64_MAX) if a["limit"] is not None else None
        changes = engine.changes(since, limit)
        return {"ops": [{"op": op_json(c), "seq": c.seq} for c in changes]}

    def create_memory(self, engine: Engine, a: dict[str, Any]) -> Any:
        props = props_in(a["props"], reserved="content") if a["props"] is not None else {}
        command = CreateNode("Memory", {"content": a["content"], **props}, write_scope(a))
        ids, _ = engine.nodes.submit([command])
        return {"id": ids[0]}

    def create_entity(self, engine: Engine, a: dict[str, Any]) -> Any:
        props = props_in(a["props"], reserved="name") if a["props"] is not None else {}
        command = CreateNode("Entity", {"name": a["name"], **props}, write_scope(a))
        ids, _ = engine.nodes.submit([command])
        return {"id": ids[0]}

    def link(self, engine: Engine, a: dict[str, Any]) -> Any:
        src, dst = parse_id(a["from_id"]), parse_id(a["to_id"])
        props = props_in(a["props"]) if a["props"] is not None else {}
        command = Link(src, dst, a["edge_type"], props, write_scope(a), a["valid_from"])
        ids, _ = engine.nodes.submit([command])
        return {"id": ids[0]}

    def set_node_props(self, engine: Engine, a: dict[str, Any]) -> Any:
        node_id = parse_id(a["id"])
        _, seq = engine.nodes.submit([SetProps(node_id, props_in(a["props"], removals=True))])
        return {"seq": seq}

    def remove_node(self, engine: Engine, a: dict[str, Any]) -> Any:
        _, seq = engine.nodes.submit([RemoveNode(parse_id(a["id"]))])
        return {"seq": seq}

    def close_edge(self, engine: Engine, a: dict[str, Any]) -> Any:
        _, seq = engine.nodes.submit([CloseEdge(parse_id(a["id"], "edge"), a["valid_to"])])
        return {"seq": seq}

    def set_embedding(self, engine: Engine, a: dict[str, Any]) -> Any:
        node_id = parse_id(a["id"])
        _, seq = engine.nodes.submit([SetEmbedding(node_id, a["model"], vector_in(a["vector"]))])
        return {"seq": seq}

    def submit_batch(self, engine: Engine, a: dict[str, Any]) -> Any:
        ids, _ = engine.nodes.submit(parse_batch(a["commands"]))
        return {"ids": ids}


# -- the batch language --------------------------------------------------------------------------

# What each op produces: a node id, an edge id, or nothing.
_PRODUCES = {
    "create_memory": "node",
    "create_entity": "node",
    "link": "edge",
    "set_node_props": None,
    "remove_node": None,
    "close_edge": None,
    "set_embedding": None,
}
_BACK_REF = re.compile(r"\+?[0-9]+")


class _Batch:
    """Reads one command at a time; every error names the command (0-based)."""

    def __init__(self) -> None:
        self.kinds: list[str | None] = []
        self.index = 0

    def fail(self, message: str) -> NoReturn:
        raise ToolError(f"command #{self.index}: {message}")

    def string(self, command: Mapping[str, Any], name: str) -> str:
        value = command.get(name)
        if not isinstance(value, str):
            self.fail(f"missing string field {rust_debug(name)}")
        return value

    def scope(self, command: Mapping[str, Any]) -> str | None:
        value = command.get("scope")
        if value is None:
            return None
        if not isinstance(value, str):
            self.fail('"scope" must be a string')
        try:
            return parse_scope(value)
        except ToolError as exc:
            self.fail(str(exc))

    def time(self, command: Mapping[str, Any], name: str) -> int | None:
        value = command.get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not I64_MIN <= value <= I64_MAX:
            self.fail(f"{rust_debug(name)} must be an integer")
        return value

    def props(self, command: Mapping[str, Any], *, reserved: str | None = None, removals: bool = False) -> Any:
        try:
            return props_in(command.get("props"), reserved=reserved, removals=removals)
        except ToolError as exc:
            self.fail(str(exc))

    def ref(self, command: Mapping[str, Any], name: str, kind: str) -> NodeRef:
        text = self.string(command, name)
        if not text.startswith("#"):
            try:
                return parse_id(text, f"{name} {kind}")
            except ToolError as exc:
                self.fail(str(exc))
        # As Rust parses a usize: leading zeros are fine, a value past 64 bits is no number
        # (and Python's int() refuses 4,300 digits or more).
        significant = text[1:].lstrip("+").lstrip("0") or "0"
        if not _BACK_REF.fullmatch(text[1:]) or len(significant) > 20 or int(significant) > U64_MAX:
            self.fail(f"{name} back-ref {rust_debug(text)} is not #<number>")
        target = int(significant)
        if target >= self.index:
            self.fail(f"{name} back-ref {rust_debug(text)} must point to an earlier command")
        produced = self.kinds[target]
        if produced is None:
            self.fail(f"{name} back-ref #{target} refers to a command that produces no id")
        if produced != kind:
            self.fail(f"{name} back-ref #{target} refers to a {produced} id but a {kind} id is required here")
        return Ref(target)

    def command(self, command: Any) -> Command:
        if not isinstance(command, dict):
            self.fail("expected a JSON object")
        op = command.get("op")
        if not isinstance(op, str):
            self.fail('missing string field "op"')
        if op not in _PRODUCES:
            self.fail(f"unknown op {rust_debug(op)}")
        self.kinds.append(_PRODUCES[op])
        if op == "create_memory":
            content = self.string(command, "content")
            scope = self.scope(command)
            props = self.props(command, reserved="content") if "props" in command else {}
            return CreateNode("Memory", {"content": content, **props}, scope)
        if op == "create_entity":
            name = self.string(command, "name")
            scope = self.scope(command)
            props = self.props(command, reserved="name") if "props" in command else {}
            return CreateNode("Entity", {"name": name, **props}, scope)
        if op == "link":
            self.string(command, "from")
            self.string(command, "to")
            edge_type = self.string(command, "type")
            scope = self.scope(command)
            src = self.ref(command, "from", "node")
            dst = self.ref(command, "to", "node")
            props = self.props(command) if "props" in command else {}
            return Link(src, dst, edge_type, props, scope, self.time(command, "valid_from"))
        if op == "set_node_props":
            node = self.ref(command, "id", "node")
            if "props" not in command:
                self.fail('set_node_props requires "props"')
            return SetProps(node, self.props(command, removals=True))
        if op == "remove_node":
            return RemoveNode(self.ref(command, "id", "node"))
        if op == "close_edge":
            return CloseEdge(self.ref(command, "id", "edge"), self.time(command, "valid_to"))
        node = self.ref(command, "id", "node")
        model = self.string(command, "model")
        if "vector" not in command:
            self.fail('set_embedding requires "vector"')
        try:
            vector = vector_in(command["vector"])
        except ToolError as exc:
            self.fail(str(exc))
        return SetEmbedding(node, model, vector)


def parse_batch(commands: Any) -> list[Command]:
    """The batch language: a JSON array of `{"op": ..., ...}` objects, ids literal or `#N`."""
    if not isinstance(commands, list):
        raise ToolError(NOT_A_BATCH)
    reader = _Batch()
    out: list[Command] = []
    for index, command in enumerate(commands):
        reader.index = index
        out.append(reader.command(command))
    return out


# -- the tool table ------------------------------------------------------------------------------

# Tools whose engine refusals keep the engine's `rejected: ` prefix, as topodb-mcp sent them.
REJECTED_PREFIX = frozenset({"search_memories", "find_by_prop", "traverse"})

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
        return Tool(name, description, Params(tuple(params), deny_unknown=strict), run, output_schema=output)

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


class TopodbProfile(Profile):
    name = "topodb"
    server_name = "topodb-mcp"
    instructions = INSTRUCTIONS

    def __init__(self, *, db_path: str = "", allow_unscoped_changes: bool = False) -> None:
        self.tools = build_tools(TopodbTools(db_path=db_path, allow_unscoped_changes=allow_unscoped_changes))

    @staticmethod
    def _json(value: Any) -> CallToolResult:
        text = json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content=sorted_json(value), is_error=False
        )

    def success(self, tool: Tool, value: Any) -> CallToolResult:
        return self._json(value)

    def failure(self, tool: Tool, error: Exception) -> CallToolResult:
        if isinstance(error, ToolError):
            raise MCPError(code=error.code, message=str(error))
        if isinstance(error, EngineError):
            message = engine_message(error)
            if tool.name in REJECTED_PREFIX:
                message = f"rejected: {message}"
            raise MCPError(code=INVALID_PARAMS, message=message)
        log.exception("tool %s failed unexpectedly", tool.name, exc_info=error)
        raise MCPError(
            code=INTERNAL_ERROR, message=f"internal error: {type(error).__name__} (details in the server log)"
        )

    def invalid(self, tool: Tool, error: Invalid) -> CallToolResult:
        message = "; ".join(str(issue.get("message", "")) for issue in error.issues)
        return CallToolResult(
            content=[TextContent(type="text", text=f"failed to deserialize parameters: {message}")], is_error=True
        )

    def timeout(self, tool: Tool, timeout_ms: int) -> CallToolResult:
        raise MCPError(code=INTERNAL_ERROR, message=f"{tool.name} timed out after {timeout_ms}ms; nothing was changed")

    def unknown_tool(self, name: str) -> CallToolResult:
        raise MCPError(code=INVALID_PARAMS, message="tool not found")


def build(*, db_path: str = "", allow_unscoped_changes: bool = False) -> TopodbProfile:
    return TopodbProfile(db_path=db_path, allow_unscoped_changes=allow_unscoped_changes)


__all__ = ["TopodbProfile", "build", "op_json", "parse_batch"]
