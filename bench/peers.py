"""mnemodb's profiles next to topodb-mcp and the official server-memory, in interleaved rounds.

One command measures every system on the same seeded workload at each size (10,000 and
100,000 entities by default) and prints one markdown table per size with the ratios
mnemodb / topodb-mcp and mnemodb / server-memory, in time and in server CPU:

- mnemodb `serve --profile native`, `--profile topodb`, `--profile knowledge-graph` and
  `--profile memdb` (its search only), each spawned as `python -m mnemodb serve` over stdio
  with `--embedder none` (words only, as topodb-mcp runs, whatever models are installed);
- topodb-mcp (`--topodb PATH`, its platform binary, run with `--embeddings off`);
- server-memory (`--server-memory PATH`, its `dist/index.js`, run with node and
  MEMORY_FILE_PATH).

A peer that is not given (or not found) is reported as skipped. `--pythonpath DIR` runs
mnemodb from another source tree (`PYTHONPATH=DIR/src`, this interpreter), and
`--compare DIR` adds the same profiles from a second tree, labelled "before", so a
before/after is measured in one run.

The workload (deterministic, `--seed`): N entities, each with one observation (a
sentence of 8 to 30 Zipf-distributed words, bench_store's corpus), and N-1 relations
(entity i to a random earlier one: one connected tree). The knowledge-graph systems hold
each observation on its entity; the topodb-shaped systems (topodb-mcp, and mnemodb's
native, topodb and memdb profiles, which share one database) hold it as a memory linked
`about` its entity, since topodb has no observations and does not search properties.
Seeding: server-memory's JSONL file is written directly, mnemodb's knowledge-graph
database is loaded from that file by `mnemodb import` (of the tree under test), and the
topodb-shaped stores are built through `submit_batch`, the same commands for both.

Then, for `--rounds` rounds, each round spawns every system once to time `initialize`,
and runs every operation on every system in turn, systems and operations shuffled per
round, so that a busy moment on the machine hits all systems alike. A round trip is timed
from just before the request is written until its reply line has been read; server CPU
is the time on the CPU of the server process, its threads and its children (each live
thread's /proc schedstat, in nanoseconds) over a block of calls, divided by the calls.
After each round, a part of the bulk insert of `--bulk` entities with their observations,
then as many relations, goes through each system's batch tool.

Run `python bench/peers.py --help` for the options; see bench/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import hashlib
import json
import mmap
import os
import platform
import random
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from bench_store import BenchError, Corpus, _probe, _progress, _workdir, dir_size_mb, settle_gc
from bench_topodb import Client, clean_env
from measure import _tree, p50, p95, rss_mb

MB = 1024 * 1024
REPLY_TIMEOUT_S = 600.0
SEED_BATCH = 300
"""Entities per `submit_batch` while seeding (three commands each)."""
LINK_BATCH = 1000
BULK_BATCH = 100
"""Entities or relations per call in the bulk insert."""
VOCABULARY = 4000
ENTITY_TYPES = ("person", "service", "library", "project", "concept", "team")
RELATION_TYPES = ("depends_on", "works_on", "part_of", "knows", "uses", "owns")
MISSING_ID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
"""A well-formed ULID that names no node: topodb's cheapest read."""
MISSING_NAME = "No Such Entity"
TICKS_PER_S = os.sysconf("SC_CLK_TCK")

# The operations, in the order the tables show them: (key, what it is).
OPERATIONS = (
    ("trivial", "trivial read (missing item)"),
    ("get", "get one node"),
    ("find_by_prop", "find_by_prop (name)"),
    ("neighbours", "one-hop neighbours"),
    ("traverse", "traverse 2 hops"),
    ("search", "search, word query"),
    ("write_entity", "single write: memory/entity about a new name"),
    ("write_relation", "single write: one relation"),
)
TITLES = dict(OPERATIONS)
ALL_OPERATIONS = frozenset(TITLES)

Call = tuple[str, dict[str, Any]]


# -- the workload ----------------------------------------------------------------------------------


@dataclass
class Workload:
    """Everything every system is asked, drawn once per size from the seed."""

    size: int
    names: list[str]
    types: list[str]
    texts: list[str]
    parents: list[int]
    """parents[i] is the entity that entity i + 1 relates to."""
    relation_types: list[str]
    queries: list[str]
    picks: list[int]
    """Entities the graph reads start from, one per call, in call order."""
    pairs: list[tuple[int, int]]
    """(from, to) entities of the single relation writes."""
    new_names: list[str]
    new_texts: list[str]
    bulk_names: list[str]
    bulk_texts: list[str]
    bulk_targets: list[int]


def _names(rng: random.Random, words: Sequence[str], count: int, prefix: str) -> list[str]:
    # Two content words and a serial: readable, and unique without a retry loop.
    return [f"{rng.choice(words).capitalize()} {rng.choice(words).capitalize()} {prefix}{i}" for i in range(count)]


def _pair(a: int, b: int, size: int) -> tuple[int, int]:
    # A relation of an entity to itself is refused by every system: take the next one, which
    # keeps the draws (and so the rest of the workload) as they were.
    return (a, b) if a != b else (a, (b + 1) % size)


