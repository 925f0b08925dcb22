"""CPU and statements of the native profile's `recall` by words, in process, before and after.

The workload is `peers.py`'s, drawn from the same seed: N entities, each with a memory
(its observation's sentence) linked `about` it, and N-1 relations (entity i to a random
earlier one), seeded in process through the topodb profile's `submit_batch`, the same
commands `peers.py` sends; then the same word queries, each asked as `peers.py` asks native
`recall` (`{"query": ..., "limit": 10}`), through the path a stdio server answers a read
on (`ToolCalls.call_here`: the parameters validated, the result encoded as the reply line).
The engine has no embedder: the search is by words alone.

Each measurement runs in a child process of its own with `PYTHONPATH` set to one source
tree, so two trees (`--compare`) are measured on the same database file, alternately,
round after round (the machine may be shared: CPU is `time.process_time`, the median of
batches of calls, and each row is the range over the rounds with its median). A child also
counts the SQL statements the calls run (not BEGIN and COMMIT, nor those SQLite runs inside
one): the mean per call and the most in one call.

`--replies` checks that both trees answer byte for byte alike: each child answers every
query once as `peers.py` asks it, and again with `why`, with a wider page, for memories
alone, for entities alone and for the next page, on its own copy of the seeded database
under a fixed clock, and writes the reply lines; the copies are compared.
`--profile FILE` writes one tree's cProfile of the timed calls instead.

    .venv/bin/python bench/native_recall.py --compare ../other-tree --sizes 10000 100000
    .venv/bin/python bench/native_recall.py --compare ../other-tree --sizes 10000 --replies
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
sys.path.insert(0, str(HERE))

BATCH = 20
"""Calls timed together (`time.process_time` ticks coarsely for one call)."""
SEED = 7
"""`peers.py`'s default seed: the same entities, sentences and queries."""
QUERIES = 200
FIXED_NOW = 4_000_000_000_000
"""The clock of a replies check: 2096, after every write."""


def _workload(size: int) -> Any:
    from peers import build_workload

    return build_workload(size, seed=SEED, queries=QUERIES, reads=1, writes=1, bulk=1)


# -- seeding (in this process, with this tree) ------------------------------------------------------


def seed(db: Path, size: int) -> None:
    from mnemodb.engine import Engine
    from mnemodb.server.calls import ToolCalls
    from mnemodb.server.profiles import build_profile
    from peers import LINK_BATCH, SEED_BATCH, _entity_commands

    work = _workload(size)
    with Engine.open(str(db), access_interval=3600) as engine:
        tools = ToolCalls(build_profile("topodb"), engine)
        batch = tools.tools["submit_batch"]

        def submit(commands: list[dict[str, Any]]) -> list[str]:
            result = batch.run(engine, batch.params.validate({"commands": commands}))
            return [str(i) for i in result["ids"]]

        ids: list[str] = []
        for start in range(0, size, SEED_BATCH):
            part = slice(start, min(start + SEED_BATCH, size))
            ids += submit(_entity_commands(work.names[part], work.types[part], work.texts[part]))[0::3]
        for start in range(0, len(work.parents), LINK_BATCH):
            submit(
                [
                    {"op": "link", "from": ids[i + 1], "to": ids[work.parents[i]], "type": work.relation_types[i]}
                    for i in range(start, min(start + LINK_BATCH, len(work.parents)))
                ]
            )


# -- a child: one tree's measurement --------------------------------------------------------------


def _variants(query: str) -> list[dict[str, Any]]:
    """The calls of a replies check for one query: as `peers.py` asks, then others."""
    return [
        {"query": query, "limit": 10},
        {"query": query, "limit": 10, "why": True},
        {"query": query, "limit": 30},
        {"query": query, "limit": 10, "kinds": ["memory"]},
        {"query": query, "limit": 10, "kinds": ["entity"]},
        {"query": query, "limit": 3, "full": True},
    ]


