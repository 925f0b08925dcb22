"""MCP over Streamable HTTP (`mnemodb serve --http`): one team's shared memory server.

The SDK's Streamable HTTP transport serves `/mcp`, statelessly and with JSON responses:
no session lives in the process, so any number of server processes can answer behind a
load balancer on one database file, and both protocol eras work (2025-11-25 clients with
`initialize`, 2026-07-28 clients without). Around it:

- Host and Origin are checked against an allowlist (421 and 403) on every path, so a web
  page that a DNS rebinding points at the server cannot reach it through a browser;
- `/mcp` takes POST only (405 otherwise): in this stateless JSON mode a GET stream would
  carry nothing, and would only hold a connection open;
- bearer tokens (the database's own, or JWTs from an identity provider) decide who may
  call and which scopes each call may read and write (`_Authenticate`), with an optional
  rate per token (`RateLimiter`) and a body size limit;
- `/healthz` says whether the database answers, and nothing more (no authentication:
  load balancers ask);
- `/metrics` is Prometheus text: requests by path and status, tool calls and their
  latency per tool and outcome, the database's size and the memories per scope. With a
  token, only that token's own requests and calls and the scopes it reads: one team
  learns nothing of another's activity, nor of the whole database;
- connections are bounded (`_Connection`): a client gets `header_timeout` seconds for a
  request's headers, as long again for its body (plus a second per 64 KiB), and as long
  again to take a response it stops reading; an idle one is closed after
  `keep_alive_timeout`; past `max_connections`, the connection waiting longest for a
  request makes room, or when every one is busy the newcomer gets 503 at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import math
import signal
import socket
import time
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar, cast

import anyio
import anyio.abc
import anyio.to_thread
import h11
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from uvicorn.protocols.http.h11_impl import H11Protocol

from mnemodb.engine.tokens import TOKEN_PREFIX, Grant, current_grant, granted
from mnemodb.model.errors import EngineError, StoreUnavailable
from mnemodb.model.value import Value
from mnemodb.server.settings import HttpSettings, JwtSettings, is_loopback

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from mnemodb.engine import Engine

__all__ = ["BindError", "Metrics", "RateLimiter", "build_app", "default_max_connections", "serve_http"]

log = logging.getLogger("mnemodb.http")

T = TypeVar("T")

MCP_PATH = "/mcp"
UI_PATH = "/ui"
METADATA_PATH = "/.well-known/oauth-protected-resource"
# Tool latency buckets (seconds): most calls take a millisecond or a few, a search of a
# large store tens, a timed-out one the tool limit.
_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 15.0, 30.0)
# Whose figures a request adds to, besides everyone's: the token (`token ID`) or JWT subject
# (`jwt:SUBJECT`) it was made with; None without one. Set by `_Authenticate`, read where the
# figures are counted and shown; also left in the ASGI scope for the request counter, which
# sits outside the authentication.
_audience: ContextVar[str | None] = ContextVar("mnemodb_audience", default=None)
_AUDIENCE_KEY = "mnemodb.audience"


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

    def describe(self) -> Iterable[Metric]:
        # What it yields, without reading the database (registering would read it otherwise).
        yield GaugeMetricFamily("mnemodb_database_bytes", "Size of the database file and its WAL")
        yield GaugeMetricFamily("mnemodb_memories", "Memories stored, per scope", labels=["scope"])

    def collect(self) -> Iterable[Metric]:
        grant = current_grant()
        if grant is None:
            # The whole file's size counts every team's data: only for an operator's view.
            size = GaugeMetricFamily("mnemodb_database_bytes", "Size of the database file and its WAL")
            size.add_metric([], float(self._engine.store.size_bytes()))
            yield size
        memories = GaugeMetricFamily("mnemodb_memories", "Memories stored, per scope", labels=["scope"])
        # A team's token sees its own scopes only: scope names and sizes are tenant data.
        for scope, count in self._engine.memories_per_scope().items():
            if grant is None or scope in grant.read_scopes:
                memories.add_metric([scope], float(count))
        yield memories


class _Series:
    """The request and tool-call figures of one audience: everyone, or one token."""

    def __init__(self) -> None:
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


class Metrics:
    """The server's Prometheus figures, in registries of its own (not the process-wide one).

    Every request and tool call counts in everyone's figures and, when it was made with a
    token, in that token's own. The page shows everyone's figures to a request without a
    token (a server open on loopback), and a token only its own: one team's traffic is not
    another's business."""

    def __init__(self, engine: Engine | None = None) -> None:
        self._everyone = _Series()
        self._audiences: dict[str, _Series] = {}
        self._store = CollectorRegistry(auto_describe=True)
        if engine is not None:
            self._store.register(_StoreCollector(engine))

    def _series(self, audience: str) -> _Series:
        series = self._audiences.get(audience)
        if series is None:
            series = self._audiences.setdefault(audience, _Series())
        return series

    def request_done(self, method: str, path: str, status: int, audience: str | None) -> None:
        for series in self._counted(audience):
            series.requests.labels(method, path, str(status)).inc()

    def tool_called(self, tool: str, outcome: str, seconds: float) -> None:
        """One call of a known tool, counted for the audience of the request it was made in."""
        for series in self._counted(_audience.get()):
            series.tool_calls.labels(tool, outcome).inc()
            series.tool_seconds.labels(tool).observe(seconds)

    def _counted(self, audience: str | None) -> list[_Series]:
        return [self._everyone] if audience is None else [self._everyone, self._series(audience)]

    def render(self) -> bytes:
        """The page for the current request: everyone's figures, or its token's own."""
        audience = _audience.get()
        series = self._everyone if audience is None else self._series(audience)
        return generate_latest(series.registry) + generate_latest(self._store)


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
            self._metrics.request_done(scope.get("method", ""), label, status, scope.get(_AUDIENCE_KEY))


