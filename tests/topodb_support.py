"""Helpers for the topodb profile's black-box tests.

`Topo` drives `mnemodb serve --profile topodb` over stdio and checks the transport of
every reply as topodb-mcp 0.0.4 sends it:

- a success is a tool result whose one text item is the compact JSON of the value, with
  alphabetical keys at every level, and whose `structuredContent` is that same value;
- an argument error is an `isError` tool result reading
  `failed to deserialize parameters: <serde message>`, without `structuredContent`;
- every other failure is a JSON-RPC error, code -32602 unless said otherwise.

ULIDs are decoded here independently of the server, so the `NodeId(Ulid(<decimal>))`
texts of the engine's errors are computed, not copied from a reply.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from inprocess import Wire, wire
from support import PROFILE_TOOLS, RawServer, serve_command

SCOPE_A = "01HV7N8Q3Y2J6W5X4Z9A0B1C2D"
SCOPE_B = "01HV7N8Q3Y2J6W5X4Z9A0B1C2E"
# A well-formed ULID no server ever generates (its time part is in 2016).
MISSING = "01ARZ3NDEKTSV4RRFFQ69G5FAV"

TOOL_NAMES = PROFILE_TOOLS["topodb"]
READ_TOOLS = ["get_node", "find_by_prop", "search_memories", "traverse", "access_stats", "search_vectors"]

DESERIALIZE = "failed to deserialize parameters: "
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
NODE_KEYS = ["id", "label", "props", "scope"]
EDGE_KEYS = ["from", "id", "props", "scope", "to", "type", "valid_from", "valid_to"]

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

# Relative times for edge validity: far enough from now that no test run crosses them.
DAY_MS = 86_400_000


def ulid_int(text: str) -> int:
    """A ULID's 128-bit value (Crockford base32, case-insensitive)."""
    value = 0
    for ch in text.upper():
        value = value * 32 + _CROCKFORD.index(ch)
    return value


def node_debug(ulid: str) -> str:
    return f"NodeId(Ulid({ulid_int(ulid)}))"


def edge_debug(ulid: str) -> str:
    return f"EdgeId(Ulid({ulid_int(ulid)}))"


