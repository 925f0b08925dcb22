"""Many writers on one SQLite file: worker processes, threads, and `mnemodb serve` processes.

Every worker keeps a ledger of what it saw acknowledged. Afterwards the file must hold
exactly that (nothing lost, nothing twice), the change log must run 1..N without a gap
with one entry per acknowledged change, in each worker's own order, and SQLite's
integrity check must pass. No worker may see an exception, "database is locked" included.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
import random
import sqlite3
import threading
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mnemodb.engine import Change, Engine, NewMemory, content_hash
from support import RawServer, serve_command

SHARED_TAG = "shared"
TOPIC_TAGS = ("alpha", "beta", "gamma")
RELATION_TYPES = ("related_to", "depends_on")
SHARED_LINK = "shared_link"
# Hang guards only: a worker normally finishes in a few seconds.
JOIN_TIMEOUT_S = 180.0
BARRIER_TIMEOUT_S = 120.0

Key = tuple[str, ...]


@dataclass
class Ledger:
    """What one worker saw acknowledged, and everything that went wrong for it."""

    worker: int
    errors: list[str] = field(default_factory=list)
    """Exceptions raised by calls (a "database is locked" would land here)."""
    problems: list[str] = field(default_factory=list)
    """Calls that returned, but with a wrong answer (a read missing its own write, say)."""
    memories: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Own memories that must exist at the end: node id -> hash, content, tags, token."""
    edges: dict[str, list[str]] = field(default_factory=dict)
    """Own open relations that must exist at the end: edge id -> [from id, to id, type]."""
    gone: list[str] = field(default_factory=list)
    """Hashes this worker deleted or updated away: they must not be found again."""
    shared: dict[str, list[Any]] = field(default_factory=dict)
    """Contents every worker stores: content -> [node id, whether this worker created it]."""
    shared_edges: dict[str, list[Any]] = field(default_factory=dict)
    """Relations every worker makes between shared memories: "from>to" ids -> [edge id, whether this worker made it]."""
    changes: list[list[str]] = field(default_factory=list)
    """The change-log entries the acknowledged writes must have made, in order (see `change_key`)."""
    acknowledged: int = 0

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Ledger:
        return cls(**json.loads(text))


def change_key(change: Change) -> Key:
    """An entry of the log, reduced to what tells whose write it was."""
    if change.op == "add_tags":
        return (change.op, change.target or "", ",".join(change.data["tags"]))
    if change.op == "update_node":
        return (change.op, change.target or "", str(change.data["set"].get("hash", "")))
    return (change.op, change.target or "")


def shared_pool(seed: int, size: int = 8) -> list[str]:
    return [f"shared note {j} of run {seed}" for j in range(size)]


