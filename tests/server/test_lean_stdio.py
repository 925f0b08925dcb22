"""The stdio transport's lean path answers exactly as the SDK does.

Over stdio, `initialize`, `ping`, `tools/list` and `tools/call` of a connection at a
current protocol version are answered without the MCP SDK (`server/lean.py`); the SDK
is started only for the rest. Each test here runs the same messages through a stdio
connection served both ways, in this process over real pipes and a real SQLite file,
and compares every reply: the handshake, the listing, each tool refusing bad arguments,
reads, unknown tools, malformed calls the lean path leaves to the SDK (which then starts
in the middle of a connection the lean path opened), resources and prompts. Writes
differ between two runs (new ids, times), so for them each lean reply is checked to be
what the SDK's own serialiser makes of it.
"""

from __future__ import annotations

import json
import os
import random
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from mcp_types.methods import serialize_server_result
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from inprocess import serve_settings, served
from mnemodb.engine.graph import NewEntity, NewRelation
from mnemodb.server import calls as calls_module
from mnemodb.server import lean as lean_module
from mnemodb.server.app import build_server
from mnemodb.server.calls import ToolCalls
from mnemodb.server.lean import LeanServer
from mnemodb.server.profile import StructuredText, tool_result
from mnemodb.server.profiles import build_profile
from mnemodb.server.stdio import MAX_LINE_BYTES, _encoded, _encoded_result, _parsed, _Splitter, serve_stdio
from support import REPLY_TIMEOUT_S, RawServer, serve_command

pytestmark = pytest.mark.inprocess

PROFILES = ("native", "memdb", "topodb", "knowledge-graph")
ULID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
# Reads of things that are not there, per profile: each answers the same on any database.
READS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "native": [("get", {"refs": [ULID]}), ("recall", {"query": "anything"}), ("survey", {})],
    "memdb": [("get_memory", {"hash": "0" * 64}), ("search_memories", {"query": "anything"})],
    "topodb": [("get_node", {"id": ULID}), ("search_memories", {"query": "x"}), ("db_info", {})],
    "knowledge-graph": [("open_nodes", {"names": ["nobody"]}), ("search_nodes", {"query": "x"}), ("read_graph", {})],
}
WRITES: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "native": [("remember", {"memories": [{"content": "Ada prefers tea", "about": ["Ada"]}]})],
    "memdb": [("store_memory", {"content": "the build uses make", "tags": ["build"]})],
    "topodb": [("create_memory", {"content": "a fact"})],
    "knowledge-graph": [
        ("create_entities", {"entities": [{"name": "Ada", "entityType": "person", "observations": []}]})
    ],
}


def _initialize(version: str, request_id: int = 1) -> dict[str, Any]:
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}


