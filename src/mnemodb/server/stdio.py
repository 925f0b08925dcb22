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

The handshake, `ping`, `tools/list` and `tools/call` of a connection at a current
protocol version are answered without the SDK (`lean.py`): a server answers `initialize`
before the SDK is even imported, and a tool call skips its dispatch and second
serialisation. Everything else goes to the SDK unchanged, started when first needed.
stdout carries protocol messages only: while serving, fd 1 points at stderr, so a stray
print cannot corrupt the wire.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import importlib
import json
import logging
import os
import re
import stat
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from types import EllipsisType
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import orjson

from mnemodb.server.lean import HANDSHAKE_VERSIONS, LeanServer
from mnemodb.server.profile import ProtocolError, ProtocolRules, StructuredText

if TYPE_CHECKING:
    import anyio.abc
    from mcp.server.lowlevel import Server

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


# A run of 19 digits, which may be an integer past 64 bits (orjson reads one as a float),
# is found as 19 zeros once every digit reads as a zero: a table look-up and a substring
# search over the line, where the pattern `[0-9]{19}` tried a match at every byte (about
# 15,000 instructions for a 110-byte tool call, a twelfth of a trivial read over stdio).
_DIGITS_AS_ZEROS = bytes.maketrans(b"123456789", b"000000000")
_LONG_DIGITS = b"0" * 19


def _holds_long_digits(line: bytes) -> bool:
    """Whether `line` holds a run of 19 or more ASCII digits."""
    return _LONG_DIGITS in line.translate(_DIGITS_AS_ZEROS)


def _parsed(line: bytes) -> Any:
    """The JSON value of a line, as the standard library reads it, or ValueError (or
    UnicodeDecodeError, RecursionError) when it is none. orjson reads what it can read the
    same way at a third of the time: UTF-8 text without a BOM, no lone surrogate escape,
    no number out of a double's range nor an integer past 64 bits. The rest, and whatever
    it refuses, is read by the standard library, which decides what it is."""
    if not _holds_long_digits(line):
        with contextlib.suppress(orjson.JSONDecodeError):
            return orjson.loads(line)
    # Strict UTF-8: json.loads of bytes would let the bytes of a lone surrogate through.
    return json.loads(line.decode("utf-8-sig"), parse_constant=_reject_constant)


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


def _watchable(fd: int) -> bool:
    """Whether the event loop can watch `fd`: a pipe, a socket or a terminal, under asyncio.

    A watched fd costs no thread hop per message, and leaves nothing blocked in a read when
    the server stops (a thread reading a terminal kept the process alive after Ctrl-C
    until a key was pressed). Other devices (/dev/null) cannot be watched, and never block
    a read; another event loop than asyncio's reads on a thread."""
    mode = os.fstat(fd).st_mode
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


async def _chunks(fd: int) -> AsyncIterator[bytes]:
    """What arrives on `fd`, chunk by chunk, until end of file, read on a worker thread."""
    while chunk := await anyio.to_thread.run_sync(os.read, fd, _READ_CHUNK, abandon_on_cancel=True):
        yield chunk