class EngineWorker:
    """A few hundred mixed engine calls, each checked and written into a ledger."""

    def __init__(self, engine: Engine, worker: int, seed: int) -> None:
        self.engine = engine
        self.worker = worker
        self.seed = seed
        self.rng = random.Random(seed * 1009 + worker)
        self.ledger = Ledger(worker)
        self.pool = shared_pool(seed)
        self.serial = 0
        self.tag = f"w{worker}"

    # -- helpers -------------------------------------------------------------------------------

    def problem(self, text: str) -> None:
        self.ledger.problems.append(f"worker {self.worker}: {text}")

    def fresh(self) -> tuple[str, str]:
        """New content no other worker or call uses, and a search word only it contains."""
        self.serial += 1
        token = f"tok{self.worker}q{self.serial}z{self.seed}"
        return f"worker {self.worker} note {self.serial} says {token}", token

    def new_tags(self) -> list[str]:
        return [self.tag, self.rng.choice(TOPIC_TAGS)]

    def pick(self) -> str | None:
        """The node id of one of this worker's live memories."""
        ids = sorted(self.ledger.memories)
        return self.rng.choice(ids) if ids else None

    def created(self, node_id: str, digest: str, is_new: bool, content: str, token: str, tags: list[str]) -> None:
        self.ledger.acknowledged += 1
        if not is_new:
            self.problem(f"unique content came back as not new: {content!r}")
            return
        if digest != content_hash(content):
            self.problem(f"hash {digest} is not the hash of {content!r}")
        self.ledger.memories[node_id] = {"hash": digest, "content": content, "tags": sorted(set(tags)), "token": token}
        self.ledger.changes.append(["create_node", node_id])

    # -- writes --------------------------------------------------------------------------------

    def store_one(self) -> None:
        content, token = self.fresh()
        tags = self.new_tags()
        stored = self.engine.memories.store(content, tags)
        self.created(stored.memory.id, stored.memory.hash, stored.is_new, content, token, tags)

    def store_batch(self) -> None:
        items = [(*self.fresh(), self.new_tags()) for _ in range(self.rng.randint(2, 5))]
        results = self.engine.memories.store_many([NewMemory(content, tuple(tags)) for content, _, tags in items])
        for result, (content, token, tags) in zip(results, items, strict=True):
            if not result.ok:
                self.problem(f"batch item {content!r} failed: {result.error}")
                continue
            memory = result.value.memory
            self.created(memory.id, memory.hash, result.value.is_new, content, token, tags)

    def store_shared(self, content: str | None = None) -> None:
        content = content or self.rng.choice(self.pool)
        stored = self.engine.memories.store(content, [SHARED_TAG, self.tag])
        self.ledger.acknowledged += 1
        seen = self.ledger.shared.get(content)
        if seen is None:
            self.ledger.shared[content] = [stored.memory.id, stored.is_new]
            # The first store of a shared content by this worker either creates it or adds this worker's tag.
            if stored.is_new:
                self.ledger.changes.append(["create_node", stored.memory.id])
            else:
                self.ledger.changes.append(["add_tags", stored.memory.id, self.tag])
        elif stored.is_new or stored.memory.id != seen[0]:
            self.problem(f"shared content {content!r} stored again came back new or under another id")
        if self.tag not in stored.memory.tags:
            self.problem(f"shared content {content!r} lacks this worker's tag: {stored.memory.tags}")

    def relate(self) -> None:
        ids = sorted(self.ledger.memories)
        if len(ids) < 2:
            self.store_one()
            return
        src, dst = self.rng.sample(ids, 2)
        relation = self.rng.choice(RELATION_TYPES)
        known = next((k for k, v in self.ledger.edges.items() if v == [src, dst, relation]), None)
        link, is_new = self.engine.memories.relate(
            self.ledger.memories[src]["hash"], self.ledger.memories[dst]["hash"], relation
        )
        self.ledger.acknowledged += 1
        if is_new != (known is None) or (known is not None and link.edge.id != known):
            self.problem(f"relate {src}->{dst} {relation}: is_new={is_new}, expected the edge {known}")
            return
        if is_new:
            self.ledger.edges[link.edge.id] = [src, dst, relation]
            self.ledger.changes.append(["create_edge", link.edge.id])

    def relate_shared(self) -> None:
        """Link two of the first few shared memories: all workers link the same pairs, so they race."""
        src, dst = self.rng.sample(self.pool[:3], 2)
        for content in (src, dst):
            if content not in self.ledger.shared:
                self.store_shared(content)
        src_id, dst_id = self.ledger.shared[src][0], self.ledger.shared[dst][0]
        link, is_new = self.engine.memories.relate(content_hash(src), content_hash(dst), SHARED_LINK)
        self.ledger.acknowledged += 1
        key = f"{src_id}>{dst_id}"
        seen = self.ledger.shared_edges.get(key)
        if seen is None:
            self.ledger.shared_edges[key] = [link.edge.id, is_new]
            if is_new:
                self.ledger.changes.append(["create_edge", link.edge.id])
        elif is_new or link.edge.id != seen[0]:
            self.problem(f"relation {key} made again came back new or as another edge: {link.edge.id}, {seen}")

    def update(self) -> None:
        node_id = self.pick()
        if node_id is None:
            self.store_one()
            return
        entry = self.ledger.memories[node_id]
        content, token = self.fresh()
        tags = self.new_tags() if self.rng.random() < 0.5 else None
        before, after = self.engine.memories.update(entry["hash"], content=content, tags=tags)
        self.ledger.acknowledged += 1
        if before.id != node_id or after.id != node_id or after.content != content:
            self.problem(f"update of {node_id} changed the wrong memory: {before.id} -> {after.id}")
            return
        self.ledger.gone.append(entry["hash"])
        entry.update(hash=after.hash, content=content, token=token)
        if tags is not None:
            entry["tags"] = sorted(set(tags))
        self.ledger.changes.append(["update_node", node_id, after.hash])

    def delete(self) -> None:
        node_id = self.pick()
        if node_id is None:
            return
        entry = self.ledger.memories[node_id]
        deleted = self.engine.memories.delete(entry["hash"])
        self.ledger.acknowledged += 1
        if not deleted:
            self.problem(f"delete of own memory {node_id} found nothing")
            return
        del self.ledger.memories[node_id]
        self.ledger.gone.append(entry["hash"])
        # Its relations go with it, without entries of their own.
        self.ledger.edges = {k: v for k, v in self.ledger.edges.items() if node_id not in v[:2]}
        self.ledger.changes.append(["remove_node", node_id])

    # -- reads ---------------------------------------------------------------------------------

    def read_own(self) -> None:
        node_id = self.pick()
        if node_id is None:
            return
        entry = self.ledger.memories[node_id]
        memory = self.engine.memories.get(entry["hash"])
        if memory is None or memory.id != node_id or memory.content != entry["content"]:
            self.problem(f"get_memory did not return own write {node_id}: {memory}")

    def read_gone(self) -> None:
        if not self.ledger.gone:
            return
        digest = self.rng.choice(self.ledger.gone)
        memory = self.engine.memories.get(digest)
        if memory is not None:
            self.problem(f"hash {digest}, deleted or updated away, was found again: {memory.id}")

    def search_own(self) -> None:
        node_id = self.pick()
        if node_id is None:
            return
        entry = self.ledger.memories[node_id]
        hits = self.engine.memories.search(entry["token"], limit=5)
        if node_id not in [h.memory.id for h in hits]:
            self.problem(f"search for {entry['token']} missed own memory {node_id}")

    def read_links(self) -> None:
        node_id = self.pick()
        if node_id is None:
            return
        entry = self.ledger.memories[node_id]
        found = {link.edge.id for link in self.engine.memories.links(entry["hash"], "outgoing")}
        expected = {k for k, v in self.ledger.edges.items() if v[0] == node_id}
        if found != expected:
            self.problem(f"outgoing relations of {node_id}: {sorted(found)}, expected {sorted(expected)}")

    def read_stats(self) -> None:
        stats = self.engine.stats()
        if stats.memories < len(self.ledger.memories) or stats.current_seq < len(self.ledger.changes):
            self.problem(f"stats {stats} below this worker's own acknowledged writes")

    # -- the loop ------------------------------------------------------------------------------

    def run(self, steps: int) -> Ledger:
        actions: list[tuple[Callable[[], None], int]] = [
            (self.store_one, 22),
            (self.store_batch, 8),
            (self.store_shared, 8),
            (self.relate, 10),
            (self.relate_shared, 4),
            (self.update, 9),
            (self.delete, 7),
            (self.read_own, 14),
            (self.read_gone, 5),
            (self.search_own, 8),
            (self.read_links, 5),
            (self.read_stats, 4),
        ]
        calls, weights = zip(*actions, strict=True)
        for _ in range(steps):
            action = self.rng.choices(calls, weights)[0]
            try:
                action()
            except Exception:
                self.ledger.errors.append(f"worker {self.worker} {action.__name__}: {traceback.format_exc()}")
        return self.ledger


