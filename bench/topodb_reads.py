"""CPU and statements of the topodb profile's `traverse`, in process, before and after.

Two calls, each as `bench/peers.py` sends it to the topodb profile and through the same
path a stdio server answers a read on (`ToolCalls.call_here`, the tool's parameters
validated, its result encoded as the reply line):

- `neighbours`: `traverse` with `max_hops` 1 from an entity;
- `traverse`: `traverse` with `max_hops` 2 from an entity.

The graph is `bench/peers.py`'s topodb-shaped workload (same seed, same picks of the
entities the reads start from), loaded in process through the profile's `submit_batch`
as peers.py loads it: `size` entities, each with a memory linked `about` it, and `size`-1
typed relations making a random tree (each entity to an older one). Each measurement
runs in a child process of its own with `PYTHONPATH` set to one source tree, so two trees
(`--compare`) are measured on the same database file, alternately, round after round (the
machine may be shared: CPU is `time.process_time`, the median of batches of calls, and
each row is the range over the rounds with its median). A child also counts the SQL
statements each call runs (not counting BEGIN and COMMIT, nor the statements SQLite runs
inside one), and the nodes and edges its replies hold on average.

`--replies` checks that both trees answer byte for byte alike: each child answers, on its
own fresh copy of the seeded database, every pick's `traverse` at 1 to 4 hops, both ways,
out, in, typed, of no type, and as of a time when half the relations existed, and writes
the reply lines; the copies are compared.

    .venv/bin/python bench/topodb_reads.py --compare ../other-tree --sizes 10000 100000
    .venv/bin/python bench/topodb_reads.py --compare ../other-tree --sizes 10000 --replies
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from measure import fresh_copy, run_child, spread

OPERATIONS = ("neighbours", "traverse")
BATCH = 25
"""Calls timed together (`time.process_time` ticks coarsely for one call)."""
HERE = Path(__file__).resolve().parent
FIXED_NOW = 4_000_000_000_000
"""The clock of a replies check: 2096, after every write."""
EMPTY_SCOPE = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
"""A well-formed ULID that names no scope and no node."""


# -- seeding (in this process, with this tree) ------------------------------------------------------


def seed(db: Path, size: int, *, seed_value: int, reads: int) -> dict[str, Any]:
    """peers.py's topodb-shaped store, through the profile's `submit_batch`; what the
    children need of it (the entities' ids, the picks, a time between the relations)."""
    from mnemodb.engine import Engine
    from mnemodb.server.calls import ToolCalls
    from mnemodb.server.profiles import build_profile
    from peers import LINK_BATCH, SEED_BATCH, _entity_commands, build_workload

    work = build_workload(size, seed=seed_value, queries=1, reads=reads, writes=1, bulk=1)
    ids: list[str] = []
    half = 0
    with Engine.open(str(db)) as engine:
        tools = ToolCalls(build_profile("topodb"), engine)
        submit = tools.tools["submit_batch"]

        def batch(commands: list[dict[str, Any]]) -> Any:
            return submit.run(engine, submit.params.validate({"commands": commands}))

        for start in range(0, size, SEED_BATCH):
            part = slice(start, min(start + SEED_BATCH, size))
            result = batch(_entity_commands(work.names[part], work.types[part], work.texts[part]))
            ids += [str(i) for i in result["ids"][0::3]]
        for start in range(0, len(work.parents), LINK_BATCH):
            if not half and start >= len(work.parents) // 2:
                half = engine.clock()
                time.sleep(0.002)  # the relations after it are strictly later
            batch(
                [
                    {"op": "link", "from": ids[i + 1], "to": ids[work.parents[i]], "type": work.relation_types[i]}
                    for i in range(start, min(start + LINK_BATCH, len(work.parents)))
                ]
            )
    return {"ids": ids, "picks": work.picks, "half": half, "types": sorted(set(work.relation_types))}


# -- a child: one tree's measurement --------------------------------------------------------------


def child(db: Path, meta: dict[str, Any], calls_per_op: int, replies: Path | None) -> dict[str, Any]:
    from mnemodb.engine import Engine
    from mnemodb.server.calls import ToolCalls
    from mnemodb.server.profiles import build_profile
    from mnemodb.server.stdio import _encoded_result

    ids: list[str] = meta["ids"]
    picks: list[int] = meta["picks"]

    def call_of(operation: str, k: int) -> dict[str, Any]:
        return {"seed_id": ids[picks[k % len(picks)]], "max_hops": 1 if operation == "neighbours" else 2}

    def finish(result: dict[str, Any]) -> bytes:
        return _encoded_result(1, result)

    out: dict[str, Any] = {}
    options: dict[str, Any] = {} if replies is None else {"clock": lambda: FIXED_NOW}
    with Engine.open(str(db), **options) as engine:
        tools = ToolCalls(build_profile("topodb"), engine)

        def answer(arguments: dict[str, Any]) -> bytes:
            reply = tools.call_here("traverse", arguments, finish)
            if reply is None:  # past the quick-read limit (a busy machine): as a worker thread would
                tool = tools.tools["traverse"]
                reply = finish(tools.profile.success(tool, tool.run(engine, tool.params.validate(arguments))))
            return reply

        if replies is not None:
            variants: list[dict[str, Any]] = [{"max_hops": hops} for hops in (1, 2, 3, 4)]
            variants += [{"max_hops": 2, "direction": way} for way in ("out", "in")]
            variants += [
                {"max_hops": 3, "edge_types": meta["types"][:2]},
                {"max_hops": 2, "edge_types": ["about"], "direction": "in"},
                {"max_hops": 2, "edge_types": []},
                {"max_hops": 3, "as_of": meta["half"]},
                {"max_hops": 2, "scope": EMPTY_SCOPE},
                {"max_hops": 2, "scopes": ["shared", EMPTY_SCOPE]},
            ]
            with replies.open("wb") as sink:
                for pick in picks:
                    for variant in variants:
                        sink.write(answer({"seed_id": ids[pick], **variant}) + b"\n")
                sink.write(answer({"seed_id": EMPTY_SCOPE}) + b"\n")  # no such node
            return out
        for operation in OPERATIONS:
            shown = 0
            for k in range(min(calls_per_op, 50)):  # warm: caches, statement texts
                answer(call_of(operation, k))
            batches: list[float] = []
            for start in range(0, calls_per_op, BATCH):
                started = time.process_time()
                for k in range(start, min(start + BATCH, calls_per_op)):
                    answer(call_of(operation, k))
                batches.append((time.process_time() - started) / (min(start + BATCH, calls_per_op) - start) * 1e6)
            statements: list[str] = []
            counts: list[int] = []
            with engine.store.read() as tx:
                conn = tx.conn  # type: ignore[attr-defined]  # SQLite's read transaction
            for k in range(len(picks)):
                statements.clear()
                conn.set_trace_callback(statements.append)
                try:
                    reply = answer(call_of(operation, k))
                finally:
                    conn.set_trace_callback(None)
                counts.append(
                    sum(
                        1
                        for s in statements
                        if not s.startswith("--")
                        and s.split()[0].upper() not in ("BEGIN", "COMMIT", "ROLLBACK", "PRAGMA")
                    )
                )
                subgraph = json.loads(reply)["result"]["structuredContent"]["subgraph"]
                shown += len(subgraph["nodes"]) + len(subgraph["edges"])
            out[operation] = {
                "cpu_us": statistics.median(batches),
                "statements": statistics.mean(counts),
                "shown": shown / len(picks),
            }
    return out


# -- the parent -----------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=400, help="calls of each operation per round")
    parser.add_argument("--seed", type=int, default=7, help="the workload's seed, as peers.py's (default 7)")
    parser.add_argument("--reads", type=int, default=200, help="picks of a start entity, as peers.py's (default 200)")
    parser.add_argument("--pythonpath", help="the source tree under test (default: this one)")
    parser.add_argument("--compare", help="a second source tree, labelled 'before'")
    parser.add_argument("--dir", help="where the seeded databases are kept (reused when present)")
    parser.add_argument("--replies", action="store_true", help="compare the trees' replies instead of timing")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--replies-out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        db = Path(args.db)
        meta = json.loads(Path(args.db + ".json").read_text())
        out = child(db, meta, args.calls, Path(args.replies_out) if args.replies_out else None)
        print(json.dumps(out))
        return 0

    trees: list[tuple[str, Path]] = [("after", Path(args.pythonpath or HERE.parent).resolve())]
    if args.compare:
        trees.append(("before", Path(args.compare).resolve()))
    workdir = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="topodb-reads-"))
    workdir.mkdir(parents=True, exist_ok=True)
    status = 0
    for size in args.sizes:
        db = workdir / f"topodb-{size}-{args.seed}-{args.reads}.db"
        meta_path = Path(f"{db}.json")
        if not meta_path.exists():
            db.unlink(missing_ok=True)
            started = time.perf_counter()
            meta = seed(db, size, seed_value=args.seed, reads=args.reads)
            meta_path.write_text(json.dumps(meta))
            print(f"seeded {size:,} entities in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        if args.replies:
            texts: dict[str, bytes] = {}
            for label, tree in trees:
                copy = workdir / f"copy-{size}-{label}.db"
                fresh_copy(db, copy)
                shutil.copyfile(meta_path, f"{copy}.json")
                written = workdir / f"replies-{size}-{label}.jsonl"
                run_child(HERE / "topodb_reads.py", tree, ["--db", str(copy), "--replies-out", str(written)])
                texts[label] = written.read_bytes()
                copy.unlink()
                Path(f"{copy}.json").unlink()
            same = len(set(texts.values())) == 1
            lines = texts["after"].count(b"\n")
            print(f"{size:,} entities: {lines} replies, {'identical' if same else 'DIFFERENT'} across trees")
            status |= 0 if same else 1
            continue
        cpu: dict[tuple[str, str], list[float]] = {}
        figures_of: dict[tuple[str, str], dict[str, Any]] = {}
        for round_no in range(args.rounds):
            # Alternately, so that neither tree always runs first (after a quiet spell, say).
            for label, tree in trees if round_no % 2 == 0 else trees[::-1]:
                result = run_child(HERE / "topodb_reads.py", tree, ["--db", str(db), "--calls", str(args.calls)])
                for operation, figures in result.items():
                    cpu.setdefault((label, operation), []).append(figures["cpu_us"])
                    figures_of[(label, operation)] = figures
        print(f"\n{size:,} entities, {args.rounds} rounds of {args.calls} calls: CPU us per call (range, median)")
        print("| operation | tree | CPU us/call | statements/call | nodes+edges/reply |")
        print("|---|---|---:|---:|---:|")
        for operation in OPERATIONS:
            for label, _ in trees:
                figures = figures_of[(label, operation)]
                print(
                    f"| {operation} | {label} | {spread(cpu[(label, operation)])} | "
                    f"{figures['statements']:.2f} | {figures['shown']:.1f} |"
                )
    return status


if __name__ == "__main__":
    sys.exit(main())