def _call(request_id: int, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def _served_wire(db: Path, profile: str, wire: bytes, *, lean: bool) -> bytes:
    """What `mnemodb serve --profile PROFILE --db DB` (in process, over real pipes) wrote
    back when sent `wire`, 4 KB a write, and then closed."""
    client_to_server, server_from_client = os.pipe()
    server_to_client, client_from_server = os.pipe()
    out = bytearray()

    def read_all() -> None:
        while chunk := os.read(server_to_client, 1 << 16):
            out.extend(chunk)

    def write_all() -> None:
        view = memoryview(wire)
        while view:
            view = view[os.write(server_from_client, view[: 1 << 12]) :]
        os.close(server_from_client)

    threads = [threading.Thread(target=read_all), threading.Thread(target=write_all)]
    for thread in threads:
        thread.start()
    with served(serve_settings(db, profile)) as server:
        spec_profile = build_profile(profile, server.settings)
        calls = ToolCalls(spec_profile, server.engine, tool_timeout_ms=server.settings.tool_timeout_ms)
        lean_server = LeanServer(spec_profile, calls) if lean else None

        async def run() -> None:
            with anyio.fail_after(REPLY_TIMEOUT_S * 4):
                await serve_stdio(
                    lambda: build_server(spec_profile, server.engine, calls=calls),
                    spec_profile.rules,
                    lean=lean_server,
                    fds=(client_to_server, client_from_server),
                )

        anyio.run(run)
    os.close(client_from_server)
    for thread in threads:
        thread.join(REPLY_TIMEOUT_S)
    os.close(client_to_server)
    os.close(server_to_client)
    return bytes(out)


def _exchange(db: Path, profile: str, messages: Sequence[dict[str, Any]], *, lean: bool) -> dict[Any, Any]:
    """Every reply of a stdio connection to `mnemodb serve --profile PROFILE --db DB` that
    was sent `messages` and then closed, by id (notifications the server sent under None)."""
    out = _served_wire(db, profile, b"".join(json.dumps(m).encode() + b"\n" for m in messages), lean=lean)
    replies: dict[Any, Any] = {}
    # The database's path (which a topodb tool reports) is the one thing two runs differ in.
    for line in out.decode().replace(str(db), "DB").splitlines():
        reply = json.loads(line)
        replies.setdefault(reply.get("id"), []).append(reply)
    return replies


def _script(profile: str, version: str, db: Path) -> list[dict[str, Any]]:
    settings = serve_settings(db, profile)
    tools = build_profile(profile, settings).tools
    messages = [
        _initialize(version),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"cursor": "whatever"}},
        _call(5, {"name": "no_such_tool", "arguments": {}}),
        _call(6, {"name": tools[0].name}),  # no arguments at all
    ]
    next_id = 100
    for tool in tools:  # every tool refuses an argument it does not have, in its own words
        messages.append(_call(next_id, {"name": tool.name, "arguments": {"no_such_argument": 1}}))
        next_id += 1
    for name, arguments in READS[profile]:
        messages.append(_call(next_id, {"name": name, "arguments": arguments, "_meta": {"progressToken": 7}}))
        next_id += 1
    # Left to the SDK by the lean path: it starts mid-connection and must answer as if it
    # had seen the handshake.
    messages += [
        _call(50, {}),
        _call(51, {"name": 5}),
        _call(52, {"name": tools[0].name, "arguments": []}),
        {"jsonrpc": "2.0", "id": 53, "method": "resources/list"},
        {"jsonrpc": "2.0", "id": 54, "method": "prompts/list"},
        {"jsonrpc": "2.0", "id": 55, "method": "no/such/method"},
        {"jsonrpc": "2.0", "id": 56, "method": "ping"},
        _call(57, {"name": "no_such_tool", "arguments": {}}),  # lean again, beside the SDK
    ]
    return messages


@pytest.mark.parametrize("version", [*HANDSHAKE_PROTOCOL_VERSIONS, "1999-01-01"])
@pytest.mark.parametrize("profile", PROFILES)
def test_the_lean_path_answers_as_the_sdk_does(tmp_path: Path, profile: str, version: str) -> None:
    messages = _script(profile, version, tmp_path / "script.db")
    by_sdk = _exchange(tmp_path / "sdk.db", profile, messages, lean=False)
    by_lean = _exchange(tmp_path / "lean.db", profile, messages, lean=True)
    assert by_lean == by_sdk
    if "error" in by_sdk[1][0]:  # memdb refuses versions its upstream did not know, and hangs up
        assert set(by_sdk) == {1}
        return
    asked = {m["id"] for m in messages if "id" in m}
    assert set(by_sdk) == asked  # the SDK answered everything, once each
    assert all(len(replies) == 1 for replies in by_sdk.values())


