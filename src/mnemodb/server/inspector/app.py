"""The inspector's ASGI application: its routes, and the guard every request passes.

The guard (`_Guard`) does for the inspector what the bearer-token check does for `/mcp`,
with a browser's means:

- who is asking: a token typed once into the login form and kept in an HttpOnly,
  SameSite=Strict cookie; it is verified on every request, so a revoked token stops
  working at once. A token is needed when the server needs one for MCP calls (bound
  beyond loopback, JWTs configured, or the database holds tokens); without one, on
  loopback, the inspector shows what an unauthenticated MCP call sees. The token's grant
  then decides every read and write, through the same engine checks as tool calls;
- that a change was asked for by the inspector's own page (CSRF): every POST carries the
  token the page got in its own cookie (double submit; the cookie is SameSite=Strict
  and HttpOnly, the page holds a copy), and its Origin, when the browser sends one, is
  this server's own;
- what a page may do in the browser: a strict Content-Security-Policy (`default-src
  'self'`, no inline script or style), no framing, no referrer.

Host and Origin are checked against the server's allowlist before any of this, by the HTTP
server's own guard, as for `/mcp`.
"""

from __future__ import annotations

import hmac
import logging
import secrets
from collections.abc import Awaitable, Callable
from http.cookies import SimpleCookie
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit

import anyio.to_thread
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from mnemodb.engine.tokens import Grant, granted
from mnemodb.model.errors import EngineError, StoreUnavailable
from mnemodb.server.inspector import graph, pages
from mnemodb.server.inspector.web import CSRF_FIELD, CSRF_HEADER, Page, templates

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from mnemodb.engine import Engine

__all__ = ["UI_PATH", "Verifier", "build_inspector"]

log = logging.getLogger("mnemodb.inspector")

UI_PATH = "/ui"
SESSION_COOKIE = "mnemodb_session"
CSRF_COOKIE = "mnemodb_csrf"
_STATIC = Path(__file__).parent / "static"
# Referrer-Policy is same-origin, not no-referrer: under no-referrer a browser sends
# `Origin: null` with a plain form's POST, and the origin check could not tell the
# inspector's own sign-in form from another site's.
# What the inspector's pages may load and do: only this server's own scripts, styles,
# images and fetches; no inline code, no plugins, no framing, forms posted only here.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
_SECURITY_HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]
# Who is asking: (the grant a secret gives, or why it gives none). Raises StoreUnavailable
# when the database cannot say.
Verifier = Callable[[str], Awaitable[Grant | str]]


def build_inspector(
    engine: Engine,
    *,
    verify: Verifier,
    always: bool,
) -> ASGIApp:
    """The inspector, to mount at `UI_PATH`. `verify` tells the grant a token gives (the
    HTTP server's own check, so the same tokens and JWTs work); `always`: a token is
    needed whatever the database holds (the server is reachable beyond loopback, or takes
    JWTs)."""
    routes = [
        Route("/login", _login_page, methods=["GET"]),
        Route("/login", _login, methods=["POST"]),
        Route("/logout", _logout, methods=["POST"]),
        Mount("/static", app=StaticFiles(directory=_STATIC), name="static"),
        *pages.routes(),
        *graph.routes(),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={EngineError: pages.engine_error, HTTPException: pages.http_error},
    )
    app.state.engine = engine
    app.state.verify = verify
    return _Guard(app, engine, verify=verify, always=always)


# -- the guard --------------------------------------------------------------------------------


def _cookies(scope: Scope) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    for header in Headers(scope=scope).getlist("cookie"):
        try:
            jar.load(header)
        except Exception:  # a malformed Cookie header counts as none
            continue
    return {name: morsel.value for name, morsel in jar.items()}


def _cookie(name: str, value: str, *, secure: bool, max_age: int | None = None) -> bytes:
    parts = [f"{name}={value}", f"Path={UI_PATH}", "HttpOnly", "SameSite=Strict"]
    if secure:
        parts.append("Secure")
    if max_age is not None:
        parts.append(f"Max-Age={max_age}")
    return "; ".join(parts).encode("latin-1")


