"""`mnemodb serve --http`: Streamable HTTP at /mcp, /healthz and /metrics, end to end.

Every test runs a real server process on a real SQLite file and talks to it over a real
socket, with the MCP SDK's client or with raw HTTP where the headers matter.
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from http_support import MODERN, HttpServer
from mnemodb.engine import Engine
from mnemodb.engine.graph import NewEntity
from mnemodb.server import config
from mnemodb.server.app import build_server
from mnemodb.server.config import HttpSettings
from mnemodb.server.http import Metrics, RateLimiter, build_app
from mnemodb.server.profiles import build_profile
from native_support import TOOL_NAMES, Native, serve_fails
from support import server_env

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    with HttpServer.start(tmp_path_factory.mktemp("http") / "memory.db") as running:
        yield running


# -- the MCP endpoint --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", MODERN])
def test_both_protocol_eras_remember_and_recall(server: HttpServer, mode: str) -> None:
    with Native.connect(server.url, mode) as remote:
        assert remote.tool_names() == TOOL_NAMES
        content = f"The {mode} client's deploy key rotates monthly"
        [stored] = remote.call("remember", {"memories": [{"content": content}]})["memories"]
        assert stored["status"] == "created"
        found = remote.call("recall", {"query": f"{mode} deploy key"})["items"]
        assert [item["id"] for item in found][:1] == [stored["id"]]


def test_a_bad_argument_is_a_tool_error_over_http(server: HttpServer) -> None:
    with Native.connect(server.url) as remote:
        result = remote.result("remember", {"memories": [{"content": ""}]})
        assert result.is_error is True
        assert "content" in str(result.content[0])


def test_the_server_keeps_no_session(server: HttpServer) -> None:
    """Stateless: an initialize gets no Mcp-Session-Id, and a tool call needs none, so any
    process behind a load balancer can answer any request."""
    status, headers, _ = server.raw(
        "POST",
        "/mcp",
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
        b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}',
        {
            "Host": f"127.0.0.1:{server.port}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
    )
    assert status == 200
    assert "mcp-session-id" not in headers
    status, reply = server.post_mcp(
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "survey", "arguments": {}}},
        {"MCP-Protocol-Version": "2025-11-25"},
    )
    assert status == 200, reply
    assert reply["result"]["isError"] is False
    assert reply["result"]["structuredContent"]["write_scope"] == "shared"


def test_two_processes_on_one_file_serve_the_same_memory(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with HttpServer.start(db) as first, HttpServer.start(db) as second:
        with Native.connect(first.url) as a:
            [stored] = a.call("remember", {"memories": [{"content": "Written through the first server"}]})["memories"]
        with Native.connect(second.url, MODERN) as b:
            assert [i["id"] for i in b.call("recall", {"query": "first server"})["items"]] == [stored["id"]]


@pytest.mark.parametrize(
    ("profile", "tools"),
    [("memdb", 12), ("topodb", 16), ("knowledge-graph", 16)],
)
def test_every_profile_is_served_over_http(tmp_path: Path, profile: str, tools: int) -> None:
    with HttpServer.start(tmp_path / "memory.db", profile=profile) as running, Native.connect(running.url) as remote:
        assert len(remote.tool_names()) == tools


def test_a_body_over_the_limit_is_refused_with_413(server: HttpServer) -> None:
    status, _ = server.post_mcp({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x" * 5_000_000}})
    assert status == 413


# -- DNS rebinding protection --------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["evil.example.com", "evil.example.com:8765", "127.0.0.1.evil.example.com"])
def test_a_foreign_host_header_gets_421(server: HttpServer, host: str) -> None:
    status, _ = server.post_mcp(INITIALIZE, {"Host": host})
    assert status == 421


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]"])
def test_loopback_host_headers_are_accepted(server: HttpServer, host: str) -> None:
    status, reply = server.post_mcp(INITIALIZE, {"Host": f"{host}:{server.port}"})
    assert status == 200, reply


@pytest.mark.parametrize("path", ["/metrics", "/healthz", "/.well-known/oauth-protected-resource/mcp", "/nowhere"])
def test_every_path_checks_the_host_and_the_origin(server: HttpServer, path: str) -> None:
    # /metrics answered a rebound page with every scope's id and size: no path is exempt.
    status, _, body = server.raw("GET", path, headers={"Host": "evil.example"})
    assert status == 421, body
    assert b"mnemodb_memories" not in body
    status, _, body = server.raw(
        "GET", path, headers={"Host": f"127.0.0.1:{server.port}", "Origin": "http://evil.example"}
    )
    assert status == 403, body


def test_a_foreign_origin_gets_403_and_a_loopback_one_is_accepted(server: HttpServer) -> None:
    status, _ = server.post_mcp(INITIALIZE, {"Origin": "http://evil.example.com"})
    assert status == 403
    status, _ = server.post_mcp(INITIALIZE, {"Origin": f"http://localhost:{server.port}"})
    assert status == 200


def test_allowed_hosts_and_origins_extend_the_lists(tmp_path: Path) -> None:
    with HttpServer.start(
        tmp_path / "memory.db",
        "--allowed-hosts",
        "memory.example.com",
        "--allowed-origins",
        "https://app.example.com",
    ) as running:
        assert running.post_mcp(INITIALIZE, {"Host": "memory.example.com"})[0] == 200
        assert running.post_mcp(INITIALIZE, {"Host": f"memory.example.com:{running.port}"})[0] == 200
        assert running.post_mcp(INITIALIZE, {"Host": "other.example.com"})[0] == 421
        assert running.post_mcp(INITIALIZE, {"Origin": "https://app.example.com"})[0] == 200
        assert running.post_mcp(INITIALIZE, {"Origin": "https://other.example.com"})[0] == 403


# -- health and metrics --------------------------------------------------------------------------------


def test_healthz_says_the_database_is_reachable_and_nothing_more(server: HttpServer) -> None:
    status, body = server.get("/healthz")
    assert status == 200
    # Anyone may ask, so the change log's position (everyone's activity) is not told.
    assert json.loads(body) == {"status": "ok", "database": "reachable"}


def test_healthz_says_when_the_database_is_not_reachable(tmp_path: Path) -> None:
    """The app in process, over an engine whose store has been closed: 503, and why."""
    engine = Engine.open(str(tmp_path / "memory.db"))
    profile = build_profile(
        "native", config.load(argparse.Namespace(profile="native", db=str(tmp_path / "memory.db")), {})
    )
    metrics = Metrics(engine)
    app = build_app(build_server(profile, engine), engine, HttpSettings(), metrics)
    assert asgi_get(app, "/healthz")[0] == 200
    engine.close()
    status, body = asgi_get(app, "/healthz")
    assert status == 503
    assert '"status":"unavailable"' in body and "unreachable" in body


def asgi_get(app: Any, path: str) -> tuple[int, str]:
    """One GET through an ASGI app, in process: (status, body)."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1:8765")],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8765),
    }
    anyio.run(app, scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, body.decode()


def metric(text: str, name: str, **labels: str) -> float | None:
    """The value of one sample of a Prometheus text page, or None."""
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        match = re.fullmatch(r"([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)", line)
        if not match or match.group(1) != name:
            continue
        found = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group(2) or ""))
        if found == labels:
            return float(match.group(3))
    return None