@pytest.mark.parametrize("profile", PROFILES)
def test_written_results_are_what_the_sdk_would_send(tmp_path: Path, profile: str) -> None:
    version = LATEST_HANDSHAKE_VERSION
    messages: list[dict[str, Any]] = [_initialize(version), {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    for i, (name, arguments) in enumerate(WRITES[profile] + READS[profile]):
        messages.append(_call(10 + i, {"name": name, "arguments": arguments}))
    replies = _exchange(tmp_path / "lean.db", profile, messages, lean=True)
    results = [replies[10 + i][0] for i in range(len(messages) - 2)]
    assert all("result" in reply for reply in results), results
    assert not results[0]["result"]["isError"], results[0]
    for reply in results:
        assert serialize_server_result("tools/call", version, reply["result"]) == reply["result"]


def test_the_handshake_versions_are_the_sdks() -> None:
    assert lean_module.HANDSHAKE_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS
    assert lean_module.LATEST_HANDSHAKE_VERSION == LATEST_HANDSHAKE_VERSION


def test_a_cancelled_lean_call_is_not_answered_and_the_connection_goes_on(tmp_path: Path) -> None:
    messages = [
        _initialize(LATEST_HANDSHAKE_VERSION),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        _call(2, {"name": "recall", "arguments": {"query": "x"}}),
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}},
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
    ]
    replies = _exchange(tmp_path / "lean.db", "native", messages, lean=True)
    assert replies[3] == [{"jsonrpc": "2.0", "id": 3, "result": {}}]
    # The call may have been answered before the cancellation arrived; never twice.
    assert len(replies.get(2, [])) <= 1


@pytest.mark.parametrize("is_error", [False, True])
def test_a_structured_text_reply_is_encoded_once_and_reads_the_same(is_error: bool) -> None:
    data = {
        "text": 'quote " backslash \\ newline \n tab \t nul \x00 \u2028 é 日本 🎉',
        "n": [1, 2.5, None, True],
        "e": {},
    }
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    result = tool_result(StructuredText(text), data, is_error=is_error)
    once = _encoded_result("a-1", result)
    assert once.endswith(b"\n") and once.count(b"\n") == 1
    assert json.loads(once) == json.loads(_encoded({"jsonrpc": "2.0", "id": "a-1", "result": result}))
    assert json.loads(once)["result"]["structuredContent"] == data
    # A text that is not marked, or a result with more in it, goes the plain way.
    plain = tool_result(text, data)
    assert _encoded_result(7, plain) == _encoded({"jsonrpc": "2.0", "id": 7, "result": plain})


def test_a_structured_text_reply_has_the_bytes_of_the_plain_encoding() -> None:
    # Every code point but the surrogates, in strings of the data: the text is quoted as the
    # standard library quotes it (no ASCII escaping, lowercase \u escapes for controls).
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    data = {"all": every, "controls": "".join(map(chr, range(32))) + '"\\/\x7f', "list": ["\u2028\u2029", "🎉"]}
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    for request_id in ("a-\u00e9", 0, 2**53):
        result = tool_result(StructuredText(text), data, is_error=False)
        assert _encoded_result(request_id, result) == _encoded({"jsonrpc": "2.0", "id": request_id, "result": result})


def test_a_structured_text_with_its_bytes_has_the_bytes_of_the_plain_encoding() -> None:
    # A profile that keeps orjson's bytes with the text (`StructuredText.of_json`): those
    # bytes are written as the structured content, and the reply is the one the standard
    # library would write.
    data = {"text": 'é "quoted" \\ \x01 🎉 \u2028', "n": [1, -2, 2**63 - 1], "nested": {"k": None, "t": True}}
    text = StructuredText.of_json(orjson.dumps(data))
    assert text == json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    assert text.encoded == text.encode()
    for is_error in (False, True):
        result = tool_result(text, data, is_error=is_error)
        assert _encoded_result(3, result) == _encoded({"jsonrpc": "2.0", "id": 3, "result": result})


@pytest.mark.parametrize(
    "request_id", [0, -1, 2**63 - 1, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**40, "", "x\u00e9\n"]
)
def test_a_structured_text_reply_writes_any_id_as_the_plain_encoding(request_id: str | int) -> None:
    result = tool_result(StructuredText('{"a":1}'), {"a": 1}, is_error=False)
    assert _encoded_result(request_id, result) == _encoded({"jsonrpc": "2.0", "id": request_id, "result": result})