class _Splitter:
    """Cuts what arrives into lines without their newline; None for a line over the size
    limit, whose bytes are dropped as they come rather than held whole."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.skipping = False

    def feed(self, chunk: bytes) -> list[bytes | None]:
        lines: list[bytes | None] = []
        buffer = self.buffer
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                if not self.skipping:
                    buffer += chunk[start:]
                    if len(buffer) > MAX_LINE_BYTES:
                        buffer.clear()
                        self.skipping = True
                        lines.append(None)
                return lines
            if self.skipping:
                self.skipping = False
            elif not buffer:
                lines.append(chunk[start:end] if end - start <= MAX_LINE_BYTES else None)
            else:
                buffer += chunk[start:end]
                lines.append(None if len(buffer) > MAX_LINE_BYTES else bytes(buffer))
                buffer.clear()
            start = end + 1

    def end(self) -> bytes | None:
        """The last line, when the input ended without a newline after it."""
        return bytes(self.buffer) if self.buffer and not self.skipping else None


async def _lines(fd: int) -> AsyncIterator[bytes | None]:
    """Lines from `fd` (see `_Splitter`), read on a worker thread."""
    splitter = _Splitter()
    async for chunk in _chunks(fd):
        for line in splitter.feed(chunk):
            yield line
    last = splitter.end()
    if last is not None:
        yield last


class _Reader(asyncio.Protocol):
    """Lines of a watched fd as they arrive. A line the connection answers right away (a
    tool call of the lean path) is answered in this callback; the rest wait, in order, for
    the connection's task (`next_line`). Answering in the callback saves the turns of the
    event loop between reading a line and a task handling it (a trivial read's server
    CPU about 12 us less, measured over stdio)."""

    _PAUSE_BYTES = 2 * _READ_CHUNK

    def __init__(self, connection: _Connection) -> None:
        self.connection = connection
        self.splitter = _Splitter()
        self.waiting: collections.deque[bytes | None] = collections.deque()
        self.waiting_bytes = 0
        self.ended = False
        self.arrived = asyncio.Event()
        self.transport: asyncio.ReadTransport | None = None
        self.paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.ReadTransport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        waiting, connection = self.waiting, self.connection
        for line in self.splitter.feed(data):
            if waiting or connection.busy or not connection.answer_now(line):
                waiting.append(line)
                self.waiting_bytes += len(line) if line is not None else 0
        if waiting:
            self.arrived.set()
            if self.waiting_bytes > self._PAUSE_BYTES and not self.paused and self.transport is not None:
                self.paused = True
                self.transport.pause_reading()

    def eof_received(self) -> bool | None:
        self.ended_here()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended_here()

    def ended_here(self) -> None:
        if not self.ended:
            self.ended = True
            last = self.splitter.end()
            if last is not None:
                self.waiting.append(last)
            self.arrived.set()

    async def next_line(self) -> bytes | EllipsisType | None:
        """The next line that waits for the connection's task; `...` once the input ended."""
        while not self.waiting:
            if self.ended:
                return ...
            self.arrived.clear()
            await self.arrived.wait()
        line = self.waiting.popleft()
        self.waiting_bytes -= len(line) if line is not None else 0
        if self.paused and self.waiting_bytes <= _READ_CHUNK and self.transport is not None:
            self.paused = False
            self.transport.resume_reading()
        return line


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


async def serve_stdio(
    make_server: Callable[[], Server[Any]],
    rules: ProtocolRules,
    *,
    lean: LeanServer | None = None,
    fds: tuple[int, int] | None = None,
) -> None:
    """Serve over stdin/stdout (or the given pair of fds) until stdin closes: what `lean`
    answers itself, the rest by the SDK server `make_server` builds when first needed."""
    with contextlib.ExitStack() as stack:
        wire_in, wire_out = fds if fds is not None else stack.enter_context(_claim_stdio())
        await _Connection(make_server, rules, lean, wire_out).serve(wire_in)