def test_metrics_count_requests_tool_calls_latency_size_and_memories(tmp_path: Path) -> None:
    with HttpServer.start(tmp_path / "memory.db") as running:
        with Native.connect(running.url) as remote:
            remote.call("remember", {"memories": [{"content": "one"}, {"content": "two"}]})
            remote.call("remember", {"memories": [{"content": "three"}], "scope": "01HV7N8Q3Y2J6W5X4Z9A0B1C2D"})
            remote.call("recall", {"query": "one"})
            assert remote.result("recall", {"limit": 0}).is_error is True
        running.post_mcp(INITIALIZE, {"Host": "evil.example.com"})
        status, page = running.get("/metrics")
    assert status == 200
    assert metric(page, "mnemodb_tool_calls_total", tool="remember", outcome="ok") == 2
    assert metric(page, "mnemodb_tool_calls_total", tool="recall", outcome="ok") == 1
    assert metric(page, "mnemodb_tool_calls_total", tool="recall", outcome="invalid") == 1
    assert metric(page, "mnemodb_tool_seconds_count", tool="remember") == 2
    assert metric(page, "mnemodb_tool_seconds_bucket", tool="recall", le="+Inf") == 2
    assert metric(page, "mnemodb_http_requests_total", method="POST", path="/mcp", status="421") == 1
    assert (metric(page, "mnemodb_http_requests_total", method="POST", path="/mcp", status="200") or 0) >= 5
    assert metric(page, "mnemodb_memories", scope="shared") == 2
    assert metric(page, "mnemodb_memories", scope="01HV7N8Q3Y2J6W5X4Z9A0B1C2D") == 1
    size = metric(page, "mnemodb_database_bytes")
    assert size is not None and size > 0


