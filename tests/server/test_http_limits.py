"""Connection limits of `mnemodb serve --http`: slow clients cannot hold the server.

Every test runs a real server process and talks to it over raw sockets, since what is
tested is what a polite client never does: send half its headers, trickle its body, open a
GET stream and keep it, or open more connections than the server takes. The timeouts are
set short (1 s) through the environment, and each test waits several times as long for the
server to act, so that only a server that never acts fails.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from http_support import LISTENING, START_TIMEOUT_S, HttpServer
from mnemodb.server.http import default_max_connections
from native_support import Native, serve_fails
from support import server_env

SHORT = {"MNEMODB_HEADER_TIMEOUT": "1", "MNEMODB_KEEP_ALIVE_TIMEOUT": "1"}
# How long a test waits for the server to close a connection it should close after 1 s.
PATIENCE_S = 10.0
PING = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()


def connect(server: HttpServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE_S)


def until_closed(sock: socket.socket, wait: float = PATIENCE_S) -> tuple[float, bytes]:
    """Read until the server closes the connection: (seconds it took, what it sent). Fails
    when it is still open after `wait` seconds."""
    started = time.monotonic()
    received = b""
    sock.settimeout(wait)
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except TimeoutError:
        raise AssertionError(f"still open after {wait} s; received {received[:200]!r}") from None
    except ConnectionResetError:
        pass
    return time.monotonic() - started, received


def one_reply(sock: socket.socket) -> bytes:
    """One whole response (headers and a Content-Length body) read from `sock`."""
    sock.settimeout(PATIENCE_S)
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)
        assert chunk, f"closed before a whole response: {received!r}"
        received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.lower().split(b"\r\n") if line.startswith(b"content-length")
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, f"closed before a whole response: {received!r}"
        body += chunk
    return head + b"\r\n\r\n" + body


def status_of(reply: bytes) -> int:
    return int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/1.1 ") else 0


def request(server: HttpServer, method: str, path: str, body: bytes = b"") -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
    if body:
        head += f"Content-Type: application/json\r\nAccept: application/json\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    with HttpServer.start(tmp_path_factory.mktemp("limits") / "memory.db", env=SHORT) as running:
        yield running


# -- timeouts ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sent",
    [b"", b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n", b"POST /mcp HTTP/1.1\r\nHo"],
    ids=["nothing", "half-the-headers", "half-a-header"],
)
def test_a_connection_that_does_not_finish_its_headers_is_closed(server: HttpServer, sent: bytes) -> None:
    with connect(server) as sock:
        sock.sendall(sent)
        took, reply = until_closed(sock)
    assert took >= 0.5
    # A request that had begun is told why; a connection that sent nothing is just closed.
    assert status_of(reply) == (408 if sent else 0), reply


def test_headers_sent_a_byte_at_a_time_do_not_extend_the_timeout(server: HttpServer) -> None:
    """The headers' time runs from their first byte, however steadily the rest comes."""
    headers = request(server, "GET", "/healthz")[:-2]  # never quite finished
    with connect(server) as sock:
        started = time.monotonic()
        with contextlib.suppress(OSError):
            for byte in headers:
                sock.sendall(bytes([byte]))
                time.sleep(0.1)
                if time.monotonic() - started > PATIENCE_S:
                    break
        _, reply = until_closed(sock)
    assert time.monotonic() - started < PATIENCE_S, "the trickle kept the connection open"
    assert status_of(reply) == 408, reply


def test_a_body_trickled_a_byte_at_a_time_is_cut_off(server: HttpServer) -> None:
    head = request(server, "POST", "/mcp", b"x" * 1000)[: -len(b"x" * 1000)]
    with connect(server) as sock:
        sock.sendall(head)
        started = time.monotonic()
        with contextlib.suppress(OSError):  # the server may close while a byte is on its way
            while time.monotonic() - started < PATIENCE_S:
                sock.sendall(b" ")
                sock.settimeout(0.2)
                with contextlib.suppress(TimeoutError):
                    if sock.recv(1, socket.MSG_PEEK):
                        break
        _, reply = until_closed(sock)
    assert time.monotonic() - started < PATIENCE_S, "the trickle kept the connection open"
    assert status_of(reply) == 408, reply


