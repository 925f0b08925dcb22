"""CPU, instructions and statements of a bulk relation write, in process, before and after.

The calls `peers.py`'s bulk insert ends with, through the path a stdio server answers a
write on (`ToolCalls.call_here` with `writes`, the tool's parameters validated, its result
encoded as the reply line): 100 relations a call, each from a new entity to a seeded one,
through each profile's batch tool (native `relate` by names, topodb `submit_batch` of
links by ids, knowledge-graph `create_relations` by names).

The graph is seeded in process through the engine's bulk paths: `size` entities with one
observation each, related as a random tree, then the entities the calls relate from (as
many as the calls need, so each call writes 100 new relations). Each measurement runs in a
child process of its own with `PYTHONPATH` set to one source tree, on its own copy of the
seeded database, so two trees (`--compare`) are measured alternately, round after round.
CPU is `time.process_time` over batches of calls (the median batch, per relation); a child
also counts the SQL statements of one call (not BEGIN, COMMIT, nor those SQLite runs
inside one).

`--callgrind` counts instructions instead: each tree's child runs under callgrind twice,
with `--calls` and with no measured calls (the same warm-up), and the difference over the
calls is the instructions a call (deterministic, where CPU times on a shared machine are not).

`--replies` checks that both trees answer byte for byte alike: each child, with a fixed clock
and ids drawn from a seeded generator, answers the calls on a fresh copy and writes their reply
lines, then the change log they appended (native `audit`) and an `explore` of the relations
as of a time before them and as of now; the outputs are compared.

    .venv/bin/python bench/bulk_relate.py --compare ../other-tree
    .venv/bin/python bench/bulk_relate.py --compare ../other-tree --callgrind --calls 5
    .venv/bin/python bench/bulk_relate.py --compare ../other-tree --replies
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from measure import fresh_copy, run_child, spread

PER_CALL = 100
BATCH = 5
"""Calls timed together (`time.process_time` ticks coarsely)."""
WARM = 3
PROFILES = ("native", "topodb", "knowledge-graph")
RELATION_TYPES = ("knows", "works_with", "part_of", "depends_on", "mentions")
WORDS = ("amber", "basil", "cedar", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper", "kelp")
HERE = Path(__file__).resolve().parent
FIXED_NOW = 4_000_000_000_000
"""The clock of a replies check: 2096, after every seeded write."""


def entity_name(i: int) -> str:
    return f"Entity {WORDS[i % len(WORDS)]} e{i}"


def bulk_name(j: int) -> str:
    return f"Bulk b{j}"


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14)))


def seed(db: Path, size: int, bulk: int, *, seed_value: int = 7) -> None:
    from mnemodb.engine import Engine
    from mnemodb.engine.graph import NewEntity, NewRelation

    rng = random.Random(seed_value)
    names = [entity_name(i) for i in range(size)] + [bulk_name(j) for j in range(bulk)]
    with Engine.open(str(db), access_interval=3600) as engine:
        for start in range(0, len(names), 2000):
            engine.graph.create_entities(
                [NewEntity(n, "person", (_sentence(rng),)) for n in names[start : start + 2000]]
            )
        relations = [NewRelation(names[i], names[rng.randrange(i)], rng.choice(RELATION_TYPES)) for i in range(1, size)]
        for start in range(0, len(relations), 2000):
            engine.graph.create_relations(relations[start : start + 2000])


def targets(size: int, bulk: int, *, seed_value: int = 11) -> list[int]:
    rng = random.Random(seed_value)
    return [rng.randrange(size) for _ in range(bulk)]


# -- a child: one tree's measurement --------------------------------------------------------------


def _arguments(profile: str, k: int, size: int, to: list[int], ids: dict[str, str]) -> tuple[str, dict[str, Any]]:
    part = range(k * PER_CALL, (k + 1) * PER_CALL)
    if profile == "native":
        return "relate", {"add": [{"from": bulk_name(j), "type": "bench_bulk", "to": entity_name(to[j])} for j in part]}
    if profile == "knowledge-graph":
        return "create_relations", {
            "relations": [{"from": bulk_name(j), "to": entity_name(to[j]), "relationType": "bench_bulk"} for j in part]
        }
    commands = [
        {"op": "link", "from": ids[bulk_name(j)], "to": ids[entity_name(to[j])], "type": "bench_bulk"} for j in part
    ]
    return "submit_batch", {"commands": commands}


def _deterministic_ids(seed_value: int) -> None:
    """New ids from a fixed time and a seeded generator: the same ids on both trees while
    they draw as many, in the same order."""
    from mnemodb.model import ids

    rng = random.Random(seed_value)
    ticks = iter(range(FIXED_NOW * 1_000_000, 2**62, 1_000_000))
    ids.time = types.SimpleNamespace(time_ns=lambda: next(ticks))  # type: ignore[attr-defined,assignment]
    ids.os = types.SimpleNamespace(urandom=rng.randbytes)  # type: ignore[attr-defined,assignment]


def _read(tools: Any, name: str, arguments: dict[str, Any], finish: Any) -> bytes:
    """A read's reply line, as a worker thread would answer it past the quick-read limit."""
    reply = tools.call_here(name, arguments, finish)
    if reply is None:
        tool = tools.tools[name]
        reply = finish(tools.profile.success(tool, tool.run(tools.engine, tool.params.validate(arguments))))
    return bytes(reply)


