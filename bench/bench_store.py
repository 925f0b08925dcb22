"""Store and search benchmark: mnemodb over stdio and in process, the raw SQLite floor, and topodb-mcp.

For each database size (10,000 and 100,000 memories by default) it measures

- batched store throughput: `store_memories` with 50 items per call over stdio, and
  `Engine.memories.store_many` in process;
- single `store_memory` latency (p50/p95) against the populated database;
- search latency (p50/p95): `search_memories` over stdio and `Engine.memories.search`,
  with 1-3-word queries drawn from the corpus, so every query matches something;
- spawn-to-initialize time of the server (median of several spawns);
- the server's resident memory (VmRSS) after loading and searching, and the size of
  the database on disk;
- the same inserts and queries in raw Python sqlite3 + FTS5 (the physical floor);
- optionally topodb-mcp, driven through the same client (`--topodb PATH` or the
  TOPODB_MCP environment variable), with the ratio mnemodb/topodb for every figure;
- optionally (`--postgresql URL|auto`) mnemodb over stdio and in process again on a
  PostgreSQL schema, with the ratio PostgreSQL/SQLite for every figure over stdio.

The servers are driven by a minimal JSON-RPC client over their stdio pipes (one JSON
message per line: spawn, `initialize`, `notifications/initialized`, then one request
at a time, matched by id) rather than the MCP SDK's client, so the client adds little
to the figures and the same code drives every server. A round trip is timed from just
before the request is written to the moment its reply line has been read.

The database grows through the sizes: the memories loaded for 10,000 stay when the run
goes on to 100,000. Each size gets a freshly spawned server process.

Run `python bench/bench_store.py --help` for the options; see bench/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import itertools
import json
import os
import platform
import random
import re
import select
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, NoReturn

import pg
from measure import p50, p95, rss_mb
from mnemodb import __version__ as MNEMODB_VERSION
from mnemodb.engine import Engine, NewMemory
from mnemodb.model.records import MEMORY_TYPES

PROTOCOL_VERSION = "2025-06-18"
REPLY_TIMEOUT_S = 120.0
WARMUP_QUERIES = 20
MB = 1024 * 1024

# -- corpus -----------------------------------------------------------------------------------------

# The head of the word distribution, as in real text: function words, which search
# analyzers drop from queries. Queries are built from the other (content) words only.
FUNCTION_WORDS = tuple(
    " ".join(
        (
            "the of and to a in is it that for on was with as at by this be are from or have an not but they",
            "which you were her all she there would their we him been has when who will more no if out so up",
            "what its about into than them can only other some could these then do any my such our over me most",
            "after did before through where your should because each those how too very both being under same while",
        )
    ).split()
)

_ONSETS = (*"bcdfghjklmnprstvwz", "br", "cr", "dr", "fl", "gr", "pl", "pr", "st", "tr", "sh", "ch", "th", "sk", "sl")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ea", "ou", "io")
_CODAS = ["", "", "", "n", "r", "s", "l", "m", "st", "nd", "rk", "x"]
_TOKEN = re.compile(r"[a-z]+")


@dataclass(frozen=True, slots=True)
class Item:
    content: str
    tags: tuple[str, ...]
    importance: int
    memory_type: str


class Corpus:
    """Deterministic synthetic memories: Zipf-distributed words, 8-30 words each, 1-3 tags."""

    def __init__(self, count: int, *, seed: int, vocabulary: int, zipf: float = 1.0) -> None:
        rng = random.Random(seed)
        self.seed = seed
        self.zipf = zipf
        self.function_words = frozenset(FUNCTION_WORDS)
        words = list(FUNCTION_WORDS)
        seen = set(words)
        while len(words) < vocabulary:
            syllables = rng.choice((1, 2, 2, 2, 3, 3))
            word = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables)) + rng.choice(_CODAS)
            if len(word) >= 3 and word not in seen:
                seen.add(word)
                words.append(word)
        self.vocabulary = words
        weights = [1.0 / (rank**zipf) for rank in range(1, len(words) + 1)]
        cumulative = list(itertools.accumulate(weights))
        # Tags are topical words: the commoner content words, themselves Zipf-distributed.
        tag_pool = words[len(FUNCTION_WORDS) : len(FUNCTION_WORDS) + 300]
        tag_cumulative = list(itertools.accumulate(1.0 / rank for rank in range(1, len(tag_pool) + 1)))
        self.items: list[Item] = []
        for _ in range(count):
            length = rng.randint(8, 30)
            sentence = rng.choices(words, cum_weights=cumulative, k=length)
            sentence[0] = sentence[0].capitalize()
            if length > 14 and rng.random() < 0.5:
                sentence[rng.randint(4, length - 5)] += ","
            tags: set[str] = set()
            wanted = rng.randint(1, 3)
            while len(tags) < wanted:
                tags.add(rng.choices(tag_pool, cum_weights=tag_cumulative, k=1)[0])
            self.items.append(
                Item(
                    content=" ".join(sentence) + ".",
                    tags=tuple(sorted(tags)),
                    importance=rng.choice((0, 0, 1, 2, 3, 4, 5, 6, 7, 8)),
                    memory_type=rng.choice(MEMORY_TYPES[:6]),
                )
            )

    def queries(self, loaded: int, count: int, seed: int) -> list[str]:
        """1-3 distinct content words from a random loaded memory, so every query matches."""
        rng = random.Random(seed)
        out: list[str] = []
        while len(out) < count:
            text = self.items[rng.randrange(loaded)].content.lower()
            candidates = sorted({w for w in _TOKEN.findall(text) if w not in self.function_words})
            if not candidates:
                continue
            picked = rng.sample(candidates, min(len(candidates), rng.randint(1, 3)))
            out.append(" ".join(picked))
        return out


# -- measurements -------------------------------------------------------------------------------------


def sqlite_size_mb(path: Path) -> float:
    """The database file plus its write-ahead log."""
    total = 0
    for suffix in ("", "-wal"):
        with contextlib.suppress(OSError):
            total += Path(str(path) + suffix).stat().st_size
    return total / MB


def dir_size_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / MB


@dataclass
class Figures:
    """One system's figures at one size. None: not measured for this system."""

    loaded: int = 0
    batch_per_s: float | None = None
    batch_seconds: float | None = None
    duplicates: int = 0
    single_p50_ms: float | None = None
    single_p95_ms: float | None = None
    search_p50_ms: float | None = None
    search_p95_ms: float | None = None
    hits_mean: float | None = None
    search100_p50_ms: float | None = None
    search100_p95_ms: float | None = None
    spawn_median_s: float | None = None
    spawn_all_s: list[float] = field(default_factory=list)
    rss_mb: float | None = None
    peak_rss_mb: float | None = None
    db_mb: float | None = None


