"""Helpers shared by test modules (fixtures live in the conftest files)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mcp.client.stdio import StdioServerParameters

# Run with `python -c LAUNCHER FILE_SIZE READ_ONLY ARGS...`: execs `python ARGS...` under the
# fault. FILE_SIZE is a byte limit on every file the server writes ("" for none); READ_ONLY
# "1" takes root's power to write through permission bits away from it.
LAUNCHER = """
import ctypes, os, resource, signal, sys
file_size, read_only, *command = sys.argv[1:]
if read_only == "1" and os.geteuid() == 0:
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise SystemExit(f"launcher: cannot drop capability {capability} (errno {ctypes.get_errno()})")
if file_size:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(file_size), int(file_size)))
os.execv(sys.executable, [sys.executable, *command])
"""


START_MS = 1_700_000_000_000
SCOPE_A = "01HV7N8Q3Y2J6W5X4Z9A0B1C2D"

# Every profile's tools in the order its server lists them: the names clients are
# configured with.
PROFILE_TOOLS: dict[str, list[str]] = {
    "native": ["remember", "recall", "get", "update", "forget", "relate", "explore", "audit", "survey"],
    "memdb": [
        "store_memory",
        "store_memories",
        "get_memory",
        "delete_memory",
        "delete_memories",
        "update_memory",
        "search_memories",
        "recall",
        "create_relationship",
        "get_relationships",
        "delete_relationship",
        "memory_stats",
    ],
    "topodb": [
        "access_stats",
        "close_edge",
        "create_entity",
        "create_memory",
        "db_info",
        "find_by_prop",
        "get_changes",
        "get_node",
        "link",
        "remove_node",
        "search_memories",
        "search_vectors",
        "set_embedding",
        "set_node_props",
        "submit_batch",
        "traverse",
    ],
    "knowledge-graph": [
        "create_entities",
        "create_relations",
        "add_observations",
        "delete_entities",
        "delete_observations",
        "delete_relations",
        "read_graph",
        "search_nodes",
        "open_nodes",
        "search_observations",
        "get_neighbors",
        "find_path",
        "get_subgraph",
        "filter_by_type",
        "filter_relations",
        "filter_observations",
    ],
}


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Clock:
    """A settable clock, so recency and edge validity never depend on the wall clock.

    With `tick`, every reading advances by that many milliseconds.
    """

    def __init__(self, now: int = START_MS, tick: int = 0) -> None:
        self.now = now
        self.tick = tick

    def __call__(self) -> int:
        self.now += self.tick
        return self.now


# A reply slower than this means the server hung; no test waits on timing otherwise.
REPLY_TIMEOUT_S = 20.0


def serve_command(db: Path | str, profile: str = "memdb", *extra: str) -> list[str]:
    return [sys.executable, "-m", "mnemodb", "serve", "--profile", profile, "--db", str(db), *extra]


def server_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    # The servers' own settings never leak in from the environment the tests run in.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MEMDB_", "MNEMODB_", "TOPODB_")) and k != "MEMORY_FILE_PATH"
    }
    env.setdefault("MEMDB_LOG_LEVEL", "error")
    # A test that wants vectors names its embedder; the rest must not load a model.
    env.setdefault("MNEMODB_EMBEDDER", "none")
    env.update(extra or {})
    return env


def serve_params(
    db: Path | str, profile: str = "memdb", *extra: str, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> StdioServerParameters:
    """Parameters for the SDK's stdio client to spawn `mnemodb serve`."""
    command = serve_command(db, profile, *extra)
    return StdioServerParameters(command=command[0], args=command[1:], env=server_env(env), cwd=cwd)


class JsonRpcPeer:
    """The client side of JSON-RPC over a transport a subclass gives (`send`, `recv`):
    requests with their own ids, the MCP handshake, and tool calls."""

    _next_id = 1000

    def send(self, message: Any) -> None:
        raise NotImplementedError

    def recv(self) -> dict[str, Any]:
        raise NotImplementedError

    def request(self, method: str, params: Any = None) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        reply = self.recv()
        assert reply.get("id") == self._next_id, reply
        return reply

    def initialize(self, version: str = "2025-11-25") -> dict[str, Any]:
        reply = self.request(
            "initialize",
            {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "tests", "version": "1"}},
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def call(self, tool: str, arguments: Any = None) -> dict[str, Any]:
        params: dict[str, Any] = {"name": tool}
        if arguments is not None:
            params["arguments"] = arguments
        result: dict[str, Any] = self.request("tools/call", params)["result"]
        return result


class RawServer(JsonRpcPeer):
    """`mnemodb serve` driven line by line, for protocol-level tests a polite client cannot make."""

    def __init__(
        self,
        command: Sequence[str],
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        *,
        stderr_file: Path | None = None,
    ) -> None:
        """With `stderr_file`, stderr goes to that file rather than a pipe: the server writes
        a traceback before it answers, so once the answer is read the file already holds it
        (a pipe's reader thread might not have caught up yet)."""
        self.stderr_file = stderr_file
        with contextlib.ExitStack() as stack:
            err = stack.enter_context(stderr_file.open("wb")) if stderr_file is not None else subprocess.PIPE
            self.proc = subprocess.Popen(
                list(command),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                env=server_env(env),
                cwd=cwd,
            )
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._stderr: list[bytes] = []
        threading.Thread(target=self._pump, daemon=True).start()
        if stderr_file is None:
            threading.Thread(target=self._pump_stderr, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _pump_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line)

    @property
    def stderr(self) -> str:
        if self.stderr_file is not None:
            return self.stderr_file.read_bytes().decode(errors="replace")
        return b"".join(self._stderr).decode(errors="replace")

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: Any) -> None:
        self.send_raw(json.dumps(message).encode() + b"\n")

    def recv(self, timeout: float = REPLY_TIMEOUT_S) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no reply within {timeout}s; stderr:\n{self.stderr}") from None
        if line is None:
            raise AssertionError(f"server closed stdout; stderr:\n{self.stderr}")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def nothing_pending(self, wait: float = 0.3) -> bool:
        try:
            line = self._lines.get(timeout=wait)
        except queue.Empty:
            return True
        self._lines.put(line)
        return False

    def close(self, timeout: float = 10.0) -> int:
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("server did not exit after stdin closed") from None


def wait_for(condition: Callable[[], bool], seconds: float) -> bool:
    """Whether `condition` came true within `seconds`, polled: a guard against hanging, not
    a timing (the condition is what a test asserts)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return False