def child(db: Path, profile: str, size: int, calls: int, warm: int, replies: Path | None) -> dict[str, Any]:
    from mnemodb.engine import Engine
    from mnemodb.server.calls import ToolCalls
    from mnemodb.server.profiles import build_profile
    from mnemodb.server.stdio import _encoded_result

    def finish(result: Any) -> bytes:
        return _encoded_result(1, result)

    if replies is not None:
        _deterministic_ids(5)
    if os.environ.get("BULK_RELATE_COUNT_ONLY"):
        from mnemodb.server import calls as server_calls

        # Under callgrind a call runs some fifty times slower: past the quick-write limit,
        # which would hand it to the path a worker thread takes.
        server_calls.QUICK_WRITE_S = 3600.0
        from mnemodb.store.sqlite import checkpoint

        # And each call alone outlasts the pause after which the store merges its full-text
        # indexes, so the seeded file's merge would run between calls that follow one
        # another at once, which it never does at native speed: the pause scaled alike.
        if hasattr(checkpoint, "MERGE_PAUSE_S"):
            checkpoint.MERGE_PAUSE_S *= 50
    total = warm + calls
    to = targets(size, total * PER_CALL)
    options: dict[str, Any] = {} if replies is None else {"clock": lambda: FIXED_NOW}
    out: dict[str, Any] = {}
    with Engine.open(str(db), access_interval=3600, **options) as engine:
        ids: dict[str, str] = {}
        if profile == "topodb":
            wanted = [bulk_name(j) for j in range(total * PER_CALL)] + [entity_name(t) for t in to]
            for start in range(0, len(wanted), 500):
                for entity in engine.graph.open(wanted[start : start + 500]).entities:
                    ids[entity.name] = entity.id
        tools = ToolCalls(build_profile(profile), engine)

        def answer(k: int) -> bytes:
            name, arguments = _arguments(profile, k, size, to, ids)
            reply = tools.call_here(name, arguments, finish, writes=True)
            assert reply is not None
            return reply

        if replies is not None:
            first = engine.current_seq() + 1
            native = ToolCalls(build_profile("native"), engine)
            with replies.open("wb") as sink:
                for k in range(total):
                    sink.write(answer(k) + b"\n")
                since: int | None = first
                while since is not None:  # the log they appended, a page at a time
                    audit = _read(native, "audit", {"since": since, "limit": 500}, finish)
                    sink.write(audit + b"\n")
                    page = json.loads(json.loads(audit)["result"]["content"][0]["text"])
                    since = page["next_since"] if page["changes"] else None
                for as_of in (FIXED_NOW - 1, FIXED_NOW):
                    ends = [bulk_name(0), bulk_name(total * PER_CALL - 1)]
                    found = _read(native, "explore", {"from": ends, "as_of": as_of}, finish)
                    sink.write(found + b"\n")
            return out
        for k in range(warm):  # caches, statement texts
            answer(k)
        if os.environ.get("BULK_RELATE_COUNT_ONLY"):
            for k in range(warm, total):
                answer(k)
            return out
        batches: list[float] = []
        for start in range(warm, total - 1, BATCH):
            stop = min(start + BATCH, total - 1)
            started = time.process_time()
            for k in range(start, stop):
                answer(k)
            batches.append((time.process_time() - started) / ((stop - start) * PER_CALL) * 1e6)
        statements: list[str] = []
        conn = engine.store._writer  # type: ignore[attr-defined]  # SQLite's write connection
        conn.set_trace_callback(statements.append)
        try:
            answer(total - 1)
        finally:
            conn.set_trace_callback(None)
        counted = [
            s
            for s in statements
            if not s.startswith("--") and s.split()[0].upper() not in ("BEGIN", "COMMIT", "ROLLBACK", "PRAGMA")
        ]
        return {"cpu_us": statistics.median(batches), "statements": len(counted)}