class BenchError(RuntimeError):
    pass


def settle_gc() -> None:
    """Collect, then exempt everything alive from the cyclic GC.

    The bench process holds the whole corpus; without this, Python's full collections
    walk it again and again and the in-process figures pay for the bench's own data.
    """
    gc.collect()
    gc.freeze()


# -- a minimal JSON-RPC client over stdio -------------------------------------------------------------


class StdioClient:
    """One server process spoken to line by line: one request in flight at a time."""

    def __init__(
        self, argv: Sequence[str], env: dict[str, str], stderr: IO[bytes], *, reply_timeout: float = REPLY_TIMEOUT_S
    ) -> None:
        self.argv = list(argv)
        self.reply_timeout = reply_timeout
        self.last_reply_bytes = 0  # the size of the last line read, without its newline
        self.spawned_at = time.perf_counter()
        self.proc = subprocess.Popen(
            self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env, bufsize=0
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        self._buffer = bytearray()
        self._ids = itertools.count(1)

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._in, view) :]
        except BrokenPipeError:
            self._died("closed its stdin")

    def _died(self, what: str) -> NoReturn:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        raise BenchError(f"{self.argv[0]} {what} (exit status {self.proc.returncode})")

    def _line(self, deadline: float) -> bytes:
        scanned = 0  # a long reply arrives in many chunks: look for the newline in new bytes only
        while True:
            end = self._buffer.find(b"\n", scanned)
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                self.last_reply_bytes = len(line)
                return line
            scanned = len(self._buffer)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BenchError(f"{self.argv[0]}: no reply within {self.reply_timeout:.0f}s")
            ready, _, _ = select.select([self._out], [], [], remaining)
            if ready:
                chunk = os.read(self._out, 1 << 20)
                if not chunk:
                    self._died("closed its stdout")
                self._buffer += chunk

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._write(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def request(self, method: str, params: dict[str, Any]) -> tuple[dict[str, Any], float]:
        """The reply and the instant (perf_counter) its line was read; notifications are skipped."""
        request_id = next(self._ids)
        data = json.dumps(
            {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}, separators=(",", ":")
        )
        self._write(data.encode() + b"\n")
        deadline = time.monotonic() + self.reply_timeout
        while True:
            line = self._line(deadline)
            received = time.perf_counter()
            message: dict[str, Any] = json.loads(line)
            if message.get("id") == request_id:
                if "error" in message:
                    raise BenchError(f"{method} failed: {message['error']}")
                return message, received

    def initialize(self) -> float:
        """Handshake; returns the seconds from spawn to the initialize reply."""
        _, received = self.request(
            "initialize",
            {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
        )
        self.notify("notifications/initialized")
        return received - self.spawned_at

    def call(self, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], float]:
        """The tool's result and the round-trip time in seconds."""
        sent = time.perf_counter()
        reply, received = self.request("tools/call", {"name": tool, "arguments": arguments})
        result: dict[str, Any] = reply["result"]
        if result.get("isError"):
            raise BenchError(f"{tool} returned an error: {json.dumps(result)[:500]}")
        return result, received - sent

    close_timeout_s = 30.0
    """How long a server may take to exit once its stdin closes, before it is killed."""

    def close(self) -> None:
        assert self.proc.stdin is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=self.close_timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        assert self.proc.stdout is not None
        self.proc.stdout.close()


# -- the systems under test ----------------------------------------------------------------------------


class StdioTarget:
    """How to spawn one MCP server and phrase the workload in its tools."""

    name = ""

    def __init__(self, workdir: Path) -> None:
        self.dir = workdir / self.name
        self.dir.mkdir(parents=True, exist_ok=True)

    def argv(self) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        return dict(os.environ)

    def batch(self, items: Sequence[Item]) -> tuple[str, dict[str, Any]]:
        raise NotImplementedError

    def batch_duplicates(self, result: dict[str, Any], count: int) -> int:
        """How many items of the batch were not stored as new memories."""
        raise NotImplementedError

    def single(self, item: Item) -> tuple[str, dict[str, Any]]:
        raise NotImplementedError

    def search(self, query: str) -> tuple[str, dict[str, Any]]:
        raise NotImplementedError

    def hits(self, result: dict[str, Any]) -> int:
        raise NotImplementedError

    def db_mb(self) -> float:
        raise NotImplementedError


class MnemodbTarget(StdioTarget):
    name = "mnemodb"

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir)
        self.db = self.dir / "memory.db"
        script = Path(sys.executable).with_name("mnemodb")
        self.command = [str(script)] if script.exists() else [sys.executable, "-m", "mnemodb"]

    def argv(self) -> list[str]:
        return [*self.command, "serve", "--profile", "memdb", "--db", str(self.db)]

    def env(self) -> dict[str, str]:
        # A clean environment: no MEMDB_/MNEMODB_ settings leak in from the caller.
        return {k: v for k, v in os.environ.items() if not k.startswith(("MEMDB_", "MNEMODB_"))}

    def batch(self, items: Sequence[Item]) -> tuple[str, dict[str, Any]]:
        return "store_memories", {"items": [_memdb_item(i) for i in items]}

    def batch_duplicates(self, result: dict[str, Any], count: int) -> int:
        outcome = result["structuredContent"]["result"]
        if outcome["failed"]:
            raise BenchError(f"store_memories rejected items: {json.dumps(outcome)[:500]}")
        return sum(1 for r in outcome["results"] if not r["isNew"])

    def single(self, item: Item) -> tuple[str, dict[str, Any]]:
        return "store_memory", _memdb_item(item)

    def search(self, query: str) -> tuple[str, dict[str, Any]]:
        return "search_memories", {"query": query}

    def hits(self, result: dict[str, Any]) -> int:
        return len(result["structuredContent"]["result"])

    def db_mb(self) -> float:
        return sqlite_size_mb(self.db)


