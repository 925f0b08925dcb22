"""CPU and statements of the knowledge-graph profile's `search_nodes`, in process, before and after.

The workload is bench/peers.py's (the same `build_workload`, same seed): N entities (two
content words and a serial as the name, one of six types), each with one observation, a
sentence of bench_store's corpus; N-1 relations, entity i to a random earlier one; and
its 200 word queries (1-3 content words of a seeded sentence), which are substring
searches that match up to a few thousand entities a query at 100,000, every one returned
in full with the relations touching it. It is seeded in process through the engine's
bulk paths (`create_entities` and `create_relations`, 2,000 a call).

Each call is answered as the stdio transport answers it: `ToolCalls.call_here` on the
calling thread (the parameters validated, the result encoded as the reply line by the
stdio transport's encoder), or, when that gives the call up (its statements ran past the
quick-read limit, or the tree remembers that the tool's last try there did),
`ToolCalls.call` on a worker thread, in one event loop. Each measurement runs in a child
process of its own with `PYTHONPATH` set to one source tree, so two trees (`--compare`)
are measured on the same database file, alternately, round after round (the machine may
be shared: CPU is `time.process_time` of every thread, the median of batches of calls,
and each row is the range over the rounds with its median). A child also counts the SQL
statements of one call (run on its own thread, not counting BEGIN, COMMIT and PRAGMA, nor
the statements SQLite runs inside one), the calls tried on the calling thread and
stopped, the calls answered on a worker thread, and the replies' bytes.

`--replies` checks that both trees answer byte for byte alike: each child answers every
query once (plain, then with `includeNeighbors`, with `limit`, and some fuzzily), writes
the reply lines, and the files are compared. `--profile` prints where one tree's time
goes (cProfile over one pass of the queries, by own time).

    .venv/bin/python bench/kg_search.py --compare ../other-tree --sizes 10000 100000
    .venv/bin/python bench/kg_search.py --compare ../other-tree --sizes 10000 100000 --replies
    .venv/bin/python bench/kg_search.py --sizes 100000 --profile
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from measure import run_child, spread

HERE = Path(__file__).resolve().parent
BATCH = 10
"""Calls timed together (`time.process_time` ticks coarsely for one call)."""
CHUNK = 2000
WORKLOAD = {"seed": 7, "queries": 200, "reads": 200, "writes": 50, "bulk": 2000}
"""bench/peers.py's defaults: the same entities, relations and queries."""


def _queries(size: int) -> list[str]:
    sys.path.insert(0, str(HERE))
    from peers import build_workload

    return build_workload(size, **WORKLOAD).queries


# -- seeding (in this process, with this tree) ------------------------------------------------------


def seed(db: Path, size: int) -> None:
    sys.path.insert(0, str(HERE))
    from mnemodb.engine import Engine
    from mnemodb.engine.graph import NewEntity, NewRelation
    from peers import build_workload

    work = build_workload(size, **WORKLOAD)
    with Engine.open(str(db), access_interval=3600) as engine:
        for start in range(0, size, CHUNK):
            engine.graph.create_entities(
                [
                    NewEntity(work.names[i], work.types[i], (work.texts[i],))
                    for i in range(start, min(start + CHUNK, size))
                ]
            )
        relations = [
            NewRelation(work.names[i + 1], work.names[parent], work.relation_types[i])
            for i, parent in enumerate(work.parents)
        ]
        for start in range(0, len(relations), CHUNK):
            engine.graph.create_relations(relations[start : start + CHUNK])


# -- a child: one tree's measurement --------------------------------------------------------------


