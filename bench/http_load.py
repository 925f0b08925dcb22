"""`mnemodb serve --http` under load: many concurrent clients on one server, then a correctness check.

The bench starts `mnemodb serve --http --port 0` (the native profile unless `--profile
memdb`) on a fresh temporary SQLite file and drives it with N client threads at once,
each with its own keep-alive HTTP connection. The clients speak raw JSON-RPC: one POST
to /mcp per `tools/call`, with no `initialize` (the server is stateless, so a tool call
needs no session). Each client makes a realistic mix of calls on memories of its own
(remember, recall, get, update, forget, relate, survey), plus writes that race with the
other clients' on a small pool of shared memories and relations. It checks every answer
as it goes: each read of a memory it has written must see that write, each read of one
it has forgotten or replaced must not.

1. Latency: at each of `--clients` (default 1, 10 and 50) a fresh server and database,
   every client making `--ops` calls; per level the throughput (calls/s), p50 and p95
   latency and the error replies, and each tool's p50 and p95.
2. Correctness (also the end of a default run): `--check-clients` clients x
   `--check-ops` calls (50 x 500), then the file is opened with `Engine` after the server
   has stopped: zero error replies, every acknowledged write there exactly once, nothing
   forgotten or replaced back, each shared memory and relation created exactly once, every
   read of a client's own writes right, the change log gapless (seqs 1..N) and holding
   exactly the acknowledged writes (with the native profile: in each client's own order),
   and `PRAGMA integrity_check` ok. Every latency level gets the same check.

`--servers 2` puts two server processes on the one file, and each client alternates its
calls between them, so a read often goes to the process that did not take the write.

Usage: python bench/http_load.py [--clients 1,10,50] [--ops 200] [--check-clients 50]
       [--check-ops 500] [--profile native|memdb] [--servers 1] [--json PATH]
Exit status 1 on any error reply, failed check or server error.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import random
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from measure import p50, p95, read_back
from mnemodb import __version__ as MNEMODB_VERSION
from mnemodb.engine import content_hash

PROTOCOL_VERSION = "2025-11-25"
PROFILES = ("native", "memdb")
START_TIMEOUT_S = 60.0
REPLY_TIMEOUT_S = 60.0
"""A reply slower than this counts as a hung call."""
STOP_TIMEOUT_S = 30.0
LISTENING = re.compile(r"listening on http://(\S+):(\d+)/mcp")
SHARED = "shared"
SHARED_POOL = 20
SHARED_LINKED = 6
"""The first few shared memories are related to each other by every client."""
SHARED_LINK = "shared_link"
OWN_LINK = "next"
NOT_FOUND = "E_NOT_FOUND"
WORDS = tuple(
    a + b
    for a in ("ka", "lo", "mi", "re", "su", "ta", "vo", "ne")
    for b in ("ber", "dan", "fis", "gol", "lum", "nor", "pex", "tor")
)
"""The vocabulary of the memories' text: 64 made-up words."""


# -- the servers ---------------------------------------------------------------------------------------


def serve_env(embedder: str) -> dict[str, str]:
    """The environment without the caller's own MEMDB_/MNEMODB_ settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMDB_", "MNEMODB_", "TOPODB_"))}
    env.pop("MEMORY_FILE_PATH", None)
    env["MNEMODB_EMBEDDER"] = embedder
    return env


class HttpServe:
    """One `mnemodb serve --http --port 0` process; `host` and `port` once it listens."""

    def __init__(self, db: Path, profile: str, host: str, embedder: str) -> None:
        command = [sys.executable, "-m", "mnemodb", "serve", "--profile", profile, "--db", str(db)]
        command += ["--http", "--host", host, "--port", "0", "--log-level", "info"]
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=serve_env(embedder),
        )
        self.lines: list[str] = []
        self.host = host
        self.port = 0
        self._found = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._found.wait(0.05):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                self.proc.wait()
                raise RuntimeError(f"the server did not start (exit {self.proc.returncode}):\n{self.stderr}")

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            match = LISTENING.search(line)
            if match and not self._found.is_set():
                self.port = int(match.group(2))
                self._found.set()

    @property
    def stderr(self) -> str:
        return "".join(self.lines)

    def problems(self) -> list[str]:
        """Log lines at error level or above, and tracebacks."""
        return [
            line.rstrip() for line in self.lines if line.startswith(("[ERROR]", "[CRITICAL]")) or "Traceback" in line
        ]

    def warnings(self) -> list[str]:
        return [line.rstrip() for line in self.lines if line.startswith("[WARNING]")]

    def stop(self) -> int:
        """SIGTERM, then the exit status (a server that does not stop in time is killed: -9)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                return -9
        self._reader.join(timeout=5)
        return self.proc.returncode


# -- the wire ------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """One tool call's answer: `value` is the structured result of a success."""

    ok: bool
    value: Any = None
    code: str | None = None
    """The memdb profile's error code (E_NOT_FOUND, ...), when it has one."""
    text: str = ""
    """What went wrong, for an error."""
    transport: bool = False
    """The call failed below MCP: no HTTP answer, a status other than 200, no JSON-RPC reply."""


