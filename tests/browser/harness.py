"""What the browser tests share: the inspector's server processes, seeding their database,
watching what a browser context does, and screenshots.

- `serve_inspector(db)` starts `mnemodb serve --http --port 0` (or `mnemodb ui --port 0`)
  on a database, yields where it listens, and on exit stops it with SIGTERM, checking it
  exits cleanly with no traceback in its log.
- `seeded(db)` opens the database with the engine (before a server opens it) to write what
  a module's tests look at.
- `Watch` routes every request a browser context makes: one for anywhere but 127.0.0.1 is
  refused and recorded. It also records console errors, uncaught page errors, server
  errors and Content-Security-Policy violations; the `page` fixture fails a test that
  leaves any.
- `screenshot(page, name)` saves the whole page to tests/artifacts/screenshots/NAME.png.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from playwright.sync_api import BrowserContext, ConsoleMessage, Page, Response, Route, WebError, WebSocketRoute

from http_support import LISTENING, START_TIMEOUT_S, HttpServer
from mnemodb.engine import Engine
from mnemodb.engine.graph import NewEntity
from mnemodb.engine.items import Note
from mnemodb.model.records import NewMemory
from support import server_env

CHROMIUM_ENV = "MNEMODB_CHROMIUM"
DEFAULT_CHROMIUM = "/usr/bin/chromium"
# No sandbox (the tests may run as root, in a container); and nothing of Chromium's own
# traffic to Google's hosts: the tests' machine may have no network, and nothing may leave it.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]
LOOPBACK = "127.0.0.1"
SESSION_COOKIE = "mnemodb_session"
SCREENSHOTS = Path(__file__).resolve().parents[1] / "artifacts" / "screenshots"
# How long a browser action or expectation waits before the test fails: the change log's
# page polls every 2 s, everything else answers in milliseconds.
TIMEOUT_MS = 10_000

Launcher = Literal["serve", "ui"]


def archive_in_tree() -> bool:
    """Whether a memory's page can archive it and restore it yet (the inspector has the routes)."""
    from mnemodb.server.inspector import pages

    paths = {getattr(route, "path", "") for route in pages.routes()}
    return {"/item/{ref}/archive", "/item/{ref}/unarchive"} <= paths


def chromium_path() -> str:
    return os.environ.get(CHROMIUM_ENV) or DEFAULT_CHROMIUM


# -- the server ---------------------------------------------------------------------------------


@dataclass
class Inspector:
    """A running server with the inspector at /ui."""

    server: HttpServer
    db: Path

    @property
    def base(self) -> str:
        """http://127.0.0.1:PORT"""
        return self.server.base

    @property
    def mcp(self) -> str:
        return self.server.url

    def url(self, path: str = "/") -> str:
        """The inspector's page at `path` (`/`, `/memories?q=x`, ...)."""
        return f"{self.base}/ui{path}"

    @property
    def log(self) -> str:
        return self.server.stderr


@contextmanager
def _ui_process(db: Path) -> Iterator[HttpServer]:
    """`mnemodb ui --port 0`: it prints the inspector's URL, alone, on stdout."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mnemodb", "ui", "--db", str(db), "--port", "0", "--log-level", "info"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=server_env({"MNEMODB_EMBEDDER": "none"}),
    )
    lines: list[str] = []
    printed: list[str] = []
    listening: list[str] = []
    ready = threading.Event()

    def read_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            match = LISTENING.search(line)
            if match and not listening:
                listening.append(match.group(1))

    def read_stdout() -> None:
        assert proc.stdout is not None
        printed.append(proc.stdout.readline())
        ready.set()

    threading.Thread(target=read_stderr, daemon=True).start()
    threading.Thread(target=read_stdout, daemon=True).start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not ready.wait(0.05):
        if proc.poll() is not None or time.monotonic() > deadline:
            break
    url = printed[0].strip() if printed else ""
    if not re.fullmatch(r"http://127\.0\.0\.1:\d+/ui/", url):
        proc.kill()
        proc.wait()
        raise AssertionError(f"mnemodb ui did not print its URL (got {url!r}):\n{''.join(lines)}")
    server = HttpServer(proc, url.removesuffix("/ui/"), lines)
    try:
        yield server
    finally:
        server.stop()


@contextmanager
def serve_inspector(db: Path, *flags: str, launcher: Launcher = "serve") -> Iterator[Inspector]:
    """A real server process on `db` (`mnemodb serve --http` or `mnemodb ui`, any free
    port on 127.0.0.1). On exit: stopped, and checked to have exited cleanly, logging no
    traceback and no error."""
    starting = HttpServer.start(db, *flags) if launcher == "serve" else _ui_process(db)
    with starting as server:
        yield Inspector(server, db)
        status = server.stop()
    assert status == 0, f"the server exited with {status}:\n{server.stderr}"
    assert "Traceback" not in server.stderr and "[ERROR]" not in server.stderr, server.stderr


# -- seeding ---------------------------------------------------------------------------------------


class Seeder:
    """Writes through the engine, as the native tools do; each call returns the new id."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def memory(
        self,
        content: str,
        *,
        tags: Sequence[str] = (),
        importance: int = 0,
        kind: str = "general",
        about: Sequence[str] = (),
        scope: str | None = None,
    ) -> str:
        note = Note(NewMemory(content, tuple(tags), importance, kind), about=tuple(about))
        [outcome], _ = self.engine.items.remember([note], scope=scope)
        assert outcome.item is not None, outcome
        return outcome.item.id

    def entity(self, name: str, kind: str = "", observations: Sequence[str] = (), *, scope: str | None = None) -> str:
        _, [outcome] = self.engine.items.remember((), [NewEntity(name, kind, tuple(observations))], scope=scope)
        assert outcome.item is not None, outcome
        return outcome.item.id

    def relate(self, src: str, dst: str, kind: str, *, scope: str | None = None) -> str:
        [(edge, _)], _ = self.engine.items.relate([(src, dst, kind, {}, None)], scope=scope)
        return edge.id

    def close(self, edge: str) -> None:
        self.engine.items.relate((), [(edge, None)])