def _variants(queries: Sequence[str]) -> list[dict[str, Any]]:
    """What a replies check asks: every query plain, then some with the other parameters."""
    calls: list[dict[str, Any]] = [{"query": q} for q in queries]
    calls += [{"query": q, "includeNeighbors": True} for q in queries[:20]]
    calls += [{"query": q, "limit": 10} for q in queries[:20]]
    calls += [{"query": q, "limit": 5, "includeNeighbors": True} for q in queries[20:30]]
    calls += [{"query": q, "fuzzy": True} for q in queries[30:35]]
    calls += [{"query": f"+{q.split()[0]} -{q.split()[-1]}"} for q in queries[35:45] if len(q.split()) > 1]
    calls += [{"query": f"name:{q.split()[0]}"} for q in queries[45:55]]
    return calls


def child(db: Path, size: int, calls: int, replies: Path | None, profile: bool) -> dict[str, Any]:
    import anyio

    out: dict[str, Any] = {}

    async def run() -> None:
        out.update(await _child(db, size, calls, replies, profile))

    anyio.run(run)
    return out


async def _child(db: Path, size: int, calls: int, replies: Path | None, profile: bool) -> dict[str, Any]:
    from mnemodb.engine import Engine
    from mnemodb.server.calls import ToolCalls
    from mnemodb.server.profiles import build_profile
    from mnemodb.server.stdio import _encoded_result

    def finish(result: dict[str, Any]) -> bytes:
        return _encoded_result(1, result)

    queries = _queries(size)
    stopped = on_worker = 0
    with Engine.open(str(db), access_interval=3600) as engine:
        # Replies are compared without the tool's time limit: on a busy machine the
        # largest (30 MB at 100,000 entities) may take longer, and a timeout is no answer.
        tools = ToolCalls(build_profile("knowledge-graph"), engine, tool_timeout_ms=0 if replies else 15_000)
        tool = tools.tools["search_nodes"]

        async def answer(arguments: dict[str, Any]) -> bytes:
            # As the stdio transport answers a call: here if it is quick, else on a worker
            # thread (`ToolCalls.call`), after a try here that was stopped unless the tree
            # remembers that the tool's last try overran (`ToolCalls.overran`).
            nonlocal stopped, on_worker
            skipped = "search_nodes" in getattr(tools, "overran", ())
            reply = tools.call_here("search_nodes", arguments, finish)
            if reply is None:
                on_worker += 1
                stopped += 0 if skipped else 1
                reply = await tools.call("search_nodes", arguments, finish)
            return reply

        if replies is not None:
            with replies.open("wb") as sink:
                for arguments in _variants(queries):
                    sink.write(await answer(arguments) + b"\n")
            return {}
        if profile:
            import cProfile
            import pstats

            for q in queries[:10]:
                finish(tools.profile.success(tool, tool.run(engine, {"query": q})))
            profiler = cProfile.Profile()
            profiler.enable()
            for q in queries:  # on this thread, without the quick limit: every call once
                finish(tools.profile.success(tool, tool.run(engine, {"query": q})))
            profiler.disable()
            stats = pstats.Stats(profiler, stream=sys.stderr)
            stats.sort_stats("tottime").print_stats(25)
            stats.sort_stats("cumulative").print_stats(30)
            return {}
        for k in range(min(calls, 20)):  # warm: caches, statement texts
            await answer({"query": queries[k % len(queries)]})
        stopped = on_worker = 0
        # Timed in batches: on a shared machine a burst of other work inflates some
        # batches, and the median batch is what a call costs between bursts.
        batches: list[float] = []
        sizes: list[int] = []
        for start in range(0, calls, BATCH):
            stop = min(start + BATCH, calls)
            started = time.process_time()
            for k in range(start, stop):
                sizes.append(len(await answer({"query": queries[k % len(queries)]})))
            batches.append((time.process_time() - started) / (stop - start) * 1e3)
        # The statements of one call, run on this thread (a worker thread has its own
        # connection) and without the quick limit.
        statements: list[str] = []
        with engine.store.read() as tx:
            conn = tx.conn  # type: ignore[attr-defined]  # SQLite's read transaction
        conn.set_trace_callback(statements.append)
        try:
            finish(tools.profile.success(tool, tool.run(engine, {"query": queries[0]})))
        finally:
            conn.set_trace_callback(None)
        counted = [
            s
            for s in statements
            if not s.startswith("--") and s.split()[0].upper() not in ("BEGIN", "COMMIT", "ROLLBACK", "PRAGMA")
        ]
        return {
            "cpu_ms": statistics.median(batches),
            "statements": len(counted),
            "stopped": stopped,
            "on_worker": on_worker,
            "reply_kb": statistics.mean(sizes) / 1024,
            "reply_kb_max": max(sizes) / 1024,
        }