class Wire:
    """One client's keep-alive connections, one per server; calls alternate between them."""

    def __init__(self, servers: Sequence[tuple[str, int]], *, keep_alive: bool = True) -> None:
        self.servers = list(servers)
        self.keep_alive = keep_alive
        self.connections: list[http.client.HTTPConnection | None] = [None] * len(servers)
        self.turn = 0
        self.ids = 0

    def _host(self, k: int) -> str:
        host, port = self.servers[k]
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    def connection(self, k: int) -> http.client.HTTPConnection:
        connection = self.connections[k]
        if connection is None:
            host, port = self.servers[k]
            connection = http.client.HTTPConnection(host, port, timeout=REPLY_TIMEOUT_S)
            connection.connect()
            connection.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.connections[k] = connection
        return connection

    def connect(self) -> None:
        if self.keep_alive:
            for k in range(len(self.servers)):
                self.connection(k)

    def drop(self, k: int) -> None:
        connection, self.connections[k] = self.connections[k], None
        if connection is not None:
            connection.close()

    def close(self) -> None:
        for connection in self.connections:
            if connection is not None:
                connection.close()
        self.connections = [None] * len(self.servers)

    def call(self, tool: str, arguments: Mapping[str, Any]) -> tuple[Any, float]:
        """POST one tools/call: (the decoded JSON-RPC reply or an Outcome saying why there is
        none, the round trip in seconds). The round trip ends once the body is read."""
        k = self.turn % len(self.servers)
        self.turn += 1
        self.ids += 1
        message = {
            "jsonrpc": "2.0",
            "id": self.ids,
            "method": "tools/call",
            "params": {"name": tool, "arguments": dict(arguments)},
        }
        body = json.dumps(message, ensure_ascii=False).encode()
        headers = {
            "Host": self._host(k),
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL_VERSION,
        }
        if not self.keep_alive:
            headers["Connection"] = "close"
        started = time.perf_counter()
        try:
            connection = self.connection(k)
            connection.request("POST", "/mcp", body, headers)
            response = connection.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as exc:
            elapsed = time.perf_counter() - started
            self.drop(k)  # a fresh connection for the next call
            return Outcome(False, text=f"no HTTP answer: {type(exc).__name__}: {exc}", transport=True), elapsed
        elapsed = time.perf_counter() - started
        if not self.keep_alive or (response.getheader("Connection") or "").lower() == "close":
            self.drop(k)
        if response.status != 200:
            text = f"HTTP {response.status}: {data[:300].decode(errors='replace')}"
            return Outcome(False, text=text, transport=True), elapsed
        try:
            reply = json.loads(data)
        except ValueError:
            return Outcome(False, text=f"not JSON: {data[:300]!r}", transport=True), elapsed
        if not isinstance(reply, dict) or reply.get("id") != self.ids:
            return Outcome(
                False, text=f"not the reply to request {self.ids}: {str(reply)[:300]}", transport=True
            ), elapsed
        return reply, elapsed


def outcome(reply: Mapping[str, Any], profile: str) -> Outcome:
    """What a JSON-RPC reply to a tools/call says."""
    if "error" in reply:
        return Outcome(False, text=f"JSON-RPC error: {reply['error']}", transport=True)
    result = reply.get("result")
    if not isinstance(result, dict):
        return Outcome(False, text=f"no result: {str(reply)[:300]}", transport=True)
    structured = result.get("structuredContent")
    content = result.get("content") or [{}]
    text = str(content[0].get("text", ""))[:300] if isinstance(content[0], dict) else ""
    if profile == "memdb":
        if not isinstance(structured, dict):
            return Outcome(False, text=f"no structured content: {text}")
        if structured.get("ok") is True and not result.get("isError"):
            return Outcome(True, structured.get("result"))
        error = structured.get("error")
        code = error.get("code") if isinstance(error, dict) else None
        return Outcome(False, code=code if isinstance(code, str) else None, text=str(error or text)[:300])
    if result.get("isError"):
        return Outcome(False, text=text)
    if not isinstance(structured, dict):
        return Outcome(False, text=f"no structured content: {text}")
    return Outcome(True, structured)


# -- one client ----------------------------------------------------------------------------------------


_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def client_scope(seed: int, index: int) -> str:
    """A fixed ULID per (seed, client): the client's own scope."""
    value = (1_700_000_000_000 << 80) | ((seed % (1 << 40)) << 40) | index
    return "".join(_CROCKFORD[(value >> (5 * i)) & 31] for i in reversed(range(26)))


@dataclass
class Mem:
    id: str
    """The native profile's ULID; with memdb, the content hash (its tools name memories by hash)."""
    content: str
    token: str
    """A word only this memory's content holds."""

    @property
    def hash(self) -> str:
        return content_hash(self.content)


@dataclass
class ClientLog:
    """What one client saw acknowledged, its latencies and everything that went wrong."""

    index: int
    scope: str
    """Where its own memories go: its own scope (native), or the shared one (memdb)."""
    live: dict[str, Mem] = field(default_factory=dict)
    """Own memories that must exist at the end, by id."""
    gone_ids: set[str] = field(default_factory=set)
    """Ids of own memories forgotten: they must not exist at the end."""
    gone: dict[str, str] = field(default_factory=dict)
    """Hashes of contents forgotten or replaced by an update -> their token: never found again."""
    uncertain: set[str] = field(default_factory=set)
    """Hashes of contents whose write failed (it may or may not have happened): not checked."""
    links: dict[tuple[str, str], str] = field(default_factory=dict)
    """(from id, to id) of own open relations -> relation id."""
    shared: dict[str, tuple[str, bool]] = field(default_factory=dict)
    """Shared content -> (its id, whether this client's store created it)."""
    shared_links: dict[tuple[int, int], tuple[str, bool]] = field(default_factory=dict)
    """(from, to) index in the shared pool -> (relation id, whether this client created it)."""
    ledger: list[tuple[str, str]] = field(default_factory=list)
    """The change-log entries its acknowledged writes in its scope must have made, in order."""
    ledger_exact: bool = True
    """False once a write failed: its entries are then unknown."""
    acknowledged: Counter[str] = field(default_factory=Counter)
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: list[str] = field(default_factory=list)
    transport_errors: int = 0
    tool_errors: int = 0
    ryw_failures: list[str] = field(default_factory=list)
    ryw_checks: int = 0
    ops: int = 0


class Budget(Exception):
    """The client has made its calls."""


