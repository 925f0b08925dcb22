"""Property-based fuzzing of every tool of every profile, through a real server process.

One `mnemodb serve` per profile (started on first use and shared by the module) is
spoken to line by line over stdio rather than through the SDK's client, which refuses to
send some of these values (a lone surrogate kills its writer task; lists nested past
about 250 levels fail its serializer); every line the server writes is still checked the
way that client checks it. So any argument can be sent: wrong types, missing and
unknown fields, megabyte strings, deeply nested values, NUL bytes, lone surrogates (as
JSON escapes and as the raw bytes they would be), SQL and FTS5 syntax, regular
expression bombs, huge and negative numbers, NaN, very long lists and ULIDs that name
nothing. Arguments are built from each tool's advertised `inputSchema`: valid-looking
ones aimed at seeded items, the same with one hostile field, with a required field left
out or an unknown one added, every field hostile, and fully random ones.

After every call:

- an answer arrives within the hang guard, and every line on stdout is a JSON-RPC
  message (what the SDK's client requires of the stream);
- the answer is a JSON-RPC error, or a tool result the SDK's `CallToolResult` accepts:
  an error with a clear text (no traceback, no "internal error", no Python exception
  names), or a success whose `structuredContent` matches the tool's `outputSchema` and
  whose arguments the tool's own `inputSchema` allows;
- a refused call (and a read-only tool's success) left the database as it was: the
  change log's position and the row counts and checksums of the main tables, read from
  the SQLite file by a read-only connection of the test's own;
- the server still answers a cheap read and wrote no traceback to stderr.

Every tool is also fuzzed over `serve --http`, with a quarter of the examples: each
request is one POST, and each reply must be one JSON-RPC message (200 with the request's
id, or a 4xx error without one), except the SDK's plain-text 413 for a body over the limit.

Settings: `FUZZ_EXAMPLES=<n>` examples per test (default 20; every test is one tool or
one profile's malformed calls), `FUZZ_SHRINK=1` to let Hypothesis shrink a failure
(each shrink step may restart a crashed server), `FUZZ_RANDOM=1` to draw new cases (by
default every run draws the same ones). The cases run are printed per profile when the
module ends.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import math
import os
import queue
import re
import sqlite3
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import mcp_types
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from http_support import HttpServer
from support import PROFILE_TOOLS, SCOPE_A, RawServer, serve_command

HANG_GUARD_S = 20.0
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "20"))
SHRINK = bool(os.environ.get("FUZZ_SHRINK"))
RANDOM = bool(os.environ.get("FUZZ_RANDOM"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not RANDOM,
    database=None,
    print_blob=False,
    phases=list(Phase) if SHRINK else [Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
HTTP_SETTINGS = settings(
    max_examples=max(1, EXAMPLES // 4),
    deadline=None,
    derandomize=not RANDOM,
    database=None,
    print_blob=False,
    phases=list(Phase) if SHRINK else [Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)

MISSING_ULID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
BOMB_TEXT = "a" * 40 + "!"

TOOLS = PROFILE_TOOLS
# topodb serves get_changes only with this flag; without it that tool refuses every call.
FLAGS = {"topodb": ["--allow-unscoped-changes"]}
# topodb's tools carry no annotations; these only read (access counters live outside the
# fingerprint).
READ_ONLY = {
    "topodb": {
        "access_stats",
        "db_info",
        "find_by_prop",
        "get_changes",
        "get_node",
        "search_memories",
        "search_vectors",
        "traverse",
    }
}
# The cheap read that shows a server is alive and its store readable.
PROBES: dict[str, tuple[str, dict[str, Any]]] = {
    "native": ("survey", {}),
    "memdb": ("memory_stats", {}),
    "topodb": ("db_info", {}),
    "knowledge-graph": ("read_graph", {"limit": 1}),
}

# What no error text meant for a user or a model may contain.
LEAKS = re.compile(
    r"Traceback|internal error|\b(?:TypeError|ValueError|KeyError|IndexError|AttributeError|RecursionError"
    r"|OverflowError|UnicodeEncodeError|UnicodeDecodeError|OperationalError|IntegrityError|ProgrammingError"
    r"|DatabaseError|ZeroDivisionError|AssertionError|MemoryError|NotImplementedError|JSONDecodeError)\b"
    r"|NoneType|has no attribute|not subscriptable|unhashable type|not supported between instances"
    r"|surrogates not allowed|codec can't|sqlite3|maximum recursion depth|positional argument",
    re.IGNORECASE,
)

# JavaScript's white space: what `\s` means in the patterns the schemas advertise.
JS_SPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


# -- a raw JSON-RPC client ---------------------------------------------------------------------------


class Hang(AssertionError):
    pass


class ServerDied(AssertionError):
    pass


class Requests:
    """Numbered requests as raw lines; a transport supplies `send_line` and `answer`."""

    next_id = 0

    def send_line(self, data: bytes) -> None:
        raise NotImplementedError

    def answer(self, request_id: int, timeout: float = HANG_GUARD_S) -> dict[str, Any]:
        raise NotImplementedError

    def request_line(self, method: str, params: Any, *, ascii_only: bool = True) -> tuple[int, bytes]:
        """A request as one line: JSON escapes for everything non-ASCII, or raw UTF-8 in which
        a lone surrogate becomes the (ill-formed) three bytes it would be."""
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        text = json.dumps(message, ensure_ascii=ascii_only, separators=(",", ":"))
        return self.next_id, text.encode("utf-8", "surrogatepass")

    def rpc(self, method: str, params: Any) -> dict[str, Any]:
        request_id, line = self.request_line(method, params)
        self.send_line(line)
        return self.answer(request_id)


def json_rpc_reply(data: bytes, where: str) -> dict[str, Any]:
    """`data` read as the SDK's client reads a message: anything else fails the case."""
    try:
        mcp_types.jsonrpc_message_adapter.validate_json(data)
        message = json.loads(data)
    except Exception as error:
        raise AssertionError(f"{where} carried something that is not a JSON-RPC message: {data[:500]!r}") from error
    assert isinstance(message, dict), data[:500]
    return message


