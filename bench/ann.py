"""Exact vector search next to approximate (ANN) indexes, to choose mnemodb's vector index.

At each size (10,000, 100,000 and 1,000,000 vectors of 384 dimensions, all-MiniLM-L6-v2's
size, by default) it builds every index over the same unit vectors and asks each the same
held-out queries, one at a time, for their 10 nearest neighbours by cosine (inner product
of unit vectors). Per method and parameter setting it reports:

- build s: wall time to build the index from the in-memory float32 matrix (exact in RAM:
  normalising the rows, as mnemodb does when it loads a model's vectors; exact over a
  memory-mapped file: writing the .npy file);
- recall@10: the share of the exact top 10 found in the method's top 10, averaged over
  queries. The exact top 10 comes from a blockwise float32 matrix product;
- p50 / p95 ms: the wall time of one query (k=10) through the library's Python API, after
  `WARMUP` untimed queries;
- mem MB: what the index itself holds in memory (the matrix; usearch's own count; for
  hnswlib and faiss the size of the saved index, whose layout matches the one in memory);
  disk MB: the size of the saved index (exact: the .npy file; engine: the SQLite file);
- fresh ms: how long until a new vector is found: one insert plus one search for it, the
  median over `FRESH_TRIES` new vectors (exact in RAM: a row written into a matrix with
  spare room; the engine: a committed `CreateNode` + `SetEmbedding`, and the search after
  it, which reloads the model's vectors from SQLite).

Methods:

- exact numpy: a float32 matrix of unit rows, `scores = matrix @ q`, `np.argpartition` for
  the top k and a sort of those k; this is what `PropertyGraph.nearest` does. With BLAS at
  its default thread count (all cores, as in mnemodb now) and, when threadpoolctl is
  importable, limited to one thread. Also over a memory-mapped .npy file
  (`np.load(mmap_mode="r")`) once the file is in the page cache;
- hnswlib, usearch and faiss HNSW (M / connectivity 16, ef_construction 200, ef_search
  from `--ef`), and faiss IVF-Flat (nlist = 2 * sqrt(n), trained on 40 * nlist rows; nprobe from `--nprobe`);
- scope filter: a tenth of the rows are in the query's scope (as when a store holds ten
  scopes of equal size). Exact numpy over the readable rows, as `nearest` does; hnswlib
  with its `filter` callback; faiss HNSW with an `IDSelectorBitmap`. usearch's Python API
  has no filtered search. Recall against the exact top 10 inside the scope;
- mnemodb's engine (`--engine-sizes`): the vectors stored as nodes with `SetEmbedding` in
  a temporary SQLite database, searched with `PropertyGraph.search_vectors`. Build is the
  time to write them; the first search, which loads the vectors, is printed apart.

Threads, as a server would run: one query at a time; the ANN libraries search each query on
one thread (faiss: `omp_set_num_threads(1)`; hnswlib and usearch: `threads=1`), numpy
uses its BLAS default unless stated. Index builds use `--build-threads` (default: all
cores), as a background build would.

The vectors. Random Gaussian vectors are a worst case for ANN indexes and unlike text
embeddings, so the default data are synthetic but shaped like sentence embeddings: 3,000
topic centres grouped under 60 broader themes, topic sizes following a Zipf-like law, and
every point a centre plus noise. The centres are drawn with a power-law spectrum over the
dimensions (most of the variance lies in some tens of directions, as in real embeddings),
and each topic's noise with a steeper one over its own ordering of the dimensions, so that
a topic spreads over a few tens of directions of its own and has no sharp edge; all points
share an offset (real embeddings all lean one way). The parameters were tuned so that on
about 15,000 points the figures match those of all-MiniLM-L6-v2 on LoCoMo's sentences:
median cosine to the nearest neighbour about 0.8 (real: 0.76) and to the 10th about 0.6
(0.6), random pairs about 0.09 (0.12), participation ratio (effective dimension) about 85
(80); HNSW recall comes out a little lower than on the real vectors and IVF recall a little
higher. The queries are `--queries` further points of the same distribution, not in the
index. `--seed` fixes everything.

Real embeddings (unless `--no-real`): the distinct sentences of the LoCoMo conversations,
observations, summaries and questions (`--data`, by default shared/data/locomo/locomo-dev.json
in the directory that holds this repository), about 15,000, embedded with the local
all-MiniLM-L6-v2 (mnemodb's local embedder, offline). That takes one to four minutes on two
cores; `--real-cache FILE.npy` keeps the vectors between runs. `--queries` of them are
held out as queries; the others are indexed at 10,000 and at all of them.

Run `python bench/ann.py --help` for the options; see bench/README.md. The ANN libraries are
benchmark-only and not dependencies of mnemodb: install them into the virtualenv by hand
(`pip install hnswlib usearch faiss-cpu`); a missing one is skipped.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.metadata
import json
import math
import os
import platform
import re
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from measure import p50, p95

DIM = 384
K = 10
WARMUP = 20
FRESH_TRIES = 20
SCOPES = 10
"""The scope-filter rows: each row is in one of this many scopes; the queries read one."""
HNSW_M = 16
EF_CONSTRUCTION = 200
MODEL = "bench-384"
ANN_METHODS = ("hnswlib", "usearch", "faiss-hnsw", "faiss-ivf")
ENGINE_BATCH = 500
"""Nodes per engine batch (each batch is one transaction of CreateNode + SetEmbedding pairs)."""

Vectors = np.ndarray[Any, Any]
Ids = Vectors | Sequence[int]
"""What a search gives: the row ids of its nearest neighbours, best first."""


# -- data ------------------------------------------------------------------------------------------


class ClusteredVectors:
    """Unit vectors shaped like sentence embeddings (see the module docstring)."""

    def __init__(
        self,
        seed: int,
        *,
        dim: int = DIM,
        topics: int = 3000,
        themes: int = 60,
        alpha: float = 0.5,
        noise_alpha: float = 0.8,
        offset: float = 0.55,
        theme_spread: float = 0.9,
        topic_spread: float = 0.7,
        noise: float = 1.25,
    ) -> None:
        self.dim = dim
        rng = np.random.default_rng(seed)
        self.scale = self._power_law(alpha)
        """Per-dimension standard deviation of a centre: a power law with unit expected norm."""
        self.noise_scale = self._power_law(noise_alpha)
        """The same for the noise around a centre: steeper, so that each topic is spread over
        a few tens of directions (its own: see `axes`) and neighbours are local."""
        shared = rng.standard_normal(dim).astype(np.float32)
        self.offset = shared * np.float32(offset / np.linalg.norm(shared))
        theme_centres = rng.standard_normal((themes, dim), dtype=np.float32) * self.scale * np.float32(theme_spread)
        parents = rng.integers(0, themes, topics)
        own = rng.standard_normal((topics, dim), dtype=np.float32) * self.scale * np.float32(topic_spread)
        self.centres = theme_centres[parents] + own
        self.axes = np.argsort(rng.random((topics, dim)), axis=1).astype(np.int16)
        """Each topic's own order of the dimensions for its noise."""
        weights = 1.0 / (np.arange(topics) + 10.0)
        self.weights = weights / weights.sum()
        self.spread = (np.exp(rng.normal(0.0, 0.25, topics)) * noise).astype(np.float32)

    def _power_law(self, alpha: float) -> Vectors:
        scale = (np.arange(self.dim) + 1.0) ** -alpha
        unit: Vectors = (scale / np.sqrt((scale**2).sum())).astype(np.float32)
        return unit

    def sample(self, n: int, rng: np.random.Generator, *, chunk: int = 50_000) -> Vectors:
        out = np.empty((n, self.dim), dtype=np.float32)
        for start in range(0, n, chunk):
            stop = min(n, start + chunk)
            topic = rng.choice(len(self.centres), stop - start, p=self.weights)
            noise = rng.standard_normal((stop - start, self.dim), dtype=np.float32) * self.noise_scale
            noise = np.take_along_axis(noise, self.axes[topic].astype(np.intp), axis=1)
            block = self.offset + self.centres[topic] + noise * self.spread[topic, None]
            block /= np.linalg.norm(block, axis=1, keepdims=True)
            out[start:stop] = block
        return out


