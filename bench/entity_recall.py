"""Native `recall` over a large knowledge graph: how fast, and whether a question finds the
entity it is about.

A graph the size of a well-used server-memory file is seeded through `Engine`: 20,000
entities (people, projects, places) with three observations each (60,000 in all), drawn
from a fixed vocabulary with a fixed seed, plus a few entities the questions are about.
Then `mnemodb serve --profile native` (words only: no embedder) answers each question
`--rounds` times over stdio, and the bench prints, per question, the median and p95 of
the round trip and whether the entity asked about came first.

`--pythonpath` runs the server from another source tree (an older checkout, say) for a
before/after comparison on the same database and questions.

Usage: python bench/entity_recall.py [--entities 20000] [--rounds 20] [--pythonpath DIR] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from measure import p50, p95
from mnemodb.engine import Engine
from mnemodb.engine.graph import NewEntity
from serve_client import ServeProcess

FIRST = [
    "maria",
    "tom",
    "anna",
    "lukas",
    "sofia",
    "jonas",
    "emma",
    "felix",
    "lena",
    "paul",
    "nora",
    "oskar",
    "ida",
    "max",
    "lea",
    "ben",
    "mia",
    "finn",
    "clara",
    "noah",
]
LAST = [
    "lopez",
    "becker",
    "smith",
    "meyer",
    "wagner",
    "schulz",
    "fischer",
    "weber",
    "klein",
    "wolf",
    "braun",
    "zimmer",
    "hartmann",
    "krause",
    "lange",
]
VERBS = [
    "likes",
    "prefers",
    "works",
    "on",
    "lives",
    "in",
    "studies",
    "owns",
    "visited",
    "manages",
    "reviews",
    "maintains",
]
THINGS = [
    "espresso",
    "tea",
    "python",
    "rust",
    "berlin",
    "madrid",
    "gardening",
    "chess",
    "the",
    "customer",
    "portal",
    "billing",
    "kubernetes",
    "jazz",
    "cycling",
    "football",
    "photography",
    "invoices",
    "onboarding",
    "dashboards",
    "the",
    "mobile",
    "app",
    "search",
    "latency",
]
# (question, the entity it is about): each named entity is added to the graph.
QUESTIONS = (
    ("how should I contact Tom Becker", "Tom Becker"),
    ("what does Ilse Vogt drink in the morning", "Ilse Vogt"),
    ("who maintains the billing reconciliation job", "Billing Reconciler"),
    ("where is the Quarzwerk office", "Quarzwerk"),
    ("Tom Becker", "Tom Becker"),
    ("which team owns kubernetes upgrades", "Platform Team"),
)
SUBJECTS = (
    NewEntity("Tom Becker", "person", ("email tom.becker@example.com", "prefers phone calls in the morning")),
    NewEntity("Ilse Vogt", "person", ("drinks green tea every morning", "leads the design reviews")),
    NewEntity("Billing Reconciler", "job", ("nightly reconciliation of billing records", "maintained by Ana")),
    NewEntity("Quarzwerk", "company", ("office in Leipzig near the main station",)),
    NewEntity("Platform Team", "team", ("owns kubernetes upgrades and the CI runners",)),
)


def seed(db: Path, entities: int) -> None:
    rng = random.Random(7)
    with Engine.open(str(db)) as engine:
        batch: list[NewEntity] = []
        for n in range(entities):
            observations = tuple(
                f"{rng.choice(VERBS)} {rng.choice(THINGS)} {rng.choice(THINGS)} since {2000 + n % 25}" for _ in range(3)
            )
            batch.append(
                NewEntity(
                    f"{rng.choice(FIRST)} {rng.choice(LAST)} {n}",
                    rng.choice(("person", "project", "place")),
                    observations,
                )
            )
            if len(batch) == 1000:
                engine.graph.create_entities(batch)
                batch = []
        engine.graph.create_entities([*batch, *SUBJECTS])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entities", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--pythonpath", help="run the server from this source tree")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--seed-into", help=argparse.SUPPRESS)  # the seeding step, run by the server's code
    args = parser.parse_args()
    if args.seed_into:
        seed(Path(args.seed_into), args.entities)
        return
    env = {"MNEMODB_EMBEDDER": "none"}
    if args.pythonpath:
        env["PYTHONPATH"] = args.pythonpath
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "memory.db"
        started = time.perf_counter()
        # Seeded by the code that will serve it, so an older tree gets a file of its own schema.
        subprocess.run(
            [sys.executable, __file__, "--seed-into", str(db), "--entities", str(args.entities)],
            check=True,
            env={**os.environ, **({"PYTHONPATH": args.pythonpath} if args.pythonpath else {})},
        )
        took = time.perf_counter() - started
        print(f"seeded {args.entities:,} entities ({3 * args.entities:,} observations) in {took:.1f} s")
        server = ServeProcess(db, "native", env=env)
        try:
            server.initialize()
            for question, subject in QUESTIONS:
                times: list[float] = []
                names: list[str] = []
                for _ in range(args.rounds):
                    began = time.perf_counter()
                    reply = server.call("recall", {"query": question, "kinds": ["entity"], "limit": 5})
                    times.append(time.perf_counter() - began)
                    ok, result = tool_outcome_native(reply)
                    if not ok:
                        raise SystemExit(f"recall failed: {result}")
                    names = [item.get("name", "") for item in result["items"]]
                first = bool(names) and names[0] == subject
                results.append(
                    {"question": question, "p50_ms": p50(times) * 1000, "p95_ms": p95(times) * 1000, "first": first}
                )
                print(
                    f"{question!r:48} p50 {p50(times) * 1000:7.1f} ms  p95 {p95(times) * 1000:7.1f} ms  "
                    f"{'first' if first else 'NOT first'}: {names[:3]}"
                )
        finally:
            server.close()
    overall = statistics.median(r["p50_ms"] for r in results)
    hits = sum(r["first"] for r in results)
    print(f"median of the questions' p50: {overall:.1f} ms; the entity asked about first in {hits} of {len(results)}")
    if args.json:
        Path(args.json).write_text(json.dumps({"entities": args.entities, "results": results}))


def tool_outcome_native(reply: dict[str, Any]) -> tuple[bool, Any]:
    """The native profile's structured result (its tools answer without an envelope)."""
    result = reply.get("result")
    if not isinstance(result, dict) or result.get("isError"):
        return False, reply
    return True, result.get("structuredContent")


if __name__ == "__main__":
    main()
