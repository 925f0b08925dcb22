"""Helpers for the native profile's end-to-end tests.

`Native` is one real `mnemodb serve` process spoken to by the MCP SDK's own client over
stdio. The client runs in a background event loop (an anyio blocking portal), so a test
is a plain function and one server can serve a whole module or class:

- `call(tool, args)` checks a success's envelope (not `isError`, one text item that is
  the JSON of `structuredContent`) and returns `structuredContent`; the SDK client has
  already checked it against the tool's `outputSchema`;
- `error(tool, args)` checks an `isError` result (one text item, no structured content,
  no traceback) and returns its text.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent

from inprocess import serving
from mnemodb.model.times import epoch_ms
from support import PROFILE_TOOLS, server_env

T = TypeVar("T")

TOOL_NAMES = PROFILE_TOOLS["native"]
INVALID_PARAMS = -32602
SCOPE_A = "01HV7N8Q3Y2J6W5X4Z9A0B1C2D"
SCOPE_B = "01HV7N8Q3Y2J6W5X4Z9A0B1C2E"
SCOPE_C = "01HV7N8Q3Y2J6W5X4Z9A0B1C2F"
PREVIEW_CHARS = 240


def native_command(db: Path | str, *flags: str, profile: str | None = "native") -> list[str]:
    """`mnemodb serve` on `db`; `profile=None` leaves --profile out (the default profile)."""
    chosen = ["--profile", profile] if profile else []
    return [sys.executable, "-m", "mnemodb", "serve", *chosen, "--db", str(db), *flags]


def ms(text: str) -> int:
    """Milliseconds since 1970 of one of the server's ISO 8601 UTC times."""
    return epoch_ms(datetime.fromisoformat(text.replace("Z", "+00:00")))


def iso(value: int) -> str:
    """An ISO 8601 UTC time, to the millisecond, for `value` ms since 1970."""
    moment = datetime.fromtimestamp(value / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value % 1000:03d}Z"


def now_ms() -> int:
    return int(time.time() * 1000)


def wait_past(value: int) -> None:
    """Return once the wall clock reads later than `value` ms (orders writes in time)."""
    while now_ms() <= value:
        time.sleep(0.002)


def text_of(result: CallToolResult) -> str:
    assert len(result.content) == 1, result
    block = result.content[0]
    assert isinstance(block, TextContent), result
    return block.text