def _callgrind(tree: Path, db: Path, profile: str, size: int, calls: int, workdir: Path) -> int:
    """Instructions the child ran (callgrind's total), on a fresh copy of `db`."""
    copy = workdir / f"cg-{profile}.db"
    fresh_copy(db, copy)
    out = workdir / "callgrind.out"
    env = dict(os.environ, PYTHONPATH=str(tree / "src"), BULK_RELATE_COUNT_ONLY="1")
    command = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={out}",
        sys.executable,
        str(HERE / "bulk_relate.py"),
        "--child",
        "--db",
        str(copy),
        "--profile",
        profile,
        "--size",
        str(size),
        "--calls",
        str(calls),
    ]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"callgrind child on {tree} failed:\n{done.stderr[-3000:]}")
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"no instruction count:\n{done.stderr[-2000:]}")
    copy.unlink()
    return int(found.group(1))


# -- the parent -----------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--profiles", nargs="+", default=list(PROFILES), choices=PROFILES)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=40, help="measured calls per child")
    parser.add_argument("--pythonpath", help="the source tree under test (default: this one)")
    parser.add_argument("--compare", help="a second source tree, labelled 'before'")
    parser.add_argument("--dir", help="where the seeded database is kept (reused when present)")
    parser.add_argument("--replies", action="store_true", help="compare the trees' replies instead of timing")
    parser.add_argument("--callgrind", action="store_true", help="count instructions instead of timing")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--profile", help=argparse.SUPPRESS)
    parser.add_argument("--warm", type=int, default=WARM, help=argparse.SUPPRESS)
    parser.add_argument("--replies-out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        replies = Path(args.replies_out) if args.replies_out else None
        out = child(Path(args.db), args.profile, args.size, args.calls, args.warm, replies)
        print(json.dumps(out))
        return 0

    trees: list[tuple[str, Path]] = [("after", Path(args.pythonpath or HERE.parent).resolve())]
    if args.compare:
        trees.append(("before", Path(args.compare).resolve()))
    workdir = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="bulk-relate-"))
    workdir.mkdir(parents=True, exist_ok=True)
    # Enough new entities for the longest child: its warm-up and measured calls, plus one.
    bulk = (WARM + max(args.calls, 1) + 1) * PER_CALL
    db = workdir / f"bulk-{args.size}-{bulk}.db"
    if not db.exists():
        started = time.perf_counter()
        seed(db, args.size, bulk)
        print(f"seeded {args.size:,} entities in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    status = 0
    common = ["--size", str(args.size), "--calls", str(args.calls)]
    for profile in args.profiles:
        if args.replies:
            texts: dict[str, bytes] = {}
            for label, tree in trees:
                copy = workdir / f"copy-{label}.db"
                fresh_copy(db, copy)
                written = workdir / f"replies-{profile}-{label}.jsonl"
                run_child(
                    HERE / "bulk_relate.py",
                    tree,
                    ["--db", str(copy), "--profile", profile, *common, "--replies-out", str(written)],
                )
                texts[label] = written.read_bytes()
                copy.unlink()
            same = len(set(texts.values())) == 1
            lines = texts["after"].count(b"\n")
            print(f"{profile}: {lines} replies, {'identical' if same else 'DIFFERENT'} across trees")
            status |= 0 if same else 1
            continue
        if args.callgrind:
            print(f"\n{profile}, {args.size:,} entities: instructions a call of {PER_CALL} relations (callgrind)")
            for label, tree in trees:
                full = _callgrind(tree, db, profile, args.size, args.calls, workdir)
                base = _callgrind(tree, db, profile, args.size, 0, workdir)
                print(f"| {label} | {(full - base) / args.calls:,.0f} |")
            continue
        cpu: dict[str, list[float]] = {}
        statements: dict[str, set[int]] = {}
        for round_no in range(args.rounds):
            for label, tree in trees if round_no % 2 == 0 else trees[::-1]:
                copy = workdir / f"copy-{label}.db"
                fresh_copy(db, copy)
                result = run_child(HERE / "bulk_relate.py", tree, ["--db", str(copy), "--profile", profile, *common])
                copy.unlink()
                cpu.setdefault(label, []).append(result["cpu_us"])
                statements.setdefault(label, set()).add(result["statements"])
        print(f"\n{profile}, {args.size:,} entities, {args.rounds} rounds of {args.calls} calls: CPU us a relation")
        print("| tree | CPU us/relation | statements a call |")
        print("|---|---:|---:|")
        for label, _ in trees:
            counts = "/".join(str(c) for c in sorted(statements[label]))
            print(f"| {label} | {spread(cpu[label], 1)} | {counts} |")
    return status


if __name__ == "__main__":
    sys.exit(main())
