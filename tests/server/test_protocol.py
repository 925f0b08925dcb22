"""The stdio transport of the memdb profile, driven line by line.

memdb answered what the SDK would silently drop: unparseable lines, JSON-RPC batches,
invalid messages, over-long lines, unsupported protocol versions and requests out of
handshake order. These tests send such lines raw and check the exact replies, and that
the server keeps answering afterwards. To show that a line got no reply, they send a
`ping` behind it: the server answers in order, so the next line must be the ping's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support import RawServer, serve_command

INITIALIZE_PARAMS = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
PARSE_ERROR = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
NOT_INITIALIZED = "Invalid request: initialize must be sent before other requests"
MIB = 1024 * 1024


def invalid_request(request_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32600, "message": "Invalid request"}}


def error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def assert_error(reply: dict[str, Any], expected: dict[str, Any]) -> None:
    assert reply == expected
    assert list(reply) == ["jsonrpc", "id", "error"]
    assert list(reply["error"]) == ["code", "message"]


def assert_next_is_ping(server: RawServer) -> None:
    """Nothing else is queued before the answer to a fresh ping."""
    reply = server.request("ping")
    assert reply["result"] == {}


def assert_still_serving(server: RawServer, content: str) -> None:
    stored = server.call("store_memory", {"content": content, "tags": ["alive"]})
    assert stored["isError"] is False, stored
    digest = stored["structuredContent"]["result"]["hash"]
    fetched = server.call("get_memory", {"hash": digest})
    assert fetched["structuredContent"]["result"]["content"] == content


def test_unparseable_and_empty_lines_get_a_parse_error(raw_server: RawServer) -> None:
    for line in (b"not json", b"{bad", b'{"jsonrpc":"2.0",', b"NaN", b"", b"   ", b"\r", b"\xff\xfe"):
        raw_server.send_raw(line + b"\n")
        assert_error(raw_server.recv(), PARSE_ERROR)
    raw_server.initialize()
    raw_server.send_raw(b"}{\n")
    assert_error(raw_server.recv(), PARSE_ERROR)
    raw_server.send_raw(b"\n")
    assert_error(raw_server.recv(), PARSE_ERROR)
    assert_still_serving(raw_server, "after parse errors")


def test_crlf_line_endings_are_accepted(raw_server: RawServer) -> None:
    raw_server.send_raw(b'{"jsonrpc":"2.0","id":"crlf","method":"ping"}\r\n')
    assert raw_server.recv() == {"jsonrpc": "2.0", "id": "crlf", "result": {}}


def test_batches_are_rejected_per_id(raw_server: RawServer) -> None:
    raw_server.initialize()
    raw_server.send(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": "two", "method": "tools/list"},
            {"jsonrpc": "2.0", "id": None, "method": "ping"},
        ]
    )
    assert_error(raw_server.recv(), invalid_request(1))
    assert_error(raw_server.recv(), invalid_request("two"))
    assert_next_is_ping(raw_server)  # nothing for the elements without a usable id

    for batch in (
        [{"jsonrpc": "2.0", "method": "notifications/initialized"}, {"jsonrpc": "2.0", "method": "ping"}],
        [],
        [1, "two"],
    ):
        raw_server.send(batch)
        assert_error(raw_server.recv(), invalid_request(None))
        assert_next_is_ping(raw_server)
    assert_still_serving(raw_server, "after batches")


def test_invalid_messages_with_a_usable_id(raw_server: RawServer) -> None:
    raw_server.initialize()
    for message, request_id in (
        ({"jsonrpc": "1.0", "id": 5, "method": "ping"}, 5),
        ({"jsonrpc": "2.0", "id": "s", "method": 7}, "s"),
        ({"id": 6, "method": "ping"}, 6),
    ):
        raw_server.send(message)
        assert_error(raw_server.recv(), invalid_request(request_id))
    assert_still_serving(raw_server, "after invalid messages")


def test_invalid_message_without_an_id_is_dropped(raw_server: RawServer) -> None:
    raw_server.initialize()
    for message in ({"jsonrpc": "2.0"}, {"jsonrpc": "1.0", "method": "ping"}, "a string", 42):
        raw_server.send(message)
        assert_next_is_ping(raw_server)


def assert_answered_before_ping(server: RawServer, message: Any, expected: dict[str, Any]) -> None:
    """`message` gets `expected` as its reply, before the reply to a ping sent right after it."""
    server.send(message)
    server.send({"jsonrpc": "2.0", "id": "sentinel", "method": "ping"})
    assert_error(server.recv(), expected)
    assert server.recv() == {"jsonrpc": "2.0", "id": "sentinel", "result": {}}


def test_null_id_is_an_invalid_request(raw_server: RawServer) -> None:
    raw_server.initialize()
    assert_answered_before_ping(raw_server, {"jsonrpc": "2.0", "id": None, "method": "ping"}, invalid_request(None))
    assert_still_serving(raw_server, "after a null id")


def test_unusable_ids_get_an_invalid_request(raw_server: RawServer) -> None:
    # memdb answered any message whose id is not a string or an integer: with the id
    # itself when it is a number, otherwise with a null id.
    raw_server.initialize()
    for request_id, echoed in ((True, None), ({"n": 1}, None), ([1], None), (1.5, 1.5)):
        message = {"jsonrpc": "2.0", "id": request_id, "method": "ping"}
        assert_answered_before_ping(raw_server, message, invalid_request(echoed))
    assert_still_serving(raw_server, "after odd ids")


def test_over_long_line_is_rejected_and_the_server_recovers(raw_server: RawServer) -> None:
    raw_server.initialize()
    padding = b"x" * (17 * MIB)
    raw_server.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + padding + b'"}}\n')
    assert_error(raw_server.recv(), PARSE_ERROR)
    assert_next_is_ping(raw_server)

    # Rejected as soon as it is too long, before its end arrives; the rest is discarded.
    raw_server.send_raw(b"y" * (17 * MIB))
    assert_error(raw_server.recv(), PARSE_ERROR)
    raw_server.send_raw(b'"still the same line"}\n')
    assert_next_is_ping(raw_server)
    assert_still_serving(raw_server, "after an over-long line")


def test_line_just_under_the_limit_is_accepted(raw_server: RawServer) -> None:
    raw_server.initialize()

    def ping_line(pad: str) -> bytes:
        message = {"jsonrpc": "2.0", "id": "big", "method": "ping", "params": {"_meta": {"pad": pad}}}
        return json.dumps(message, separators=(",", ":")).encode()

    line = ping_line("z" * (16 * MIB - len(ping_line(""))))
    assert len(line) == 16 * MIB
    raw_server.send_raw(line + b"\n")
    assert raw_server.recv() == {"jsonrpc": "2.0", "id": "big", "result": {}}


def test_unsupported_protocol_version_closes_the_connection(raw_server: RawServer) -> None:
    raw_server.send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {**INITIALIZE_PARAMS, "protocolVersion": "2025-03-26"},
        }
    )
    assert_error(
        raw_server.recv(),
        error(
            1,
            -32000,
            "Unsupported protocol version: 2025-03-26 "
            "(supported versions: 2025-11-25, 2025-06-18, 2024-11-05, 2024-10-07)",
        ),
    )
    try:
        extra = raw_server.recv()
    except AssertionError as exc:
        assert "closed stdout" in str(exc)
    else:
        raise AssertionError(f"expected the connection to close, got {extra}")
    assert raw_server.proc.wait(timeout=10) == 0


def initialize_with(db_path: Path, version: str) -> dict[str, Any]:
    server = RawServer(serve_command(db_path))
    try:
        result: dict[str, Any] = server.initialize(version)["result"]
    finally:
        server.close()
    return result


def test_supported_protocol_version_is_echoed(db_path: Path) -> None:
    result = initialize_with(db_path, "2025-06-18")
    assert result["protocolVersion"] == "2025-06-18"
    assert result["serverInfo"]["name"] == "memdb"
    assert "tools" in result["capabilities"]


def test_oldest_supported_protocol_version_is_echoed(db_path: Path) -> None:
    # The guard lists 2024-10-07 as supported, as memdb did; memdb then answered with it.
    assert initialize_with(db_path, "2024-10-07")["protocolVersion"] == "2024-10-07"


def test_handshake_order_is_enforced(raw_server: RawServer) -> None:
    raw_server.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert_error(raw_server.recv(), error(1, -32600, NOT_INITIALIZED))
    raw_server.send({"jsonrpc": "2.0", "id": "c", "method": "tools/call", "params": {"name": "memory_stats"}})
    assert_error(raw_server.recv(), error("c", -32600, NOT_INITIALIZED))
    # ping is allowed before the handshake; notifications are dropped.
    assert_next_is_ping(raw_server)
    raw_server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    raw_server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    assert_next_is_ping(raw_server)
    raw_server.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert_error(raw_server.recv(), error(2, -32600, NOT_INITIALIZED))

    # An initialize that is not well formed is not an initialize.
    raw_server.send({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}})
    assert_error(raw_server.recv(), error(3, -32600, NOT_INITIALIZED))

    reply = raw_server.request("initialize", INITIALIZE_PARAMS)
    assert reply["result"]["protocolVersion"] == "2025-11-25"
    # Between the initialize response and notifications/initialized: still refused.
    raw_server.send({"jsonrpc": "2.0", "id": 4, "method": "tools/list"})
    assert_error(raw_server.recv(), error(4, -32600, NOT_INITIALIZED))
    raw_server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    tools = raw_server.request("tools/list")["result"]["tools"]
    assert len(tools) == 12

    raw_server.send({"jsonrpc": "2.0", "id": 5, "method": "initialize", "params": INITIALIZE_PARAMS})
    assert_error(raw_server.recv(), error(5, -32600, "Invalid request: initialize already received"))
    assert_next_is_ping(raw_server)
    assert_still_serving(raw_server, "after handshake errors")


def test_requests_in_flight_when_stdin_closes_are_answered(raw_server: RawServer) -> None:
    raw_server.initialize()
    raw_server.send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "store_memory", "arguments": {"content": "piped", "tags": ["eof"]}},
        }
    )
    raw_server.send(
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory_stats", "arguments": {}}}
    )
    assert raw_server.close() == 0
    replies = {reply["id"]: reply for reply in (raw_server.recv(), raw_server.recv())}
    assert replies[1].get("result", {}).get("isError") is False, replies[1]
    assert replies[2].get("result", {}).get("structuredContent", {}).get("ok") is True, replies[2]


def test_stdout_carries_only_json_rpc_responses(db_path: Path) -> None:
    # At the most verbose log level, so that any log line sent to stdout would show.
    server = RawServer(serve_command(db_path), env={"MEMDB_LOG_LEVEL": "info"})
    replies: list[dict[str, Any]] = []
    try:
        replies.append(server.request("ping"))
        replies.append(server.initialize())
        replies.append(server.request("tools/list"))
        for name, arguments in (
            ("store_memory", {"content": "logged", "tags": ["log"]}),
            ("search_memories", {"query": "logged"}),
            ("get_memory", {"hash": "0" * 64}),
            ("store_memory", {"content": ""}),
            ("no_such_tool", {}),
        ):
            replies.append(server.request("tools/call", {"name": name, "arguments": arguments}))
        server.send_raw(b"garbage\n")
        replies.append(server.recv())
        server.send([{"jsonrpc": "2.0", "id": 9, "method": "ping"}])
        replies.append(server.recv())
        assert server.close() == 0
        # Anything still queued on stdout must be JSON-RPC too; recv() parses every line.
        while True:
            try:
                replies.append(server.recv())
            except AssertionError as exc:
                assert "closed stdout" in str(exc)
                break
    finally:
        if server.proc.poll() is None:
            server.close()

    assert len(replies) == 10
    for reply in replies:
        assert reply["jsonrpc"] == "2.0"
        assert "id" in reply  # responses only: no logging or other notifications
        assert "method" not in reply
        assert ("result" in reply) != ("error" in reply)
