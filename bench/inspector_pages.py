"""The web inspector's page and fragment latencies at 10,000 and 100,000 memories.

For each size it seeds a database (memories with tags, types and importances over a year,
entities with observations, relations between them; the change log grows with them),
starts `mnemodb ui` on it as a user would, and times GET requests over one kept-alive
HTTP connection, as a browser makes them: each page's full HTML, and the fragments htmx
asks for (search results while typing, the change log's poll). Figures are p50 and p95
in milliseconds over the repetitions, server time plus loopback.

    python bench/inspector_pages.py                 # 10k and 100k
    python bench/inspector_pages.py --sizes 2000    # a quick look
"""

from __future__ import annotations

import argparse
import http.client
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, urlsplit

from measure import p50, p95
from mnemodb.engine import Engine, NewMemory
from mnemodb.engine.graph import NewEntity, NewRelation

WORDS = [
    "deploy",
    "key",
    "rotates",
    "server",
    "database",
    "backup",
    "release",
    "meeting",
    "project",
    "budget",
    "design",
    "review",
    "customer",
    "invoice",
    "travel",
    "flight",
    "hotel",
    "dinner",
    "birthday",
    "garden",
    "recipe",
    "coffee",
    "tea",
    "music",
    "guitar",
    "python",
    "rust",
    "postgres",
    "sqlite",
    "kubernetes",
    "cluster",
    "network",
    "latency",
    "cache",
    "index",
    "query",
    "ranking",
    "paris",
    "lyon",
    "berlin",
    "tokyo",
    "london",
    "monday",
    "tuesday",
    "friday",
    "morning",
    "evening",
    "quarterly",
    "roadmap",
]
TAGS = ("ops", "work", "home", "travel", "health", "music", "finance", "family", "code", "ideas")
TYPES = ("general", "fact", "preference", "event", "decision", "task")
YEAR_MS = 365 * 86_400_000


def seed(path: Path, memories: int, *, rng: random.Random) -> dict[str, list[str]]:
    """A database of `memories` memories, a tenth as many entities with observations, and
    a relation per entity; ids to visit."""
    now = int(time.time() * 1000)
    with Engine.open(str(path)) as engine:
        done = 0
        while done < memories:
            batch = []
            for _ in range(min(1000, memories - done)):
                words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 18)))
                tags = tuple(sorted(set(rng.sample(TAGS, rng.randint(0, 3)))))
                batch.append(NewMemory(words, tags, rng.randint(0, 9), rng.choice(TYPES)))
            engine.memories.store_many(batch)
            done += len(batch)
        entities = [
            NewEntity(f"entity {i}", rng.choice(("person", "project", "place")), (" ".join(rng.sample(WORDS, 6)),))
            for i in range(max(10, memories // 10))
        ]
        for start in range(0, len(entities), 1000):
            engine.graph.create_entities(entities[start : start + 1000])
        relations = [
            NewRelation(f"entity {i}", f"entity {rng.randrange(len(entities))}", rng.choice(("knows", "works_on")))
            for i in range(len(entities))
        ]
        for start in range(0, len(relations), 1000):
            engine.graph.create_relations(relations[start : start + 1000])
        listed = engine.items.search(None, kinds=("memory",), limit=50).found
        del now
        return {"memories": [f.item.id for f in listed], "entities": [f"entity {i}" for i in range(20)]}


class Ui:
    """`mnemodb ui` on a database, and one HTTP connection to it."""

    def __init__(self, db: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mnemodb", "ui", "--db", str(db), "--port", "0", "--embedder", "none"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        url = self.proc.stdout.readline().strip()
        if not url.startswith("http://"):
            self.proc.kill()
            raise SystemExit(f"mnemodb ui did not say where it listens: {url!r}")
        parts = urlsplit(url)
        self.conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=60)

    def get(self, path: str, *, htmx: bool = False) -> float:
        headers = {"HX-Request": "true"} if htmx else {}
        started = time.perf_counter()
        self.conn.request("GET", path, headers=headers)
        response = self.conn.getresponse()
        body = response.read()
        elapsed = (time.perf_counter() - started) * 1000
        if response.status != 200:
            raise SystemExit(f"GET {path}: {response.status} {body[:300]!r}")
        return elapsed

    def close(self) -> None:
        self.conn.close()
        self.proc.terminate()
        self.proc.wait(timeout=30)


def measure(ui: Ui, ids: dict[str, list[str]], rng: random.Random, reps: int) -> list[tuple[str, float, float]]:
    queries = [" ".join(rng.sample(WORDS, rng.randint(1, 3))) for _ in range(reps)]
    cases: list[tuple[str, Callable[[int], float]]] = [
        ("overview", lambda i: ui.get("/ui/")),
        ("memories, newest first", lambda i: ui.get("/ui/memories")),
        ("memories, a later page", lambda i: ui.get("/ui/memories?offset=500")),
        ("memories, tag + importance filter", lambda i: ui.get("/ui/memories?tag=ops&min=5")),
        ("memories, date range", lambda i: ui.get("/ui/memories?from=2020-01-01&to=2999-01-01")),
        ("search page (1-3 words)", lambda i: ui.get(f"/ui/memories?q={quote(queries[i])}")),
        ("search fragment (htmx, typing)", lambda i: ui.get(f"/ui/memories?q={quote(queries[i])}", htmx=True)),
        ("one memory's page", lambda i: ui.get(f"/ui/item/{ids['memories'][i % len(ids['memories'])]}")),
        ("one entity's page", lambda i: ui.get(f"/ui/item/{quote(ids['entities'][i % len(ids['entities'])])}")),
        ("entities, searched", lambda i: ui.get(f"/ui/entities?q={quote(queries[i])}")),
        ("change log, newest", lambda i: ui.get("/ui/changes")),
        ("change log, live poll (htmx)", lambda i: ui.get("/ui/changes?after=999999999", htmx=True)),
    ]
    rows = []
    for name, case in cases:
        case(0)  # warm: the first request of a kind pays for imports and caches
        times = [case(i) for i in range(reps)]
        rows.append((name, p50(times), p95(times)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000", help="memories per database (comma-separated)")
    parser.add_argument("--reps", type=int, default=30, help="requests per page")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    results: dict[int, list[tuple[str, float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            db = Path(tmp) / f"inspector-{size}.db"
            started = time.perf_counter()
            ids = seed(db, size, rng=rng)
            print(f"seeded {size:,} memories in {time.perf_counter() - started:.1f} s", file=sys.stderr)
            ui = Ui(db)
            try:
                results[size] = measure(ui, ids, rng, args.reps)
            finally:
                ui.close()
    sizes = sorted(results)
    header = "| page | " + " | ".join(f"{s:,}: p50 / p95 ms" for s in sizes) + " |"
    print(header)
    print("|---|" + "---|" * len(sizes))
    for i, (name, _, _) in enumerate(results[sizes[0]]):
        cells = " | ".join(f"{results[s][i][1]:.1f} / {results[s][i][2]:.1f}" for s in sizes)
        print(f"| {name} | {cells} |")


if __name__ == "__main__":
    main()
