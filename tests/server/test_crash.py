"""SIGKILL at a random moment costs no acknowledged write and leaves a file that reopens clean.

A `mnemodb serve` process is sent a stream of writes without waiting for replies, and
killed once it has acknowledged k of them (k drawn from the test's seed), with more in
flight. What it wrote to stdout before dying counts as acknowledged too. Then a fresh
engine opens the file: the integrity check passes, every acknowledged memory is there,
each batch is all or nothing, and the change log has no gap. Each test kills twice, the
second server opening the file the first one left. A kill during a long CLI import
leaves a prefix of whole import chunks, and running the import again completes it.
And when a client closes stdin with writes still in flight, every request is answered
and no answer lies about what was stored.
"""

from __future__ import annotations

import contextlib
import json
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mnemodb.engine import Engine, NewMemory, content_hash
from support import RawServer, serve_command, server_env

ROUNDS = 2
BATCH_SIZE = 50
IMPORT_CHUNK = 500  # the engine's import transaction size
# Hang guards only.
SENDER_JOIN_S = 30.0
PROGRESS_DEADLINE_S = 120.0


@dataclass
class Outcome:
    """What the file must hold after the kills so far."""

    acknowledged: set[str] = field(default_factory=set)
    """Hashes of memories whose store (single or batch) was acknowledged."""
    batches: list[tuple[list[str], bool]] = field(default_factory=list)
    """Every batch sent: its hashes, and whether it was acknowledged."""


def stores(prefix: str, count: int) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("store_memory", {"content": f"{prefix} single {i}", "tags": ["crash", f"n{i % 7}"], "importance": i % 11})
        for i in range(count)
    ]


def batches(prefix: str, count: int) -> list[tuple[str, dict[str, Any]]]:
    return [
        (
            "store_memories",
            {
                "items": [
                    {"content": f"{prefix} batch {b} item {i}", "tags": ["crash", f"b{b}"]} for i in range(BATCH_SIZE)
                ]
            },
        )
        for b in range(count)
    ]