def locomo_sentences(path: Path) -> list[str]:
    """Distinct sentences (and whole texts) of the LoCoMo file, at least 12 characters long."""
    texts: set[str] = set()

    def add(text: str) -> None:
        text = text.strip()
        if len(text) >= 12:
            texts.add(text)

    def walk(value: Any) -> None:
        if isinstance(value, str):
            add(value)
            for part in re.split(r"(?<=[.!?])\s+", value):
                add(part)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)

    for sample in json.loads(path.read_text(encoding="utf-8")):
        for key in ("conversation", "observation", "event_summary", "session_summary"):
            walk(sample.get(key, {}))
        for qa in sample.get("qa", []):
            walk(qa.get("question", ""))
            walk(str(qa.get("answer", "")))
    return sorted(texts)


def real_embeddings(data: Path, cache: Path | None) -> Vectors:
    if cache is not None and cache.is_file():
        cached: Vectors = np.load(cache)
        return cached
    from mnemodb.search.embedders import LocalEmbedder, local_available

    if not local_available():
        raise RuntimeError("the local all-MiniLM-L6-v2 model is not installed")
    texts = locomo_sentences(data)
    started = time.perf_counter()
    vectors = LocalEmbedder(batch_size=128).embed(texts)
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    print(f"embedded {len(texts):,} LoCoMo sentences in {time.perf_counter() - started:.0f} s", flush=True)
    if cache is not None:
        np.save(cache, vectors)
    return vectors