class MnemodbPgTarget(MnemodbTarget):
    """The same server on a PostgreSQL schema, which keeps its data across the sizes."""

    name = "mnemodb_pg"

    def __init__(self, workdir: Path, url: str) -> None:
        super().__init__(workdir)
        self.url = url

    def argv(self) -> list[str]:
        return [*self.command, "serve", "--profile", "memdb", "--db", self.url]

    def db_mb(self) -> float:
        return pg.size_mb(self.url)


def _memdb_item(item: Item) -> dict[str, Any]:
    return {
        "content": item.content,
        "tags": list(item.tags),
        "importance": item.importance,
        "memory_type": item.memory_type,
    }


class TopodbTarget(StdioTarget):
    name = "topodb"

    def __init__(self, workdir: Path, binary: str, k: int, *, conflict_check: bool = True) -> None:
        super().__init__(workdir)
        self.binary = binary
        self.k = k
        self.conflict_check = conflict_check
        self.db = self.dir / "memory.redb"
        usage = _probe([binary, "--help"])
        self.embeddings_flag = "--embeddings" in usage
        self.version = _probe([binary, "--version"]).strip().splitlines()[0] if usage else "?"
        with open(binary, "rb") as handle:
            self.is_script = handle.read(2) == b"#!"

    def argv(self) -> list[str]:
        extra = ["--embeddings", "off"] if self.embeddings_flag else []
        return [self.binary, "--db", str(self.db), *extra]

    def batch(self, items: Sequence[Item]) -> tuple[str, dict[str, Any]]:
        commands = [{"op": "create_memory", "content": i.content, "props": _topodb_props(i)} for i in items]
        return "submit_batch", {"commands": commands}

    def batch_duplicates(self, result: dict[str, Any], count: int) -> int:
        return count - len(result["structuredContent"]["ids"])

    def single(self, item: Item) -> tuple[str, dict[str, Any]]:
        arguments: dict[str, Any] = {"content": item.content, "props": _topodb_props(item)}
        if not self.conflict_check:
            arguments["check_conflicts"] = False
        return "create_memory", arguments

    def search(self, query: str) -> tuple[str, dict[str, Any]]:
        return "search_memories", {"query": query, "k": self.k}

    def hits(self, result: dict[str, Any]) -> int:
        return len(result["structuredContent"]["hits"])

    def db_mb(self) -> float:
        # The .redb file and the sidecar directory topodb keeps beside it.
        return dir_size_mb(self.dir)


