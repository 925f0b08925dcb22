"""Semantic search costs: embedding throughput, and search latency with and without vectors.

Three measurements, in the benchmark's own process, through the public `Engine` API:

1. **Embedding throughput** of the local model (all-MiniLM-L6-v2 on the CPU) over the
   LoCoMo development split's turns, in sentences per second at a few batch sizes, and the
   latency of embedding one query.
2. **Reindex throughput**: `Embeddings.reindex` over a fresh store of those turns with the
   real model, which is what `mnemodb reindex` runs (read, embed, write with the
   staleness check).
3. **Search latency at scale** (default 100,000 memories in one scope). Memories are the
   split's turns repeated with a distinguishing suffix; their vectors are the real vector
   of their turn plus a little noise (embedding 100,000 texts for real would take minutes
   and measure the same search). They are written by `Embeddings.reindex` through an
   embedder that looks the vectors up, so the store path is the real one. Then, over the
   split's questions: `items.search(q, kinds=["memory"])` words only (`semantic=False`),
   hybrid (words + the query embedded by the real model, fused), and by vector alone; and
   the first vector search after a write and after a forget (the matrix catches up).

Run: `.venv/bin/python bench/bench_semantic.py [--memories 100000] [--queries 300] [--json PATH]`.
"""

from __future__ import annotations

# isort: off
import mnemodb.cli  # noqa: F401  before numpy: it sets how OpenBLAS threads idle, as `mnemodb serve` does
# isort: on

import argparse
import json
import os
import platform
import sqlite3
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from measure import p50, p95
from mnemodb import __version__ as MNEMODB_VERSION
from mnemodb.engine import Engine, NewMemory
from mnemodb.search.embedders import LOCAL_MODEL, LocalEmbedder

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "data" / "locomo" / "locomo-dev.json"
SUFFIX = " #"


def load_texts(path: Path) -> tuple[list[str], list[str]]:
    """(turn texts, question texts) of a LoCoMo-shaped file."""
    data = json.loads(path.read_text())
    turns: list[str] = []
    questions: list[str] = []
    for sample in data:
        conversation = sample["conversation"]
        for key, value in conversation.items():
            if key.startswith("session_") and isinstance(value, list):
                turns.extend(f"{t['speaker']}: {t['text']}" for t in value)
        questions.extend(str(q["question"]) for q in sample["qa"])
    return list(dict.fromkeys(turns)), questions


class LookupEmbedder:
    """Vectors of known texts (with a variant suffix stripped), plus noise: stands in for the
    model when filling a large store, so only the store and search paths are timed."""

    model = LOCAL_MODEL

    def __init__(self, vectors: dict[str, np.ndarray[Any, Any]], seed: int = 7) -> None:
        self.vectors = vectors
        self.random = np.random.default_rng(seed)

    def embed(self, texts: Sequence[str]) -> np.ndarray[Any, Any]:
        base = np.stack([self.vectors[t.rsplit(SUFFIX, 1)[0]] for t in texts])
        noisy = base + self.random.normal(0, 0.02, base.shape).astype(np.float32)
        unit: np.ndarray[Any, Any] = noisy / np.linalg.norm(noisy, axis=1, keepdims=True)
        return unit


def timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - started


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a LoCoMo-shaped JSON file")
    parser.add_argument("--memories", type=int, default=100_000, help="store size for the latency test")
    parser.add_argument("--queries", type=int, default=300, help="questions asked per search mode")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    turns, questions = load_texts(args.data)
    questions = questions[: args.queries]
    figures: dict[str, Any] = {"turns": len(turns), "memories": args.memories, "queries": len(questions)}

    model = LocalEmbedder()
    _, load_s = timed(model.load)
    figures["model_load_s"] = round(load_s, 2)
    model.embed(turns[:64])
    throughput: dict[str, float] = {}
    vectors: np.ndarray[Any, Any] | None = None
    for batch in (16, 64, 128):
        model.batch_size = batch
        vectors, seconds = timed(model.embed, turns)
        throughput[str(batch)] = round(len(turns) / seconds, 1)
        print(f"embedding {len(turns):,} turns, batch {batch}: {len(turns) / seconds:,.0f} sentences/s")
    figures["sentences_per_s"] = throughput
    assert vectors is not None
    one = []
    for q in questions[:100]:
        one.append(timed(model.embed, [q])[1] * 1000)
    figures["query_embed_ms"] = {"p50": round(p50(one), 2), "p95": round(p95(one), 2)}
    print(f"embedding one query: p50 {p50(one):.1f} ms, p95 {p95(one):.1f} ms")
    by_text = dict(zip(turns, vectors, strict=True))

    with tempfile.TemporaryDirectory(prefix="mnemodb-semantic-") as work:
        model.batch_size = 64
        engine = Engine.open(str(Path(work) / "reindex.db"), embedder=model)
        engine.memories.store_many([NewMemory(t) for t in turns])
        written, seconds = timed(engine.embeddings.reindex, batch=64)
        engine.close()
        figures["reindex_per_s"] = round(written / seconds, 1)
        print(f"reindex with the model: {written:,} memories in {seconds:.1f} s ({written / seconds:,.0f}/s)")

        engine = Engine.open(str(Path(work) / "large.db"), embedder=LookupEmbedder(by_text))
        texts = [f"{turns[i % len(turns)]}{SUFFIX}{i}" for i in range(args.memories)]
        started = time.perf_counter()
        for start in range(0, len(texts), 5000):
            engine.memories.store_many([NewMemory(t) for t in texts[start : start + 5000]])
        store_s = time.perf_counter() - started
        written, fill_s = timed(engine.embeddings.reindex, batch=1000)
        print(f"{args.memories:,} memories stored in {store_s:.1f} s; {written:,} vectors written in {fill_s:.1f} s")
        # From here the real model embeds the queries.
        engine.embeddings.embedder = model
        _, reload_s = timed(engine.items.search, questions[0], kinds=["memory"])
        figures["first_hybrid_search_s"] = round(reload_s, 3)
        modes: dict[str, dict[str, Any]] = {
            "words": {"semantic": False},
            "hybrid": {},
        }
        latency: dict[str, dict[str, float]] = {}
        for name, options in modes.items():
            for q in questions[:10]:
                engine.items.search(q, kinds=["memory"], **options)
            samples = [timed(engine.items.search, q, kinds=["memory"], **options)[1] * 1000 for q in questions]
            latency[name] = {"p50": round(p50(samples), 2), "p95": round(p95(samples), 2)}
        query_vectors = [model.embed([q])[0].tolist() for q in questions]
        samples = [
            timed(engine.items.search, None, vector=(LOCAL_MODEL, v), kinds=["memory"])[1] * 1000 for v in query_vectors
        ]
        latency["vector (query already embedded)"] = {"p50": round(p50(samples), 2), "p95": round(p95(samples), 2)}
        # A write moves the generation: the next search appends what was written since.
        reloads = []
        for i in range(5):
            engine.memories.store_many([NewMemory(f"{turns[i]}{SUFFIX}new{i}")])
            engine.embeddings.reindex()
            reloads.append(timed(engine.items.search, None, vector=(LOCAL_MODEL, query_vectors[i]))[1] * 1000)
        latency["vector, first after a write"] = {"p50": round(p50(reloads), 2), "p95": round(max(reloads), 2)}
        # A removal too: the matrix learns which rows are gone from the list of embedded nodes.
        removals = []
        for i in range(5):
            [stored] = engine.memories.store_many([NewMemory(f"{turns[i]}{SUFFIX}gone{i}")])
            engine.embeddings.reindex()
            engine.items.search(None, vector=(LOCAL_MODEL, query_vectors[i]))
            engine.items.forget([stored.value.memory.id])
            removals.append(timed(engine.items.search, None, vector=(LOCAL_MODEL, query_vectors[i]))[1] * 1000)
        latency["vector, first after a forget"] = {"p50": round(p50(removals), 2), "p95": round(max(removals), 2)}
        engine.close()
        figures["latency_ms"] = latency
        figures["db_mb"] = round(sum(f.stat().st_size for f in Path(work).glob("large.db*")) / 1e6, 1)

    print()
    print(f"search latency over {len(questions)} questions, {args.memories:,} memories in one scope (ms):")
    for name, cell in figures["latency_ms"].items():
        print(f"  {name:<34} p50 {cell['p50']:8.2f}   p95 {cell['p95']:8.2f}")
    print(f"first hybrid search (loads the matrix): {figures['first_hybrid_search_s'] * 1000:.0f} ms")
    print(
        f"mnemodb {MNEMODB_VERSION}, Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; database {figures['db_mb']} MB"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