def neighbour_stats(base: Vectors, queries: Vectors) -> str:
    """The median cosine of each query's 1st and 10th nearest neighbour, and of random pairs."""
    truth_scores = _exact_scores(base, queries)
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, len(base), (2, 2000))
    pairs = np.einsum("ij,ij->i", base[a], base[b])
    return (
        f"NN1 cos p50 {np.median(truth_scores[:, 0]):.2f}, NN10 {np.median(truth_scores[:, K - 1]):.2f}, "
        f"random pairs {pairs.mean():.2f}"
    )


# -- the exact answer --------------------------------------------------------------------------------


def _exact(base: Vectors, queries: Vectors, k: int = K, block: int = 65_536) -> tuple[Vectors, Vectors]:
    """(ids, scores) of each query's exact top k, best first."""
    best_ids = np.empty((len(queries), 0), dtype=np.int64)
    best_scores = np.empty((len(queries), 0), dtype=np.float32)
    for start in range(0, len(base), block):
        scores = queries @ base[start : start + block].T
        take = min(k, scores.shape[1])
        top = np.argpartition(-scores, take - 1, axis=1)[:, :take]
        ids = np.concatenate([best_ids, top + start], axis=1)
        vals = np.concatenate([best_scores, np.take_along_axis(scores, top, axis=1)], axis=1)
        keep = np.argsort(-vals, axis=1, kind="stable")[:, :k]
        best_ids = np.take_along_axis(ids, keep, axis=1)
        best_scores = np.take_along_axis(vals, keep, axis=1)
    return best_ids, best_scores


def _exact_scores(base: Vectors, queries: Vectors) -> Vectors:
    return _exact(base, queries)[1]


def recall(truth: Vectors, found: Sequence[Sequence[int]]) -> float:
    hits = [len(set(t.tolist()) & {int(i) for i in f}) / len(t) for t, f in zip(truth, found, strict=True)]
    return float(np.mean(hits))


# -- measuring -------------------------------------------------------------------------------------


@dataclass
class Row:
    data: str
    size: int
    method: str
    params: str
    build_s: float | None
    recall: float | None
    p50_ms: float | None
    p95_ms: float | None
    mem_mb: float | None
    disk_mb: float | None
    fresh_ms: float | None
    note: str = ""


def time_queries(search: Callable[[Vectors], Ids], queries: Vectors) -> tuple[list[list[int]], list[float]]:
    """Each query's ids and its latency in ms, after WARMUP untimed queries."""
    for q in queries[:WARMUP]:
        search(q)
    found, times = [], []
    for q in queries:
        started = time.perf_counter()
        ids = search(q)
        times.append((time.perf_counter() - started) * 1000)
        found.append([int(i) for i in ids])
    return found, times


def mb(nbytes: float) -> float:
    return nbytes / 2**20


def file_mb(path: Path) -> float:
    return mb(path.stat().st_size)


def lib_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


@contextlib.contextmanager
def blas_threads(n: int | None) -> Iterator[bool]:
    """Limit BLAS to `n` threads (None: leave it). Yields whether the limit could be set."""
    if n is None:
        yield True
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield False
        return
    with threadpool_limits(n, user_api="blas"):
        yield True