def _topodb_props(item: Item) -> dict[str, Any]:
    # topodb has no tags; they travel as properties so the payload matches mnemodb's.
    return {"tags": " ".join(item.tags), "importance": item.importance, "memory_type": item.memory_type}


def _probe(argv: Sequence[str]) -> str:
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BenchError(f"cannot run {argv[0]}: {exc}") from None
    return done.stdout + done.stderr


def run_stdio(
    target: StdioTarget,
    segment: Sequence[Item],
    singles: Sequence[Item],
    queries: Sequence[str],
    warmup: Sequence[str],
    *,
    batch_size: int,
    spawns: int,
    loaded: int,
    log: IO[bytes],
) -> Figures:
    figures = Figures()
    client = StdioClient(target.argv(), target.env(), log)
    try:
        client.initialize()
        elapsed = 0.0
        started = time.perf_counter()
        for start in range(0, len(segment), batch_size):
            chunk = segment[start : start + batch_size]
            tool, arguments = target.batch(chunk)
            result, seconds = client.call(tool, arguments)
            elapsed += seconds
            figures.duplicates += target.batch_duplicates(result, len(chunk))
        figures.batch_seconds = time.perf_counter() - started
        if segment:
            figures.batch_per_s = len(segment) / elapsed
        for query in warmup:
            client.call(*target.search(query))
        times, hits = [], 0
        for query in queries:
            result, seconds = client.call(*target.search(query))
            times.append(seconds)
            hits += target.hits(result)
        figures.search_p50_ms, figures.search_p95_ms = p50(times) * 1000, p95(times) * 1000
        figures.hits_mean = hits / len(queries)
        figures.rss_mb, figures.peak_rss_mb = rss_mb(client.proc.pid)
        times = [client.call(*target.single(item))[1] for item in singles]
        figures.single_p50_ms, figures.single_p95_ms = p50(times) * 1000, p95(times) * 1000
        # Measured while the server runs, like the in-process databases: file plus live WAL.
        figures.db_mb = target.db_mb()
    finally:
        client.close()
    figures.loaded = loaded + len(segment) + len(singles)
    for _ in range(spawns):
        probe = StdioClient(target.argv(), target.env(), log)
        try:
            figures.spawn_all_s.append(probe.initialize())
        finally:
            probe.close()
    if figures.spawn_all_s:
        figures.spawn_median_s = p50(figures.spawn_all_s)
    return figures


class EngineRunner:
    """mnemodb in process: the same workload through the Python API."""

    def __init__(self, workdir: Path, url: str | None = None) -> None:
        self.db = workdir / "engine" / "memory.db"
        self.url = url
        self.engine = Engine.open(url or str(self.db))

    def run(
        self,
        segment: Sequence[Item],
        singles: Sequence[Item],
        queries: Sequence[str],
        warmup: Sequence[str],
        *,
        batch_size: int,
        loaded: int,
    ) -> Figures:
        engine = self.engine
        figures = Figures()
        batches = [
            [NewMemory(i.content, i.tags, i.importance, i.memory_type) for i in segment[s : s + batch_size]]
            for s in range(0, len(segment), batch_size)
        ]
        settle_gc()
        started = time.perf_counter()
        for batch in batches:
            for outcome in engine.memories.store_many(batch):
                if not outcome.ok:
                    raise BenchError(f"Engine.memories.store_many rejected an item: {outcome.error}")
                figures.duplicates += not outcome.value.is_new
        figures.batch_seconds = time.perf_counter() - started
        if segment:
            figures.batch_per_s = len(segment) / figures.batch_seconds
        for query in warmup:
            engine.memories.search(query, limit=100)
        times, hits = [], 0
        for query in queries:
            started = time.perf_counter()
            found = engine.memories.search(query, limit=100)
            times.append(time.perf_counter() - started)
            hits += len(found)
        figures.search_p50_ms, figures.search_p95_ms = p50(times) * 1000, p95(times) * 1000
        figures.hits_mean = hits / len(queries)
        times = []
        for item in singles:
            started = time.perf_counter()
            engine.memories.store(item.content, item.tags, item.importance, item.memory_type)
            times.append(time.perf_counter() - started)
        figures.single_p50_ms, figures.single_p95_ms = p50(times) * 1000, p95(times) * 1000
        figures.loaded = loaded + len(segment) + len(singles)
        figures.db_mb = self.engine.store.size_bytes() / MB if self.url else sqlite_size_mb(self.db)
        return figures

    def close(self) -> None:
        self.engine.close()