LINES = [
    b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get","arguments":{"refs":["x"]}}}',
    *(str(n).encode() for n in (2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**40, -(10**40))),
    b'{"id":123456789012345678901234567890}',
    b"[0.1, 5e-324, 1.7976931348623157e308, 2.2250738585072011e-308, -0.0, 1E2, 1e400, -1e400, 1.5e-400]",
    b'{"a":1,"a":2.0}',
    rb'"\ud83d\ude00 \u00e9 \u0000 \/"',
    rb'"\ud800"',
    rb'{"id":"\udfff"}',
    b'\xef\xbb\xbf{"id":1}',
    b" \t[ ]\r",
]
REFUSED = [b"NaN", b"[Infinity]", b"-Infinity", b"{bad", b"\xff\xfe", b"1 2", b'"\x01"', b"[" * 100_000]


@pytest.mark.parametrize("line", LINES)
def test_a_line_is_read_as_the_standard_library_reads_it(line: bytes) -> None:
    expected = json.loads(line.decode("utf-8-sig"))
    # repr: an integer past 64 bits must stay an integer, and -0.0 a negative zero.
    assert repr(_parsed(line)) == repr(expected)


@pytest.mark.parametrize("line", REFUSED, ids=range(len(REFUSED)))
def test_a_line_that_is_no_json_is_refused(line: bytes) -> None:
    with pytest.raises((ValueError, RecursionError)):
        _parsed(line)


def test_a_structured_text_with_a_lone_surrogate_cannot_be_encoded() -> None:
    text = StructuredText('{"t":"\ud800"}')
    with pytest.raises((ValueError, TypeError)):
        _encoded_result(1, tool_result(text, {"t": "\ud800"}))


def _as_is(result: dict[str, Any]) -> dict[str, Any]:
    return result


def _seeded_graph(calls: ToolCalls, entities: int) -> None:
    batch = [{"name": f"entity {i}", "entityType": "thing", "observations": [f"fact {i}"]} for i in range(entities)]
    anyio.run(calls.call, "create_entities", {"entities": batch}, _as_is)


def test_reads_are_answered_on_the_calling_thread_and_writes_are_not(tmp_path: Path) -> None:
    with served(serve_settings(tmp_path / "m.db", "knowledge-graph")) as server:
        profile = build_profile("knowledge-graph", server.settings)
        heard: list[tuple[str, str]] = []
        calls = ToolCalls(profile, server.engine, on_tool_call=lambda name, outcome, _: heard.append((name, outcome)))
        write = {"entities": [{"name": "Ada", "entityType": "person", "observations": ["likes tea"]}]}
        assert calls.call_here("create_entities", write, _as_is) is None
        assert calls.call_here("no_such_tool", {}, _as_is) is None
        assert heard == []
        anyio.run(calls.call, "create_entities", write, _as_is)
        here = calls.call_here("open_nodes", {"names": ["Ada"]}, _as_is)
        assert here is not None and here == anyio.run(calls.call, "open_nodes", {"names": ["Ada"]}, _as_is)
        assert "likes tea" in json.dumps(here)
        refused = calls.call_here("open_nodes", {"names": "Ada"}, _as_is)  # not a list
        assert refused is not None and refused["isError"]
        assert heard == [
            ("create_entities", "ok"),
            ("open_nodes", "ok"),
            ("open_nodes", "ok"),
            ("open_nodes", "invalid"),
        ]


def test_memdb_get_memory_is_answered_on_the_calling_thread_as_a_worker_answers_it(tmp_path: Path) -> None:
    with served(serve_settings(tmp_path / "m.db", "memdb")) as server:
        profile = build_profile("memdb", server.settings)
        calls = ToolCalls(profile, server.engine)
        stored = anyio.run(calls.call, "store_memory", {"content": "tea at four", "tags": ["tea"]}, _as_is)
        digest = json.loads(stored["content"][0]["text"])["result"]["hash"]
        assert calls.call_here("store_memory", {"content": "coffee", "tags": ["x"]}, _as_is) is None
        here = calls.call_here("get_memory", {"hash": digest}, _as_is)
        assert here is not None and not here["isError"]
        assert here == anyio.run(calls.call, "get_memory", {"hash": digest}, _as_is)
        missing = calls.call_here("get_memory", {"hash": "0" * 64}, _as_is)
        assert missing is not None and missing == anyio.run(calls.call, "get_memory", {"hash": "0" * 64}, _as_is)
        assert json.loads(missing["content"][0]["text"])["error"]["code"] == "E_NOT_FOUND"
        # Still listed without annotations, as upstream lists it.
        assert next(t for t in profile.tools if t.name == "get_memory").annotations is None


