"""MCP over Streamable HTTP (`mnemodb serve --http`): one team's shared memory server.

The SDK's Streamable HTTP transport serves `/mcp`, statelessly and with JSON responses:
no session lives in the process, so any number of server processes can answer behind a
load balancer on one database file, and both protocol eras work (2025-11-25 clients with
`initialize`, 2026-07-28 clients without). Around it:

- Host and Origin are checked against an allowlist (421 and 403), so a web page that a
  DNS rebinding points at the server cannot reach it through a browser;
- bearer tokens (the database's own, or JWTs from an identity provider) decide who may
  call and which scopes each call may read and write (`_Authenticate`), with an optional
  rate per token (`RateLimiter`) and a body size limit;
- `/healthz` says whether the database answers (no authentication: load balancers ask);
- `/metrics` is Prometheus text: requests by path and status, tool calls and their
  latency per tool and outcome, the database's size and the memories per scope (with a
  token, only the scopes it reads).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import signal
import socket
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from mcp.server.transport_security import TransportSecuritySettings
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from mnemodb.engine.errors import EngineError
from mnemodb.engine.tokens import TOKEN_PREFIX, Grant, current_grant, granted
from mnemodb.server.config import HttpSettings, JwtSettings, is_loopback

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from mnemodb.engine import Engine

__all__ = ["BindError", "Metrics", "RateLimiter", "build_app", "serve_http"]

log = logging.getLogger("mnemodb.http")

MCP_PATH = "/mcp"
METADATA_PATH = "/.well-known/oauth-protected-resource"
# Tool latency buckets (seconds): most calls take a millisecond or a few, a search of a
# large store tens, a timed-out one the tool limit.
_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 15.0, 30.0)


def _host_patterns(name: str) -> list[str]:
    """Host header values for a name: bare (port 80/443 left out) and with any port."""
    bracketed = f"[{name}]" if ":" in name and not name.startswith("[") else name
    return [bracketed, f"{bracketed}:*"]


def transport_security(settings: HttpSettings) -> TransportSecuritySettings:
    hosts = ["127.0.0.1", "localhost", "::1"]
    if settings.host not in ("0.0.0.0", "::"):  # a wildcard bind has no one name to allow
        hosts.append(settings.host)
    allowed_hosts = [p for name in dict.fromkeys([*hosts, *settings.allowed_hosts]) for p in _host_patterns(name)]
    origins = [f"http://{h}" for name in ("127.0.0.1", "localhost", "::1") for h in _host_patterns(name)]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=allowed_hosts,
        allowed_origins=[*origins, *settings.allowed_origins],
    )


class _StoreCollector(Collector):
    """Figures read from the database at scrape time: its size, and memories per scope."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def collect(self) -> Iterable[Metric]:
        size = GaugeMetricFamily("mnemodb_database_bytes", "Size of the database file and its WAL")
        size.add_metric([], float(self._engine.store.size_bytes()))
        yield size
        memories = GaugeMetricFamily("mnemodb_memories", "Memories stored, per scope", labels=["scope"])
        # A team's token sees its own scopes only: scope names and sizes are tenant data.
        grant = current_grant()
        for scope, count in self._engine.memories_per_scope().items():
            if grant is None or scope in grant.read_scopes:
                memories.add_metric([scope], float(count))
        yield memories


