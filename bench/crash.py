"""Crash check: SIGKILL `mnemodb serve` (and `mnemodb import`) at random points, many times.

Each run streams writes to a server without waiting for replies and kills it with
SIGKILL once it has acknowledged a random number of them, with more in flight; replies
already in the pipe count as acknowledged too. Then a fresh engine opens the file and
checks that SQLite's integrity check passes, every acknowledged memory is present, each
`store_memories` batch is all or nothing, every memory has its change-log entry and the
change log has no gap. The batch and single-store runs each keep one file across runs,
so every server also starts on the file a previous kill left. Every `--import-every`-th
run kills a CLI import part-way instead, checks the file, and imports again to the end.

Usage: python bench/crash.py [--runs 50] [--db-dir DIR] [--seed 1]
Exit status 1 when any check failed.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from measure import read_back
from mnemodb.engine import Engine, NewMemory, content_hash
from serve_client import ServeProcess, ServerGone, serve_env, tool_outcome

IMPORT_CHUNK = 500  # the engine's import transaction size

Call = tuple[str, dict[str, Any]]


@dataclass
class FileState:
    """What one database file must hold, accumulated over the runs that used it."""

    path: Path
    acknowledged: set[str] = field(default_factory=set)
    batches: list[tuple[list[str], bool]] = field(default_factory=list)


@dataclass
class RunResult:
    mode: str
    killed: bool
    detail: str
    checked: int
    """Acknowledged writes (or committed import records) verified after this run."""
    failures: list[str]


# -- checks -----------------------------------------------------------------------------------------


def open_and_check(db: Path) -> tuple[dict[str, str], Counter[str], int, list[str]]:
    """Integrity and change log of a file: (memory hash -> node id, log ops, edge count, failures)."""
    file = read_back(db)
    failures = list(file.integrity)
    if file.gap_text:
        failures.append(file.gap_text)
    changes, records = file.changes, file.records
    memories = {r["memory"]["hash"]: r["id"] for r in records if r["type"] == "node" and "memory" in r}
    edges = sum(1 for r in records if r["type"] == "edge")
    return memories, Counter(c.op for c in changes), edges, failures


def check_served_file(state: FileState) -> tuple[int, list[str]]:
    memories, ops, _, failures = open_and_check(state.path)
    lost = state.acknowledged - memories.keys()
    if lost:
        failures.append(f"{len(lost)} acknowledged memories lost, e.g. {sorted(lost)[:3]}")
    for number, (hashes, acknowledged) in enumerate(state.batches):
        present = sum(1 for h in hashes if h in memories)
        if present not in (0, len(hashes)):
            failures.append(f"batch {number} was cut: {present} of {len(hashes)} items present")
        elif acknowledged and not present:
            failures.append(f"acknowledged batch {number} is missing")
    if ops != Counter({"create_node": len(memories)}):
        failures.append(f"{len(memories)} memories but change-log ops {dict(ops)}")
    return len(state.acknowledged), failures


# -- killing a server -------------------------------------------------------------------------------


def single_calls(prefix: str, count: int) -> list[Call]:
    return [
        ("store_memory", {"content": f"{prefix} single {i}", "tags": ["crash", f"n{i % 7}"], "importance": i % 11})
        for i in range(count)
    ]


def batch_calls(prefix: str, count: int, size: int) -> list[Call]:
    return [
        (
            "store_memories",
            {"items": [{"content": f"{prefix} batch {b} item {i}", "tags": ["crash", f"b{b}"]} for i in range(size)]},
        )
        for b in range(count)
    ]


def kill_midway(db: Path, calls: Sequence[Call], kill_after: int) -> tuple[dict[int, dict[str, Any]], int]:
    """Stream `calls` to a new server, SIGKILL it after `kill_after` replies.

    Returns every reply it got out (by index into `calls`) and how many came before the kill.
    """
    server = ServeProcess(db)
    try:
        server.initialize()

        def send_all() -> None:
            for index, (tool, arguments) in enumerate(calls):
                try:
                    server.submit(tool, arguments, request_id=index)
                except (OSError, ValueError):
                    return

        sender = threading.Thread(target=send_all, daemon=True)
        sender.start()
        replies: dict[int, dict[str, Any]] = {}
        while len(replies) < kill_after:
            reply = server.recv()
            replies[reply["id"]] = reply
        before_kill = len(replies)
        status = server.kill()
        if status != -signal.SIGKILL:
            raise RuntimeError(f"the server ended with {status} before it was killed:\n{server.stderr}")
        while True:
            try:
                reply = server.recv()
            except ServerGone:
                break
            replies[reply["id"]] = reply
        sender.join(30)
        return replies, before_kill
    finally:
        if server.proc.poll() is None:
            server.kill()
        server.close()


def record(state: FileState, calls: Sequence[Call], replies: dict[int, dict[str, Any]]) -> list[str]:
    failures = []
    for index, (tool, arguments) in enumerate(calls):
        reply = replies.get(index)
        result: Any = None
        ok, result = tool_outcome(reply) if reply is not None else (False, None)
        if reply is not None and not ok:
            failures.append(f"request {index} ({tool}) answered with an error: {result}")
        if tool == "store_memory":
            if ok:
                state.acknowledged.add(content_hash(arguments["content"]))
            continue
        hashes = [content_hash(item["content"]) for item in arguments["items"]]
        if ok:
            if result.get("succeeded") != len(hashes):
                failures.append(f"batch {index} stored {result.get('succeeded')} of {len(hashes)}")
            state.acknowledged.update(hashes)
        state.batches.append((hashes, ok))
    return failures


def run_server_kill(state: FileState, mode: str, run: int, rng: random.Random, args: argparse.Namespace) -> RunResult:
    prefix = f"run {run} seed {args.seed}"
    if mode == "batch":
        calls = batch_calls(prefix, args.batches, args.batch_size)
        kill_after = rng.randint(1, max(1, args.batches * 2 // 3))
    else:
        calls = single_calls(prefix, args.singles)
        kill_after = rng.randint(1, max(1, args.singles * 2 // 3))
    replies, before_kill = kill_midway(state.path, calls, kill_after)
    failures = record(state, calls, replies)
    checked, more = check_served_file(state)
    detail = (
        f"killed after {before_kill} replies, {len(replies) - before_kill} more in the pipe, "
        f"{len(calls) - len(replies)} of {len(calls)} unanswered"
    )
    return RunResult(mode, True, detail, checked, failures + more)


# -- killing an import ------------------------------------------------------------------------------


def make_export(where: Path, memories: int, edges: int) -> Path:
    """An export of `memories` memories and `edges` relations, written by the engine."""
    path = where / "export.jsonl"
    source = where / "export-source.db"
    with Engine.open(str(source)) as engine:
        hashes: list[str] = []
        for start in range(0, memories, 500):
            items = [
                NewMemory(f"exported note {i} about topic {i % 37}", ("export", f"t{i % 11}"))
                for i in range(start, min(memories, start + 500))
            ]
            hashes += [r.value.memory.hash for r in engine.memories.store_many(items)]
        for i in range(min(edges, memories - 1)):
            engine.memories.relate(hashes[i], hashes[i + 1], "follows")
        with path.open("w", encoding="utf-8") as out:
            for rec in engine.export():
                out.write(json.dumps(rec, ensure_ascii=False) + "\n")
    source.unlink()
    return path


def committed_changes(db: Path) -> int:
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


def run_import_kill(db: Path, export: Path, total: int, rng: random.Random) -> RunResult:
    threshold = int(total * rng.uniform(0.05, 0.9))
    proc = subprocess.Popen(
        import_command(export, db), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=serve_env()
    )
    give_up = time.monotonic() + 300
    while committed_changes(db) < threshold and proc.poll() is None and time.monotonic() < give_up:
        time.sleep(0.005)
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    _, stderr = proc.communicate()
    if proc.returncode != -signal.SIGKILL:
        detail = f"the import ended ({proc.returncode}) before the kill at {threshold}; not counted"
        failures = [] if proc.returncode == 0 else [f"import failed: {stderr.decode(errors='replace')[-500:]}"]
        return RunResult("import", False, detail, 0, failures)

    memories, ops, edges, failures = open_and_check(db)
    written = len(memories) + edges
    if written % IMPORT_CHUNK or written >= total:
        failures.append(f"{written} of {total} records after the kill: not a whole number of chunks")
    expected_ops = +Counter({"create_node": len(memories), "create_edge": edges})
    if ops != expected_ops:
        failures.append(f"{len(memories)} memories and {edges} edges but change-log ops {dict(ops)}")
    done = subprocess.run(import_command(export, db), capture_output=True, env=serve_env(), check=False)
    if done.returncode != 0:
        failures.append(f"re-import failed: {done.stderr.decode(errors='replace')[-500:]}")
    else:
        report = json.loads(done.stdout)
        if (report["written"], report["unchanged"]) != (total - written, written):
            failures.append(f"re-import wrote {report['written']}, kept {report['unchanged']}; {written} were in")
        after, ops, after_edges, more = open_and_check(db)
        failures += more
        if len(after) + after_edges != total or any(after.get(h) != i for h, i in memories.items()):
            failures.append(f"after re-import: {len(after)} memories, {after_edges} edges, of {total} records")
    detail = f"killed at {written} of {total} records committed (kill point {threshold})"
    return RunResult("import", True, detail, written, failures)


# -- main ---------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50, help="how many kills (default 50)")
    parser.add_argument("--db-dir", type=Path, help="where the database files go (default: a temporary directory)")
    parser.add_argument("--seed", type=int, default=1, help="random seed for the kill points (default 1)")
    parser.add_argument("--singles", type=int, default=300, help="store_memory calls per single-store run")
    parser.add_argument("--batches", type=int, default=12, help="store_memories calls per batch run")
    parser.add_argument("--batch-size", type=int, default=50, help="items per store_memories call (max 50)")
    parser.add_argument("--import-every", type=int, default=5, help="every Nth run kills an import (0: never)")
    parser.add_argument("--import-memories", type=int, default=20_000, help="memories in the import file")
    parser.add_argument("--keep", action="store_true", help="keep the database files")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    rng = random.Random(args.seed)
    temporary = args.db_dir is None
    where = Path(tempfile.mkdtemp(prefix="mnemodb-crash-")) if temporary else args.db_dir
    where.mkdir(parents=True, exist_ok=True)
    files = {mode: FileState(where / f"crash-{mode}-{args.seed}.db") for mode in ("batch", "single")}
    for state in files.values():
        for suffix in ("", "-wal", "-shm"):
            Path(f"{state.path}{suffix}").unlink(missing_ok=True)
    export: Path | None = None
    export_records = 0
    kills = checks = imported = 0
    failed_runs = 0
    started = time.monotonic()
    try:
        for run in range(1, args.runs + 1):
            if args.import_every and run % args.import_every == 0:
                if export is None:
                    edges = min(args.import_memories // 5, args.import_memories - 1)
                    export = make_export(where, args.import_memories, edges)
                    export_records = args.import_memories + edges
                db = where / f"crash-import-{args.seed}-{run}.db"
                result = run_import_kill(db, export, export_records, rng)
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{db}{suffix}").unlink(missing_ok=True)
            else:
                mode = "batch" if run % 2 else "single"
                result = run_server_kill(files[mode], mode, run, rng, args)
            kills += result.killed
            checks += result.checked
            imported += result.checked if result.mode == "import" else 0
            status = "ok" if not result.failures else f"FAILED ({len(result.failures)})"
            print(f"run {run:3}/{args.runs} {result.mode:6} {result.detail}; checked {result.checked}: {status}")
            for failure in result.failures:
                print(f"    {failure}")
            failed_runs += bool(result.failures)
            sys.stdout.flush()
    except (ServerGone, TimeoutError, RuntimeError) as exc:
        print(f"run aborted: {type(exc).__name__}: {exc}")
        failed_runs += 1
    finally:
        if temporary and not args.keep:
            shutil.rmtree(where, ignore_errors=True)
    elapsed = time.monotonic() - started
    acknowledged = sum(len(state.acknowledged) for state in files.values())
    print(
        f"\ntotal: {kills} kills in {args.runs} runs; {acknowledged} acknowledged writes and {imported} "
        f"committed import records, {checks} presence checks in all; {failed_runs} failed runs; {elapsed:.1f}s"
    )
    return 1 if failed_runs else 0


if __name__ == "__main__":
    sys.exit(main())
