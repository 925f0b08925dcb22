"""Several `mnemodb serve` processes on one SQLite file, each driven by its own client.

Every client owns one server process and makes `--ops` mixed calls, most of them on its
own memories (so it knows exactly what each must return) and some on memories and
relations every client shares (so their writes race): stores, batch stores, updates,
deletes, relations, reads of its own writes, searches and stats. It records every
reply's latency and checks every answer. At the end a fresh engine reads the file:
every acknowledged write must be there exactly once, nothing deleted may be back, each
shared relation must exist once, the change log must be gapless, the integrity check ok.

Usage: python bench/concurrency.py [--clients 8] [--ops 500] [--db-dir DIR] [--seed 1]
Exit status 1 on any error reply or correctness failure.
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from measure import read_back
from mnemodb.engine import content_hash
from serve_client import ServeProcess, error_code, tool_outcome

SHARED_POOL = 20
SHARED_LINKED = 6  # the first few shared memories are linked to each other by every client
SHARED_LINK = "shared_link"


@dataclass
class ClientLog:
    """What one client saw: acknowledged state, latencies and every failure."""

    index: int
    live: dict[str, tuple[str, str]] = field(default_factory=dict)
    """hash -> (content, search token) of own memories that must exist at the end."""
    gone: set[str] = field(default_factory=set)
    """Own hashes deleted or updated away: they must not exist at the end."""
    own_links: dict[tuple[str, str], int] = field(default_factory=dict)
    """(from content, to content) of own relations -> relationship id; by content, as hashes change."""
    shared_new: dict[str, bool] = field(default_factory=dict)
    """Shared content -> whether this client's first store of it created it."""
    shared_links: dict[tuple[int, int], list[Any]] = field(default_factory=dict)
    """(from, to) pool index -> [relationship id, whether this client made it]."""
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: list[str] = field(default_factory=list)
    """Error replies where success was expected, and exceptions."""
    locked: int = 0
    ryw_failures: list[str] = field(default_factory=list)
    """Reads that did not see this client's own acknowledged writes (or saw deleted ones)."""
    ops: int = 0