class Client:
    """Drives one server (or several, alternating) with a mix of calls, checking each answer."""

    profile = "native"

    def __init__(self, wire: Wire, index: int, seed: int, ops: int, scope: str) -> None:
        self.wire = wire
        self.log = ClientLog(index, scope)
        self.rng = random.Random(seed * 7919 + index)
        self.index = index
        self.seed = seed
        self.budget = ops
        self.serial = 0

    # -- plumbing ---------------------------------------------------------------------------------------

    def call(self, tool: str, arguments: Mapping[str, Any], *, missing_ok: bool = False) -> Outcome:
        """One call; an error answer is logged unless it is a not-found that `missing_ok` allows."""
        if self.log.ops >= self.budget:
            raise Budget
        self.log.ops += 1
        reply, elapsed = self.wire.call(tool, arguments)
        self.log.latencies[tool].append(elapsed)
        answer = reply if isinstance(reply, Outcome) else outcome(reply, self.profile)
        if not answer.ok and not (missing_ok and answer.code == NOT_FOUND):
            if answer.transport:
                self.log.transport_errors += 1
            else:
                self.log.tool_errors += 1
            self.log.errors.append(f"client {self.index} {tool}: {answer.text}")
        return answer

    def fail(self, text: str) -> None:
        """A reply that came back but said something wrong."""
        self.log.errors.append(f"client {self.index}: {text}")

    def ryw(self, ok: bool, text: str) -> None:
        self.log.ryw_checks += 1
        if not ok:
            self.log.ryw_failures.append(f"client {self.index}: {text}")

    def fresh(self) -> tuple[str, str]:
        """New content no other client or call writes, and the token only it holds."""
        self.serial += 1
        token = f"tok{self.index}q{self.serial}z{self.seed}"
        words = " ".join(self.rng.choices(WORDS, k=self.rng.randint(6, 14)))
        return f"client {self.index} note {self.serial}: {words} {token}", token

    def pick(self) -> Mem | None:
        return self.log.live[self.rng.choice(sorted(self.log.live))] if self.log.live else None

    def write_failed(self, *contents: str) -> None:
        self.log.uncertain.update(content_hash(c) for c in contents)
        self.log.ledger_exact = False

    def lost_track(self, mem: Mem) -> None:
        """A write to `mem` failed: whether it happened is unknown, so it is no longer checked."""
        self.log.live.pop(mem.id, None)
        self.log.uncertain.add(mem.hash)
        self.log.links = {k: v for k, v in self.log.links.items() if mem.id not in k}
        self.log.ledger_exact = False

    # -- the profile's tools (overridden for memdb) ----------------------------------------------------

    def api_remember(
        self, contents: Sequence[str], scope: str | None, tags: Sequence[str]
    ) -> list[tuple[str, str]] | None:
        """Store memories: [(id, status)] with status created or existing; None on failure."""
        arguments: dict[str, Any] = {"memories": [{"content": c, "tags": list(tags)} for c in contents]}
        if scope is not None:
            arguments["scope"] = scope
        answer = self.call("remember", arguments)
        if not answer.ok:
            return None
        out = []
        for content, stored in zip(contents, answer.value["memories"], strict=True):
            if stored.get("hash") != content_hash(content):
                self.fail(f"remember {content!r} answered {stored}")
            out.append((str(stored.get("id")), str(stored.get("status"))))
        return out

    def api_get(self, ref: str) -> tuple[str, str] | bool | None:
        """(content, hash) of a memory; False when it is not there; None when the call failed."""
        answer = self.call("get", {"refs": [ref], "scopes": [self.log.scope]})
        if not answer.ok:
            return None
        [item] = answer.value["items"]
        if item.get("error") == "not found":
            return False
        return str(item.get("text")), str(item.get("hash"))

    def api_find(self, token: str) -> list[str] | None:
        """Ids of the memories a search for `token` in the client's scope returns."""
        answer = self.call("recall", {"query": token, "scopes": [self.log.scope], "kinds": ["memory"]})
        return [str(i["id"]) for i in answer.value["items"]] if answer.ok else None

    def api_search(self) -> None:
        query = " ".join(self.rng.sample(WORDS, self.rng.randint(1, 2)))
        answer = self.call("recall", {"query": query, "scopes": [self.log.scope, SHARED]})
        if answer.ok and len(answer.value["items"]) > 10:
            self.fail(f"recall {query!r} returned {len(answer.value['items'])} items, its limit is 10")

    def api_update(self, mem: Mem, content: str) -> str | None:
        """Replace a memory's content: its id afterwards, or None on failure."""
        answer = self.call("update", {"ref": mem.id, "content": content, "scopes": [self.log.scope]})
        if not answer.ok:
            return None
        item = answer.value["item"]
        if (
            item.get("id") != mem.id
            or item.get("hash") != content_hash(content)
            or answer.value["changed"] != ["content"]
        ):
            self.fail(f"update of {mem.id} answered {answer.value}")
        self.log.ledger.append(("set_props", mem.id))
        return mem.id

    def api_tag(self, mem: Mem) -> bool:
        tag = f"t{self.serial}x{self.rng.randrange(1000)}"
        answer = self.call("update", {"ref": mem.id, "add_tags": [tag], "scopes": [self.log.scope]})
        if not answer.ok:
            return False
        if tag not in answer.value["item"].get("tags", []) or answer.value["changed"] != ["tags"]:
            self.fail(f"adding tag {tag} to {mem.id} answered {answer.value}")
        self.log.ledger.append(("update_node", mem.id))
        return True

    def api_forget(self, mem: Mem) -> bool | None:
        """True once forgotten; None on failure."""
        answer = self.call("forget", {"refs": [mem.id], "scopes": [self.log.scope]})
        if not answer.ok:
            return None
        [result] = answer.value["results"]
        if result.get("forgotten") is not True or result.get("id") != mem.id:
            self.fail(f"forget {mem.id} answered {result}")
            return None
        self.log.ledger.append(("remove_node", mem.id))
        return True

    def api_relate(self, src: str, dst: str, kind: str, scope: str | None) -> tuple[str, bool] | None:
        """(relation id, whether it is new); None on failure."""
        arguments: dict[str, Any] = {"add": [{"from": src, "to": dst, "type": kind}]}
        if scope is not None:
            arguments["scope"] = scope
        answer = self.call("relate", arguments)
        if not answer.ok:
            return None
        [added] = answer.value["added"]
        if (added.get("from"), added.get("to"), added.get("type")) != (src, dst, kind):
            self.fail(f"relate {src} -> {dst} answered {added}")
        return str(added["id"]), bool(added["new"])

    def api_survey(self, own: bool) -> tuple[int, int | None] | None:
        """(memories, relations) in the client's own scope (or the shared one); None on failure."""
        answer = self.call("survey", {"scopes": [self.log.scope]} if own else {})
        return (int(answer.value["memories"]), int(answer.value["relations"])) if answer.ok else None

    # -- writes -----------------------------------------------------------------------------------------

    def remember(self, count: int = 1) -> None:
        items = [self.fresh() for _ in range(count)]
        tags = [f"c{self.index}", "batch" if count > 1 else "bench"]
        stored = self.api_remember([c for c, _ in items], self.own_scope(), tags)
        if stored is None:
            self.write_failed(*(c for c, _ in items))
            return
        mems = []
        for (content, token), (memory_id, status) in zip(items, stored, strict=True):
            if status != "created":
                self.fail(f"new content {content!r} stored with status {status}")
                self.write_failed(content)
                continue
            mem = Mem(memory_id, content, token)
            self.log.live[memory_id] = mem
            self.log.ledger.append(("create_node", memory_id))
            self.log.acknowledged["memories stored"] += 1
            mems.append(mem)
        if mems:
            self.read_back(self.rng.choice(mems))

    def own_scope(self) -> str | None:
        return self.log.scope

    def read_back(self, mem: Mem) -> None:
        """Right after a write: read it back, by id or by search (at random)."""
        if self.rng.random() < 0.5:
            self.read_own(mem)
        else:
            self.find_own(mem)

    def update(self) -> None:
        mem = self.pick()
        if mem is None:
            self.remember()
            return
        content, token = self.fresh()
        new_id = self.api_update(mem, content)
        if new_id is None:
            self.lost_track(mem)
            self.write_failed(content)
            return
        self.log.acknowledged["memories updated"] += 1
        del self.log.live[mem.id]
        self.log.gone[mem.hash] = mem.token
        fresh = Mem(new_id, content, token)
        self.log.live[new_id] = fresh
        if new_id != mem.id:  # memdb: hashes are the references, so relations are keyed anew
            self.log.links = {
                (new_id if a == mem.id else a, new_id if b == mem.id else b): e for (a, b), e in self.log.links.items()
            }
        self.read_own(fresh)

    def tag(self) -> None:
        mem = self.pick()
        if mem is None:
            return
        if self.api_tag(mem):
            self.log.acknowledged["memories tagged"] += 1
        else:
            self.lost_track(mem)

    def forget(self) -> None:
        mem = self.pick()
        if mem is None:
            return
        done = self.api_forget(mem)
        if done is None:
            self.lost_track(mem)
            return
        self.log.acknowledged["memories forgotten"] += 1
        del self.log.live[mem.id]
        self.log.gone_ids.add(mem.id)
        self.log.gone[mem.hash] = mem.token
        self.log.links = {k: v for k, v in self.log.links.items() if mem.id not in k}
        if self.rng.random() < 0.5:
            self.read_gone(mem.hash)
        else:
            self.find_gone(mem.hash)

    def relate_own(self) -> None:
        if len(self.log.live) < 2:
            self.remember()
            return
        # Now and then (3 in 10) a pair already related, which must come back unchanged.
        if self.log.links and self.rng.random() < 0.3:
            src, dst = self.rng.choice(sorted(self.log.links))
        else:
            src, dst = self.rng.sample(sorted(self.log.live), 2)
        result = self.api_relate(src, dst, OWN_LINK, self.own_scope())
        known = self.log.links.get((src, dst))
        if result is None:
            if known is None:
                self.log.ledger_exact = False
            return
        edge, new = result
        if new == (known is not None) or (known is not None and known != edge):
            self.fail(f"relation {src} -> {dst} answered id {edge} new {new}; known {known}")
        if new:
            self.log.ledger.append(("create_edge", edge))
            self.log.acknowledged["relations created"] += 1
        self.log.links[(src, dst)] = edge

    def shared_content(self, j: int) -> str:
        return f"shared memory {j} of run {self.seed}: {WORDS[j]} {WORDS[-1 - j]}"

    def store_shared(self, j: int | None = None) -> None:
        j = self.rng.randrange(SHARED_POOL) if j is None else j
        content = self.shared_content(j)
        stored = self.api_remember([content], None, [SHARED])
        if stored is None:
            return
        [(memory_id, status)] = stored
        if status not in ("created", "existing"):
            self.fail(f"shared content {j} stored with status {status}")
        known = self.log.shared.get(content)
        if known is not None and (status == "created" or known[0] != memory_id):
            self.fail(f"shared content {j} stored again: {memory_id} {status}, first {known}")
        if known is None:
            self.log.shared[content] = (memory_id, status == "created")
            self.log.acknowledged["shared stores"] += 1

    def relate_shared(self) -> None:
        a, b = self.rng.sample(range(SHARED_LINKED), 2)
        for j in (a, b):
            if self.shared_content(j) not in self.log.shared:
                self.store_shared(j)
        ends = [self.log.shared.get(self.shared_content(j)) for j in (a, b)]
        if ends[0] is None or ends[1] is None:
            return
        result = self.api_relate(ends[0][0], ends[1][0], SHARED_LINK, None)
        if result is None:
            return
        known = self.log.shared_links.get((a, b))
        if known is not None and (result[1] or result[0] != known[0]):
            self.fail(f"shared relation {a} -> {b} answered {result}, first {known}")
        if known is None:
            self.log.shared_links[(a, b)] = result

    # -- reads ------------------------------------------------------------------------------------------

    def read_own(self, mem: Mem | None = None) -> None:
        mem = mem or self.pick()
        if mem is None:
            return
        found = self.api_get(mem.id)
        if found is None:
            return
        self.ryw(found == (mem.content, mem.hash), f"get {mem.id} after its acknowledged write answered {found}")

    def find_own(self, mem: Mem | None = None) -> None:
        mem = mem or self.pick()
        if mem is None:
            return
        found = self.api_find(mem.token)
        if found is None:
            return
        self.ryw(found == [mem.id], f"recall {mem.token} after its acknowledged write found {found}, not {mem.id}")

    def read_gone(self, digest: str | None = None) -> None:
        if digest is None:
            if not self.log.gone:
                return
            digest = self.rng.choice(sorted(self.log.gone))
        found = self.api_get(digest)
        if found is None:
            return
        self.ryw(found is False, f"get {digest} after forgetting or replacing it answered {found}")

    def find_gone(self, digest: str) -> None:
        found = self.api_find(self.log.gone[digest])
        if found is None:
            return
        self.ryw(found == [], f"recall {self.log.gone[digest]} after forgetting or replacing it found {found}")

    def survey_own(self) -> None:
        counts = self.api_survey(True)
        if counts is None:
            return
        memories, relations = counts
        if self.log.ledger_exact:
            expected = (len(self.log.live), len(self.log.links))
            self.ryw((memories, relations) == expected, f"survey counts {counts}, this client holds {expected}")

    def survey_shared(self) -> None:
        counts = self.api_survey(False)
        if counts is not None:
            self.ryw(counts[0] >= len(self.log.shared), f"survey of shared counts {counts}, fewer than seen")

    # -- the mix ----------------------------------------------------------------------------------------

    def actions(self) -> list[tuple[Callable[[], None], int]]:
        return [
            (self.remember, 14),
            (lambda: self.remember(5), 4),
            (self.api_search, 12),
            (self.find_own, 8),
            (self.read_own, 10),
            (self.read_gone, 3),
            (self.update, 6),
            (self.tag, 2),
            (self.forget, 5),
            (self.relate_own, 6),
            (self.store_shared, 4),
            (self.relate_shared, 3),
            (self.survey_own, 4),
            (self.survey_shared, 1),
        ]

    def run(self) -> None:
        calls, weights = zip(*self.actions(), strict=True)
        try:
            while True:
                self.rng.choices(calls, weights)[0]()
        except Budget:
            return
        except Exception:
            self.log.errors.append(f"client {self.index}: {traceback.format_exc()}")