def _encoded(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def _encoded_result(request_id: str | int, result: dict[str, Any]) -> bytes:
    """A tool call's reply. When its one text block is the JSON of its structured content
    (`StructuredText`), that JSON is written as the structured content as it is, instead
    of encoding the same data a second time: a large reply costs one encode, not two."""
    content = result.get("content")
    block = content[0] if isinstance(content, list) and len(content) == 1 else None
    text = block.get("text") if isinstance(block, dict) else None
    if (
        not isinstance(text, StructuredText)
        or "structuredContent" not in result
        or set(result) != {"content", "structuredContent", "isError"}
        or set(block or ()) != {"type", "text"}
    ):
        return _encoded({"jsonrpc": "2.0", "id": request_id, "result": result})
    # The id as the standard library writes it (a string has no lone surrogate: such input
    # is refused), by orjson unless it is an integer past 64 bits.
    try:
        quoted_id = orjson.dumps(request_id)
    except orjson.JSONEncodeError:
        quoted_id = json.dumps(request_id).encode()
    # The text quoted by orjson: the same bytes as the standard library's encoder without
    # ASCII escaping (every code point but a lone surrogate, which either refuses), at a
    # tenth of its time for a reply of 57 KB.
    quoted = orjson.dumps(text)  # a subclass of str, written as its text
    failed = b"true" if result["isError"] else b"false"
    return b"".join(
        (
            b'{"jsonrpc":"2.0","id":',
            quoted_id,
            b',"result":{"content":[{"type":"text","text":',
            quoted,
            b'}],"structuredContent":',
            text.encode() if text.encoded is None else text.encoded,
            b',"isError":',
            failed,
            b"}}\n",
        )
    )


def _plain_envelope(payload: dict[str, Any]) -> bool:
    """A JSON-RPC 2.0 request or notification with nothing else in it."""
    return payload.get("jsonrpc") == "2.0" and set(payload) <= _ENVELOPE_KEYS["request"]


def _plain_meta(params: dict[str, Any]) -> bool:
    """Whether `params._meta` is absent or holds nothing the SDK would refuse or act on
    beyond a progress token (which no tool here reports on)."""
    meta = params.get("_meta")
    if meta is None:
        return "_meta" not in params
    if not isinstance(meta, dict):
        return False
    token = meta.get("progressToken")
    return token is None or _usable_id(token)


def _lean_tool_call(params: Any) -> tuple[str, Any] | None:
    """(tool name, arguments) of a `tools/call` whose params the SDK would take as they
    are; None sends the message to the SDK, which answers anything else its own way."""
    if not isinstance(params, dict) or not set(params) <= {"name", "arguments", "_meta"}:
        return None
    name, arguments = params.get("name"), params.get("arguments")
    if not isinstance(name, str) or not (arguments is None or isinstance(arguments, dict)) or not _plain_meta(params):
        return None
    return name, arguments


def _lean_listing(params: Any) -> bool:
    """Whether a `tools/list` or `ping` is one the SDK would take as it is."""
    if params is None:
        return True
    if not isinstance(params, dict) or not set(params) <= {"cursor", "_meta"}:
        return False
    return isinstance(params.get("cursor", ""), str) and _plain_meta(params)


def _lean_initialize(params: Any) -> bool:
    """Whether an `initialize` is one the SDK would take as it is (else it answers it)."""
    if not _is_initialize_params(params) or not set(params) <= {"protocolVersion", "capabilities", "clientInfo"}:
        return False
    info = params["clientInfo"]
    return (
        set(info) <= {"name", "version", "title"}
        and isinstance(info.get("title", ""), str)
        and all(isinstance(value, dict) for value in params["capabilities"].values())
    )


class _Connection:
    """One client on stdio: the lean path for what it serves, the SDK for the rest."""

    def __init__(
        self, make_server: Callable[[], Server[Any]], rules: ProtocolRules, lean: LeanServer | None, wire_out: int
    ) -> None:
        self.make_server = make_server
        self.rules = rules
        self.lean = lean
        self.wire_out = wire_out
        self.gate = _Gate(rules)
        # The version of a connection the lean path serves, once it has answered `initialize`.
        self.lean_version: str | None = None
        self.lean_initialize: dict[str, Any] | None = None
        # Lean calls being served, by request id: `notifications/cancelled` cancels them.
        self.lean_calls: dict[str | int, anyio.CancelScope] = {}
        # Requests not yet answered (by either path): stdin closing must not lose them.
        self.in_flight: set[str | int] = set()
        self.drained = anyio.Event()
        self.drained.set()
        # Set once the connection has ended: what is finished after that is not written.
        self.closed = False
        self.tasks: anyio.abc.TaskGroup | None = None
        self.sdk: _SdkSide | None = None
        # Whether the connection's task is handling a line: one that arrives meanwhile waits.
        self.busy = False

    async def serve(self, wire_in: int) -> None:
        async with anyio.create_task_group() as tg:
            self.tasks = tg
            try:
                if _watchable(wire_in):
                    await self.serve_watched(wire_in)
                else:
                    async for line in _lines(wire_in):
                        if not await self.handled(line):
                            break
                    else:
                        await self.drain()
            finally:
                if self.sdk is not None:
                    await self.sdk.close()
                for scope in list(self.lean_calls.values()):
                    scope.cancel()
                self.closed = True

    async def serve_watched(self, wire_in: int) -> None:
        """Serve the lines of a pipe, socket or terminal, which the event loop watches."""
        loop = asyncio.get_running_loop()
        reader = _Reader(self)
        pipe = os.fdopen(os.dup(wire_in), "rb", buffering=0)
        transport, _ = await loop.connect_read_pipe(lambda: reader, pipe)
        try:
            while (line := await reader.next_line()) is not ...:
                self.busy = True
                try:
                    if not await self.handled(line):
                        return
                finally:
                    self.busy = False
            await self.drain()
        finally:
            transport.close()

    async def handled(self, line: bytes | None) -> bool:
        """Handle `line`: whether to read on (not after refusing the protocol version)."""
        await self.handle_line(line)
        if self.gate.closed:
            log.info("closing the connection after refusing its protocol version")
            return False
        return True

    async def drain(self) -> None:
        """stdin closed: answer what was asked before letting the server stop."""
        with anyio.move_on_after(_DRAIN_TIMEOUT_S):
            await self.drained.wait()

    def answer_now(self, line: bytes | None) -> bool:
        """Handle `line` right where it was read if it is a tool call of a connection the
        lean path serves, as `handle_line` would: whether it did. Anything else, or anything
        `handle_line` would answer otherwise, is left to it."""
        if self.lean_version is None or self.gate.modern or self.gate.closed or self.closed or line is None:
            return False
        try:
            payload = _parsed(line)
        except (ValueError, UnicodeDecodeError, RecursionError):
            return False
        if (
            not isinstance(payload, dict)
            or payload.get("method") != "tools/call"
            or not _usable_id(payload.get("id"))
            or not _plain_envelope(payload)
            or _envelope_problem(payload, self.rules) is not None
            or (b"\\u" in line and _LONE_SURROGATE_ESCAPE.search(line))
        ):
            return False
        return self.lean_call(payload)

    def lean_call(self, message: dict[str, Any]) -> bool:
        """Serve a `tools/call` request with a usable id on the lean path if the SDK would
        take it as it is: whether it did (answered, refused, or started on a task)."""
        request_id: str | int = message["id"]
        call = _lean_tool_call(message.get("params"))
        if call is None or request_id in self.lean_calls:
            return False
        refusal = self.gate.check(message)
        if refusal is not None:
            if refusal:
                self.write(_encoded(refusal))
            return True
        if self.answer_here(request_id, *call):
            return True
        self.started(request_id)
        assert self.tasks is not None
        self.tasks.start_soon(self.serve_call, request_id, *call)
        return True

    def write(self, data: bytes) -> None:
        """Write one message (a line). Every write is made whole, on the event loop's thread,
        so messages never interleave; a queue and a writer task in between cost a call more
        than its read (two more turns of the loop) and wrote no differently."""
        if self.closed:
            return
        view = memoryview(data)
        while view:
            written = os.write(self.wire_out, view)
            view = view[written:]

    async def emit(self, payload: dict[str, Any]) -> None:
        self.write(_encoded(payload))

    def started(self, request_id: str | int) -> None:
        self.in_flight.add(request_id)
        if self.drained.is_set():
            self.drained = anyio.Event()

    def answered(self, request_id: Any) -> None:
        self.in_flight.discard(request_id)
        if not self.in_flight:
            self.drained.set()

    async def handle_line(self, line: bytes | None) -> None:
        rules = self.rules
        if line is None:
            log.warning("rejected a message longer than %d bytes", MAX_LINE_BYTES)
            await self.emit(_error(-32700, "Parse error", None, rules, with_id=False))
            return
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line.strip() and not rules.blank_line_is_parse_error:
            return
        try:
            payload = _parsed(line)
        except (ValueError, UnicodeDecodeError, RecursionError):
            await self.emit(_error(-32700, "Parse error", None, rules, with_id=False))
            return
        if b"\\u" in line and _LONE_SURROGATE_ESCAPE.search(line) and _holds_lone_surrogate(payload):
            # JSON may spell half a UTF-16 pair, but it is no Unicode text: nothing can store
            # it or send it back as UTF-8. The SDK's own reader (and so the HTTP transport)
            # refuses such a message as unparseable; this answers the id when there is one.
            request_id = payload.get("id") if isinstance(payload, dict) else None
            usable = _usable_id(request_id)
            text = "Parse error: a string holds an unpaired UTF-16 surrogate escape, which is not Unicode text"
            await self.emit(_error(-32700, text, request_id, rules, with_id=usable))
            return
        if isinstance(payload, list):
            ids = [item["id"] for item in payload if isinstance(item, dict) and _usable_id(item.get("id"))]
            for request_id in ids or [None]:
                await self.emit(_error(-32600, "Invalid request", request_id, rules, with_id=request_id is not None))
            return
        problem = _envelope_problem(payload, rules) if isinstance(payload, dict) else None
        if problem is not None:
            answer, request_id = problem
            if answer:
                await self.emit(_error(-32600, "Invalid request", request_id, rules, with_id=request_id is not None))
            return
        if isinstance(payload, dict) and _plain_envelope(payload) and await self.handle_lean(payload):
            return
        await self.to_sdk(payload)

    async def handle_lean(self, message: dict[str, Any]) -> bool:
        """Answer `message` on the lean path if it serves it: whether it did."""
        lean = self.lean
        method = message.get("method")
        if lean is None or not isinstance(method, str) or self.gate.modern:
            return False
        request_id: Any = message.get("id")
        params: Any = message.get("params")
        version = self.lean_version
        if version is None:
            # Only a connection's first `initialize` decides; anything before it (and every
            # message of a connection the SDK serves) goes to the SDK.
            if method != "initialize" or self.sdk is not None or not _usable_id(request_id):
                return False
            if not _lean_initialize(params):
                return False
            if not await self.passes_gate(message):
                return True
            self.lean_version, result = lean.initialize(params["protocolVersion"])
            if params["protocolVersion"] in (self.rules.supported_versions or ()):
                # A version the profile accepts: said back as the client asked, as upstream did.
                result = {**result, "protocolVersion": params["protocolVersion"]}
            self.lean_initialize = message
            await self.emit({"jsonrpc": "2.0", "id": request_id, "result": result})
            return True
        if "id" in message:
            if not _usable_id(request_id) or (self.sdk is not None and method not in ("tools/call", "tools/list")):
                return False
            if method == "tools/call":
                return self.lean_call(message)
            if method in ("tools/list", "ping") and _lean_listing(params):
                if not await self.passes_gate(message):
                    return True
                result = lean.tools_list() if method == "tools/list" else {}
                await self.emit({"jsonrpc": "2.0", "id": request_id, "result": result})
                return True
            return False
        if method == "notifications/initialized" and self.sdk is None:
            self.gate.check(message)
            return True
        if method == "notifications/cancelled" and isinstance(params, dict):
            cancelled: Any = params.get("requestId")
            scope = self.lean_calls.get(cancelled) if _usable_id(cancelled) else None
            if scope is not None:
                scope.cancel()
                return True
        return False

    async def passes_gate(self, message: dict[str, Any]) -> bool:
        refusal = self.gate.check(message)
        if refusal is None:
            return True
        if refusal:
            await self.emit(refusal)
        return False

    def encoder(self, request_id: str | int, name: str) -> Callable[[dict[str, Any]], tuple[bytes, bool]]:
        """What makes the answer line of a call of tool `name`, and says whether it failed."""

        def encode(result: dict[str, Any]) -> tuple[bytes, bool]:
            failed = bool(result.get("isError"))
            try:
                return _encoded_result(request_id, result), failed
            except (ValueError, TypeError) as exc:  # a lone surrogate, say: not expected
                log.error("could not encode the result of %s: %s", name, exc)
                text = "Internal error: the reply could not be encoded as JSON"
                return _encoded(_error(-32603, text, request_id, self.rules, with_id=True)), True

        return encode

    def answer_here(self, request_id: str | int, name: str, arguments: Any) -> bool:
        """Answer a call right here, if it is done quickly (see `ToolCalls.call_here`):
        whether it was answered. Nothing else is read meanwhile, so there is nothing to
        cancel it and it needs no task. A write is answered here only while no other call
        of the connection is running (on a worker thread, it could hold the database's
        write lock, and this thread, which reads the connection's next messages, would wait
        for it); a write answered here tells subscribed resources, as `serve_call` does.
        A client's cancellation never stopped a write midway (its worker thread ran on to
        the commit): here it arrives after the answer, which the client then ignores."""
        assert self.lean is not None
        calls = self.lean.calls
        try:
            answer = calls.call_here(name, arguments, self.encoder(request_id, name), writes=not self.in_flight)
        except ProtocolError as exc:
            answer = _encoded({"jsonrpc": "2.0", "id": request_id, "error": exc.wire()}), True
        except Exception:
            log.exception("tool %s failed unexpectedly", name)
            answer = _encoded(_error(-32603, "Internal error", request_id, self.rules, with_id=True)), True
        if answer is None:
            return False
        if not answer[1] and calls.subscribed and calls.writes(name):
            for uri in sorted(calls.subscribed):
                self.write(
                    _encoded({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}})
                )
        self.write(answer[0])
        return True

    async def serve_call(self, request_id: str | int, name: str, arguments: Any) -> None:
        assert self.lean is not None
        calls = self.lean.calls
        encode = self.encoder(request_id, name)
        line: bytes | None = None
        with anyio.CancelScope() as scope:
            self.lean_calls[request_id] = scope
            try:
                line, failed = await calls.call(name, arguments, encode)
                if not failed and calls.subscribed and calls.writes(name):
                    for uri in sorted(calls.subscribed):
                        await self.emit(
                            {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}}
                        )
            except ProtocolError as exc:
                line = _encoded({"jsonrpc": "2.0", "id": request_id, "error": exc.wire()})
            except Exception:
                log.exception("tool %s failed unexpectedly", name)
                line = _encoded(_error(-32603, "Internal error", request_id, self.rules, with_id=True))
            finally:
                del self.lean_calls[request_id]
        try:
            if line is not None:  # a cancelled call is not answered
                self.write(line)
        finally:
            self.answered(request_id)

    async def to_sdk(self, payload: Any) -> None:
        if self.sdk is None:
            self.sdk = _SdkSide(self)
            await self.sdk.start()
        await self.sdk.handle(payload)