# -- settings and start-up -------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10"])
def test_a_non_loopback_address_is_refused_without_authentication(tmp_path: Path, host: str) -> None:
    message = serve_fails(tmp_path, "--http", "--host", host)
    assert f"refusing to serve {host} without authentication" in message
    assert "--insecure" in message
    assert not (tmp_path / "memory.db").exists()


def test_insecure_serves_every_address_and_still_checks_the_host(tmp_path: Path) -> None:
    with HttpServer.start(tmp_path / "memory.db", "--host", "0.0.0.0", "--insecure") as running:
        assert running.base.startswith("http://0.0.0.0:")
        running.base = f"http://127.0.0.1:{running.port}"
        assert running.get("/healthz")[0] == 200
        assert running.post_mcp(INITIALIZE)[0] == 200
        assert running.post_mcp(INITIALIZE, {"Host": "evil.example.com"})[0] == 421


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--port", "8765"], "--port applies to the HTTP transport: add --http"),
        (["--host", "127.0.0.1"], "--host applies to the HTTP transport: add --http"),
        (["--insecure"], "--insecure applies to the HTTP transport: add --http"),
        (["--http", "--port", "70000"], "Invalid --port 70000"),
    ],
)
def test_http_flags_are_checked(tmp_path: Path, flags: list[str], expected: str) -> None:
    assert expected in serve_fails(tmp_path, *flags)


def test_a_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "mnemodb", "serve", "--db", str(tmp_path / "m.db"), "--http", "--port", str(port)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=server_env({"MNEMODB_EMBEDDER": "none", "MNEMODB_LOG_LEVEL": "error"}),
            timeout=60,
            check=False,
        )
    assert result.returncode == 1
    assert f"cannot serve 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr, result.stderr


def test_sigterm_stops_the_server_cleanly(tmp_path: Path) -> None:
    with HttpServer.start(tmp_path / "memory.db") as running:
        with Native.connect(running.url) as remote:
            remote.call("remember", {"memories": [{"content": "kept across the stop"}]})
        assert running.stop() == 0
        assert "Traceback" not in running.stderr, running.stderr
    with HttpServer.start(tmp_path / "memory.db") as again, Native.connect(again.url) as remote:
        assert len(remote.call("recall", {"query": "kept"})["items"]) == 1


# -- tokens ------------------------------------------------------------------------------------------

TEAM_A = "01HV7N8Q3Y2J6W5X4Z9A0B1C2D"
TEAM_B = "01HV7N8Q3Y2J6W5X4Z9A0B1C2E"
TEAM_C = "01HV7N8Q3Y2J6W5X4Z9A0B1C2F"


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HttpServer, dict[str, str]]]:
    """A server whose database holds tokens: team A's, team B's, and a read-only one for A."""
    db = tmp_path_factory.mktemp("tokens") / "memory.db"
    with Engine.open(str(db)) as engine:
        secrets = {
            "a": engine.tokens.create("team-a", read_scopes=[TEAM_A], write_scope=TEAM_A)[1],
            "b": engine.tokens.create("team-b", read_scopes=[TEAM_B], write_scope=TEAM_B)[1],
            "a-reader": engine.tokens.create("a-reader", read_scopes=[TEAM_A], write_scope=TEAM_A, read_only=True)[1],
            "revoked": engine.tokens.create("gone")[1],
        }
        engine.tokens.revoke("gone")
        engine.memories.store("Team B's launch date is secret", scope=TEAM_B)
        engine.graph.create_entities([NewEntity("Zorblax launch plan")], scope=TEAM_B)
    with HttpServer.start(db) as running:
        yield running, secrets


def test_without_a_token_a_guarded_server_answers_401(guarded: tuple[HttpServer, dict[str, str]]) -> None:
    server, _ = guarded
    status, headers, body = server.raw(
        "POST",
        "/mcp",
        b"{}",
        {"Host": f"127.0.0.1:{server.port}", "Content-Type": "application/json"},
    )
    assert status == 401
    assert headers["www-authenticate"] == 'Bearer realm="mnemodb"'
    assert b"needs a bearer token" in body
    assert server.get("/metrics")[0] == 401
    assert server.get("/healthz")[0] == 200