class RawClient(Requests, RawServer):
    """`mnemodb serve` driven line by line: any bytes can be sent, every stdout line is checked,
    and stderr (in a file) can be read from any offset."""

    def __init__(self, command: list[str], errlog: Path) -> None:
        super().__init__(command, {"MNEMODB_LOG_LEVEL": "error"}, stderr_file=errlog)
        self.errlog = errlog
        self.abandoned = False
        """A request went unanswered within the hang guard (the server may still be busy)."""

    def stderr_size(self) -> int:
        return self.errlog.stat().st_size

    def stderr_since(self, start: int = 0) -> str:
        with self.errlog.open("rb") as stream:
            stream.seek(start)
            return stream.read().decode(errors="replace")

    def send_line(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(data + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # the server is gone: `answer` says so, with its stderr

    def answer(self, request_id: int, timeout: float = HANG_GUARD_S) -> dict[str, Any]:
        """The reply to `request_id`, or an id-less error (the line could not be read as a
        request). Anything else before it must be a notification or a late reply."""
        give_up = time.monotonic() + timeout
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, give_up - time.monotonic()))
            except queue.Empty:
                self.abandoned = True
                raise Hang(f"no answer within {timeout:g}s; stderr tail:\n{self.stderr_since()[-3000:]}") from None
            if line is None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.proc.wait(timeout=5)
                tail = self.stderr_since()[-4000:]
                raise ServerDied(f"the server closed stdout (exit {self.proc.poll()}); stderr:\n{tail}")
            message = json_rpc_reply(line, "stdout")
            if message.get("id") == request_id:
                return message
            if "id" in message and message["id"] is None and "error" in message:
                return message
            late = message.get("id")
            if isinstance(late, int) and late < request_id:
                continue  # the answer to a request the hang guard gave up on
            assert "id" not in message and "method" in message, f"unexpected message: {line[:500]!r}"

    def handshake(self) -> None:
        info = {"name": "fuzz", "version": "1"}
        self.rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": info})
        self.send_line(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def close(self, timeout: float = 15.0) -> int:
        """End the server: by closing stdin, or by killing it if it may still be busy."""
        if self.abandoned and self.proc.poll() is None:
            self.proc.kill()
        if self.proc.stdin and not self.proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


class HttpClient(Requests):
    """The same calls over `mnemodb serve --http`: each request line is the body of one POST
    to /mcp on a kept-alive connection; the reply must be one JSON-RPC message whatever
    the status (the SDK answers a message it cannot read with 400 and a JSON-RPC error)."""

    def __init__(self, db: Path, profile: str, flags: Sequence[str]) -> None:
        self._stack = contextlib.ExitStack()
        self.server = self._stack.enter_context(HttpServer.start(db, *flags, profile=profile))
        self.proc = self.server.proc
        self.abandoned = False
        self._body = b""
        self._connection = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=HANG_GUARD_S)
        self._headers = {
            "Host": f"127.0.0.1:{self.server.port}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
        }

    def stderr_size(self) -> int:
        return len(self.server.stderr)

    def stderr_since(self, start: int = 0) -> str:
        return self.server.stderr[start:]

    def send_line(self, data: bytes) -> None:
        self._body = data

    def _post(self) -> tuple[int, bytes]:
        for attempt in (1, 2):
            try:
                # Refused (413) before all of a large body was read: the answer still follows.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._connection.request("POST", "/mcp", self._body, self._headers)
                response = self._connection.getresponse()
                data = response.read()
                if response.status != 200 or response.will_close:
                    self._connection.close()  # the next request opens a fresh connection
                return response.status, data
            except http.client.RemoteDisconnected:
                # A kept-alive connection the server closed while idle; a dead server fails below.
                self._connection.close()
                if attempt == 2 or self.proc.poll() is not None:
                    raise
        raise AssertionError("unreachable")

    def answer(self, request_id: int, timeout: float = HANG_GUARD_S) -> dict[str, Any]:
        self._connection.timeout = timeout
        try:
            status, data = self._post()
        except TimeoutError:
            self.abandoned = True
            raise Hang(f"no answer within {timeout:g}s; log tail:\n{self.stderr_since()[-3000:]}") from None
        except (OSError, http.client.HTTPException) as error:
            self._connection.close()
            if self.proc.poll() is None:
                raise AssertionError(f"the connection failed while the server runs: {error!r}") from error
            tail = self.stderr_since()[-4000:]
            raise ServerDied(f"the server exited ({self.proc.returncode}); log:\n{tail}") from None
        if status == 413:  # the SDK's body limit, before any JSON-RPC: a plain-text refusal
            assert data == b"Request body too large", data[:500]
            return {"jsonrpc": "2.0", "id": request_id, "error": {"code": 413, "message": data.decode()}}
        assert status < 500, f"HTTP {status}: {data[:500]!r}"
        message = json_rpc_reply(data, f"an HTTP {status} reply")
        assert message.get("id") in (request_id, None), f"a reply to another request: {data[:500]!r}"
        assert (status == 200) == (message.get("id") == request_id), f"HTTP {status}: {data[:500]!r}"
        return message

    def handshake(self) -> None:
        """Nothing to do: the server is stateless, and each request names its protocol version."""

    def close(self) -> int:
        """SIGTERM (the server's clean stop), or a kill if it may still be busy."""
        self._connection.close()
        if self.abandoned and self.proc.poll() is None:
            self.proc.kill()
        self._stack.close()
        return self.proc.returncode


# -- schemas -----------------------------------------------------------------------------------------


def _js_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    """`pattern` with JavaScript's meaning, as the servers' own clients check it: `\\s` is
    JavaScript's white space and `$` is the very end."""
    if not isinstance(instance, str):
        return
    space = re.escape(JS_SPACE)
    translated = re.sub(r"(?<!\\)\$", r"\\Z", pattern).replace("\\S", f"[^{space}]").replace("\\s", f"[{space}]")
    if re.search(translated, instance) is None:
        yield jsonschema.ValidationError(f"{instance[:60]!r} does not match {pattern!r}")


def schema_errors(schema: dict[str, Any], instance: Any) -> list[str]:
    base = jsonschema.validators.validator_for(schema)
    checker = jsonschema.validators.extend(base, {"pattern": _js_pattern})
    return [
        f"{'.'.join(map(str, e.absolute_path)) or '(root)'}: {e.message[:200]}"
        for e in checker(schema).iter_errors(instance)
    ]


def _resolve(schema: Any, root: dict[str, Any]) -> Any:
    if isinstance(schema, dict) and "$ref" in schema:
        ref = schema["$ref"]
        assert ref.startswith("#/$defs/"), ref
        return root["$defs"][ref.split("/")[-1]]
    return schema


# -- values ------------------------------------------------------------------------------------------


def deep(depth: int, kind: str) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
RANDOM_JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)

