"""In-process servers: the server `mnemodb serve` builds, spoken to over the SDK's in-memory streams.

A test (or module) that serves this way is marked `pytest.mark.inprocess`; tests/conftest.py
marks the other server tests `e2e`, and `scripts/test --fast` runs all but those.

A tool's behaviour does not depend on the transport, and starting a process per test
costs about a second. The functions here build the same server object `serve` would (the
command line parsed by the CLI's own parser, the database opened with the same options,
the same profile and the same `build_server`) over a real SQLite file, and connect
either

- the SDK's own client to it (`client`, or `Native.in_process`), or
- a raw JSON-RPC peer (`Wire`), which sends and receives JSON-RPC messages as dicts,
  for the tests that check replies as they go on the wire.

What only a process shows (the hardened stdio transport, its protocol rules, signals,
exit codes, stderr, HTTP) stays with the end-to-end tests.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import anyio
import mcp_types as types
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client
from mcp.server.lowlevel import Server
from mcp.shared.memory import create_client_server_memory_streams
from mcp.shared.message import SessionMessage

from mnemodb.cli import main as cli
from mnemodb.engine import Engine
from mnemodb.engine.embedding import BackgroundEmbedder
from mnemodb.server import config
from mnemodb.server import run as server_run
from mnemodb.server.app import build_server
from mnemodb.server.config import Settings
from mnemodb.server.profiles import profile_spec
from support import REPLY_TIMEOUT_S, JsonRpcPeer, server_env


def serve_settings(
    db: Path | str,
    profile: str | None = "memdb",
    *flags: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Settings:
    """The settings `mnemodb serve --profile PROFILE --db DB FLAGS...` would serve with, read
    from the same environment a server process gets (`support.server_env`), in the working
    directory `cwd` (this one when None); `profile=None` leaves --profile out (the default
    profile)."""
    captured: list[Settings] = []

    def capture(settings: Settings) -> int:
        captured.append(settings)
        return 0

    argv = ["serve", *(["--profile", profile] if profile else []), "--db", str(db), *flags]
    with (
        mock.patch.dict(os.environ, server_env(env), clear=True),
        # The command configures the process's logging for a server; this process is pytest's.
        mock.patch.object(config, "configure_logging", lambda level: None),
        mock.patch.object(server_run, "serve", capture),
        contextlib.chdir(cwd or Path.cwd()),
    ):
        status = cli.main(argv)
    assert status == 0 and len(captured) == 1, f"mnemodb {' '.join(argv)} refused its settings"
    return captured[0]


class LogTrap(logging.Handler):
    """What a server process would have written to its stderr at the level the tests serve
    at (errors): the records of every logger, tracebacks included."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.setFormatter(logging.Formatter("[%(levelname)s] %(name)s: %(message)s"))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


class Served:
    """A server built as `serve` builds it, the engine under it, and what it logged."""

    def __init__(self, server: Server[Any], engine: Engine, settings: Settings, log: LogTrap) -> None:
        self.server = server
        self.engine = engine
        self.settings = settings
        self.log = log

    @property
    def stderr(self) -> str:
        """The errors logged while serving (a process would have written them to stderr)."""
        return self.log.text


@contextmanager
def served(settings: Settings) -> Iterator[Served]:
    """The server `mnemodb serve` composes from `settings`, until the block ends; then the
    background embedder stops and the database closes, as when a server stops."""
    spec = profile_spec(settings.profile)
    profile = spec.build(settings)
    trap = LogTrap()
    logging.getLogger().addHandler(trap)
    try:
        engine = server_run.open_engine(settings, spec)
    except server_run.CannotServe as refused:
        logging.getLogger().removeHandler(trap)
        raise AssertionError(f"serve would not start: {refused}; logged:\n{trap.text}") from refused
    background: BackgroundEmbedder | None = None
    embedder = engine.embeddings.embedder
    try:
        server = build_server(profile, engine, tool_timeout_ms=settings.tool_timeout_ms)
        if embedder is not None:
            background = BackgroundEmbedder(engine.embeddings).start()
        yield Served(server, engine, settings, trap)
    finally:
        logging.getLogger().removeHandler(trap)
        if background is not None:
            background.stop(timeout=REPLY_TIMEOUT_S)
        engine.close()