@pytest.mark.parametrize("which", ["wrong", "revoked", "basic"])
def test_a_bad_token_answers_401_invalid_token(guarded: tuple[HttpServer, dict[str, str]], which: str) -> None:
    server, secrets = guarded
    header = {
        "wrong": "Bearer mnemodb_not-a-real-token",
        "revoked": f"Bearer {secrets['revoked']}",
        "basic": f"Basic {secrets['a']}",
    }[which]
    status, reply = server.post_mcp(INITIALIZE, {"Authorization": header})
    assert status == 401
    assert reply["error"] == "invalid_token"


def test_the_token_decides_the_tenant(guarded: tuple[HttpServer, dict[str, str]]) -> None:
    server, secrets = guarded
    with Native.connect(server.url, token=secrets["a"]) as a:
        [stored] = a.call("remember", {"memories": [{"content": "Team A ships on Mondays"}]})["memories"]
        assert a.get(stored["id"])["scope"] == TEAM_A
        # Team B's memory is not there for A, by default or when asked for.
        assert a.call("recall", {"query": "launch date secret"})["items"] == []
        refused = a.error("recall", {"query": "launch", "scopes": [TEAM_B]})
        assert f'scope "{TEAM_B}" is not readable with token "team-a"' in refused
        refused = a.error("remember", {"memories": [{"content": "planted"}], "scope": TEAM_B})
        assert f'scope "{TEAM_B}" is not writable with token "team-a"' in refused
        survey = a.call("survey", {})
        assert (survey["write_scope"], survey["scopes"], survey["memories"]) == (TEAM_A, [TEAM_A], 1)
    with Native.connect(server.url, MODERN, token=secrets["b"]) as b:
        found = b.call("recall", {"query": "ships Mondays launch"})["items"]
        assert found and {item["scope"] for item in found} == {TEAM_B}
        assert b.call("survey", {})["memories"] == 1  # the planted memory was never written


def test_completion_suggests_only_names_the_token_reads(guarded: tuple[HttpServer, dict[str, str]]) -> None:
    from mcp_types import ResourceTemplateReference

    server, secrets = guarded
    reference = ResourceTemplateReference(type="ref/resource", uri="mnemodb://entity/{name}")
    suggested = {}
    for which in ("a", "b"):
        with Native.connect(server.url, token=secrets[which]) as remote:
            done = remote.run(remote.client.complete, reference, {"name": "name", "value": "zorb"})
            suggested[which] = done.completion.values
    assert suggested == {"a": [], "b": ["Zorblax launch plan"]}


def test_a_read_only_token_reads_and_cannot_write(guarded: tuple[HttpServer, dict[str, str]]) -> None:
    server, secrets = guarded
    with Native.connect(server.url, token=secrets["a-reader"]) as reader:
        before = reader.call("survey", {})
        refused = reader.error("remember", {"memories": [{"content": "not allowed"}]})
        assert 'token "a-reader" is read-only' in refused
        assert reader.call("survey", {})["current_seq"] == before["current_seq"]


def test_a_read_only_token_cannot_switch_a_pattern_to_verbose_mode(guarded: tuple[HttpServer, dict[str, str]]) -> None:
    # Verbose mode made this a million-step repeat the cost guard never saw: its compile
    # held the process for seconds and kept hundreds of megabytes.
    server, secrets = guarded
    with Native.connect(server.url, token=secrets["a-reader"]) as reader:
        refused = reader.error("recall", {"pattern": "(?x)a{1 0 0 0 0 0 0}"})
        assert refused.endswith("Invalid group"), refused
        assert reader.call("recall", {"pattern": "a{1 0 0}"})["items"] == []
    assert server.get("/healthz")[0] == 200


def test_metrics_show_a_token_only_the_scopes_it_reads(guarded: tuple[HttpServer, dict[str, str]]) -> None:
    server, secrets = guarded
    pages = {}
    for which in ("a", "b"):
        status, _, body = server.raw(
            "GET", "/metrics", headers={"Host": f"127.0.0.1:{server.port}", "Authorization": f"Bearer {secrets[which]}"}
        )
        assert status == 200
        pages[which] = body.decode()
    assert metric(pages["b"], "mnemodb_memories", scope=TEAM_B) == 1
    assert metric(pages["a"], "mnemodb_memories", scope=TEAM_B) is None
    assert TEAM_B not in pages["a"]


