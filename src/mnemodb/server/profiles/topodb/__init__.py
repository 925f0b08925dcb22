"""The `topodb` profile: topodb-mcp 0.0.4's 16 tools over the engine's property graph.

A client written for `topodb-mcp --db agent.redb --scope X` works unchanged: the same tool
names, parameters (unknown fields refused), JSON shapes, error transport (argument errors
as `isError` results worded like serde, every other failure a JSON-RPC error) and
messages. Deliberate differences, each listed in docs/compatibility.md: a vector of the wrong
dimension is an error rather than an empty result, storing the same memory text or
entity name twice in one scope returns the first node, `get_changes` takes an optional
`limit`, and `get_node` and `traverse` take `as_of` to read the graph as it was.

The package, by concern: `wire` (ids, scopes, values and JSON shapes as topodb-mcp reads and
writes them, and its errors), `batch` (the batch language), `handlers` (the tool bodies),
`tools` (the tool table), `profile` (the profile and its result shapes) and `settings` (its
flags and variables).
"""

from __future__ import annotations

from mnemodb.server.profiles.topodb.batch import parse_batch
from mnemodb.server.profiles.topodb.handlers import TopodbTools
from mnemodb.server.profiles.topodb.profile import INSTRUCTIONS, TopodbProfile, build
from mnemodb.server.profiles.topodb.tools import build_tools
from mnemodb.server.profiles.topodb.wire import ToolError, op_json, parse_scope

__all__ = [
    "INSTRUCTIONS",
    "ToolError",
    "TopodbProfile",
    "TopodbTools",
    "build",
    "build_tools",
    "op_json",
    "parse_batch",
    "parse_scope",
]