class MemdbClient(Client):
    """The same mix through the memdb profile's tools: one scope for all, memories by hash."""

    profile = "memdb"

    def own_scope(self) -> str | None:
        return None

    def api_remember(
        self, contents: Sequence[str], scope: str | None, tags: Sequence[str]
    ) -> list[tuple[str, str]] | None:
        if len(contents) == 1:
            answer = self.call("store_memory", {"content": contents[0], "tags": list(tags)})
            results = [answer.value] if answer.ok else []
        else:
            answer = self.call("store_memories", {"items": [{"content": c, "tags": list(tags)} for c in contents]})
            results = answer.value["results"] if answer.ok else []
        if not answer.ok:
            return None
        out = []
        for content, stored in zip(contents, results, strict=True):
            if stored.get("hash") != content_hash(content):
                self.fail(f"storing {content!r} answered {stored}")
            out.append((content_hash(content), "created" if stored.get("isNew") else "existing"))
        return out

    def api_get(self, ref: str) -> tuple[str, str] | bool | None:
        answer = self.call("get_memory", {"hash": ref}, missing_ok=True)
        if answer.code == NOT_FOUND:
            return False
        if not answer.ok:
            return None
        return str(answer.value.get("content")), str(answer.value.get("hash"))

    def api_find(self, token: str) -> list[str] | None:
        answer = self.call("search_memories", {"query": token})
        return [str(hit["hash"]) for hit in answer.value] if answer.ok else None

    def api_search(self) -> None:
        query = " ".join(self.rng.sample(WORDS, self.rng.randint(1, 2)))
        self.call("search_memories", {"query": query})

    def api_update(self, mem: Mem, content: str) -> str | None:
        answer = self.call("update_memory", {"hash": mem.hash, "content": content})
        if not answer.ok:
            return None
        if answer.value.get("oldHash") != mem.hash or answer.value.get("newHash") != content_hash(content):
            self.fail(f"update of {mem.hash} answered {answer.value}")
        self.log.ledger.append(("update_node", ""))
        return content_hash(content)

    def api_tag(self, mem: Mem) -> bool:
        return True  # memdb replaces tags only with the content: not in its mix

    def api_forget(self, mem: Mem) -> bool | None:
        answer = self.call("delete_memory", {"hash": mem.hash})
        if not answer.ok:
            return None
        self.log.ledger.append(("remove_node", ""))
        return True

    def api_relate(self, src: str, dst: str, kind: str, scope: str | None) -> tuple[str, bool] | None:
        answer = self.call("create_relationship", {"from_hash": src, "to_hash": dst, "relation_type": kind})
        if not answer.ok:
            return None
        return str(answer.value["id"]), bool(answer.value["isNew"])

    def api_survey(self, own: bool) -> tuple[int, int | None] | None:
        answer = self.call("memory_stats", {})
        return (int(answer.value["memoryCount"]), None) if answer.ok else None

    def find_own(self, mem: Mem | None = None) -> None:
        mem = mem or self.pick()
        if mem is None:
            return
        found = self.api_find(mem.token)
        if found is not None:
            self.ryw(found == [mem.hash], f"search {mem.token} after its acknowledged write found {found}")

    def survey_own(self) -> None:
        counts = self.api_survey(True)
        if counts is not None:
            self.ryw(counts[0] >= len(self.log.live), f"memory_stats counts {counts[0]}, this client holds more")

    def actions(self) -> list[tuple[Callable[[], None], int]]:
        return [(a, w) for a, w in super().actions() if a not in (self.tag, self.survey_shared)]