def test_a_token_sees_its_own_calls_in_the_metrics_and_not_another_teams(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with Engine.open(str(db)) as engine:
        a = engine.tokens.create("team-a", read_scopes=[TEAM_A], write_scope=TEAM_A)[1]
        b = engine.tokens.create("team-b", read_scopes=[TEAM_B], write_scope=TEAM_B)[1]
    with HttpServer.start(db) as running:
        with Native.connect(running.url, token=b) as remote:
            for n in range(3):
                remote.call("remember", {"memories": [{"content": f"team B note {n}"}]})
            remote.call("recall", {"query": "note"})
        with Native.connect(running.url, token=a) as remote:
            remote.call("survey", {})
        pages = {}
        for which, secret in (("a", a), ("b", b)):
            status, _, body = running.raw(
                "GET", "/metrics", headers={"Host": f"127.0.0.1:{running.port}", "Authorization": f"Bearer {secret}"}
            )
            assert status == 200
            pages[which] = body.decode()
    assert metric(pages["b"], "mnemodb_tool_calls_total", tool="remember", outcome="ok") == 3
    assert metric(pages["b"], "mnemodb_tool_calls_total", tool="recall", outcome="ok") == 1
    assert metric(pages["b"], "mnemodb_tool_calls_total", tool="survey", outcome="ok") is None
    assert metric(pages["a"], "mnemodb_tool_calls_total", tool="survey", outcome="ok") == 1
    assert metric(pages["a"], "mnemodb_tool_calls_total", tool="remember", outcome="ok") is None
    assert metric(pages["a"], "mnemodb_tool_seconds_count", tool="remember") is None
    # Requests too: A's page counts A's own, not B's (B made more than A in all).
    a_posts = metric(pages["a"], "mnemodb_http_requests_total", method="POST", path="/mcp", status="200") or 0
    b_posts = metric(pages["b"], "mnemodb_http_requests_total", method="POST", path="/mcp", status="200") or 0
    assert 0 < a_posts < b_posts
    # The whole file's size counts every team's data.
    assert metric(pages["a"], "mnemodb_database_bytes") is None


def test_topodb_db_info_tells_a_token_the_file_name_only(tmp_path: Path) -> None:
    db = tmp_path / "private-dir" / "team.db"
    db.parent.mkdir()
    with Engine.open(str(db)) as engine:
        secret = engine.tokens.create("team-a", read_scopes=[TEAM_A], write_scope=TEAM_A)[1]
    with HttpServer.start(db, profile="topodb") as running:
        status, reply = running.post_mcp(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "db_info", "arguments": {}}},
            {"Authorization": f"Bearer {secret}", "MCP-Protocol-Version": "2025-11-25"},
        )
    assert status == 200, reply
    info = reply["result"]["structuredContent"]
    assert info["path"] == "team.db"
    assert "private-dir" not in json.dumps(reply)