class _Guard:
    """ASGI middleware checking Host and Origin on every path, as the SDK checks them on
    `/mcp` (421, 403), and answering anything but POST to `/mcp` with 405: stateless, with
    JSON responses, the server has no stream a GET could open nor a session to DELETE."""

    def __init__(self, app: ASGIApp, security: TransportSecuritySettings) -> None:
        self._app = app
        self._check = TransportSecurityMiddleware(security)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._app(scope, receive, send)
            return
        if scope["type"] != "http":  # uvicorn is told to take no WebSocket; nothing else is served
            await Response(status_code=404)(scope, receive, send)
            return
        refusal = await self._check.validate_request(Request(scope), is_post=False)
        if refusal is None and scope.get("path") == MCP_PATH and scope.get("method") != "POST":
            refusal = JSONResponse(
                {"error": "method_not_allowed", "error_description": f"{MCP_PATH} takes POST requests only"},
                status_code=405,
                headers={"Allow": "POST"},
            )
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self._app(scope, receive, send)


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


class _DatabaseDown(Exception):
    """The database could not be asked who may call."""


async def _ask(question: Callable[..., T], *args: Any) -> T:
    """`question(*args)` on a worker thread; _DatabaseDown when the database cannot answer."""
    try:
        return await anyio.to_thread.run_sync(question, *args)
    except StoreUnavailable as exc:
        raise _DatabaseDown(str(exc)) from exc


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
        if scope["type"] != "http" or path == "/healthz" or path.startswith(METADATA_PATH) or _is_inspector(path):
            # The inspector signs people in itself, with the same tokens (a browser sends no
            # bearer header), and applies their grants the same way.
            await self._app(scope, receive, send)
            return
        try:
            await self._authenticate(scope, receive, send)
        except _DatabaseDown as exc:
            # Who may call is in the database: while it cannot be reached (a database server
            # restarting), the request cannot be judged. The caller learns it may retry, not
            # where the database is.
            log.warning("refused a request while the database is unavailable: %s", exc)
            response = JSONResponse(
                {"error": "unavailable", "error_description": "the database is unavailable right now; retry"},
                status_code=503,
                headers={"Retry-After": "1"},
            )
            await response(scope, receive, send)

    async def _authenticate(self, scope: Scope, receive: Receive, send: Send) -> None:
        header = Headers(scope=scope).get("authorization")
        if header is None:
            if self._always or await _ask(self._engine.tokens.required):
                await self._refuse("this server needs a bearer token", None)(scope, receive, send)
                return
            client = scope.get("client") or ("unknown", 0)
            await self._admit(f"address {client[0]}", scope, receive, send)
            return
        kind, _, secret = header.partition(" ")
        secret = secret.strip()
        verdict: tuple[Grant, str] | str = "the Authorization header must be 'Bearer TOKEN'"
        if kind.lower() == "bearer" and secret:
            try:
                verdict = await grant_of(self._engine, self._jwt, secret)
            except StoreUnavailable as exc:
                raise _DatabaseDown(str(exc)) from exc
        if isinstance(verdict, str):
            await self._refuse(verdict, "invalid_token")(scope, receive, send)
            return
        grant, key = verdict
        scope[_AUDIENCE_KEY] = key
        audience = _audience.set(key)
        try:
            with granted(grant):
                await self._admit(key, scope, receive, send)
        finally:
            _audience.reset(audience)