def tool_call(index: int, call: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    tool, arguments = call
    return {"jsonrpc": "2.0", "id": index, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}


def kill_midway(db: Path, calls: Sequence[tuple[str, dict[str, Any]]], kill_after: int) -> dict[int, dict[str, Any]]:
    """Stream `calls` to a new server and SIGKILL it after `kill_after` replies.

    Returns every reply the server got out before it died, by index into `calls`.
    """
    server = RawServer(serve_command(db))
    try:
        server.initialize()

        def send_all() -> None:
            for index, call in enumerate(calls):
                try:
                    server.send(tool_call(index, call))
                except (OSError, ValueError):
                    return  # the server is gone

        sender = threading.Thread(target=send_all, daemon=True)
        sender.start()
        replies: dict[int, dict[str, Any]] = {}
        while len(replies) < kill_after:
            reply = server.recv()
            replies[reply["id"]] = reply
        server.proc.send_signal(signal.SIGKILL)
        assert server.proc.wait() == -signal.SIGKILL
        while True:  # what was already written to the pipe was acknowledged too
            try:
                reply = server.recv()
            except AssertionError:  # stdout closed
                break
            replies[reply["id"]] = reply
        sender.join(SENDER_JOIN_S)
        assert not sender.is_alive()
        return replies
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()
        with contextlib.suppress(OSError):
            assert server.proc.stdin is not None
            server.proc.stdin.close()


def ok_result(reply: dict[str, Any]) -> Any:
    """The tool's result from an acknowledged reply; fails on any error reply."""
    result = reply.get("result")
    assert result is not None and not result.get("isError"), f"error reply: {reply}"
    envelope = result["structuredContent"]
    assert envelope["ok"] is True, envelope
    return envelope["result"]


def record(outcome: Outcome, calls: Sequence[tuple[str, dict[str, Any]]], replies: dict[int, dict[str, Any]]) -> None:
    for index, (tool, arguments) in enumerate(calls):
        reply = replies.get(index)
        result = None if reply is None else ok_result(reply)
        if tool == "store_memory":
            if result is not None:
                assert result["hash"] == content_hash(arguments["content"])
                outcome.acknowledged.add(result["hash"])
            continue
        hashes = [content_hash(item["content"]) for item in arguments["items"]]
        if result is not None:
            assert result["succeeded"] == len(hashes)
            assert [r["hash"] for r in result["results"]] == hashes
            outcome.acknowledged.update(hashes)
        outcome.batches.append((hashes, result is not None))


def integrity(db: Path) -> None:
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        conn.close()


def reopen(db: Path) -> tuple[dict[str, str], Counter[str], int]:
    """A fresh engine on the file: memory hash -> node id, change-log ops, and the edge count."""
    integrity(db)
    with Engine.open(str(db)) as engine:
        changes = engine.changes()
        records = list(engine.export())
    seqs = [c.seq for c in changes]
    assert seqs == list(range(1, len(seqs) + 1)), "the change log has a gap"
    memories = {r["memory"]["hash"]: r["id"] for r in records if r["type"] == "node" and "memory" in r}
    edges = sum(1 for r in records if r["type"] == "edge")
    return memories, Counter(c.op for c in changes), edges


def check(db: Path, outcome: Outcome) -> None:
    memories, ops, _ = reopen(db)
    lost = outcome.acknowledged - memories.keys()
    assert not lost, f"{len(lost)} acknowledged memories lost, e.g. {sorted(lost)[:3]}"
    for hashes, acknowledged in outcome.batches:
        present = sum(1 for h in hashes if h in memories)
        assert present in (0, len(hashes)), f"a batch was cut: {present} of {len(hashes)} items present"
        assert present or not acknowledged
    # Every memory came with its log entry, in the same transaction.
    assert ops == Counter({"create_node": len(memories)})


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kill_during_batches(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    db = tmp_path / "batches.db"
    outcome = Outcome()
    for round_ in range(ROUNDS):
        calls = batches(f"seed {seed} round {round_}", 12)
        replies = kill_midway(db, calls, kill_after=rng.randint(1, 8))
        record(outcome, calls, replies)
        check(db, outcome)
    assert outcome.acknowledged


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kill_during_single_stores(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    db = tmp_path / "singles.db"
    outcome = Outcome()
    for round_ in range(ROUNDS):
        calls = stores(f"seed {seed} round {round_}", 300)
        replies = kill_midway(db, calls, kill_after=rng.randint(1, 200))
        record(outcome, calls, replies)
        check(db, outcome)
    assert outcome.acknowledged


def test_stdin_closed_with_writes_in_flight(tmp_path: Path) -> None:
    """The gentle end: the client closes stdin right after its last request.

    The server must still answer every request it read, and each answer must tell the
    truth: a success is stored, and a write answered with an error is not.
    """
    db = tmp_path / "closing.db"
    calls = stores("closing", 200)
    server = RawServer(serve_command(db))
    try:
        server.initialize()
        for index, call in enumerate(calls):
            server.send(tool_call(index, call))
        assert server.proc.stdin is not None
        server.proc.stdin.close()
        replies: dict[int, dict[str, Any]] = {}
        while True:
            try:
                reply = server.recv()
            except AssertionError:  # stdout closed
                break
            replies[reply["id"]] = reply
        assert server.proc.wait() == 0
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()
    memories, _, _ = reopen(db)
    stored_anyway = []
    for index, reply in replies.items():
        digest = content_hash(calls[index][1]["content"])
        if "result" in reply and not reply["result"].get("isError"):
            assert digest in memories, f"request {index} was answered with success but is missing"
        elif digest in memories:
            stored_anyway.append(json.dumps(reply))
    unanswered = len(calls) - len(replies)
    assert (unanswered, stored_anyway) == (0, []), (
        f"{unanswered} of {len(calls)} requests got no answer; {len(stored_anyway)} writes answered with an error "
        f"were stored, e.g. {stored_anyway[:1]}"
    )


# -- a kill during a long import ----------------------------------------------------------------


@dataclass(frozen=True)
class Export:
    path: Path
    memories: int
    edges: int

    @property
    def records(self) -> int:
        return self.memories + self.edges


@pytest.fixture(scope="module")
def big_export(tmp_path_factory: pytest.TempPathFactory) -> Export:
    """An export of 10,000 memories and 2,000 relations between them, written by the engine."""
    where = tmp_path_factory.mktemp("export")
    memories, edges = 10_000, 2_000
    with Engine.open(str(where / "source.db")) as engine:
        hashes: list[str] = []
        for b in range(memories // 500):
            items = [NewMemory(f"exported note {b}-{i} about topic {i % 37}", ("export", f"b{b}")) for i in range(500)]
            hashes += [r.value.memory.hash for r in engine.memories.store_many(items)]
        for i in range(edges):
            engine.memories.relate(hashes[i], hashes[(i * 7 + 1) % memories], "follows")
        path = where / "export.jsonl"
        with path.open("w", encoding="utf-8") as out:
            for rec in engine.export():
                out.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return Export(path, memories, edges)


def committed_changes(db: Path) -> int:
    """The change log's length as another reader sees it; 0 while the file has no schema yet."""
    if not db.exists():
        return 0
    try:
        conn = sqlite3.connect(db, timeout=10)
        try:
            return int(conn.execute("SELECT COALESCE(MAX(seq), 0) FROM change_log").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.OperationalError:
        return 0


def import_command(export: Path, db: Path) -> list[str]:
    return [sys.executable, "-m", "mnemodb", "import", str(export), "--db", str(db), "--json"]


def kill_import_past(export: Path, db: Path, threshold: int) -> bool:
    """Run the CLI import into `db` and SIGKILL it once `threshold` records are in.

    False when the import finished before that point was seen.
    """
    proc = subprocess.Popen(
        import_command(export, db), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=server_env()
    )
    try:
        give_up = time.monotonic() + PROGRESS_DEADLINE_S
        while committed_changes(db) < threshold and proc.poll() is None:
            assert time.monotonic() < give_up, "the import made no progress"
            time.sleep(0.005)  # polling interval
        proc.send_signal(signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        _, stderr = proc.communicate()
    assert proc.returncode in (0, -signal.SIGKILL), stderr.decode(errors="replace")
    return proc.returncode == -signal.SIGKILL


@pytest.mark.parametrize("seed", [1, 2])
def test_kill_during_cli_import(tmp_path: Path, big_export: Export, seed: int) -> None:
    rng = random.Random(seed)
    threshold = int(big_export.records * rng.uniform(0.1, 0.9))
    # Should the import outrun the kill, try again on a new file with an earlier kill point.
    for attempt in range(4):
        db = tmp_path / f"imported-{attempt}.db"
        if kill_import_past(big_export.path, db, threshold):
            break
        threshold //= 2
    else:
        pytest.fail("the import always finished before it could be killed")

    memories, ops, edges = reopen(db)
    written = len(memories) + edges
    assert written < big_export.records
    assert written % IMPORT_CHUNK == 0, f"{written} records: an import chunk was cut"
    assert ops == +Counter({"create_node": len(memories), "create_edge": edges})

    # Importing again completes it: what got in stays as it was, the rest is added.
    done = subprocess.run(import_command(big_export.path, db), capture_output=True, env=server_env(), check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    report = json.loads(done.stdout)
    assert (report["written"], report["unchanged"], report["errors"]) == (big_export.records - written, written, [])
    after, ops, edges = reopen(db)
    assert len(after) == big_export.memories and edges == big_export.edges
    assert all(after[h] == node_id for h, node_id in memories.items())
    assert ops == Counter({"create_node": big_export.memories, "create_edge": big_export.edges})
