"""Concurrent clients over Streamable HTTP, with two `mnemodb serve --http` processes on one file.

Ten client threads, each with keep-alive connections to both servers, send their tool
calls alternately to one and the other, so every read right after a write goes to the
process that did not take the write. The calls are raw JSON-RPC POSTs with no
`initialize` (the servers are stateless). Every client keeps a ledger of what was
acknowledged; afterwards, with both servers stopped, the file must hold exactly that:
no error reply, no lost or duplicated write, nothing forgotten back, every read of a
client's own writes right, each raced-for shared memory and relation made once, the
change log gapless and, in each client's scope, exactly its writes in its order, and
SQLite's integrity check ok. The checks do not depend on timing: only on what the
servers acknowledged.
"""

from __future__ import annotations

import http.client
import json
import shutil
import sqlite3
import threading
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from http_support import HttpServer
from mnemodb.engine import Engine, content_hash

CLIENTS = 10
CALLS = 40
SHARED = "shared"
SHARED_LINK = "shared_link"
OWN_LINK = "next"
# Hang guards only: the whole run normally takes a few seconds.
REPLY_TIMEOUT_S = 30.0
JOIN_TIMEOUT_S = 120.0


def scope_of(index: int) -> str:
    """Each client's own scope: a ULID."""
    return f"01HV7N8Q3Y2J6W5X4Z9A0B1C{index:02d}"


def shared_note(k: int) -> str:
    return f"shared note {k} every client stores"


class Spent(Exception):
    """The client has made its calls."""


@dataclass
class Ledger:
    """What one client saw acknowledged, and everything that went wrong for it."""

    index: int
    scope: str
    live: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Own memories that must exist at the end: id -> (content, token)."""
    forgotten: set[str] = field(default_factory=set)
    gone: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Hashes of contents forgotten or replaced -> (content, token): never to be found again."""
    links: dict[tuple[str, str], str] = field(default_factory=dict)
    """(from id, to id) -> id of own open relations."""
    shared: dict[str, tuple[str, bool]] = field(default_factory=dict)
    """Shared content -> (its id, whether this client created it)."""
    shared_links: dict[tuple[int, int], tuple[str, bool]] = field(default_factory=dict)
    changes: list[tuple[str, str]] = field(default_factory=list)
    """The change-log entries its writes must have made in its scope, in order."""
    errors: list[str] = field(default_factory=list)
    """Error replies and exceptions."""
    problems: list[str] = field(default_factory=list)
    """Replies that came back but were wrong, reads that missed own writes included."""
    checked: int = 0
    calls: int = 0