ULIDS = st.text(alphabet=CROCKFORD, min_size=26, max_size=26).map(lambda s: "0" + s[1:])
BAD_ULIDS = st.sampled_from(
    [
        MISSING_ULID,
        "Z" * 26,  # more than 128 bits
        "8" + "0" * 25,  # just past 128 bits
        "7" + "Z" * 25,  # the largest ULID
        "0" * 26,
        MISSING_ULID.lower(),
        MISSING_ULID[:-1],
        MISSING_ULID + "0",
        "01ARZ3NDEKTSV4RRFFQ69G5FAI",
        "01ARZ3NDEKTSV4RRFFQ69G5FAU",
        "01ARZ3NDEKTSV4RRFFQ69G5FA\u00fc",
        "#0",
        "#-1",
        "#99999999999999999999",
        "#" + "9" * 5000,  # past the digits Python's int() reads
        "shared",
        "*",
        "%",
    ]
)
INJECTIONS = st.sampled_from(
    [
        "'; DROP TABLE memory; --",
        "'); DELETE FROM node; --",
        '" OR 1=1 --',
        "' OR '1'='1",
        "%",
        "_",
        "\\",
        "%' ESCAPE '\\",
        "$.a",
        "$[0]",
        '{"a":',
        "null",
        "json_extract(props, '$')",
    ]
)
FTS = st.sampled_from(
    [
        '"',
        '""',
        '"unterminated',
        "NEAR(",
        "NEAR(a b, -1)",
        "NEAR(a, 99999999999)",
        "*",
        "a*",
        "**",
        "content:",
        "summary: x",
        "nocolumn: x",
        "{content summary}: x",
        "^",
        "^a",
        "AND OR NOT",
        "NOT",
        "a AND",
        "OR",
        "(((",
        ")",
        "a OR (b",
        "-",
        "+",
        "a -b",
        ":",
        "'",
        "a:b:c",
        '\\"',
        "\u2026",
        "~a",
        "a~2",
        "!!!",
        "a" * 3 + "\x00",
    ]
)
REGEXES = st.sampled_from(
    [
        "(a+)+$",
        "(a|aa)+$",
        "(a*)*$",
        "(.*a){25}",
        "([a-z]+)*!x",
        "^(a+)+b",
        "(",
        "[",
        ")",
        "\\",
        "a{1000000000}",
        "(?P<",
        "(?<=a+)b",
        "(?i)(?-i)",
        "\\p{",
        "[z-a]",
        "*",
        "/(a+)+$/",
        "/x/zz",
    ]
)
NUMBERS = st.sampled_from(
    [
        0,
        -1,
        -0.0,
        0.5,
        -(10**20),
        10**20,
        10**400,
        2**53,
        2**53 + 1,
        2**63 - 1,
        2**63,
        -(2**63),
        -(2**63) - 1,
        2**64,
        1e308,
        float("nan"),  # not JSON: the line must be refused as a parse error
        float("inf"),
        -1e308,
        5e-324,
        1e20,
        -0.5,
        1.0,
        4.0,
    ]
)
NUMBER_TEXTS = st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-0", "0x10", "1_000", " 5 ", "5e-1"])
TIMES = st.sampled_from(
    [
        "9999-12-31T23:59:59Z",
        "0001-01-01",
        "0000-01-01",
        "2026-02-30",
        "2026-01-01T25:00:00Z",
        "1970-01-01T00:00:00+99:99",
        "2026-01-01T00:00:00.9999999Z",
        "2026-03-01",
        "2026-03-01 09:30",
        "now",
        "",
        2**53,
        2**53 - 1,
        -1,
        0,
    ]
)
NUL = st.sampled_from(["\x00", "a\x00b", "abc\x00def", "fuzz\x00", "\x00" * 50, "tag\x00", "\x00'; --"])
SURROGATES = st.sampled_from(["\ud800", "a\udfffb", "\udc00\ud800", "\ud83d", "ok\ud800", "\ud800" * 40])
ODD_TEXT = st.sampled_from(
    [
        "",
        " ",
        "   ",
        "\t\n",
        "\u3000",
        "\u200b",
        "\ufeff",
        "\u2028",
        "\x1c",
        "\u0085",
        "\u00a0x",
        "\ufdfa" * 50,  # NFKC makes 18 characters of each
        "\u0130" * 30,  # lower() makes 2 characters of each
        "\u00df",
        "\U0001f642" * 30,
        "e\u0301",
        "\u202eevil",
        "a\r\nb",
        "x" * 51,
        "x" * 1001,
    ]
)
HUGE_TEXT = st.builds(
    lambda n, unit: unit * (n // len(unit.encode())),
    st.sampled_from([1_000_000, 2_500_000, 5_000_000]),
    st.sampled_from(["a", "a b ", "\u00e9", "\U0001f642", "word ", " "]),
)
DEEP = st.builds(deep, st.sampled_from([100, 300, 600, 900]), st.sampled_from(["list", "dict"]))
LONG_LIST = st.builds(
    lambda n, item: [item] * n,
    st.sampled_from([1_000, 20_000, 200_000]),
    st.sampled_from(["x", 1, MISSING_ULID, {"a": 1}, "", None]),
)
WRONG_TYPES: st.SearchStrategy[Any] = st.sampled_from(
    [None, True, False, 0, -1, 1.5, "", "x", [], [None], [[]], {}, {"a": 1}, {"": ""}, ["x", 1], [{}]]
)
HOSTILE_SCALARS = st.one_of(
    WRONG_TYPES,
    NUL,
    SURROGATES,
    INJECTIONS,
    FTS,
    REGEXES,
    NUMBERS,
    NUMBER_TEXTS,
    TIMES,
    BAD_ULIDS,
    ULIDS,
    ODD_TEXT,
)
HOSTILE = st.one_of(
    HOSTILE_SCALARS,
    HOSTILE_SCALARS,
    HOSTILE_SCALARS,
    st.lists(HOSTILE_SCALARS, min_size=1, max_size=3),
    st.dictionaries(st.one_of(NUL, SURROGATES, INJECTIONS, ODD_TEXT, st.text(max_size=5)), HOSTILE_SCALARS, max_size=3),
    RANDOM_JSON,
    HUGE_TEXT,
    DEEP,
    LONG_LIST,
)


def b64(raw: bytes | str) -> str:
    """A cursor's spelling: URL-safe base64 without padding."""
    data = raw.encode() if isinstance(raw, str) else raw
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


# Cursors a client could forge: the servers' own shapes with odd insides, and plain junk.
CURSORS = st.sampled_from(
    [
        b64('{"q":"x","o":1}'),
        b64('{"q":"x","o":-1}'),
        b64('{"q":"x","o":Infinity}'),
        b64('{"q":"x","o":NaN}'),
        b64('{"q":"x","o":1e999}'),
        b64('{"q":"x","o":"' + "9" * 30 + '"}'),
        b64('{"o":1}'),
        b64("[1]"),
        b64("null"),
        b64("e:1"),
        b64("e:-1"),
        b64("e:" + "9" * 30),
        b64("e:9223372036854775808"),
        b64("x:1"),
        "ZTox",
        "!!!",
        "=",
        "",
        "\x00",
    ]
)


@dataclass
class Seeds:
    """What a profile's server was given before fuzzing: values worth aiming at."""

    ids: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    hashes: list[str] = field(default_factory=list)
    words: list[str] = field(default_factory=lambda: ["fuzz", "alpha", "seed", "maps", "aaaa", BOMB_TEXT])
    models: list[str] = field(default_factory=lambda: ["fz"])


TIME_FIELDS = ("since", "until", "as_of", "valid_from", "valid_to")


def hints(seeds: Seeds) -> dict[str, st.SearchStrategy[Any]]:
    """Valid-looking strings for properties (and their items), by the property's name."""
    refs = st.sampled_from([*seeds.ids, *seeds.names, MISSING_ULID])
    out: dict[str, st.SearchStrategy[Any]] = {}
    for key in ("id", "ref", "refs", "from", "to", "seed_id", "from_id", "to_id", "supersedes", "about", "within"):
        out[key] = refs
    out["candidates"] = refs
    for key in ("name", "entityName", "entityNames", "names", "fromEntity", "toEntity"):
        out[key] = st.sampled_from([*seeds.names, "Nobody"])
    for key in ("hash", "hashes", "from_hash", "to_hash"):
        out[key] = st.sampled_from([*seeds.hashes, "f" * 64])
    for key in ("query", "content", "pattern", "observations", "contents"):
        out[key] = st.sampled_from(seeds.words)
    out["cursor"] = st.one_of(CURSORS, st.binary(max_size=30).map(b64))
    out["scope"] = out["scopes"] = st.sampled_from(["shared", SCOPE_A])
    out["model"] = st.sampled_from(seeds.models)
    out["label"] = st.sampled_from(["Entity", "Memory", "Thing"])
    out["prop"] = st.sampled_from(["name", "content", "role"])
    times = st.sampled_from(["2026-03-01", "2026-03-01T09:30:00Z", 1_700_000_000_000, int(time.time() * 1000)])
    for key in TIME_FIELDS:
        out[key] = times
    return out


def batch_commands(seeds: Seeds) -> st.SearchStrategy[list[dict[str, Any]]]:
    """topodb's batch language: writes, with `#N` naming the id the Nth command made."""
    node = st.sampled_from(["#0", "#1", *seeds.ids[:2], MISSING_ULID])
    command = st.one_of(
        st.fixed_dictionaries({"op": st.just("create_memory"), "content": st.sampled_from(seeds.words)}),
        st.fixed_dictionaries({"op": st.just("create_entity"), "name": st.sampled_from(["Batch", "Ada"])}),
        st.fixed_dictionaries({"op": st.just("link"), "from": node, "to": node, "type": st.just("about")}),
        st.fixed_dictionaries({"op": st.just("set_node_props"), "id": node, "props": st.just({"n": 1})}),
        st.fixed_dictionaries(
            {"op": st.just("set_embedding"), "id": node, "model": st.just("fz"), "vector": st.just([0.0, 1.0, 0.0])}
        ),
        st.fixed_dictionaries({"op": st.just("close_edge"), "id": st.sampled_from(["#2", MISSING_ULID])}),
        st.fixed_dictionaries({"op": st.just("remove_node"), "id": st.sampled_from(["#0", MISSING_ULID])}),
    )
    return st.lists(command, min_size=1, max_size=4)


def _string(schema: dict[str, Any], hint: st.SearchStrategy[Any] | None) -> st.SearchStrategy[Any]:
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    pattern = schema.get("pattern")
    if pattern == "^[a-fA-F0-9]{64}$":
        generic: st.SearchStrategy[str] = st.text(alphabet="0123456789abcdefABCDEF", min_size=64, max_size=64)
    elif pattern is not None:
        visible = st.characters(codec="utf-8", exclude_categories=["Cs", "Zs", "Cc"])
        generic = st.text(alphabet=visible, min_size=1, max_size=12)
    else:
        generic = st.text(max_size=12)
    low, high = schema.get("minLength", 0), schema.get("maxLength", 10**9)
    generic = generic.filter(lambda s: low <= len(s) <= high)
    return st.one_of(hint, hint, generic) if hint is not None else generic


def valid_like(schema: Any, root: dict[str, Any], seeds: Seeds, name: str = "") -> st.SearchStrategy[Any]:
    """Values the schema allows, aimed at the seeds for properties named like ids, names..."""
    schema = _resolve(schema, root)
    if name == "commands":
        return batch_commands(seeds)
    if schema is True or schema == {} or not isinstance(schema, dict):
        return RANDOM_JSON
    hint = hints(seeds).get(name)
    if "anyOf" in schema:
        return st.one_of([valid_like(s, root, seeds, name) for s in schema["anyOf"]])
    kinds = schema.get("type")
    if isinstance(kinds, list):
        return st.one_of([valid_like({**schema, "type": k}, root, seeds, name) for k in kinds if k != "null"])
    if kinds == "string":
        return _string(schema, hint)
    if kinds in ("integer", "number"):
        if hint is not None and name in TIME_FIELDS:
            return hint.filter(lambda v: isinstance(v, int))
        low = schema.get("minimum", 0)
        high = schema.get("maximum", low + 20)
        ints = st.integers(min_value=math.ceil(low), max_value=math.floor(high))
        return ints if kinds == "integer" else ints | st.floats(min_value=low, max_value=high)
    if kinds == "boolean":
        return st.booleans()
    if kinds == "null":
        return st.none()
    if kinds == "array":
        low = schema.get("minItems", 0)
        high = min(schema.get("maxItems", 4), max(low, 4))
        if name in ("vector", "values"):
            floats = st.lists(st.floats(-1, 1), min_size=max(1, low), max_size=4)
            return st.one_of(st.just([1.0, 0.0, 0.0]), floats)
        return st.lists(valid_like(schema.get("items", True), root, seeds, name), min_size=low, max_size=high)
    if kinds == "object":
        properties = schema.get("properties")
        if properties is None:
            extra = schema.get("additionalProperties", True)
            values = st.one_of(JSON_SCALARS, RANDOM_JSON) if extra is True else valid_like(extra, root, seeds)
            return st.dictionaries(st.sampled_from(["role", "name", "n", "flag", "x y"]), values, max_size=3)
        required = [k for k in schema.get("required", []) if k in properties]
        optional = {k: valid_like(v, root, seeds, k) for k, v in properties.items() if k not in required}
        return st.fixed_dictionaries(
            {k: valid_like(properties[k], root, seeds, k) for k in required}, optional=optional
        )
    return RANDOM_JSON


def field_paths(schema: Any, root: dict[str, Any], value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Where in `value` one hostile field can go: every property the schema names (present
    or not), the first elements of arrays, and the keys of values the schema leaves free."""
    schema = _resolve(schema, root)
    out: list[tuple[Any, ...]] = []
    if len(path) > 6:
        return out
    if not isinstance(schema, dict) or (not schema.get("properties") and not schema.get("items")):
        if isinstance(value, dict):
            for key in list(value)[:4]:
                out += [(*path, key), *field_paths(True, root, value[key], (*path, key))]
        elif isinstance(value, list):
            for index, element in enumerate(value[:3]):
                out += [(*path, index), *field_paths(True, root, element, (*path, index))]
        if not isinstance(schema, dict):
            return out
    for option in schema.get("anyOf", []):
        out += field_paths(option, root, value, path)
    properties = schema.get("properties")
    if isinstance(properties, dict) and isinstance(value, dict):
        for key, sub in properties.items():
            out.append((*path, key))
            if key in value:
                out += field_paths(sub, root, value[key], (*path, key))
    items = schema.get("items")
    if items is not None and isinstance(value, list):
        for index, element in enumerate(value[:3]):
            out += [(*path, index), *field_paths(items, root, element, (*path, index))]
    return out


def put(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: put(value.get(head), rest, new)}
    if isinstance(value, list) and isinstance(head, int) and head < len(value):
        copy = list(value)
        copy[head] = put(copy[head], rest, new)
        return copy
    return value


def short(value: Any, limit: int = 1500) -> str:
    """A readable repr of a case that may hold megabytes or nest 900 deep."""

    def shrink(v: Any, depth: int = 0) -> Any:
        if depth > 8 and isinstance(v, list | dict):
            return f"<{type(v).__name__} nested deeper>"
        if isinstance(v, str) and len(v) > 80:
            return f"{v[:40]!r}...<{len(v)} chars>"
        if isinstance(v, list):
            return [shrink(x, depth + 1) for x in v[:5]] + ([f"<{len(v)} items>"] if len(v) > 5 else [])
        if isinstance(v, dict):
            return {shrink(k, depth + 1): shrink(x, depth + 1) for k, x in list(v.items())[:8]}
        return v

    text = repr(shrink(value))
    return text if len(text) <= limit else text[:limit] + "..."


# -- the server under fuzzing ------------------------------------------------------------------------

FINGERPRINT = [
    "SELECT COALESCE(MAX(seq), 0) FROM change_log",
    "SELECT COUNT(*), COALESCE(SUM(updated_at), 0), TOTAL(LENGTH(props)), TOTAL(LENGTH(label)) FROM node",
    "SELECT COUNT(*), TOTAL(LENGTH(content)), TOTAL(importance), TOTAL(LENGTH(summary)), TOTAL(LENGTH(memory_type))"
    " FROM memory",
    "SELECT COUNT(*), TOTAL(LENGTH(tag)) FROM memory_tag",
    "SELECT COUNT(*), TOTAL(LENGTH(name)), TOTAL(LENGTH(entity_type)) FROM entity",
    "SELECT COUNT(*), TOTAL(LENGTH(content)), TOTAL(position) FROM observation",
    "SELECT COUNT(*), COUNT(valid_to), TOTAL(valid_to), TOTAL(LENGTH(props)), TOTAL(LENGTH(type)) FROM edge",
    "SELECT COUNT(*), TOTAL(updated_at), TOTAL(dim) FROM embedding",
]


@dataclass
class Stats:
    cases: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    writes: int = 0
    seconds: float = 0.0
    slowest: tuple[float, str] = (0.0, "")


class Fuzzed:
    """One profile's server, its tools' schemas, its seeds, and a read-only view of its file."""

    def __init__(self, profile: str, directory: Path, transport: str = "stdio") -> None:
        self.profile = profile
        self.transport = transport
        self.directory = directory
        self.stats = Stats()
        self.starts = 0
        self.last: dict[str, Any] = {}
        """The reply to the latest case."""
        self.start()

    def start(self) -> None:
        """A fresh server on a fresh file (again after a crash or a hang, so that every case
        meets a server in the same state whatever came before)."""
        self.starts += 1
        self.checked_stderr = 0
        """How much of stderr the per-case checks have looked at."""
        self.db = self.directory / f"memory-{self.starts}.db"
        flags = FLAGS.get(self.profile, [])
        self.client: RawClient | HttpClient
        if self.transport == "http":
            self.client = HttpClient(self.db, self.profile, flags)
        else:
            command = serve_command(self.db, self.profile, *flags)
            self.client = RawClient(command, self.directory / f"stderr-{self.starts}.log")
        self.client.handshake()
        listed = self.client.rpc("tools/list", {})["result"]["tools"]
        self.tools: dict[str, dict[str, Any]] = {t["name"]: t for t in listed}
        assert list(self.tools) == TOOLS[self.profile], "the fuzz list must name every tool"
        self.reader = sqlite3.connect(
            f"file:{self.db}?mode=ro", uri=True, isolation_level=None, check_same_thread=False
        )
        empty = self.fingerprint()
        self.seeds = Seeds()
        self.seed()
        # The fingerprint must see writes, or "unchanged" would prove nothing.
        seeded = self.fingerprint()
        assert seeded[0] > empty[0] and seeded != empty, (empty, seeded)

    def restart_if_needed(self) -> None:
        if self.client.proc.poll() is None and not self.client.abandoned:
            return
        self.close()
        self.start()

    def ok(self, tool: str, arguments: dict[str, Any]) -> Any:
        reply = self.client.rpc("tools/call", {"name": tool, "arguments": arguments})
        assert "result" in reply and not reply["result"].get("isError"), (tool, arguments, reply)
        return reply["result"].get("structuredContent")

    def seed(self) -> None:
        s = self.seeds
        if self.profile == "native":
            made = self.ok(
                "remember",
                {
                    "memories": [
                        {"content": "fuzz seed alpha: the server keeps notes", "tags": ["seed"], "about": ["Ada"]},
                        {"content": BOMB_TEXT, "tags": ["bomb"]},
                    ],
                    "entities": [
                        {"name": "Ada", "type": "person", "observations": ["likes maps", BOMB_TEXT]},
                        {"name": "Bob", "type": "person"},
                    ],
                },
            )
            s.ids += [m["id"] for m in made["memories"]] + [e["id"] for e in made["entities"]]
            s.names += ["Ada", "Bob"]
            relation = self.ok("relate", {"add": [{"from": "Ada", "to": "Bob", "type": "knows"}]})["added"][0]
            s.ids.append(relation["id"])
            self.ok("update", {"ref": "Ada", "embedding": {"model": "fz", "values": [1.0, 0.0, 0.0]}})
        elif self.profile == "memdb":
            for content in ("fuzz seed alpha", BOMB_TEXT, "fuzz seed beta"):
                s.hashes.append(self.ok("store_memory", {"content": content, "tags": ["seed"]})["result"]["hash"])
            self.ok("create_relationship", {"from_hash": s.hashes[0], "to_hash": s.hashes[1], "relation_type": "about"})
        elif self.profile == "topodb":
            entity = self.ok("create_entity", {"name": "Ada", "props": {"role": "admin"}})["id"]
            memory = self.ok("create_memory", {"content": "fuzz seed alpha " + BOMB_TEXT})["id"]
            scoped = self.ok("create_entity", {"name": "Bob", "scope": SCOPE_A})["id"]
            edge = self.ok("link", {"from_id": memory, "to_id": entity, "edge_type": "about"})["id"]
            self.ok("set_embedding", {"id": entity, "model": "fz", "vector": [1.0, 0.0, 0.0]})
            s.ids += [entity, memory, scoped, edge]
            s.names += ["Ada", "Bob"]
        else:
            entities = [
                {"name": "Ada", "entityType": "person", "observations": ["likes maps", BOMB_TEXT]},
                {"name": "Bob", "entityType": "person", "observations": []},
            ]
            self.ok("create_entities", {"entities": entities})
            self.ok("create_relations", {"relations": [{"from": "Ada", "to": "Bob", "relationType": "knows"}]})
            s.names += ["Ada", "Bob"]

    def fingerprint(self) -> list[tuple[Any, ...]]:
        self.reader.execute("BEGIN")
        try:
            return [tuple(self.reader.execute(sql).fetchone()) for sql in FINGERPRINT]
        finally:
            self.reader.execute("COMMIT")

    def case(self, tool: str, params: Any, *, ascii_only: bool = True, mode: str = "") -> str:
        """Send one tools/call and check everything the module promises; the outcome."""
        self.restart_if_needed()
        stderr_mark = self.client.stderr_size()
        try:
            return self._case(tool, params, ascii_only=ascii_only, mode=mode, stderr_mark=stderr_mark)
        finally:
            # What a failing case wrote is that case's failure, not the module's.
            self.checked_stderr = self.client.stderr_size()

    def _case(self, tool: str, params: Any, *, ascii_only: bool, mode: str, stderr_mark: int) -> str:
        spec = self.tools.get(tool)
        label = f"{self.profile}/{tool} [{mode}] params={short(params)}"
        before = self.fingerprint()
        request_id, line = self.client.request_line("tools/call", params, ascii_only=ascii_only)
        started = time.monotonic()
        self.client.send_line(line)
        try:
            reply = self.client.answer(request_id)
        except Hang as error:
            raise AssertionError(f"HANG: {label}: {error}") from None
        except ServerDied as error:
            raise AssertionError(f"CRASH: {label}: {error}") from None
        elapsed = time.monotonic() - started
        self.last = reply
        outcome, text = self.judge(reply, spec, params, label)
        after = self.fingerprint()
        if outcome != "ok":
            assert after == before, f"a refused call changed the database: {label}\n{before}\n{after}\n{text[:500]}"
        elif spec is not None and (
            (spec.get("annotations") or {}).get("readOnlyHint") or tool in READ_ONLY.get(self.profile, ())
        ):
            assert after == before, f"a read-only tool changed the database: {label}\n{before}\n{after}"
        probe_tool, probe_args = PROBES[self.profile]
        try:
            probe = self.client.rpc("tools/call", {"name": probe_tool, "arguments": probe_args})
        except AssertionError as error:
            raise AssertionError(f"not answering after {label}: {error}") from None
        assert "result" in probe and probe["result"].get("isError") is False, f"not answering after {label}: {probe}"
        new_stderr = self.client.stderr_since(stderr_mark)
        assert "Traceback" not in new_stderr, f"traceback on stderr after {label}:\n{new_stderr[-4000:]}"
        self.stats.cases += 1
        self.stats.outcomes[f"{outcome} {reply['error'].get('code')}" if outcome == "rpc-error" else outcome] += 1
        self.stats.writes += outcome == "ok" and after != before
        self.stats.seconds += elapsed
        if elapsed > self.stats.slowest[0]:
            self.stats.slowest = (elapsed, label[:160])
        return outcome

    def judge(self, reply: dict[str, Any], spec: dict[str, Any] | None, params: Any, label: str) -> tuple[str, str]:
        """("ok" | "tool-error" | "rpc-error", its text) after checking the reply's form."""
        if "error" in reply:
            error = reply["error"]
            message = error.get("message")
            assert isinstance(error.get("code"), int), f"{label}: {reply}"
            assert isinstance(message, str) and message.strip(), f"{label}: an error without a message: {reply}"
            assert not LEAKS.search(message), f"{label}: the error leaks internals: {message[:2000]}"
            return "rpc-error", message
        result = reply.get("result")
        mcp_types.CallToolResult.model_validate(result)
        assert isinstance(result, dict), f"{label}: {reply}"
        texts = [c.get("text") for c in result.get("content", []) if c.get("type") == "text"]
        assert texts and all(isinstance(t, str) for t in texts), f"{label}: a result without text: {short(result)}"
        text = "\n".join(texts)
        structured = result.get("structuredContent")
        output = (spec or {}).get("outputSchema")
        if result.get("isError"):
            assert text.strip(), f"{label}: an error result with an empty text"
            assert not LEAKS.search(text), f"{label}: the error leaks internals: {text[:2000]}"
            if structured is not None and output is not None:
                problems = schema_errors(output, structured)
                assert not problems, f"{label}: the error's content does not match the outputSchema: {problems}"
            return "tool-error", text
        assert spec is not None, f"{label}: an unknown tool succeeded"
        assert "Traceback" not in text, f"{label}: {text[:2000]}"
        if output is not None:
            assert structured is not None, f"{label}: a success without structuredContent"
            problems = schema_errors(output, structured)
            assert not problems, f"{label}: the result does not match the outputSchema: {problems}; {short(structured)}"
            if self.profile == "memdb":
                assert structured.get("ok") is True, f"{label}: a failure envelope not flagged isError: {structured}"
        arguments = params.get("arguments") if isinstance(params, dict) else None
        problems = schema_errors(spec["inputSchema"], {} if arguments is None else arguments)
        assert not problems, f"{label}: accepted arguments its inputSchema forbids: {problems}"
        return "ok", text

    def close(self) -> None:
        self.reader.close()
        self.client.close()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Callable[..., Fuzzed]]:
    """The module's servers, one per profile and transport, each started on first use."""
    started: dict[str, Fuzzed] = {}

    def get(profile: str, transport: str = "stdio") -> Fuzzed:
        key = profile if transport == "stdio" else f"{profile} over {transport}"
        if key not in started:
            started[key] = Fuzzed(profile, tmp_path_factory.mktemp(f"fuzz-{profile}-{transport}"), transport)
        return started[key]

    began = time.monotonic()
    yield get
    lines = [f"fuzz summary: {EXAMPLES} examples per test, {time.monotonic() - began:.0f}s in all"]
    for profile, server in started.items():
        s = server.stats
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(s.outcomes.items()))
        size = sum(p.stat().st_size for p in server.directory.glob(f"{server.db.name}*")) / 1e6
        lines.append(f"  {profile}: {s.cases} cases ({outcomes}; writes seen {s.writes}); {s.seconds:.1f}s in calls")
        lines.append(f"    servers started {server.starts}; last database {size:.1f} MB")
        lines.append(f"    slowest {s.slowest[0]:.2f}s: {s.slowest[1]}")
    for server in started.values():
        hung = server.client.abandoned
        server.close()
        tail = server.client.stderr_since(server.checked_stderr)
        assert hung or server.client.proc.returncode == 0, (
            f"{server.profile} exited with {server.client.proc.returncode}"
        )
        assert "Traceback" not in tail, f"{server.profile} wrote a traceback between cases or at exit:\n{tail[-4000:]}"
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
        summary = "\n" + "\n".join(lines)
        print(summary.encode("utf-8", "backslashreplace").decode(), flush=True)  # a tool name may be a surrogate