# -- the final check -----------------------------------------------------------------------------------


@dataclass
class Verdict:
    lost: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    resurrected: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    relations: list[str] = field(default_factory=list)
    change_log: list[str] = field(default_factory=list)
    integrity: list[str] = field(default_factory=list)
    changes: int = 0
    memories: int = 0
    edges: int = 0

    def failures(self) -> list[str]:
        return [
            *self.lost,
            *self.wrong,
            *self.duplicated,
            *self.resurrected,
            *self.unexpected,
            *self.relations,
            *self.change_log,
            *self.integrity,
        ]


def verify(db: Path, logs: Sequence[ClientLog], profile: str) -> Verdict:
    """Read the file the servers wrote (they have stopped) and hold it against the clients' logs."""
    verdict = Verdict()
    file = read_back(db)
    verdict.integrity += file.integrity
    if file.gap_text:
        verdict.change_log.append(file.gap_text)
    changes, records = file.changes, file.records
    verdict.changes = len(changes)

    native = profile == "native"
    memories = [r for r in records if r["type"] == "node" and "memory" in r]
    verdict.memories = len(memories)
    edges = [r for r in records if r["type"] == "edge" and r.get("valid_to") is None]
    verdict.edges = len(edges)

    def key(record: Mapping[str, Any]) -> str:
        return str(record["id"] if native else record["memory"]["hash"])

    by_place = Counter((r["scope"], r["memory"]["hash"]) for r in memories)
    verdict.duplicated += [f"{scope} {digest} stored {n} times" for (scope, digest), n in by_place.items() if n > 1]
    by_id = {key(r): r for r in memories}

    # Each client's own memories, ids, relations and (native) change-log entries.
    expected_hashes: set[tuple[str, str]] = set()
    uncertain: set[tuple[str, str]] = set()
    for log in logs:
        for mem in log.live.values():
            expected_hashes.add((log.scope, mem.hash))
            record = by_id.get(mem.id)
            if record is None:
                verdict.lost.append(f"client {log.index}: {mem.id} ({mem.content!r}) is missing")
            elif (record["scope"], record["memory"]["hash"], record["memory"]["content"]) != (
                log.scope,
                mem.hash,
                mem.content,
            ):
                verdict.wrong.append(f"client {log.index}: {mem.id} holds {record['memory']['content']!r}")
        uncertain |= {(log.scope, h) for h in log.uncertain}
        verdict.resurrected += [f"client {log.index}: forgotten {i} is back" for i in log.gone_ids if i in by_id]
        back = [h for h in log.gone if (log.scope, h) in by_place and (log.scope, h) not in expected_hashes]
        verdict.resurrected += [f"client {log.index}: forgotten or replaced content {h} is back" for h in back]
    shared_expected = {(SHARED, content_hash(c)) for log in logs for c in log.shared}
    expected_hashes |= shared_expected
    verdict.unexpected += [f"{s} {h} never acknowledged" for s, h in set(by_place) - expected_hashes - uncertain]

    # Shared memories and relations: one each, made by one client, every client given the same id.
    for content in sorted({c for log in logs for c in log.shared}):
        seen = [log.shared[content] for log in logs if content in log.shared]
        created = sum(1 for _, made in seen if made)
        ids = {i for i, _ in seen}
        if created != 1 or len(ids) != 1 or by_place.get((SHARED, content_hash(content)), 0) != 1:
            verdict.duplicated.append(f"shared {content!r}: created {created} times, ids {sorted(ids)}")
    open_edges = Counter(
        (r["scope"], str(r["id"] if native else r["pk"]), r["edge_type"]) for r in edges if r["scope"] is not None
    )
    edge_ids = {(scope, i) for scope, i, _ in open_edges}
    for pair in sorted({p for log in logs for p in log.shared_links}):
        seen_links = [log.shared_links[pair] for log in logs if pair in log.shared_links]
        created = sum(1 for _, made in seen_links if made)
        ids = {i for i, _ in seen_links}
        stored = sum(1 for r in edges if str(r["id"] if native else r["pk"]) in ids)
        if (created, len(ids), stored) != (1, 1, 1):
            verdict.relations.append(
                f"shared relation {pair}: created {created} times, ids {sorted(ids)}, {stored} open"
            )
    for log in logs:
        missing = [e for e in log.links.values() if (log.scope, e) not in edge_ids]
        verdict.relations += [f"client {log.index}: relation {e} is missing" for e in missing]
    own_edges = sum(n for (_, _, kind), n in open_edges.items() if kind == OWN_LINK)
    own_expected = sum(len(log.links) for log in logs)
    if own_edges != own_expected and all(log.ledger_exact for log in logs):
        verdict.relations.append(f"{own_edges} own relations are open, {own_expected} acknowledged and not forgotten")

    # The change log holds exactly the acknowledged writes: by scope and in each client's order (native),
    # or as counts of each kind of change (memdb, whose replies name no node ids).
    shared_changes: Counter[tuple[str, str]] = Counter()
    for log in logs:
        shared_changes.update(("create_node", i) for i, made in log.shared.values() if made)
    for log in logs:
        shared_changes.update(("create_edge", i) for (_, _), (i, made) in log.shared_links.items() if made)
    if native:
        by_scope: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for change in changes:
            by_scope[change.scope or ""].append((change.op, change.target or ""))
        for log in logs:
            if log.ledger_exact and by_scope.get(log.scope, []) != log.ledger:
                got = by_scope.get(log.scope, [])
                first = next((i for i, (a, b) in enumerate(zip(got, log.ledger, strict=False)) if a != b), None)
                verdict.change_log.append(
                    f"client {log.index}: {len(got)} change-log entries in its scope, {len(log.ledger)} acknowledged"
                    f" (first difference at {first})"
                )
        if Counter(by_scope.get(SHARED, [])) != shared_changes:
            verdict.change_log.append(
                f"shared scope: {len(by_scope.get(SHARED, []))} change-log entries, {sum(shared_changes.values())} "
                "acknowledged"
            )
        known = {log.scope for log in logs} | {SHARED}
        stray = [s for s in by_scope if s not in known]
        verdict.change_log += [f"change-log entries in unknown scope {s}" for s in stray]
    elif all(log.ledger_exact for log in logs):
        expected_ops = Counter(op for log in logs for op, _ in log.ledger)
        expected_ops.update(op for op, _ in shared_changes.elements())
        found_ops = Counter(c.op for c in changes)
        if found_ops != expected_ops:
            verdict.change_log.append(f"change log holds {dict(found_ops)}, acknowledged {dict(expected_ops)}")
    return verdict