def _is_https(scope: Scope) -> bool:
    return scope.get("scheme") == "https"


def _same_origin(scope: Scope) -> str | None:
    """Why a request that changes data is not from this server's own page, or None. The
    browser's Origin (or, without it, Sec-Fetch-Site) must name this very server."""
    headers = Headers(scope=scope)
    origin = headers.get("origin")
    if origin is not None:
        host = headers.get("host", "")
        parts = urlsplit(origin)
        if origin == "null" or parts.netloc.lower() != host.lower():
            return "the request came from another site's page"
        return None
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return "the request came from another site's page"
    return None


class _Guard:
    """Security headers on every response; the CSRF cookie handed out and checked; the
    token verified and its grant applied. See the module docstring."""

    def __init__(self, app: ASGIApp, engine: Engine, *, verify: Verifier, always: bool) -> None:
        self._app = app
        self._engine = engine
        self._verify = verify
        self._always = always

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        cookies = _cookies(scope)
        csrf = cookies.get(CSRF_COOKIE, "")
        new_csrf = None
        if len(csrf) < 32 or not csrf.replace("-", "").replace("_", "").isalnum():
            csrf = new_csrf = secrets.token_urlsafe(32)
        scope.setdefault("state", {})["csrf"] = csrf
        extra: list[tuple[bytes, bytes]] = list(_SECURITY_HEADERS)
        if new_csrf is not None:
            extra.append((b"set-cookie", _cookie(CSRF_COOKIE, new_csrf, secure=_is_https(scope))))

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() not in dict(extra)]
                message = {**message, "headers": headers + extra + list(scope["state"].get("set_cookies", []))}
            await send(message)

        try:
            await self._guarded(scope, receive, send_with_headers, cookies, csrf)
        except StoreUnavailable as exc:
            log.warning("inspector: the database is unavailable: %s", exc)
            response = _message_page(
                scope, 503, "The database is unavailable", "The database cannot be reached right now. Retry shortly."
            )
            response.headers["Retry-After"] = "1"
            await response(scope, receive, send_with_headers)

    async def _guarded(self, scope: Scope, receive: Receive, send: Send, cookies: dict[str, str], csrf: str) -> None:
        method = scope.get("method", "GET")
        path: str = scope.get("path", "")
        inner = path[len(scope.get("root_path", "")) :] if path.startswith(scope.get("root_path", "")) else path
        if method not in ("GET", "HEAD", "POST"):
            await Response("method not allowed", status_code=405, headers={"Allow": "GET, HEAD, POST"})(
                scope, receive, send
            )
            return
        if method == "POST":
            # Read whole (and bounded) before anything else: the CSRF check may need its form,
            # and the handler gets it replayed.
            try:
                body = await _read_body(scope, receive)
            except _TooLarge:
                await _message_page(scope, 413, "Too large", f"a form of at most {_MAX_FORM_BYTES:,} bytes")(
                    scope, receive, send
                )
                return
            refusal = _same_origin(scope) or await _csrf_refusal(scope, body, csrf)
            if refusal is not None:
                await _message_page(scope, 403, "Refused", refusal)(scope, receive, send)
                return
            receive = _replay(body, receive)
        if inner.startswith("/static/"):
            await self._app(scope, receive, send)
            return
        secret = cookies.get(SESSION_COOKIE)
        grant: Grant | None = None
        if secret:
            verdict = await self._verify(secret)
            if isinstance(verdict, str):
                scope["state"]["set_cookies"] = [
                    (b"set-cookie", _cookie(SESSION_COOKIE, "", secure=_is_https(scope), max_age=0))
                ]
                if inner != "/login":
                    await _to_login(scope, f"Sign in again: {verdict}.")(scope, receive, send)
                    return
            else:
                grant = verdict
        elif inner != "/login" and (self._always or await anyio.to_thread.run_sync(self._engine.tokens.required)):
            await _to_login(scope, None)(scope, receive, send)
            return
        scope["state"]["grant"] = grant
        scope["state"]["signed_in"] = grant is not None
        with granted(grant):
            await self._app(scope, receive, send)