class Client:
    """One client: alternates its calls between the servers and follows a fixed plan."""

    def __init__(self, index: int, ports: list[int], calls: int = CALLS) -> None:
        self.index = index
        self.calls = calls
        self.ports = ports
        self.connections = [http.client.HTTPConnection("127.0.0.1", p, timeout=REPLY_TIMEOUT_S) for p in ports]
        self.log = Ledger(index, scope_of(index))
        self.serial = 0

    def call(self, tool: str, arguments: Mapping[str, Any]) -> dict[str, Any] | None:
        """The structured result of a successful call; None (and an error logged) otherwise."""
        if self.log.calls >= self.calls:
            raise Spent
        k = self.log.calls % len(self.connections)
        self.log.calls += 1
        params = {"name": tool, "arguments": dict(arguments)}
        message = {"jsonrpc": "2.0", "id": self.log.calls, "method": "tools/call", "params": params}
        headers = {
            "Host": f"127.0.0.1:{self.ports[k]}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
        }
        try:
            response = self._post(k, message, headers)
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            # The server closed the kept-alive connection while it was idle (its keep-alive
            # timeout), before this request reached it: sent again on a new connection, as
            # an HTTP client does. A request that did reach it would show up twice in the
            # final check.
            self.connections[k].close()
            self.connections[k] = http.client.HTTPConnection("127.0.0.1", self.ports[k], timeout=REPLY_TIMEOUT_S)
            response = self._post(k, message, headers)
        body = response.read()
        if response.status != 200:
            self.log.errors.append(f"client {self.index} {tool}: HTTP {response.status} {body[:300]!r}")
            return None
        reply = json.loads(body)
        result = reply.get("result")
        if reply.get("id") != self.log.calls or not isinstance(result, dict) or result.get("isError") is not False:
            self.log.errors.append(f"client {self.index} {tool}: {str(reply)[:300]}")
            return None
        structured = result.get("structuredContent")
        assert isinstance(structured, dict), reply
        return structured

    def _post(self, k: int, message: Mapping[str, Any], headers: Mapping[str, str]) -> http.client.HTTPResponse:
        connection = self.connections[k]
        connection.request("POST", "/mcp", json.dumps(message).encode(), dict(headers))
        return connection.getresponse()

    def check(self, ok: bool, text: str) -> None:
        self.log.checked += 1
        if not ok:
            self.log.problems.append(f"client {self.index}: {text}")

    def fresh(self) -> tuple[str, str]:
        self.serial += 1
        token = f"tok{self.index}q{self.serial}"
        return f"client {self.index} note {self.serial} mentions {token}", token

    def newest(self) -> str:
        return sorted(self.log.live)[-1]

    # -- writes -------------------------------------------------------------------------------------

    def remember(self, count: int) -> None:
        items = [self.fresh() for _ in range(count)]
        memories = [{"content": c, "tags": [f"c{self.index}"]} for c, _ in items]
        reply = self.call("remember", {"memories": memories, "scope": self.log.scope})
        if reply is None:
            return
        for (content, token), stored in zip(items, reply["memories"], strict=True):
            if stored["status"] != "created" or stored["hash"] != content_hash(content):
                self.log.problems.append(f"client {self.index}: remember {content!r} answered {stored}")
                continue
            self.log.live[stored["id"]] = (content, token)
            self.log.changes.append(("create_node", stored["id"]))
        # Read the write back at once, through the other server: by id for one, by search for a batch.
        last = reply["memories"][-1]["id"]
        if count == 1:
            self.read(last)
        else:
            self.find(last)

    def update(self) -> None:
        memory_id = self.newest()
        old_content, old_token = self.log.live[memory_id]
        content, token = self.fresh()
        reply = self.call("update", {"ref": memory_id, "content": content, "scopes": [self.log.scope]})
        if reply is None:
            return
        self.check(reply["item"]["hash"] == content_hash(content), f"update of {memory_id} answered {reply}")
        self.log.live[memory_id] = (content, token)
        self.log.gone[content_hash(old_content)] = (old_content, old_token)
        self.log.changes.append(("set_props", memory_id))
        self.read(memory_id)

    def forget(self) -> None:
        memory_id = sorted(self.log.live)[0]
        content, token = self.log.live[memory_id]
        reply = self.call("forget", {"refs": [memory_id], "scopes": [self.log.scope]})
        if reply is None:
            return
        self.check(reply["results"][0].get("forgotten") is True, f"forget {memory_id} answered {reply}")
        del self.log.live[memory_id]
        self.log.forgotten.add(memory_id)
        self.log.gone[content_hash(content)] = (content, token)
        self.log.links = {k: v for k, v in self.log.links.items() if memory_id not in k}
        self.log.changes.append(("remove_node", memory_id))
        self.read_gone(memory_id)

    def relate(self, again: bool) -> None:
        """Relate two own memories; `again`: a pair already related, which must come back as it is."""
        if again and self.log.links:
            src, dst = sorted(self.log.links)[-1]
        else:
            src, dst = sorted(self.log.live)[-2:]
        known = self.log.links.get((src, dst))
        reply = self.call("relate", {"add": [{"from": src, "to": dst, "type": OWN_LINK}], "scope": self.log.scope})
        if reply is None:
            return
        [added] = reply["added"]
        self.check(
            added["new"] == (known is None) and added["id"] == (known or added["id"]),
            f"relate {src} -> {dst} answered {added}, known {known}",
        )
        if added["new"]:
            self.log.changes.append(("create_edge", added["id"]))
        self.log.links[(src, dst)] = added["id"]

    def store_shared(self, k: int) -> None:
        reply = self.call("remember", {"memories": [{"content": shared_note(k), "tags": [SHARED]}]})
        if reply is None:
            return
        [stored] = reply["memories"]
        seen = self.log.shared.get(shared_note(k))
        if seen is None:
            self.check(stored["status"] in ("created", "existing"), f"shared note {k} answered {stored}")
            self.log.shared[shared_note(k)] = (stored["id"], stored["status"] == "created")
        else:
            self.check((stored["id"], stored["status"]) == (seen[0], "existing"), f"shared {k} again: {stored}")

    def relate_shared(self, a: int, b: int) -> None:
        src, dst = self.log.shared.get(shared_note(a)), self.log.shared.get(shared_note(b))
        if src is None or dst is None:
            return
        reply = self.call("relate", {"add": [{"from": src[0], "to": dst[0], "type": SHARED_LINK}]})
        if reply is not None:
            [added] = reply["added"]
            self.log.shared_links.setdefault((a, b), (added["id"], added["new"]))

    # -- reads --------------------------------------------------------------------------------------

    def read(self, memory_id: str) -> None:
        content, _ = self.log.live[memory_id]
        reply = self.call("get", {"refs": [memory_id], "scopes": [self.log.scope]})
        if reply is not None:
            [item] = reply["items"]
            seen = (item.get("text"), item.get("hash"))
            self.check(seen == (content, content_hash(content)), f"get {memory_id} after its write: {item}")

    def find(self, memory_id: str) -> None:
        _, token = self.log.live[memory_id]
        reply = self.call("recall", {"query": token, "scopes": [self.log.scope], "kinds": ["memory"]})
        if reply is not None:
            found = [item["id"] for item in reply["items"]]
            self.check(found == [memory_id], f"recall {token} after its write found {found}")

    def read_gone(self, memory_id: str) -> None:
        reply = self.call("get", {"refs": [memory_id], "scopes": [self.log.scope]})
        if reply is not None:
            self.check(reply["items"] == [{"ref": memory_id, "error": "not found"}], f"forgotten {memory_id}: {reply}")

    def find_gone(self) -> None:
        _, token = sorted(self.log.gone.values())[-1]
        reply = self.call("recall", {"query": token, "scopes": [self.log.scope], "kinds": ["memory"]})
        if reply is not None:
            self.check(reply["items"] == [], f"recall {token} after forgetting or replacing it: {reply['items']}")

    def survey(self) -> None:
        reply = self.call("survey", {"scopes": [self.log.scope]})
        if reply is not None:
            counts = (reply["memories"], reply["relations"])
            expected = (len(self.log.live), len(self.log.links))
            self.check(counts == expected, f"survey counts {counts}, the client holds {expected}")

    # -- the plan -----------------------------------------------------------------------------------

    def plan(self, cycle: int) -> list[Callable[[], None]]:
        """One cycle of 15 calls; every client races the others for the same shared notes."""
        a, b = cycle % 3, (cycle + 1) % 3
        return [
            lambda: self.store_shared(a),
            lambda: self.remember(1),
            lambda: self.remember(3),
            lambda: self.store_shared(b),
            lambda: self.relate(again=False),
            lambda: self.relate_shared(a, b),
            self.update,
            lambda: self.relate(again=True),
            self.forget,
            self.find_gone,
            self.survey,
        ]

    def run(self) -> None:
        try:
            cycle = 0
            while True:
                for step in self.plan(cycle):
                    step()
                cycle += 1
        except Spent:
            pass
        except Exception:
            self.log.errors.append(f"client {self.index}: {traceback.format_exc()}")
        finally:
            for connection in self.connections:
                connection.close()