# -- one run: servers, clients, check --------------------------------------------------------------------


@dataclass
class RunResult:
    clients: int
    ops: int
    servers: int
    calls: int
    seconds: float
    latencies: dict[str, list[float]]
    errors: list[str]
    transport_errors: int
    tool_errors: int
    ryw_checks: int
    ryw_failures: list[str]
    acknowledged: Counter[str]
    verdict: Verdict
    exits: list[int]
    server_problems: list[str]
    server_warnings: list[str]

    @property
    def every(self) -> list[float]:
        return [v for values in self.latencies.values() for v in values]

    @property
    def failed(self) -> bool:
        return bool(
            self.errors
            or self.ryw_failures
            or self.verdict.failures()
            or any(self.exits)
            or self.server_problems
            or self.calls != self.clients * self.ops
        )

    def summary(self) -> dict[str, Any]:
        every = self.every
        return {
            "clients": self.clients,
            "ops_per_client": self.ops,
            "servers": self.servers,
            "calls": self.calls,
            "seconds": round(self.seconds, 3),
            "calls_per_s": round(self.calls / self.seconds, 1),
            "p50_ms": round(p50(every) * 1000, 2) if every else None,
            "p95_ms": round(p95(every) * 1000, 2) if every else None,
            "errors": len(self.errors),
            "transport_errors": self.transport_errors,
            "tool_errors": self.tool_errors,
            "tools": {
                tool: {
                    "calls": len(values),
                    "p50_ms": round(p50(values) * 1000, 2),
                    "p95_ms": round(p95(values) * 1000, 2),
                }
                for tool, values in sorted(self.latencies.items())
            },
            "read_your_writes_checks": self.ryw_checks,
            "read_your_writes_failures": len(self.ryw_failures),
            "acknowledged": dict(self.acknowledged),
            "final": {
                "memories": self.verdict.memories,
                "open_relations": self.verdict.edges,
                "change_log_entries": self.verdict.changes,
                "lost": len(self.verdict.lost),
                "wrong": len(self.verdict.wrong),
                "duplicated": len(self.verdict.duplicated),
                "resurrected": len(self.verdict.resurrected),
                "unexpected": len(self.verdict.unexpected),
                "relation_failures": len(self.verdict.relations),
                "change_log_failures": len(self.verdict.change_log),
                "integrity_failures": len(self.verdict.integrity),
            },
            "server_exit_codes": sorted(set(self.exits)),
            "server_errors_logged": len(self.server_problems),
            "server_warnings_logged": len(self.server_warnings),
            "ok": not self.failed,
        }