def top_k(scores: Vectors, k: int = K) -> Vectors:
    """The indices of the k best scores, best first (a partial sort, as mnemodb does)."""
    if k >= scores.size:
        return np.argsort(-scores)
    best = np.argpartition(-scores, k - 1)[:k]
    return best[np.argsort(-scores[best])]


class Bench:
    def __init__(self, args: argparse.Namespace, work: Path) -> None:
        self.args = args
        self.work = work
        self.rows: list[Row] = []
        self.build_threads: int = args.build_threads
        # The data of the size being run (set by run_size).
        self.data = ""
        self.n = 0
        self.queries: Vectors = np.empty((0, DIM), dtype=np.float32)
        self.fresh: Vectors = self.queries
        self.truth: Vectors = np.empty((0, K), dtype=np.int64)
        self.in_scope: Vectors = np.empty(0, dtype=bool)
        self.scoped_truth: Vectors | None = None

    def add(self, rows: Sequence[Row], fresh_ms: float | None = None) -> None:
        """Print and keep rows; `fresh_ms` goes to those of them that have a build time."""
        for row in rows:
            if fresh_ms is not None and row.build_s is not None:
                row.fresh_ms = fresh_ms
            self.rows.append(row)
            print(format_row(row), flush=True)

    def run_size(
        self, data: str, base: Vectors, queries: Vectors, fresh: Vectors, *, engine: bool, filtered: bool
    ) -> None:
        n = len(base)
        self.data, self.n, self.queries, self.fresh = data, n, queries, fresh
        self.truth = _exact(base, queries)[0]
        self.in_scope = np.random.default_rng(n).integers(0, SCOPES, n) == 0
        self.scoped_truth = None
        if filtered:
            rows = np.flatnonzero(self.in_scope)
            self.scoped_truth = rows[_exact(base[rows], queries)[0]]
        methods = self.args.large_methods if n >= self.args.large_size else self.args.methods
        steps: list[Callable[[Vectors], None]] = [self.exact, self.exact_mmap]
        steps += [getattr(self, name.replace("-", "_")) for name in ANN_METHODS if name in methods]
        if engine:
            steps.append(self.engine)
        for step in steps:
            step(base)
            gc.collect()  # each index is freed before the next is built
        skipped = [name for name in ANN_METHODS if name in self.args.methods and name not in methods]
        if skipped:
            print(f"(not run at this size, to keep the run short: {', '.join(skipped)}; see --large-methods)")

    def measure(
        self,
        method: str,
        params: str,
        search: Callable[[Vectors], Ids],
        *,
        build: float | None,
        mem: float | None = None,
        disk: float | None = None,
        scoped: bool = False,
        note: str = "",
    ) -> Row:
        """Time `search` over the queries; a row for it (not yet added)."""
        truth = self.scoped_truth if scoped else self.truth
        assert truth is not None
        found, times = time_queries(search, self.queries)
        return Row(
            self.data,
            self.n,
            method,
            params,
            build,
            recall(truth, found),
            p50(times),
            p95(times),
            mem,
            disk,
            None,
            note,
        )

    def fresh_ms(self, insert: Callable[[int, Vectors], None], search: Callable[[Vectors], Ids]) -> float:
        """Median time to insert a new vector (row n + i) and search for it; each must be found."""
        times = []
        for i, vector in enumerate(self.fresh[:FRESH_TRIES]):
            started = time.perf_counter()
            insert(i, vector)
            found = [int(x) for x in search(vector)]
            times.append((time.perf_counter() - started) * 1000)
            if self.n + i not in found:
                print(f"  note: fresh vector {i} was not found", file=sys.stderr)
        return p50(times)

    # -- exact ---------------------------------------------------------------------------------

    def exact(self, base: Vectors) -> None:
        n = len(base)
        started = time.perf_counter()
        matrix = np.empty((n + FRESH_TRIES, DIM), dtype=np.float32)  # spare rows for the fresh vectors
        norms = np.linalg.norm(base, axis=1)
        np.divide(base, norms[:, None], out=matrix[:n])
        build = time.perf_counter() - started
        unit = matrix[:n]
        size = mb(unit.nbytes)
        filled = [n]  # rows of `matrix` in use

        def insert(i: int, vector: Vectors) -> None:
            matrix[n + i] = vector / np.linalg.norm(vector)
            filled[0] = n + i + 1

        def search_all(q: Vectors) -> Vectors:
            return top_k(matrix[: filled[0]] @ q)

        for threads in (None, 1):
            with blas_threads(threads) as limited:
                if not limited:
                    continue
                label = "BLAS default threads" if threads is None else "BLAS 1 thread"
                row = self.measure("exact numpy", label, search_all, build=build, mem=size)
                self.add([row], self.fresh_ms(insert, search_all))
                filled[0] = n
        if self.scoped_truth is not None:
            rows = np.flatnonzero(self.in_scope)

            def scoped(q: Vectors) -> Vectors:
                # As `nearest` does when under half the rows are readable: score only those rows.
                scores = np.full(n, -np.inf, dtype=np.float32)
                scores[rows] = unit[rows] @ q
                return top_k(scores)

            self.add([self.measure("exact numpy", "scope filter 10%", scoped, build=None, scoped=True)])

    def exact_mmap(self, base: Vectors) -> None:
        path = self.work / f"exact-{len(base)}.npy"
        started = time.perf_counter()
        np.save(path, base)
        build = time.perf_counter() - started
        mapped = np.load(path, mmap_mode="r")
        top_k(mapped @ self.queries[0])  # read it once: the file is in the page cache from here on
        row = self.measure(
            "exact numpy mmap",
            "page cache warm, BLAS default",
            lambda q: top_k(mapped @ q),
            build=build,
            mem=0.0,
            disk=file_mb(path),
            note="its memory is the OS page cache",
        )
        self.add([row])
        path.unlink()

    # -- hnswlib -------------------------------------------------------------------------------

    def hnswlib(self, base: Vectors) -> None:
        try:
            import hnswlib
        except ImportError:
            self._skipped("hnswlib")
            return
        n = len(base)
        index = hnswlib.Index(space="ip", dim=DIM)
        started = time.perf_counter()
        index.init_index(max_elements=n + FRESH_TRIES, M=HNSW_M, ef_construction=EF_CONSTRUCTION, random_seed=1)
        index.add_items(base, np.arange(n), num_threads=self.build_threads)
        build = time.perf_counter() - started
        path = self.work / "hnswlib.bin"
        index.save_index(str(path))
        size = file_mb(path)
        path.unlink()

        def search(q: Vectors) -> Vectors:
            ids: Vectors = index.knn_query(q, k=K, num_threads=1)[0][0]
            return ids

        rows = []
        for ef in self.args.ef:
            index.set_ef(ef)
            params = f"M={HNSW_M} efC={EF_CONSTRUCTION} ef={ef}"
            rows.append(self.measure("hnswlib HNSW", params, search, build=build, mem=size, disk=size))
        ef = max(self.args.ef)
        index.set_ef(ef)
        if self.scoped_truth is not None:
            allowed = self.in_scope

            def scoped(q: Vectors) -> Vectors:
                ids: Vectors = index.knn_query(q, k=K, num_threads=1, filter=lambda i: bool(allowed[i]))[0][0]
                return ids

            params = f"ef={ef} scope filter 10%"
            rows.append(self.measure("hnswlib HNSW", params, scoped, build=None, scoped=True, note="Python callback"))

        def insert(i: int, vector: Vectors) -> None:
            index.add_items(vector[None, :], [n + i], num_threads=1)

        self.add(rows, self.fresh_ms(insert, search))

    # -- usearch -------------------------------------------------------------------------------

    def usearch(self, base: Vectors) -> None:
        try:
            from usearch.index import Index
        except ImportError:
            self._skipped("usearch")
            return
        n = len(base)
        for dtype in self.args.usearch_dtypes:
            index = Index(
                ndim=DIM,
                metric="ip",
                dtype=dtype,
                connectivity=HNSW_M,
                expansion_add=EF_CONSTRUCTION,
                expansion_search=self.args.ef[0],
            )
            started = time.perf_counter()
            index.add(np.arange(n, dtype=np.uint64), base, threads=self.build_threads)
            build = time.perf_counter() - started
            path = self.work / "usearch.bin"
            index.save(str(path))
            disk = file_mb(path)
            path.unlink()
            memory = mb(index.memory_usage)

            def search(q: Vectors, index: Any = index) -> Vectors:
                ids: Vectors = index.search(q, K, threads=1).keys
                return ids

            rows = []
            for ef in self.args.ef:
                index.expansion_search = ef
                params = f"M={HNSW_M} efC={EF_CONSTRUCTION} ef={ef} {dtype}"
                rows.append(self.measure("usearch HNSW", params, search, build=build, mem=memory, disk=disk))

            def insert(i: int, vector: Vectors, index: Any = index) -> None:
                index.add(n + i, vector, threads=1)

            self.add(rows, self.fresh_ms(insert, search))

    # -- faiss ---------------------------------------------------------------------------------

    def faiss_hnsw(self, base: Vectors) -> None:
        try:
            import faiss
        except ImportError:
            self._skipped("faiss")
            return
        n = len(base)
        index = faiss.IndexHNSWFlat(DIM, HNSW_M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = EF_CONSTRUCTION
        faiss.omp_set_num_threads(self.build_threads)
        started = time.perf_counter()
        index.add(base)
        build = time.perf_counter() - started
        faiss.omp_set_num_threads(1)
        size = self._faiss_size(index)

        def search(q: Vectors) -> Vectors:
            ids: Vectors = index.search(q[None, :], K)[1][0]
            return ids

        rows = []
        for ef in self.args.ef:
            index.hnsw.efSearch = ef
            params = f"M={HNSW_M} efC={EF_CONSTRUCTION} ef={ef}"
            rows.append(self.measure("faiss HNSW", params, search, build=build, mem=size, disk=size))
        ef = max(self.args.ef)
        index.hnsw.efSearch = ef
        if self.scoped_truth is not None:
            bitmap = np.packbits(self.in_scope, bitorder="little")
            selector = faiss.IDSelectorBitmap(n, faiss.swig_ptr(bitmap))
            search_params = faiss.SearchParametersHNSW(sel=selector, efSearch=ef)

            def scoped(q: Vectors) -> Vectors:
                ids: Vectors = index.search(q[None, :], K, params=search_params)[1][0]
                return ids

            params = f"ef={ef} scope filter 10%"
            rows.append(self.measure("faiss HNSW", params, scoped, build=None, scoped=True, note="IDSelectorBitmap"))

        def insert(i: int, vector: Vectors) -> None:
            index.add(vector[None, :])  # faiss numbers rows itself: this one is n + i

        self.add(rows, self.fresh_ms(insert, search))

    def faiss_ivf(self, base: Vectors) -> None:
        try:
            import faiss
        except ImportError:
            return
        n = len(base)
        nlist = max(16, round(2 * math.sqrt(n)))
        quantizer = faiss.IndexFlatIP(DIM)
        index = faiss.IndexIVFFlat(quantizer, DIM, nlist, faiss.METRIC_INNER_PRODUCT)
        index.cp.seed = 1
        faiss.omp_set_num_threads(self.build_threads)
        started = time.perf_counter()
        index.train(base[np.random.default_rng(1).permutation(n)[: min(n, 40 * nlist)]])
        index.add(base)
        build = time.perf_counter() - started
        faiss.omp_set_num_threads(1)
        size = self._faiss_size(index)

        def search(q: Vectors) -> Vectors:
            ids: Vectors = index.search(q[None, :], K)[1][0]
            return ids

        rows = []
        for nprobe in self.args.nprobe:
            index.nprobe = nprobe
            params = f"nlist={nlist} nprobe={nprobe}"
            rows.append(self.measure("faiss IVF-Flat", params, search, build=build, mem=size, disk=size))

        def insert(i: int, vector: Vectors) -> None:
            index.add(vector[None, :])

        self.add(rows, self.fresh_ms(insert, search))

    def _faiss_size(self, index: Any) -> float:
        import faiss

        path = self.work / "faiss.index"
        faiss.write_index(index, str(path))
        size = file_mb(path)
        path.unlink()
        return size

    # -- the engine ----------------------------------------------------------------------------

    def engine(self, base: Vectors) -> None:
        from mnemodb.engine.engine import Engine
        from mnemodb.engine.properties import CreateNode, Ref, SetEmbedding

        n = len(base)
        path = self.work / f"engine-{n}.db"
        eng = Engine.open(str(path))
        try:
            ids: list[str] = []
            started = time.perf_counter()
            for start in range(0, n, ENGINE_BATCH):
                commands: list[Any] = []
                for j, vector in enumerate(base[start : start + ENGINE_BATCH]):
                    commands.append(CreateNode("Vec", {"row": start + j}))
                    commands.append(SetEmbedding(Ref(2 * j), MODEL, tuple(vector.tolist())))
                produced, _ = eng.nodes.submit(commands)
                ids.extend(p for p in produced[::2] if p is not None)
            build = time.perf_counter() - started
            row_of = {node_id: i for i, node_id in enumerate(ids)}
            started = time.perf_counter()
            eng.nodes.search_vectors(MODEL, self.queries[0].tolist(), k=K)
            load = time.perf_counter() - started

            def search(q: Vectors) -> list[int]:
                return [row_of[node.id] for node, _ in eng.nodes.search_vectors(MODEL, q.tolist(), k=K)]

            disk = sum(file_mb(p) for p in path.parent.glob(path.name + "*"))
            row = self.measure(
                "mnemodb engine",
                "search_vectors, BLAS default",
                search,
                build=build,
                mem=mb(base.nbytes),
                disk=disk,
                note=f"build: SQLite writes, {n / build:,.0f}/s; first search (load) {load:.2f} s; "
                f"process RSS {_rss_mb():,.0f} MB",
            )

            def insert(i: int, vector: Vectors) -> None:
                produced, _ = eng.nodes.submit(
                    [CreateNode("Vec", {"row": n + i}), SetEmbedding(Ref(0), MODEL, tuple(vector.tolist()))]
                )
                assert produced[0] is not None
                row_of[produced[0]] = n + i

            self.add([row], self.fresh_ms(insert, search))
        finally:
            eng.close()
            for leftover in path.parent.glob(path.name + "*"):
                leftover.unlink()

    # -- helpers -------------------------------------------------------------------------------

    def _skipped(self, name: str) -> None:
        self.add([Row(self.data, self.n, name, "not installed", None, None, None, None, None, None, None, "skipped")])


def _rss_mb() -> float:
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


# -- output ----------------------------------------------------------------------------------------

COLUMNS = (
    ("data", 9, "<"),
    ("size", 9, ">"),
    ("method", 17, "<"),
    ("params", 32, "<"),
    ("build s", 8, ">"),
    ("recall", 7, ">"),
    ("p50 ms", 8, ">"),
    ("p95 ms", 8, ">"),
    ("mem MB", 8, ">"),
    ("disk MB", 8, ">"),
    ("fresh ms", 9, ">"),
)


def _cell(value: Any, width: int, align: str) -> str:
    if value is None:
        text = "-"
    elif isinstance(value, int):
        text = f"{value:,}"
    elif isinstance(value, float):
        text = f"{value:.3f}" if value < 10 else f"{value:,.1f}" if value < 1000 else f"{value:,.0f}"
    else:
        text = str(value)
    return f"{text:{align}{width}}"


def header() -> str:
    line = " ".join(_cell(name, width, align) for name, width, align in COLUMNS) + "  note"
    return line + "\n" + "-" * len(line)


def format_row(row: Row) -> str:
    values = (
        row.data,
        row.size,
        row.method,
        row.params,
        row.build_s,
        row.recall,
        row.p50_ms,
        row.p95_ms,
        row.mem_mb,
        row.disk_mb,
        row.fresh_ms,
    )
    cells = " ".join(_cell(v, w, a) for v, (_, w, a) in zip(values, COLUMNS, strict=True))
    return f"{cells}  {row.note}".rstrip()


def _load() -> str:
    with contextlib.suppress(OSError):
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    return "?"


# -- main ------------------------------------------------------------------------------------------


def _ints(text: str) -> list[int]:
    return [int(part.replace("_", "")) for part in text.split(",") if part.strip()]


def _names(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in ANN_METHODS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown method {unknown[0]!r}: choose from {', '.join(ANN_METHODS)}")
    return names


def main(argv: Sequence[str] | None = None) -> int:
    default_data = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo-dev.json"
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sizes", type=_ints, default=[10_000, 100_000, 1_000_000], help="comma-separated sizes")
    parser.add_argument("--queries", type=int, default=200, help="held-out queries per size (default 200)")
    parser.add_argument("--json", type=Path, help="also write the rows and settings to this JSON file")
    parser.add_argument("--ef", type=_ints, default=[64, 128], help="HNSW ef_search values (default 64,128)")
    parser.add_argument("--nprobe", type=_ints, default=[8, 32], help="IVF nprobe values (default 8,32)")
    parser.add_argument(
        "--usearch-dtypes", type=lambda s: s.split(","), default=["f32"], help="usearch storage types (f32,f16,i8)"
    )
    parser.add_argument(
        "--methods",
        type=_names,
        default=list(ANN_METHODS),
        help=f"ANN methods to run (default {','.join(ANN_METHODS)})",
    )
    parser.add_argument("--large-size", type=int, default=500_000, help="sizes from here on run --large-methods only")
    parser.add_argument(
        "--large-methods",
        type=_names,
        default=["hnswlib", "faiss-ivf"],
        help="ANN methods at the large sizes (default hnswlib,faiss-ivf: every HNSW build at 1M takes minutes)",
    )
    parser.add_argument("--build-threads", type=int, default=os.cpu_count() or 1, help="threads for index builds")
    parser.add_argument("--engine-sizes", type=_ints, default=[10_000, 100_000], help="sizes also run through Engine")
    parser.add_argument("--no-filter", action="store_true", help="skip the scope-filter rows")
    parser.add_argument("--no-real", action="store_true", help="skip the real-embedding check")
    parser.add_argument("--data", type=Path, default=default_data, help="the LoCoMo JSON file")
    parser.add_argument("--real-cache", type=Path, help="a .npy file to keep the real embeddings in between runs")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)

    versions = {name: lib_version(name) for name in ("numpy", "hnswlib", "usearch", "faiss-cpu", "tokenizers")}
    print(f"python {platform.python_version()}, {os.cpu_count()} cores, load {_load()}")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items() if v))
    print(
        f"threads: queries one at a time; ANN search 1 thread; numpy BLAS default unless stated; "
        f"index builds {args.build_threads} threads"
    )
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mnemodb-ann-") as tmp:
        bench = Bench(args, Path(tmp))
        gen = ClusteredVectors(args.seed)
        rng = np.random.default_rng(args.seed + 1)
        queries = gen.sample(args.queries, rng)
        fresh = gen.sample(FRESH_TRIES, rng)
        for n in args.sizes:
            base = gen.sample(n, np.random.default_rng(args.seed + 2 + n))
            print(f"\nsynthetic, {n:,} vectors: {neighbour_stats(base, queries)}")
            print(header(), flush=True)
            bench.run_size(
                "synthetic", base, queries, fresh, engine=n in args.engine_sizes, filtered=not args.no_filter
            )
            del base
            gc.collect()
            print(f"(load average {_load()}, {time.perf_counter() - started:.0f} s so far)", flush=True)
        if not args.no_real:
            if args.data.is_file():
                vectors = real_embeddings(args.data, args.real_cache)
                order = np.random.default_rng(args.seed).permutation(len(vectors))
                real_queries = vectors[order[: args.queries]]
                real_fresh = vectors[order[args.queries : args.queries + FRESH_TRIES]]
                pool = vectors[order[args.queries + FRESH_TRIES :]]
                for n in sorted({min(10_000, len(pool)), len(pool)}):
                    base = np.ascontiguousarray(pool[:n])
                    print(f"\nMiniLM (LoCoMo sentences), {n:,} vectors: {neighbour_stats(base, real_queries)}")
                    print(header(), flush=True)
                    bench.run_size("MiniLM", base, real_queries, real_fresh, engine=False, filtered=False)
            else:
                print(f"\nreal-embedding check skipped: no data file at {args.data}")
    total = time.perf_counter() - started
    print(f"\nall rows ({total:.0f} s, load average {_load()}):")
    print(header())
    for row in bench.rows:
        print(format_row(row))
    if args.json:
        payload = {
            "versions": versions,
            "python": platform.python_version(),
            "cores": os.cpu_count(),
            "build_threads": args.build_threads,
            "queries": args.queries,
            "seconds": round(total, 1),
            "load_average": _load(),
            "rows": [asdict(row) for row in bench.rows],
        }
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
