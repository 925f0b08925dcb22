"""The `topodb` profile under load: a 100,000-node graph with 300,000 edges and 100,000
384-dimensional vectors, served by `mnemodb serve --profile topodb` and, optionally, by
topodb-mcp itself.

It measures

- the build through the engine (`Engine.open` + `engine.nodes.submit`, 1,000 commands a
  batch): nodes/s, edges/s, vectors/s, and the database's size on disk;
- over stdio, after `initialize`: `traverse` (max_hops 2, direction both) from random seeds,
  `search_vectors` k=10 (the first, cold call apart: it builds the in-memory matrix),
  `get_changes` paged through the whole log with `since_seq` and `limit` (ops/s and MB/s
  of reply) and once without a limit, single `create_memory` and `link` latency,
  `submit_batch` of 100 commands, spawn-to-initialize time and the server's RSS;
- the same traverse and search_vectors (and change-log pages) through the engine in the
  bench's own process, so the protocol's share is visible;
- optionally topodb-mcp (`--topodb PATH` or TOPODB_MCP): the same graph built through its
  `submit_batch` over stdio into a .redb file, then the same reads and writes.

The graph is synthetic and deterministic (`--seed`): see `GraphCorpus` and bench/README.md.
The servers are driven by bench_store's minimal JSON-RPC client (one request in flight; a
round trip is timed from just before the request's bytes are written until its reply line
has been read; encoding the request and decoding the reply are not counted).

Run `python bench/bench_topodb.py --help` for the options.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import sqlite3
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from bench_store import (
    BenchError,
    Corpus,
    StdioClient,
    _commit,
    _probe,
    _progress,
    _workdir,
    dir_size_mb,
    settle_gc,
    sqlite_size_mb,
)
from measure import p50, p95, p99, rss_mb
from mnemodb import __version__ as MNEMODB_VERSION
from mnemodb.engine import Engine
from mnemodb.engine.properties import Command, CreateNode, Link, SetEmbedding

MB = 1024 * 1024
MODEL = "bench-384"
COMMUNITY = 500
"""Nodes per community: consecutive node numbers, and one vector cluster each."""
ENTITY_EVERY = 5
"""Node i is an Entity when i % 5 == 0 (20 %), else a Memory."""
LOCAL_RANKS = 100
"""Entities of a community ranked by popularity (Zipf, exponent 1)."""
GLOBAL_HUBS = 1000
"""The first entities of the graph, which edges from anywhere point at (Zipf, exponent 1)."""
ENTITY_TYPES = ("person", "service", "library", "concept", "team", "project")
# Edge types: (name, share of the edges, chance that the far end is in the same community).
EDGE_TYPES = (("mentions", 0.55, 0.95), ("related_to", 0.30, 0.90), ("part_of", 0.15, 0.80))
QUERY_NOISE = 0.3
"""A query vector is a random node's vector plus Gaussian noise of this scale."""
WARMUP = 10
BIG_REPLY = 32 * MB
"""Replies longer than this are not decoded: the ops are counted in the bytes."""
_ID = re.compile(rb'"id":\s*(\d+)')
_SEQ = b'"seq":'


# -- the graph --------------------------------------------------------------------------------------