def process_worker(db: str, worker: int, steps: int, seed: int, barrier: Any, out: str) -> None:
    """A worker process: its own engine on the shared file; the ledger goes to `out` as JSON."""
    ledger = Ledger(worker)
    try:
        with Engine.open(db) as engine:
            barrier.wait(BARRIER_TIMEOUT_S)
            ledger = EngineWorker(engine, worker, seed).run(steps)
    except Exception:
        ledger.errors.append(f"worker {worker}: {traceback.format_exc()}")
    Path(out).write_text(ledger.to_json(), encoding="utf-8")


SPAWN = multiprocessing.get_context("spawn")


def run_spawned(target: Callable[..., None], arguments: Sequence[tuple[Any, ...]], outs: Sequence[Path]) -> list[str]:
    """`target(*args)` in a fresh process per argument tuple, all at once; each writes its `outs` file."""
    procs = [SPAWN.Process(target=target, args=args) for args in arguments]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(JOIN_TIMEOUT_S)
    hung = [p.pid for p in procs if p.is_alive()]
    for proc in procs:
        if proc.is_alive():
            proc.kill()
            proc.join()
    assert not hung, f"worker processes {hung} did not finish"
    assert [p.exitcode for p in procs] == [0] * len(procs)
    missing = [str(o) for o in outs if not o.exists()]
    assert not missing, f"workers wrote nothing: {missing}"
    return [o.read_text(encoding="utf-8") for o in outs]