async def grant_of(engine: Engine, jwt: JwtVerifier | None, secret: str) -> tuple[Grant, str] | str:
    """The grant a bearer token gives and whose figures its requests count in (`token ID`
    or `jwt:SUBJECT`), or why it gives none: one of the database's tokens, or a JWT when an
    identity provider is set up. StoreUnavailable when the database cannot say. The MCP
    endpoint and the inspector's sign-in both ask here."""
    if secret.startswith(TOKEN_PREFIX) or jwt is None:
        token = await anyio.to_thread.run_sync(engine.tokens.verify, secret)
        if token is None:
            return "the bearer token is not valid (unknown, revoked or malformed)"
        return Grant.of(token), f"token {token.id}"
    grant = jwt.grant(secret)
    return grant if isinstance(grant, str) else (grant, grant.name)


def _is_inspector(path: str) -> bool:
    return path == UI_PATH or path.startswith(UI_PATH + "/")


def build_app(server: Server[Any], engine: Engine, settings: HttpSettings, metrics: Metrics) -> ASGIApp:
    """The ASGI application: `/mcp`, `/healthz`, `/metrics` and the inspector at `/ui`."""

    async def healthz(request: Request) -> Response:
        # Anyone may ask, so the answer says whether the database answers and nothing else:
        # not the change log's position (every team's activity), nor a failure's text (which
        # may name the server's files); the log has that.
        try:
            await anyio.to_thread.run_sync(engine.current_seq)
        except Exception as exc:  # any failure to read is "not reachable"
            log.warning("health check: the database is not reachable: %s", exc)
            return JSONResponse({"status": "unavailable", "database": "unreachable"}, status_code=503)
        return JSONResponse({"status": "ok", "database": "reachable"})

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

    routes: list[BaseRoute] = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/metrics", metrics_page, methods=["GET"]),
    ]
    if settings.jwt is not None:
        routes += [
            Route(METADATA_PATH, resource_metadata, methods=["GET"]),
            Route(f"{METADATA_PATH}{MCP_PATH}", resource_metadata, methods=["GET"]),
        ]
    always = not is_loopback(settings.host) and not settings.insecure
    verifier = JwtVerifier(settings.jwt, engine) if settings.jwt is not None else None
    if settings.ui:
        from mnemodb.server.inspector import build_inspector

        async def verify(secret: str) -> Grant | str:
            verdict = await grant_of(engine, verifier, secret)
            return verdict if isinstance(verdict, str) else verdict[0]

        routes.append(Mount(UI_PATH, app=build_inspector(engine, verify=verify, always=always or verifier is not None)))
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        json_response=True,
        stateless_http=True,
        transport_security=transport_security(settings),
        host=settings.host,
        max_request_body_size=settings.max_body_bytes,
        # The SDK's parameter says Route, but any route is added as it is (the inspector's Mount).
        custom_starlette_routes=cast(list[Route], routes),
    )
    limiter = RateLimiter(settings.rate_limit) if settings.rate_limit > 0 else None
    metadata = f"{public_url}{METADATA_PATH}{MCP_PATH}" if settings.jwt is not None else None
    authenticated = _Authenticate(app, engine, always=always, limiter=limiter, jwt=verifier, resource_metadata=metadata)
    return _CountRequests(_Guard(authenticated, transport_security(settings)), metrics)


class BindError(RuntimeError):
    """The address cannot be served (in use, not this machine's, not permitted)."""


# Descriptors the process needs besides its connections: standard streams, the event loop,
# the listening socket, logs, the database's shared-memory file and its writer connection.
_PROCESS_DESCRIPTORS = 32
# Worker threads (anyio's default limit) that each keep a reading connection to the
# database open: its file and its WAL, two descriptors.
_READING_THREADS = 40
_MAX_DEFAULT_CONNECTIONS = 1024