class Client:
    def __init__(self, server: ServeProcess, index: int, seed: int) -> None:
        self.server = server
        self.log = ClientLog(index)
        self.rng = random.Random(seed * 7919 + index)
        self.index = index
        self.seed = seed
        self.serial = 0
        self.contents: dict[str, str] = {}  # hash -> content, for own live memories

    # -- plumbing ------------------------------------------------------------------------------

    def call(self, tool: str, arguments: dict[str, Any], *, expect_ok: bool = True) -> tuple[bool, Any, str | None]:
        started = time.perf_counter()
        reply = self.server.call(tool, arguments)
        self.log.latencies[tool].append(time.perf_counter() - started)
        self.log.ops += 1
        ok, detail = tool_outcome(reply)
        text = str(detail)
        if not ok and "locked" in text.lower():
            self.log.locked += 1
        if expect_ok and not ok:
            self.log.errors.append(f"client {self.index} {tool}: {text[:300]}")
        return ok, detail, error_code(reply)

    def fresh(self) -> tuple[str, str]:
        self.serial += 1
        token = f"tok{self.index}q{self.serial}z{self.seed}"
        return f"client {self.index} memory {self.serial} mentions {token}", token

    def pick(self) -> str | None:
        return self.rng.choice(sorted(self.log.live)) if self.log.live else None

    def ryw(self, text: str) -> None:
        self.log.ryw_failures.append(f"client {self.index}: {text}")

    # -- writes --------------------------------------------------------------------------------

    def store(self) -> None:
        content, token = self.fresh()
        ok, result, _ = self.call("store_memory", {"content": content, "tags": [f"c{self.index}", "bench"]})
        if ok:
            self.stored(content, token, result)

    def stored(self, content: str, token: str, result: dict[str, Any]) -> None:
        if result.get("hash") != content_hash(content) or result.get("isNew") is not True:
            self.log.errors.append(f"client {self.index}: storing {content!r} answered {result}")
            return
        self.log.live[result["hash"]] = (content, token)

    def store_batch(self) -> None:
        items = [self.fresh() for _ in range(5)]
        arguments = {"items": [{"content": c, "tags": [f"c{self.index}", "batch"]} for c, _ in items]}
        ok, result, _ = self.call("store_memories", arguments)
        if ok:
            for (content, token), item in zip(items, result["results"], strict=True):
                self.stored(content, token, item)

    def store_shared(self, j: int | None = None) -> None:
        j = self.rng.randrange(SHARED_POOL) if j is None else j
        content = f"shared memory {j} of run {self.seed}"
        ok, result, _ = self.call("store_memory", {"content": content, "tags": ["shared", f"c{self.index}"]})
        if ok:
            self.log.shared_new.setdefault(content, bool(result["isNew"]))

    def relate_shared(self) -> None:
        a, b = self.rng.sample(range(SHARED_LINKED), 2)
        for j in (a, b):
            if f"shared memory {j} of run {self.seed}" not in self.log.shared_new:
                self.store_shared(j)
        ok, result, _ = self.call(
            "create_relationship",
            {
                "from_hash": content_hash(f"shared memory {a} of run {self.seed}"),
                "to_hash": content_hash(f"shared memory {b} of run {self.seed}"),
                "relation_type": SHARED_LINK,
            },
        )
        if ok:
            self.log.shared_links.setdefault((a, b), [result["id"], bool(result["isNew"])])

    def relate_own(self) -> None:
        if len(self.log.live) < 2:
            self.store()
            return
        src, dst = self.rng.sample(sorted(self.log.live), 2)
        key = (self.log.live[src][0], self.log.live[dst][0])
        ok, result, _ = self.call("create_relationship", {"from_hash": src, "to_hash": dst, "relation_type": "next"})
        if ok:
            known = self.log.own_links.get(key)
            if (known is None) != bool(result["isNew"]) or (known is not None and known != result["id"]):
                self.log.errors.append(f"client {self.index}: relation {key} answered {result}, known {known}")
            self.log.own_links[key] = result["id"]

    def update(self) -> None:
        old = self.pick()
        if old is None:
            self.store()
            return
        content, token = self.fresh()
        ok, result, _ = self.call("update_memory", {"hash": old, "content": content, "tags": [f"c{self.index}", "upd"]})
        if not ok:
            return
        new = content_hash(content)
        if result.get("oldHash") != old or result.get("newHash") != new:
            self.log.errors.append(f"client {self.index}: update of {old} answered {result}")
            return
        old_content = self.log.live.pop(old)[0]
        self.log.own_links = {
            (content if f == old_content else f, content if t == old_content else t): i
            for (f, t), i in self.log.own_links.items()
        }
        self.log.live[new] = (content, token)
        self.log.gone.add(old)
        self.read_own(new)

    def delete(self) -> None:
        digest = self.pick()
        if digest is None:
            return
        ok, _, _ = self.call("delete_memory", {"hash": digest})
        if ok:
            content = self.log.live.pop(digest)[0]
            self.log.own_links = {k: v for k, v in self.log.own_links.items() if content not in k}
            self.log.gone.add(digest)

    # -- reads ---------------------------------------------------------------------------------

    def read_own(self, digest: str | None = None) -> None:
        digest = digest or self.pick()
        if digest is None:
            return
        ok, result, _ = self.call("get_memory", {"hash": digest}, expect_ok=False)
        if not ok or result.get("content") != self.log.live[digest][0]:
            self.ryw(f"get_memory {digest} after its acknowledged write: {result}")

    def read_gone(self) -> None:
        if not self.log.gone:
            return
        digest = self.rng.choice(sorted(self.log.gone))
        ok, result, code = self.call("get_memory", {"hash": digest}, expect_ok=False)
        if ok or code != "E_NOT_FOUND":
            self.ryw(f"get_memory {digest} after deleting or replacing it: {result}")

    def search_own(self) -> None:
        digest = self.pick()
        if digest is None:
            return
        ok, result, _ = self.call("search_memories", {"query": self.log.live[digest][1]})
        if ok and digest not in [hit["hash"] for hit in result]:
            self.ryw(f"search for {self.log.live[digest][1]} missed {digest}")

    def stats(self) -> None:
        ok, result, _ = self.call("memory_stats", {})
        if ok and result["memoryCount"] < len(self.log.live):
            self.ryw(f"memory_stats counts {result['memoryCount']}, this client alone holds {len(self.log.live)}")

    def run(self, ops: int) -> None:
        actions: list[tuple[Callable[[], None], int]] = [
            (self.store, 28),
            (self.store_batch, 7),
            (self.store_shared, 5),
            (self.relate_shared, 4),
            (self.relate_own, 5),
            (self.update, 7),
            (self.delete, 5),
            (self.read_own, 20),
            (self.read_gone, 4),
            (self.search_own, 11),
            (self.stats, 4),
        ]
        calls, weights = zip(*actions, strict=True)
        while self.log.ops < ops:
            action = self.rng.choices(calls, weights)[0]
            try:
                action()
            except Exception:
                self.log.errors.append(f"client {self.index} {action.__name__}: {traceback.format_exc()}")
                return