@contextmanager
def _workdir(keep: bool, where: Path | None) -> Iterator[Path]:
    if where is not None:
        where.mkdir(parents=True, exist_ok=True)
        yield where
        return
    made = Path(tempfile.mkdtemp(prefix="mnemodb-http-load-"))
    try:
        yield made
    finally:
        if not keep:
            shutil.rmtree(made, ignore_errors=True)


def run_load(args: argparse.Namespace, work: Path, clients: int, ops: int, label: str) -> RunResult:
    db = work / f"{label}-{clients}.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    kind = MemdbClient if args.profile == "memdb" else Client
    with ExitStack() as stack:
        servers: list[HttpServe] = []
        for _ in range(args.servers):
            server = HttpServe(db, args.profile, args.host, args.embedder)
            servers.append(server)
            stack.callback(server.stop)
        addresses = [(s.host, s.port) for s in servers]
        native = args.profile == "native"
        drivers = [
            kind(
                Wire(addresses, keep_alive=not args.no_keep_alive),
                i,
                args.seed,
                ops,
                client_scope(args.seed, i) if native else SHARED,
            )
            for i in range(clients)
        ]
        ready = threading.Barrier(clients + 1)
        finished = [0.0] * clients

        def body(client: Client) -> None:
            try:
                client.wire.connect()
                ready.wait(120)
            except (OSError, threading.BrokenBarrierError):
                client.log.errors.append(f"client {client.index} could not start: {traceback.format_exc()}")
                ready.abort()
                return
            try:
                client.run()
            finally:
                finished[client.index] = time.perf_counter()
                client.wire.close()

        threads = [threading.Thread(target=body, args=(c,), name=f"client-{c.index}") for c in drivers]
        for thread in threads:
            thread.start()
        with suppress(threading.BrokenBarrierError):
            ready.wait(120)
        started = time.perf_counter()
        for thread in threads:
            thread.join()
        seconds = max(max(finished) - started, 1e-9)
        stack.pop_all()
        exits = [s.stop() for s in servers]
    problems = [line for s in servers for line in s.problems()]
    warnings = [line for s in servers for line in s.warnings()]
    logs = [c.log for c in drivers]
    verdict = verify(db, logs, args.profile)
    latencies: dict[str, list[float]] = defaultdict(list)
    acknowledged: Counter[str] = Counter()
    for log in logs:
        for tool, values in log.latencies.items():
            latencies[tool] += values
        acknowledged.update(log.acknowledged)
    acknowledged["shared memories"] = len({c for log in logs for c in log.shared})
    acknowledged["shared relations"] = len({p for log in logs for p in log.shared_links})
    return RunResult(
        clients=clients,
        ops=ops,
        servers=args.servers,
        calls=sum(log.ops for log in logs),
        seconds=seconds,
        latencies=dict(latencies),
        errors=[e for log in logs for e in log.errors],
        transport_errors=sum(log.transport_errors for log in logs),
        tool_errors=sum(log.tool_errors for log in logs),
        ryw_checks=sum(log.ryw_checks for log in logs),
        ryw_failures=[r for log in logs for r in log.ryw_failures],
        acknowledged=acknowledged,
        verdict=verdict,
        exits=exits,
        server_problems=problems,
        server_warnings=warnings,
    )


# -- reporting ----------------------------------------------------------------------------------------


def ms(value: float) -> str:
    return f"{value * 1000:.1f}"


def latency_table(results: Sequence[RunResult]) -> str:
    lines = [
        f"{'clients':>7}  {'calls':>7}  {'seconds':>8}  {'calls/s':>8}  {'p50 ms':>7}  {'p95 ms':>7}"
        f"  {'errors':>6}  checks"
    ]
    for r in results:
        every = r.every
        lines.append(
            f"{r.clients:>7}  {r.calls:>7}  {r.seconds:>8.2f}  {r.calls / r.seconds:>8.0f}  {ms(p50(every)):>7}"
            f"  {ms(p95(every)):>7}  {len(r.errors):>6}  {'FAILED' if r.failed else 'ok'}"
        )
    lines.append("")
    tools = sorted({t for r in results for t in r.latencies})
    header = f"{'p50 / p95 ms by tool':22}" + "".join(f"{f'{r.clients} clients':>18}" for r in results)
    lines.append(header)
    for tool in tools:
        cells = []
        for r in results:
            values = r.latencies.get(tool, [])
            cells.append(f"{ms(p50(values))} / {ms(p95(values))}" if values else "-")
        lines.append(f"  {tool:20}" + "".join(f"{c:>18}" for c in cells))
    return "\n".join(lines)