class GraphCorpus:
    """A deterministic property graph: labels, texts, edges (as node numbers) and vectors.

    Node i belongs to community i // 500. 20 % of the nodes are entities (unique names), the
    rest memories (4 to 12 Zipf-distributed words, unique). Edges: 55 % `mentions` (memory to
    entity), 30 % `related_to` (memory to memory), 15 % `part_of` (entity to entity). The far
    end is in the source's community with a probability of 0.95, 0.9 and 0.8; entities are
    picked by a Zipf law over the community's entities, or over the first 1,000 entities of
    the graph (global hubs) for the rest; memories uniformly. No self-loops, no duplicate
    (from, to, type). Vectors are clustered: one standard-normal centroid per community, and
    each node's vector its centroid plus standard-normal noise (float32).
    """

    def __init__(self, nodes: int, edges: int, dim: int, *, seed: int) -> None:
        if nodes < 2 * ENTITY_EVERY:
            raise BenchError("--nodes must be at least 10")
        self.nodes, self.dim, self.seed = nodes, dim, seed
        rng = random.Random(seed)
        words = Corpus(0, seed=seed, vocabulary=4000).vocabulary
        self._words = words
        self._cumulative = np.cumsum([1.0 / r for r in range(1, len(words) + 1)]).tolist()
        self._used: set[str] = set()
        self.labels: list[str] = []
        self.texts: list[str] = []
        self.entity_types: list[str] = []
        for i in range(nodes):
            if i % ENTITY_EVERY == 0:
                name = f"{rng.choice(words).capitalize()} {rng.choice(words).capitalize()} {i}"
                self.labels.append("Entity")
                self.texts.append(name)
                self.entity_types.append(rng.choice(ENTITY_TYPES))
            else:
                self.labels.append("Memory")
                self.texts.append(self._sentence(rng))
                self.entity_types.append("")
        self.entities = (nodes + ENTITY_EVERY - 1) // ENTITY_EVERY
        self.memories = nodes - self.entities
        nrng = np.random.default_rng(seed)
        self.src, self.dst, self.type = self._edges(nrng, edges)
        communities = (nodes + COMMUNITY - 1) // COMMUNITY
        centroids = nrng.standard_normal((communities, dim), dtype=np.float32)
        self.vectors = nrng.standard_normal((nodes, dim), dtype=np.float32)
        self.vectors += centroids[np.arange(nodes) // COMMUNITY]

    @property
    def edges(self) -> int:
        return len(self.src)

    def _sentence(self, rng: random.Random) -> str:
        """4 to 12 words, not used before."""
        while True:
            picked = rng.choices(self._words, cum_weights=self._cumulative, k=rng.randint(4, 12))
            text = " ".join(picked).capitalize() + "."
            if text not in self._used:
                self._used.add(text)
                return text

    def new_memories(self, count: int, seed: int) -> list[str]:
        """Memory texts that are in neither the graph nor an earlier call's result."""
        rng = random.Random(seed)
        return [self._sentence(rng) for _ in range(count)]

    # Node numbering: block b of 5 is [entity 5b, memories 5b+1 .. 5b+4].
    @staticmethod
    def _memory_node(k: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        out: np.ndarray[Any, Any] = (k // 4) * ENTITY_EVERY + k % 4 + 1
        return out

    def _community(self, src: np.ndarray[Any, Any]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        start = (src // COMMUNITY) * COMMUNITY
        return start, np.minimum(start + COMMUNITY, self.nodes) - start

    def _zipf(self, rng: np.random.Generator, ranks: int, size: int) -> np.ndarray[Any, Any]:
        cumulative = np.cumsum(1.0 / np.arange(1, ranks + 1))
        ranked: np.ndarray[Any, Any] = np.searchsorted(cumulative, rng.random(size) * cumulative[-1], side="right")
        return ranked.clip(0, ranks - 1)

    def _entity_far_end(self, rng: np.random.Generator, src: np.ndarray[Any, Any], local: float) -> Any:
        start, span = self._community(src)
        in_community = (span + ENTITY_EVERY - 1) // ENTITY_EVERY
        near = start + (self._zipf(rng, LOCAL_RANKS, len(src)) % in_community) * ENTITY_EVERY
        far = self._zipf(rng, min(GLOBAL_HUBS, self.entities), len(src)) * ENTITY_EVERY
        return np.where(rng.random(len(src)) < local, near, far)

    def _memory_far_end(self, rng: np.random.Generator, src: np.ndarray[Any, Any], local: float) -> Any:
        start, span = self._community(src)
        in_community = span - (span + ENTITY_EVERY - 1) // ENTITY_EVERY
        near = start + self._memory_node(rng.integers(0, np.maximum(in_community, 1)))
        far = self._memory_node(rng.integers(0, self.memories, len(src)))
        return np.where(rng.random(len(src)) < local, near, far)

    def _edges(self, rng: np.random.Generator, count: int) -> tuple[list[int], list[int], list[int]]:
        parts: list[np.ndarray[Any, Any]] = []
        remaining = count
        for kind, (name, share, local) in enumerate(EDGE_TYPES):
            wanted = remaining if kind == len(EDGE_TYPES) - 1 else round(count * share)
            remaining -= wanted
            keys = np.empty(0, dtype=np.int64)
            for _ in range(20):
                size = int((wanted - len(keys)) * 1.3) + 16
                if name == "part_of":
                    src = rng.integers(0, self.entities, size) * ENTITY_EVERY
                else:
                    src = self._memory_node(rng.integers(0, self.memories, size))
                dst = self._entity_far_end(rng, src, local) if name != "related_to" else None
                if dst is None:
                    dst = self._memory_far_end(rng, src, local)
                fresh = (src * self.nodes + dst)[src != dst]
                keys = np.concatenate([keys, fresh])
                _, first = np.unique(keys, return_index=True)
                keys = keys[np.sort(first)]
                if len(keys) >= wanted:
                    break
            else:
                raise BenchError(f"cannot draw {wanted:,} distinct {name} edges among {self.nodes:,} nodes")
            keys = keys[:wanted]
            parts.append(np.stack([keys // self.nodes, keys % self.nodes, np.full(wanted, kind)], axis=1))
        table = np.concatenate(parts)[rng.permutation(count)]
        return table[:, 0].tolist(), table[:, 1].tolist(), table[:, 2].tolist()

    def edge_type(self, index: int) -> str:
        return EDGE_TYPES[self.type[index]][0]

    def queries(self, count: int, seed: int) -> list[list[float]]:
        rng = np.random.default_rng(seed)
        picked = rng.integers(0, self.nodes, count)
        noise = rng.standard_normal((count, self.dim), dtype=np.float32) * np.float32(QUERY_NOISE)
        out: list[list[float]] = (self.vectors[picked] + noise).tolist()
        return out

    def seeds(self, count: int, seed: int) -> list[int]:
        rng = random.Random(seed)
        return [rng.randrange(self.nodes) for _ in range(count)]


# -- figures ---------------------------------------------------------------------------------------


@dataclass
class Pages:
    """One pass through the change log with `limit` ops a call."""

    limit: int | None
    calls: int = 0
    ops: int = 0
    mb: float = 0.0
    seconds: float = 0.0

    @property
    def ops_per_s(self) -> float:
        return self.ops / self.seconds if self.seconds else 0.0

    @property
    def mb_per_s(self) -> float:
        return self.mb / self.seconds if self.seconds else 0.0


@dataclass
class Figures:
    """One column of the table. None: not measured."""

    nodes: int = 0
    edges: int = 0
    vectors: int = 0
    build_nodes_per_s: float | None = None
    build_edges_per_s: float | None = None
    build_vectors_per_s: float | None = None
    build_seconds: float | None = None
    db_mb: float | None = None
    spawn_s: float | None = None
    traverse_p50_ms: float | None = None
    traverse_p95_ms: float | None = None
    traverse_p99_ms: float | None = None
    traverse_nodes_mean: float | None = None
    traverse_nodes_p50: float | None = None
    traverse_edges_mean: float | None = None
    traverse_reply_kb: float | None = None
    search_cold_ms: float | None = None
    search_p50_ms: float | None = None
    search_p95_ms: float | None = None
    search_p99_ms: float | None = None
    pages: list[Pages] = field(default_factory=list)
    changes_all: Pages | None = None
    changes_all_note: str = ""
    create_memory_p50_ms: float | None = None
    create_memory_p95_ms: float | None = None
    link_p50_ms: float | None = None
    link_p95_ms: float | None = None
    batch_commands_per_s: float | None = None
    batch_p50_ms: float | None = None
    rss_mb: float | None = None
    peak_rss_mb: float | None = None
    rss_after_pages_mb: float | None = None
    peak_after_pages_mb: float | None = None
    rss_after_all_mb: float | None = None
    peak_after_all_mb: float | None = None

    def page(self, limit: int | None) -> Pages | None:
        if limit is None:
            return self.changes_all
        return next((p for p in self.pages if p.limit == limit), None)


# -- the client ------------------------------------------------------------------------------------


class Client(StdioClient):
    """bench_store's client, plus calls timed without the client's JSON work and replies too
    big to decode."""

    def call_timed(self, tool: str, arguments: dict[str, Any], *, decode: bool = True) -> tuple[Any, float, bytes]:
        """(structured result or None, round-trip seconds, the reply line). The request is
        encoded before the clock starts; the reply is decoded after it stops, unless `decode`
        is false or the reply is longer than BIG_REPLY."""
        request_id = next(self._ids)
        message = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        deadline = time.monotonic() + self.reply_timeout
        sent = time.perf_counter()
        self._write(data)
        while True:
            line = self._line(deadline)
            received = time.perf_counter()
            if _reply_id(line) == request_id:
                break
        seconds = received - sent
        if decode and len(line) <= BIG_REPLY:
            reply = json.loads(line)
            if "error" in reply:
                raise BenchError(f"{tool} failed: {reply['error']}")
            result = reply["result"]
            if result.get("isError"):
                raise BenchError(f"{tool} returned an error: {json.dumps(result)[:500]}")
            return structured(result), seconds, line
        if b'"error":{' in line[:200] or b'"isError":true' in line[:200] + line[-200:]:
            raise BenchError(f"{tool} failed: {line[:500].decode(errors='replace')}")
        return None, seconds, line

    def call(self, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], float]:
        result, seconds, _ = self.call_timed(tool, arguments)
        return result, seconds


def _reply_id(line: bytes) -> int | None:
    found = _ID.search(line, 0, 200)
    if found is None and len(line) <= BIG_REPLY:
        value = json.loads(line).get("id")
        return value if isinstance(value, int) else None
    return int(found.group(1)) if found else None


def structured(result: dict[str, Any]) -> Any:
    if "structuredContent" in result:
        return result["structuredContent"]
    return json.loads(result["content"][0]["text"])


def _ops_in(line: bytes) -> tuple[int, int]:
    """(how many ops, the last seq) of a get_changes reply, read from its bytes: the structured
    copy of the ops has `"seq":N` (the text copy escapes its quotes)."""
    count = line.count(_SEQ)
    escaped = False
    if count == 0:
        count, escaped = line.count(b'\\"seq\\":'), True
    if count == 0:
        return 0, 0
    marker = b'\\"seq\\":' if escaped else _SEQ
    at = line.rfind(marker) + len(marker)
    digits = re.match(rb"\s*(\d+)", line[at : at + 32])
    return count, int(digits.group(1)) if digits else 0


def clean_env() -> dict[str, str]:
    """The environment without the caller's own MEMDB_/MNEMODB_/TOPODB_ settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("MEMDB_", "MNEMODB_", "TOPODB_"))}


# -- the servers -----------------------------------------------------------------------------------


class Server:
    name = ""
    title = ""
    version = ""

    def __init__(self, workdir: Path) -> None:
        self.dir = workdir / self.name
        self.dir.mkdir(parents=True, exist_ok=True)

    def argv(self) -> list[str]:
        raise NotImplementedError

    def db_mb(self) -> float:
        raise NotImplementedError

    def spawn(self, log: IO[bytes], timeout: float) -> Client:
        return Client(self.argv(), clean_env(), log, reply_timeout=timeout)


class MnemodbServer(Server):
    name = "mnemodb"
    title = "mnemodb stdio"
    version = MNEMODB_VERSION

    def __init__(self, workdir: Path, extra: Sequence[str]) -> None:
        super().__init__(workdir)
        self.db = self.dir / "graph.db"
        script = Path(sys.executable).with_name("mnemodb")
        self.command = [str(script)] if script.exists() else [sys.executable, "-m", "mnemodb"]
        self.extra = list(extra)

    def argv(self) -> list[str]:
        return [
            *self.command,
            "serve",
            "--profile",
            "topodb",
            "--db",
            str(self.db),
            "--allow-unscoped-changes",
            *self.extra,
        ]

    def db_mb(self) -> float:
        return sqlite_size_mb(self.db)


class TopodbServer(Server):
    name = "topodb"
    title = "topodb stdio"

    def __init__(self, workdir: Path, binary: str) -> None:
        super().__init__(workdir)
        self.binary = binary
        self.db = self.dir / "graph.redb"
        usage = _probe([binary, "--help"])
        self.embeddings_flag = "--embeddings" in usage
        self.version = _probe([binary, "--version"]).strip().splitlines()[0] if usage else "?"

    def argv(self) -> list[str]:
        extra = ["--embeddings", "off"] if self.embeddings_flag else []
        return [self.binary, "--db", str(self.db), "--allow-unscoped-changes", *extra]

    def db_mb(self) -> float:
        return dir_size_mb(self.dir)


# -- building --------------------------------------------------------------------------------------


def _chunks(count: int, size: int) -> list[range]:
    return [range(start, min(start + size, count)) for start in range(0, count, size)]


def _node_commands(graph: GraphCorpus, part: range) -> list[Command]:
    out: list[Command] = []
    for i in part:
        if graph.labels[i] == "Entity":
            out.append(CreateNode("Entity", {"name": graph.texts[i], "entityType": graph.entity_types[i]}))
        else:
            out.append(CreateNode("Memory", {"content": graph.texts[i]}))
    return out


def build_engine(db: Path, graph: GraphCorpus, batch: int) -> tuple[list[str], Figures]:
    """The graph through Engine.nodes.submit; rates count the submit calls only."""
    figures = Figures(nodes=graph.nodes, edges=graph.edges, vectors=graph.nodes)
    ids: list[str] = []
    wall = time.perf_counter()
    with Engine.open(str(db)) as engine:

        def run(phase: str, count: int, make: Callable[[range], list[Command]]) -> tuple[list[str | None], float]:
            produced: list[str | None] = []
            spent = 0.0
            parts = _chunks(count, batch)
            for n, part in enumerate(parts, 1):
                commands = make(part)
                started = time.perf_counter()
                made, _ = engine.nodes.submit(commands)
                spent += time.perf_counter() - started
                produced += made
                if n % 50 == 0 or n == len(parts):
                    _progress(f"build: {phase} {part.stop:,} of {count:,} ({part.stop / spent:,.0f}/s)")
            return produced, spent

        made, spent = run("nodes", graph.nodes, lambda part: _node_commands(graph, part))
        ids = [str(i) for i in made]
        if len(set(ids)) != graph.nodes:
            raise BenchError("the engine merged some nodes (same text in one scope): the corpus is not unique")
        figures.build_nodes_per_s = graph.nodes / spent

        def links(part: range) -> list[Command]:
            return [Link(ids[graph.src[e]], ids[graph.dst[e]], graph.edge_type(e)) for e in part]

        _, spent = run("edges", graph.edges, links)
        figures.build_edges_per_s = graph.edges / spent

        def embeddings(part: range) -> list[Command]:
            rows = graph.vectors[part.start : part.stop].tolist()
            return [SetEmbedding(ids[i], MODEL, tuple(row)) for i, row in zip(part, rows, strict=True)]

        _, spent = run("vectors", graph.nodes, embeddings)
        figures.build_vectors_per_s = graph.nodes / spent
    figures.build_seconds = time.perf_counter() - wall
    figures.db_mb = sqlite_size_mb(db)  # after close: checkpointed
    return ids, figures


def _batch_node(graph: GraphCorpus, i: int) -> dict[str, Any]:
    if graph.labels[i] == "Entity":
        return {"op": "create_entity", "name": graph.texts[i], "props": {"entityType": graph.entity_types[i]}}
    return {"op": "create_memory", "content": graph.texts[i]}


def build_stdio(
    server: Server, graph: GraphCorpus, batch: int, log: IO[bytes], timeout: float
) -> tuple[list[str], Figures]:
    """The graph through the server's submit_batch; rates are over the calls' round trips."""
    figures = Figures(nodes=graph.nodes, edges=graph.edges, vectors=graph.nodes)
    wall = time.perf_counter()
    client = server.spawn(log, timeout)
    try:
        client.initialize()

        def run(phase: str, count: int, make: Callable[[range], list[dict[str, Any]]]) -> tuple[list[Any], float]:
            produced: list[Any] = []
            spent = 0.0
            parts = _chunks(count, batch)
            for n, part in enumerate(parts, 1):
                result, seconds, _ = client.call_timed("submit_batch", {"commands": make(part)})
                spent += seconds
                produced += result["ids"]
                if n % 50 == 0 or n == len(parts):
                    _progress(f"{server.name} build: {phase} {part.stop:,} of {count:,} ({part.stop / spent:,.0f}/s)")
            return produced, spent

        made, spent = run("nodes", graph.nodes, lambda part: [_batch_node(graph, i) for i in part])
        ids = [str(i) for i in made]
        if len(set(ids)) != graph.nodes:
            raise BenchError(f"{server.name} merged some nodes: {len(set(ids)):,} distinct ids for {graph.nodes:,}")
        figures.build_nodes_per_s = graph.nodes / spent

        def links(part: range) -> list[dict[str, Any]]:
            return [
                {"op": "link", "from": ids[graph.src[e]], "to": ids[graph.dst[e]], "type": graph.edge_type(e)}
                for e in part
            ]

        _, spent = run("edges", graph.edges, links)
        figures.build_edges_per_s = graph.edges / spent

        def embeddings(part: range) -> list[dict[str, Any]]:
            rows = graph.vectors[part.start : part.stop].tolist()
            return [
                {"op": "set_embedding", "id": ids[i], "model": MODEL, "vector": row}
                for i, row in zip(part, rows, strict=True)
            ]

        _, spent = run("vectors", graph.nodes, embeddings)
        figures.build_vectors_per_s = graph.nodes / spent
    finally:
        client.close()
    figures.build_seconds = time.perf_counter() - wall
    figures.db_mb = server.db_mb()
    return ids, figures


# -- the workload ----------------------------------------------------------------------------------


@dataclass
class Plan:
    seeds: list[int]
    queries: list[list[float]]
    pages: list[int]
    singles: int
    batches: int
    batch_commands: int
    changes_all: bool
    changes_all_max_mb: float
    seed: int


def measure_stdio(
    server: Server,
    graph: GraphCorpus,
    ids: Sequence[str],
    plan: Plan,
    figures: Figures,
    *,
    log: IO[bytes],
    timeout: float,
    paged: bool,
    conflict_check: bool = True,
) -> None:
    """Reads and writes against an already built database, through a freshly spawned server."""
    client = server.spawn(log, timeout)
    pid = client.proc.pid
    try:
        figures.spawn_s = client.initialize()
        info, _ = client.call("db_info", {})
        _progress(f"{server.name}: db_info current_seq {info.get('current_seq'):,}")

        def traverse(i: int) -> tuple[Any, float, bytes]:
            return client.call_timed("traverse", {"seed_id": ids[i], "max_hops": 2, "direction": "both"})

        for i in plan.seeds[:WARMUP]:
            traverse(i)
        times, sizes, edges, kb = [], [], [], 0.0
        for i in plan.seeds:
            result, seconds, line = traverse(i)
            times.append(seconds)
            sizes.append(len(result["subgraph"]["nodes"]))
            edges.append(len(result["subgraph"]["edges"]))
            kb += len(line) / 1024
        _traverse_figures(figures, times, sizes, edges)
        figures.traverse_reply_kb = kb / len(plan.seeds)
        _progress(f"{server.name}: traverse p50 {figures.traverse_p50_ms:.2f} ms")

        def search(vector: list[float]) -> float:
            result, seconds, _ = client.call_timed("search_vectors", {"model": MODEL, "vector": vector, "k": 10})
            if len(result["hits"]) != 10:
                raise BenchError(f"search_vectors returned {len(result['hits'])} hits, not 10")
            return seconds

        figures.search_cold_ms = search(plan.queries[0]) * 1000
        times = [search(vector) for vector in plan.queries[1:]]
        figures.search_p50_ms, figures.search_p95_ms = p50(times) * 1000, p95(times) * 1000
        figures.search_p99_ms = p99(times) * 1000
        _progress(
            f"{server.name}: search_vectors cold {figures.search_cold_ms:.0f} ms, p50 {figures.search_p50_ms:.2f} ms"
        )

        _writes(client, graph, ids, plan, figures, conflict_check=conflict_check)
        figures.rss_mb, figures.peak_rss_mb = rss_mb(pid)
        figures.db_mb = server.db_mb()

        if paged:
            for limit in plan.pages:
                pages = _page_through(client, limit)
                figures.pages.append(pages)
                done = f"{pages.ops:,} ops, {pages.mb:,.0f} MB, {pages.seconds:.1f} s"
                _progress(f"{server.name}: get_changes limit {limit:,}: {done}")
            figures.rss_after_pages_mb, figures.peak_after_pages_mb = rss_mb(pid)
        if plan.changes_all:
            estimate = max((p.mb for p in figures.pages), default=0.0)
            if estimate > plan.changes_all_max_mb:
                figures.changes_all_note = (
                    f"skipped: the paged reads came to {estimate:,.0f} MB, over --changes-all-max-mb "
                    f"{plan.changes_all_max_mb:,.0f}"
                )
            else:
                _progress(f"{server.name}: get_changes without limit")
                try:
                    figures.changes_all = _page_through(client, None)
                except BenchError as exc:
                    figures.changes_all_note = f"failed: {str(exc)[:300]}"
            figures.rss_after_all_mb, figures.peak_after_all_mb = rss_mb(pid)
    finally:
        client.close()


def _traverse_figures(figures: Figures, times: list[float], sizes: list[int], edges: list[int]) -> None:
    figures.traverse_p50_ms, figures.traverse_p95_ms = p50(times) * 1000, p95(times) * 1000
    figures.traverse_p99_ms = p99(times) * 1000
    figures.traverse_nodes_mean = sum(sizes) / len(sizes)
    figures.traverse_nodes_p50 = p50(sizes)
    figures.traverse_edges_mean = sum(edges) / len(edges)


def _writes(
    client: Client, graph: GraphCorpus, ids: Sequence[str], plan: Plan, figures: Figures, *, conflict_check: bool
) -> None:
    rng = random.Random(plan.seed * 31 + 7)
    entities = list(range(0, graph.nodes, ENTITY_EVERY))
    memories = [i for i in range(graph.nodes) if i % ENTITY_EVERY]
    texts = graph.new_memories(plan.singles + plan.batches * plan.batch_commands, plan.seed * 131 + 5)
    times = []
    for text in texts[: plan.singles]:
        arguments: dict[str, Any] = {"content": text}
        if not conflict_check:
            arguments["check_conflicts"] = False
        times.append(client.call_timed("create_memory", arguments)[1])
    figures.create_memory_p50_ms, figures.create_memory_p95_ms = p50(times) * 1000, p95(times) * 1000
    times = []
    for _ in range(plan.singles):
        arguments = {"from_id": ids[rng.choice(memories)], "to_id": ids[rng.choice(entities)], "edge_type": "mentions"}
        times.append(client.call_timed("link", arguments)[1])
    figures.link_p50_ms, figures.link_p95_ms = p50(times) * 1000, p95(times) * 1000
    # Half new memories, half links from each of them to an existing entity.
    half = plan.batch_commands // 2
    rest = texts[plan.singles :]
    times = []
    for b in range(plan.batches):
        commands: list[dict[str, Any]] = [
            {"op": "create_memory", "content": t} for t in rest[b * half : (b + 1) * half]
        ]
        commands += [
            {"op": "link", "from": f"#{j}", "to": ids[rng.choice(entities)], "type": "mentions"}
            for j in range(plan.batch_commands - half)
        ]
        times.append(client.call_timed("submit_batch", {"commands": commands})[1])
    if times:
        figures.batch_commands_per_s = plan.batches * plan.batch_commands / sum(times)
        figures.batch_p50_ms = p50(times) * 1000


def _page_through(client: Client, limit: int | None) -> Pages:
    """Read the whole change log, `limit` ops a call (None: one call without a limit)."""
    pages = Pages(limit)
    since = 1
    while True:
        arguments: dict[str, Any] = {"since_seq": since}
        if limit is not None:
            arguments["limit"] = limit
        _, seconds, line = client.call_timed("get_changes", arguments, decode=False)
        count, last = _ops_in(line)
        pages.calls += 1
        pages.seconds += seconds
        pages.mb += len(line) / MB
        pages.ops += count
        if limit is None or count < limit:
            return pages
        since = last + 1


def measure_engine(db: Path, graph: GraphCorpus, ids: Sequence[str], plan: Plan, figures: Figures) -> None:
    """traverse, search_vectors and change-log pages through a freshly opened engine in this process."""
    settle_gc()
    with Engine.open(str(db)) as engine:
        nodes = engine.nodes
        for i in plan.seeds[:WARMUP]:
            nodes.traverse(ids[i], max_hops=2, direction="both")
        times, sizes, edges = [], [], []
        for i in plan.seeds:
            started = time.perf_counter()
            found, followed = nodes.traverse(ids[i], max_hops=2, direction="both")
            times.append(time.perf_counter() - started)
            sizes.append(len(found))
            edges.append(len(followed))
        _traverse_figures(figures, times, sizes, edges)
        times = []
        for vector in plan.queries:
            started = time.perf_counter()
            hits = nodes.search_vectors(MODEL, vector, k=10)
            times.append(time.perf_counter() - started)
            if len(hits) != 10:
                raise BenchError(f"Engine search_vectors returned {len(hits)} hits, not 10")
        figures.search_cold_ms = times[0] * 1000
        rest = times[1:]
        figures.search_p50_ms, figures.search_p95_ms, figures.search_p99_ms = (
            p50(rest) * 1000,
            p95(rest) * 1000,
            p99(rest) * 1000,
        )
        for limit in plan.pages:
            pages = Pages(limit)
            since = 1
            while True:
                started = time.perf_counter()
                changes = engine.changes(since, limit)
                pages.seconds += time.perf_counter() - started
                pages.calls += 1
                pages.ops += len(changes)
                if len(changes) < limit:
                    break
                since = changes[-1].seq + 1
            figures.pages.append(pages)


# -- the report ------------------------------------------------------------------------------------

# (label, how to read the figure from a column, format, which way is better)
Row = tuple[str, Callable[[Figures], float | None], str, str]


def _attr(name: str) -> Callable[[Figures], float | None]:
    return lambda f: getattr(f, name)


def _page_row(limit: int | None, what: str) -> Callable[[Figures], float | None]:
    def read(f: Figures) -> float | None:
        pages = f.page(limit)
        if pages is None or not pages.ops:
            return None
        if what == "ops":
            return pages.ops_per_s
        if what == "mbs":
            return pages.mb_per_s if pages.mb else None
        if what == "mb":
            return pages.mb if pages.mb else None
        return pages.seconds

    return read


def rows(pages: Sequence[int]) -> list[Row]:
    out: list[Row] = [
        ("build nodes (/s)", _attr("build_nodes_per_s"), "{:,.0f}", "higher"),
        ("build edges (/s)", _attr("build_edges_per_s"), "{:,.0f}", "higher"),
        ("build vectors (/s)", _attr("build_vectors_per_s"), "{:,.0f}", "higher"),
        ("build wall time (s)", _attr("build_seconds"), "{:,.1f}", "lower"),
        ("database on disk (MiB)", _attr("db_mb"), "{:,.1f}", "lower"),
        ("spawn-to-initialize (s)", _attr("spawn_s"), "{:.3f}", "lower"),
        ("traverse 2 hops p50 (ms)", _attr("traverse_p50_ms"), "{:.2f}", "lower"),
        ("traverse 2 hops p95 (ms)", _attr("traverse_p95_ms"), "{:.2f}", "lower"),
        ("traverse 2 hops p99 (ms)", _attr("traverse_p99_ms"), "{:.2f}", "lower"),
        ("  nodes returned (mean)", _attr("traverse_nodes_mean"), "{:,.1f}", ""),
        ("  nodes returned (median)", _attr("traverse_nodes_p50"), "{:,.0f}", ""),
        ("  edges returned (mean)", _attr("traverse_edges_mean"), "{:,.1f}", ""),
        ("  reply size (KiB, mean)", _attr("traverse_reply_kb"), "{:,.1f}", ""),
        ("search_vectors k=10 cold (ms)", _attr("search_cold_ms"), "{:,.1f}", "lower"),
        ("search_vectors k=10 p50 (ms)", _attr("search_p50_ms"), "{:.2f}", "lower"),
        ("search_vectors k=10 p95 (ms)", _attr("search_p95_ms"), "{:.2f}", "lower"),
        ("search_vectors k=10 p99 (ms)", _attr("search_p99_ms"), "{:.2f}", "lower"),
    ]
    for limit in pages:
        out += [
            (f"get_changes limit {limit:,} (ops/s)", _page_row(limit, "ops"), "{:,.0f}", "higher"),
            (f"get_changes limit {limit:,} (MB/s)", _page_row(limit, "mbs"), "{:,.1f}", "higher"),
        ]
    if pages:
        out.append(("get_changes, all pages (MB)", _page_row(pages[0], "mb"), "{:,.0f}", ""))
    out += [
        ("get_changes no limit (s)", _page_row(None, "s"), "{:,.1f}", "lower"),
        ("get_changes no limit (MB)", _page_row(None, "mb"), "{:,.0f}", ""),
        ("get_changes no limit (ops/s)", _page_row(None, "ops"), "{:,.0f}", "higher"),
        ("create_memory p50 (ms)", _attr("create_memory_p50_ms"), "{:.2f}", "lower"),
        ("create_memory p95 (ms)", _attr("create_memory_p95_ms"), "{:.2f}", "lower"),
        ("link p50 (ms)", _attr("link_p50_ms"), "{:.2f}", "lower"),
        ("link p95 (ms)", _attr("link_p95_ms"), "{:.2f}", "lower"),
        ("submit_batch of 100 (commands/s)", _attr("batch_commands_per_s"), "{:,.0f}", "higher"),
        ("submit_batch of 100 p50 (ms)", _attr("batch_p50_ms"), "{:.1f}", "lower"),
        ("server RSS after reads, writes (MiB)", _attr("rss_mb"), "{:,.1f}", "lower"),
        ("  peak so far (MiB)", _attr("peak_rss_mb"), "{:,.1f}", "lower"),
        ("RSS after paged get_changes (MiB)", _attr("rss_after_pages_mb"), "{:,.1f}", "lower"),
        ("  peak so far (MiB)", _attr("peak_after_pages_mb"), "{:,.1f}", "lower"),
        ("RSS after no-limit get_changes (MiB)", _attr("rss_after_all_mb"), "{:,.1f}", "lower"),
        ("  peak so far (MiB)", _attr("peak_after_all_mb"), "{:,.1f}", "lower"),
    ]
    return out


COLUMNS = (("mnemodb", "mnemodb stdio"), ("engine", "mnemodb engine"), ("topodb", "topodb stdio"))


def render(results: dict[str, Figures], pages: Sequence[int], *, same_size: bool) -> str:
    shown = [(key, title) for key, title in COLUMNS if key in results]
    header = ["figure", "better", *(title for _, title in shown)]
    ratio = "topodb" in results and same_size
    if ratio:
        header.append("mnemo/topo")
    table: list[list[str]] = []
    for label, read, fmt, better in rows(pages):
        values = {key: read(results[key]) for key, _ in shown}
        if all(v is None for v in values.values()):
            continue
        cells = [label, better, *("-" if values[k] is None else fmt.format(values[k]) for k, _ in shown)]
        if ratio:
            ours, theirs = values.get("mnemodb"), values.get("topodb")
            cells.append(f"{ours / theirs:.2f}" if better and ours is not None and theirs else "")
        table.append(cells)
    widths = [max(len(row[i]) for row in [header, *table]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        parts = [cells[0].ljust(widths[0]), cells[1].ljust(widths[1])]
        parts += [c.rjust(w) for c, w in zip(cells[2:], widths[2:], strict=True)]
        return "  ".join(parts).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in table)])


# -- driver ----------------------------------------------------------------------------------------


def _positive(text: str) -> int:
    value = int(text.replace("_", "").replace(",", ""))
    if value < 1:
        raise argparse.ArgumentTypeError("expected a positive integer")
    return value


def _pages(text: str) -> list[int]:
    return [_positive(part) for part in text.split("+") if part.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="The topodb profile on a 100,000-node graph with vectors, in process and over stdio, "
        "optionally next to topodb-mcp."
    )
    parser.add_argument("--nodes", type=_positive, default=100_000, help="nodes in the graph (default 100000)")
    parser.add_argument("--edges", type=_positive, default=300_000, help="edges in the graph (default 300000)")
    parser.add_argument("--dim", type=_positive, default=384, help="vector dimensions (default 384)")
    parser.add_argument("--batch", type=_positive, default=1000, help="commands per build batch (default 1000)")
    parser.add_argument("--traversals", type=_positive, default=500, help="timed traverse calls (default 500)")
    parser.add_argument("--searches", type=_positive, default=200, help="timed search_vectors calls (default 200)")
    parser.add_argument("--singles", type=_positive, default=200, help="single create_memory and link calls (200)")
    parser.add_argument("--batches", type=_positive, default=20, help="submit_batch calls of 100 commands (20)")
    parser.add_argument(
        "--pages", type=_pages, default=[1000, 10_000], help="get_changes page sizes, joined by + (1000+10000)"
    )
    parser.add_argument("--no-changes-all", action="store_true", help="skip the get_changes call without a limit")
    parser.add_argument(
        "--changes-all-max-mb",
        type=float,
        default=4096.0,
        help="skip the call without a limit when the paged reads came to more MB than this (default 4096)",
    )
    parser.add_argument(
        "--serve-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra argument for mnemodb serve, e.g. --serve-arg=--tool-timeout-ms=0 (repeatable)",
    )
    parser.add_argument("--seed", type=int, default=42, help="graph, seed and query seed (default 42)")
    parser.add_argument(
        "--topodb",
        default=os.environ.get("TOPODB_MCP"),
        metavar="PATH",
        help="topodb-mcp binary to compare against (default: $TOPODB_MCP; skipped when unset)",
    )
    parser.add_argument("--topodb-nodes", type=_positive, help="build topodb's graph at this many nodes (edges scaled)")
    parser.add_argument(
        "--topodb-no-conflict-check",
        action="store_true",
        help="pass check_conflicts=false to topodb's create_memory (0.1.1 probes for near-duplicates by default)",
    )
    parser.add_argument("--no-engine", action="store_true", help="skip the in-process engine measurements")
    parser.add_argument("--reply-timeout", type=float, default=900.0, help="seconds to wait for one reply (900)")
    parser.add_argument("--json", metavar="PATH", help="also write every figure as JSON to PATH")
    parser.add_argument("--workdir", metavar="DIR", help="where the databases go (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the databases and server logs afterwards")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.topodb and not os.access(args.topodb, os.X_OK):
        raise SystemExit(f"--topodb {args.topodb} is not an executable file")
    if args.topodb_nodes is not None and args.topodb_nodes > args.nodes:
        raise SystemExit("--topodb-nodes must not exceed --nodes")
    try:
        return _run(args)
    except BenchError as exc:
        hint = "" if args.keep else " (run with --keep to look at the servers' log afterwards)"
        print(f"bench_topodb: {exc}{hint}", file=sys.stderr)
        return 1


def _plan(graph: GraphCorpus, args: argparse.Namespace) -> Plan:
    return Plan(
        seeds=graph.seeds(args.traversals, args.seed + 1),
        queries=graph.queries(args.searches + 1, args.seed + 2),
        pages=args.pages,
        singles=args.singles,
        batches=args.batches,
        batch_commands=100,
        changes_all=not args.no_changes_all,
        changes_all_max_mb=args.changes_all_max_mb,
        seed=args.seed,
    )


def _run(args: argparse.Namespace) -> int:
    wall = time.perf_counter()
    meta: dict[str, Any] = {
        "mnemodb_version": MNEMODB_VERSION,
        "mnemodb_commit": _commit(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg_start": os.getloadavg(),
        "nodes": args.nodes,
        "edges": args.edges,
        "dim": args.dim,
        "batch": args.batch,
        "traversals": args.traversals,
        "searches": args.searches,
        "singles": args.singles,
        "batches": args.batches,
        "pages": args.pages,
        "seed": args.seed,
        "serve_args": args.serve_arg,
    }
    results: dict[str, Figures] = {}
    with _workdir(args) as workdir, open(workdir / "servers.stderr.log", "wb") as log:
        _progress(f"generating the graph: {args.nodes:,} nodes, {args.edges:,} edges, {args.dim}-d vectors")
        graph = GraphCorpus(args.nodes, args.edges, args.dim, seed=args.seed)
        plan = _plan(graph, args)
        settle_gc()
        mnemodb = MnemodbServer(workdir, args.serve_arg)
        meta["mnemodb_command"] = " ".join([Path(mnemodb.argv()[0]).name, *mnemodb.argv()[1:]]).replace(
            str(workdir), "WORKDIR"
        )
        ids, built = build_engine(mnemodb.db, graph, args.batch)
        if not args.no_engine:
            _progress("engine: traverse, search_vectors, change-log pages in process")
            engine = Figures(nodes=graph.nodes, edges=graph.edges, vectors=graph.nodes)
            for name in ("build_nodes_per_s", "build_edges_per_s", "build_vectors_per_s", "build_seconds", "db_mb"):
                setattr(engine, name, getattr(built, name))
            measure_engine(mnemodb.db, graph, ids, plan, engine)
            results["engine"] = engine
        _progress("mnemodb over stdio")
        served = Figures(nodes=graph.nodes, edges=graph.edges, vectors=graph.nodes)
        measure_stdio(mnemodb, graph, ids, plan, served, log=log, timeout=args.reply_timeout, paged=True)
        results["mnemodb"] = served
        same_size = True
        if args.topodb:
            topodb = TopodbServer(workdir, args.topodb)
            meta["topodb_version"] = topodb.version
            meta["topodb_embeddings_off"] = topodb.embeddings_flag
            upstream_graph, upstream_plan = graph, plan
            if args.topodb_nodes is not None and args.topodb_nodes < args.nodes:
                same_size = False
                edges = max(1, round(args.edges * args.topodb_nodes / args.nodes))
                upstream_graph = GraphCorpus(args.topodb_nodes, edges, args.dim, seed=args.seed)
                upstream_plan = _plan(upstream_graph, args)
            del ids
            _progress(f"{topodb.version}: building through submit_batch")
            upstream_ids, figures = build_stdio(topodb, upstream_graph, args.batch, log, args.reply_timeout)
            measure_stdio(
                topodb,
                upstream_graph,
                upstream_ids,
                upstream_plan,
                figures,
                log=log,
                timeout=args.reply_timeout,
                paged=False,
                conflict_check=not args.topodb_no_conflict_check,
            )
            results["topodb"] = figures
            meta["topodb_nodes"], meta["topodb_edges"] = upstream_graph.nodes, upstream_graph.edges
    meta["loadavg_end"] = os.getloadavg()
    meta["seconds"] = round(time.perf_counter() - wall, 1)
    print(_report(meta, results, args, same_size))
    if args.json:
        payload = {"meta": meta, "results": {k: _json_figures(f) for k, f in results.items()}}
        Path(args.json).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


def _json_figures(figures: Figures) -> dict[str, Any]:
    out = asdict(figures)
    for pages, data in zip([*figures.pages, figures.changes_all], [*out["pages"], out["changes_all"]], strict=True):
        if pages is not None and data is not None:
            data["ops_per_s"], data["mb_per_s"] = pages.ops_per_s, pages.mb_per_s
    return out


def _report(meta: dict[str, Any], results: dict[str, Figures], args: argparse.Namespace, same_size: bool) -> str:
    served = results["mnemodb"]
    lines = [
        "",
        f"== topodb profile: {served.nodes:,} nodes ({(served.nodes + ENTITY_EVERY - 1) // ENTITY_EVERY:,} Entity), "
        f"{served.edges:,} edges, {served.vectors:,} {args.dim}-d float32 vectors under one model ==",
        render(results, args.pages, same_size=same_size),
        "",
    ]
    engine = results.get("engine")
    if engine is not None and engine.traverse_p50_ms and served.traverse_p50_ms and served.search_p50_ms:
        assert engine.search_p50_ms is not None
        walk = served.traverse_p50_ms - engine.traverse_p50_ms
        search = served.search_p50_ms - engine.search_p50_ms
        lines.append(f"protocol overhead at p50 (stdio - engine): traverse {walk:+.2f} ms, search {search:+.2f} ms")
        lines.append(
            "mnemodb engine column: build and size are the in-process build; reads through a freshly opened Engine"
        )
        lines.append("engine get_changes rows: Engine.changes pages (no JSON), so no MB")
    for key, figures in results.items():
        if figures.changes_all_note:
            lines.append(f"{key}: get_changes without limit {figures.changes_all_note}")
    if "topodb" in results:
        topo = results["topodb"]
        flag = "--embeddings off" if meta["topodb_embeddings_off"] else "no --embeddings flag"
        lines.append(
            f"{meta['topodb_version']} ({flag}): built through submit_batch over stdio, {args.batch} commands a call; "
            "its get_changes has no limit, so only the whole-log call is measured"
        )
        if not same_size:
            lines.append(
                f"NOTE: topodb's column is at {topo.nodes:,} nodes / {topo.edges:,} edges (--topodb-nodes), "
                "not the size of mnemodb's columns; no ratios are shown"
            )
        probe = "off" if args.topodb_no_conflict_check else "on (its default)"
        lines.append(f"topodb single create_memory near-duplicate probe: {probe}")
    else:
        lines.append("topodb comparison skipped (no --topodb PATH or TOPODB_MCP given)")
    start, end = meta["loadavg_start"], meta["loadavg_end"]
    lines += [
        "",
        "== run ==",
        f"mnemodb {meta['mnemodb_version']}{meta['mnemodb_commit']} ({meta['mnemodb_command']})",
        f"Python {meta['python']}, numpy {meta['numpy']}, SQLite {meta['sqlite']}, {meta['cpus']} CPUs",
        f"vectors: clustered (one centroid per {COMMUNITY} nodes, noise of the same scale), seed {meta['seed']}; "
        f"queries: a node's vector plus noise x{QUERY_NOISE}",
        f"load average at start {start[0]:.2f} {start[1]:.2f} {start[2]:.2f}, "
        f"at end {end[0]:.2f} {end[1]:.2f} {end[2]:.2f}; {meta['seconds']:.0f} s in all",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