@contextmanager
def serving(
    db: Path | str,
    profile: str | None = "memdb",
    *flags: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Iterator[Served]:
    """`served` for the settings of `mnemodb serve --profile PROFILE --db DB FLAGS...`."""
    with served(serve_settings(db, profile, *flags, env=env, cwd=cwd)) as done:
        yield done


@asynccontextmanager
async def client(
    db: Path | str,
    profile: str = "memdb",
    *flags: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    mode: str = "legacy",
) -> AsyncIterator[Client]:
    """The SDK's client of an in-process server (for `async` tests); `mode` as `Client`'s."""
    with serving(db, profile, *flags, env=env, cwd=cwd) as done:
        async with Client(done.server, mode=mode) as connected:
            yield connected


@asynccontextmanager
async def memory_streams(server: Server[Any]) -> AsyncIterator[tuple[Any, Any]]:
    """The client's ends (read, write) of in-memory streams `server` runs over, as `serve`
    runs it over stdio; closing them ends the server's run (as stdin closing does)."""
    async with create_client_server_memory_streams() as (client_ends, (read, write)):
        stopped = anyio.Event()

        async def run() -> None:
            try:
                await server.run(read, write, server.create_initialization_options())
            finally:
                stopped.set()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run)
            try:
                yield client_ends
            finally:
                await client_ends[1].aclose()
                with anyio.move_on_after(REPLY_TIMEOUT_S):
                    await stopped.wait()
                tasks.cancel_scope.cancel()


class Wire(JsonRpcPeer):
    """A raw JSON-RPC peer of an in-process server: the messages a stdio client would write
    and read, as dicts, over the SDK's in-memory streams (the stream loop `serve` runs,
    without the stdio transport's own checks in front of it)."""

    def __init__(self, portal: BlockingPortal, read: Any, write: Any, served: Served) -> None:
        self.portal = portal
        self._read = read
        self._write = write
        self.served = served
        # How long `recv` waits for the server's next message; a test of a call that runs
        # on CPU time it cannot be sure of on a busy machine may wait longer.
        self.reply_timeout_s = REPLY_TIMEOUT_S

    @classmethod
    @contextmanager
    def start(
        cls,
        db: Path | str,
        profile: str | None = "memdb",
        *flags: str,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> Iterator[Wire]:
        with (
            serving(db, profile, *flags, env=env, cwd=cwd) as done,
            start_blocking_portal() as portal,
            portal.wrap_async_context_manager(memory_streams(done.server)) as (read, write),
        ):
            yield cls(portal, read, write, done)

    @property
    def engine(self) -> Engine:
        return self.served.engine

    @property
    def stderr(self) -> str:
        return self.served.stderr

    def send(self, message: Mapping[str, Any]) -> None:
        parsed = types.jsonrpc_message_adapter.validate_python(dict(message), by_name=False)
        self.portal.call(self._write.send, SessionMessage(parsed))

    async def _receive(self) -> Any:
        with anyio.fail_after(self.reply_timeout_s):
            return await self._read.receive()

    def recv(self) -> dict[str, Any]:
        """The next message from the server, as the stdio transport writes it."""
        received = self.portal.call(self._receive)
        if isinstance(received, Exception):
            raise AssertionError(f"the transport failed: {received!r}")
        assert isinstance(received, SessionMessage), received
        reply: dict[str, Any] = received.message.model_dump(mode="json", by_alias=True, exclude_unset=True)
        return reply


@contextmanager
def wire(
    db: Path | str,
    profile: str | None = "memdb",
    *flags: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Iterator[Wire]:
    """A `Wire` to an in-process server that has completed the initialize handshake."""
    with Wire.start(db, profile, *flags, env=env, cwd=cwd) as peer:
        peer.initialize()
        yield peer


__all__ = ["LogTrap", "Served", "Wire", "client", "serve_settings", "served", "serving", "wire"]