def correctness_report(r: RunResult) -> str:
    v = r.verdict
    every = r.every
    ack = r.acknowledged
    lines = [
        f"calls: {r.calls} in {r.seconds:.2f} s = {r.calls / r.seconds:.0f} calls/s; "
        f"latency p50 {ms(p50(every))} ms, p95 {ms(p95(every))} ms",
    ]
    for tool in sorted(r.latencies):
        values = r.latencies[tool]
        lines.append(f"  {tool:20} {len(values):6} calls  p50 {ms(p50(values)):>6} ms  p95 {ms(p95(values)):>6} ms")
    lines += [
        f"error replies: {len(r.errors)} (no answer or not HTTP 200 or no JSON-RPC result: {r.transport_errors}; "
        f"tool errors: {r.tool_errors})",
        f"acknowledged: {ack['memories stored']} memories stored, {ack['memories updated']} updated, "
        f"{ack['memories tagged']} tagged, {ack['memories forgotten']} forgotten, {ack['relations created']} "
        f"relations created; {ack['shared memories']} shared memories and {ack['shared relations']} shared "
        "relations raced for",
        f"read-your-writes: {r.ryw_checks} reads checked, {len(r.ryw_failures)} failures",
        f"in the file: {v.memories} memories, {v.edges} open relations, {v.changes} change-log entries",
        f"lost writes: {len(v.lost)}; wrong content: {len(v.wrong)}; duplicated: {len(v.duplicated)}; "
        f"forgotten but present: {len(v.resurrected)}; present but never acknowledged: {len(v.unexpected)}",
        f"relation failures: {len(v.relations)}; change-log failures (gaps, entries not acknowledged or missing): "
        f"{len(v.change_log)}; integrity_check: {'failed' if v.integrity else 'ok'}",
        f"servers: exit codes {sorted(set(r.exits))}, {len(r.server_problems)} errors or tracebacks logged, "
        f"{len(r.server_warnings)} warnings",
    ]
    details = [*r.errors, *r.ryw_failures, *v.failures(), *r.server_problems, *r.server_warnings]
    lines += [f"    {line[:400]}" for line in details[:15]]
    if len(details) > 15:
        lines.append(f"    ... and {len(details) - 15} more")
    return "\n".join(lines)


# -- main -----------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--clients", default="1,10,50", help="concurrency levels of the latency mode (default 1,10,50)")
    parser.add_argument("--ops", type=int, default=200, help="calls per client in the latency mode (default 200)")
    parser.add_argument("--check-clients", type=int, default=50, help="clients of the correctness run (default 50)")
    parser.add_argument("--check-ops", type=int, default=500, help="calls per client of the correctness run (500)")
    parser.add_argument(
        "--mode", choices=("both", "latency", "correctness"), default="both", help="what to run (default both)"
    )
    parser.add_argument("--profile", choices=PROFILES, default="native", help="the profile served (default native)")
    parser.add_argument("--servers", type=int, default=1, help="server processes on the one file (default 1)")
    parser.add_argument(
        "--no-keep-alive", action="store_true", help="a new connection for every call (default: one per client)"
    )
    parser.add_argument("--host", default="127.0.0.1", help="the address the servers bind (default 127.0.0.1)")
    parser.add_argument(
        "--embedder", default="none", help="the servers' MNEMODB_EMBEDDER (default none: search by words only)"
    )
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument("--json", type=Path, help="write the figures to this file as JSON")
    parser.add_argument("--workdir", type=Path, help="where the databases go (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args(argv)
    try:
        args.levels = [int(n) for n in args.clients.split(",") if n.strip()]
    except ValueError:
        parser.error("--clients takes a comma-separated list of numbers")
    if not args.levels or min(args.levels) < 1 or args.ops < 1 or args.check_clients < 1 or args.check_ops < 1:
        parser.error("clients and calls must be at least 1")
    if args.servers < 1:
        parser.error("--servers must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    load_start = os.getloadavg()
    wall = time.perf_counter()
    servers = f"{args.servers} server process{'es' if args.servers > 1 else ''} on one file"
    servers += ", a new connection per call" if args.no_keep_alive else ", a keep-alive connection per client"
    latency: list[RunResult] = []
    check: RunResult | None = None
    with _workdir(args.keep, args.workdir) as work:
        if args.mode in ("both", "latency"):
            print(
                f"== latency: mnemodb serve --http, {args.profile} profile, {servers}; "
                f"{args.ops} calls per client, seed {args.seed} =="
            )
            for clients in args.levels:
                print(f"  ... {clients} clients", file=sys.stderr, flush=True)
                latency.append(run_load(args, work, clients, args.ops, "latency"))
            print(latency_table(latency))
            for r in latency:
                if r.failed:
                    print(f"{r.clients} clients:")
                    print(correctness_report(r))
            print()
        if args.mode in ("both", "correctness"):
            print(
                f"== correctness: {args.check_clients} clients x {args.check_ops} calls, {args.profile} profile, "
                f"{servers}, seed {args.seed} =="
            )
            print(f"  ... {args.check_clients} clients", file=sys.stderr, flush=True)
            check = run_load(args, work, args.check_clients, args.check_ops, "correctness")
            print(correctness_report(check))
            print()
    load_end = os.getloadavg()
    failed = any(r.failed for r in latency) or (check is not None and check.failed)
    print(
        f"mnemodb {MNEMODB_VERSION}, Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"{os.cpu_count()} CPUs; load average {load_start[0]:.2f} at start, {load_end[0]:.2f} at end; "
        f"{time.perf_counter() - wall:.0f} s in all"
    )
    print("FAILED" if failed else "ok")
    if args.json:
        payload = {
            "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
            "latency": [r.summary() for r in latency],
            "correctness": check.summary() if check is not None else None,
            "ok": not failed,
            "mnemodb_version": MNEMODB_VERSION,
            "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version,
            "cpus": os.cpu_count(),
            "loadavg": [load_start, load_end],
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
