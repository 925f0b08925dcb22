"""MCP over stdio, hardened: every line gets an answer or a reason to have none.

The SDK's stdio transport silently drops unparseable lines and JSON-RPC batches, which
leaves a client waiting forever. This transport sits in front of the SDK and answers
those itself:

- a line that is not JSON: -32700 Parse error;
- a JSON array (a batch, which MCP no longer allows): one -32600 Invalid request per
  element that has an id, or a single one without id when none has;
- valid JSON that is not a JSON-RPC message: -32600 when it carries a usable id;
- a line longer than 16 MiB: -32700, and the line is discarded without being held in
  memory whole;
- per profile, memdb's rules: an `initialize` with an unsupported protocol version
  (-32000) and requests outside the handshake order (-32600).

Everything else goes to the SDK unchanged. stdout carries protocol messages only:
while serving, fd 1 points at stderr, so a stray print cannot corrupt the wire.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import stat
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic_core import PydanticSerializationError

from mnemodb.server.profile import ProtocolRules

__all__ = ["MAX_LINE_BYTES", "serve_stdio"]

log = logging.getLogger("mnemodb.stdio")

MAX_LINE_BYTES = 16 * 1024 * 1024
_READ_CHUNK = 1 << 16
_MODERN_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"


@contextlib.contextmanager
def _claim_stdio() -> Iterator[tuple[int, int]]:
    """Private copies of fds 0 and 1; fd 0 reads /dev/null and fd 1 goes to stderr meanwhile."""
    wire_in = os.dup(0)
    wire_out = os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    try:
        yield wire_in, wire_out
    finally:
        with contextlib.suppress(OSError):
            sys.stdout.flush()
        os.dup2(wire_out, 1)
        os.dup2(wire_in, 0)
        os.close(wire_out)
        os.close(wire_in)


def _error(code: int, message: str, request_id: Any, rules: ProtocolRules, *, with_id: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"jsonrpc": "2.0"}
    if with_id:
        out["id"] = request_id
    elif rules.parse_error_id:
        out["id"] = None
    out["error"] = {"code": code, "message": message}
    return out


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# A `\uD800`..`\uDFFF` escape: the only way a lone surrogate gets into parsed JSON (raw
# bytes of one are not UTF-8 and fail to decode). Paired ones become one character.
_LONE_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _holds_lone_surrogate(payload: Any) -> bool:
    stack = [payload]
    while stack:  # iterative: a message may nest hundreds of levels deep
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and _SURROGATE.search(item):
            return True
    return False


def _usable_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _is_initialize_params(params: Any) -> bool:
    if not isinstance(params, dict) or not isinstance(params.get("protocolVersion"), str):
        return False
    info = params.get("clientInfo")
    return (
        isinstance(params.get("capabilities"), dict)
        and isinstance(info, dict)
        and isinstance(info.get("name"), str)
        and isinstance(info.get("version"), str)
    )


class _Gate:
    """The per-connection checks of `ProtocolRules` that the SDK does not make."""

    def __init__(self, rules: ProtocolRules) -> None:
        self.rules = rules
        self.initialize_seen = False
        self.initialized = False
        self.modern = False
        self.closed = False

    def check(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """An error response to send instead of passing `message` on, or None to pass it."""
        rules = self.rules
        method = message.get("method")
        if not isinstance(method, str):
            return None  # a response from the client: always passes
        is_request = "id" in message
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        if method == "server/discover" or (isinstance(meta, dict) and _MODERN_VERSION_KEY in meta):
            self.modern = True  # the 2026-07-28 era has no handshake to enforce
            return None
        if method == "initialize" and is_request and (not rules.enforce_lifecycle or _is_initialize_params(params)):
            if rules.enforce_lifecycle and self.initialize_seen:
                return _error(
                    -32600, "Invalid request: initialize already received", message["id"], rules, with_id=True
                )
            version = params.get("protocolVersion") if isinstance(params, dict) else None
            if rules.supported_versions is not None and version not in rules.supported_versions:
                supported = ", ".join(rules.supported_versions)
                text = f"Unsupported protocol version: {version} (supported versions: {supported})"
                self.closed = rules.close_on_unsupported_version
                return _error(-32000, text, message["id"], rules, with_id=True)
            self.initialize_seen = True
            return None
        if method == "notifications/initialized":
            if self.initialize_seen:
                self.initialized = True
            return None
        if not rules.enforce_lifecycle or self.initialized or self.modern or method == "ping":
            return None
        if is_request:
            text = "Invalid request: initialize must be sent before other requests"
            return _error(-32600, text, message["id"], rules, with_id=True)
        return {}  # a notification before the handshake: dropped


async def _chunks(fd: int) -> AsyncIterator[bytes]:
    """What arrives on `fd`, chunk by chunk, until end of file."""
    mode = os.fstat(fd).st_mode
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # another event loop than asyncio's
        loop = None
    if loop is not None and (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)):
        # A pipe, a socket or a terminal is watched by the event loop itself: no thread hop
        # per message, and nothing left blocked in a read when the server stops (a thread
        # reading a terminal kept the process alive after Ctrl-C until a key was pressed).
        # Other devices (/dev/null) cannot be watched, and never block a read.
        reader = asyncio.StreamReader(limit=_READ_CHUNK, loop=loop)
        pipe = os.fdopen(os.dup(fd), "rb", buffering=0)
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe)
        try:
            while chunk := await reader.read(_READ_CHUNK):
                yield chunk
        finally:
            transport.close()
        return
    while chunk := await anyio.to_thread.run_sync(os.read, fd, _READ_CHUNK, abandon_on_cancel=True):
        yield chunk


async def _lines(fd: int) -> AsyncIterator[bytes | None]:
    """Lines from `fd` without their newline; None for a line over the size limit."""
    buffer = bytearray()
    skipping = False
    chunks = _chunks(fd)
    while True:
        chunk = await anext(chunks, b"")
        if not chunk:
            if buffer and not skipping:
                yield bytes(buffer)
            return
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                if not skipping:
                    buffer += chunk[start:]
                    if len(buffer) > MAX_LINE_BYTES:
                        buffer.clear()
                        skipping = True
                        yield None
                break
            if skipping:
                skipping = False
            else:
                buffer += chunk[start:end]
                if len(buffer) > MAX_LINE_BYTES:
                    yield None
                else:
                    yield bytes(buffer)
                buffer.clear()
            start = end + 1


async def serve_stdio(server: Server[Any], rules: ProtocolRules, *, fds: tuple[int, int] | None = None) -> None:
    """Serve `server` over stdin/stdout (or the given pair of fds) until stdin closes."""
    with contextlib.ExitStack() as stack:
        wire_in, wire_out = fds if fds is not None else stack.enter_context(_claim_stdio())
        await _serve(server, rules, wire_in, wire_out)


_ENVELOPE_KEYS = {
    "request": {"jsonrpc", "id", "method", "params"},
    "result": {"jsonrpc", "id", "result"},
    "error": {"jsonrpc", "id", "error"},
}
# How long a closed stdin waits for answers to requests already being served.
_DRAIN_TIMEOUT_S = 120.0


def _envelope_problem(payload: dict[str, Any], rules: ProtocolRules) -> tuple[bool, Any] | None:
    """(answer?, id) when a JSON object is not a usable JSON-RPC message, before the SDK sees it.

    A request id must be a string or an integer: anything else gets -32600 rather than
    being read as a notification nobody answers. With `strict_messages`, unknown
    top-level keys are refused too.
    """
    has_id = "id" in payload
    request_id = payload.get("id")
    if has_id and "method" in payload and not _usable_id(request_id):
        # A fractional number is echoed back; null, booleans, objects and arrays are not.
        echo = isinstance(request_id, float)
        return True, request_id if echo else None
    if rules.strict_messages:
        kind = "result" if "result" in payload else "error" if "error" in payload else "request"
        if not set(payload) <= _ENVELOPE_KEYS[kind]:
            return has_id, request_id if _usable_id(request_id) else None
    return None


async def _serve(server: Server[Any], rules: ProtocolRules, wire_in: int, wire_out: int) -> None:
    to_server, server_reads = create_context_streams[SessionMessage | Exception](0)
    server_writes, from_server = create_context_streams[SessionMessage](0)
    out_send, out_receive = anyio.create_memory_object_stream[bytes](64)
    gate = _Gate(rules)
    # Requests handed to the SDK and not yet answered: stdin closing must not lose them.
    in_flight: set[str | int] = set()
    drained = anyio.Event()
    drained.set()
    # An `initialize` whose version the SDK does not know but the profile accepts: the
    # reply says the version the client asked for, as the profile's upstream did.
    echo_version: dict[str | int, str] = {}

    async def emit(payload: dict[str, Any]) -> None:
        await out_send.send(json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode() + b"\n")

    async def write_out() -> None:
        async with out_receive:
            async for data in out_receive:
                view = memoryview(data)
                while view:
                    written = os.write(wire_out, view)
                    view = view[written:]

    async def relay_server_messages() -> None:
        nonlocal drained
        async with from_server:
            async for session_message in from_server:
                message = session_message.message
                answered = getattr(message, "id", None) if not isinstance(message, types.JSONRPCRequest) else None
                if answered is not None and answered in echo_version and isinstance(message, types.JSONRPCResponse):
                    payload = message.model_dump(mode="json", by_alias=True, exclude_unset=True)
                    payload["result"]["protocolVersion"] = echo_version.pop(answered)
                    await emit(payload)
                else:
                    try:
                        text = message.model_dump_json(by_alias=True, exclude_unset=True)
                    except PydanticSerializationError as exc:
                        # Not expected (input with lone surrogates is refused above), but a
                        # message that cannot be written must not end the connection.
                        log.error("could not encode a %s: %s", type(message).__name__, exc)
                        if answered is None:
                            continue
                        text = json.dumps(
                            _error(
                                -32603,
                                "Internal error: the reply could not be encoded as JSON",
                                answered,
                                rules,
                                with_id=True,
                            )
                        )
                    await out_send.send(text.encode() + b"\n")
                if answered is not None:
                    in_flight.discard(answered)
                    if not in_flight:
                        drained.set()

    async def read_in() -> None:
        async with to_server:
            async for line in _lines(wire_in):
                await handle_line(line)
                if gate.closed:
                    log.info("closing the connection after refusing its protocol version")
                    return
            # stdin closed: answer what was asked before letting the server stop.
            with anyio.move_on_after(_DRAIN_TIMEOUT_S):
                await drained.wait()

    async def handle_line(line: bytes | None) -> None:
        nonlocal drained
        if line is None:
            log.warning("rejected a message longer than %d bytes", MAX_LINE_BYTES)
            await emit(_error(-32700, "Parse error", None, rules, with_id=False))
            return
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line.strip() and not rules.blank_line_is_parse_error:
            return
        try:
            # Strict UTF-8: json.loads of bytes would let the bytes of a lone surrogate through.
            payload = json.loads(line.decode("utf-8-sig"), parse_constant=_reject_constant)
        except (ValueError, UnicodeDecodeError, RecursionError):
            await emit(_error(-32700, "Parse error", None, rules, with_id=False))
            return
        if _LONE_SURROGATE_ESCAPE.search(line) and _holds_lone_surrogate(payload):
            # JSON may spell half a UTF-16 pair, but it is no Unicode text: nothing can store
            # it or send it back as UTF-8. The SDK's own reader (and so the HTTP transport)
            # refuses such a message as unparseable; this answers the id when there is one.
            request_id = payload.get("id") if isinstance(payload, dict) else None
            usable = _usable_id(request_id)
            text = "Parse error: a string holds an unpaired UTF-16 surrogate escape, which is not Unicode text"
            await emit(_error(-32700, text, request_id, rules, with_id=usable))
            return
        if isinstance(payload, list):
            ids = [item["id"] for item in payload if isinstance(item, dict) and _usable_id(item.get("id"))]
            for request_id in ids or [None]:
                await emit(_error(-32600, "Invalid request", request_id, rules, with_id=request_id is not None))
            return
        problem = _envelope_problem(payload, rules) if isinstance(payload, dict) else None
        if problem is not None:
            answer, request_id = problem
            if answer:
                await emit(_error(-32600, "Invalid request", request_id, rules, with_id=request_id is not None))
            return
        try:
            message = types.jsonrpc_message_adapter.validate_python(payload, by_name=False)
        except Exception:
            if isinstance(payload, dict) and _usable_id(payload.get("id")):
                await emit(_error(-32600, "Invalid request", payload["id"], rules, with_id=True))
            elif isinstance(payload, dict) and "id" in payload:
                await emit(_error(-32600, "Invalid request", None, rules, with_id=False))
            return  # anything else (a malformed notification) has nobody to answer
        refusal = gate.check(payload)
        if refusal is not None:
            if refusal:
                await emit(refusal)
            return
        if isinstance(message, types.JSONRPCRequest):
            requested = (message.params or {}).get("protocolVersion") if message.method == "initialize" else None
            if requested in (rules.supported_versions or ()) and requested not in HANDSHAKE_PROTOCOL_VERSIONS:
                echo_version[message.id] = str(requested)
            in_flight.add(message.id)
            if drained.is_set():
                drained = anyio.Event()
        await to_server.send(SessionMessage(message))

    async def server_side() -> None:
        # Ends once stdin has closed and the server has answered what it had; then the
        # writer drains and stops.
        async with anyio.create_task_group() as inner:
            inner.start_soon(relay_server_messages)
            async with server_reads, server_writes:
                await server.run(server_reads, server_writes, server.create_initialization_options())
        await out_send.aclose()

    async with anyio.create_task_group() as tg:
        tg.start_soon(write_out)
        tg.start_soon(server_side)
        await read_in()
