"""Write throughput with concurrent writers, on SQLite and on PostgreSQL in the same run.

At each level (1, 8 and 32 writers by default) every writer is a process of its own with
its own `Engine`, as separate `mnemodb serve` processes on one database would be (writers
in one process share that process's one write connection, so threads would measure the
process's lock, not the store's). Each stores single memories, one
`Engine.memories.store` at a time, for `--seconds`; the figures are the committed writes
per second of all writers together and the latency of each write (p50 and p95, over every
write of the level).

Every level starts from an empty database: a new SQLite file, and with `--postgresql` a new
schema. The writers open their engines and store one untimed memory each, then start
together (a barrier); the level's time runs from the first writer's start to the last one's
end. SQLite serialises writers with its file lock (the store retries while it is busy);
PostgreSQL with an advisory lock per schema, so on both the commits happen one at a time
and more writers mostly add waiting.

The memories are synthetic (bench_store's vocabulary: 8 to 30 Zipf-distributed words, 1 to
3 tags), different for every writer. Run `python bench/pg_writers.py --help` for the
options; see bench/README.md.
"""

from __future__ import annotations

import argparse
import itertools
import json
import multiprocessing
import os
import platform
import random
import sqlite3
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import pg
from bench_store import Corpus, _progress
from measure import p50, p95
from mnemodb import __version__ as MNEMODB_VERSION
from mnemodb.engine import Engine
from mnemodb.model.records import MEMORY_TYPES

START_TIMEOUT_S = 120.0
"""How long the writers may take to open their engines before the level is given up."""


@dataclass
class Level:
    """One store's figures at one number of writers."""

    writers: int
    seconds: float = 0.0
    writes: int = 0
    not_new: int = 0
    errors: int = 0
    first_error: str = ""
    per_s: float | None = None
    p50_ms: float | None = None
    p95_ms: float | None = None
    per_writer: list[int] = field(default_factory=list)


class Sentences:
    """Endless synthetic memories, a different stream for each seed."""

    def __init__(self, seed: int, vocabulary: int) -> None:
        self.rng = random.Random(seed)
        self.words = Corpus(0, seed=1, vocabulary=vocabulary).vocabulary
        self.weights = list(itertools.accumulate(1.0 / rank for rank in range(1, len(self.words) + 1)))
        self.tags = self.words[100:400]

    def next(self) -> tuple[str, tuple[str, ...], int, str]:
        rng = self.rng
        words = rng.choices(self.words, cum_weights=self.weights, k=rng.randint(8, 30))
        tags = tuple(sorted(set(rng.choices(self.tags, k=rng.randint(1, 3)))))
        return " ".join(words).capitalize() + ".", tags, rng.randint(0, 8), rng.choice(MEMORY_TYPES[:6])


def writer(location: str, number: int, seconds: float, seed: int, vocabulary: int, barrier: Barrier, out: Any) -> None:
    """One writer process: open, store one memory untimed, wait for the others, then store
    for `seconds`; put (number, start, end, latencies, not new, errors, first error) on `out`."""
    latencies: list[float] = []
    not_new = errors = 0
    first_error = ""
    start = end = 0.0
    try:
        sentences = Sentences(seed * 1000 + number, vocabulary)
        engine = Engine.open(location)
        try:
            engine.memories.store(*sentences.next())
            barrier.wait(START_TIMEOUT_S)
            start = time.monotonic()
            deadline = start + seconds
            while True:
                item = sentences.next()
                began = time.perf_counter()
                try:
                    stored = engine.memories.store(*item)
                except Exception as exc:  # a store error counts, and the writer goes on
                    errors += 1
                    first_error = first_error or f"{type(exc).__name__}: {exc}"
                else:
                    latencies.append(time.perf_counter() - began)
                    not_new += not stored.is_new
                if time.monotonic() >= deadline:
                    break
            end = time.monotonic()
        finally:
            engine.close()
    except Exception:
        first_error = first_error or traceback.format_exc(limit=3)
        errors += 1
        barrier.abort()  # the others stop waiting for a writer that will never come
    out.put((number, start, end, latencies, not_new, errors, first_error))


def create(location: str) -> None:
    """Make the empty database, so that the writers time none of its creation."""
    Engine.open(location).close()


def run_level(location: str, writers: int, args: argparse.Namespace) -> Level:
    # fork: 32 writers start in a fraction of spawn's time (each would import mnemodb
    # again), and this process holds no connection or thread a child could inherit: even
    # the database is created in a child.
    context = multiprocessing.get_context("fork")
    maker = context.Process(target=create, args=(location,))
    maker.start()
    maker.join()
    if maker.exitcode != 0:
        raise SystemExit(f"could not create the database for {writers} writers (exit status {maker.exitcode})")
    barrier = context.Barrier(writers)
    out = context.Queue()
    processes = [
        context.Process(
            target=writer, args=(location, n, args.seconds, args.seed, args.vocabulary, barrier, out), daemon=True
        )
        for n in range(writers)
    ]
    for process in processes:
        process.start()
    results = [out.get(timeout=START_TIMEOUT_S + args.seconds * 4 + 60) for _ in processes]
    for process in processes:
        process.join(timeout=30)
    level = Level(writers)
    latencies: list[float] = []
    for _, _, _, times, not_new, errors, first_error in sorted(results):
        latencies += times
        level.per_writer.append(len(times) - not_new)
        level.not_new += not_new
        level.errors += errors
        level.first_error = level.first_error or first_error
    level.writes = sum(level.per_writer)
    started = [r[1] for r in results if r[2]]
    ended = [r[2] for r in results if r[2]]
    if started:
        level.seconds = max(ended) - min(started)
        level.per_s = level.writes / level.seconds
    if latencies:
        level.p50_ms, level.p95_ms = p50(latencies) * 1000, p95(latencies) * 1000
    return level