def build_workload(size: int, *, seed: int, queries: int, reads: int, writes: int, bulk: int) -> Workload:
    corpus = Corpus(size + writes + bulk, seed=seed, vocabulary=VOCABULARY)
    rng = random.Random(seed + 1)
    content_words = [w for w in corpus.vocabulary if w not in corpus.function_words]
    texts = [item.content for item in corpus.items]
    return Workload(
        size=size,
        names=_names(rng, content_words, size, "e"),
        types=[rng.choice(ENTITY_TYPES) for _ in range(size)],
        texts=texts[:size],
        parents=[rng.randrange(i) for i in range(1, size)],
        relation_types=[rng.choice(RELATION_TYPES) for _ in range(1, size)],
        queries=corpus.queries(size, queries, seed + 2),
        picks=[rng.randrange(size) for _ in range(reads)],
        pairs=[_pair(rng.randrange(size), rng.randrange(size), size) for _ in range(writes)],
        new_names=_names(rng, content_words, writes, "w"),
        new_texts=texts[size : size + writes],
        bulk_names=_names(rng, content_words, bulk, "b"),
        bulk_texts=texts[size + writes :],
        bulk_targets=[rng.randrange(size) for _ in range(bulk)],
    )


def write_jsonl(path: Path, work: Workload) -> None:
    """server-memory's own file format: entities, then relations, one compact object a line."""
    lines = [
        json.dumps(
            {"type": "entity", "name": work.names[i], "entityType": work.types[i], "observations": [work.texts[i]]},
            separators=(",", ":"),
        )
        for i in range(work.size)
    ]
    lines += [
        json.dumps(
            {
                "type": "relation",
                "from": work.names[i + 1],
                "to": work.names[p],
                "relationType": work.relation_types[i],
            },
            separators=(",", ":"),
        )
        for i, p in enumerate(work.parents)
    ]
    path.write_text("\n".join(lines), encoding="utf-8")


def _entity_commands(names: Sequence[str], types: Sequence[str], texts: Sequence[str]) -> list[dict[str, Any]]:
    """Per entity: the entity, its observation as a memory, and the memory's `about` link."""
    commands: list[dict[str, Any]] = []
    for k, (name, kind, text) in enumerate(zip(names, types, texts, strict=True)):
        commands += [
            {"op": "create_entity", "name": name, "props": {"entityType": kind}},
            {"op": "create_memory", "content": text},
            {"op": "link", "from": f"#{3 * k + 1}", "to": f"#{3 * k}", "type": "about"},
        ]
    return commands