def run_processes(db: Path, workers: int, steps: int, seed: int, out_dir: Path) -> list[Ledger]:
    barrier = SPAWN.Barrier(workers)
    outs = [out_dir / f"ledger-{w}.json" for w in range(workers)]
    arguments = [(str(db), w, steps, seed, barrier, str(outs[w])) for w in range(workers)]
    return [Ledger.from_json(text) for text in run_spawned(process_worker, arguments, outs)]


# -- checking the file against the ledgers ------------------------------------------------------


def integrity(db: Path) -> None:
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        conn.close()


def check_change_log(changes: Sequence[Change]) -> None:
    seqs = [c.seq for c in changes]
    assert seqs == list(range(1, len(seqs) + 1)), f"change log seq has gaps: {_gaps(seqs)}"


def _gaps(seqs: Sequence[int]) -> list[int]:
    present = set(seqs)
    return [s for s in range(1, max(seqs, default=0) + 1) if s not in present][:20]


def verify(db: Path, ledgers: Sequence[Ledger]) -> None:
    """The file holds exactly what the ledgers say was acknowledged, and nothing else."""
    errors = [e for ledger in ledgers for e in ledger.errors]
    assert not errors, f"{len(errors)} calls raised; the first:\n{errors[0]}"
    problems = [p for ledger in ledgers for p in ledger.problems]
    assert not problems, f"{len(problems)} wrong answers, e.g. {problems[:5]}"
    assert all(ledger.acknowledged > 0 for ledger in ledgers)

    integrity(db)
    with Engine.open(str(db)) as engine:
        changes = engine.changes()
        records = list(engine.export())

    # The change log: gapless, and one entry per acknowledged change, in each worker's order.
    check_change_log(changes)
    owner: dict[Key, int] = {}
    for ledger in ledgers:
        for key in map(tuple, ledger.changes):
            assert owner.setdefault(key, ledger.worker) == ledger.worker, f"two workers claim {key}"
    logged: dict[int, list[Key]] = {ledger.worker: [] for ledger in ledgers}
    strays = []
    for change in changes:
        key = change_key(change)
        if key in owner:
            logged[owner[key]].append(key)
        else:
            strays.append(key)
    assert not strays, f"{len(strays)} change-log entries no acknowledged write made: {strays[:5]}"
    for ledger in ledgers:
        assert logged[ledger.worker] == [tuple(k) for k in ledger.changes], f"worker {ledger.worker}'s log entries"

    # Memories: every acknowledged one, exactly once, as last written; nothing else.
    expected: dict[str, tuple[str, str, list[str]]] = {}
    for ledger in ledgers:
        for node_id, entry in ledger.memories.items():
            expected[node_id] = (entry["hash"], entry["content"], entry["tags"])
    creators: Counter[str] = Counter()
    for content in {c for ledger in ledgers for c in ledger.shared}:
        holders = [ledger for ledger in ledgers if content in ledger.shared]
        ids = {ledger.shared[content][0] for ledger in holders}
        assert len(ids) == 1, f"shared content {content!r} has several ids: {ids}"
        creators[content] = sum(1 for ledger in holders if ledger.shared[content][1])
        tags = sorted({SHARED_TAG, *(f"w{ledger.worker}" for ledger in holders)})
        expected[ids.pop()] = (content_hash(content), content, tags)
    assert all(n == 1 for n in creators.values()), f"shared contents created other than once: {creators}"
    found = {
        r["id"]: (r["memory"]["hash"], r["memory"]["content"], r["memory"]["tags"])
        for r in records
        if r["type"] == "node" and "memory" in r
    }
    lost = sorted(set(expected) - set(found))
    extra = sorted(set(found) - set(expected))
    assert not lost, f"{len(lost)} acknowledged memories are missing: {lost[:5]}"
    assert not extra, f"{len(extra)} memories nobody stored (or that were deleted): {extra[:5]}"
    wrong = [k for k in expected if expected[k] != found[k]]
    assert not wrong, f"{len(wrong)} memories differ from their last write, e.g. {wrong[0]}"
    contents = Counter(v[1] for v in found.values())
    assert max(contents.values(), default=1) == 1

    # Relations: the open ones that were made and whose ends still exist; one per linked pair.
    expected_edges = {k: tuple(v) for ledger in ledgers for k, v in ledger.edges.items()}
    for pair in {k for ledger in ledgers for k in ledger.shared_edges}:
        seen = [ledger.shared_edges[pair] for ledger in ledgers if pair in ledger.shared_edges]
        ids = {edge_id for edge_id, _ in seen}
        made = sum(1 for _, is_new in seen if is_new)
        assert (len(ids), made) == (1, 1), f"relation {pair} {SHARED_LINK} was made {made} times, as edges {ids}"
        src_id, dst_id = pair.split(">")
        expected_edges[ids.pop()] = (src_id, dst_id, SHARED_LINK)
    found_edges = {r["id"]: (r["from"], r["to"], r["edge_type"]) for r in records if r["type"] == "edge"}
    assert found_edges == expected_edges