def test_a_read_stopped_at_the_quick_limit_is_answered_in_full_by_a_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "m.db"
    with served(serve_settings(db, "knowledge-graph")) as server:
        profile = build_profile("knowledge-graph", server.settings)
        heard: list[str] = []
        calls = ToolCalls(profile, server.engine, on_tool_call=lambda _, outcome, __: heard.append(outcome))
        _seeded_graph(calls, 500)
        monkeypatch.setattr(calls_module, "QUICK_READ_S", 60.0)  # in time even on a busy machine
        in_full = calls.call_here("read_graph", {}, _as_is)
        assert in_full is not None and len(json.loads(in_full["content"][0]["text"])["entities"]) == 500
        # No time at all on the calling thread: the read is stopped (500 entities are many
        # statements' worth of steps), changes nothing, and is not heard of until it is run.
        monkeypatch.setattr(calls_module, "QUICK_READ_S", 0.0)
        heard.clear()
        assert calls.call_here("read_graph", {}, _as_is) is None
        assert heard == []
    messages = [
        _initialize(LATEST_HANDSHAKE_VERSION),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        _call(2, {"name": "read_graph", "arguments": {}}),
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
    ]
    replies = _exchange(db, "knowledge-graph", messages, lean=True)
    assert replies[2] == [{"jsonrpc": "2.0", "id": 2, "result": in_full}]
    assert replies[3] == [{"jsonrpc": "2.0", "id": 3, "result": {}}]


def test_a_write_asked_for_here_is_answered_here_or_stopped_before_it_commits_and_written_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with served(serve_settings(tmp_path / "m.db", "knowledge-graph")) as server:
        engine = server.engine
        heard: list[tuple[str, str]] = []
        profile = build_profile("knowledge-graph", server.settings)
        calls = ToolCalls(profile, engine, on_tool_call=lambda name, outcome, _: heard.append((name, outcome)))
        monkeypatch.setattr(calls_module, "QUICK_WRITE_S", 60.0)  # in time even on a busy machine
        seq = engine.current_seq()
        write = {"entities": [{"name": "Ada", "entityType": "person", "observations": ["likes tea"]}]}
        here = calls.call_here("create_entities", write, _as_is, writes=True)
        assert here is not None and not here["isError"] and "likes tea" in json.dumps(here)
        assert engine.current_seq() == seq + 1 and heard == [("create_entities", "ok")]
        # No time at all on the calling thread: stopped before its one change commits, so
        # rolled back, not heard of, and left to a worker, which writes it once.
        monkeypatch.setattr(calls_module, "QUICK_WRITE_S", 0.0)
        heard.clear()
        batch = [{"name": f"entity {i}", "entityType": "thing", "observations": [f"fact {i}"]} for i in range(500)]
        assert calls.call_here("create_entities", {"entities": batch}, _as_is, writes=True) is None
        assert heard == [] and engine.current_seq() == seq + 1 and calls.overran == {"create_entities"}
        done = anyio.run(calls.call, "create_entities", {"entities": batch}, _as_is)
        assert not done["isError"] and "entity 499" in json.dumps(done)
        assert engine.current_seq() == seq + 501 and heard == [("create_entities", "ok")]


