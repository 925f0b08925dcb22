"""Knowledge-graph benchmark: `mnemodb serve --profile knowledge-graph` over stdio, and the
official server-memory for comparison.

For each graph size (10,000 entities with 5 observations each by default) it measures

- write throughput: `create_entities` in calls of 50 entities with 3 observations each
  (entities/s), `create_relations` in calls of 50 (relations/s; about 1.8 relations per
  entity, a few hubs with hundreds of relations, some isolated entities and small islands),
  and `add_observations` for 50 entities a call, 2 observations each (observations/s);
- `search_nodes` latency (p50/p95) for plain words, `+required -excluded`, `name:` field
  prefixes, and `fuzzy: true` with a one-letter typo; `search_observations`;
- `find_path` between connected and between unconnected entities (maxDepth left to its
  default), `get_subgraph` at depth 1 and 2, `open_nodes` of 5 names, and one full
  `read_graph`;
- the server's resident memory, the size of its store on disk, and the load average.

With `--postgresql URL|auto` mnemodb runs the same workload again on a PostgreSQL schema
(a fresh one per size), in a column beside SQLite's, with the ratio of the two.

Optionally (`--server-memory PATH` or SERVER_MEMORY_JS: the package's dist/index.js) the
same workload runs against the official server-memory, through the same client. It has
only the base tools, and its search_nodes is a plain substring test: the rows it cannot
answer are printed as n/a. It reads and rewrites its whole JSONL file on every call, so
its write phases are capped (`--server-memory-calls`): the timed calls are spread evenly
over the load, and the batches between them are written to its file directly, untimed.

The servers are driven by a minimal JSON-RPC client over their stdio pipes (one JSON
message per line: spawn, `initialize`, `notifications/initialized`, then one request at a
time, matched by id). A round trip is timed from just before the request is written to
the moment its reply line has been read; decoding the reply is not counted.

Each size gets a fresh store and a fresh corpus. Run `python bench/bench_graph.py --help`
for the options; see bench/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

import bench_store
import pg
from bench_store import BenchError, _commit, _progress, _workdir
from measure import p50, p95, rss_mb
from mnemodb import __version__ as MNEMODB_VERSION

REPLY_TIMEOUT_S = 600.0
WARMUP_QUERIES = 10
MIN_SAMPLES = 20
MB = 1024 * 1024
CREATE_OBSERVATIONS = 3
ADDED_OBSERVATIONS = 2

# -- the corpus ---------------------------------------------------------------------------------------

# The head of the word distribution, as in real text. Queries use the other words only.
FUNCTION_WORDS = tuple(
    " ".join(
        (
            "the of and to a in is it that for on was with as at by this be are from or have an not but they",
            "which you were her all she there would their we him been has when who will more no if out so up",
            "what its about into than them can only other some could these then do any my such our over",
            "after did before through where your should because each those how too very both being under",
        )
    ).split()
)
_ONSETS = (*"bcdfghjklmnprstvwz", "br", "cr", "dr", "fl", "gr", "pl", "pr", "st", "tr", "sh", "ch", "th", "sk")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ea", "ou", "io")
_CODAS = ("", "", "", "n", "r", "s", "l", "m", "st", "nd", "rk", "x")
_TOKEN = re.compile(r"[a-z]+")

COMPONENT_KINDS = (
    "Service",
    "Worker",
    "Gateway",
    "Store",
    "Client",
    "Api",
    "Queue",
    "Cache",
    "Scheduler",
    "Indexer",
    "Parser",
    "Router",
    "Monitor",
    "Adapter",
    "Registry",
)
# (entity type, weight) for the non-hub entities; "person" gets person-like names.
ENTITY_TYPES = (("person", 30), ("service", 30), ("library", 14), ("concept", 10), ("document", 10), ("incident", 6))
HUB_TYPES = ("team", "project")
RELATION_TYPES: dict[str, tuple[str, ...]] = {
    "person": ("works_with", "reports_to", "owns", "reviewed"),
    "service": ("depends_on", "calls", "publishes_to", "reads_from"),
    "library": ("depends_on", "wraps", "supersedes"),
    "concept": ("relates_to", "explains", "contrasts_with"),
    "document": ("describes", "mentions", "links_to"),
    "incident": ("affected", "caused_by", "resolved_by"),
    "team": ("collaborates_with", "sponsors"),
    "project": ("builds_on", "blocks"),
}
HUB_RELATION = {
    "person": "member_of",
    "service": "part_of",
    "library": "used_by",
    "concept": "applies_to",
    "document": "documents",
    "incident": "impacted",
}


@dataclass(frozen=True, slots=True)
class EntitySpec:
    name: str
    entity_type: str
    observations: tuple[str, ...]
    """All of its observations: the first CREATE_OBSERVATIONS go with create_entities, the
    rest with add_observations."""


@dataclass(frozen=True, slots=True)
class Queries:
    plain: list[str]
    required_excluded: list[str]
    name_field: list[str]
    fuzzy: list[str]
    observations: list[str]
    path_connected: list[tuple[str, str]]
    path_unconnected: list[tuple[str, str]]
    subgraph: list[str]
    open_names: list[list[str]]


def _pronounceable(rng: random.Random, seen: set[str], syllables: Sequence[int] = (1, 2, 2, 2, 3, 3)) -> str:
    while True:
        word = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(rng.choice(syllables)))
        word += rng.choice(_CODAS)
        if len(word) >= 3 and word not in seen:
            seen.add(word)
            return word


class GraphCorpus:
    """A deterministic synthetic knowledge graph of `size` entities.

    Names are CamelCase component identifiers with a number ("BraikoGateway 1234") and
    person-like names ("Tela Droumark"). Observations are short sentences of
    Zipf-distributed words; some are dated ("[2025-01-02] ...") and some are TODOs. The
    first 1 % of the entities are hubs (teams and projects) that many others point at;
    5 % of the others have no relation at all and 5 % form small islands of 3 to 6
    entities; the rest form one connected component.
    """

    def __init__(self, size: int, *, seed: int, vocabulary: int, observations: int = 5) -> None:
        rng = random.Random(seed * 1_000_003 + size)
        self.size = size
        seen: set[str] = set(FUNCTION_WORDS)
        words = list(FUNCTION_WORDS)
        while len(words) < vocabulary:
            words.append(_pronounceable(rng, seen))
        self.words = words
        self.function_words = frozenset(FUNCTION_WORDS)
        self.content_words = frozenset(words[len(FUNCTION_WORDS) :])
        cumulative = list(itertools.accumulate(1.0 / rank for rank in range(1, len(words) + 1)))
        stems = [_pronounceable(rng, seen).capitalize() for _ in range(600)]
        first_names = [_pronounceable(rng, seen, (1, 2, 2)).capitalize() for _ in range(250)]
        last_names = [_pronounceable(rng, seen, (2, 2, 3)).capitalize() for _ in range(2000)]
        self.name_tokens: dict[str, str] = {}
        """A distinctive lower-case piece of each name, for `name:` queries."""

        names: set[str] = set()

        def component_name(kinds: Sequence[str] = COMPONENT_KINDS) -> tuple[str, str]:
            while True:
                stem = rng.choice(stems)
                name = f"{stem}{rng.choice(kinds)} {rng.randrange(10_000):04d}"
                if name not in names:
                    names.add(name)
                    return name, stem.lower()

        def person_name() -> tuple[str, str]:
            while True:
                last = rng.choice(last_names)
                name = f"{rng.choice(first_names)} {last}"
                if name in names:
                    name = f"{name} {rng.choice('ABCDEFGHJKLMNPRSTVW')}."
                if name not in names:
                    names.add(name)
                    return name, last.lower()

        def sentence(low: int, high: int) -> str:
            picked = rng.choices(words, cum_weights=cumulative, k=rng.randint(low, high))
            picked[0] = picked[0].capitalize()
            return " ".join(picked)

        hubs = max(5, size // 100)
        kinds, weights = zip(*ENTITY_TYPES, strict=True)
        entities: list[EntitySpec] = []
        for index in range(size):
            kind = HUB_TYPES[index % 2] if index < hubs else rng.choices(kinds, weights)[0]
            if kind == "person":
                name, token = person_name()
            else:
                name, token = component_name((kind.capitalize(),) if index < hubs else COMPONENT_KINDS)
            self.name_tokens[name] = token
            notes: list[str] = []
            while len(notes) < observations:
                roll = rng.random()
                if roll < 0.15:
                    month, day = rng.randint(1, 12), rng.randint(1, 28)
                    note = f"[2025-{month:02d}-{day:02d}] {sentence(4, 12)}."
                elif roll < 0.22:
                    note = f"TODO: {sentence(3, 9).lower()}"
                else:
                    note = sentence(5, 14) + "."
                if note not in notes:
                    notes.append(note)
            entities.append(EntitySpec(name, kind, tuple(notes)))
        self.entities = entities
        self.hubs = entities[:hubs]

        # Relations: hubs, isolated entities, islands, and one big component.
        rest = list(range(hubs, size))
        rng.shuffle(rest)
        isolated_count = size // 20
        island_count = size // 20
        self.isolated = sorted(rest[:isolated_count])
        island_members = rest[isolated_count : isolated_count + island_count]
        self.islands = sorted(island_members)
        giant = sorted(rest[isolated_count + island_count :])
        self.giant = list(range(hubs)) + giant
        relations: dict[tuple[str, str, str], None] = {}

        def relate(src: int, dst: int, relation_type: str | None = None) -> None:
            if src == dst:
                return
            a, b = entities[src], entities[dst]
            kind = relation_type or rng.choice(RELATION_TYPES[a.entity_type])
            relations.setdefault((a.name, b.name, kind), None)

        hub_cumulative = list(itertools.accumulate(1.0 / rank for rank in range(1, hubs + 1)))
        for index in range(1, hubs):
            relate(index, rng.randrange(index))
        placed: list[int] = list(range(hubs))
        for index in giant:
            # The first relation joins it to what is already connected; the second goes anywhere.
            if rng.random() < 0.35:
                hub = rng.choices(range(hubs), cum_weights=hub_cumulative)[0]
                relate(index, hub, HUB_RELATION[entities[index].entity_type])
            else:
                relate(index, rng.choice(placed))
            placed.append(index)
        for index in giant:
            relate(index, rng.choice(giant))
        start = 0
        while start < len(island_members):
            group = island_members[start : start + rng.randint(3, 6)]
            start += len(group)
            for a, b in itertools.pairwise(group):
                relate(a, b)
            if len(group) > 3:
                relate(group[-1], group[0])
        self.relations = list(relations)

    @property
    def observation_count(self) -> int:
        return sum(len(e.observations) for e in self.entities)

    @property
    def observation_bytes(self) -> int:
        return sum(len(o.encode()) for e in self.entities for o in e.observations)

    def _content_words(self, rng: random.Random, minimum: int = 3) -> list[str]:
        """The distinct content words of a random observation (retrying until there are some)."""
        while True:
            entity = self.entities[rng.randrange(self.size)]
            text = rng.choice(entity.observations).lower()
            found = sorted({w for w in _TOKEN.findall(text) if w in self.content_words and len(w) >= minimum})
            if found:
                return found

    def _words(self, rng: random.Random) -> str:
        found = self._content_words(rng)
        return " ".join(rng.sample(found, min(len(found), rng.randint(1, 2))))

    def _typo(self, rng: random.Random) -> str:
        while True:
            word = rng.choice(self._content_words(rng, minimum=5))
            position = rng.randrange(1, len(word))
            letter = rng.choice([c for c in "abcdefghiklmnoprstuvwy" if c != word[position]])
            typo = word[:position] + letter + word[position + 1 :]
            if typo not in self.content_words:
                return typo

    def queries(self, count: int, seed: int) -> Queries:
        rng = random.Random(seed)
        names = [e.name for e in self.entities]
        # Half the unconnected targets have no relation; half are in a small island.
        unconnected = [*self.isolated, *self.islands] or self.giant
        return Queries(
            plain=[self._words(rng) for _ in range(count)],
            required_excluded=[
                f"+{rng.choice(self._content_words(rng))} -{rng.choice(self._content_words(rng))}" for _ in range(count)
            ],
            name_field=[f"name:{self.name_tokens[rng.choice(names)]}" for _ in range(count)],
            fuzzy=[self._typo(rng) for _ in range(count)],
            observations=[self._words(rng) for _ in range(count)],
            path_connected=[(names[rng.choice(self.giant)], names[rng.choice(self.giant)]) for _ in range(count)],
            path_unconnected=[(names[rng.choice(self.giant)], names[rng.choice(unconnected)]) for _ in range(count)],
            subgraph=[rng.choice(names) for _ in range(count)],
            open_names=[rng.sample(names, 5) for _ in range(count)],
        )


# -- measurements -------------------------------------------------------------------------------------


def files_mb(*paths: Path) -> float:
    total = 0
    for path in paths:
        with contextlib.suppress(OSError):
            total += path.stat().st_size
    return total / MB


# -- a minimal JSON-RPC client over stdio -------------------------------------------------------------


class StdioClient(bench_store.StdioClient):
    """bench_store's client, waiting longer (replies can be tens of megabytes: read_graph)
    and answering with a tool's structured result, or its text when it has none."""

    close_timeout_s = 60.0

    def __init__(self, argv: Sequence[str], env: dict[str, str], stderr: IO[bytes]) -> None:
        super().__init__(argv, env, stderr, reply_timeout=REPLY_TIMEOUT_S)

    def call(self, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], float]:
        """The tool's structured result (or its text) and the round-trip time in seconds."""
        result, seconds = super().call(tool, arguments)
        structured = result.get("structuredContent")
        if structured is None:
            structured = {"text": "".join(c.get("text", "") for c in result.get("content", []))}
        return structured, seconds


