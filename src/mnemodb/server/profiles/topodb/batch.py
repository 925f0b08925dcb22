"""topodb's batch language: a JSON array of commands whose ids may point back at what an
earlier command of the same batch created."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NoReturn

from mnemodb.engine.properties import (
    CloseEdge,
    Command,
    CreateNode,
    Link,
    NodeRef,
    Ref,
    RemoveNode,
    SetEmbedding,
    SetProps,
)
from mnemodb.server.profiles.topodb.wire import (
    NOT_A_BATCH,
    ToolError,
    parse_id,
    parse_scope,
    props_in,
    rust_debug,
    vector_in,
)
from mnemodb.server.serde_params import I64_MAX, I64_MIN, U64_MAX

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