def test_a_write_answered_on_the_lean_path_tells_subscribers_before_its_reply(tmp_path: Path) -> None:
    # One message at a time: each write is answered on the connection's own thread.
    uri = "memory://knowledge-graph"
    updated = {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}}
    server = RawServer(serve_command(tmp_path / "m.db", "knowledge-graph"))
    try:
        server.initialize()
        assert server.request("resources/subscribe", {"uri": uri})["result"] == {}

        def call(request_id: int, name: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
            server.send(_call(request_id, {"name": name, "arguments": arguments}))
            heard = [server.recv()]
            while heard[-1].get("id") != request_id:
                heard.append(server.recv())
            return heard

        entity = {"name": "Ada", "entityType": "person", "observations": ["likes tea"]}
        created = call(3, "create_entities", {"entities": [entity]})
        read = call(4, "read_graph", {})
        refused = call(5, "add_observations", {"observations": [{"entityName": "Nobody", "contents": ["x"]}]})
        assert created[:-1] == [updated] and not created[-1]["result"]["isError"]
        assert read[:-1] == [] and "likes tea" in json.dumps(read[-1])
        assert refused[:-1] == [] and refused[-1]["result"]["isError"]
    finally:
        server.close()


def test_a_read_whose_try_overran_goes_to_a_worker_until_it_is_quick_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with served(serve_settings(tmp_path / "m.db", "knowledge-graph")) as server:
        profile = build_profile("knowledge-graph", server.settings)
        heard: list[tuple[str, str]] = []
        calls = ToolCalls(profile, server.engine, on_tool_call=lambda name, outcome, _: heard.append((name, outcome)))
        _seeded_graph(calls, 500)
        monkeypatch.setattr(calls_module, "QUICK_READ_S", 60.0)  # in time even on a busy machine
        whole = calls.call_here("read_graph", {}, _as_is)
        assert whole is not None and calls.overran == set()
        monkeypatch.setattr(calls_module, "QUICK_READ_S", 0.0)
        assert calls.call_here("read_graph", {}, _as_is) is None
        assert calls.overran == {"read_graph"}
        # Not tried again here, though it would now be done in time: nothing is run or heard.
        monkeypatch.setattr(calls_module, "QUICK_READ_S", 60.0)
        heard.clear()
        assert calls.call_here("read_graph", {}, _as_is) is None
        assert heard == []
        # Other reads are still answered here.
        assert calls.call_here("open_nodes", {"names": ["entity 1"]}, _as_is) is not None
        # A worker's answer past half the limit keeps it there; one within it brings it back.
        monkeypatch.setattr(calls_module, "QUICK_READ_S", 0.0)
        assert anyio.run(calls.call, "read_graph", {}, _as_is) == whole
        assert calls.overran == {"read_graph"}
        monkeypatch.setattr(calls_module, "QUICK_READ_S", 60.0)
        assert anyio.run(calls.call, "read_graph", {}, _as_is) == whole
        assert calls.overran == set()
        assert calls.call_here("read_graph", {}, _as_is) == whole


def test_a_search_reply_is_the_standard_library_json_of_its_content_with_or_without_extra_fields(
    tmp_path: Path,
) -> None:
    """A search's text is its structured content as `json.dumps` writes it (compact,
    characters as they are), whichever encoder wrote it, and its reply line is the same."""
    odd = ["line\nbreak\ttab", 'a "quote" \\ back/slash', "nul \x00 unit \x1f del \x7f", "Zoë 東京 \u2028 😀", ""]
    with served(serve_settings(tmp_path / "m.db", "knowledge-graph")) as server:
        engine = server.engine
        calls = ToolCalls(build_profile("knowledge-graph", server.settings), engine)
        engine.graph.create_entities([NewEntity(f"Ada {i}", "person", (*odd, f"n{i}")) for i in range(3)])
        engine.graph.create_relations([NewRelation("Ada 0", "Ada 1", "knows"), NewRelation("Ada 2", "Ada 0", "é")])

        def answered(query: str) -> str:
            result = calls.call_here("search_nodes", {"query": query}, _as_is)
            assert result is not None and not result["isError"]
            text = result["content"][0]["text"]
            assert text == json.dumps(result["structuredContent"], separators=(",", ":"), ensure_ascii=False)
            assert json.loads(_encoded_result(7, result))["result"] == json.loads(_encoded(result))
            return str(text)

        plain = answered("ada")
        assert len(json.loads(plain)["entities"]) == 3 and "\\u0000" in plain
        extra = {"weight": float("nan"), "big": 2**70, "small": 1e-7, "nested": {"k": [1.5, None, True]}}
        engine.graph.create_entities([NewEntity("Ada extra", "person", ("x",), extra=extra)])
        with_extra = answered("ada")
        assert '"weight":NaN' in with_extra and str(2**70) in with_extra and "1e-07" in with_extra


def test_lines_past_the_read_buffer_are_all_answered_once_and_reads_in_order(tmp_path: Path) -> None:
    """Far more than the transport buffers while the SDK takes its messages (it pauses
    reading meanwhile): every request is answered once, and the reads the connection
    answers where it reads them are answered in the order they were sent."""
    count = 3000
    messages: list[dict[str, Any]] = [
        _initialize(LATEST_HANDSHAKE_VERSION),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    for i in range(count):
        if i % 10 == 5:  # answered by the SDK, started on the first of them
            messages.append({"jsonrpc": "2.0", "id": 10_000 + i, "method": "resources/list"})
        else:
            messages.append(_call(10_000 + i, {"name": "get", "arguments": {"refs": [f"{ULID[:-4]}{i:04d}"]}}))
    wire = b"".join(json.dumps(m).encode() + b"\n" for m in messages)
    assert len(wire) > 4 * (1 << 16)
    out = _served_wire(tmp_path / "m.db", "native", wire, lean=True)
    replies = [json.loads(line) for line in out.decode().splitlines()]
    ids = [reply["id"] for reply in replies]
    assert sorted(ids) == [1, *range(10_000, 10_000 + count)]
    reads = [i for i in ids if isinstance(i, int) and i >= 10_000 and i % 10 != 5]
    assert reads == sorted(reads)
    assert all("result" in reply for reply in replies)


@pytest.mark.parametrize("size", [1, 2, 7])
def test_lines_are_cut_as_they_arrive_whatever_the_chunks(size: int) -> None:
    data = b'{"a":1}\n\n{"b":2}\r\n{"c":3}'
    splitter = _Splitter()
    lines = [line for start in range(0, len(data), size) for line in splitter.feed(data[start : start + size])]
    assert lines == [b'{"a":1}', b"", b'{"b":2}\r'] and splitter.end() == b'{"c":3}'
    assert splitter.feed(b"\n") == [b'{"c":3}'] and splitter.end() is None


@pytest.mark.parametrize("size", [1 << 16, 1 << 22, 1 << 26])
def test_a_line_over_the_limit_is_dropped_as_it_arrives(size: int) -> None:
    long_line = b"x" * (MAX_LINE_BYTES + 1)
    data = long_line + b'\n{"c":3}\n' + long_line + b"\n" + long_line
    splitter = _Splitter()
    lines = [line for start in range(0, len(data), size) for line in splitter.feed(data[start : start + size])]
    assert lines == [None, b'{"c":3}', None, None]
    assert len(splitter.buffer) <= size and splitter.end() is None


@pytest.mark.parametrize("seed", range(20))
def test_a_run_of_nineteen_digits_is_found_where_the_pattern_finds_one(seed: int) -> None:
    # The quick test for an integer that orjson may read as a float must find exactly the
    # lines the pattern `[0-9]{19}` finds: a miss would hand such an integer to orjson.
    from mnemodb.server.stdio import _holds_long_digits

    # Mostly digits, so that about half the lines hold such a run and half do not.
    rng = random.Random(seed)
    found = 0
    for _ in range(300):
        line = bytes(
            rng.choice(b"0123456789") if rng.random() < 0.93 else rng.choice(b' -.e"/:a\xc3\xa9\x00')
            for _ in range(rng.randint(0, 60))
        )
        expected = re.search(rb"[0-9]{19}", line) is not None
        assert _holds_long_digits(line) == expected, line
        found += expected
    assert 50 < found < 250