# -- the final check -----------------------------------------------------------------------------------


@dataclass
class Verdict:
    lost: list[str] = field(default_factory=list)
    resurrected: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    relations: list[str] = field(default_factory=list)
    store: list[str] = field(default_factory=list)

    def failures(self) -> int:
        parts = (self.lost, self.resurrected, self.unexpected, self.duplicated, self.relations, self.store)
        return sum(map(len, parts))


def verify(db: Path, logs: Sequence[ClientLog], seed: int) -> Verdict:
    verdict = Verdict()
    file = read_back(db)
    verdict.store += file.integrity
    if file.gap_text:
        verdict.store.append(file.gap_text)
    changes, records = file.changes, file.records
    memories = [r for r in records if r["type"] == "node" and "memory" in r]
    found = Counter(r["memory"]["hash"] for r in memories)
    expected: dict[str, str] = {}
    for log in logs:
        expected.update({h: c for h, (c, _) in log.live.items()})
    shared = {c for log in logs for c in log.shared_new}
    expected.update({content_hash(c): c for c in shared})
    gone = {h for log in logs for h in log.gone}
    verdict.lost = sorted(set(expected) - set(found))
    verdict.resurrected = sorted(gone & set(found))
    verdict.unexpected = sorted(set(found) - set(expected) - gone)
    verdict.duplicated = [h for h, n in found.items() if n > 1]
    for content in shared:
        made = sum(1 for log in logs if log.shared_new.get(content))
        if made != 1:
            verdict.duplicated.append(f"shared memory {content!r} created {made} times")

    # Relations between shared memories: one per linked pair, made by exactly one client.
    by_hash = {r["memory"]["hash"]: r["id"] for r in memories}
    open_edges = Counter((e["from"], e["to"], e["edge_type"]) for e in records if e["type"] == "edge")
    for pair in {p for log in logs for p in log.shared_links}:
        made = sum(1 for log in logs if log.shared_links.get(pair, [0, False])[1])
        ids = {log.shared_links[pair][0] for log in logs if pair in log.shared_links}
        a, b = (by_hash.get(content_hash(f"shared memory {j} of run {seed}")) for j in pair)
        stored = open_edges.get((a, b, SHARED_LINK), 0)
        if (made, len(ids), stored) != (1, 1, 1):
            verdict.relations.append(f"shared relation {pair}: made {made} times, {stored} stored, ids {sorted(ids)}")
    own_expected = sum(len(log.own_links) for log in logs)
    own_found = sum(n for (_, _, kind), n in open_edges.items() if kind == "next")
    if own_found != own_expected:
        verdict.relations.append(f"{own_found} own relations stored, {own_expected} acknowledged and not deleted")

    if len(changes) < len(found):
        verdict.store.append(f"{len(changes)} change-log entries for {len(found)} memories")
    return verdict


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# -- main -----------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8, help="server processes, one client each (default 8)")
    parser.add_argument("--ops", type=int, default=500, help="calls per client (default 500)")
    parser.add_argument("--db-dir", type=Path, help="where the database goes (default: a temporary directory)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument("--keep", action="store_true", help="keep the database file")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    temporary = args.db_dir is None
    where = Path(tempfile.mkdtemp(prefix="mnemodb-concurrency-")) if temporary else args.db_dir
    where.mkdir(parents=True, exist_ok=True)
    db = where / f"concurrency-{args.seed}.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)

    servers = [ServeProcess(db) for _ in range(args.clients)]  # all start at once on a new file
    clients = [Client(s, i, args.seed) for i, s in enumerate(servers)]
    ready = threading.Barrier(args.clients + 1)
    finished: list[float] = [0.0] * args.clients

    def body(client: Client) -> None:
        try:
            client.server.initialize()
        except Exception:
            client.log.errors.append(f"client {client.index} initialize: {traceback.format_exc()}")
            ready.abort()
            return
        try:
            ready.wait(300)
        except threading.BrokenBarrierError:
            return
        client.run(args.ops)
        finished[client.index] = time.perf_counter()

    threads = [threading.Thread(target=body, args=(c,)) for c in clients]
    for thread in threads:
        thread.start()
    try:
        ready.wait(300)
        started = time.perf_counter()
    except threading.BrokenBarrierError:
        started = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = max(max(finished) - started, 1e-9)
    exits = [s.close() for s in servers]
    # The memdb profile reports an unexpected error as "Internal error: OperationalError"; the log names it.
    locked_logged = sum(s.stderr.lower().count("database is locked") for s in servers)
    try:
        logs = [c.log for c in clients]
        verdict = verify(db, logs, args.seed)
    finally:
        if temporary and not args.keep:
            shutil.rmtree(where, ignore_errors=True)

    total_ops = sum(log.ops for log in logs)
    errors = [e for log in logs for e in log.errors]
    ryw = [r for log in logs for r in log.ryw_failures]
    latencies: dict[str, list[float]] = defaultdict(list)
    for log in logs:
        for tool, values in log.latencies.items():
            latencies[tool] += values
    every = [v for values in latencies.values() for v in values]
    print(f"{args.clients} server processes on one file, {args.ops} calls per client, seed {args.seed}")
    print(f"calls: {total_ops} in {elapsed:.2f}s = {total_ops / elapsed:.0f} calls/s")
    print(f"latency: p50 {percentile(every, 0.5) * 1000:.1f} ms, p95 {percentile(every, 0.95) * 1000:.1f} ms")
    for tool in sorted(latencies):
        values = latencies[tool]
        print(
            f"  {tool:20} {len(values):6} calls  p50 {percentile(values, 0.5) * 1000:7.1f} ms"
            f"  p95 {percentile(values, 0.95) * 1000:7.1f} ms"
        )
    locked = sum(log.locked for log in logs)
    print(
        f"error replies and exceptions: {len(errors)} (database is locked: {locked} in replies, {locked_logged} logged)"
    )
    print(f"lost writes: {len(verdict.lost)}; duplicated writes: {len(verdict.duplicated)}")
    print(f"deleted but present: {len(verdict.resurrected)}; present but never stored: {len(verdict.unexpected)}")
    print(f"relation failures: {len(verdict.relations)}; read-your-writes failures: {len(ryw)}")
    print(f"store checks (integrity, change log) failed: {len(verdict.store)}; server exit codes: {sorted(set(exits))}")
    details = [
        *errors,
        *ryw,
        *verdict.lost,
        *verdict.duplicated,
        *verdict.resurrected,
        *verdict.unexpected,
        *verdict.relations,
        *verdict.store,
    ]
    for line in details[:15]:
        print(f"    {line}")
    failed = bool(errors or ryw or verdict.failures() or any(exits) or locked_logged)
    print("FAILED" if failed else "ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
