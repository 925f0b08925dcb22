"""Helpers for the Streamable HTTP tests: a real `mnemodb serve --http` process.

`HttpServer.start` launches it on a free port (`--port 0`), waits for the line saying where
it listens, and on exit stops it with SIGTERM, checking it exits cleanly. `raw` sends one
HTTP request with exactly the headers given (the rebinding checks need a chosen Host).
`native_support.Native.connect` drives it with the MCP SDK's own client.
"""

from __future__ import annotations

import http.client
import json
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support import server_env

START_TIMEOUT_S = 30.0
LISTENING = re.compile(r"listening on (http://\S+)/mcp")
MODERN = "2026-07-28"


@dataclass
class HttpServer:
    proc: subprocess.Popen[str]
    base: str
    """http://host:port, without the /mcp path."""
    lines: list[str]

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"

    @property
    def port(self) -> int:
        return int(self.base.rsplit(":", 1)[1])

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    @classmethod
    @contextmanager
    def start(
        cls, db: Path | str, *flags: str, profile: str = "native", env: Mapping[str, str] | None = None
    ) -> Iterator[HttpServer]:
        command = [sys.executable, "-m", "mnemodb", "serve", "--profile", profile, "--db", str(db), "--http"]
        if "--port" not in flags:
            command += ["--port", "0"]
        if "--log-level" not in flags:
            command += ["--log-level", "info"]  # the line saying where it listens is at info
        proc = subprocess.Popen(
            [*command, *flags],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=server_env({"MNEMODB_EMBEDDER": "none", **(env or {})}),
        )
        lines: list[str] = []
        found = threading.Event()
        base: list[str] = []

        def read() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                lines.append(line)
                match = LISTENING.search(line)
                if match and not base:
                    base.append(match.group(1))
                    found.set()

        threading.Thread(target=read, daemon=True).start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not found.wait(0.05):
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                raise AssertionError(f"the server did not start (exit {proc.returncode}):\n{''.join(lines)}")
        server = cls(proc, base[0], lines)
        try:
            yield server
        finally:
            server.stop()

    def stop(self) -> int:
        """SIGTERM, then the exit status; a server that does not stop in time is killed."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        return self.proc.returncode

    def raw(
        self, method: str, path: str, body: bytes | None = None, headers: Mapping[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        """One request with these headers (Host included: given ones replace the default)."""
        host, port = self.base.removeprefix("http://").rsplit(":", 1)
        connection = http.client.HTTPConnection(host.strip("[]"), int(port), timeout=30)
        try:
            wanted = dict(headers or {})
            connection.putrequest(method, path, skip_host="Host" in wanted, skip_accept_encoding=True)
            for name, value in wanted.items():
                connection.putheader(name, value)
            if body is not None:
                connection.putheader("Content-Length", str(len(body)))
            connection.endheaders(body)
            response = connection.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            connection.close()

    def post_mcp(self, message: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> tuple[int, Any]:
        """POST one JSON-RPC message to /mcp: (status, the JSON reply or the raw text)."""
        status, _, body = self.raw(
            "POST",
            "/mcp",
            json.dumps(message).encode(),
            {
                "Host": f"127.0.0.1:{self.port}",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                **(headers or {}),
            },
        )
        try:
            return status, json.loads(body)
        except ValueError:
            return status, body.decode(errors="replace")

    def get(self, path: str) -> tuple[int, str]:
        status, _, body = self.raw("GET", path, headers={"Host": f"127.0.0.1:{self.port}"})
        return status, body.decode()
