"""The topodb profile: its tool table, and how it shapes results and errors as topodb-mcp did."""

from __future__ import annotations

import json
import logging
from typing import Any

from mnemodb.engine import EngineError
from mnemodb.server.profile import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    Profile,
    ProtocolError,
    StructuredText,
    Tool,
    ToolResult,
    compact_json,
    exact_json,
    tool_result,
)
from mnemodb.server.profiles.topodb.handlers import TopodbTools
from mnemodb.server.profiles.topodb.tools import REJECTED_PREFIX, build_tools
from mnemodb.server.profiles.topodb.wire import SortedReply, ToolError, engine_message
from mnemodb.server.schema import Invalid
from mnemodb.server.serde_params import sorted_json

log = logging.getLogger("mnemodb.server")

INSTRUCTIONS = (
    "mnemodb serving the topodb tool set: agent memory as a property graph whose edges are valid "
    "over time. Every read looks through a set of scopes: pass `scopes` (a list) or `scope` (one), "
    "or leave both out for the server's default read set. Every write lands in exactly one scope: "
    "pass `scope`, or leave it out for the server's default write scope. The default read set may "
    "be wider than the write scope; db_info shows both, so call it first."
)


def _sorted_text(reply: SortedReply) -> str:
    """A reply's text, compact, non-ASCII characters as they are. orjson writes the same
    text as the standard library's encoder for a reply without floats, in a tenth of its
    time (the standard library took a fifth of a 2-hop traversal's instructions); what it
    refuses (a lone surrogate, an integer past 64 bits) goes to the standard library."""
    return compact_json(reply.value) if reply.floatless else exact_json(reply.value)


class TopodbProfile(Profile):
    name = "topodb"
    server_name = "topodb-mcp"
    instructions = INSTRUCTIONS

    def __init__(self, *, db_path: str = "", allow_unscoped_changes: bool = False) -> None:
        self.tools = build_tools(TopodbTools(db_path=db_path, allow_unscoped_changes=allow_unscoped_changes))

    @staticmethod
    def _json(value: Any) -> ToolResult:
        if isinstance(value, SortedReply):
            return tool_result(StructuredText(_sorted_text(value)), value.value)
        text = json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
        return tool_result(StructuredText(text), sorted_json(value))

    def success(self, tool: Tool, value: Any) -> ToolResult:
        return self._json(value)

    def failure(self, tool: Tool, error: Exception) -> ToolResult:
        if isinstance(error, ToolError):
            raise ProtocolError(error.code, str(error))
        if isinstance(error, EngineError):
            message = engine_message(error)
            if tool.name in REJECTED_PREFIX:
                message = f"rejected: {message}"
            raise ProtocolError(INVALID_PARAMS, message)
        log.exception("tool %s failed unexpectedly", tool.name, exc_info=error)
        raise ProtocolError(INTERNAL_ERROR, f"internal error: {type(error).__name__} (details in the server log)")

    def invalid(self, tool: Tool, error: Invalid) -> ToolResult:
        message = "; ".join(str(issue.get("message", "")) for issue in error.issues)
        return tool_result(f"failed to deserialize parameters: {message}", is_error=True)

    def timeout(self, tool: Tool, timeout_ms: int) -> ToolResult:
        raise ProtocolError(INTERNAL_ERROR, f"{tool.name} timed out after {timeout_ms}ms; nothing was changed")

    def unknown_tool(self, name: str) -> ToolResult:
        raise ProtocolError(INVALID_PARAMS, "tool not found")


def build(*, db_path: str = "", allow_unscoped_changes: bool = False) -> TopodbProfile:
    return TopodbProfile(db_path=db_path, allow_unscoped_changes=allow_unscoped_changes)
