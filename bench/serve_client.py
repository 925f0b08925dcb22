"""A small JSON-RPC client for `mnemodb serve` over stdio, shared by the bench scripts.

It speaks line-delimited JSON-RPC directly (no SDK), so a script can pipeline requests,
match replies by id, and SIGKILL the server at any moment.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

PROTOCOL_VERSION = "2025-11-25"
REPLY_TIMEOUT_S = 60.0
"""A reply slower than this means the server hung."""


def serve_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment without any MEMDB_/MNEMODB_ settings of the caller's own, logging errors only."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMDB_", "MNEMODB_"))}
    env["MEMDB_LOG_LEVEL"] = "error"
    env.update(extra or {})
    return env


class ServerGone(Exception):
    """The server closed its stdout (it exited or was killed)."""


class ServeProcess:
    """One `mnemodb serve` process and its stdio pipes."""

    def __init__(
        self,
        db: Path | str,
        profile: str = "memdb",
        *,
        flags: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        command = [sys.executable, "-m", "mnemodb", "serve", "--profile", profile, "--db", str(db), *flags]
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=serve_env(env)
        )
        self._replies: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._stderr: list[bytes] = []
        self._ids = itertools.count(1)
        self._send_lock = threading.Lock()
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self._replies.put(json.loads(line))
            except ValueError:
                self._replies.put({"unparseable": line.decode(errors="replace")})
        self._replies.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line)

    @property
    def stderr(self) -> str:
        return b"".join(self._stderr).decode(errors="replace")

    def next_id(self) -> int:
        return next(self._ids)

    def send(self, message: Mapping[str, Any]) -> None:
        data = json.dumps(message, ensure_ascii=False).encode() + b"\n"
        assert self.proc.stdin is not None
        with self._send_lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def submit(self, tool: str, arguments: Mapping[str, Any], request_id: int | None = None) -> int:
        """Send a tools/call without waiting; returns its id."""
        request_id = self.next_id() if request_id is None else request_id
        params = {"name": tool, "arguments": dict(arguments)}
        self.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})
        return request_id

    def recv(self, timeout: float = REPLY_TIMEOUT_S) -> dict[str, Any]:
        """The next message from the server; ServerGone once its stdout has closed."""
        try:
            reply = self._replies.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no reply within {timeout}s; stderr:\n{self.stderr[-2000:]}") from None
        if reply is None:
            self._replies.put(None)  # stay closed for later calls
            raise ServerGone(self.stderr[-2000:])
        return reply

    def request(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """One request, waiting for its reply (nothing else may be in flight)."""
        request_id = self.next_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = dict(params)
        self.send(message)
        reply = self.recv()
        if reply.get("id") != request_id:
            raise RuntimeError(f"reply to another request: {reply}")
        return reply

    def initialize(self) -> None:
        reply = self.request(
            "initialize",
            {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
        )
        if "result" not in reply:
            raise RuntimeError(f"initialize failed: {reply}")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def call(self, tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """One tools/call, waiting for its reply: the raw JSON-RPC reply."""
        request_id = self.submit(tool, arguments)
        reply = self.recv()
        if reply.get("id") != request_id:
            raise RuntimeError(f"reply to another request: {reply}")
        return reply

    def kill(self) -> int:
        """SIGKILL the server and wait for it."""
        self.proc.send_signal(signal.SIGKILL)
        return self.proc.wait()

    def close(self, timeout: float = 30.0) -> int:
        """Close stdin and wait for the server to exit; kill it if it does not."""
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return -9


def tool_outcome(reply: Mapping[str, Any]) -> tuple[bool, Any]:
    """(True, result) for a successful tool reply; (False, what went wrong) for anything else."""
    result = reply.get("result")
    if not isinstance(result, dict):
        return False, reply.get("error") or reply
    envelope = result.get("structuredContent")
    if result.get("isError") or not isinstance(envelope, dict) or envelope.get("ok") is not True:
        if isinstance(envelope, dict) and "error" in envelope:
            return False, envelope["error"]
        return False, result.get("content") or result
    return True, envelope.get("result")


def error_code(reply: Mapping[str, Any]) -> str | None:
    """The memdb error code of an error reply (E_NOT_FOUND, ...), if it has one."""
    ok, detail = tool_outcome(reply)
    if ok or not isinstance(detail, dict):
        return None
    code = detail.get("code")
    return code if isinstance(code, str) else None
