"""`mnemodb serve`: the composition root that wires settings, engine, profile and transport."""

from __future__ import annotations

import functools
import gc
import logging
import os
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from mnemodb.engine import Engine, EngineError
from mnemodb.engine.embedding import BackgroundEmbedder
from mnemodb.server.calls import ToolCalls
from mnemodb.server.config import make_embedder
from mnemodb.server.lean import LeanServer
from mnemodb.server.profiles import ProfileSpec, profile_spec
from mnemodb.server.settings import Settings, is_loopback
from mnemodb.server.stdio import serve_stdio
from mnemodb.store import sqlite_path

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

log = logging.getLogger("mnemodb")

# How long a stopping server waits for the background embedder.
_EMBEDDER_GRACE_S = 0.3


def serve(settings: Settings, *, on_listening: Callable[[str], None] | None = None) -> int:
    """Serve MCP over stdio until stdin closes, or over HTTP, until a termination signal
    arrives. Exit status. Over HTTP, `on_listening` is told the base URL once it listens."""
    try:
        spec = profile_spec(settings.profile)
    except ValueError as exc:
        log.error("%s", exc)
        return 1
    profile = spec.build(settings)
    # Served beyond this machine, the server needs tokens (or the user's --insecure): a new
    # database has none, so it is refused before anything is created.
    http = settings.http
    exposed = http is not None and not is_loopback(http.host) and not http.insecure and http.jwt is None
    # (A database server cannot be asked before it is opened: its tokens are checked below.)
    new_file = sqlite_path(settings.db_path) is not None and not Path(settings.db_path).exists()
    if exposed and (settings.db_path == ":memory:" or new_file):
        log.error("%s", _unprotected(settings))
        return 1
    try:
        engine = open_engine(settings, spec)
    except CannotServe:
        return 1
    embedder = engine.embeddings.embedder
    if exposed and not engine.tokens.required():
        log.error("%s", _unprotected(settings))
        engine.close()
        return 1
    # The file into the machine's cache while the server starts answering: its first
    # searches need not wait on the disk (see store/sqlite/warming.py).
    engine.store.warm()
    metrics = None
    if settings.http is not None:
        from mnemodb.server.http import Metrics

        metrics = Metrics(engine)
    calls = ToolCalls(
        profile,
        engine,
        tool_timeout_ms=settings.tool_timeout_ms,
        on_tool_call=metrics.tool_called if metrics is not None else None,
    )

    def make_server() -> Server[Any]:
        # The SDK (half a second of imports) is loaded only when a stdio client asks for
        # something the lean path leaves to it, or to serve HTTP.
        from mnemodb.server.app import build_server

        return build_server(profile, engine, calls=calls)

    # What exists now (modules, the profile, the engine) lives as long as the server: out
    # of the collector's sight, each later pass over a call's garbage is shorter.
    gc.freeze()
    # The model loads and the backlog is embedded on a thread of its own: the server answers
    # at once, searching by words until vectors exist.
    background = BackgroundEmbedder(engine.embeddings).start() if embedder is not None else None
    if embedder is not None:
        log.info("embedding new and changed memories with %s in the background", embedder.model)

    async def serve_stdio_until_signal() -> int:
        async with anyio.create_task_group() as tg:

            async def stop_on_signal(*, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
                with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    task_status.started()
                    async for signum in signals:
                        log.info("Received %s, shutting down", signal.Signals(signum).name)
                        tg.cancel_scope.cancel()
                        return

            # Signals are taken before the server says it serves (see serve_http).
            await tg.start(stop_on_signal)
            log.info("mnemodb serving the %s profile on stdio, database %s", profile.name, engine.store.location)
            await serve_stdio(make_server, profile.rules, lean=LeanServer(profile, calls))
            tg.cancel_scope.cancel()
        return 0

    main: Callable[[], Awaitable[int]] = serve_stdio_until_signal
    if settings.http is not None:
        from mnemodb.server.http import serve_http

        assert metrics is not None
        main = functools.partial(serve_http, make_server(), engine, settings.http, metrics, on_listening)
        log.info("mnemodb serving the %s profile over HTTP, database %s", profile.name, engine.store.location)
    status = 0
    try:
        status = anyio.run(main)
    except KeyboardInterrupt:
        pass
    finally:
        # A client gives a server about a second after closing its stdin, or after SIGTERM,
        # before it kills it: the embedder gets a moment to finish what it is writing.
        stopped = background is None or background.stop(timeout=_EMBEDDER_GRACE_S)
        engine.close()
    if not stopped or getattr(embedder, "loaded", False):
        # The embedder is loading a model (an import that cannot be interrupted, and that
        # interpreter shutdown would wait out for seconds), or has loaded one, whose
        # runtime's teardown takes a second or more and saves nothing. Everything
        # acknowledged is in the closed database; what the embedder was doing is derived
        # and is found again at the next start.
        # Nothing is flushed first: log records are written as they are made, replies go
        # straight to their file descriptor, and the loading thread may hold the locks of
        # the streams it prints progress to.
        if not stopped:
            log.info("exiting while the embedding model was still loading")
        os._exit(status)
    return status


class CannotServe(Exception):
    """The engine a profile needs could not be made ready (the reason is logged)."""


def open_engine(settings: Settings, spec: ProfileSpec) -> Engine:
    """The engine `serve` runs a profile over: its embedder, its database opened as the
    profile wants it, and the profile's preparation done (`ProfileSpec.prepare`)."""
    embedder = make_embedder(settings.embedding, by_default=spec.embeds_by_default)
    try:
        engine = Engine.open(
            settings.db_path,
            write_scope=settings.write_scope,
            read_scopes=settings.read_scopes,
            create_parent=spec.creates_db_directory,
            embedder=embedder,
            fusion=settings.embedding.fusion,
        )
    except EngineError as exc:
        log.error("Failed to open the database: %s", exc)
        raise CannotServe(str(exc)) from exc
    if spec.prepare is not None and not spec.prepare(engine, settings):
        engine.close()
        raise CannotServe(f"the {spec.name} profile could not prepare the database")
    return engine


def _unprotected(settings: Settings) -> str:
    assert settings.http is not None
    return (
        f"refusing to serve {settings.http.host} without authentication: anyone who can reach it could read and "
        "change every memory; create a token (mnemodb token create NAME), set up JWT verification (--jwt-issuer, "
        "--jwt-audience, --jwt-key), bind 127.0.0.1, or pass --insecure to serve it unauthenticated anyway"
    )