# -- arguments ---------------------------------------------------------------------------------------

MODES = ["valid", "one-hostile", "one-hostile", "one-hostile", "missing", "extra", "all-hostile", "random"]
EXTRA_KEYS = ["zzz", "", "__proto__", "constructor", "id ", "ID", "\x00", "\ud800", "a" * 10_000]


def arguments_for(data: st.DataObject, server: Fuzzed, tool: str) -> tuple[str, Any]:
    schema = server.tools[tool]["inputSchema"]
    mode = data.draw(st.sampled_from(MODES), label="mode")
    base = data.draw(valid_like(schema, schema, server.seeds), label="base")
    if mode == "valid":
        return mode, base
    if mode == "one-hostile":
        paths = field_paths(schema, schema, base)
        path = data.draw(st.sampled_from(paths), label="path") if paths else ()
        return mode, put(base, path, data.draw(HOSTILE, label="hostile"))
    if mode == "missing":
        required = schema.get("required", [])
        gone = data.draw(st.sampled_from(required), label="missing") if required else None
        return mode, {k: v for k, v in base.items() if k != gone}
    if mode == "extra":
        key = data.draw(st.sampled_from(EXTRA_KEYS), label="key")
        return mode, {**base, key: data.draw(HOSTILE, label="extra")}
    if mode == "all-hostile":
        return mode, {k: data.draw(HOSTILE, label=k) for k in schema.get("properties", {})}
    keys = st.one_of(st.sampled_from(list(schema.get("properties", {})) or ["x"]), st.text(max_size=6))
    return mode, data.draw(st.dictionaries(keys, st.one_of(RANDOM_JSON, HOSTILE_SCALARS), max_size=5), label="random")