def test_with_a_token_the_server_may_bind_beyond_loopback(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with Engine.open(str(db)) as engine:
        _, secret = engine.tokens.create("team")
    with HttpServer.start(db, "--host", "0.0.0.0") as running:
        running.base = f"http://127.0.0.1:{running.port}"
        assert running.post_mcp(INITIALIZE)[0] == 401
        assert running.post_mcp(INITIALIZE, {"Authorization": f"Bearer {secret}"})[0] == 200
        # Revoking the last token does not open a server bound beyond loopback.
        with Engine.open(str(db)) as engine:
            engine.tokens.revoke("team")
        assert running.post_mcp(INITIALIZE)[0] == 401


def test_revoking_the_last_token_keeps_a_loopback_server_closed(tmp_path: Path) -> None:
    """Requests without a token read every scope: a server that has had tokens opens to them
    again only when an operator says so (`mnemodb token reopen`), never by a revocation."""
    db = tmp_path / "memory.db"
    with Engine.open(str(db)) as engine:
        _, secret = engine.tokens.create("team")
        engine.memories.store("Team B's launch date is secret", scope=TEAM_B)
    with HttpServer.start(db) as running:
        assert running.post_mcp(INITIALIZE, {"Authorization": f"Bearer {secret}"})[0] == 200
        with Engine.open(str(db)) as engine:
            engine.tokens.revoke("team")
        assert running.post_mcp(INITIALIZE)[0] == 401
        assert running.get("/metrics")[0] == 401
        with Engine.open(str(db)) as engine:
            engine.tokens.reopen()
        assert running.post_mcp(INITIALIZE)[0] == 200


def test_an_existing_database_without_tokens_is_refused_beyond_loopback(tmp_path: Path) -> None:
    with Engine.open(str(tmp_path / "memory.db")) as engine:
        engine.memories.store("already here")
    result = subprocess.run(
        [sys.executable, "-m", "mnemodb", "serve", "--db", str(tmp_path / "memory.db"), "--http", "--host", "0.0.0.0"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=server_env({"MNEMODB_LOG_LEVEL": "error"}),
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "refusing to serve 0.0.0.0 without authentication" in result.stderr
    assert "mnemodb token create" in result.stderr
    assert "Traceback" not in result.stderr


# -- limits ------------------------------------------------------------------------------------------


def test_the_body_limit_is_configurable(tmp_path: Path) -> None:
    with HttpServer.start(tmp_path / "memory.db", "--max-body-bytes", "2048") as running:
        assert running.post_mcp(INITIALIZE)[0] == 200
        status, _ = running.post_mcp({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x" * 4000}})
        assert status == 413


def test_each_token_has_its_own_rate(tmp_path: Path) -> None:
    """At 0.01 requests a second the bucket holds one request and refills in 100 s: the
    second request of a token is refused whatever the machine's speed."""
    db = tmp_path / "memory.db"
    with Engine.open(str(db)) as engine:
        _, first = engine.tokens.create("first")
        _, second = engine.tokens.create("second")
    with HttpServer.start(db, "--rate-limit", "0.01") as running:
        assert running.post_mcp(INITIALIZE, {"Authorization": f"Bearer {first}"})[0] == 200
        status, headers, body = running.raw(
            "POST",
            "/mcp",
            b"{}",
            {
                "Host": f"127.0.0.1:{running.port}",
                "Authorization": f"Bearer {first}",
                "Content-Type": "application/json",
            },
        )
        assert status == 429
        assert 90 <= int(headers["retry-after"]) <= 100
        assert b"more than 0.01 requests a second" in body
        # Another token is not held back by the first one's use.
        assert running.post_mcp(INITIALIZE, {"Authorization": f"Bearer {second}"})[0] == 200


def test_the_rate_allows_bursts_and_refills() -> None:
    now = [0.0]
    limiter = RateLimiter(3, clock=lambda: now[0])
    assert [limiter.wait("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.wait("a") == pytest.approx(1 / 3)
    assert limiter.wait("b") == 0.0
    now[0] = 0.5  # 1.5 requests' worth back
    assert limiter.wait("a") == 0.0
    assert limiter.wait("a") == pytest.approx((1 - 0.5) / 3)
    now[0] = 100.0  # never more than a burst
    assert [limiter.wait("a") for _ in range(4)][-1] > 0


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--http", "--max-body-bytes", "10"], "Invalid --max-body-bytes 10"),
        (["--http", "--rate-limit", "-1"], "Invalid --rate-limit -1"),
        (["--rate-limit", "5"], "--rate-limit applies to the HTTP transport: add --http"),
    ],
)
def test_limit_flags_are_checked(tmp_path: Path, flags: list[str], expected: str) -> None:
    assert expected in serve_fails(tmp_path, *flags)


@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")
def test_completion_logging_level_and_a_missing_resource(server: HttpServer) -> None:
    """What the conformance suite asks of any server, checked here with the SDK's client."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import ResourceTemplateReference

    with Native.connect(server.url) as remote:
        names = ["Adalbert", "adam_smith", "Adrian%", "Bob"]
        remote.call("remember", {"entities": [{"name": name} for name in names]})

        def complete(typed: str, uri: str = "mnemodb://entity/{name}") -> Any:
            reference = ResourceTemplateReference(type="ref/resource", uri=uri)
            return remote.run(remote.client.complete, reference, {"name": "name", "value": typed}).completion

        done = complete("AD")
        assert (done.values, done.total, done.has_more) == (["Adalbert", "adam_smith", "Adrian%"], 3, False)
        assert complete("adam_").values == ["adam_smith"]
        assert complete("Adrian%").values == ["Adrian%"]
        assert complete("a%").values == []  # % and _ are themselves, not wildcards
        assert complete("Ad", "mnemodb://memory/{ref}").values == []  # ids are not worth suggesting
        remote.run(remote.client.set_logging_level, "info")
        with pytest.raises(MCPError) as missing:
            remote.run(remote.client.read_resource, "mnemodb://nothing/here")
        assert missing.value.error.data == {"uri": "mnemodb://nothing/here"}


# -- JWTs from an identity provider --------------------------------------------------------------------

ISSUER = "https://id.example.com"
AUDIENCE = "mnemodb-team"
SECRET = "a shared secret of at least thirty-two bytes!"


def jwt_for(scopes: str, *, key: Any = SECRET, algorithm: str = "HS256", **overrides: Any) -> str:
    import time

    import jwt

    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": int(time.time()) + 600, "scope": scopes}
    claims.update(overrides)
    return jwt.encode({k: v for k, v in claims.items() if v is not None}, key, algorithm=algorithm)


@pytest.fixture(scope="module")
def with_jwt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    db = tmp_path_factory.mktemp("jwt") / "memory.db"
    with Engine.open(str(db)) as engine:
        engine.memories.store("Team B's launch date is secret", scope=TEAM_B)
        engine.graph.create_entities([NewEntity("Zorblax launch plan")], scope=TEAM_B)
    flags = ["--jwt-issuer", ISSUER, "--jwt-audience", AUDIENCE, "--jwt-key", SECRET]
    with HttpServer.start(db, *flags, "--public-url", "https://memory.example.com") as running:
        yield running


def test_a_jwt_grants_the_scopes_its_claim_lists(with_jwt: HttpServer) -> None:
    token = jwt_for(f"openid read:shared write:{TEAM_A}")
    with Native.connect(with_jwt.url, token=token) as alice:
        [stored] = alice.call("remember", {"memories": [{"content": "Alice's note"}]})["memories"]
        assert alice.get(stored["id"])["scope"] == TEAM_A
        assert alice.call("recall", {"query": "launch secret"})["items"] == []
        refused = alice.error("recall", {"query": "launch", "scopes": [TEAM_B]})
        assert f'scope "{TEAM_B}" is not readable with token "jwt:alice"' in refused
    with Native.connect(with_jwt.url, token=jwt_for(f"read:{TEAM_A}")) as reader:
        assert len(reader.call("recall", {"query": "note"})["items"]) == 1
        assert 'token "jwt:alice" is read-only' in reader.error("remember", {"memories": [{"content": "no"}]})


def test_a_jwt_writes_only_its_write_scopes(with_jwt: HttpServer) -> None:
    """`read:A write:B` reads A and B but changes only B: not a new memory in A, nor A's own."""
    with Native.connect(with_jwt.url, token=jwt_for(f"write:{TEAM_A}")) as owner:
        [kept] = owner.call("remember", {"memories": [{"content": "Team A keeps this"}]})["memories"]
    with Native.connect(with_jwt.url, token=jwt_for(f"read:{TEAM_A} write:{TEAM_C}", sub="bob")) as bob:
        not_writable = f'scope "{TEAM_A}" is not writable with token "jwt:bob"'
        assert bob.get(kept["id"])["scope"] == TEAM_A
        assert not_writable in bob.error("remember", {"memories": [{"content": "planted"}], "scope": TEAM_A})
        assert not_writable in bob.error("forget", {"refs": [kept["id"]]})
        assert not_writable in bob.error("update", {"ref": kept["id"], "add_tags": ["planted"]})
        [own] = bob.call("remember", {"memories": [{"content": "Bob's own note"}]})["memories"]
        assert bob.get(own["id"])["scope"] == TEAM_C
        assert "tags" not in bob.get(kept["id"])  # untouched: still no tags


@pytest.mark.parametrize(
    ("token", "reason"),
    [
        (lambda: jwt_for("read:shared", exp=1), "Signature has expired"),
        (lambda: jwt_for("read:shared", iss="https://evil.example.com"), "Invalid issuer"),
        (lambda: jwt_for("read:shared", aud="someone-else"), "Audience doesn't match"),
        (lambda: jwt_for("read:shared", key="another secret of at least thirty-two bytes"), "Signature verification"),
        (lambda: jwt_for("read:shared", sub=None), 'Token is missing the "sub" claim'),
        (lambda: jwt_for("openid profile"), "grants no read:SCOPE or write:SCOPE"),
        (lambda: jwt_for("read:team-b"), "names a bad scope"),
        (lambda: "mnemodb_not-a-database-token", "the bearer token is not valid"),
    ],
)
def test_a_bad_jwt_is_refused_with_the_reason(with_jwt: HttpServer, token: Any, reason: str) -> None:
    status, reply = with_jwt.post_mcp(INITIALIZE, {"Authorization": f"Bearer {token()}"})
    assert status == 401
    assert reply["error"] == "invalid_token"
    assert reason in reply["error_description"]


def test_the_protected_resource_metadata_names_the_issuer(with_jwt: HttpServer) -> None:
    status, headers, _ = with_jwt.raw(
        "POST", "/mcp", b"{}", {"Host": f"127.0.0.1:{with_jwt.port}", "Content-Type": "application/json"}
    )
    assert status == 401
    metadata_url = "https://memory.example.com/.well-known/oauth-protected-resource/mcp"
    assert f'resource_metadata="{metadata_url}"' in headers["www-authenticate"]
    status, body = with_jwt.get("/.well-known/oauth-protected-resource/mcp")
    assert status == 200
    assert json.loads(body) == {
        "resource": "https://memory.example.com/mcp",
        "authorization_servers": [ISSUER],
        "bearer_methods_supported": ["header"],
        "resource_name": "mnemodb",
    }


def test_an_rs256_jwt_checked_against_a_pem_key_file(tmp_path: Path) -> None:
    import base64
    import hashlib
    import hmac

    import jwt
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public_pem = private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    (tmp_path / "idp.pem").write_bytes(public_pem)
    flags = ["--jwt-issuer", ISSUER, "--jwt-audience", AUDIENCE, "--jwt-key", f"@{tmp_path / 'idp.pem'}"]
    with HttpServer.start(tmp_path / "memory.db", *flags) as running:
        good = jwt_for("write:shared", key=private, algorithm="RS256")
        assert running.post_mcp(INITIALIZE, {"Authorization": f"Bearer {good}"})[0] == 200
        # An HS256 token signed with the public key as a secret (the classic confusion) is
        # refused. PyJWT will not make one, so it is made by hand.
        claims = jwt.decode(good, options={"verify_signature": False})
        signed = b".".join(
            base64.urlsafe_b64encode(json.dumps(part).encode()).rstrip(b"=")
            for part in ({"alg": "HS256", "typ": "JWT"}, claims)
        )
        mac = hmac.new(public_pem, signed, hashlib.sha256).digest()
        forged = (signed + b"." + base64.urlsafe_b64encode(mac).rstrip(b"=")).decode()
        status, reply = running.post_mcp(INITIALIZE, {"Authorization": f"Bearer {forged}"})
        assert status == 401
        assert "The specified alg value is not allowed" in reply["error_description"]


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (["--http", "--jwt-issuer", ISSUER], "--jwt-audience is missing"),
        (["--jwt-issuer", ISSUER], "--jwt-issuer applies to the HTTP transport: add --http"),
        (
            ["--http", *("--jwt-issuer", ISSUER, "--jwt-audience", "a", "--jwt-key", "k", "--jwt-algorithms", "none")],
            "Invalid --jwt-algorithms",
        ),
        (
            ["--http", *("--jwt-issuer", ISSUER, "--jwt-audience", "a", "--jwt-key", "k", "--jwt-algorithms", "RS256")],
            "is a shared secret",
        ),
        (
            ["--http", *("--jwt-issuer", ISSUER, "--jwt-audience", "a", "--jwt-key", "@/nonexistent/key.pem")],
            "Invalid --jwt-key @/nonexistent/key.pem",
        ),
    ],
)
def test_jwt_flags_are_checked(tmp_path: Path, flags: list[str], expected: str) -> None:
    assert expected in serve_fails(tmp_path, *flags)


def test_the_listening_socket_is_tcp_so_replies_are_not_delayed() -> None:
    """asyncio turns Nagle's algorithm off (TCP_NODELAY) on accepted connections only when
    the listening socket says it is IPPROTO_TCP. Without that, each reply after the first
    on a keep-alive connection waited ~40 ms for the client's delayed acknowledgement."""
    from mnemodb.server.http import _listen

    for host in ("127.0.0.1", "::1"):
        sock = _listen(host, 0)
        try:
            assert sock.proto == socket.IPPROTO_TCP, host
        finally:
            sock.close()