# -- the final check ---------------------------------------------------------------------------------------


def verify(db: Path | str, logs: list[Ledger]) -> list[str]:
    """Everything the database says against the ledgers: the failures, one line each. `db`
    is an SQLite file (whose own integrity check runs too) or a database server's URL."""
    failures: list[str] = []
    if isinstance(db, Path):
        with closing(sqlite3.connect(db)) as conn:
            if conn.execute("PRAGMA integrity_check").fetchall() != [("ok",)]:
                failures.append("integrity_check failed")
    with Engine.open(str(db)) as engine:
        changes = engine.changes()
        records = list(engine.export())
    seqs = [c.seq for c in changes]
    if seqs != list(range(1, len(seqs) + 1)):
        failures.append(f"the change log is not gapless: {len(seqs)} entries, seqs up to {max(seqs, default=0)}")
    times = [c.at for c in changes]
    if times != sorted(times):
        failures.append("the change log's times go backwards somewhere along its seq order")
    memories = {r["id"]: r for r in records if r["type"] == "node" and "memory" in r}
    places = Counter((r["scope"], r["memory"]["hash"]) for r in memories.values())
    failures += [f"{place} stored {n} times" for place, n in places.items() if n > 1]
    edges = {r["id"]: r for r in records if r["type"] == "edge" and r["valid_to"] is None}
    by_scope: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for change in changes:
        by_scope[change.scope or ""].append((change.op, change.target or ""))
    expected_places = set()
    for log in logs:
        for memory_id, (content, _) in log.live.items():
            expected_places.add((log.scope, content_hash(content)))
            found = memories.get(memory_id)
            if found is None or (found["scope"], found["memory"]["content"]) != (log.scope, content):
                failures.append(f"client {log.index}: {memory_id} ({content!r}) lost or changed: {found}")
        failures += [f"client {log.index}: forgotten {i} is back" for i in log.forgotten if i in memories]
        failures += [f"client {log.index}: gone {h} is back" for h in log.gone if (log.scope, h) in places]
        own_edges = {i for i, e in edges.items() if e["scope"] == log.scope}
        if own_edges != set(log.links.values()):
            failures.append(f"client {log.index}: relations {sorted(own_edges)}, acknowledged {log.links}")
        if by_scope.get(log.scope, []) != log.changes:
            failures.append(f"client {log.index}: change log {by_scope.get(log.scope)}, acknowledged {log.changes}")
    shared_changes: Counter[tuple[str, str]] = Counter()
    for content in {c for log in logs for c in log.shared}:
        seen = [log.shared[content] for log in logs if content in log.shared]
        expected_places.add((SHARED, content_hash(content)))
        if len({i for i, _ in seen}) != 1 or sum(made for _, made in seen) != 1:
            failures.append(f"shared {content!r}: {seen}")
        shared_changes.update(("create_node", i) for i, made in seen if made)
    for pair in {p for log in logs for p in log.shared_links}:
        seen_links = [log.shared_links[pair] for log in logs if pair in log.shared_links]
        ids = {i for i, _ in seen_links}
        if len(ids) != 1 or sum(made for _, made in seen_links) != 1 or not ids <= set(edges):
            failures.append(f"shared relation {pair}: {seen_links}")
        shared_changes.update(("create_edge", i) for i, made in seen_links if made)
    failures += [f"{place} was never acknowledged" for place in set(places) - expected_places]
    if Counter(by_scope.get(SHARED, [])) != shared_changes:
        failures.append(f"shared change log {by_scope.get(SHARED)}, acknowledged {dict(shared_changes)}")
    if set(by_scope) - {SHARED, *(log.scope for log in logs)}:
        failures.append(f"change-log entries in scopes no client wrote: {set(by_scope)}")
    return failures