# -- the properties ----------------------------------------------------------------------------------

CASES = [(profile, tool) for profile, tools in TOOLS.items() for tool in tools]


@pytest.mark.parametrize(("profile", "tool"), CASES, ids=[f"{p}-{t}" for p, t in CASES])
@SETTINGS
@given(data=st.data())
def test_tool_survives_fuzzing(fleet: Callable[..., Fuzzed], profile: str, tool: str, data: st.DataObject) -> None:
    server = fleet(profile)
    mode, arguments = arguments_for(data, server, tool)
    ascii_only = data.draw(st.sampled_from([True, True, False]), label="ascii")
    params = {"name": tool, "arguments": arguments}
    server.case(tool, params, ascii_only=ascii_only, mode=mode)


@pytest.mark.parametrize(("profile", "tool"), CASES, ids=[f"{p}-{t}" for p, t in CASES])
@HTTP_SETTINGS
@given(data=st.data())
def test_tool_survives_fuzzing_over_http(
    fleet: Callable[..., Fuzzed], profile: str, tool: str, data: st.DataObject
) -> None:
    """The same over Streamable HTTP, with fewer examples: the tools are the same code, the
    reading and writing of messages is not."""
    server = fleet(profile, "http")
    mode, arguments = arguments_for(data, server, tool)
    ascii_only = data.draw(st.sampled_from([True, True, False]), label="ascii")
    server.case(tool, {"name": tool, "arguments": arguments}, ascii_only=ascii_only, mode=mode)