def test_a_body_that_arrives_promptly_is_served(server: HttpServer) -> None:
    """The limit is on slowness, not on size: a body that keeps coming is read in full."""
    status, reply = server.post_mcp({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x" * 3_000_000}})
    assert status == 200, reply


def test_an_idle_connection_is_closed_after_the_keep_alive_timeout(server: HttpServer) -> None:
    with connect(server) as sock:
        sock.sendall(request(server, "GET", "/healthz"))
        _, reply = until_closed(sock)
    assert status_of(reply) == 200
    assert reply.count(b"HTTP/1.1 ") == 1


def test_get_mcp_opens_no_stream(server: HttpServer) -> None:
    """Stateless with JSON responses, the server has nothing to send on a GET stream: it
    answers 405 at once, and the connection is then closed like any idle one."""
    for accept in ("text/event-stream", "application/json, text/event-stream"):
        status, headers, body = server.raw(
            "GET", "/mcp", headers={"Host": f"127.0.0.1:{server.port}", "Accept": accept}
        )
        assert status == 405, body
        assert headers["allow"] == "POST"
    for method in ("DELETE", "PUT"):
        status, headers, _ = server.raw(method, "/mcp", headers={"Host": f"127.0.0.1:{server.port}"})
        assert (status, headers["allow"]) == (405, "POST")
    with connect(server) as sock:
        sock.sendall(request(server, "GET", "/mcp")[:-2] + b"Accept: text/event-stream\r\n\r\n")
        _, reply = until_closed(sock)
    assert status_of(reply) == 405


def test_slow_clients_do_not_hold_up_the_others(server: HttpServer) -> None:
    """While connections sit half-sent, ordinary requests are served as usual."""
    with contextlib.ExitStack() as stack:
        for _ in range(5):
            sock = stack.enter_context(connect(server))
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{")
        with Native.connect(server.url) as remote:
            [stored] = remote.call("remember", {"memories": [{"content": "served beside slow clients"}]})["memories"]
            assert stored["status"] == "created"


# -- the cap on connections -----------------------------------------------------------------------------


def test_over_the_cap_a_newcomer_is_refused_at_once_and_the_busy_ones_finish(tmp_path: Path) -> None:
    """Three connections, each in the middle of a request: a fourth gets 503 straight away;
    the three then finish and are answered."""
    env = {"MNEMODB_MAX_CONNECTIONS": "3", "MNEMODB_HEADER_TIMEOUT": "30"}
    with HttpServer.start(tmp_path / "memory.db", env=env) as running, contextlib.ExitStack() as stack:
        busy = [stack.enter_context(connect(running)) for _ in range(3)]
        whole = request(running, "POST", "/mcp", PING)
        for sock in busy:
            sock.sendall(whole[:-5])
        time.sleep(0.5)
        with connect(running) as newcomer:
            newcomer.sendall(request(running, "GET", "/healthz"))
            took, reply = until_closed(newcomer)
        assert status_of(reply) == 503, reply
        assert took < 5
        for sock in busy:
            sock.sendall(whole[-5:])
            answer = one_reply(sock)
            assert status_of(answer) == 200, answer
            assert b'"result":{}' in answer
        # With them answered, a newcomer is served again.
        assert running.get("/healthz")[0] == 200


def test_connections_waiting_for_their_headers_make_room_for_a_request(tmp_path: Path) -> None:
    """At the cap, a connection that has not sent a whole request yet is closed to make
    room, the oldest first: slow clients cannot keep everyone else out."""
    env = {"MNEMODB_MAX_CONNECTIONS": "3", "MNEMODB_HEADER_TIMEOUT": "30"}
    with HttpServer.start(tmp_path / "memory.db", env=env) as running, contextlib.ExitStack() as stack:
        slow = []
        for _ in range(6):
            sock = stack.enter_context(connect(running))
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127")
            slow.append(sock)
            time.sleep(0.2)
        with Native.connect(running.url) as remote:
            [stored] = remote.call("remember", {"memories": [{"content": "room was made"}]})["memories"]
            assert stored["status"] == "created"
        # The oldest were closed, with a 503 since they had begun a request.
        _, reply = until_closed(slow[0], wait=2)
        assert status_of(reply) == 503


# -- few descriptors ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def started_with_open_files(db: Path, open_files: int, env: Mapping[str, str]) -> Iterator[HttpServer]:
    """`mnemodb serve --http` with its open-file limit (RLIMIT_NOFILE) set to `open_files`
    by the shell that starts it."""
    command = [sys.executable, "-m", "mnemodb", "serve", "--profile", "native", "--db", str(db), "--http"]
    command += ["--port", "0", "--log-level", "info"]
    proc = subprocess.Popen(
        ["/bin/sh", "-c", f'ulimit -n {open_files} && exec "$@"', "sh", *command],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=server_env({"MNEMODB_EMBEDDER": "none", **env}),
    )
    lines: list[str] = []
    found = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if LISTENING.search(line):
                found.set()

    threading.Thread(target=read, daemon=True).start()
    if not found.wait(START_TIMEOUT_S):
        proc.kill()
        proc.wait()
        raise AssertionError(f"the server did not start:\n{''.join(lines)}")
    match = LISTENING.search("".join(lines))
    assert match is not None
    running = HttpServer(proc, match.group(1), lines)
    try:
        yield running
    finally:
        running.stop()


def test_with_few_descriptors_slow_clients_leave_the_database_room(tmp_path: Path) -> None:
    """With 64 descriptors, 40 connections that sent half their headers and 40 GET /mcp
    requests (each a stream that stayed open, before) must leave the database the
    descriptors it needs: an ordinary call still succeeds while they are connected, and
    the server never runs out."""
    with started_with_open_files(tmp_path / "memory.db", 64, {}) as running, contextlib.ExitStack() as stack:
        for _ in range(40):
            sock = stack.enter_context(connect(running))
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127")
        for _ in range(40):
            sock = stack.enter_context(connect(running))
            sock.sendall(request(running, "GET", "/mcp")[:-2] + b"Accept: text/event-stream\r\n\r\n")
        time.sleep(0.5)
        connection = http.client.HTTPConnection("127.0.0.1", running.port, timeout=PATIENCE_S)
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "remember", "arguments": {"memories": [{"content": "still served"}]}},
            }
        )
        headers = {
            "Host": f"127.0.0.1:{running.port}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
        }
        connection.request("POST", "/mcp", body, headers)
        response = connection.getresponse()
        reply = json.loads(response.read())
        connection.close()
        assert response.status == 200, reply
        assert reply["result"]["isError"] is False, reply
        with Native.connect(running.url) as remote:
            assert len(remote.call("recall", {"query": "still served"})["items"]) == 1
    assert f"at most {default_max_connections(64)} connections" in running.stderr  # the limit was set
    assert "Too many open files" not in running.stderr, running.stderr
    assert "unable to open database file" not in running.stderr, running.stderr