class Native:
    """One `mnemodb serve` process with the native profile, driven by the SDK's client; or
    the same server in this process (`in_process`)."""

    def __init__(
        self, portal: BlockingPortal, client: Client, errlog: Path | None, logged: Callable[[], str] | None = None
    ) -> None:
        self.portal = portal
        self.client = client
        self.errlog = errlog
        """Where the server's stderr goes; None for a server this client did not start."""
        self.logged = logged
        """For an in-process server: what it logged at the level a process would write to stderr."""

    @classmethod
    @contextmanager
    def start(
        cls,
        db: Path,
        *flags: str,
        profile: str | None = "native",
        env: Mapping[str, str] | None = None,
    ) -> Iterator[Native]:
        command = native_command(db, *flags, profile=profile)
        params = StdioServerParameters(
            command=command[0], args=command[1:], env=server_env({"MNEMODB_LOG_LEVEL": "error", **(env or {})})
        )
        errlog = db.parent / f"{db.name}.stderr.log"
        with (
            errlog.open("w") as stream,
            start_blocking_portal() as portal,
            portal.wrap_async_context_manager(Client(stdio_client(params, errlog=stream), mode="legacy")) as client,
        ):
            yield cls(portal, client, errlog)

    @classmethod
    @contextmanager
    def in_process(
        cls,
        db: Path | str,
        *flags: str,
        profile: str | None = "native",
        env: Mapping[str, str] | None = None,
    ) -> Iterator[Native]:
        """The server `start` would run, built in this process and spoken to by the same client
        over the SDK's in-memory streams."""
        with (
            serving(db, profile, *flags, env={"MNEMODB_LOG_LEVEL": "error", **(env or {})}) as done,
            start_blocking_portal() as portal,
            portal.wrap_async_context_manager(Client(done.server, mode="legacy")) as client,
        ):
            yield cls(portal, client, None, lambda: done.stderr)

    @classmethod
    @contextmanager
    def connect(cls, url: str, mode: str = "legacy", *, token: str | None = None) -> Iterator[Native]:
        """A client of a server already running at `url` (Streamable HTTP); `mode` is "legacy"
        (the initialize handshake) or a modern protocol version; `token` is sent as a bearer."""
        with start_blocking_portal() as portal, contextlib.ExitStack() as stack:
            server: Any = url
            if token is not None:
                http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
                stack.enter_context(portal.wrap_async_context_manager(http))
                server = streamable_http_client(url, http_client=http)
            client = stack.enter_context(portal.wrap_async_context_manager(Client(server, mode=mode)))
            yield cls(portal, client, None)

    @property
    def stderr(self) -> str:
        if self.logged is not None:
            return self.logged()
        assert self.errlog is not None, "this client did not start its server"
        return self.errlog.read_text()

    def tool_names(self) -> list[str]:
        return [tool.name for tool in self.run(self.client.list_tools).tools]

    def run(self, func: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Await one of the client's coroutines from this (synchronous) thread."""
        return self.portal.call(func, *args)

    # -- tools -------------------------------------------------------------------------------

    def result(self, tool: str, arguments: Mapping[str, Any] | None = None) -> CallToolResult:
        return self.run(self.client.call_tool, tool, dict(arguments or {}))

    def call(self, tool: str, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The structured content of a successful call."""
        result = self.result(tool, arguments)
        assert result.is_error is False, (tool, arguments, text_of(result) if result.content else result)
        value = result.structured_content
        assert isinstance(value, dict), result
        assert json.loads(text_of(result)) == value
        return value

    def error(self, tool: str, arguments: Mapping[str, Any] | None = None) -> str:
        """The text of a call that fails as a tool error (`isError`)."""
        result = self.result(tool, arguments)
        assert result.is_error is True, (tool, arguments, result.structured_content)
        assert result.structured_content is None, result
        text = text_of(result)
        assert text.startswith(f"{tool}: "), text
        assert "Traceback" not in text and "internal error" not in text, text
        return text

    def rpc_error(self, func: Callable[..., Awaitable[Any]], *args: Any) -> MCPError:
        """The JSON-RPC error a client request fails with."""
        try:
            self.run(func, *args)
        except MCPError as error:
            return error
        raise AssertionError(f"{getattr(func, '__name__', func)}{args} did not fail")

    # -- conveniences ------------------------------------------------------------------------

    def seq(self) -> int:
        """The change log's position, as `changes` reports it."""
        current: int = self.call("audit", {"limit": 1})["current_seq"]
        return current

    def memory(self, content: str, **fields: Any) -> dict[str, Any]:
        """Remember one memory: its result (id, hash, status...)."""
        scope = fields.pop("scope", None)
        arguments: dict[str, Any] = {"memories": [{"content": content, **fields}]}
        if scope is not None:
            arguments["scope"] = scope
        [stored] = self.call("remember", arguments)["memories"]
        assert isinstance(stored, dict)
        return stored

    def entity(self, name: str, **fields: Any) -> dict[str, Any]:
        """Remember one entity: its result (id, name, status...)."""
        scope = fields.pop("scope", None)
        arguments: dict[str, Any] = {"entities": [{"name": name, **fields}]}
        if scope is not None:
            arguments["scope"] = scope
        [stored] = self.call("remember", arguments)["entities"]
        assert isinstance(stored, dict)
        return stored

    def get(self, ref: str, **extra: Any) -> dict[str, Any]:
        """One item in full, as `get` returns it."""
        [item] = self.call("get", {"refs": [ref], **extra})["items"]
        assert isinstance(item, dict)
        return item

    def relate(self, src: str, dst: str, relation: str, **extra: Any) -> dict[str, Any]:
        [added] = self.call("relate", {"add": [{"from": src, "to": dst, "type": relation, **extra}]})["added"]
        assert isinstance(added, dict)
        return added

    def ids(self, tool: str, arguments: Mapping[str, Any]) -> list[str]:
        """The ids of the items a recall or explore call returns, in order."""
        return [item["id"] for item in self.call(tool, arguments)["items"]]


def serve_fails(tmp_path: Path, *flags: str, env: Mapping[str, str] | None = None) -> str:
    """Run `mnemodb serve` expecting it to refuse its settings: its one-line stderr message.
    Nothing is written: not even the database file."""
    result = subprocess.run(
        native_command(tmp_path / "memory.db", *flags),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=server_env(env),
        timeout=60,
        check=False,
    )
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert result.stdout == ""
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert not (tmp_path / "memory.db").exists()
    return lines[0]