NOT_OBJECTS = st.one_of(
    st.just("<absent>"),
    st.sampled_from([None, [], [1], "x", 0, True, [{"content": "x"}], "\udc00"]),
    RANDOM_JSON.filter(lambda v: not isinstance(v, dict)),
)
ODD_NAMES = ["", "nope", "REMEMBER", " recall", "tools/list", "\x00", "\ud800", "a" * 10_000]


@pytest.mark.parametrize("profile", list(TOOLS))
@SETTINGS
@given(data=st.data())
def test_malformed_calls_are_refused(fleet: Callable[..., Fuzzed], profile: str, data: st.DataObject) -> None:
    """Arguments that are not an object or are absent, and tool names no profile has."""
    server = fleet(profile)
    tool = data.draw(st.one_of(st.sampled_from(TOOLS[profile]), st.sampled_from(ODD_NAMES)), label="tool")
    arguments = data.draw(NOT_OBJECTS if tool in TOOLS[profile] else RANDOM_JSON, label="arguments")
    params: Any = {"name": tool} if arguments == "<absent>" else {"name": tool, "arguments": arguments}
    server.case(tool, params, ascii_only=data.draw(st.booleans(), label="ascii"), mode="malformed")


# -- the oracle itself can fail ----------------------------------------------------------------------