# -- figures ------------------------------------------------------------------------------------------


@dataclass
class Op:
    """One operation's figures on one system. Latency in ms; rate in items per second."""

    samples: int = 0
    p50_ms: float | None = None
    p95_ms: float | None = None
    rate: float | None = None
    seconds: float | None = None
    items: int = 0
    size_mean: float | None = None
    """Mean hits (searches), path length (find_path) or entities returned (subgraph)."""
    note: str = ""


@dataclass
class SystemRun:
    ops: dict[str, Op] = field(default_factory=dict)
    rss_mb: float | None = None
    peak_rss_mb: float | None = None
    store_mb: float | None = None
    notes: list[str] = field(default_factory=list)


# -- the systems --------------------------------------------------------------------------------------


class System:
    name = ""
    title = ""
    # Operations this system can answer; the others are n/a.
    supports: frozenset[str] = frozenset()

    def __init__(self, workdir: Path) -> None:
        self.dir = workdir / self.name
        self.dir.mkdir(parents=True, exist_ok=True)

    def reset(self, size: int) -> None:
        raise NotImplementedError

    def argv(self) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        raise NotImplementedError

    def store_mb(self) -> float:
        raise NotImplementedError


class Mnemodb(System):
    name = "mnemodb"
    title = "mnemodb"
    supports = frozenset(
        {
            "create_entities",
            "create_relations",
            "add_observations",
            "search_plain",
            "search_plain_limit",
            "search_required",
            "search_name",
            "search_fuzzy",
            "search_observations",
            "path_connected",
            "path_unconnected",
            "subgraph_1",
            "subgraph_2",
            "open_nodes",
            "read_graph",
        }
    )

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir)
        script = Path(sys.executable).with_name("mnemodb")
        self.command = [str(script)] if script.exists() else [sys.executable, "-m", "mnemodb"]
        self.db = self.dir / "graph.db"

    def reset(self, size: int) -> None:
        self.db = self.dir / f"graph-{size}.db"

    def argv(self) -> list[str]:
        return [*self.command, "serve", "--profile", "knowledge-graph", "--db", str(self.db)]

    def env(self) -> dict[str, str]:
        # A clean environment: no MEMDB_/MNEMODB_ settings leak in from the caller, and no
        # MEMORY_FILE_PATH (mnemodb imports that server-memory file on start).
        return {
            k: v for k, v in os.environ.items() if not k.startswith(("MEMDB_", "MNEMODB_")) and k != "MEMORY_FILE_PATH"
        }

    def store_mb(self) -> float:
        # Measured while the server runs: the file plus its live write-ahead log.
        return files_mb(self.db, Path(f"{self.db}-wal"))