def seed_topodb_shaped(client: Client, work: Workload, label: str) -> list[str]:
    """The entities, memories and relations through submit_batch; the entities' ids."""
    ids: list[str] = []
    for start in range(0, work.size, SEED_BATCH):
        part = slice(start, min(start + SEED_BATCH, work.size))
        result, _, _ = client.call_timed(
            "submit_batch", {"commands": _entity_commands(work.names[part], work.types[part], work.texts[part])}
        )
        ids += [str(i) for i in result["ids"][0::3]]
        if (start // SEED_BATCH) % 50 == 0:
            _progress(f"{label} seed: {len(ids):,} of {work.size:,} entities")
    for start in range(0, len(work.parents), LINK_BATCH):
        commands = [
            {"op": "link", "from": ids[i + 1], "to": ids[work.parents[i]], "type": work.relation_types[i]}
            for i in range(start, min(start + LINK_BATCH, len(work.parents)))
        ]
        client.call_timed("submit_batch", {"commands": commands})
    _progress(f"{label} seed: {work.size - 1:,} relations")
    return ids


# -- CPU of a server -------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """CPU time of the process's live threads and its descendants', in seconds, plus the
    children they have waited for.

    Read from each thread's `schedstat` (nanoseconds on the CPU): utime and stime in `stat`
    count 10 ms ticks, about what a block of 40 small reads costs in all, so a block's
    figure could be off by a tick either way. A thread that ends is no longer counted: the
    servers measured here keep their threads for their lifetime."""
    nanoseconds = 0
    ticks = 0
    for member in _tree(pid):
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = Path(f"/proc/{member}/stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            ticks += int(fields[13]) + int(fields[14])  # cutime cstime: children waited for
            for task in Path(f"/proc/{member}/task").iterdir():
                with contextlib.suppress(OSError, ValueError, IndexError):
                    nanoseconds += int((task / "schedstat").read_text().split()[0])
    return nanoseconds / 1e9 + ticks / TICKS_PER_S


# -- the systems -----------------------------------------------------------------------------------


class System:
    """One server: how to spawn it, seed it, and phrase each operation in its tools."""

    label = ""
    family = ""
    """"mnemodb", "topodb-mcp" or "server-memory"."""
    version = ""
    operations: frozenset[str] = frozenset()

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.ids: list[str] = []
        self.disk_bytes: int | None = None

    def argv(self) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        return clean_env()

    def spawn(self, log: IO[bytes]) -> Client:
        return Client(self.argv(), self.env(), log, reply_timeout=REPLY_TIMEOUT_S)

    def call(self, operation: str, work: Workload, n: int) -> Call:
        """The n-th call of an operation."""
        raise NotImplementedError

    def bulk_entities(self, work: Workload, part: slice) -> Call:
        raise NotImplementedError

    def bulk_relations(self, work: Workload, part: slice) -> Call:
        raise NotImplementedError

    def note_bulk_entities(self, result: Any) -> None:
        """Keep what later bulk calls need from a bulk entity call's result (topodb: ids)."""

    def measure_disk(self) -> None:
        """Set disk_bytes: what the store takes on disk, with the server stopped."""
        raise NotImplementedError

    def store_files(self) -> list[Path]:
        """The files the server reads its store from (`--warm-files`)."""
        return sorted(path for path in self.dir.rglob("*") if path.is_file())


def read_through(paths: Sequence[Path]) -> float:
    """Read each file to its end, so that the machine's file cache holds it (`--warm-files`);
    the seconds it took. A file that is gone is passed over."""
    started = time.perf_counter()
    for path in paths:
        with contextlib.suppress(OSError), path.open("rb", buffering=0) as file:
            while file.read(1 << 20):
                pass
    return time.perf_counter() - started


def cached_share(paths: Sequence[Path]) -> float | None:
    """The share of the files' pages that the machine's file cache holds now, from
    mincore(2) over a mapping of each that is never read (so it takes nothing into the
    cache), or None where that cannot be asked."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    cached = pages = 0
    for path in paths:
        try:
            size = path.stat().st_size
            if size == 0:
                continue
            with path.open("rb") as file:
                address = libc.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, file.fileno(), 0)
        except OSError:
            return None
        if address is None or address == ctypes.c_void_p(-1).value:
            return None
        try:
            count = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
            vector = (ctypes.c_ubyte * count)()
            if libc.mincore(address, size, vector) != 0:
                return None
            cached += sum(byte & 1 for byte in vector)
            pages += count
        finally:
            libc.munmap(address, size)
    return cached / pages if pages else None


def _stat_bytes(*paths: Path) -> int:
    total = 0
    for path in paths:
        with contextlib.suppress(OSError):
            total += path.stat().st_size
    return total


class TopodbShaped(System):
    """The topodb tools, by id: topodb-mcp itself and mnemodb's topodb profile."""

    operations = ALL_OPERATIONS

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.bulk_ids: list[str] = []

    def call(self, operation: str, work: Workload, n: int) -> Call:
        pick = work.picks[n % len(work.picks)]
        if operation == "trivial":
            return "get_node", {"id": MISSING_ID}
        if operation == "get":
            return "get_node", {"id": self.ids[pick]}
        if operation == "find_by_prop":
            return "find_by_prop", {"label": "Entity", "prop": "name", "value": work.names[pick]}
        if operation in ("neighbours", "traverse"):
            return "traverse", {"seed_id": self.ids[pick], "max_hops": 1 if operation == "neighbours" else 2}
        if operation == "search":
            return "search_memories", {"query": work.queries[n % len(work.queries)], "k": 10}
        if operation == "write_entity":
            commands = _entity_commands([work.new_names[n]], ["person"], [work.new_texts[n]])
            return "submit_batch", {"commands": commands}
        if operation == "write_relation":
            a, b = work.pairs[n]
            return "link", {"from_id": self.ids[a], "to_id": self.ids[b], "edge_type": "bench_link"}
        raise KeyError(operation)

    def bulk_entities(self, work: Workload, part: slice) -> Call:
        return "submit_batch", {
            "commands": _entity_commands(
                work.bulk_names[part], ["person"] * len(work.bulk_names[part]), work.bulk_texts[part]
            )
        }

    def note_bulk_entities(self, result: Any) -> None:
        self.bulk_ids += [str(i) for i in result["ids"][0::3]]

    def bulk_relations(self, work: Workload, part: slice) -> Call:
        indices = range(*part.indices(len(work.bulk_names)))
        commands = [
            {"op": "link", "from": self.bulk_ids[j], "to": self.ids[work.bulk_targets[j]], "type": "bench_bulk"}
            for j in indices
        ]
        return "submit_batch", {"commands": commands}


class TopodbMcp(TopodbShaped):
    label = "topodb-mcp"
    family = "topodb-mcp"

    def __init__(self, directory: Path, binary: str) -> None:
        super().__init__(directory)
        self.binary = binary
        self.db = directory / "graph.redb"
        usage = _probe([binary, "--help"])
        self.embeddings_flag = "--embeddings" in usage
        reported = _probe([binary, "--version"]).strip().splitlines()[0] if usage else "?"
        self.version = reported.removeprefix("topodb-mcp").strip()

    def argv(self) -> list[str]:
        extra = ["--embeddings", "off"] if self.embeddings_flag else []
        return [self.binary, "--db", str(self.db), *extra]

    def measure_disk(self) -> None:
        # The .redb file and whatever topodb keeps beside it (its warehouse).
        self.disk_bytes = int(dir_size_mb(self.dir) * MB)


@dataclass(frozen=True)
class Tree:
    """A mnemodb source tree: where `python -m mnemodb` is imported from."""

    label: str
    """"" for the tree under test, "before" for --compare's."""
    src: Path
    commit: str


class Mnemodb(System):
    family = "mnemodb"
    profile = ""
    db_name = ""

    def __init__(self, directory: Path, tree: Tree) -> None:
        super().__init__(directory)
        self.tree = tree
        self.label = f"mnemodb {self.profile}" + (f" ({tree.label})" if tree.label else "")
        self.version = tree.commit
        self.db = directory / self.db_name

    def argv(self) -> list[str]:
        # Words only, as topodb-mcp runs (`--embeddings off`) and as the workload asks: with
        # the local model installed, `auto` would give the native profile an embedder, whose
        # query embedding and background vectors would be measured instead of the search.
        return [
            sys.executable, "-m", "mnemodb", "serve", "--profile", self.profile, "--db", str(self.db),
            "--embedder", "none",
        ]  # fmt: skip

    def env(self) -> dict[str, str]:
        # No MEMORY_FILE_PATH either: mnemodb imports that server-memory file on start.
        env = {k: v for k, v in clean_env().items() if k != "MEMORY_FILE_PATH"}
        env["PYTHONPATH"] = str(self.tree.src)
        return env

    def measure_disk(self) -> None:
        self.disk_bytes = _stat_bytes(self.db, Path(f"{self.db}-wal"))

    def store_files(self) -> list[Path]:
        # Each mnemodb profile has a file of its own in the one directory.
        return [path for path in (self.db, Path(f"{self.db}-wal")) if path.exists()]


class MnemodbTopodb(Mnemodb, TopodbShaped):
    profile = "topodb"
    db_name = "topodb.db"


class MnemodbNative(Mnemodb):
    profile = "native"
    db_name = "native.db"
    operations = frozenset(TopodbShaped.operations - {"find_by_prop"})

    def call(self, operation: str, work: Workload, n: int) -> Call:
        pick = work.picks[n % len(work.picks)]
        if operation == "trivial":
            return "get", {"refs": [MISSING_NAME]}
        if operation == "get":
            return "get", {"refs": [work.names[pick]]}
        if operation in ("neighbours", "traverse"):
            return "explore", {"from": work.names[pick], "hops": 1 if operation == "neighbours" else 2}
        if operation == "search":
            return "recall", {"query": work.queries[n % len(work.queries)], "limit": 10}
        if operation == "write_entity":
            return "remember", {"memories": [{"content": work.new_texts[n], "about": [work.new_names[n]]}]}
        if operation == "write_relation":
            a, b = work.pairs[n]
            return "relate", {"add": [{"from": work.names[a], "type": "bench_link", "to": work.names[b]}]}
        raise KeyError(operation)

    def bulk_entities(self, work: Workload, part: slice) -> Call:
        names, texts = work.bulk_names[part], work.bulk_texts[part]
        return "remember", {
            "entities": [{"name": name, "type": "person"} for name in names],
            "memories": [{"content": text, "about": [name]} for name, text in zip(names, texts, strict=True)],
        }

    def bulk_relations(self, work: Workload, part: slice) -> Call:
        indices = range(*part.indices(len(work.bulk_names)))
        return "relate", {
            "add": [
                {"from": work.bulk_names[j], "type": "bench_bulk", "to": work.names[work.bulk_targets[j]]}
                for j in indices
            ]
        }


class MnemodbMemdb(Mnemodb):
    profile = "memdb"
    db_name = "memdb.db"
    operations = frozenset({"trivial", "search"})

    def call(self, operation: str, work: Workload, n: int) -> Call:
        if operation == "trivial":  # memdb reports a missing hash as a failed call: read a known one
            return "get_memory", {"hash": hashlib.sha256(work.texts[0].encode()).hexdigest()}
        if operation == "search":
            return "search_memories", {"query": work.queries[n % len(work.queries)]}
        raise KeyError(operation)


class KnowledgeGraphShaped(System):
    """server-memory's tools, by name: server-memory itself and mnemodb's knowledge-graph profile."""

    operations = frozenset({"trivial", "get", "search", "write_entity", "write_relation"})

    def call(self, operation: str, work: Workload, n: int) -> Call:
        pick = work.picks[n % len(work.picks)]
        if operation == "trivial":
            return "open_nodes", {"names": [MISSING_NAME]}
        if operation == "get":
            return "open_nodes", {"names": [work.names[pick]]}
        if operation in ("neighbours", "traverse"):
            return "get_subgraph", {"entityNames": [work.names[pick]], "depth": 1 if operation == "neighbours" else 2}
        if operation == "search":
            return "search_nodes", {"query": work.queries[n % len(work.queries)]}
        if operation == "write_entity":
            entity = {"name": work.new_names[n], "entityType": "person", "observations": [work.new_texts[n]]}
            return "create_entities", {"entities": [entity]}
        if operation == "write_relation":
            a, b = work.pairs[n]
            return "create_relations", {
                "relations": [{"from": work.names[a], "to": work.names[b], "relationType": "bench_link"}]
            }
        raise KeyError(operation)

    def bulk_entities(self, work: Workload, part: slice) -> Call:
        entities = [
            {"name": name, "entityType": "person", "observations": [text]}
            for name, text in zip(work.bulk_names[part], work.bulk_texts[part], strict=True)
        ]
        return "create_entities", {"entities": entities}

    def bulk_relations(self, work: Workload, part: slice) -> Call:
        indices = range(*part.indices(len(work.bulk_names)))
        relations = [
            {"from": work.bulk_names[j], "to": work.names[work.bulk_targets[j]], "relationType": "bench_bulk"}
            for j in indices
        ]
        return "create_relations", {"relations": relations}


class MnemodbKnowledgeGraph(Mnemodb, KnowledgeGraphShaped):
    profile = "knowledge-graph"
    db_name = "knowledge-graph.db"
    operations = KnowledgeGraphShaped.operations | {"neighbours", "traverse"}


class ServerMemory(KnowledgeGraphShaped):
    label = "server-memory"
    family = "server-memory"

    def __init__(self, directory: Path, script: str, node: str) -> None:
        super().__init__(directory)
        self.script = script
        self.node = node
        self.file = directory / "memory.jsonl"
        package = Path(script).resolve().parent.parent / "package.json"
        try:
            self.version = str(json.loads(package.read_text(encoding="utf-8")).get("version", "?"))
        except (OSError, ValueError):
            self.version = "?"
        node_version = subprocess.run([node, "--version"], capture_output=True, text=True, check=False).stdout
        self.version += f" (node {node_version.strip()})"

    def argv(self) -> list[str]:
        return [self.node, self.script]

    def env(self) -> dict[str, str]:
        return {**clean_env(), "MEMORY_FILE_PATH": str(self.file)}

    def measure_disk(self) -> None:
        self.disk_bytes = _stat_bytes(self.file)

    def store_files(self) -> list[Path]:
        return [self.file] if self.file.exists() else []


# -- measuring -------------------------------------------------------------------------------------


@dataclass
class Measured:
    """One operation on one system: every round trip, the server CPU over them, reply sizes."""

    seconds: list[float] = field(default_factory=list)
    cpu_s: float = 0.0
    reply_bytes: int = 0

    @property
    def calls(self) -> int:
        return len(self.seconds)

    def summary(self) -> dict[str, float | int | None]:
        if not self.seconds:
            return {"calls": 0}
        return {
            "calls": self.calls,
            "p50_ms": p50(self.seconds) * 1000,
            "p95_ms": p95(self.seconds) * 1000,
            "cpu_ms_per_call": self.cpu_s / self.calls * 1000,
            "reply_bytes_mean": self.reply_bytes / self.calls,
        }


@dataclass
class Bulk:
    """A bulk insert, loaded a part per round: one load's rate moves too much with what else
    the machine does at that moment, so the rate reported is the median of the rounds'."""

    items: int = 0
    seconds: float = 0.0
    cpu_s: float = 0.0
    round_rates: list[float] = field(default_factory=list)

    def add(self, items: int, seconds: float, cpu_s: float) -> None:
        self.items += items
        self.seconds += seconds
        self.cpu_s += cpu_s
        self.round_rates.append(items / seconds)

    def summary(self) -> dict[str, Any]:
        if not self.items:
            return {"items": 0}
        return {
            "items": self.items,
            "per_s": p50(self.round_rates),
            "per_s_rounds": self.round_rates,
            "per_s_overall": self.items / self.seconds,
            "cpu_ms_per_item": self.cpu_s / self.items * 1000,
        }


@dataclass
class Result:
    """One system at one size."""

    ops: dict[str, Measured] = field(default_factory=dict)
    spawn_s: list[float] = field(default_factory=list)
    rss_mb: float | None = None
    cached_share: float | None = None
    """The share of the store's files in the machine's file cache, read with the RSS."""
    disk_bytes: int | None = None
    bulk_entities: Bulk = field(default_factory=Bulk)
    bulk_relations: Bulk = field(default_factory=Bulk)
    seed_seconds: float | None = None


def _block(client: Client, calls: Sequence[Call], measured: Measured, budget_s: float | None = None) -> None:
    """A block of calls, timed one by one; server CPU over the whole block. Every reply is
    checked once the block is over, so the checks cost the server nothing."""
    pid = client.proc.pid
    started = time.monotonic()
    before = cpu_seconds(pid)
    replies: list[tuple[str, bytes]] = []
    for tool, arguments in calls:
        _, seconds, line = client.call_timed(tool, arguments, decode=False)
        measured.seconds.append(seconds)
        measured.reply_bytes += len(line)
        replies.append((tool, line))
        if budget_s is not None and time.monotonic() - started > budget_s:
            break
    measured.cpu_s += cpu_seconds(pid) - before
    for tool, line in replies:
        _check(tool, line)


def _check(tool: str, line: bytes) -> None:
    reply = json.loads(line)
    result = reply.get("result")
    if "error" in reply or not isinstance(result, dict) or result.get("isError"):
        raise BenchError(f"{tool} failed: {line[:500].decode(errors='replace')}")


def _counts(args: argparse.Namespace) -> dict[str, int]:
    """Calls per round of each operation."""
    per_round = {
        "trivial": args.trivial,
        "search": args.queries,
        "write_entity": args.writes,
        "write_relation": args.writes,
    }
    return {key: -(-per_round.get(key, args.reads) // args.rounds) for key, _ in OPERATIONS}


class Run:
    """One size: seed every system, then the rounds, each ending with a part of the bulk insert."""

    def __init__(self, args: argparse.Namespace, size: int, directory: Path, trees: Sequence[Tree]) -> None:
        self.args = args
        self.size = size
        self.dir = directory
        self.log = (directory / "servers.log").open("ab")
        self.counts = _counts(args)
        writes = self.counts["write_entity"] * args.rounds
        self.work = build_workload(
            size,
            seed=args.seed,
            queries=args.queries,
            reads=max(args.reads, args.queries),
            writes=writes,
            bulk=args.bulk,
        )
        self.systems: list[System] = []
        for tree in trees:
            where = directory / ("mnemodb-" + (tree.label or "now"))
            where.mkdir(parents=True)
            self.systems += [
                MnemodbNative(where, tree),
                MnemodbTopodb(where, tree),
                MnemodbKnowledgeGraph(where, tree),
                MnemodbMemdb(where, tree),
            ]
        if args.topodb:
            (directory / "topodb").mkdir()
            self.systems.append(TopodbMcp(directory / "topodb", args.topodb))
        if args.server_memory:
            (directory / "server-memory").mkdir()
            self.systems.append(ServerMemory(directory / "server-memory", args.server_memory, args.node))
        self.results: dict[str, Result] = {s.label: Result() for s in self.systems}
        self.rng = random.Random(args.seed + size)

    def close(self) -> None:
        self.log.close()

    # -- seeding

    def seed(self) -> None:
        jsonl = self.dir / "seed.jsonl"
        write_jsonl(jsonl, self.work)
        for system in self.systems:
            if isinstance(system, ServerMemory):
                shutil.copyfile(jsonl, system.file)
                self.results[system.label].seed_seconds = 0.0
        for system in self.systems:
            started = time.perf_counter()
            if isinstance(system, TopodbMcp):
                client = system.spawn(self.log)
                try:
                    client.initialize()
                    system.ids = seed_topodb_shaped(client, self.work, system.label)
                finally:
                    client.close()
            elif isinstance(system, MnemodbTopodb):
                client = system.spawn(self.log)
                try:
                    client.initialize()
                    system.ids = seed_topodb_shaped(client, self.work, system.label)
                finally:
                    client.close()
                # native and memdb serve copies of the same database: the same entities and memories.
                for other in self.systems:
                    if isinstance(other, MnemodbNative | MnemodbMemdb) and other.tree == system.tree:
                        _copy_sqlite(system.db, other.db)
            elif isinstance(system, MnemodbKnowledgeGraph):
                done = subprocess.run(
                    [sys.executable, "-m", "mnemodb", "import", str(jsonl), "--db", str(system.db)],
                    env=system.env(),
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if done.returncode != 0:
                    raise BenchError(f"mnemodb import failed: {done.stderr[-2000:]}")
                _progress(f"{system.label} seed: imported {self.size:,} entities")
            else:
                continue
            self.results[system.label].seed_seconds = time.perf_counter() - started
        for system in self.systems:
            system.measure_disk()
            self.results[system.label].disk_bytes = system.disk_bytes

    # -- rounds

    def rounds(self) -> None:
        # Spawn times first, with no other server open: topodb-mcp locks its file.
        for _ in range(self.args.rounds):
            for system in self._shuffled(self.systems):
                probe = system.spawn(self.log)
                try:
                    self.results[system.label].spawn_s.append(probe.initialize())
                finally:
                    probe.close()
        clients: dict[str, Client] = {}
        try:
            for system in self.systems:
                clients[system.label] = system.spawn(self.log)
                clients[system.label].initialize()
                self._warm_up(system, clients[system.label])
            total = len(self.work.bulk_names)
            for number in range(self.args.rounds):
                _progress(f"size {self.size:,}: round {number + 1} of {self.args.rounds}")
                if self.args.warm_files:
                    seconds = read_through([path for system in self.systems for path in system.store_files()])
                    _progress(f"size {self.size:,}: every store's files read through in {seconds:.1f} s")
                for key in self._shuffled([key for key, _ in OPERATIONS]):
                    for system in self._shuffled(self.systems):
                        if key in system.operations:
                            self._run_block(system, clients[system.label], key, number)
                if number == self.args.rounds - 1:
                    # Before the last part of the bulk insert, as the servers were before it.
                    for system in self.systems:
                        self.results[system.label].rss_mb = rss_mb(clients[system.label].proc.pid)[0]
                        self.results[system.label].cached_share = cached_share(system.store_files())
                part = slice(total * number // self.args.rounds, total * (number + 1) // self.args.rounds)
                for system in self._shuffled(self.systems):
                    if isinstance(system, MnemodbMemdb):
                        continue  # its search only
                    self._bulk(system, clients[system.label], part)
        finally:
            for client in clients.values():
                client.close()

    def _shuffled(self, items: Sequence[Any]) -> list[Any]:
        out = list(items)
        self.rng.shuffle(out)
        return out

    def _warm_up(self, system: System, client: Client) -> None:
        """A few untimed calls of each read, so no system pays for its first call in the figures."""
        for key in ("trivial", "get", "find_by_prop", "neighbours", "traverse", "search"):
            if key in system.operations:
                for n in range(3):
                    tool, arguments = system.call(key, self.work, len(self.work.picks) - 1 - n)
                    _, _, line = client.call_timed(tool, arguments, decode=False)
                    _check(tool, line)

    def _run_block(self, system: System, client: Client, key: str, number: int) -> None:
        count = self.counts[key]
        first = number * count
        calls = [system.call(key, self.work, n) for n in range(first, first + count)]
        measured = self.results[system.label].ops.setdefault(key, Measured())
        budget = self.args.block_seconds if key == "trivial" else None
        _block(client, calls, measured, budget)

    def _bulk(self, system: System, client: Client, part: slice) -> None:
        """One round's part of the bulk insert: its entities, then relations from them."""
        result = self.results[system.label]
        for phase, make, into in (
            ("entities", system.bulk_entities, result.bulk_entities),
            ("relations", system.bulk_relations, result.bulk_relations),
        ):
            before = cpu_seconds(client.proc.pid)
            seconds = 0.0
            for start in range(part.start, part.stop, BULK_BATCH):
                batch = slice(start, min(start + BULK_BATCH, part.stop))
                tool, arguments = make(self.work, batch)
                _, elapsed, line = client.call_timed(tool, arguments, decode=False)
                _check(tool, line)
                if phase == "entities":
                    system.note_bulk_entities(json.loads(line)["result"].get("structuredContent"))
                seconds += elapsed
            into.add(part.stop - part.start, seconds, cpu_seconds(client.proc.pid) - before)


def _copy_sqlite(source: Path, target: Path) -> None:
    """A closed SQLite database, with its write-ahead log if one is left."""
    with sqlite3.connect(source) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    shutil.copyfile(source, target)


# -- output ----------------------------------------------------------------------------------------


def _ms(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.3f}" if value < 1 else f"{value:.2f}" if value < 100 else f"{value:,.0f}"


def _ratio(mine: float | None, theirs: float | None) -> str:
    if mine is None or theirs is None or theirs <= 0:
        return "—"
    ratio = mine / theirs
    # Against server-memory's whole-file reads a ratio can be far below 0.01: keep two digits.
    return f"{ratio:.2f}x" if ratio >= 0.1 else f"{ratio:.2g}x"


def render(run: Run, header: str) -> tuple[str, dict[str, Any]]:
    """The markdown table of one size, and its figures for --json."""
    peers = [s.label for s in run.systems if s.family != "mnemodb"]
    head = ["operation", "system", "p50 ms", "p95 ms", "server CPU ms/call", "reply KB"]
    for peer in peers:
        head += [f"÷ {peer} time", f"÷ {peer} CPU"]
    rows: list[list[str]] = []
    figures: dict[str, Any] = {}
    for key, title in OPERATIONS:
        summaries = {
            s.label: run.results[s.label].ops[key].summary() for s in run.systems if key in run.results[s.label].ops
        }
        figures[key] = summaries
        for system in run.systems:
            summary = summaries.get(system.label)
            if summary is None or not summary["calls"]:
                continue
            row = [
                title,
                system.label,
                _ms(summary["p50_ms"]),
                _ms(summary["p95_ms"]),
                _ms(summary["cpu_ms_per_call"]),
                f"{(summary['reply_bytes_mean'] or 0) / 1000:.1f}",
            ]
            for peer in peers:
                theirs = summaries.get(peer)
                if system.family == "mnemodb" and theirs and theirs["calls"]:
                    row += [
                        _ratio(summary["p50_ms"], theirs["p50_ms"]),
                        _ratio(summary["cpu_ms_per_call"], theirs["cpu_ms_per_call"]),
                    ]
                else:
                    row += ["", ""]
            rows.append(row)
    table = _grid(head, rows, 2)
    extra_head = [
        "system",
        "spawn → initialize s (median)",
        "server RSS MiB",
        "store in file cache",
        "disk MB",
        "bytes/entity",
        "bulk entities/s",
        "CPU ms/entity",
        "bulk relations/s",
        "CPU ms/relation",
    ]
    extra_rows: list[list[str]] = []
    totals: dict[str, Any] = {}
    for system in run.systems:
        result = run.results[system.label]
        spawn = p50(result.spawn_s) if result.spawn_s else None
        ents, rels = result.bulk_entities.summary(), result.bulk_relations.summary()
        totals[system.label] = {
            "spawn_median_s": spawn,
            "spawn_all_s": result.spawn_s,
            "rss_mb": result.rss_mb,
            "cached_share": result.cached_share,
            "disk_bytes": result.disk_bytes,
            "bytes_per_entity": result.disk_bytes / run.size if result.disk_bytes else None,
            "bulk_entities": ents,
            "bulk_relations": rels,
            "seed_seconds": result.seed_seconds,
            "version": system.version,
        }
        extra_rows.append(
            [
                system.label,
                f"{spawn:.3f}" if spawn is not None else "—",
                f"{result.rss_mb:.0f}" if result.rss_mb is not None else "—",
                f"{result.cached_share:.0%}" if result.cached_share is not None else "—",
                f"{result.disk_bytes / 1e6:.1f}" if result.disk_bytes else "—",
                f"{result.disk_bytes / run.size:,.0f}" if result.disk_bytes else "—",
                f"{ents['per_s']:,.0f}" if ents.get("per_s") else "—",
                _ms(ents.get("cpu_ms_per_item")),
                f"{rels['per_s']:,.0f}" if rels.get("per_s") else "—",
                _ms(rels.get("cpu_ms_per_item")),
            ]
        )
    text = f"{header}\n\n{table}\n\n{_grid(extra_head, extra_rows, 1)}\n"
    return text, {"operations": figures, "systems": totals}


def _grid(head: Sequence[str], rows: Sequence[Sequence[str]], text_columns: int) -> str:
    """A markdown table: the first `text_columns` left-aligned, the figures right-aligned."""
    lines = ["| " + " | ".join(head) + " |"]
    lines.append("|" + "|".join("---" if i < text_columns else "---:" for i in range(len(head))) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _git_commit(src: Path) -> str:
    try:
        head = subprocess.run(
            ["git", "-C", str(src), "describe", "--always", "--dirty", "--exclude", "*"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown commit"
    return head


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def _header(run: Run, trees: Sequence[Tree]) -> str:
    mnemodb = ", ".join("mnemodb" + (f" ({t.label})" if t.label else "") + f" {t.commit}" for t in trees)
    peers = ", ".join(f"{s.label} {s.version}" for s in run.systems if s.family != "mnemodb") or "no peers"
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"### {run.size:,} entities — {mnemodb}\n\n"
        f"{time.strftime('%Y-%m-%d')}, {_cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"SQLite {sqlite3.sqlite_version}; {peers}. {run.args.rounds} interleaved rounds"
        + ("; every store's files read through before each round" if run.args.warm_files else "")
        + f"; load average {load}. "
        "Times are round trips over stdio; ratios are mnemodb ÷ the peer (lower is better)."
    )


# -- command line ----------------------------------------------------------------------------------


def parse_sizes(text: str) -> list[int]:
    try:
        sizes = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"sizes must be integers separated by commas, not {text!r}") from None
    if not sizes or any(size < 10 for size in sizes):
        raise argparse.ArgumentTypeError("every size must be at least 10")
    return sizes


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="mnemodb's profiles next to topodb-mcp and server-memory over stdio, in interleaved rounds."
    )
    parser.add_argument("--sizes", type=parse_sizes, default=[10_000, 100_000], help="entities (default 10000,100000)")
    parser.add_argument("--rounds", type=_positive, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the workload (default 7)")
    parser.add_argument("--queries", type=_positive, default=200, help="word queries in all (default 200)")
    parser.add_argument("--reads", type=_positive, default=200, help="calls of each graph read in all (default 200)")
    parser.add_argument("--writes", type=_positive, default=50, help="single writes of each kind in all (default 50)")
    parser.add_argument("--trivial", type=_positive, default=2000, help="trivial reads in all (default 2000)")
    parser.add_argument(
        "--block-seconds",
        type=float,
        default=10.0,
        help="stop a round's trivial reads on one system after this long (server-memory at 100k)",
    )
    parser.add_argument("--bulk", type=_positive, default=2000, help="entities (and relations) bulk-inserted")
    parser.add_argument(
        "--warm-files",
        action="store_true",
        help="read every system's store files through before each round, so that each round starts "
        "with them in the file cache (a machine that reclaims its file cache otherwise has the "
        "servers that read their files as they go read some pages from disk)",
    )
    parser.add_argument(
        "--topodb",
        default=os.environ.get("TOPODB_MCP"),
        help="topodb-mcp's platform binary (default $TOPODB_MCP; else found under --peers-dir)",
    )
    parser.add_argument(
        "--server-memory",
        default=os.environ.get("SERVER_MEMORY_JS"),
        help="server-memory's dist/index.js (default $SERVER_MEMORY_JS; else found under --peers-dir)",
    )
    parser.add_argument(
        "--peers-dir", help="a directory with node_modules holding @topodb/topodb-mcp and server-memory"
    )
    parser.add_argument("--node", default="node", help="the node binary for server-memory (default node)")
    parser.add_argument("--pythonpath", help="run mnemodb from this source tree (DIR/src) instead of this one")
    parser.add_argument("--compare", help="also run mnemodb from this source tree, labelled 'before'")
    parser.add_argument("--json", help="write every figure to this file")
    parser.add_argument("--workdir", help="where the stores go (default a new temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the stores and server logs")
    return parser


def _find_peers(args: argparse.Namespace) -> None:
    if not args.peers_dir:
        return
    modules = Path(args.peers_dir) / "node_modules"
    if not args.topodb:
        machine = {"x86_64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine(), platform.machine())
        candidate = modules / "@topodb" / f"topodb-mcp-{sys.platform}-{machine}" / "topodb-mcp"
        if candidate.exists():
            args.topodb = str(candidate)
    if not args.server_memory:
        candidate = modules / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
        if candidate.exists():
            args.server_memory = str(candidate)


def _tree_of(directory: str, label: str) -> Tree:
    root = Path(directory).resolve()
    src = root / "src"
    if not (src / "mnemodb" / "__init__.py").exists():
        raise BenchError(f"{root} has no src/mnemodb: not a mnemodb source tree")
    return Tree(label, src, _git_commit(root))


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _find_peers(args)
    try:
        return _run(args)
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _skipped(args: argparse.Namespace) -> list[str]:
    notes = []
    for flag, path, what in (
        ("--topodb", args.topodb, "topodb-mcp"),
        ("--server-memory", args.server_memory, "server-memory"),
    ):
        if path and not Path(path).exists():
            notes.append(f"{what}: {path} does not exist, skipped")
        elif not path:
            notes.append(f"{what}: not given ({flag} or --peers-dir), skipped")
    if args.server_memory and shutil.which(args.node) is None:
        notes.append(f"server-memory: no {args.node} on PATH, skipped")
        args.server_memory = None
    if args.topodb and not Path(args.topodb).exists():
        args.topodb = None
    if args.server_memory and not Path(args.server_memory).exists():
        args.server_memory = None
    return notes


def _run(args: argparse.Namespace) -> int:
    here = Path(__file__).resolve().parents[1]
    trees = [_tree_of(args.pythonpath or str(here), "")]
    if args.compare:
        trees.append(_tree_of(args.compare, "before"))
    for note in _skipped(args):
        print(note)
    settle_gc()
    payload: dict[str, Any] = {
        "settings": dict(vars(args)),
        "trees": [asdict(t) | {"src": str(t.src)} for t in trees],
        "machine": {"cpu": _cpu_model(), "cores": os.cpu_count(), "python": platform.python_version()},
        "sqlite": sqlite3.sqlite_version,
        "sizes": {},
    }
    with _workdir(args) as workdir:
        for size in args.sizes:
            directory = workdir / f"size-{size}"
            directory.mkdir()
            run = Run(args, size, directory, trees)
            try:
                _progress(f"size {size:,}: seeding {len(run.systems)} systems")
                run.seed()
                run.rounds()
            finally:
                run.close()
            text, figures = render(run, _header(run, trees))
            print(text, flush=True)
            payload["sizes"][str(size)] = figures | {"header": _header(run, trees), "table": text}
    if args.json:
        Path(args.json).write_text(json.dumps(payload, indent=2, default=str) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