@dataclass
class Run:
    db: Path
    logs: list[Ledger]
    exits: list[int]
    stderr: str


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    db = tmp_path_factory.mktemp("http-concurrency") / "memory.db"
    with HttpServer.start(db) as first, HttpServer.start(db) as second:
        clients = [Client(i, [first.port, second.port][:: 1 if i % 2 else -1]) for i in range(CLIENTS)]
        start = threading.Barrier(CLIENTS)

        def body(client: Client) -> None:
            start.wait(JOIN_TIMEOUT_S)
            client.run()

        threads = [threading.Thread(target=body, args=(c,), daemon=True) for c in clients]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(JOIN_TIMEOUT_S)
        assert not any(t.is_alive() for t in threads), "a client hung"
        exits = [first.stop(), second.stop()]
        yield Run(db, [c.log for c in clients], exits, first.stderr + second.stderr)


def test_concurrent_clients_on_two_servers_lose_and_duplicate_nothing(run: Run) -> None:
    assert [e for log in run.logs for e in log.errors] == []
    assert [p for log in run.logs for p in log.problems] == []
    assert [log.calls for log in run.logs] == [CALLS] * CLIENTS
    assert run.exits == [0, 0]
    assert "Traceback" not in run.stderr and "[ERROR]" not in run.stderr, run.stderr
    assert verify(run.db, run.logs) == []
    # The plan did what it says: every client wrote, replaced, forgot and related, and read it all back.
    for log in run.logs:
        ops = Counter(op for op, _ in log.changes)
        assert min(ops["create_node"], ops["set_props"], ops["remove_node"], ops["create_edge"]) >= 2, ops
        assert log.checked >= 10
    made = Counter(made for log in run.logs for _, made in log.shared.values())
    assert made[True] == 3 and made[False] == 3 * CLIENTS - 3  # each shared note raced for by every client
    assert sorted({p for log in run.logs for p in log.shared_links}) == [(0, 1), (1, 2), (2, 0)]


def test_the_check_sees_a_lost_write_and_a_forgotten_one_back(run: Run, tmp_path: Path) -> None:
    """The final check is not vacuous: on a copy of the file, a memory forgotten behind the
    clients' backs is lost (and its entry is not in the client's ledger), and content a
    client forgot, stored again, is back."""
    db = tmp_path / "copy.db"
    for suffix in ("", "-wal"):
        if Path(f"{run.db}{suffix}").exists():
            shutil.copy(f"{run.db}{suffix}", f"{db}{suffix}")
    log = run.logs[0]
    lost = sorted(log.live)[0]
    back, _ = next(iter(log.gone.values()))
    with Engine.open(str(db)) as engine:
        assert engine.items.forget([lost], scopes=[log.scope]) != [None]
        engine.memories.store(back, scope=log.scope)
    failures = verify(db, run.logs)
    assert any(f.startswith(f"client 0: {lost} ") and "lost or changed" in f for f in failures), failures
    assert any(f.startswith(f"client 0: gone {content_hash(back)} is back") for f in failures), failures
    assert any(f.startswith("client 0: change log") for f in failures), failures
    assert all(f.startswith("client 0:") or "never acknowledged" in f for f in failures), failures
