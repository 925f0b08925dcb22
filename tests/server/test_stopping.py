"""Stopping `mnemodb serve`: one Ctrl-C in a terminal, SIGTERM, or stdin closing, whatever
the embedder is doing, and nothing acknowledged is lost.

In a terminal, Ctrl-C once printed "shutting down" and the server kept running: the thread
reading the terminal stayed blocked in its read, and interpreter shutdown waited for it
(a second Ctrl-C then ended it with a traceback). And a server whose model was loading
waited for the load. Each test here runs a real server process; the waits are hang guards
only, long enough that a server that stops at all never meets them.
"""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mnemodb.engine import Engine
from mnemodb.search.embedders import local_available
from support import server_env

GUARD_S = 30.0


def _in_a_terminal(command: list[str], env: dict[str, str]) -> tuple[int, bytes]:
    """Run `command` on a new pseudo-terminal, press Ctrl-C once it serves, and wait for it
    to exit: (exit status, everything it printed)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the server, with the terminal as stdin, stdout and stderr
        os.execve(command[0], command, env)
    printed = b""
    deadline = time.monotonic() + GUARD_S
    pressed = False
    status: int | None = None
    while status is None:
        assert time.monotonic() < deadline, f"still running after {GUARD_S} s: {printed.decode(errors='replace')}"
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                printed += os.read(fd, 65536)
            except OSError:  # the terminal closes when the server exits
                time.sleep(0.05)
        # Said once the server takes signals (on stdio), or listens (over HTTP, later).
        if not pressed and (b"profile on stdio" in printed or b"listening on" in printed):
            os.write(fd, b"\x03")
            pressed = True
        done, raw = os.waitpid(pid, os.WNOHANG)
        if done:
            status = os.waitstatus_to_exitcode(raw)
    os.close(fd)
    return status, printed


@pytest.mark.parametrize("transport", [[], ["--http", "--port", "0"]], ids=["stdio", "http"])
def test_one_ctrl_c_in_a_terminal_stops_the_server(tmp_path: Path, transport: list[str]) -> None:
    command = [sys.executable, "-m", "mnemodb", "serve", "--db", str(tmp_path / "memory.db"), *transport]
    status, printed = _in_a_terminal(command, server_env({"MNEMODB_LOG_LEVEL": "info", "MNEMODB_EMBEDDER": "none"}))
    text = printed.decode(errors="replace")
    assert status == 0, text
    assert "Received SIGINT, shutting down" in text
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text


def _call(proc: subprocess.Popen[bytes], message: dict[str, object]) -> dict[str, object]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()
    if "id" not in message:
        return {}
    reply: dict[str, object] = json.loads(proc.stdout.readline())
    return reply


@pytest.mark.skipif(not local_available(), reason="the local embedding model is not installed")
@pytest.mark.parametrize("how", ["stdin-closes", "sigterm"])
def test_a_server_stops_while_its_model_loads_and_keeps_every_write(tmp_path: Path, how: str) -> None:
    """A memory written without an embedder makes the server load the model at start; the
    server is stopped at once, while that runs, right after acknowledging a write."""
    db = tmp_path / "memory.db"
    with Engine.open(str(db)) as engine:
        engine.memories.store("written before, without an embedder")
    command = [sys.executable, "-m", "mnemodb", "serve", "--db", str(db), "--profile", "memdb"]
    env = server_env({"MNEMODB_EMBEDDER": "local", "MNEMODB_LOG_LEVEL": "info"})
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        assert "result" in _call(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        _call(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        stored = _call(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {
                    "name": "store_memory",
                    "arguments": {"content": "acknowledged while loading", "tags": ["t"]},
                },
            },
        )
        result = stored["result"]
        assert isinstance(result, dict) and result["isError"] is False
        if how == "sigterm":
            proc.send_signal(signal.SIGTERM)
        else:
            assert proc.stdin is not None
            proc.stdin.close()
        assert proc.wait(timeout=GUARD_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.stderr is not None
    log = proc.stderr.read().decode(errors="replace")
    assert "Traceback" not in log, log
    with Engine.open(str(db)) as engine:
        contents = sorted(h.memory.content for h in engine.memories.search("written acknowledged"))
    assert contents == ["acknowledged while loading", "written before, without an embedder"]