def test_the_checks_catch_bad_answers() -> None:
    """`judge` refuses what the module promises never to see, and passes a plain refusal."""
    judge = Fuzzed.__new__(Fuzzed)
    judge.profile = "native"
    spec = {
        "name": "t",
        "inputSchema": {"type": "object", "properties": {"n": {"type": "integer", "maximum": 3}}},
        "outputSchema": {"type": "object", "properties": {"k": {"type": "string"}}, "required": ["k"]},
    }

    def text(value: str, *, is_error: bool, structured: Any = None) -> dict[str, Any]:
        result: dict[str, Any] = {"content": [{"type": "text", "text": value}], "isError": is_error}
        if structured is not None:
            result["structuredContent"] = structured
        return {"jsonrpc": "2.0", "id": 1, "result": result}

    fine = {"name": "t", "arguments": {"n": 1}}
    assert judge.judge(text("t: n is too big", is_error=True), spec, fine, "x") == ("tool-error", "t: n is too big")
    assert judge.judge(text('{"k":"v"}', is_error=False, structured={"k": "v"}), spec, fine, "x")[0] == "ok"
    bad_answers = [
        (text("t: internal error (KeyError)", is_error=True), fine),
        (text("Traceback (most recent call last):", is_error=True), fine),
        (text("", is_error=True), fine),
        (text('{"k":1}', is_error=False, structured={"k": 1}), fine),
        (text("{}", is_error=False), fine),
        (text('{"k":"v"}', is_error=False, structured={"k": "v"}), {"name": "t", "arguments": {"n": 9}}),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "internal error: KeyError"}}, fine),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": ""}}, fine),
    ]
    for reply, params in bad_answers:
        with pytest.raises(AssertionError):
            judge.judge(reply, spec, params, "x")


# -- what the fuzzing found -------------------------------------------------------------------------
#
# Each test below is the smallest form of a failure the fuzzing found, now fixed; each failed
# before its fix. `case` runs every check of the fuzzing on the call (and restarts a server
# that died), and the test adds what the answer must be.


def outcome_of(
    fleet: Callable[..., Fuzzed], profile: str, tool: str, arguments: Any, **options: Any
) -> tuple[str, str]:
    """One call of `tool` with every check of the fuzzing: its outcome, and its reply as text."""
    server = fleet(profile)
    outcome = server.case(tool, {"name": tool, "arguments": arguments}, **options)
    return outcome, json.dumps(server.last)


# A lone UTF-16 surrogate is legal JSON (`"\ud800"`) but no Unicode text. Replies that
# quoted one back (an unknown key, tool name, id or enum value) could not be written as
# UTF-8: the stdio writer died and the process exited mid-call. Now a message holding one is
# refused as unparseable, as the SDK's own reader (so the HTTP transport) refuses it.
SURROGATE_ECHOES = [
    ("native", "survey", {"\ud800": 1}),
    ("memdb", "memory_stats", {"\ud800": 1}),
    ("topodb", "get_node", {"id": "\ud800"}),
    ("topodb", "traverse", {"seed_id": MISSING_ULID, "direction": "\ud800"}),
    ("topodb", "get_changes", {"since_seq": "\ud800"}),
    ("topodb", "create_entity", {"name": "x", "scope": "\ud800"}),
    ("memdb", "\ud800", {}),
    ("knowledge-graph", "\ud800", {}),
]


@pytest.mark.parametrize("ascii_only", [True, False], ids=["escaped", "raw-bytes"])
@pytest.mark.parametrize(("profile", "tool", "arguments"), SURROGATE_ECHOES)
def test_a_lone_surrogate_is_a_parse_error(
    fleet: Callable[..., Fuzzed], profile: str, tool: str, arguments: dict[str, Any], ascii_only: bool
) -> None:
    server = fleet(profile)
    assert server.case(tool, {"name": tool, "arguments": arguments}, ascii_only=ascii_only) == "rpc-error"
    assert server.last["error"]["code"] == -32700, server.last
    if ascii_only:  # the request's id was readable, so the answer names it
        assert server.last.get("id") is not None, server.last


# JSON integers have no size limit and Python reads them exactly, so `math.isfinite` and
# `float()` raised OverflowError on 10**400 ("internal error"). Now such a number is what a
# JavaScript or Rust client makes of it: out of range.
HUGE_INTEGERS = [
    ("native", "survey", {"top": 10**400}),
    ("native", "remember", {"memories": [{"content": "x", "props": {"n": 10**400}}]}),
    ("memdb", "recall", {"query": "x", "depth": 10**400}),
    ("knowledge-graph", "search_nodes", {"query": "x", "limit": 10**400}),
    ("topodb", "create_entity", {"name": 10**400}),
    ("topodb", "create_entity", {"name": "x", "props": {"n": 10**400}}),
]


@pytest.mark.parametrize(("profile", "tool", "arguments"), HUGE_INTEGERS)
def test_an_integer_past_the_float_range_is_refused(
    fleet: Callable[..., Fuzzed], profile: str, tool: str, arguments: dict[str, Any]
) -> None:
    outcome, reply = outcome_of(fleet, profile, tool, arguments)
    assert outcome != "ok", reply
    if profile == "topodb":
        assert "number out of range" in reply, reply


