"""A page of the change log, newest first and filtered, at 100,000 entries (or `--entries`).

The log is filled straight through the store (one transaction per 5,000 entries) with a
team's mix: five scopes of very different sizes (shared 60 %, the smallest 1 %), the
usual ops (a rare one, `archive_node`, 2 %), four actors and changes without one, 30,000
targets, an entry every 100 ms. Then `ChangeLog.page` answers filters an inspector asks
for, each `--repeat` times: the newest page, a reader's scopes, a rare op, a rare actor,
an op, an actor and a scope together, one item, an hour of the log long ago, and the
twentieth page of a walk. Printed: p50 and p95 in ms, and the entries the page held.

    .venv/bin/python bench/bench_changes.py
    .venv/bin/python bench/bench_changes.py --entries 100000 --postgresql auto
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pg
from mnemodb.engine import Engine
from mnemodb.engine.changes import ChangePage
from mnemodb.model.ids import new_ulid

T0 = 1_700_000_000_000
STEP_MS = 100
SCOPE_A, SCOPE_B, SCOPE_C, SCOPE_D = (new_ulid() for _ in range(4))
SCOPES = (("shared", 60), (SCOPE_A, 25), (SCOPE_B, 10), (SCOPE_C, 4), (SCOPE_D, 1))
OPS = (
    ("create_node", 50),
    ("update_node", 20),
    ("add_tags", 10),
    ("create_edge", 10),
    ("set_props", 5),
    ("remove_node", 3),
    ("archive_node", 2),
)
ACTORS: tuple[tuple[str | None, int], ...] = (
    (None, 40),
    ("alice", 30),
    ("bob", 20),
    ("jwt:carol@example.com", 9),
    ("rare-token", 1),
)
BATCH = 5000


def pick(rng: random.Random, weighted: tuple[tuple[Any, int], ...]) -> Any:
    return rng.choices([v for v, _ in weighted], [w for _, w in weighted])[0]


def fill(engine: Engine, entries: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    targets = [new_ulid() for _ in range(30_000)]
    done = 0
    while done < entries:
        with engine.store.write() as tx:
            for _ in range(min(BATCH, entries - done)):
                target = rng.choice(targets)
                tx.append_change(
                    T0 + done * STEP_MS,
                    pick(rng, SCOPES),
                    pick(rng, OPS),
                    target,
                    {"id": target},
                    actor=pick(rng, ACTORS),
                )
                done += 1
    return targets


def timed(call: Callable[[], ChangePage], repeat: int) -> tuple[float, float, int]:
    call()  # warm
    times = []
    page = None
    for _ in range(repeat):
        started = time.perf_counter()
        page = call()
        times.append((time.perf_counter() - started) * 1000)
    assert page is not None
    times.sort()
    return statistics.median(times), times[max(0, int(len(times) * 0.95) - 1)], len(page.changes)


def walk(engine: Engine, pages: int) -> ChangePage:
    page = engine.change_log.page(every_scope=True, limit=50)
    for _ in range(pages - 1):
        assert page.next_before is not None
        page = engine.change_log.page(every_scope=True, limit=50, before_seq=page.next_before)
    return page


def measure(location: str, entries: int, repeat: int) -> list[tuple[str, float, float, int]]:
    with Engine.open(location) as engine:
        started = time.perf_counter()
        targets = fill(engine, entries, seed=7)
        print(f"  filled {entries} entries in {time.perf_counter() - started:.1f} s", flush=True)
        log = engine.change_log
        old_hour = T0 + entries * STEP_MS // 5
        cases: list[tuple[str, Callable[[], ChangePage]]] = [
            ("newest 50, every scope", lambda: log.page(every_scope=True)),
            ("a reader's scopes (shared, A)", lambda: log.page(scopes=["shared", SCOPE_A])),
            ("the smallest scope (1 %)", lambda: log.page(scopes=[SCOPE_D])),
            ("a rare op (2 %), every scope", lambda: log.page(ops=["archive_node"], every_scope=True)),
            ("a rare op in the smallest scope", lambda: log.page(ops=["archive_node"], scopes=[SCOPE_D])),
            ("a rare actor (1 %)", lambda: log.page(actors=["rare-token"], every_scope=True)),
            ("no actor, one op, scope B", lambda: log.page(actors=[None], ops=["create_node"], scopes=[SCOPE_B])),
            (
                "rare actor + op + scope A",
                lambda: log.page(actors=["rare-token"], ops=["create_node"], scopes=[SCOPE_A]),
            ),
            ("one item", lambda: log.page(target=targets[0], every_scope=True)),
            (
                "an hour, long ago, scope shared",
                lambda: log.page(at_from=old_hour, at_to=old_hour + 3_600_000, scopes=["shared"]),
            ),
            (
                "an hour long ago, op create_edge",
                lambda: log.page(at_from=old_hour, at_to=old_hour + 3_600_000, ops=["create_edge"], every_scope=True),
            ),
            ("the 20th page of a walk (20 calls)", lambda: walk(engine, 20)),
        ]
        return [(name, *timed(call, repeat)) for name, call in cases]


def report(title: str, rows: list[tuple[str, float, float, int]]) -> None:
    print(f"\n{title}")
    print(f"  {'filter':<40} {'p50 ms':>8} {'p95 ms':>8} {'entries':>8}")
    for name, p50, p95, n in rows:
        print(f"  {name:<40} {p50:8.2f} {p95:8.2f} {n:8d}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=30)
    pg.add_option(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        print(f"SQLite, {args.entries} entries", flush=True)
        report("SQLite", measure(str(Path(folder) / "changes.db"), args.entries, args.repeat))
    with pg.postgres(args.postgresql) as server:
        if server is not None:
            print(f"\n{server.describe()}, {args.entries} entries", flush=True)
            report("PostgreSQL", measure(server.url("changes"), args.entries, args.repeat))


if __name__ == "__main__":
    main()
