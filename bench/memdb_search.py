"""CPU and statements of the memdb profile's `search_memories`, in process, before and after.

The workload is `peers.py`'s, at each size: N entities, each with one observation kept as
a memory (a sentence of 8 to 30 Zipf-distributed words, bench_store's corpus, no tags)
linked `about` its entity, N-1 relations between the entities, and 200 word queries of 1
to 3 content words drawn from the memories. It is seeded as `peers.py` seeds it, through
the topodb profile's `submit_batch` (the same commands, in process), and every query is
answered as `peers.py` asks it over stdio, `search_memories` with the query alone, through
the path a stdio server answers a read on (`ToolCalls.call_here`: the parameters
validated, the result encoded as the reply line).

Each measurement runs in a child process of its own with `PYTHONPATH` set to one source
tree, so two trees (`--compare`) are measured on the same database file, alternately,
round after round (the machine may be shared: CPU is `time.process_time` of the whole
process, the access statistics' background writes included, the median of batches of
calls, and each row is the range over the rounds with its median). A child also counts
the SQL statements a search runs on its read connection (not counting BEGIN and COMMIT,
nor the statements SQLite runs inside one), and the bytes of its replies.

The seeded memories are written at fixed times (one second a batch from a fixed start)
and the children's clock stands a day after the last, so the scores (recency included)
are the same from run to run.

`--replies` checks that both trees answer byte for byte alike: each child answers every
query twice (each search's reads written before the next, so `accessed_at` shows them) on
its own fresh copy of the seeded database, and writes the reply lines; the copies are
compared. `--profile` prints where one tree's child spends its time (cProfile).

    .venv/bin/python bench/memdb_search.py --compare ../other-tree --sizes 10000 100000
    .venv/bin/python bench/memdb_search.py --compare ../other-tree --sizes 10000 --replies
    .venv/bin/python bench/memdb_search.py --sizes 10000 --profile
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

from measure import fresh_copy, run_child, spread

HERE = Path(__file__).resolve().parent
BATCH = 10
"""Calls timed together (`time.process_time` ticks coarsely for one call)."""
SEED = 7
QUERIES = 200
START_MS = 1_767_225_600_000
"""When the seeded memories are written (2026-01-01), one second a batch from then."""
DAY_MS = 86_400_000


# -- seeding (in this process, with this tree) ------------------------------------------------------


def workload(size: int) -> tuple[list[str], list[str], list[str], list[int], list[str], list[str]]:
    """peers.py's workload at `size`: names, types, texts, parents, relation types, queries."""
    sys.path.insert(0, str(HERE))
    from peers import build_workload

    work = build_workload(size, seed=SEED, queries=QUERIES, reads=QUERIES, writes=50, bulk=2000)
    return work.names, work.types, work.texts, work.parents, work.relation_types, work.queries


def seed(db: Path, size: int) -> list[str]:
    """The seeded store at `db` (as peers.py seeds the topodb-shaped systems); the queries."""
    sys.path.insert(0, str(HERE))
    from mnemodb.engine import Engine
    from mnemodb.server.profiles import build_profile
    from peers import LINK_BATCH, SEED_BATCH, _entity_commands

    names, types, texts, parents, relation_types, queries = workload(size)
    ticks = iter(range(START_MS, START_MS + 10**12, 1000))
    with Engine.open(str(db), access_interval=3600, clock=lambda: next(ticks)) as engine:
        engine.nodes.use_spec(None)
        profile = build_profile("topodb")
        tool = {t.name: t for t in profile.tools}["submit_batch"]

        def submit(commands: list[dict[str, Any]]) -> Any:
            return tool.run(engine, tool.params.validate({"commands": commands}))

        ids: list[str] = []
        for start in range(0, size, SEED_BATCH):
            part = slice(start, min(start + SEED_BATCH, size))
            result = submit(_entity_commands(names[part], types[part], texts[part]))
            ids += [str(i) for i in result["ids"][0::3]]
        for start in range(0, len(parents), LINK_BATCH):
            submit(
                [
                    {"op": "link", "from": ids[i + 1], "to": ids[parents[i]], "type": relation_types[i]}
                    for i in range(start, min(start + LINK_BATCH, len(parents)))
                ]
            )
    return queries


# -- a child: one tree's measurement --------------------------------------------------------------


def _statement(text: str) -> bool:
    """A statement a call runs itself: not the transaction's, nor one SQLite runs inside
    another (traced with a leading "--": the text index reading its own tables)."""
    first = text.split(maxsplit=1)[0].upper()
    return not text.startswith("--") and first not in ("BEGIN", "COMMIT", "ROLLBACK", "PRAGMA")