FLOOR_SCHEMA = """
CREATE TABLE memory (
    id INTEGER PRIMARY KEY,
    content TEXT NOT NULL,
    tags TEXT NOT NULL,
    importance INTEGER NOT NULL,
    memory_type TEXT NOT NULL
);
CREATE VIRTUAL TABLE memory_fts USING fts5 (
    content, content = 'memory', content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER memory_fts_insert AFTER INSERT ON memory BEGIN
    INSERT INTO memory_fts (rowid, content) VALUES (new.id, new.content);
END;
"""
FLOOR_INSERT = "INSERT INTO memory (content, tags, importance, memory_type) VALUES (?, ?, ?, ?)"
FLOOR_SEARCH = (
    "SELECT m.id, m.content, m.tags FROM (SELECT rowid, bm25(memory_fts) AS rank FROM memory_fts "
    "WHERE memory_fts MATCH ? ORDER BY rank LIMIT ?) f JOIN memory m ON m.id = f.rowid ORDER BY f.rank"
)


class FloorRunner:
    """Raw sqlite3 + FTS5 in one process: the least any SQLite-backed server can do."""

    def __init__(self, workdir: Path) -> None:
        self.db = workdir / "floor" / "floor.db"
        self.db.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(self.db, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = NORMAL")
        self.conn.executescript(FLOOR_SCHEMA)

    @staticmethod
    def _row(item: Item) -> tuple[str, str, int, str]:
        return item.content, " ".join(item.tags), item.importance, item.memory_type

    def _search(self, query: str, limit: int) -> list[Any]:
        match = " OR ".join('"' + word + '"' for word in query.split())
        return self.conn.execute(FLOOR_SEARCH, (match, limit)).fetchall()

    def run(
        self,
        segment: Sequence[Item],
        singles: Sequence[Item],
        queries: Sequence[str],
        warmup: Sequence[str],
        *,
        batch_size: int,
        loaded: int,
    ) -> Figures:
        conn = self.conn
        figures = Figures()
        rows = [self._row(i) for i in segment]
        settle_gc()
        started = time.perf_counter()
        for start in range(0, len(rows), batch_size):
            conn.execute("BEGIN")
            conn.executemany(FLOOR_INSERT, rows[start : start + batch_size])
            conn.execute("COMMIT")
        figures.batch_seconds = time.perf_counter() - started
        if rows:
            figures.batch_per_s = len(rows) / figures.batch_seconds
        for limit in (10, 100):
            for query in warmup:
                self._search(query, limit)
            times, hits = [], 0
            for query in queries:
                started = time.perf_counter()
                hits += len(self._search(query, limit))
                times.append(time.perf_counter() - started)
            if limit == 10:
                figures.search_p50_ms, figures.search_p95_ms = p50(times) * 1000, p95(times) * 1000
                figures.hits_mean = hits / len(queries)
            else:
                figures.search100_p50_ms, figures.search100_p95_ms = p50(times) * 1000, p95(times) * 1000
        times = []
        for item in singles:
            started = time.perf_counter()
            conn.execute("BEGIN")
            conn.execute(FLOOR_INSERT, self._row(item))
            conn.execute("COMMIT")
            times.append(time.perf_counter() - started)
        figures.single_p50_ms, figures.single_p95_ms = p50(times) * 1000, p95(times) * 1000
        figures.loaded = loaded + len(segment) + len(singles)
        figures.db_mb = sqlite_size_mb(self.db)
        return figures

    def close(self) -> None:
        self.conn.close()


# -- targets and the report ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    metric: str
    op: str  # "<=" or ">="
    bound: Callable[[int], float | None]

    def limit(self, size: int) -> float | None:
        return self.bound(size)


def _search_bound(size: int) -> float | None:
    if size <= 10_000:
        return 1.5
    if size <= 100_000:
        return 3.0
    return None


TARGETS = {
    "batch_per_s": Target("batch_per_s", ">=", lambda size: 5000.0),
    "single_p50_ms": Target("single_p50_ms", "<=", lambda size: 4.0),
    "search_p50_ms": Target("search_p50_ms", "<=", _search_bound),
    "spawn_median_s": Target("spawn_median_s", "<=", lambda size: 0.8),
    "rss_mb": Target("rss_mb", "<=", lambda size: 120.0 if size <= 100_000 else None),
}

# (field, label, format, which way is better)
ROWS: tuple[tuple[str, str, str, str], ...] = (
    ("batch_per_s", "batched store (memories/s)", "{:,.0f}", "higher"),
    ("single_p50_ms", "single store p50 (ms)", "{:.2f}", "lower"),
    ("single_p95_ms", "single store p95 (ms)", "{:.2f}", "lower"),
    ("search_p50_ms", "search p50 (ms)", "{:.2f}", "lower"),
    ("search_p95_ms", "search p95 (ms)", "{:.2f}", "lower"),
    ("hits_mean", "hits per query (mean)", "{:.1f}", ""),
    ("spawn_median_s", "spawn-to-initialize (s)", "{:.3f}", "lower"),
    ("rss_mb", "server RSS (MiB)", "{:.1f}", "lower"),
    ("db_mb", "database on disk (MiB)", "{:.1f}", "lower"),
)
COLUMNS = (
    ("mnemodb", "mnemodb stdio"),
    ("mnemodb_pg", "mnemodb pg stdio"),
    ("engine", "mnemodb engine"),
    ("engine_pg", "mnemodb pg engine"),
    ("floor", "sqlite3 floor"),
    ("topodb", "topodb stdio"),
)
PG_COLUMNS = ("mnemodb_pg", "engine_pg")
"""The columns shown only with --postgresql."""


def _ratio(value: float) -> str:
    return f"{value:.2f}" if value >= 0.1 else f"{value:.2g}"


def _cell(value: float | None, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)


def render(
    size: int, results: dict[str, Figures], topodb: bool, postgresql: bool = False
) -> tuple[str, list[dict[str, Any]]]:
    columns = [(name, title) for name, title in COLUMNS if postgresql or name not in PG_COLUMNS]
    ratios = ["mnemo/topo", "pg/sqlite"] if postgresql else ["mnemo/topo"]
    header = ["metric", "better", *(title for _, title in columns), *ratios, "target", "status"]
    table: list[list[str]] = []
    verdicts: list[dict[str, Any]] = []
    for key, label, fmt, better in ROWS:
        values = {name: getattr(results[name], key) if name in results else None for name, _ in columns}
        ours, theirs = values["mnemodb"], values["topodb"]
        ratio = ["-"]
        if better and ours is not None and theirs:
            ratio = [_ratio(ours / theirs)]
        if postgresql:
            on_pg = values["mnemodb_pg"]
            ratio.append(_ratio(on_pg / ours) if better and on_pg is not None and ours else "-")
        target_text = status = ""
        target = TARGETS.get(key)
        limit = target.limit(size) if target else None
        if target is not None and limit is not None:
            target_text = f"{target.op} {fmt.format(limit)}"
            if ours is None:
                status = "not measured"
            else:
                met = ours <= limit if target.op == "<=" else ours >= limit
                status = "met" if met else "NOT MET"
                verdicts.append(
                    {"size": size, "metric": key, "target": f"{target.op} {limit}", "value": ours, "met": met}
                )
        table.append([label, better, *(_cell(values[name], fmt) for name, _ in columns), *ratio, target_text, status])
    widths = [max(len(row[i]) for row in [header, *table]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        parts = [cells[0].ljust(widths[0]), cells[1].ljust(widths[1])]
        parts += [c.rjust(w) for c, w in zip(cells[2:-1], widths[2:-1], strict=True)]
        parts.append(cells[-1])
        return "  ".join(parts).rstrip()

    out = [line(header), line(["-" * w for w in widths])]
    out += [line(row) for row in table]
    floor = results.get("floor")
    if floor is not None and floor.search100_p50_ms is not None:
        out.append(
            f"sqlite3 floor searches are bm25 top-10 (with rows); top-100: "
            f"p50 {floor.search100_p50_ms:.2f} ms, p95 {floor.search100_p95_ms:.2f} ms"
        )
    for name, title in columns:
        if name in results and results[name].duplicates:
            out.append(f"{title}: {results[name].duplicates} batched items were not new (same content)")
    if not topodb:
        out.append("topodb comparison skipped (no --topodb PATH or TOPODB_MCP given)")
    if postgresql:
        out.append("pg/sqlite: mnemodb over stdio on PostgreSQL over the same on SQLite (see `better`)")
    return "\n".join(out), verdicts


# -- driver -------------------------------------------------------------------------------------------


def parse_sizes(text: str) -> list[int]:
    try:
        sizes = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sizes expects comma-separated integers, got {text!r}") from None
    if not sizes or any(s <= 0 for s in sizes) or sizes != sorted(set(sizes)):
        raise argparse.ArgumentTypeError("--sizes must be positive and increasing, e.g. 10000,100000")
    return sizes


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Store/search benchmark of mnemodb (stdio and in process) against raw SQLite and topodb-mcp."
    )
    parser.add_argument("--sizes", type=parse_sizes, default=parse_sizes("10000,100000"), help="default 10000,100000")
    parser.add_argument("--queries", type=int, default=300, help="timed searches per size and system (default 300)")
    parser.add_argument("--singles", type=int, default=300, help="timed single stores per size and system (300)")
    parser.add_argument("--batch", type=int, default=50, help="memories per batched call (default 50, the memdb max)")
    parser.add_argument("--spawns", type=int, default=10, help="spawns timed per size and server (default 10)")
    parser.add_argument("--seed", type=int, default=42, help="corpus and query seed (default 42)")
    parser.add_argument("--vocabulary", type=int, default=4000, help="distinct words in the corpus (default 4000)")
    parser.add_argument(
        "--topodb",
        default=os.environ.get("TOPODB_MCP"),
        metavar="PATH",
        help="topodb-mcp binary to compare against (default: $TOPODB_MCP; skipped when unset)",
    )
    parser.add_argument("--topodb-k", type=int, default=100, help="k for topodb's search (default 100, as memdb)")
    parser.add_argument(
        "--topodb-no-conflict-check",
        action="store_true",
        help="pass check_conflicts=false to topodb's create_memory (its near-duplicate probe is on by default)",
    )
    pg.add_option(parser)
    parser.add_argument("--no-engine", action="store_true", help="skip the in-process engine runs")
    parser.add_argument("--no-floor", action="store_true", help="skip the raw sqlite3 floor")
    parser.add_argument("--json", metavar="PATH", help="also write every figure as JSON to PATH")
    parser.add_argument("--workdir", metavar="DIR", help="where the databases go (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the databases and server logs afterwards")
    return parser


@contextlib.contextmanager
def _workdir(args: argparse.Namespace) -> Iterator[Path]:
    if args.workdir:
        path = Path(args.workdir).resolve()
        if path.exists() and any(path.iterdir()):
            raise BenchError(f"--workdir {path} is not empty")
        path.mkdir(parents=True, exist_ok=True)
    else:
        path = Path(tempfile.mkdtemp(prefix="mnemodb-bench-"))
    try:
        yield path
    finally:
        if args.keep:
            print(f"kept databases and logs in {path}")
        else:
            shutil.rmtree(path, ignore_errors=True)


def _progress(text: str) -> None:
    print(f"  [{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not 1 <= args.batch <= 50:
        raise SystemExit("--batch must be from 1 to 50 (memdb's store_memories limit)")
    if args.queries < 1 or args.singles < 1:
        raise SystemExit("--queries and --singles must be at least 1")
    sizes: list[int] = args.sizes
    gaps = [b - a for a, b in itertools.pairwise([0, *sizes])]
    if any(g <= args.singles for g in gaps[1:]):
        raise SystemExit("consecutive --sizes must differ by more than --singles (the single stores count too)")
    if args.topodb and not os.access(args.topodb, os.X_OK):
        raise SystemExit(f"--topodb {args.topodb} is not an executable file")
    try:
        return _run(args, sizes)
    except BenchError as exc:
        hint = "" if args.keep else " (run with --keep to look at the servers' log afterwards)"
        print(f"bench_store: {exc}{hint}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace, sizes: list[int]) -> int:
    load_start = os.getloadavg()
    wall_start = time.perf_counter()
    _progress("generating the corpus")
    corpus = Corpus(sizes[-1] + args.singles, seed=args.seed, vocabulary=args.vocabulary)
    settle_gc()
    report: list[str] = []
    results: dict[int, dict[str, Figures]] = {}
    verdicts: list[dict[str, Any]] = []
    meta: dict[str, Any] = {
        "mnemodb_version": MNEMODB_VERSION,
        "mnemodb_commit": _commit(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg_start": load_start,
        "sizes": sizes,
        "queries": args.queries,
        "singles": args.singles,
        "batch": args.batch,
        "spawns": args.spawns,
        "seed": args.seed,
        "vocabulary": args.vocabulary,
        "floor": not args.no_floor,
        "engine": not args.no_engine,
        "topodb_k": args.topodb_k,
        "topodb_conflict_check": not args.topodb_no_conflict_check,
    }
    with (
        _workdir(args) as workdir,
        open(workdir / "servers.stderr.log", "wb") as log,
        pg.postgres(args.postgresql) as postgres,
    ):
        mnemodb = MnemodbTarget(workdir)
        mnemodb_pg = engine_pg = None
        if postgres is not None:
            meta["postgresql"] = postgres.meta()
            _progress(postgres.describe())
            mnemodb_pg = MnemodbPgTarget(workdir, postgres.url("stdio"))
            if not args.no_engine:
                engine_pg = EngineRunner(workdir, postgres.url("engine"))
        topodb = None
        if args.topodb:
            topodb = TopodbTarget(workdir, args.topodb, args.topodb_k, conflict_check=not args.topodb_no_conflict_check)
        engine = None if args.no_engine else EngineRunner(workdir)
        floor = None if args.no_floor else FloorRunner(workdir)
        command = [Path(mnemodb.argv()[0]).name, *mnemodb.argv()[1:]]
        meta["mnemodb_command"] = " ".join(command).replace(str(workdir), "WORKDIR")
        if topodb is not None:
            meta["topodb_version"] = topodb.version
            meta["topodb_embeddings_off"] = topodb.embeddings_flag
            if topodb.is_script:
                print("note: --topodb is a launcher script; its start-up counts in spawn time", file=sys.stderr)
        loaded = 0
        try:
            for size in sizes:
                segment = corpus.items[loaded:size]
                singles = corpus.items[size : size + args.singles]
                queries = corpus.queries(size, args.queries, seed=args.seed * 1_000_003 + size)
                warmup = corpus.queries(size, WARMUP_QUERIES, seed=args.seed * 7 + size)
                here: dict[str, Figures] = {}
                common = {"batch_size": args.batch, "loaded": loaded}
                if floor is not None:
                    _progress(f"{size:,}: sqlite3 floor")
                    here["floor"] = floor.run(segment, singles, queries, warmup, **common)
                if engine is not None:
                    _progress(f"{size:,}: mnemodb engine")
                    here["engine"] = engine.run(segment, singles, queries, warmup, **common)
                if engine_pg is not None:
                    _progress(f"{size:,}: mnemodb engine on PostgreSQL")
                    here["engine_pg"] = engine_pg.run(segment, singles, queries, warmup, **common)
                stdio = {"spawns": args.spawns, "log": log, **common}
                _progress(f"{size:,}: mnemodb over stdio")
                here["mnemodb"] = run_stdio(mnemodb, segment, singles, queries, warmup, **stdio)
                if mnemodb_pg is not None:
                    _progress(f"{size:,}: mnemodb over stdio on PostgreSQL")
                    here["mnemodb_pg"] = run_stdio(mnemodb_pg, segment, singles, queries, warmup, **stdio)
                if topodb is not None:
                    _progress(f"{size:,}: topodb over stdio")
                    here["topodb"] = run_stdio(topodb, segment, singles, queries, warmup, **stdio)
                loaded = size + len(singles)
                results[size] = here
                text, found = render(size, here, topodb is not None, mnemodb_pg is not None)
                verdicts += found
                load = os.getloadavg()
                text += f"\nload average now {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
                report.append(f"\n== {size:,} memories (database holds {loaded:,} after the single stores) ==\n{text}")
                print(report[-1], flush=True)
        finally:
            if engine is not None:
                engine.close()
            if engine_pg is not None:
                engine_pg.close()
            if floor is not None:
                floor.close()
    meta["loadavg_end"] = os.getloadavg()
    meta["seconds"] = round(time.perf_counter() - wall_start, 1)
    print(_summary(meta, verdicts, topodb is not None))
    if args.json:
        payload = {
            "meta": meta,
            "results": {str(s): {name: asdict(f) for name, f in r.items()} for s, r in results.items()},
            "targets": verdicts,
        }
        Path(args.json).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


def _commit() -> str:
    """' at commit X' (plus a note when src/ has uncommitted changes), or '' outside a checkout."""
    root = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--", "src"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""
    return f" at commit {head}" + (" with uncommitted changes in src/" if dirty else "")


def _summary(meta: dict[str, Any], verdicts: list[dict[str, Any]], topodb: bool) -> str:
    met = sum(1 for v in verdicts if v["met"])
    lines = [
        "",
        "== run ==",
        f"mnemodb {meta['mnemodb_version']}{meta['mnemodb_commit']} ({meta['mnemodb_command']})",
        f"Python {meta['python']}, SQLite {meta['sqlite']}, {meta['cpus']} CPUs",
    ]
    if topodb:
        flag = "--embeddings off" if meta["topodb_embeddings_off"] else "no --embeddings flag"
        probe = "on (its default)" if meta["topodb_conflict_check"] else "off"
        lines.append(
            f"{meta['topodb_version']} ({flag}), search k={meta['topodb_k']}, "
            f"near-duplicate probe on single create_memory {probe}"
        )
    start, end = meta["loadavg_start"], meta["loadavg_end"]
    lines += [
        f"load average at start {start[0]:.2f} {start[1]:.2f} {start[2]:.2f}, "
        f"at end {end[0]:.2f} {end[1]:.2f} {end[2]:.2f}; {meta['seconds']:.0f} s in all",
        f"targets (mnemodb over stdio): {met} of {len(verdicts)} met",
    ]
    if "postgresql" in meta:
        lines.append(f"{meta['postgresql']['description']}, over loopback TCP")
    if meta["floor"]:
        lines.append(
            "floor: sqlite3 + FTS5 (porter unicode61, external content table, insert trigger), WAL, "
            "synchronous=NORMAL, one transaction per batch"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