# -- the tests -------------------------------------------------------------------------------------


def test_worker_processes_share_one_file(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    Engine.open(str(db)).close()
    ledgers = run_processes(db, workers=4, steps=160, seed=11, out_dir=tmp_path)
    verify(db, ledgers)


def first_opener(where: str, rounds: int, worker: int, barrier: Any, out: str) -> None:
    """Round after round, open a new file at the same moment as the other workers and store one memory."""
    errors = []
    for round_ in range(rounds):
        try:
            barrier.wait(BARRIER_TIMEOUT_S)
            with Engine.open(str(Path(where) / f"fresh-{round_}.db")) as engine:
                engine.memories.store(f"round {round_} worker {worker}", ["fresh"])
        except Exception:
            errors.append(f"worker {worker}, round {round_}: {traceback.format_exc()}")
    Path(out).write_text(json.dumps(errors), encoding="utf-8")


def test_processes_opening_new_files_together_all_succeed(tmp_path: Path) -> None:
    """Many rounds of several processes creating the same new file at once, to catch a narrow race."""
    workers, rounds = 6, 40
    where = tmp_path / "rounds"
    barrier = SPAWN.Barrier(workers)
    outs = [tmp_path / f"opener-{w}.json" for w in range(workers)]
    texts = run_spawned(first_opener, [(str(where), rounds, w, barrier, str(outs[w])) for w in range(workers)], outs)
    errors = [e for text in texts for e in json.loads(text)]
    assert not errors, f"{len(errors)} opens failed; the first:\n{errors[0]}"
    for round_ in range(rounds):
        db = where / f"fresh-{round_}.db"
        integrity(db)
        with Engine.open(str(db)) as engine:
            changes = engine.changes()
            found = {r["memory"]["content"] for r in engine.export() if "memory" in r}
        assert found == {f"round {round_} worker {w}" for w in range(workers)}
        assert [c.seq for c in changes] == list(range(1, workers + 1))


def test_threads_share_one_engine(tmp_path: Path) -> None:
    db = tmp_path / "threads.db"
    threads_n, steps = 6, 160
    barrier = threading.Barrier(threads_n)
    ledgers: list[Ledger] = [Ledger(w) for w in range(threads_n)]

    with Engine.open(str(db)) as engine:

        def body(worker: int) -> None:
            try:
                barrier.wait(BARRIER_TIMEOUT_S)
                ledgers[worker] = EngineWorker(engine, worker, seed=13).run(steps)
            except Exception:
                ledgers[worker].errors.append(traceback.format_exc())

        threads = [threading.Thread(target=body, args=(w,)) for w in range(threads_n)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(JOIN_TIMEOUT_S)
        assert not any(t.is_alive() for t in threads), "worker threads hung"
    verify(db, ledgers)


# -- racing to make the same relation ---------------------------------------------------------------


def link_targets(db: Path, pairs: int) -> list[str]:
    """Memories 0..pairs on a new file; pair i links memory i to memory i + 1."""
    contents = [f"link target {i}" for i in range(pairs + 1)]
    with Engine.open(str(db)) as engine:
        engine.memories.store_many([NewMemory(c, ("link",)) for c in contents])
    return [content_hash(c) for c in contents]


def link_all(engine: Engine, hashes: Sequence[str]) -> list[list[Any]]:
    """Link every memory to the next, in order: [edge id, is_new] per pair."""
    out: list[list[Any]] = []
    for src, dst in itertools.pairwise(hashes):
        link, is_new = engine.memories.relate(src, dst, "next")
        out.append([link.edge.id, is_new])
    return out


def process_linker(db: str, hashes: list[str], barrier: Any, out: str) -> None:
    with Engine.open(db) as engine:
        barrier.wait(BARRIER_TIMEOUT_S)
        Path(out).write_text(json.dumps(link_all(engine, hashes)), encoding="utf-8")


def check_links(db: Path, pairs: int, seen: Sequence[Sequence[Sequence[Any]]]) -> None:
    """Every pair was linked once: one edge, one caller told it was new, one log entry."""
    doubled = []
    for i in range(pairs):
        ids = {worker[i][0] for worker in seen}
        made = sum(1 for worker in seen if worker[i][1])
        if (len(ids), made) != (1, 1):
            doubled.append(f"pair {i}: {made} callers made it, {len(ids)} edges were returned")
    with Engine.open(str(db)) as engine:
        changes = engine.changes()
        edges = [r for r in engine.export() if r["type"] == "edge"]
    check_change_log(changes)
    open_per_pair = Counter((e["from"], e["to"]) for e in edges if e["valid_to"] is None)
    assert not doubled, f"{len(doubled)} of {pairs} relations were made more than once: {doubled[:3]}"
    assert len(edges) == pairs and set(open_per_pair.values()) == {1}
    assert Counter(c.op for c in changes) == Counter({"create_node": pairs + 1, "create_edge": pairs})


def test_threads_linking_the_same_pairs_make_each_relation_once(tmp_path: Path) -> None:
    db = tmp_path / "links.db"
    threads_n, pairs = 4, 300
    hashes = link_targets(db, pairs)
    barrier = threading.Barrier(threads_n)
    seen: list[list[list[Any]]] = [[] for _ in range(threads_n)]
    errors: list[str] = []
    with Engine.open(str(db)) as engine:

        def body(worker: int) -> None:
            try:
                barrier.wait(BARRIER_TIMEOUT_S)
                seen[worker] = link_all(engine, hashes)
            except Exception:
                errors.append(traceback.format_exc())

        threads = [threading.Thread(target=body, args=(w,)) for w in range(threads_n)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(JOIN_TIMEOUT_S)
    assert not errors, errors[0]
    check_links(db, pairs, seen)


def test_processes_linking_the_same_pairs_make_each_relation_once(tmp_path: Path) -> None:
    db = tmp_path / "links.db"
    workers, pairs = 4, 300
    hashes = link_targets(db, pairs)
    barrier = SPAWN.Barrier(workers)
    outs = [tmp_path / f"links-{w}.json" for w in range(workers)]
    texts = run_spawned(process_linker, [(str(db), hashes, barrier, str(o)) for o in outs], outs)
    check_links(db, pairs, [json.loads(text) for text in texts])


# -- several `mnemodb serve` processes on one file -------------------------------------------------


class ServerClient:
    """One `mnemodb serve` process, sent tool calls a few at a time (pipelined); every reply is checked."""

    def __init__(self, server: RawServer, name: str) -> None:
        self.server = server
        self.name = name
        self.errors: list[str] = []
        self._next_id = 0

    def call_many(self, calls: Sequence[tuple[str, dict[str, Any]]]) -> list[Any]:
        """Send all `calls` at once, then collect their replies (in any order): each tool's result, or None."""
        ids = []
        for tool, arguments in calls:
            self._next_id += 1
            ids.append(self._next_id)
            params = {"name": tool, "arguments": arguments}
            self.server.send({"jsonrpc": "2.0", "id": self._next_id, "method": "tools/call", "params": params})
        replies: dict[Any, dict[str, Any]] = {}
        while len(replies) < len(ids):
            reply = self.server.recv()
            replies[reply.get("id")] = reply
        results: list[Any] = []
        for request_id, (tool, arguments) in zip(ids, calls, strict=True):
            reply = replies[request_id]
            result = reply.get("result") or {}
            envelope = result.get("structuredContent") or {}
            if "error" in reply or result.get("isError") or envelope.get("ok") is not True:
                self.errors.append(f"{self.name} {tool} {json.dumps(arguments)[:120]} -> {json.dumps(reply)[:400]}")
                results.append(None)
            else:
                results.append(envelope["result"])
        return results


@dataclass
class ServerLedger:
    stored: dict[str, str] = field(default_factory=dict)
    """hash -> content of everything this client stored and saw acknowledged."""
    shared_new: dict[str, bool] = field(default_factory=dict)
    """shared content -> whether this client's store created it."""
    stats: int | None = None


def drive_server(client: ServerClient, index: int, chunks: int, pool: Sequence[str]) -> ServerLedger:
    """Store `chunks` x 10 memories, reading each chunk back at once, then the shared ones."""
    ledger = ServerLedger()
    for chunk in range(chunks):
        contents = [f"server {index} chunk {chunk} item {i}" for i in range(10)]
        tags = [f"s{index}", "concurrent"]
        if chunk % 3 == 2:
            (batch,) = client.call_many(
                [("store_memories", {"items": [{"content": c, "tags": tags} for c in contents]})]
            )
            results = batch["results"] if batch else []
        else:
            results = client.call_many([("store_memory", {"content": c, "tags": tags}) for c in contents])
        for content, result in zip(contents, results, strict=False):
            if result is None:
                continue
            if result.get("hash") != content_hash(content) or result.get("isNew") is not True:
                client.errors.append(f"{client.name}: store of {content!r} answered {result}")
                continue
            ledger.stored[result["hash"]] = content
        # Read-your-writes: every acknowledged store is visible to the next call on the same server.
        hashes = [content_hash(c) for c in contents]
        for digest, got in zip(hashes, client.call_many([("get_memory", {"hash": h}) for h in hashes]), strict=True):
            if got is not None and got["content"] != ledger.stored.get(digest):
                client.errors.append(f"{client.name}: get_memory {digest} returned {got['content']!r}")
    shared = client.call_many([("store_memory", {"content": c, "tags": ["shared", f"s{index}"]}) for c in pool])
    for content, result in zip(pool, shared, strict=True):
        if result is not None:
            ledger.shared_new[content] = bool(result["isNew"])
    return ledger


def read_back(client: ServerClient, ledger: ServerLedger, everything: dict[str, str]) -> None:
    """Every memory any server stored, found through this one; then its count."""
    others = [h for h in everything if h not in ledger.stored]
    for start in range(0, len(others), 25):
        part = others[start : start + 25]
        for digest, got in zip(part, client.call_many([("get_memory", {"hash": h}) for h in part]), strict=True):
            if got is not None and got["content"] != everything[digest]:
                client.errors.append(f"{client.name}: {digest} read back as {got['content']!r}")
    (stats,) = client.call_many([("memory_stats", {})])
    ledger.stats = None if stats is None else stats["memoryCount"]


def in_threads(clients: Sequence[ServerClient], work: Callable[[int], None]) -> None:
    """`work(i)` for every client at once, one thread each; an exception becomes that client's error."""
    start = threading.Barrier(len(clients))

    def body(index: int) -> None:
        try:
            start.wait(BARRIER_TIMEOUT_S)
            work(index)
        except Exception:
            clients[index].errors.append(f"{clients[index].name}: {traceback.format_exc()}")

    threads = [threading.Thread(target=body, args=(i,)) for i in range(len(clients))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(JOIN_TIMEOUT_S)
    assert not any(t.is_alive() for t in threads), "client threads hung"


def test_serve_processes_share_one_file(tmp_path: Path) -> None:
    db = tmp_path / "served" / "memory.db"
    servers_n, chunks = 3, 20
    pool = [f"a note every server stores, number {j}" for j in range(10)]
    # All start at once on a file that does not exist yet.
    servers = [RawServer(serve_command(db)) for _ in range(servers_n)]
    clients = [ServerClient(s, f"server {i}") for i, s in enumerate(servers)]
    ledgers = [ServerLedger() for _ in range(servers_n)]
    everything: dict[str, str] = {}

    def write(index: int) -> None:
        clients[index].server.initialize()
        ledgers[index] = drive_server(clients[index], index, chunks, pool)

    try:
        in_threads(clients, write)
        for ledger in ledgers:
            everything.update(ledger.stored)
        for content in pool:
            everything[content_hash(content)] = content
        in_threads(clients, lambda i: read_back(clients[i], ledgers[i], everything))
    finally:
        codes = [s.close() if s.proc.poll() is None else s.proc.returncode for s in servers]

    errors = [e for c in clients for e in c.errors]
    assert not errors, f"{len(errors)} error replies, e.g.:\n" + "\n".join(errors[:5])
    assert codes == [0] * servers_n
    locked = [s.stderr for s in servers if "locked" in s.stderr.lower()]
    assert not locked, locked[0]

    total = servers_n * chunks * 10 + len(pool)
    assert len(everything) == total
    assert [ledger.stats for ledger in ledgers] == [total] * servers_n
    for content in pool:
        created = [ledger.shared_new.get(content) for ledger in ledgers]
        assert created.count(True) == 1, f"{content!r} created {created.count(True)} times"

    integrity(db)
    with Engine.open(str(db)) as engine:
        changes = engine.changes()
        found = {r["memory"]["hash"]: r["memory"]["content"] for r in engine.export() if "memory" in r}
    assert found == everything
    check_change_log(changes)
    ops = Counter(c.op for c in changes)
    # One entry per new memory, one per server that added its tag to a shared memory.
    assert ops == Counter({"create_node": total, "add_tags": (servers_n - 1) * len(pool)})


def test_a_store_opening_while_another_connection_holds_the_file_waits_for_it(tmp_path: Path) -> None:
    # Another process creating the same new file holds it exclusively while it switches the
    # file to WAL: opening meanwhile must wait for it (as readers do), not fail with
    # "database is locked" after the writer's short busy wait, which a loaded machine
    # outlasted when several processes opened one new file together.
    db = tmp_path / "held.db"
    holder = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    release = threading.Timer(0.6, holder.execute, ("COMMIT",))
    release.start()
    try:
        with Engine.open(str(db)) as engine:
            stored = engine.memories.store("after the lock")
            found = engine.memories.get(stored.memory.hash)
            assert found is not None and found.content == "after the lock"
    finally:
        release.join()
        holder.close()