# -- the report -----------------------------------------------------------------------------------


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)


def render(levels: Sequence[tuple[Level, Level | None]]) -> str:
    head = ["writers", "sqlite writes/s", "p50 ms", "p95 ms"]
    postgresql = any(on_pg is not None for _, on_pg in levels)
    if postgresql:
        head += ["pg writes/s", "p50 ms", "p95 ms", "pg/sqlite writes/s", "pg/sqlite p50"]
    rows = []
    for lite, on_pg in levels:
        cells = [
            str(lite.writers),
            _num(lite.per_s, "{:,.0f}"),
            _num(lite.p50_ms, "{:.2f}"),
            _num(lite.p95_ms, "{:.2f}"),
        ]
        if postgresql:
            theirs = on_pg or Level(lite.writers)
            cells += [
                _num(theirs.per_s, "{:,.0f}"),
                _num(theirs.p50_ms, "{:.2f}"),
                _num(theirs.p95_ms, "{:.2f}"),
                _num(theirs.per_s / lite.per_s if theirs.per_s and lite.per_s else None, "{:.2f}"),
                _num(theirs.p50_ms / lite.p50_ms if theirs.p50_ms and lite.p50_ms else None, "{:.2f}"),
            ]
        rows.append(cells)
    widths = [max(len(head[i]), *(len(r[i]) for r in rows)) for i in range(len(head))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True))

    out = [line(head), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]
    for lite, on_pg in levels:
        for name, level in (("SQLite", lite), ("PostgreSQL", on_pg)):
            if level is None:
                continue
            if level.errors:
                out.append(f"{name}, {level.writers} writers: {level.errors} errors; first: {level.first_error}")
            if level.not_new:
                out.append(f"{name}, {level.writers} writers: {level.not_new} memories were not new (not counted)")
            if level.writers > 1 and level.per_writer:
                out.append(
                    f"{name}, {level.writers} writers: {min(level.per_writer):,} to {max(level.per_writer):,} "
                    f"writes per writer in {level.seconds:.1f} s"
                )
    if not postgresql:
        out.append("PostgreSQL skipped (no --postgresql URL|auto given)")
    return "\n".join(out)


# -- driver ---------------------------------------------------------------------------------------


def parse_writers(text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--writers expects comma-separated integers, got {text!r}") from None
    if not counts or any(c < 1 for c in counts):
        raise argparse.ArgumentTypeError("--writers must be positive, e.g. 1,8,32")
    return counts


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Committed writes per second and write latency with 1, 8 and 32 concurrent writer processes, "
        "each with its own Engine, on SQLite and (with --postgresql) on PostgreSQL."
    )
    parser.add_argument("--writers", type=parse_writers, default=parse_writers("1,8,32"), help="default 1,8,32")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long each level writes (default 10)")
    parser.add_argument("--seed", type=int, default=42, help="memory seed (default 42)")
    parser.add_argument("--vocabulary", type=int, default=4000, help="distinct words (default 4000)")
    pg.add_option(parser)
    parser.add_argument("--json", metavar="PATH", help="also write every figure as JSON to PATH")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.seconds <= 0:
        raise SystemExit("--seconds must be positive")
    load_start = os.getloadavg()
    wall = time.perf_counter()
    levels: list[tuple[Level, Level | None]] = []
    meta: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="mnemodb-writers-") as work, pg.postgres(args.postgresql) as postgres:
        if postgres is not None:
            meta["postgresql"] = postgres.meta()
            _progress(postgres.describe())
        for count in args.writers:
            _progress(f"{count} writers on SQLite, {args.seconds:g} s")
            lite = run_level(str(Path(work) / f"writers-{count}.db"), count, args)
            on_pg = None
            if postgres is not None:
                _progress(f"{count} writers on PostgreSQL, {args.seconds:g} s")
                on_pg = run_level(postgres.url(f"writers_{count}"), count, args)
            levels.append((lite, on_pg))
    load_end = os.getloadavg()
    print(
        f"== committed single-memory writes, each writer a process with its own Engine, "
        f"{args.seconds:g} s per level, an empty database at each =="
    )
    print(render(levels))
    print()
    if postgres is not None:
        print(f"{meta['postgresql']['description']}, over loopback TCP; SQLite: WAL, synchronous=NORMAL")
    print(
        f"mnemodb {MNEMODB_VERSION}, Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"{os.cpu_count()} CPUs (the writers, and a PostgreSQL server, share them); load average "
        f"{load_start[0]:.2f} at start, {load_end[0]:.2f} at end; {time.perf_counter() - wall:.0f} s in all"
    )
    if args.json:
        payload = {
            "settings": {"writers": args.writers, "seconds": args.seconds, "seed": args.seed},
            "levels": [{"sqlite": asdict(lite), "postgresql": on_pg and asdict(on_pg)} for lite, on_pg in levels],
            "meta": meta
            | {
                "mnemodb_version": MNEMODB_VERSION,
                "python": platform.python_version(),
                "sqlite": sqlite3.sqlite_version,
                "cpus": os.cpu_count(),
                "loadavg": [load_start, load_end],
            },
        }
        Path(args.json).write_text(json.dumps(payload, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