class MnemodbPg(Mnemodb):
    """The same server on PostgreSQL: a fresh schema for each size."""

    name = "mnemodb_pg"
    title = "mnemodb pg"

    def __init__(self, workdir: Path, postgres: pg.Postgres) -> None:
        super().__init__(workdir)
        self.postgres = postgres
        self.url = ""

    def reset(self, size: int) -> None:
        self.url = self.postgres.url(f"graph_{size}")

    def argv(self) -> list[str]:
        return [*self.command, "serve", "--profile", "knowledge-graph", "--db", self.url]

    def store_mb(self) -> float:
        return pg.size_mb(self.url)


class ServerMemory(System):
    """The official server-memory: `node dist/index.js` with MEMORY_FILE_PATH."""

    name = "server-memory"
    title = "server-memory"
    supports = frozenset({"create_entities", "create_relations", "add_observations", "search_plain", "open_nodes"})
    supports |= {"read_graph"}

    def __init__(self, workdir: Path, script: str, node: str) -> None:
        super().__init__(workdir)
        self.script = script
        self.node = node
        self.file = self.dir / "memory.jsonl"
        package = Path(script).resolve().parent.parent / "package.json"
        try:
            self.version = str(json.loads(package.read_text(encoding="utf-8")).get("version", "?"))
        except (OSError, ValueError):
            self.version = "?"
        self.node_version = subprocess.run([node, "--version"], capture_output=True, text=True, check=False).stdout
        self.node_version = self.node_version.strip()

    def reset(self, size: int) -> None:
        self.file = self.dir / f"memory-{size}.jsonl"

    def argv(self) -> list[str]:
        return [self.node, self.script]

    def env(self) -> dict[str, str]:
        return {**os.environ, "MEMORY_FILE_PATH": str(self.file)}

    def store_mb(self) -> float:
        return files_mb(self.file)