class _SdkSide:
    """The SDK's server behind a connection, started on the first message it must answer.
    On a connection the lean path opened, it is first told of the client's `initialize`
    (its reply is dropped): to the SDK, the connection is then as initialized as it is."""

    _REPLAYED_ID = "mnemodb:replayed-initialize"

    def __init__(self, connection: _Connection) -> None:
        from mcp.shared._context_streams import create_context_streams
        from mcp.shared.message import SessionMessage

        self.connection = connection
        self.types = importlib.import_module("mcp_types")
        self.session_message = SessionMessage
        self.to_server, self.server_reads = create_context_streams[SessionMessage | Exception](0)
        self.server_writes, self.from_server = create_context_streams[SessionMessage](0)
        # An `initialize` whose version the SDK does not know but the profile accepts: the
        # reply says the version the client asked for, as the profile's upstream did.
        self.echo_version: dict[Any, str] = {}
        self.done = anyio.Event()

    async def start(self) -> None:
        connection = self.connection
        server = connection.make_server()
        assert connection.tasks is not None
        connection.tasks.start_soon(self.run, server)
        replayed = connection.lean_initialize
        if replayed is not None:
            await self.send({**replayed, "id": self._REPLAYED_ID})
            if connection.gate.initialized:
                await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def run(self, server: Server[Any]) -> None:
        try:
            async with anyio.create_task_group() as inner:
                inner.start_soon(self.relay)
                async with self.server_reads, self.server_writes:
                    await server.run(self.server_reads, self.server_writes, server.create_initialization_options())
        finally:
            self.done.set()

    async def close(self) -> None:
        await self.to_server.aclose()
        await self.done.wait()

    async def send(self, payload: dict[str, Any]) -> None:
        message = self.types.jsonrpc_message_adapter.validate_python(payload, by_name=False)
        await self.to_server.send(self.session_message(message))

    async def handle(self, payload: Any) -> None:
        connection, rules, types = self.connection, self.connection.rules, self.types
        try:
            message = types.jsonrpc_message_adapter.validate_python(payload, by_name=False)
        except Exception:
            if isinstance(payload, dict) and _usable_id(payload.get("id")):
                await connection.emit(_error(-32600, "Invalid request", payload["id"], rules, with_id=True))
            elif isinstance(payload, dict) and "id" in payload:
                await connection.emit(_error(-32600, "Invalid request", None, rules, with_id=False))
            return  # anything else (a malformed notification) has nobody to answer
        if not await connection.passes_gate(payload):
            return
        if isinstance(message, types.JSONRPCRequest):
            requested = (message.params or {}).get("protocolVersion") if message.method == "initialize" else None
            if requested in (rules.supported_versions or ()) and requested not in HANDSHAKE_VERSIONS:
                self.echo_version[message.id] = str(requested)
            connection.started(message.id)
        await self.to_server.send(self.session_message(message))

    async def relay(self) -> None:
        from pydantic_core import PydanticSerializationError

        connection, types = self.connection, self.types
        async with self.from_server:
            async for session_message in self.from_server:
                message = session_message.message
                answered = getattr(message, "id", None) if not isinstance(message, types.JSONRPCRequest) else None
                if answered == self._REPLAYED_ID:
                    continue
                if (
                    answered is not None
                    and answered in self.echo_version
                    and isinstance(message, types.JSONRPCResponse)
                ):
                    payload = message.model_dump(mode="json", by_alias=True, exclude_unset=True)
                    payload["result"]["protocolVersion"] = self.echo_version.pop(answered)
                    await connection.emit(payload)
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
                                connection.rules,
                                with_id=True,
                            )
                        )
                    connection.write(text.encode() + b"\n")
                if answered is not None:
                    connection.answered(answered)