@contextmanager
def seeded(db: Path) -> Iterator[Seeder]:
    """The database at `db` (created), open for seeding; closed before a server opens it."""
    with Engine.open(str(db)) as engine:
        yield Seeder(engine)


def mnemodb_cli(db: Path, *args: str) -> str:
    """Run `mnemodb ARGS... --db DB` as a user would, in its own process: its stdout."""
    done = subprocess.run(
        [sys.executable, "-m", "mnemodb", *args, "--db", str(db)],
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, f"mnemodb {' '.join(args)} failed ({done.returncode}):\n{done.stderr}"
    return done.stdout


def create_token(db: Path, name: str, *flags: str) -> str:
    """A new access token (`mnemodb token create NAME FLAGS...`): its secret."""
    return mnemodb_cli(db, "token", "create", name, *flags).strip()


# -- watching a browser context ------------------------------------------------------------------------

# Registered before any of a page's own scripts: a Content-Security-Policy violation is
# reported to the test through a binding (bindings and init scripts are not subject to
# the page's policy).
_CSP_LISTENER = """
document.addEventListener("securitypolicyviolation", function (event) {
  window.mnemodbTestCspViolation({
    directive: event.violatedDirective,
    blocked: event.blockedURI,
    source: event.sourceFile,
    line: event.lineNumber,
    sample: event.sample,
  });
});
"""


@dataclass
class Watch:
    """What the browser contexts of one test did that they must not."""

    foreign: list[str] = field(default_factory=list)
    """Requests for anywhere but 127.0.0.1 (refused before they left)."""
    errors: list[str] = field(default_factory=list)
    """Console errors, uncaught exceptions, and responses with a server error."""
    violations: list[str] = field(default_factory=list)
    """Content-Security-Policy violations."""
    expected: list[re.Pattern[str]] = field(default_factory=list)

    def expect_error(self, pattern: str) -> None:
        """Console errors matching `pattern` are part of this test (a 404 it asks for)."""
        self.expected.append(re.compile(pattern))

    def attach(self, context: BrowserContext) -> None:
        context.route("**/*", self._route)
        context.route_web_socket(re.compile(".*"), self._route_socket)
        context.expose_binding("mnemodbTestCspViolation", self._violation)
        context.add_init_script(script=_CSP_LISTENER)
        context.on("console", self._console)
        context.on("weberror", self._page_error)
        context.on("response", self._response)

    def _route(self, route: Route) -> None:
        url = route.request.url
        if urlsplit(url).hostname == LOOPBACK:
            route.continue_()
        else:
            self.foreign.append(f"{route.request.method} {url}")
            route.abort("blockedbyclient")

    def _route_socket(self, route: WebSocketRoute) -> None:
        if urlsplit(route.url).hostname == LOOPBACK:
            route.connect_to_server()
        else:
            self.foreign.append(f"WebSocket {route.url}")
            route.close()

    def _violation(self, source: Any, report: dict[str, Any]) -> None:
        self.violations.append(
            f"{report.get('directive')} blocked {report.get('blocked')!r} "
            f"at {report.get('source')}:{report.get('line')} {report.get('sample') or ''}".rstrip()
        )

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            text = message.text
            if not any(p.search(text) for p in self.expected):
                where = message.location.get("url", "")
                self.errors.append(f"console: {text} ({where})")

    def _page_error(self, error: WebError) -> None:
        self.errors.append(f"uncaught: {error.error}")

    def _response(self, response: Response) -> None:
        if response.status >= 500:
            self.errors.append(f"server error {response.status}: {response.request.method} {response.url}")

    def problems(self) -> list[str]:
        return (
            [f"a request left 127.0.0.1: {r}" for r in self.foreign]
            + self.errors
            + [f"Content-Security-Policy violation: {v}" for v in self.violations]
        )


def screenshot(page: Page, name: str) -> Path:
    """The whole page, as tests/artifacts/screenshots/NAME.png."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    # caret="initial": hiding the caret leaves an empty style attribute on every input, which
    # htmx's settling then copies onto the inputs it swaps in, against the page's policy.
    page.screenshot(path=str(path), full_page=True, animations="disabled", caret="initial")
    return path


def wait_for(page: Page, condition: Callable[[], bool], what: str) -> None:
    """Until `condition()` holds, letting the page's events (bindings, console) come in;
    fails after TIMEOUT_MS."""
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {TIMEOUT_MS} ms for {what}")
        page.wait_for_timeout(25)


def signed_in(page: Page, token: str) -> None:
    """The page's context holds the session cookie the login form sets for `token` (what
    signing in leaves behind, without the form: test_tokens signs in through the form)."""
    page.context.add_cookies(
        [
            {
                "name": SESSION_COOKIE,
                "value": token,
                "domain": LOOPBACK,
                "path": "/ui",
                "httpOnly": True,
                "sameSite": "Strict",
            }
        ]
    )