def test_the_default_cap_leaves_room_for_the_database() -> None:
    for open_files in (64, 256, 1024, 4096, 1 << 20):
        cap = default_max_connections(open_files)
        assert 1 <= cap <= 1024
        # Every connection, and a reading worker thread for each (file and WAL), fit
        # beside the process's own descriptors.
        assert cap + 2 * min(cap, 40) + 32 <= open_files, open_files
    assert default_max_connections(64) >= 8
    assert default_max_connections(1 << 20) == 1024


# -- settings --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"MNEMODB_HEADER_TIMEOUT": "0"}, "Invalid --header-timeout 0"),
        ({"MNEMODB_HEADER_TIMEOUT": "soon"}, "Invalid MNEMODB_HEADER_TIMEOUT 'soon'"),
        ({"MNEMODB_KEEP_ALIVE_TIMEOUT": "-1"}, "Invalid --keep-alive-timeout -1"),
        ({"MNEMODB_KEEP_ALIVE_TIMEOUT": "inf"}, "Invalid --keep-alive-timeout inf"),
        ({"MNEMODB_MAX_CONNECTIONS": "0"}, "Invalid --max-connections 0"),
        ({"MNEMODB_MAX_CONNECTIONS": "many"}, "Invalid MNEMODB_MAX_CONNECTIONS 'many'"),
    ],
)
def test_limit_settings_are_checked(tmp_path: Path, env: dict[str, str], expected: str) -> None:
    assert expected in serve_fails(tmp_path, "--http", env=env)
