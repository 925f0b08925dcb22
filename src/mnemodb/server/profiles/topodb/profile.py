"""The topodb profile: its tool table, and how it shapes results and errors as topodb-mcp did."""

from __future__ import annotations

import json
import logging
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, CallToolResult, TextContent

from mnemodb.engine import EngineError
from mnemodb.server.profile import Profile, Tool
from mnemodb.server.profiles.topodb.handlers import TopodbTools
from mnemodb.server.profiles.topodb.tools import REJECTED_PREFIX, build_tools
from mnemodb.server.profiles.topodb.wire import ToolError, engine_message
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