class Metrics:
    """The server's Prometheus figures, in a registry of its own (not the process-wide one)."""

    def __init__(self, engine: Engine | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "mnemodb_http_requests",
            "HTTP requests, by method, path and status",
            ["method", "path", "status"],
            registry=self.registry,
        )
        self.tool_calls = Counter(
            "mnemodb_tool_calls",
            "Tool calls, by tool and outcome (ok, invalid, error, timeout, cancelled)",
            ["tool", "outcome"],
            registry=self.registry,
        )
        self.tool_seconds = Histogram(
            "mnemodb_tool_seconds",
            "Tool call latency, by tool",
            ["tool"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        if engine is not None:
            self.registry.register(_StoreCollector(engine))

    def tool_called(self, tool: str, outcome: str, seconds: float) -> None:
        self.tool_calls.labels(tool, outcome).inc()
        self.tool_seconds.labels(tool).observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _CountRequests:
    """ASGI middleware counting every HTTP request by method, path and status."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self._app = app
        self._metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        path = scope.get("path", "")
        # Only known paths become label values: a scan of random URLs must not grow the metrics.
        label = path if path in (MCP_PATH, "/healthz", "/metrics") else "other"
        try:
            await self._app(scope, receive, sending)
        finally:
            self._metrics.requests.labels(scope.get("method", ""), label, str(status)).inc()


class RateLimiter:
    """A token bucket per key: `rate` requests a second, in bursts of up to `rate` (at least
    one). One server process keeps its own buckets."""

    def __init__(self, rate: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.burst = max(1.0, rate)
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}

    def wait(self, key: str) -> float:
        """0 when a request by `key` may go now (and it is counted), else the seconds until it may."""
        now = self._clock()
        tokens, then = self._buckets.get(key, (self.burst, now))
        tokens = min(self.burst, tokens + (now - then) * self.rate)
        if tokens >= 1.0:
            self._buckets[key] = (tokens - 1.0, now)
            return 0.0
        self._buckets[key] = (tokens, now)
        return (1.0 - tokens) / self.rate


class JwtVerifier:
    """Grants from JWTs an identity provider signs (see `JwtSettings`)."""

    def __init__(self, settings: JwtSettings, engine: Engine) -> None:
        self.settings = settings
        self._engine = engine

    def grant(self, token: str) -> Grant | str:
        """The grant `token` gives, or why it gives none."""
        import jwt

        settings = self.settings
        try:
            claims = jwt.decode(
                token,
                settings.key,
                algorithms=list(settings.algorithms),
                audience=settings.audience,
                issuer=settings.issuer,
                options={"require": ["exp", "iss", "aud", "sub"]},
                leeway=30,
            )
        except jwt.PyJWTError as exc:
            return f"the JWT is not valid: {exc}"
        granted_scopes = claims.get(settings.scope_claim, "")
        entries = granted_scopes.split() if isinstance(granted_scopes, str) else granted_scopes
        if not isinstance(entries, list):
            return f"the JWT's {settings.scope_claim!r} claim is neither a string nor a list"
        reads: list[str] = []
        writes: list[str] = []
        try:
            for entry in entries:
                if isinstance(entry, str) and entry.startswith(("read:", "write:")):
                    kind, _, name = entry.partition(":")
                    (reads if kind == "read" else writes).append(self._engine.scope(name))
        except EngineError as exc:
            return f"the JWT's {settings.scope_claim!r} claim names a bad scope: {exc}"
        if not reads and not writes:
            return f"the JWT's {settings.scope_claim!r} claim grants no read:SCOPE or write:SCOPE"
        # `write:` entries are the scopes it may change (and read); `read:` entries it may only read.
        chosen = tuple(dict.fromkeys([*writes, *reads]))
        return Grant(f"jwt:{claims['sub']}", chosen, (writes or reads)[0], tuple(dict.fromkeys(writes)))


class _Authenticate:
    """Who may call, and with what grant.

    A bearer token is either one of the database's (`mnemodb token create`) or, when JWT
    verification is set up, a JWT from the identity provider. Every request but `/healthz`
    and the OAuth metadata needs a valid one once the database holds a live token, always
    when JWTs are configured, and always when the server is bound to an address other than
    loopback: else 401 with `WWW-Authenticate`. The grant then decides every scope the
    request's tool calls may read and write. A request that sends a token is checked even
    when none is needed: a wrong token is a mistake worth saying."""

    def __init__(
        self,
        app: ASGIApp,
        engine: Engine,
        *,
        always: bool,
        limiter: RateLimiter | None,
        jwt: JwtVerifier | None,
        resource_metadata: str | None,
    ) -> None:
        self._app = app
        self._engine = engine
        self._always = always or jwt is not None
        self._limiter = limiter
        self._jwt = jwt
        self._resource_metadata = resource_metadata

    async def _admit(self, key: str, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, unless `key` has used up its rate (429, with Retry-After)."""
        limiter = self._limiter
        wait = limiter.wait(key) if limiter is not None else 0.0
        if limiter is None or wait <= 0:
            await self._app(scope, receive, send)
            return
        retry = max(1, math.ceil(wait))
        description = f"more than {limiter.rate:g} requests a second: retry in {retry} s"
        response = JSONResponse(
            {"error": "rate_limited", "error_description": description},
            status_code=429,
            headers={"Retry-After": str(retry)},
        )
        await response(scope, receive, send)

    def _refuse(self, description: str, error: str | None) -> Response:
        challenge = 'Bearer realm="mnemodb"'
        if self._resource_metadata is not None:
            challenge += f', resource_metadata="{self._resource_metadata}"'
        if error is not None:
            quoted = description.replace("\\", "\\\\").replace('"', "'")
            challenge += f', error="{error}", error_description="{quoted}"'
        return JSONResponse(
            {"error": error or "unauthorized", "error_description": description},
            status_code=401,
            headers={"WWW-Authenticate": challenge},
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path == "/healthz" or path.startswith(METADATA_PATH):
            await self._app(scope, receive, send)
            return
        header = Headers(scope=scope).get("authorization")
        tokens = self._engine.tokens
        if header is None:
            if self._always or await anyio.to_thread.run_sync(tokens.required):
                await self._refuse("this server needs a bearer token", None)(scope, receive, send)
                return
            client = scope.get("client") or ("unknown", 0)
            await self._admit(f"address {client[0]}", scope, receive, send)
            return
        kind, _, secret = header.partition(" ")
        secret = secret.strip()
        grant: Grant | str = "the Authorization header must be 'Bearer TOKEN'"
        key = ""
        if kind.lower() == "bearer" and secret:
            if secret.startswith(TOKEN_PREFIX) or self._jwt is None:
                token = await anyio.to_thread.run_sync(tokens.verify, secret)
                grant = "the bearer token is not valid (unknown, revoked or malformed)"
                if token is not None:
                    grant, key = Grant.of(token), f"token {token.id}"
            else:
                grant = self._jwt.grant(secret)
                key = grant.name if isinstance(grant, Grant) else ""
        if isinstance(grant, str):
            await self._refuse(grant, "invalid_token")(scope, receive, send)
            return
        with granted(grant):
            await self._admit(key, scope, receive, send)


def build_app(server: Server[Any], engine: Engine, settings: HttpSettings, metrics: Metrics) -> ASGIApp:
    """The ASGI application: `/mcp`, `/healthz` and `/metrics`."""

    async def healthz(request: Request) -> Response:
        def probe() -> int:
            return engine.current_seq()

        try:
            seq = await anyio.to_thread.run_sync(probe)
        except Exception as exc:  # any failure to read is "not reachable", said in the body
            return JSONResponse({"status": "unavailable", "database": f"unreachable: {exc}"}, status_code=503)
        return JSONResponse({"status": "ok", "database": "reachable", "seq": seq})

    async def metrics_page(request: Request) -> Response:
        body = await anyio.to_thread.run_sync(metrics.render)
        return Response(body, media_type="text/plain; version=0.0.4; charset=utf-8")

    public_url = settings.public_url or f"http://{settings.host}:{settings.port}"

    async def resource_metadata(request: Request) -> Response:
        # RFC 9728: what this resource is and who issues tokens for it.
        assert settings.jwt is not None
        return JSONResponse(
            {
                "resource": f"{public_url}{MCP_PATH}",
                "authorization_servers": [settings.jwt.issuer],
                "bearer_methods_supported": ["header"],
                "resource_name": "mnemodb",
            }
        )

    routes = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/metrics", metrics_page, methods=["GET"]),
    ]
    if settings.jwt is not None:
        routes += [
            Route(METADATA_PATH, resource_metadata, methods=["GET"]),
            Route(f"{METADATA_PATH}{MCP_PATH}", resource_metadata, methods=["GET"]),
        ]
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        json_response=True,
        stateless_http=True,
        transport_security=transport_security(settings),
        host=settings.host,
        max_request_body_size=settings.max_body_bytes,
        custom_starlette_routes=routes,
    )
    always = not is_loopback(settings.host) and not settings.insecure
    limiter = RateLimiter(settings.rate_limit) if settings.rate_limit > 0 else None
    verifier = JwtVerifier(settings.jwt, engine) if settings.jwt is not None else None
    metadata = f"{public_url}{METADATA_PATH}{MCP_PATH}" if settings.jwt is not None else None
    guarded = _Authenticate(app, engine, always=always, limiter=limiter, jwt=verifier, resource_metadata=metadata)
    return _CountRequests(guarded, metrics)


class BindError(RuntimeError):
    """The address cannot be served (in use, not this machine's, not permitted)."""


def _listen(host: str, port: int) -> socket.socket:
    try:
        address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        # With its protocol (IPPROTO_TCP): asyncio sets TCP_NODELAY on accepted connections
        # only then, and without it every reply after the first on a keep-alive connection
        # waits ~40 ms for the client's delayed acknowledgement.
        sock = socket.socket(*address[:3])
    except OSError as exc:
        raise BindError(f"cannot serve {host}:{port}: {exc.strerror or exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address[4])
        sock.listen(1024)
    except OSError as exc:
        sock.close()
        raise BindError(f"cannot serve {host}:{port}: {exc.strerror or exc}") from None
    sock.setblocking(False)
    return sock


async def serve_http(server: Server[Any], engine: Engine, settings: HttpSettings, metrics: Metrics) -> int:
    """Serve until SIGTERM or SIGINT, then finish the requests in flight: exit status 0, or
    1 when the address cannot be served."""
    import uvicorn

    class Quiet(uvicorn.Server):
        # uvicorn would install its own handlers and raise the signal again once stopped,
        # which ends the process before the engine is closed; the signals are taken below.
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    try:
        sock = _listen(settings.host, settings.port)
    except BindError as exc:
        log.error("%s", exc)
        return 1
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    config = uvicorn.Config(
        build_app(server, engine, dataclasses.replace(settings, port=bound_port), metrics),
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
    )
    http = Quiet(config)

    async def stop_on_signal() -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                log.info("Received %s, shutting down", signal.Signals(signum).name)
                http.should_exit = True
                return

    # The line tests and scripts wait for: where the server listens, with the real port.
    log.info("listening on http://%s:%d%s", shown, bound_port, MCP_PATH)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(stop_on_signal)
            await http.serve(sockets=[sock])
            tg.cancel_scope.cancel()
    finally:
        sock.close()
    return 0