def compact(value: Any) -> str:
    """JSON as topodb-mcp writes it: compact, keys sorted, non-ASCII kept."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def now_ms() -> int:
    return int(time.time() * 1000)


def wait_past(ms: int) -> None:
    """Return once the wall clock reads later than `ms` (orders writes; asserts no duration)."""
    while now_ms() <= ms:
        time.sleep(0.002)


def is_ulid(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 26 and all(c in _CROCKFORD for c in value)


class Topo:
    """One `mnemodb serve --profile topodb` process (`start`), or the same server in this
    process (`in_process`), spoken to in raw JSON-RPC."""

    def __init__(self, server: RawServer | Wire) -> None:
        self.server = server

    @classmethod
    def start(cls, db: Path | str, *flags: str, env: Mapping[str, str] | None = None, cwd: Path | None = None) -> Topo:
        server = RawServer(serve_command(db, "topodb", *flags), env=env, cwd=cwd)
        server.initialize()
        return cls(server)

    @classmethod
    @contextmanager
    def in_process(cls, db: Path | str, *flags: str, env: Mapping[str, str] | None = None) -> Iterator[Topo]:
        with wire(db, "topodb", *flags, env=env) as peer:
            yield cls(peer)

    @property
    def process(self) -> RawServer:
        assert isinstance(self.server, RawServer), "this server runs in the tests' own process"
        return self.server

    def close(self) -> int:
        return self.process.close()

    def __enter__(self) -> Topo:
        return self

    def __exit__(self, *exc: object) -> None:
        if isinstance(self.server, RawServer) and self.server.proc.poll() is None:
            self.close()

    # -- calls -------------------------------------------------------------------------------

    def reply(self, tool: str, arguments: Any = None) -> dict[str, Any]:
        params: dict[str, Any] = {"name": tool}
        if arguments is not None:
            params["arguments"] = arguments
        return self.server.request("tools/call", params)

    def ok(self, tool: str, arguments: Any = None) -> Any:
        """The value of a successful call, after checking its envelope."""
        reply = self.reply(tool, arguments)
        assert "error" not in reply, (tool, arguments, reply)
        result = reply["result"]
        assert result.get("isError") is False, (tool, arguments, result)
        [item] = result["content"]
        assert item["type"] == "text"
        text = item["text"]
        value = json.loads(text)
        assert text == compact(value), f"not compact JSON with sorted keys: {text}"
        assert result["structuredContent"] == value
        return value

    def error(self, tool: str, arguments: Any = None, code: int = INVALID_PARAMS) -> str:
        """The message of a call that fails with a JSON-RPC error."""
        reply = self.reply(tool, arguments)
        assert "result" not in reply, (tool, arguments, reply)
        error = reply["error"]
        assert error["code"] == code, (tool, arguments, error)
        message: str = error["message"]
        return message

    def arg_error(self, tool: str, arguments: Any = None) -> str:
        """The serde message of a call whose arguments fail to deserialize."""
        reply = self.reply(tool, arguments)
        assert "error" not in reply, (tool, arguments, reply)
        result = reply["result"]
        assert result.get("isError") is True, (tool, arguments, result)
        assert result.get("structuredContent") is None, result
        [item] = result["content"]
        assert item["type"] == "text"
        text: str = item["text"]
        assert text.startswith(DESERIALIZE), text
        return text[len(DESERIALIZE) :]

    # -- conveniences ------------------------------------------------------------------------

    def seq(self) -> int:
        current: int = self.ok("db_info")["current_seq"]
        return current

    def memory(self, content: str, **extra: Any) -> str:
        node_id: str = self.ok("create_memory", {"content": content, **extra})["id"]
        return node_id

    def entity(self, name: str, **extra: Any) -> str:
        node_id: str = self.ok("create_entity", {"name": name, **extra})["id"]
        return node_id

    def link(self, src: str, dst: str, edge_type: str, **extra: Any) -> str:
        edge_id: str = self.ok("link", {"from_id": src, "to_id": dst, "edge_type": edge_type, **extra})["id"]
        return edge_id

    def node(self, node_id: str, **extra: Any) -> dict[str, Any] | None:
        found = self.ok("get_node", {"id": node_id, **extra})
        if not found["found"]:
            assert found == {"found": False}
            return None
        node: dict[str, Any] = found["node"]
        return node

    def subgraph(self, seed: str, **extra: Any) -> tuple[set[str], set[str]]:
        """(node ids, edge ids) that traverse returns from `seed`."""
        graph = self.ok("traverse", {"seed_id": seed, **extra})["subgraph"]
        nodes = [n["id"] for n in graph["nodes"]]
        edges = [e["id"] for e in graph["edges"]]
        assert len(nodes) == len(set(nodes)) and len(edges) == len(set(edges)), graph
        return set(nodes), set(edges)

    def found_ids(self, tool: str, arguments: Mapping[str, Any]) -> list[str]:
        """Node ids returned by find_by_prop or either search tool."""
        value = self.ok(tool, dict(arguments))
        if tool == "find_by_prop":
            return [n["id"] for n in value["nodes"]]
        return [hit["node"]["id"] for hit in value["hits"]]

    def access_count(self, node_id: str) -> int:
        stats = self.ok("access_stats", {"id": node_id, "scopes": ["shared", SCOPE_A, SCOPE_B]})
        assert stats["found"] is True, stats
        count: int = stats["access_count"]
        return count

    def wait_for_access(self, node_id: str, minimum: int = 1, deadline_s: float = 15.0) -> int:
        """Poll access_stats until the asynchronous counter reaches `minimum`."""
        give_up = time.monotonic() + deadline_s
        while True:
            count = self.access_count(node_id)
            if count >= minimum or time.monotonic() > give_up:
                assert count >= minimum, f"access_count stayed at {count} (< {minimum})"
                return count
            time.sleep(0.05)


def check_node(node: Mapping[str, Any]) -> None:
    assert list(node) == NODE_KEYS, node
    assert is_ulid(node["id"]), node
    assert node["scope"] == "shared" or is_ulid(node["scope"]), node
    assert isinstance(node["label"], str) and isinstance(node["props"], dict)


def check_edge(edge: Mapping[str, Any]) -> None:
    assert list(edge) == EDGE_KEYS, edge
    assert is_ulid(edge["id"]) and is_ulid(edge["from"]) and is_ulid(edge["to"]), edge
    assert isinstance(edge["valid_from"], int)
    assert edge["valid_to"] is None or isinstance(edge["valid_to"], int)


def scopes_of(items: Iterable[Mapping[str, Any]]) -> set[str]:
    return {item["scope"] for item in items}
