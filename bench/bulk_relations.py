"""Bulk relations as `peers.py` sends them, with where each call's wall time goes.

`peers.py` ends each round with a part of a bulk insert: 100 new entities a call, then 100
relations a call from them to seeded entities, through each profile's batch tool (native
`relate`, topodb `submit_batch` of links, knowledge-graph `create_relations`). Its rate is
items over the calls' round trips, so whatever a call waits for besides the server's CPU
(a disk flush, a thread handing work back) counts as much as the CPU.

This runs that part alone: the same workload and seeding (`peers.Run.seed`), one server per
profile spawned over stdio and kept for all rounds, and each round's bulk part sent to each
server in a shuffled order. Per call it records the round trip, the server's CPU over the
call (/proc/PID/stat, clock ticks), and whether the database's write-ahead log was reset
(SQLite writes a new WAL header, with its checkpoint counter one higher, when a writer
starts over after a checkpoint that copied the whole log into the database). It reports,
per profile and source tree, relations per second (median of the rounds' rates and over all
calls), server CPU per relation, the calls' p50 and p95 round trips, the wall time not spent
on the server's CPU, the server's context switches a call (every thread's, voluntary or
not: on a busy machine each may be followed by a wait for a core), and the WAL resets seen
during entity calls and relation calls.

`--compare DIR` adds the same profiles from a second source tree, labelled "before";
`--topodb PATH` adds topodb-mcp (its `submit_batch` of links), as in `peers.py`;
`--strace` runs each mnemodb server under `strace -f -T -e trace=fsync,fdatasync` and
reports the flushes it made and the time they took (strace slows the calls it traces, so
its rates are not comparable with an untraced run).

    .venv/bin/python bench/bulk_relations.py --size 10000 --rounds 10
    .venv/bin/python bench/bulk_relations.py --size 10000 --compare ../other-tree --topodb PATH
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import re
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_store import BenchError, settle_gc
from bench_topodb import Client
from measure import _tree, p50, p95
from peers import (
    BULK_BATCH,
    Mnemodb,
    MnemodbKnowledgeGraph,
    MnemodbNative,
    MnemodbTopodb,
    Run,
    System,
    TopodbMcp,
    _check,
    _tree_of,
    cpu_seconds,
)

PROFILES = {"native": MnemodbNative, "topodb": MnemodbTopodb, "knowledge-graph": MnemodbKnowledgeGraph}
_FLUSH = re.compile(rb"(fsync|fdatasync)\(.*<([0-9.]+)>")


def switches(pid: int) -> int:
    """Context switches (voluntary and not) of every thread of the process and its
    descendants so far: each is a moment a thread stopped, to wait or to make way, and on a
    busy machine may wait again for a core before it runs on."""
    total = 0
    for member in _tree(pid):
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{member}/task").iterdir():
                with contextlib.suppress(OSError, ValueError):
                    for line in (task / "status").read_text().splitlines():
                        if "ctxt_switches:" in line:
                            total += int(line.split()[1])
    return total


def wal_counter(system: System) -> int | None:
    """The checkpoint counter in the header of a mnemodb store's write-ahead log (bytes
    12-15, big-endian), or None when there is no log (yet) or the system is not mnemodb."""
    if not isinstance(system, Mnemodb):
        return None
    try:
        with open(f"{system.db}-wal", "rb") as wal:
            head = wal.read(16)
    except OSError:
        return None
    return int.from_bytes(head[12:16], "big") if len(head) == 16 else None


@dataclass
class Phase:
    """One kind of bulk call (entities or relations) on one system, over all rounds."""

    items: int = 0
    seconds: list[float] = field(default_factory=list)
    cpu_s: float = 0.0
    switches: int = 0
    resets: int = 0
    round_rates: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        wall = sum(self.seconds)
        return {
            "items": self.items,
            "per_s": p50(self.round_rates),
            "per_s_rounds": [round(r) for r in self.round_rates],
            "per_s_overall": self.items / wall,
            "cpu_ms_per_item": self.cpu_s / self.items * 1000,
            "wall_ms_per_item": wall / self.items * 1000,
            "p50_ms": p50(self.seconds) * 1000,
            "p95_ms": p95(self.seconds) * 1000,
            "max_ms": max(self.seconds) * 1000,
            "off_cpu_share": max(0.0, 1 - self.cpu_s / wall),
            "switches_per_call": self.switches / len(self.seconds),
            "wal_resets": self.resets,
        }


def bulk_part(system: System, client: Client, run: Run, part: slice, phases: dict[str, Phase]) -> None:
    """One round's part of the bulk insert, as `peers.Run._bulk` sends it, timed per call."""
    for phase, make in (("entities", system.bulk_entities), ("relations", system.bulk_relations)):
        into = phases[phase]
        seconds = 0.0
        for start in range(part.start, part.stop, BULK_BATCH):
            batch = slice(start, min(start + BULK_BATCH, part.stop))
            tool, arguments = make(run.work, batch)
            counter = wal_counter(system)
            before, switched = cpu_seconds(client.proc.pid), switches(client.proc.pid)
            _, elapsed, line = client.call_timed(tool, arguments, decode=False)
            into.cpu_s += cpu_seconds(client.proc.pid) - before
            into.switches += switches(client.proc.pid) - switched
            after = wal_counter(system)
            if counter is not None and after is not None and after != counter:
                into.resets += 1
            _check(tool, line)
            if phase == "entities":
                system.note_bulk_entities(json.loads(line)["result"].get("structuredContent"))
            into.seconds.append(elapsed)
            seconds += elapsed
        into.items += part.stop - part.start
        into.round_rates.append((part.stop - part.start) / seconds)