def child(db: Path, size: int, calls: int, replies: Path | None, profile: Path | None) -> dict[str, Any]:
    from mnemodb.engine import Engine
    from mnemodb.server.calls import ToolCalls
    from mnemodb.server.profiles import build_profile
    from mnemodb.server.stdio import _encoded_result

    queries = _workload(size).queries

    def finish(result: dict[str, Any]) -> bytes:
        return _encoded_result(1, result)

    out: dict[str, Any] = {}
    options: dict[str, Any] = {} if replies is None else {"clock": lambda: FIXED_NOW}
    with Engine.open(str(db), access_interval=3600, **options) as engine:
        tools = ToolCalls(build_profile("native"), engine)
        tool = tools.tools["recall"]

        def answer(arguments: dict[str, Any]) -> bytes:
            reply = tools.call_here("recall", arguments, finish)
            if reply is None:  # past the quick-read limit (a busy machine): as a worker thread would
                reply = finish(tools.profile.success(tool, tool.run(engine, tool.params.validate(arguments))))
            return reply

        if replies is not None:
            with replies.open("wb") as sink:
                for query in queries:
                    for arguments in _variants(query):
                        reply = answer(arguments)
                        sink.write(reply + b"\n")
                        cursor = json.loads(reply)["result"]["structuredContent"].get("next_cursor")
                        if cursor and arguments.get("limit") == 10 and "kinds" not in arguments:
                            sink.write(answer({**arguments, "cursor": cursor}) + b"\n")
                    engine.access.flush()
            return out

        def call(k: int) -> bytes:
            return answer({"query": queries[k % len(queries)], "limit": 10})

        for k in range(min(calls, len(queries))):  # warm: caches, statement texts, pages
            call(k)
        if profile is not None:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
            for k in range(calls):
                call(k)
            profiler.disable()
            profiler.dump_stats(str(profile))
            return out
        batches: list[float] = []
        for start in range(0, calls, BATCH):
            started = time.process_time()
            for k in range(start, min(start + BATCH, calls)):
                call(k)
            batches.append((time.process_time() - started) / (min(start + BATCH, calls) - start) * 1e6)
        statements: list[str] = []
        with engine.store.read() as tx:
            conn = tx.conn  # type: ignore[attr-defined]  # SQLite's read transaction
        per_call: list[int] = []
        for k in range(len(queries)):
            statements.clear()
            conn.set_trace_callback(statements.append)
            try:
                # Without the quick-read limit: on a busy machine a read stopped at it and
                # answered again would count its statements twice.
                tool.run(engine, tool.params.validate({"query": queries[k], "limit": 10}))
            finally:
                conn.set_trace_callback(None)
            # The call's own statements: not the transaction's, nor those SQLite runs inside
            # one (traced with a leading "--": the text index reading its own tables).
            per_call.append(
                sum(
                    1
                    for s in statements
                    if not s.startswith("--") and s.split()[0].upper() not in ("BEGIN", "COMMIT", "ROLLBACK", "PRAGMA")
                )
            )
        out["recall"] = {
            "cpu_us": statistics.median(batches),
            "statements": statistics.mean(per_call),
            "most": max(per_call),
        }
    return out


# -- the parent -----------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=400, help="calls per round (the queries in turn)")
    parser.add_argument("--pythonpath", help="the source tree under test (default: this one)")
    parser.add_argument("--compare", help="a second source tree, labelled 'before'")
    parser.add_argument("--dir", help="where the seeded databases are kept (reused when present)")
    parser.add_argument("--replies", action="store_true", help="compare the trees' replies instead of timing")
    parser.add_argument("--profile", help="write a cProfile of the tree under test's calls to this file")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--replies-out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        out = child(
            Path(args.db),
            args.size,
            args.calls,
            Path(args.replies_out) if args.replies_out else None,
            Path(args.profile) if args.profile else None,
        )
        print(json.dumps(out))
        return 0

    trees: list[tuple[str, Path]] = [("after", Path(args.pythonpath or HERE.parent).resolve())]
    if args.compare:
        trees.append(("before", Path(args.compare).resolve()))
    workdir = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="native-recall-"))
    workdir.mkdir(parents=True, exist_ok=True)
    status = 0
    for size in args.sizes:
        db = workdir / f"recall-{size}.db"
        if not db.exists():
            started = time.perf_counter()
            seed(db, size)
            print(f"seeded {size:,} entities in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        common = ["--db", str(db), "--size", str(size), "--calls", str(args.calls)]
        if args.profile:
            run_child(HERE / "native_recall.py", trees[0][1], [*common, "--profile", args.profile])
            print(f"{size:,} entities: profile written to {args.profile}")
            continue
        if args.replies:
            texts: dict[str, bytes] = {}
            for label, tree in trees:
                copy = workdir / f"copy-{size}-{label}.db"
                fresh_copy(db, copy)
                written = workdir / f"replies-{size}-{label}.jsonl"
                run_child(
                    HERE / "native_recall.py",
                    tree,
                    ["--db", str(copy), "--size", str(size), "--replies-out", str(written)],
                )
                texts[label] = written.read_bytes()
                copy.unlink()
            same = len(set(texts.values())) == 1
            lines = texts["after"].count(b"\n")
            print(f"{size:,} entities: {lines} replies, {'identical' if same else 'DIFFERENT'} across trees")
            status |= 0 if same else 1
            continue
        cpu: dict[str, list[float]] = {}
        statements: dict[str, set[tuple[float, int]]] = {}
        for round_no in range(args.rounds):
            # Alternately, so that neither tree always runs first (after a quiet spell, say).
            for label, tree in trees if round_no % 2 == 0 else trees[::-1]:
                figures = run_child(HERE / "native_recall.py", tree, common)["recall"]
                cpu.setdefault(label, []).append(figures["cpu_us"])
                statements.setdefault(label, set()).add((figures["statements"], figures["most"]))
        print(f"\n{size:,} entities, {args.rounds} rounds of {args.calls} calls: CPU ms per recall (range, median)")
        print("| tree | CPU ms/call | statements per call (mean, most) |")
        print("|---|---:|---:|")
        for label, _ in trees:
            counts = "/".join(f"{mean:.2f}, {most}" for mean, most in sorted(statements[label]))
            print(f"| {label} | {spread(cpu[label], 2, 1e-3)} | {counts} |")
    return status


if __name__ == "__main__":
    sys.exit(main())