def default_max_connections(open_files: int | None = None) -> int:
    """The connections served at once when `--max-connections` is not given: what the
    process's open-file limit (`open_files`, else its soft RLIMIT_NOFILE) leaves once the
    process and the database have their descriptors, at most 1024. A connection's request
    may take a worker thread, and each reading thread holds two of the database's
    descriptors, so while connections are few, each is counted three times."""
    if open_files is None:
        try:
            import resource
        except ImportError:  # no such limit to respect
            return _MAX_DEFAULT_CONNECTIONS
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        open_files = _MAX_DEFAULT_CONNECTIONS * 4 if soft == resource.RLIM_INFINITY else soft
    room = open_files - _PROCESS_DESCRIPTORS
    if room >= 3 * _READING_THREADS:
        return max(1, min(_MAX_DEFAULT_CONNECTIONS, room - 2 * _READING_THREADS))
    return max(1, room // 3)


# Past the headers' time, the body must keep arriving at this many bytes a second.
_BODY_RATE = 64 * 1024
_TIMED_OUT = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 40\r\nretry-after: 1\r\nconnection: close\r\n\r\n"
    b"the server is serving all it can; retry\n"
)


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class _Limits(Value):
    header_timeout: float
    keep_alive_timeout: float
    max_connections: int


class _Connection(H11Protocol):
    """uvicorn's HTTP/1.1 connection, with the limits it lacks.

    uvicorn times out only a connection idle after a response. One that sends half its
    headers (or nothing), or its headers and then a body a byte at a time, or that stops
    reading a response, would hold its descriptor for good; enough of them leave the
    database none. Here each connection is in one phase at a time, with a deadline:

    - `headers`: from the connection (or a next request's first byte) until the headers
      are in, `header_timeout` (then 408, if anything was sent, and closed);
    - `body`: from the headers until the body is in, `header_timeout` more plus a second
      for every 64 KiB received (then 408 and closed);
    - `idle`: between requests, `keep_alive_timeout` (closed);
    - `stalled`: a response the client stopped reading, `header_timeout` (dropped);
    - none while the request is handled: the tool time limit bounds that.

    At most `max_connections` are open. A connection past that makes room by closing the
    one waiting longest for a request (headers first, then idle ones); when every one has
    a request in hand, the newcomer gets 503 at once and is closed."""

    limits: _Limits = _Limits(10.0, 5.0, 1)
    """Set on the subclass `serve_http` makes for its settings."""
    _last_refusal_log: float = 0.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._refused = False
        self._phase: str | None = None
        self._since = 0.0
        self._deadline = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._served = False
        self._stalled = False

    # -- asyncio.Protocol ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.connections) >= self.limits.max_connections and not self._make_room():
            self._refused = True
            transport.write(_BUSY)
            transport.close()
            now = self.loop.time()
            if now - _Connection._last_refusal_log > 10:
                _Connection._last_refusal_log = now
                log.warning("%d connections are busy: refusing more (--max-connections)", len(self.connections))
            return
        super().connection_made(transport)
        self._watch()

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        super().data_received(data)
        self._watch(len(data))

    def eof_received(self) -> None:
        if not self._refused:
            super().eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._phase = None
        if not self._refused:
            super().connection_lost(exc)

    def pause_writing(self) -> None:
        super().pause_writing()
        self._stalled = True
        self._watch()

    def resume_writing(self) -> None:
        super().resume_writing()
        self._stalled = False
        self._watch()

    def on_response_complete(self) -> None:
        self._served = True
        super().on_response_complete()
        self._watch()

    def timeout_keep_alive_handler(self) -> None:
        # uvicorn's own idle timer: a request may have started on the connection since it
        # was set (its first bytes cancel it, but not bytes already buffered).
        if self._phase == "idle":
            super().timeout_keep_alive_handler()

    # -- phases ----------------------------------------------------------------------------

    def _watch(self, received: int = 0) -> None:
        """Put the connection in the phase its state says, with that phase's deadline."""
        transport = self.transport
        if transport is None or transport.is_closing():
            self._disarm()
            self._phase = None
            return
        state = self.conn.their_state
        waiting = state is h11.IDLE and (self.cycle is None or self.cycle.response_complete)
        phase: str | None = None
        if self._stalled:
            phase = "stalled"
        elif state is h11.SEND_BODY:
            phase = "body"
        elif waiting:
            phase = "idle" if self._served and not self.conn.trailing_data[0] else "headers"
        now = self.loop.time()
        if phase != self._phase:
            self._phase, self._since = phase, now
            seconds = self.limits.keep_alive_timeout if phase == "idle" else self.limits.header_timeout
            self._deadline = now + seconds
        elif phase == "body":
            self._deadline += received / _BODY_RATE
        if phase is None:
            self._disarm()
        elif self._timer is None:
            self._timer = self.loop.call_at(self._deadline, self._expire)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self) -> None:
        self._timer = None
        if self._phase is None:
            return
        if self.loop.time() < self._deadline:  # a body that kept coming has earned more time
            self._timer = self.loop.call_at(self._deadline, self._expire)
            return
        phase = self._phase
        if phase != "idle":
            log.info(
                "closed a connection from %s: %s",
                (self.client or ("unknown",))[0],
                {
                    "headers": "its request's headers did not arrive in time",
                    "body": "its request's body did not arrive in time",
                    "stalled": "it stopped reading its response",
                }[phase],
            )
        self._close(reply=_TIMED_OUT if phase in ("headers", "body") else None)

    def _close(self, reply: bytes | None) -> None:
        """Close now: with `reply` first when a request has begun and nothing has been
        answered to it; dropped outright when what is already written is not being read."""
        self._disarm()
        self._phase = None
        transport = self.transport
        begun = self.conn.their_state is h11.SEND_BODY or bool(self.conn.trailing_data[0])
        answerable = self.conn.our_state in (h11.IDLE, h11.SEND_RESPONSE) and transport.get_write_buffer_size() == 0
        if reply is not None and begun and answerable:
            transport.write(reply)
        if transport.get_write_buffer_size():
            transport.abort()
        else:
            transport.close()

    def _make_room(self) -> bool:
        """Close the connection waiting longest for a request (one still sending its first
        headers before an idle one); False when every connection has a request in hand."""
        waiting = [c for c in self.connections if isinstance(c, _Connection) and c._phase in ("headers", "idle")]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda c: (c._phase != "headers", c._since))
        oldest._close(reply=_BUSY)
        # The closed connection leaves the set when its transport reports the loss, which
        # is later: it is no longer counted from now.
        self.connections.discard(oldest)
        return True


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