def flushes(trace: Path) -> tuple[int, float]:
    """(flush calls, their seconds in all) in an strace log."""
    count, total = 0, 0.0
    for line in trace.read_bytes().splitlines():
        found = _FLUSH.search(line)
        if found:
            count += 1
            total += float(found.group(2))
    return count, total


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000, help="seeded entities (default 10000)")
    parser.add_argument("--rounds", type=int, default=10, help="rounds (default 10)")
    parser.add_argument("--bulk", type=int, default=4000, help="entities (and relations) bulk-inserted (default 4000)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the workload (default 7)")
    parser.add_argument(
        "--profiles", default="native,topodb,knowledge-graph", help="mnemodb profiles (default all three)"
    )
    parser.add_argument("--compare", help="also run mnemodb from this source tree, labelled 'before'")
    parser.add_argument("--topodb", help="topodb-mcp's platform binary: run it too")
    parser.add_argument("--strace", action="store_true", help="trace the mnemodb servers' fsync/fdatasync calls")
    parser.add_argument("--json", help="write every figure to this file")
    return parser


def _run_args(args: argparse.Namespace) -> argparse.Namespace:
    """What `peers.Run` reads from its own options: its defaults, a handful of reads."""
    return argparse.Namespace(
        rounds=args.rounds, bulk=args.bulk, seed=args.seed, queries=1, reads=1, writes=1, trivial=1, topodb=args.topodb,
        server_memory=None, node="node",
    )  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    wanted = [p for p in args.profiles.split(",") if p]
    unknown = [p for p in wanted if p not in PROFILES]
    if unknown:
        print(f"error: unknown profiles {unknown}; choose from {sorted(PROFILES)}", file=sys.stderr)
        return 2
    if args.strace and shutil.which("strace") is None:
        print("error: --strace needs strace on PATH", file=sys.stderr)
        return 2
    here = Path(__file__).resolve().parents[1]
    trees = [_tree_of(str(here), "")] + ([_tree_of(args.compare, "before")] if args.compare else [])
    settle_gc()
    with tempfile.TemporaryDirectory(prefix="bulk-relations-") as tmp:
        directory = Path(tmp)
        run = Run(_run_args(args), args.size, directory, trees)
        # The seeding needs the topodb profile (native copies its store); only the wanted ones run.
        run.seed()
        systems = [
            s for s in run.systems if isinstance(s, TopodbMcp) or (isinstance(s, Mnemodb) and s.profile in wanted)
        ]
        phases = {s.label: {"entities": Phase(), "relations": Phase()} for s in systems}
        traces: dict[str, Path] = {}
        clients: dict[str, Client] = {}
        try:
            for system in systems:
                if args.strace and isinstance(system, Mnemodb):
                    traces[system.label] = directory / f"{system.profile}-{system.tree.label or 'now'}.strace"
                    # Stopping at the traced calls only: stopping at every call would slow the
                    # checkpoint's thousands of page reads and writes many times over.
                    trace = ["strace", "-f", "--seccomp-bpf", "-T", "-e", "trace=fsync,fdatasync"]
                    argv = [*trace, "-o", str(traces[system.label])]
                    clients[system.label] = Client(argv + system.argv(), system.env(), run.log)
                else:
                    clients[system.label] = system.spawn(run.log)
                clients[system.label].initialize()
            rng = random.Random(args.seed)
            total = len(run.work.bulk_names)
            for number in range(args.rounds):
                part = slice(total * number // args.rounds, total * (number + 1) // args.rounds)
                order = list(systems)
                rng.shuffle(order)
                for system in order:
                    bulk_part(system, clients[system.label], run, part, phases[system.label])
                print(f"round {number + 1} of {args.rounds} done", file=sys.stderr, flush=True)
        finally:
            for client in clients.values():
                client.close()
            run.close()
        figures: dict[str, Any] = {}
        header = (
            "| system | relations/s (median round) | rounds' range | over all calls | CPU ms/relation "
            "| wall ms/relation | p50 ms | p95 ms | max ms | off-CPU share | switches a call "
            "| WAL resets (entity / relation calls) |"
        )
        print(f"\n{args.size:,} entities, {args.bulk:,} relations in calls of {BULK_BATCH}, {args.rounds} rounds\n")
        print(header)
        print("|---" * 12 + "|")
        for system in systems:
            ents, rels = phases[system.label]["entities"].summary(), phases[system.label]["relations"].summary()
            figures[system.label] = {"entities": ents, "relations": rels}
            rates = rels["per_s_rounds"]
            print(
                f"| {system.label} | {rels['per_s']:,.0f} | {min(rates):,}-{max(rates):,} | "
                f"{rels['per_s_overall']:,.0f} | {rels['cpu_ms_per_item']:.3f} | {rels['wall_ms_per_item']:.3f} | "
                f"{rels['p50_ms']:.2f} | {rels['p95_ms']:.2f} | {rels['max_ms']:.1f} | {rels['off_cpu_share']:.0%} | "
                f"{rels['switches_per_call']:.1f} | "
                f"{ents['wal_resets']} / {rels['wal_resets']} |"
            )
        for label, log_file in traces.items():
            count, seconds = flushes(log_file)
            figures[label]["flushes"] = {"calls": count, "seconds": seconds}
            print(f"{label}: {count} fsync/fdatasync calls, {seconds * 1000:.0f} ms in all")
        if args.json:
            Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