class Mirror:
    """What server-memory's file holds, kept here so that skipped batches can be written
    to the file directly, in its own format (one compact JSON object a line)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entities: dict[str, tuple[str, list[str]]] = {}
        self.lines: dict[str, str] = {}
        self.relation_lines: list[str] = []
        self.pending: list[str] = []
        self.changed: set[str] = set()

    @staticmethod
    def _entity_line(name: str, kind: str, observations: list[str]) -> str:
        item = {"type": "entity", "name": name, "entityType": kind, "observations": observations}
        return json.dumps(item, separators=(",", ":"), ensure_ascii=False)

    @staticmethod
    def _relation_line(relation: tuple[str, str, str]) -> str:
        item = {"type": "relation", "from": relation[0], "to": relation[1], "relationType": relation[2]}
        return json.dumps(item, separators=(",", ":"), ensure_ascii=False)

    def entities_added(self, specs: Sequence[EntitySpec], *, direct: bool) -> None:
        for spec in specs:
            observations = list(spec.observations[:CREATE_OBSERVATIONS])
            self.entities[spec.name] = (spec.entity_type, observations)
            self.lines[spec.name] = self._entity_line(spec.name, spec.entity_type, observations)
            if direct:
                self.pending.append(self.lines[spec.name])

    def relations_added(self, relations: Sequence[tuple[str, str, str]], *, direct: bool) -> None:
        lines = [self._relation_line(r) for r in relations]
        self.relation_lines += lines
        if direct:
            self.pending += lines

    def observations_added(self, specs: Sequence[EntitySpec], *, direct: bool) -> None:
        for spec in specs:
            kind, observations = self.entities[spec.name]
            observations.extend(spec.observations[CREATE_OBSERVATIONS:])
            self.lines[spec.name] = self._entity_line(spec.name, kind, observations)
            if direct:
                self.changed.add(spec.name)

    def flush(self) -> None:
        """Bring the file up to date before the server reads it again (no call is in flight)."""
        if self.changed:
            # Changed entities: rewrite the whole file, as the server itself would.
            temporary = self.path.with_suffix(".tmp")
            temporary.write_text("\n".join(itertools.chain(self.lines.values(), self.relation_lines)), "utf-8")
            temporary.replace(self.path)
        elif self.pending:
            # New lines only: its loader skips blank lines and does not mind the order.
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write("\n" + "\n".join(self.pending))
        self.pending.clear()
        self.changed.clear()


# -- the workload -------------------------------------------------------------------------------------


def _batches(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [items[start : start + size] for start in range(0, len(items), size)]


def _timed_indices(count: int, cap: int | None) -> set[int]:
    """Which of `count` calls go to the server: all, or `cap` of them spread evenly."""
    if cap is None or count <= cap:
        return set(range(count))
    return {round(i * (count - 1) / (cap - 1)) for i in range(cap)} if cap > 1 else {count - 1}


def _load(
    client: StdioClient,
    corpus: GraphCorpus,
    run: SystemRun,
    *,
    batch: int,
    mirror: Mirror | None,
    cap: int | None,
    progress: Callable[[str], None],
) -> None:
    """The three write phases; with a mirror, only the capped calls go to the server."""
    entity_batches = _batches(corpus.entities, batch)
    relation_batches = _batches(corpus.relations, batch)
    phases: list[tuple[str, list[Sequence[Any]], int]] = [
        ("create_entities", entity_batches, 1),
        ("create_relations", relation_batches, 1),
        ("add_observations", entity_batches, ADDED_OBSERVATIONS),
    ]
    for tool, batches, per_item in phases:
        timed = _timed_indices(len(batches), cap if mirror is not None else None)
        op = Op()
        started = time.perf_counter()
        for index, chunk in enumerate(batches):
            direct = index not in timed
            if mirror is not None:
                if not direct:
                    # The file must hold what came before this call, and not this call's items.
                    mirror.flush()
                if tool == "create_entities":
                    mirror.entities_added(chunk, direct=direct)
                elif tool == "create_relations":
                    mirror.relations_added(chunk, direct=direct)
                else:
                    mirror.observations_added(chunk, direct=direct)
            if direct:
                continue
            arguments = _write_arguments(tool, chunk)
            result, seconds = client.call(tool, arguments)
            _check_write(tool, result, chunk, per_item)
            op.samples += 1
            op.items += len(chunk) * per_item
            op.seconds = (op.seconds or 0.0) + seconds
        if mirror is not None:
            mirror.flush()
        if op.seconds:
            op.rate = op.items / op.seconds
        if len(timed) < len(batches):
            op.note = f"{len(timed)} of {len(batches)} calls timed, spread evenly; the rest written to its file"
        run.ops[tool] = op
        progress(f"  {tool}: {op.items:,} items in {time.perf_counter() - started:.1f} s")


def _write_arguments(tool: str, chunk: Sequence[Any]) -> dict[str, Any]:
    if tool == "create_entities":
        return {
            "entities": [
                {
                    "name": e.name,
                    "entityType": e.entity_type,
                    "observations": list(e.observations[:CREATE_OBSERVATIONS]),
                }
                for e in chunk
            ]
        }
    if tool == "create_relations":
        return {"relations": [{"from": f, "to": t, "relationType": k} for f, t, k in chunk]}
    return {
        "observations": [{"entityName": e.name, "contents": list(e.observations[CREATE_OBSERVATIONS:])} for e in chunk]
    }


def _check_write(tool: str, result: dict[str, Any], chunk: Sequence[Any], per_item: int) -> None:
    key = {"create_entities": "entities", "create_relations": "relations", "add_observations": "results"}[tool]
    done = result.get(key)
    if not isinstance(done, list) or len(done) != len(chunk):
        raise BenchError(f"{tool} created {len(done) if isinstance(done, list) else '?'} of {len(chunk)} items")
    if tool == "add_observations" and sum(len(r["addedObservations"]) for r in done) != len(chunk) * per_item:
        raise BenchError("add_observations skipped observations it should have added")


def _count(key: str, result: dict[str, Any]) -> float:
    if key in ("search_observations",):
        return len(result.get("matches", []))
    if key.startswith("path_"):
        return float(result["length"]) if result.get("length") is not None else -1.0
    return len(result.get("entities", []))


def _latency(
    client: StdioClient,
    key: str,
    calls: Sequence[tuple[str, dict[str, Any]]],
    *,
    budget: float,
) -> Op:
    """Run the calls one by one until they are done or `budget` seconds have gone by
    (at least MIN_SAMPLES of them)."""
    times: list[float] = []
    sizes: list[float] = []
    spent = 0.0
    for tool, arguments in calls:
        result, seconds = client.call(tool, arguments)
        times.append(seconds)
        sizes.append(_count(key, result))
        spent += seconds
        if spent > budget and len(times) >= MIN_SAMPLES:
            break
    op = Op(samples=len(times), p50_ms=p50(times) * 1000, p95_ms=p95(times) * 1000)
    if key.startswith("path_"):
        found = [s for s in sizes if s >= 0]
        op.size_mean = statistics.fmean(found) if found else None
        if len(found) != len(sizes):
            op.note = f"{len(sizes) - len(found)} of {len(sizes)} had no path"
    else:
        op.size_mean = statistics.fmean(sizes)
    if len(times) < len(calls):
        op.note = (op.note + "; " if op.note else "") + f"stopped after {len(times)} calls ({budget:.0f} s budget)"
    return op


def workload(queries: Queries) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    return {
        "search_plain": [("search_nodes", {"query": q}) for q in queries.plain],
        "search_plain_limit": [("search_nodes", {"query": q, "limit": 10}) for q in queries.plain],
        "search_required": [("search_nodes", {"query": q}) for q in queries.required_excluded],
        "search_name": [("search_nodes", {"query": q}) for q in queries.name_field],
        "search_fuzzy": [("search_nodes", {"query": q, "fuzzy": True}) for q in queries.fuzzy],
        "search_observations": [("search_observations", {"query": q}) for q in queries.observations],
        "path_connected": [("find_path", {"fromEntity": a, "toEntity": b}) for a, b in queries.path_connected],
        "path_unconnected": [("find_path", {"fromEntity": a, "toEntity": b}) for a, b in queries.path_unconnected],
        "subgraph_1": [("get_subgraph", {"entityNames": [n], "depth": 1}) for n in queries.subgraph],
        "subgraph_2": [("get_subgraph", {"entityNames": [n], "depth": 2}) for n in queries.subgraph],
        "open_nodes": [("open_nodes", {"names": names}) for names in queries.open_names],
    }


def run_system(
    system: System,
    corpus: GraphCorpus,
    queries: Queries,
    args: argparse.Namespace,
    log: IO[bytes],
    progress: Callable[[str], None],
) -> SystemRun:
    run = SystemRun()
    system.reset(corpus.size)
    mirror = Mirror(system.file) if isinstance(system, ServerMemory) else None
    client = StdioClient(system.argv(), system.env(), log)
    try:
        client.initialize()
        _load(
            client,
            corpus,
            run,
            batch=args.batch,
            mirror=mirror,
            cap=args.server_memory_calls,
            progress=progress,
        )
        calls = workload(queries)
        for tool, arguments in calls["search_plain"][-WARMUP_QUERIES:]:
            client.call(tool, arguments)
        for key, todo in calls.items():
            if key not in system.supports:
                continue
            run.ops[key] = _latency(client, key, todo, budget=args.op_budget)
            op = run.ops[key]
            progress(f"  {key}: p50 {op.p50_ms:.2f} ms, p95 {op.p95_ms:.2f} ms over {op.samples}")
        run.rss_mb, _ = rss_mb(client.proc.pid)
        run.store_mb = system.store_mb()
        times, sizes = [], []
        for _ in range(args.read_graph):
            result, seconds = client.call("read_graph", {})
            times.append(seconds)
            sizes.append(len(result["entities"]))
            held = (sum(len(e["observations"]) for e in result["entities"]), len(result["relations"]))
            wanted = (corpus.observation_count, len(corpus.relations))
            if held != wanted and not run.notes:
                run.notes.append(
                    f"read_graph returned {held[0]:,} observations and {held[1]:,} relations, "
                    f"not the {wanted[0]:,} and {wanted[1]:,} loaded"
                )
            del result
        run.ops["read_graph"] = Op(samples=len(times), p50_ms=p50(times) * 1000, size_mean=statistics.fmean(sizes))
        progress(f"  read_graph: {p50(times):.2f} s")
        _, run.peak_rss_mb = rss_mb(client.proc.pid)
    finally:
        client.close()
    return run


# -- the report ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    key: str
    label: str
    unit: str  # "rate", "ms" or "s"
    size_label: str = ""


ROWS = (
    Row("create_entities", "create_entities, 50 a call (entities/s)", "rate"),
    Row("create_relations", "create_relations, 50 a call (relations/s)", "rate"),
    Row("add_observations", "add_observations, 50x2 a call (observations/s)", "rate"),
    Row("search_plain", "search_nodes plain words", "ms", "hits"),
    Row("search_plain_limit", "search_nodes plain words, limit 10", "ms", "hits"),
    Row("search_required", "search_nodes +required -excluded", "ms", "hits"),
    Row("search_name", "search_nodes name:x", "ms", "hits"),
    Row("search_fuzzy", "search_nodes fuzzy, one-letter typo", "ms", "hits"),
    Row("search_observations", "search_observations (limit 10)", "ms", "hits"),
    Row("path_connected", "find_path, connected pairs", "ms", "length"),
    Row("path_unconnected", "find_path, unconnected pairs", "ms", "length"),
    Row("subgraph_1", "get_subgraph depth 1", "ms", "entities"),
    Row("subgraph_2", "get_subgraph depth 2", "ms", "entities"),
    Row("open_nodes", "open_nodes, 5 names", "ms", "entities"),
    Row("read_graph", "read_graph, whole graph (s)", "s", "entities"),
)


@dataclass(frozen=True)
class Target:
    op: str  # "<=" or ">="
    value: float
    field: str  # "rate", "p50_ms" or "value"


# Provisional targets for mnemodb over stdio, for graphs up to 100,000 entities.
TARGETS: dict[str, Target] = {
    "create_entities": Target(">=", 2000.0, "rate"),
    "create_relations": Target(">=", 2000.0, "rate"),
    "add_observations": Target(">=", 4000.0, "rate"),
    "search_plain_limit": Target("<=", 25.0, "p50_ms"),
    "search_required": Target("<=", 50.0, "p50_ms"),
    "search_name": Target("<=", 10.0, "p50_ms"),
    "search_fuzzy": Target("<=", 50.0, "p50_ms"),
    "search_observations": Target("<=", 25.0, "p50_ms"),
    "path_connected": Target("<=", 50.0, "p50_ms"),
    "subgraph_1": Target("<=", 10.0, "p50_ms"),
    "open_nodes": Target("<=", 5.0, "p50_ms"),
}


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "rate":
        return f"{value:,.0f}"
    if unit == "s":
        return f"{value / 1000:.2f}"
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"


def _size(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}" if value < 100 else f"{value:,.0f}"


def render(size: int, runs: dict[str, SystemRun], systems: Sequence[System]) -> tuple[str, list[dict[str, Any]]]:
    header = ["operation", "figure"]
    for system in systems:
        header += [system.title, "n"]
    # Columns by system: mnemodb (SQLite) first unless --no-mnemodb, then PostgreSQL's, then server-memory's.
    names = [system.name for system in systems]
    upstream = names.index("server-memory") if "server-memory" in names else None
    on_pg = names.index("mnemodb_pg") if "mnemodb_pg" in names else None
    if upstream is not None and upstream > 0:
        header.append("speed-up")
    if on_pg is not None:
        header.append("pg/sqlite")
    header += ["target", "status"]
    table: list[list[str]] = []
    verdicts: list[dict[str, Any]] = []
    for row in ROWS:
        figures = ["rate"] if row.unit == "rate" else (["p50_ms"] if row.unit == "s" else ["p50_ms", "p95_ms"])
        if row.size_label:
            figures.append("size_mean")
        for index, attribute in enumerate(figures):
            label = row.label if index == 0 else ""
            name = {"rate": "mean rate", "p50_ms": "p50 (ms)", "p95_ms": "p95 (ms)"}.get(attribute, "")
            if row.unit == "s":
                name = "median (s)" if attribute == "p50_ms" else name
            if attribute == "size_mean":
                name = f"mean {row.size_label}"
            cells = [label, name]
            values: list[float | None] = []
            for system in systems:
                op = runs[system.name].ops.get(row.key) if system.name in runs else None
                if row.key not in system.supports:
                    cells += ["n/a", ""]
                    values.append(None)
                    continue
                value = getattr(op, attribute) if op is not None else None
                values.append(value)
                text = _size(value) if attribute == "size_mean" else _fmt(value, row.unit)
                cells += [text, str(op.samples) if op is not None and index == 0 else ""]
            if upstream is not None and upstream > 0:
                ours, theirs = values[0], values[upstream]
                ratio = ""
                if attribute != "size_mean" and ours and theirs:
                    ratio = f"{(ours / theirs if attribute == 'rate' else theirs / ours):.1f}x"
                cells.append(ratio)
            if on_pg is not None:
                ours, theirs = values[0], values[on_pg]
                cells.append(f"{theirs / ours:.2f}" if attribute != "size_mean" and ours and theirs else "")
            target = TARGETS.get(row.key)
            target_text = status = ""
            if target is not None and target.field == attribute:
                shown = _fmt(target.value, row.unit)
                target_text = f"{target.op} {shown}"
                ours = values[0]
                if ours is None:
                    status = "not measured"
                else:
                    met = ours <= target.value if target.op == "<=" else ours >= target.value
                    status = "met" if met else "NOT MET"
                    verdicts.append(
                        {"size": size, "metric": f"{row.key}.{attribute}", "target": f"{target.op} {target.value}"}
                        | {"value": ours, "met": met}
                    )
            table.append([*cells, target_text, status])
    for label, attribute, fmt in (
        ("server RSS after the queries (MiB)", "rss_mb", "{:.1f}"),
        ("server peak RSS (MiB)", "peak_rss_mb", "{:.1f}"),
        ("store on disk (MiB)", "store_mb", "{:.1f}"),
    ):
        cells = [label, ""]
        for system in systems:
            value = getattr(runs[system.name], attribute) if system.name in runs else None
            cells += ["-" if value is None else fmt.format(value), ""]
        cells += [""] * (len(header) - len(cells) - 2)
        table.append([*cells, "", ""])
    widths = [max(len(r[i]) for r in [header, *table]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        parts = [cells[0].ljust(widths[0]), cells[1].ljust(widths[1])]
        parts += [c.rjust(w) for c, w in zip(cells[2:-1], widths[2:-1], strict=True)]
        parts.append(cells[-1])
        return "  ".join(parts).rstrip()

    out = [line(header), line(["-" * w for w in widths])]
    out += [line(r) for r in table]
    for system in systems:
        run = runs.get(system.name)
        if run is None:
            continue
        for row in ROWS:
            op = run.ops.get(row.key)
            if op is not None and op.note:
                out.append(f"{system.title}, {row.key}: {op.note}")
        out += [f"{system.title}: {note}" for note in run.notes]
    return "\n".join(out), verdicts


# -- driver -------------------------------------------------------------------------------------------


def parse_sizes(text: str) -> list[int]:
    try:
        sizes = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sizes expects comma-separated integers, got {text!r}") from None
    if not sizes or any(s < 100 for s in sizes):
        raise argparse.ArgumentTypeError("--sizes must be at least 100 entities each, e.g. 10000,100000")
    return sizes


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Knowledge-graph benchmark of mnemodb over stdio, optionally next to the official server-memory."
    )
    parser.add_argument("--sizes", type=parse_sizes, default=parse_sizes("10000"), help="entities (default 10000)")
    parser.add_argument("--queries", type=int, default=200, help="timed calls per operation (default 200)")
    parser.add_argument(
        "--op-budget",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help=f"stop an operation's timed calls after this long, once {MIN_SAMPLES} are done (default 30)",
    )
    parser.add_argument("--read-graph", type=int, default=3, help="full read_graph calls, median taken (default 3)")
    parser.add_argument("--batch", type=int, default=50, help="entities/relations per write call (default 50)")
    parser.add_argument("--seed", type=int, default=42, help="corpus and query seed (default 42)")
    parser.add_argument("--vocabulary", type=int, default=4000, help="distinct words in the corpus (default 4000)")
    parser.add_argument(
        "--server-memory",
        default=os.environ.get("SERVER_MEMORY_JS"),
        metavar="PATH",
        help="server-memory's dist/index.js to compare against (default: $SERVER_MEMORY_JS; skipped when unset)",
    )
    parser.add_argument("--node", default="node", help="the node binary for server-memory (default: node on PATH)")
    parser.add_argument(
        "--server-memory-calls",
        type=int,
        default=100,
        metavar="N",
        help="timed server-memory calls per write phase, spread evenly; the other batches are written to its "
        "file directly (default 100; 0: every call)",
    )
    parser.add_argument("--no-mnemodb", action="store_true", help="run server-memory only")
    pg.add_option(parser)
    parser.add_argument("--json", metavar="PATH", help="also write every figure as JSON to PATH")
    parser.add_argument("--workdir", metavar="DIR", help="where the stores go (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the stores and server logs afterwards")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not 1 <= args.batch <= 1000:
        raise SystemExit("--batch must be from 1 to 1000")
    if args.queries < MIN_SAMPLES or args.read_graph < 1:
        raise SystemExit(f"--queries must be at least {MIN_SAMPLES} and --read-graph at least 1")
    if args.server_memory_calls < 0:
        raise SystemExit("--server-memory-calls must be 0 (no cap) or more")
    args.server_memory_calls = args.server_memory_calls or None
    if args.server_memory:
        if not Path(args.server_memory).is_file():
            raise SystemExit(f"--server-memory {args.server_memory} is not a file (give its dist/index.js)")
        if shutil.which(args.node) is None:
            raise SystemExit(f"--node {args.node} not found")
    elif args.no_mnemodb:
        raise SystemExit("--no-mnemodb needs --server-memory")
    if args.no_mnemodb and args.postgresql:
        raise SystemExit("--postgresql measures mnemodb: it does not go with --no-mnemodb")
    try:
        return _run(args)
    except BenchError as exc:
        hint = "" if args.keep else " (run with --keep to look at the servers' log afterwards)"
        print(f"bench_graph: {exc}{hint}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    load_start = os.getloadavg()
    wall_start = time.perf_counter()
    meta: dict[str, Any] = {
        "mnemodb_version": MNEMODB_VERSION,
        "mnemodb_commit": _commit(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "loadavg_start": load_start,
        "sizes": args.sizes,
        "queries": args.queries,
        "op_budget_s": args.op_budget,
        "batch": args.batch,
        "seed": args.seed,
        "vocabulary": args.vocabulary,
        "server_memory_calls": args.server_memory_calls,
    }
    results: dict[int, dict[str, Any]] = {}
    verdicts: list[dict[str, Any]] = []
    with (
        _workdir(args) as workdir,
        open(workdir / "servers.stderr.log", "wb") as log,
        pg.postgres(args.postgresql) as postgres,
    ):
        systems: list[System] = [] if args.no_mnemodb else [Mnemodb(workdir)]
        if postgres is not None:
            meta["postgresql"] = postgres.meta()
            _progress(postgres.describe())
            systems.append(MnemodbPg(workdir, postgres))
        upstream = None
        if args.server_memory:
            upstream = ServerMemory(workdir, args.server_memory, shutil.which(args.node) or args.node)
            systems.append(upstream)
            meta["server_memory_version"] = upstream.version
            meta["node"] = upstream.node_version
        for size in args.sizes:
            _progress(f"{size:,}: generating the corpus")
            corpus = GraphCorpus(size, seed=args.seed, vocabulary=args.vocabulary)
            queries = corpus.queries(args.queries, seed=args.seed * 7 + size)
            shape = {
                "entities": size,
                "hubs": len(corpus.hubs),
                "observations": corpus.observation_count,
                "observation_mib": round(corpus.observation_bytes / MB, 2),
                "relations": len(corpus.relations),
                "isolated": len(corpus.isolated),
                "big_component": len(corpus.giant),
            }
            runs: dict[str, SystemRun] = {}
            for system in systems:
                _progress(f"{size:,}: {system.title}")
                runs[system.name] = run_system(system, corpus, queries, args, log, _progress)
                if system is upstream and upstream is not None and args.server_memory_calls is not None:
                    runs[system.name].notes.append(
                        f"write phases capped at {args.server_memory_calls} timed calls each (it rewrites its "
                        "whole file on every write); the rates are the timed calls' mean"
                    )
            text, found = render(size, runs, systems)
            verdicts += found
            load = os.getloadavg()
            header = (
                f"\n== {size:,} entities: {shape['observations']:,} observations "
                f"({shape['observation_mib']:.1f} MiB of text), {shape['relations']:,} relations; "
                f"{shape['hubs']} hubs, {shape['isolated']:,} isolated, "
                f"{shape['big_component']:,} in the big component =="
            )
            if upstream is None:
                text += "\nserver-memory comparison skipped (no --server-memory PATH or SERVER_MEMORY_JS given)"
            elif not args.no_mnemodb:
                text += "\nspeed-up: server-memory's time (or mnemodb's rate) over the other's; n/a: no such tool"
            if postgres is not None:
                text += "\npg/sqlite: mnemodb's figure on PostgreSQL over its figure on SQLite (a rate or a time)"
            text += f"\nload average now {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
            print(f"{header}\n{text}", flush=True)
            results[size] = {
                "corpus": shape,
                "loadavg": load,
                "systems": {name: asdict(run) for name, run in runs.items()},
            }
    meta["loadavg_end"] = os.getloadavg()
    meta["seconds"] = round(time.perf_counter() - wall_start, 1)
    print(_summary(meta, verdicts, upstream is not None))
    if args.json:
        payload = {"meta": meta, "results": {str(s): r for s, r in results.items()}, "targets": verdicts}
        Path(args.json).write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


def _summary(meta: dict[str, Any], verdicts: list[dict[str, Any]], upstream: bool) -> str:
    met = sum(1 for v in verdicts if v["met"])
    start, end = meta["loadavg_start"], meta["loadavg_end"]
    lines = [
        "",
        "== run ==",
        f"mnemodb {meta['mnemodb_version']}{meta['mnemodb_commit']} (serve --profile knowledge-graph)",
        f"Python {meta['python']}, SQLite {meta['sqlite']}, {meta['cpus']} CPUs",
    ]
    if upstream:
        lines.append(f"server-memory {meta['server_memory_version']} on node {meta['node']}")
    if "postgresql" in meta:
        lines.append(f"{meta['postgresql']['description']}, over loopback TCP")
    lines += [
        f"load average at start {start[0]:.2f} {start[1]:.2f} {start[2]:.2f}, "
        f"at end {end[0]:.2f} {end[1]:.2f} {end[2]:.2f}; {meta['seconds']:.0f} s in all",
        f"targets (mnemodb over stdio, provisional): {met} of {len(verdicts)} met",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