# -- the parent -----------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--calls", type=int, default=200, help="calls per round (the queries in turn)")
    parser.add_argument("--pythonpath", help="the source tree under test (default: this one)")
    parser.add_argument("--compare", help="a second source tree, labelled 'before'")
    parser.add_argument("--dir", help="where the seeded databases are kept (reused when present)")
    parser.add_argument("--replies", action="store_true", help="compare the trees' replies instead of timing")
    parser.add_argument("--profile", action="store_true", help="cProfile one pass of the queries (the first tree)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--replies-out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        out = child(
            Path(args.db), args.size, args.calls, Path(args.replies_out) if args.replies_out else None, args.profile
        )
        print(json.dumps(out))
        return 0

    trees: list[tuple[str, Path]] = [("after", Path(args.pythonpath or HERE.parent).resolve())]
    if args.compare:
        trees.append(("before", Path(args.compare).resolve()))
    workdir = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="kg-search-"))
    workdir.mkdir(parents=True, exist_ok=True)
    status = 0
    for size in args.sizes:
        db = workdir / f"kg-{size}.db"
        if not db.exists():
            started = time.perf_counter()
            seed(db, size)
            print(f"seeded {size:,} entities in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        common = ["--db", str(db), "--size", str(size)]
        if args.profile:
            run_child(HERE / "kg_search.py", trees[0][1], [*common, "--profile"], show_stderr=True)
            continue
        if args.replies:
            texts: dict[str, bytes] = {}
            for label, tree in trees:
                written = workdir / f"replies-{size}-{label}.jsonl"
                run_child(HERE / "kg_search.py", tree, [*common, "--replies-out", str(written)])
                texts[label] = written.read_bytes()
            same = len(set(texts.values())) == 1
            lines = texts["after"].count(b"\n")
            megabytes = len(texts["after"]) / 1e6
            verdict = "identical" if same else "DIFFERENT"
            print(f"{size:,} entities: {lines} replies ({megabytes:.1f} MB), {verdict} across trees")
            status |= 0 if same else 1
            continue
        figures: dict[str, list[dict[str, Any]]] = {label: [] for label, _ in trees}
        for round_no in range(args.rounds):
            # Alternately, so that neither tree always runs first (after a quiet spell, say).
            for label, tree in trees if round_no % 2 == 0 else trees[::-1]:
                figures[label].append(run_child(HERE / "kg_search.py", tree, [*common, "--calls", str(args.calls)]))
        print(f"\n{size:,} entities, {args.rounds} rounds of {args.calls} calls: `search_nodes`, CPU ms per call")
        print("| tree | CPU ms/call (range, median) | statements | tries stopped | on a worker | reply KB mean / max |")
        print("|---|---:|---:|---:|---:|---:|")
        for label, _ in trees:
            rows = figures[label]
            counts = "/".join(str(c) for c in sorted({r["statements"] for r in rows}))
            stopped = "/".join(str(r["stopped"]) for r in rows)
            on_worker = "/".join(str(r["on_worker"]) for r in rows)
            kb = f"{rows[0]['reply_kb']:.0f} / {rows[0]['reply_kb_max']:.0f}"
            cpu = spread([r["cpu_ms"] for r in rows], 1)
            print(f"| {label} | {cpu} | {counts} | {stopped} | {on_worker} | {kb} |")
    return status


if __name__ == "__main__":
    sys.exit(main())