# read_graph bound `limit + 1` as an SQLite integer: 2**63 - 1 or 1e300 overflowed. A limit
# past anything a store holds now simply means every entity.
@pytest.mark.parametrize("limit", [2**63 - 1, 2**63, 10**20, 1e300])
def test_a_read_graph_limit_past_sqlite_integers_reads_everything(fleet: Callable[..., Fuzzed], limit: float) -> None:
    server = fleet("knowledge-graph")  # shared with the fuzzing: compare with the whole graph now
    assert server.case("read_graph", {"name": "read_graph", "arguments": {"limit": limit}}) == "ok"
    page = server.last["result"]["structuredContent"]
    assert page == server.ok("read_graph", {}) and page["entities"]


# An FTS5 query string ends at a NUL, so a NUL inside a substring search reached MATCH as
# "unterminated string". The trigram lookup now uses the pieces around it.
NUL_SEARCHES = [
    ("native", "recall", {"query": "abc\x00def"}),
    ("native", "recall", {"pattern": "abc\x00"}),
    ("knowledge-graph", "search_nodes", {"query": "abc\x00def"}),
    ("knowledge-graph", "search_observations", {"query": "abc\x00def"}),
    ("knowledge-graph", "filter_observations", {"pattern": "abc\x00"}),
]


@pytest.mark.parametrize(("profile", "tool", "arguments"), NUL_SEARCHES)
def test_a_nul_in_a_search_is_searched_for(
    fleet: Callable[..., Fuzzed], profile: str, tool: str, arguments: dict[str, Any]
) -> None:
    outcome, reply = outcome_of(fleet, profile, tool, arguments)
    assert outcome == "ok", reply


# Cursors are opaque, but their numbers were used unchecked: native's offset went through
# int() (Infinity and 1e999 are JSON to Python), knowledge-graph's position was bound as an
# SQLite integer.
FORGED_CURSORS = [
    ("native", "recall", {"query": "fuzz", "cursor": b64('{"q":"x","o":Infinity}')}),
    ("native", "explore", {"from": "Ada", "cursor": b64('{"q":"x","o":1e999}')}),
    ("native", "recall", {"query": "fuzz", "cursor": b64('{"q":"x","o":true}')}),
    ("knowledge-graph", "read_graph", {"limit": 1, "cursor": b64("e:9223372036854775808")}),
    ("knowledge-graph", "read_graph", {"limit": 1, "cursor": b64("e: 1")}),
]


@pytest.mark.parametrize(("profile", "tool", "arguments"), FORGED_CURSORS)
def test_a_forged_cursor_is_refused(
    fleet: Callable[..., Fuzzed], profile: str, tool: str, arguments: dict[str, Any]
) -> None:
    outcome, reply = outcome_of(fleet, profile, tool, arguments)
    assert outcome == "tool-error" and "cursor is not one this server gave out" in reply, reply


# A number of 4,300 digits or more is past what Python's int() reads: a topodb batch
# back-ref like that was "internal error: ValueError"; Rust reads it as no usize.
def test_a_back_ref_of_thousands_of_digits_is_not_a_number(fleet: Callable[..., Fuzzed]) -> None:
    link = {"op": "link", "from": "#" + "9" * 5000, "to": "#0", "type": "t"}
    commands = [{"op": "create_memory", "content": "x"}, link]
    outcome, reply = outcome_of(fleet, "topodb", "submit_batch", {"commands": commands})
    assert outcome == "rpc-error" and "is not #<number>" in reply, reply


# The `regex` module compiles a counted repeat by writing its body out that many times:
# `a{1000000000}` never answered (minutes of compiling, gigabytes of memory), outside any
# time limit. Patterns whose repeats would write out more than 100,000 steps are refused.
REPEAT_BOMBS = [
    ("native", "recall", {"pattern": "a{1000000000}"}),
    ("native", "recall", {"pattern": "(a{1000}){1000}"}),
    ("native", "recall", {"pattern": "a{" + "9" * 5000 + "}"}),
    ("knowledge-graph", "filter_observations", {"pattern": "a{1000000000}"}),
    ("knowledge-graph", "filter_observations", {"pattern": "((x{100}){100}){100}"}),
]


@pytest.mark.parametrize(("profile", "tool", "arguments"), REPEAT_BOMBS)
def test_a_counted_repeat_bomb_is_refused(
    fleet: Callable[..., Fuzzed], profile: str, tool: str, arguments: dict[str, Any]
) -> None:
    outcome, reply = outcome_of(fleet, profile, tool, arguments)
    assert outcome == "tool-error" and "at most 100,000" in reply, reply


def test_a_modest_counted_repeat_still_matches(fleet: Callable[..., Fuzzed]) -> None:
    server = fleet("knowledge-graph")  # shared with the fuzzing: its own entity to find
    entity = {"name": "Repeat holder", "entityType": "test", "observations": ["q" * 40 + "!"]}
    server.ok("create_entities", {"entities": [entity]})
    arguments = {"pattern": "q{40}!"}
    assert server.case("filter_observations", {"name": "filter_observations", "arguments": arguments}) == "ok"
    assert [e["name"] for e in server.last["result"]["structuredContent"]["entities"]] == ["Repeat holder"]


# Some work on search text is not inside a database statement the time limit can stop:
# compiling a pattern (pure Python, about 3 s per MB), or FTS5 parsing a query of every word
# given (~4 s for 150,000 words, superlinear). A 2.5 MB query or a 5 MB pattern ran far past
# the tool time limit, and its abandoned worker kept a core busy after the timeout answer.
# Search text now has a length limit and repeated words count once; here the limit of 1 s
# must hold, so the refusal (or the result) has to come within 3 s more.
LIMIT_MS = 1000
SLOW_TEXTS = [
    ("native", "recall", {"query": "word " * 500_000}),
    ("native", "recall", {"pattern": "a" * 5_000_000}),
    ("knowledge-graph", "search_nodes", {"query": "word " * 500_000}),
    ("knowledge-graph", "search_observations", {"query": "word " * 500_000}),
    ("knowledge-graph", "filter_observations", {"pattern": "a" * 5_000_000}),
    ("memdb", "search_memories", {"query": "word " * 500_000}),
    ("topodb", "search_memories", {"query": "word " * 500_000}),
]


@pytest.mark.parametrize(
    ("profile", "tool", "arguments"), SLOW_TEXTS, ids=[f"{p}-{t}-{next(iter(a))}" for p, t, a in SLOW_TEXTS]
)
def test_a_huge_search_text_is_refused_within_the_time_limit(
    tmp_path: Path, profile: str, tool: str, arguments: dict[str, Any]
) -> None:
    command = serve_command(tmp_path / "memory.db", profile, "--tool-timeout-ms", str(LIMIT_MS))
    client = RawClient(command, tmp_path / "stderr.log")
    try:
        client.handshake()
        request_id, line = client.request_line("tools/call", {"name": tool, "arguments": arguments})
        client.send_line(line)
        try:
            reply = client.answer(request_id, timeout=LIMIT_MS / 1000 + 3)
        except Hang:
            pytest.fail(f"{profile}/{tool}: a {LIMIT_MS} ms time limit did not hold: no answer within 3 s more")
        text = json.dumps(reply)
        assert "too long" in text or "Too big" in text, reply  # memdb's schema caps a query at 1,000
    finally:
        client.abandoned = True  # kill it: it may still be busy
        client.close()