def child(db: Path, queries: list[str], calls: int, replies: Path | None, profile_out: bool) -> dict[str, Any]:
    import sqlite3

    from mnemodb.engine import Engine
    from mnemodb.server.calls import ToolCalls
    from mnemodb.server.profiles import build_profile
    from mnemodb.server.stdio import _encoded_result

    with sqlite3.connect(db) as conn:
        last = conn.execute("SELECT MAX(created_at) FROM node").fetchone()[0]
    conn.close()
    now = last + DAY_MS

    def finish(result: dict[str, Any]) -> bytes:
        return _encoded_result(1, result)

    # The replies show when each memory was last read: the reads are written only when
    # asked (`flush`), so both trees' copies see the same ones.
    interval = 3600.0 if replies is not None else 0.1
    with Engine.open(str(db), access_interval=interval, clock=lambda: now) as engine:
        tools = ToolCalls(build_profile("memdb"), engine)

        def answer(query: str) -> bytes:
            arguments = {"query": query}
            reply = tools.call_here("search_memories", arguments, finish)
            if reply is None:  # past the quick-read limit (a busy machine): as a worker thread would
                tool = tools.tools["search_memories"]
                reply = finish(tools.profile.success(tool, tool.run(engine, tool.params.validate(arguments))))
            return reply

        if replies is not None:
            with replies.open("wb") as sink:
                for _ in range(2):
                    for query in queries:
                        sink.write(answer(query) + b"\n")
                        # Each search's reads written before the next: left to the
                        # background thread, which writes once 4,096 nodes are waiting
                        # (at 100,000 memories, within the first pass), when they show
                        # would depend on the thread's timing.
                        engine.access.flush()
            return {}
        for k in range(min(calls, 50)):  # warm: caches, statement texts
            answer(queries[k % len(queries)])
        if profile_out:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            profiler.enable()
            for k in range(calls):
                answer(queries[k % len(queries)])
            profiler.disable()
            stats = pstats.Stats(profiler, stream=sys.stderr)
            stats.sort_stats("tottime").print_stats(30)
            stats.sort_stats("cumulative").print_stats(40)
        # Timed in batches: on a shared machine a burst of other work inflates some
        # batches, and the median batch is what a call costs between bursts.
        batches: list[float] = []
        for start in range(0, calls, BATCH):
            began = time.process_time()
            for k in range(start, min(start + BATCH, calls)):
                answer(queries[k % len(queries)])
            batches.append((time.process_time() - began) / (min(start + BATCH, calls) - start) * 1e3)
        engine.access.flush()
        statements: list[str] = []
        with engine.store.read() as tx:
            conn = tx.conn  # type: ignore[attr-defined]  # SQLite's read transaction
        conn.set_trace_callback(statements.append)
        sizes = []
        counts = []
        try:
            for query in queries:
                statements.clear()
                sizes.append(len(answer(query)))
                counts.append(sum(1 for s in statements if _statement(s)))
        finally:
            conn.set_trace_callback(None)
        return {
            "cpu_ms": statistics.median(batches),
            # The most frequent count: on a busy machine a read past the quick-read limit
            # is run again, and its statements counted twice.
            "statements": statistics.mode(counts),
            "reply_kb": statistics.mean(sizes) / 1024,
        }


# -- the parent -----------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=400, help="searches per round")
    parser.add_argument("--pythonpath", help="the source tree under test (default: this one)")
    parser.add_argument("--compare", help="a second source tree, labelled 'before'")
    parser.add_argument("--dir", help="where the seeded databases are kept (reused when present)")
    parser.add_argument("--replies", action="store_true", help="compare the trees' replies instead of timing")
    parser.add_argument("--profile", action="store_true", help="print one child's cProfile of the searches")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--queries", help=argparse.SUPPRESS)
    parser.add_argument("--replies-out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        queries = json.loads(Path(args.queries).read_text())
        replies = Path(args.replies_out) if args.replies_out else None
        print(json.dumps(child(Path(args.db), queries, args.calls, replies, args.profile)))
        return 0

    trees: list[tuple[str, Path]] = [("after", Path(args.pythonpath or HERE.parent).resolve())]
    if args.compare:
        trees.append(("before", Path(args.compare).resolve()))
    workdir = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="memdb-search-"))
    workdir.mkdir(parents=True, exist_ok=True)
    status = 0
    for size in args.sizes:
        db = workdir / f"memdb-{size}.db"
        queries_file = workdir / f"queries-{size}.json"
        if not db.exists() or not queries_file.exists():
            started = time.perf_counter()
            queries_file.write_text(json.dumps(seed(db, size)))
            print(f"seeded {size:,} entities in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        common = ["--db", str(db), "--queries", str(queries_file)]
        if args.replies:
            texts: dict[str, bytes] = {}
            for label, tree in trees:
                copy = workdir / f"copy-{size}-{label}.db"
                fresh_copy(db, copy)
                written = workdir / f"replies-{size}-{label}.jsonl"
                run_child(
                    HERE / "memdb_search.py",
                    tree,
                    ["--db", str(copy), "--queries", str(queries_file), "--replies-out", str(written)],
                )
                texts[label] = written.read_bytes()
                copy.unlink()
            same = len(set(texts.values())) == 1
            lines = texts["after"].count(b"\n")
            print(f"{size:,} entities: {lines} replies, {'identical' if same else 'DIFFERENT'} across trees")
            status |= 0 if same else 1
            continue
        if args.profile:
            run_child(
                HERE / "memdb_search.py",
                trees[0][1],
                [*common, "--calls", str(args.calls), "--profile"],
                show_stderr=True,
            )
            continue
        cpu: dict[str, list[float]] = {}
        statements: dict[str, set[int]] = {}  # each round's most frequent count
        reply_kb: dict[str, float] = {}
        for round_no in range(args.rounds):
            # Alternately, so that neither tree always runs first (after a quiet spell, say).
            for label, tree in trees if round_no % 2 == 0 else trees[::-1]:
                result = run_child(HERE / "memdb_search.py", tree, [*common, "--calls", str(args.calls)])
                cpu.setdefault(label, []).append(result["cpu_ms"])
                statements.setdefault(label, set()).add(result["statements"])
                reply_kb[label] = result["reply_kb"]
        print(f"\n{size:,} entities, {args.rounds} rounds of {args.calls} searches: CPU ms per search (range, median)")
        print("| tree | CPU ms/search | statements | reply KB (mean) |")
        print("|---|---:|---:|---:|")
        for label, _ in trees:
            counts = "/".join(str(c) for c in sorted(statements[label]))
            print(f"| {label} | {spread(cpu[label], 2)} | {counts} | {reply_kb[label]:.1f} |")
    return status


if __name__ == "__main__":
    sys.exit(main())