async def _csrf_refusal(scope: Scope, body: bytes, expected: str) -> str | None:
    """Why a POST lacks the page's CSRF token, or None. The token comes in the
    X-CSRF-Token header (htmx sends it on every request) or a form's `csrf` field."""
    headers = Headers(scope=scope)
    sent = headers.get(CSRF_HEADER)
    if sent is None and headers.get("content-type", "").startswith(
        ("application/x-www-form-urlencoded", "multipart/form-data")
    ):

        async def again() -> Message:
            return {"type": "http.request", "body": body, "more_body": False}

        value = (await Request(scope, again).form()).get(CSRF_FIELD)
        sent = value if isinstance(value, str) else None
    if not sent or not hmac.compare_digest(sent.encode(), expected.encode()):
        return "the form is missing this page's security token (reload the page and try again)"
    return None


# A form posted to the inspector is small: a memory's text and its fields.
_MAX_FORM_BYTES = 1 << 20


async def _read_body(scope: Scope, receive: Receive) -> bytes:
    """The request's body; _TooLarge past `_MAX_FORM_BYTES` (a declared length is believed
    first, so an oversized upload is refused before it is read)."""
    declared = Headers(scope=scope).get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > _MAX_FORM_BYTES:
        raise _TooLarge()
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > _MAX_FORM_BYTES:
            raise _TooLarge()
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


class _TooLarge(Exception):
    """A posted form larger than the inspector takes."""


def _replay(body: bytes, receive: Receive) -> Receive:
    """`receive` for the handler: the body already read, then the stream (a disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _to_login(scope: Scope, reason: str | None) -> Response:
    """Off to the login form, coming back here after; an htmx request is told to go there."""
    here = scope.get("path", UI_PATH)
    if scope.get("query_string"):
        here += "?" + scope["query_string"].decode("latin-1")
    target = f"{UI_PATH}/login?next={quote(here, safe='')}"
    if reason:
        target += f"&reason={quote(reason, safe='')}"
    if Headers(scope=scope).get("hx-request"):
        return Response(status_code=401, headers={"HX-Redirect": target})
    return RedirectResponse(target, status_code=303)


def _message_page(scope: Scope, status: int, title: str, text: str) -> Response:
    if Headers(scope=scope).get("hx-request"):
        return HTMLResponse(f'<p class="error" role="alert">{_escape(text)}</p>', status_code=status)
    return HTMLResponse(
        templates.get_template("message.html").render(
            title=title, text=text, base=UI_PATH, csrf=scope.get("state", {}).get("csrf", ""), path=""
        ),
        status_code=status,
    )


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


# -- signing in and out -----------------------------------------------------------------------


def _local_target(value: str | None) -> str:
    """Where to go after signing in: a path of the inspector's own, never another site."""
    if not value or (not value.startswith(UI_PATH + "/") and value != UI_PATH) or value.startswith("//"):
        return UI_PATH + "/"
    if "\\" in value or any(ord(c) < 32 for c in value):
        return UI_PATH + "/"
    return value


async def _login_page(request: Request) -> Response:
    return Page(request, "login.html", status=200).render(
        next=_local_target(request.query_params.get("next")),
        reason=request.query_params.get("reason"),
    )


async def _login(request: Request) -> Response:
    form = await request.form()
    secret = str(form.get("token") or "").strip()
    target = _local_target(str(form.get("next") or ""))
    verify: Verifier = request.app.state.verify
    verdict = await verify(secret) if secret else "give a token"
    if isinstance(verdict, str):
        return Page(request, "login.html", status=401).render(next=target, reason=verdict)
    response = RedirectResponse(target, status_code=303)
    response.raw_headers.append((b"set-cookie", _cookie(SESSION_COOKIE, secret, secure=request.url.scheme == "https")))
    return response


async def _logout(request: Request) -> Response:
    response = RedirectResponse(f"{UI_PATH}/login", status_code=303)
    response.raw_headers.append(
        (b"set-cookie", _cookie(SESSION_COOKIE, "", secure=request.url.scheme == "https", max_age=0))
    )
    return response
