"""topodb-mcp's wire format: its ids, scopes and values as it reads them, its JSON shapes of
nodes, edges and change-log ops, and its errors, worded as it words them."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mnemodb.engine import EngineError
from mnemodb.engine.properties import (
    CommandFailed,
)
from mnemodb.model import ops
from mnemodb.model.ids import SHARED
from mnemodb.model.records import Change, Edge, Node, Scalar
from mnemodb.model.rules import MEMORY_FIELDS
from mnemodb.model.value import Value
from mnemodb.server.profile import INVALID_PARAMS
from mnemodb.server.serde_params import I64_MAX, I64_MIN, U64_MAX, sorted_json

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


class ToolError(Exception):
    """A failure already worded the way topodb-mcp words it, sent as a JSON-RPC error."""

    def __init__(self, message: str, code: int = INVALID_PARAMS) -> None:
        super().__init__(message)
        self.code = code


# -- ids, scopes and values as topodb-mcp reads them ------------------------------------------------

# The alphabet of model/ids.py, spelled again: topodb-mcp's decoding differs from mnemodb's
# (no I/L/O/U aliases, and a value past 128 bits wraps), and its answers depend on that.
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


def _canonical_ulid(text: str) -> str:
    """`ulid_text(ulid_value(text))`: an upper-case ULID under 2**128 (the first character
    at most 7) comes back as it is, told in C by stripping the alphabet; every id a batch
    names takes this path."""
    if len(text) == 26 and text[0] <= "7" and not text.strip(_CROCKFORD):
        return text
    return ulid_text(ulid_value(text))


def parse_id(text: str, what: str = "node") -> str:
    try:
        return _canonical_ulid(text)
    except ValueError as exc:
        raise ToolError(f"invalid {what} id {rust_debug(text)}: {exc}") from None


def parse_scope(text: str) -> str:
    if text.lower() == SHARED:
        return SHARED
    try:
        return _canonical_ulid(text)
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
    import numpy as np  # here, not at the top: a server that never sees a vector never loads numpy

    with np.errstate(over="ignore"):
        narrowed = np.asarray(value, dtype=np.float64).astype(np.float32)
    bad = np.flatnonzero(~np.isfinite(narrowed))
    if bad.size:
        raise ToolError(f"vector element {int(bad[0])} is not finite")
    return tuple(narrowed.tolist())


# -- shapes ------------------------------------------------------------------------------------


def f32(value: float) -> float:
    """A score as topodb-mcp sends it: a float32, widened to a double."""
    narrowed: float = struct.unpack("<f", struct.pack("<f", value))[0]
    return narrowed


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class SortedReply(Value):
    """A tool's value whose objects already have their keys in alphabetical order at every
    level, as topodb-mcp writes them: encoded as it is, without sorting it again (for a
    traversal's reply, sorting took a sixth of the call's CPU)."""

    value: dict[str, Any]
    floatless: bool = False
    """No float anywhere in `value` (`floatless`): orjson then writes the text the standard
    library's encoder does, which spells some floats otherwise (`1e-05` as `0.00001`)."""


_PLAIN = (str, int, float, bool, type(None))
_FLOATLESS = frozenset({str, int, bool, type(None)})


def floatless(items: Iterable[Node | Edge]) -> bool:
    """Whether no property of these nodes or edges is a float or a nested value (which may
    hold one): the rest of their shapes (`node_json`, `edge_json`) is strings, integers
    and nulls."""
    return all(type(value) in _FLOATLESS for item in items for value in item.props.values())


def sorted_props(props: Mapping[str, Any]) -> dict[str, Any]:
    """Properties with their keys in order; a nested value (no topodb profile writes one,
    but another profile may have) sorted too."""
    if not props:  # most edges have none
        return {}
    return {key: value if type(value) in _PLAIN else sorted_json(value) for key, value in sorted(props.items())}


# The shapes below are written with their keys in alphabetical order (see `SortedReply`).


def node_json(node: Node) -> dict[str, Any]:
    return {"id": node.id, "label": node.label, "props": sorted_props(node.props), "scope": node.scope}


def edge_json(edge: Edge) -> dict[str, Any]:
    return {
        "from": edge.src,
        "id": edge.id,
        "props": sorted_props(edge.props),
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