async def serve_http(
    server: Server[Any],
    engine: Engine,
    settings: HttpSettings,
    metrics: Metrics,
    on_listening: Callable[[str], None] | None = None,
) -> int:
    """Serve until SIGTERM or SIGINT, then finish the requests in flight: exit status 0, or
    1 when the address cannot be served. `on_listening` is told the server's base URL once
    it listens."""
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
    safe = default_max_connections()
    cap = settings.max_connections or safe
    if cap > safe:
        log.warning(
            "--max-connections %d is more than the open-file limit leaves room for (%d): past that, the database "
            "may fail to open its files; raise the limit (ulimit -n) or lower --max-connections",
            cap,
            safe,
        )
    limits = _Limits(settings.header_timeout, settings.keep_alive_timeout, cap)
    config = uvicorn.Config(
        build_app(server, engine, dataclasses.replace(settings, port=bound_port), metrics),
        # Always this HTTP/1.1 implementation (never httptools, if installed): the limits
        # above are its own.
        http=type("Connection", (_Connection,), {"limits": limits}),
        ws="none",
        # asyncio accepts up to this many connections at a time, each a descriptor, before any
        # is refused: no more than the cap, or a burst of them could leave the database none.
        backlog=min(cap, 2048),
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_keep_alive=math.ceil(settings.keep_alive_timeout),
        timeout_graceful_shutdown=5,
    )
    http = Quiet(config)

    async def stop_on_signal(*, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            task_status.started()
            async for signum in signals:
                log.info("Received %s, shutting down", signal.Signals(signum).name)
                http.should_exit = True
                return

    try:
        async with anyio.create_task_group() as tg:
            # Signals are taken before the server says it listens: a client (or a person at
            # the terminal) that acts on that line is never met by Python's default handler.
            await tg.start(stop_on_signal)
            log.info(
                "at most %d connections; %g s for a request's headers, %g s idle between requests",
                cap,
                settings.header_timeout,
                settings.keep_alive_timeout,
            )
            # The line tests and scripts wait for: where the server listens, with the real port.
            log.info("listening on http://%s:%d%s", shown, bound_port, MCP_PATH)
            if settings.ui:
                log.info("the inspector is at http://%s:%d%s/", shown, bound_port, UI_PATH)
            if on_listening is not None:
                on_listening(f"http://{shown}:{bound_port}")
            await http.serve(sockets=[sock])
            tg.cancel_scope.cancel()
    finally:
        sock.close()
    return 0
