"""CPU and statements of the native profile's point reads, in process, before and after.

Three calls, each through the same path a stdio server answers a read on (`ToolCalls.call_here`,
the tool's parameters validated, its result encoded as the reply line):

- `get` of one entity by name: a probe entity with five relations (four to other entities,
  one `about` link from a memory);
- `explore` from that entity, one hop;
- `explore` from that entity, two hops.

The graph is seeded in process through the engine's bulk paths: `size` entities with one
observation each, related as a random tree (each to an older one), a memory about every
tenth entity, then the probes. Each measurement runs in a child process of its own with
`PYTHONPATH` set to one source tree, so two trees (`--compare`) are measured on the same
database file, alternately, round after round (the machine may be shared: CPU is
`time.process_time`, the median of batches of calls, and each row is the range over the
rounds with its median). A child also counts the SQL statements each call runs (not
counting BEGIN and COMMIT, nor the statements SQLite runs inside one).

`--replies` checks that both trees answer byte for byte alike: each child answers every
call once, on its own fresh copy of the seeded database, and writes the reply lines; the
copies are compared.

    .venv/bin/python bench/native_reads.py --compare ../other-tree --sizes 10000 100000
    .venv/bin/python bench/native_reads.py --compare ../other-tree --sizes 10000 --replies
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from measure import fresh_copy, run_child, spread

PROBES = 50
BATCH = 25
"""Calls timed together (`time.process_time` ticks coarsely for one call)."""
RELATION_TYPES = ("knows", "works_with", "part_of", "depends_on", "mentions")
ENTITY_TYPES = ("person", "project", "place", "tool")
WORDS = (
    "amber",
    "basil",
    "cedar",
    "delta",
    "ember",
    "fjord",
    "garnet",
    "harbor",
    "indigo",
    "juniper",
    "kelp",
    "lumen",
    "meadow",
    "nectar",
    "onyx",
    "pepper",
    "quartz",
    "raven",
    "saffron",
    "tundra",
    "umber",
    "violet",
    "willow",
    "xenon",
    "yarrow",
    "zephyr",
)
OPERATIONS = ("get", "explore_1", "explore_2")
HERE = Path(__file__).resolve().parent
FIXED_NOW = 4_000_000_000_000
"""The clock of a replies check: 2096, after every write."""
FIXED_AS_OF = "2090-01-01T00:00:00Z"


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14)))


def probe_name(k: int) -> str:
    return f"Probe {k}"


# -- seeding (in this process, with this tree) ------------------------------------------------------


def seed(db: Path, size: int, *, seed_value: int = 7) -> None:
    from mnemodb.engine import Engine
    from mnemodb.engine.graph import NewEntity, NewRelation
    from mnemodb.engine.items import Note
    from mnemodb.model.records import NewMemory

    rng = random.Random(seed_value)
    names = [f"{rng.choice(WORDS).capitalize()} {rng.choice(WORDS).capitalize()} e{i}" for i in range(size)]
    with Engine.open(str(db), access_interval=3600) as engine:
        for start in range(0, size, 2000):
            engine.graph.create_entities(
                [NewEntity(n, rng.choice(ENTITY_TYPES), (_sentence(rng),)) for n in names[start : start + 2000]]
            )
        relations = [NewRelation(names[i], names[rng.randrange(i)], rng.choice(RELATION_TYPES)) for i in range(1, size)]
        for start in range(0, len(relations), 2000):
            engine.graph.create_relations(relations[start : start + 2000])
        notes = [Note(NewMemory(_sentence(rng) + f" m{i}"), about=(names[i],)) for i in range(0, size, 10)]
        for start in range(0, len(notes), 500):
            engine.items.remember(notes[start : start + 500])
        probes = [NewEntity(probe_name(k), "probe", (_sentence(rng), _sentence(rng))) for k in range(PROBES)]
        engine.graph.create_entities(probes)
        engine.graph.create_relations(
            [
                NewRelation(probe_name(k), names[rng.randrange(size)], RELATION_TYPES[j])
                for k in range(PROBES)
                for j in range(4)
            ]
        )
        engine.items.remember(
            [Note(NewMemory(f"{_sentence(rng)} p{k}"), about=(probe_name(k),)) for k in range(PROBES)]
        )


# -- a child: one tree's measurement --------------------------------------------------------------


def _call_of(operation: str, k: int) -> tuple[str, dict[str, Any]]:
    name = probe_name(k % PROBES)
    if operation == "get":
        return "get", {"refs": [name]}
    return "explore", {"from": [name], "hops": 1 if operation == "explore_1" else 2}


def child(db: Path, calls_per_op: int, replies: Path | None) -> dict[str, Any]:
    from mnemodb.engine import Engine
    from mnemodb.server.calls import ToolCalls
    from mnemodb.server.profiles import build_profile
    from mnemodb.server.stdio import _encoded_result

    def finish(result: dict[str, Any]) -> bytes:
        return _encoded_result(1, result)

    out: dict[str, Any] = {}
    # Replies hold the time of each item's last read: a fixed clock makes them the same
    # from run to run (later than any write, so every relation is valid then).
    options: dict[str, Any] = {} if replies is None else {"clock": lambda: FIXED_NOW}
    with Engine.open(str(db), access_interval=3600, **options) as engine:
        tools = ToolCalls(build_profile("native"), engine)

        def answer(name: str, arguments: dict[str, Any]) -> bytes:
            reply = tools.call_here(name, arguments, finish)
            if reply is None:  # past the quick-read limit (a busy machine): as a worker thread would
                tool = tools.tools[name]
                reply = finish(tools.profile.success(tool, tool.run(engine, tool.params.validate(arguments))))
            return reply

        if replies is not None:
            with replies.open("wb") as sink:
                # Twice: the second time with the first's reads counted (access statistics shown).
                for _ in range(2):
                    for k in range(PROBES):
                        name, other = probe_name(k), probe_name((k + 1) % PROBES)
                        for operation in OPERATIONS:
                            sink.write(answer(*_call_of(operation, k)) + b"\n")
                        for arguments in (
                            {"refs": [name, other]},
                            {"refs": [name], "include_closed": True},
                            {"refs": [name], "as_of": FIXED_AS_OF},
                        ):
                            sink.write(answer("get", arguments) + b"\n")
                        sink.write(answer("explore", {"from": [name], "hops": 2, "full": True}) + b"\n")
                    engine.access.flush()
            return out
        for operation in OPERATIONS:
            for k in range(min(calls_per_op, 50)):  # warm: caches, statement texts
                answer(*_call_of(operation, k))
            # Timed in batches: on a shared machine a burst of other work inflates some
            # batches, and the median batch is what a call costs between bursts.
            batches: list[float] = []
            for start in range(0, calls_per_op, BATCH):
                started = time.process_time()
                for k in range(start, min(start + BATCH, calls_per_op)):
                    answer(*_call_of(operation, k))
                batches.append((time.process_time() - started) / (min(start + BATCH, calls_per_op) - start) * 1e6)
            cpu_us = statistics.median(batches)
            statements: list[str] = []
            with engine.store.read() as tx:
                conn = tx.conn  # type: ignore[attr-defined]  # SQLite's read transaction
            conn.set_trace_callback(statements.append)
            try:
                answer(*_call_of(operation, 0))
            finally:
                conn.set_trace_callback(None)
            # The call's own statements: not the transaction's, nor those SQLite runs inside
            # one (traced with a leading "--": the text index reading its own tables).
            counted = [
                s
                for s in statements
                if not s.startswith("--") and s.split()[0].upper() not in ("BEGIN", "COMMIT", "ROLLBACK", "PRAGMA")
            ]
            out[operation] = {"cpu_us": cpu_us, "statements": len(counted)}
    return out


# -- the parent -----------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=400, help="calls of each operation per round")
    parser.add_argument("--pythonpath", help="the source tree under test (default: this one)")
    parser.add_argument("--compare", help="a second source tree, labelled 'before'")
    parser.add_argument("--dir", help="where the seeded databases are kept (reused when present)")
    parser.add_argument("--replies", action="store_true", help="compare the trees' replies instead of timing")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--replies-out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        out = child(Path(args.db), args.calls, Path(args.replies_out) if args.replies_out else None)
        print(json.dumps(out))
        return 0

    trees: list[tuple[str, Path]] = [("after", Path(args.pythonpath or HERE.parent).resolve())]
    if args.compare:
        trees.append(("before", Path(args.compare).resolve()))
    workdir = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="native-reads-"))
    workdir.mkdir(parents=True, exist_ok=True)
    status = 0
    for size in args.sizes:
        db = workdir / f"native-{size}.db"
        if not db.exists():
            started = time.perf_counter()
            seed(db, size)
            print(f"seeded {size:,} entities in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        if args.replies:
            texts: dict[str, bytes] = {}
            for label, tree in trees:
                copy = workdir / f"copy-{size}-{label}.db"
                fresh_copy(db, copy)
                written = workdir / f"replies-{size}-{label}.jsonl"
                run_child(HERE / "native_reads.py", tree, ["--db", str(copy), "--replies-out", str(written)])
                texts[label] = written.read_bytes()
                copy.unlink()
            same = len(set(texts.values())) == 1
            lines = texts["after"].count(b"\n")
            print(f"{size:,} entities: {lines} replies, {'identical' if same else 'DIFFERENT'} across trees")
            status |= 0 if same else 1
            continue
        cpu: dict[tuple[str, str], list[float]] = {}
        statements: dict[tuple[str, str], set[int]] = {}
        for round_no in range(args.rounds):
            # Alternately, so that neither tree always runs first (after a quiet spell, say).
            for label, tree in trees if round_no % 2 == 0 else trees[::-1]:
                result = run_child(HERE / "native_reads.py", tree, ["--db", str(db), "--calls", str(args.calls)])
                for operation, figures in result.items():
                    cpu.setdefault((label, operation), []).append(figures["cpu_us"])
                    statements.setdefault((label, operation), set()).add(figures["statements"])
        print(f"\n{size:,} entities, {args.rounds} rounds of {args.calls} calls: CPU us per call (range, median)")
        print("| operation | tree | CPU us/call | statements |")
        print("|---|---|---:|---:|")
        for operation in OPERATIONS:
            for label, _ in trees:
                counts = "/".join(str(c) for c in sorted(statements[(label, operation)]))
                print(f"| {operation} | {label} | {spread(cpu[(label, operation)])} | {counts} |")
    return status


if __name__ == "__main__":
    sys.exit(main())
