"""LoCoMo conversational retrieval through mnemodb's engine: Recall@k, NDCG@10 and MRR.

LoCoMo (Maharana et al., ACL 2024) has long two-person conversations split into dated
sessions, and questions about them whose `evidence` names the turns (`dia_id`s such as
`D1:3`) that answer them. The retrieval task, as the data's README defines it: store every
turn of one conversation as one memory, query with each question of categories 1-4
(1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop; 5, adversarial, is left out) and
score the evidence turns among the top k.

How it runs, through the public `Engine` API only:

- one temporary SQLite database (`Engine.open`), with a clock the bench sets: every memory
  is created at its session's date and time (`session_N_date_time`, e.g. "1:56 pm on
  8 May, 2023", read as UTC);
- each conversation in its own scope (a fresh ULID); each session is one
  `store_memories(..., turns=True)` call (`--no-turns`: plain memories), one memory per
  turn, its `dia_id` in the memory's `props`;
- a memory's content is `Speaker: text`, plus ` [shares a photo: caption]` when the turn
  shared an image with a `blip_caption` (`--no-captions` leaves it out), prefixed with the
  session date, `(8 May 2023) `, under `--date-in-text`. The engine stores identical
  content once per scope: should two turns of one conversation read the same, the later
  one gets its dia_id appended, ` (D5:12)`, and the run reports how many did;
- each question is one query in its conversation's scope, with `--method search`
  (`Engine.memories.search(question, scopes=[scope], limit=10)`, the default) or
  `--method items` (`Engine.items.search(question, kinds=["memory"], limit=10,
  scopes=[scope])`, the native face's ranking). The dia_ids are read back from the hits'
  `props`;
- the clock the queries see is set by `--ask-at`: `end` (default) is the start of the
  conversation's last session, as when a user asks right after talking, so the ranking's
  recency bonus favours the last week's turns; `later` is 30 days after it, when no
  memory is recent and the text match alone ranks.

With `--postgresql URL|auto` the whole run (loading, embedding, the questions) is done a
second time on a PostgreSQL schema, and its table is printed below SQLite's with the
differences; `--sweep` runs on SQLite only.

Evidence ids are normalised first: an entry holding several ids (`D8:6; D9:17`) is split,
a stray colon (`D:11:26`) and leading zeros (`D30:05`) are removed; an entry that is no id
(`D`) and an id naming no turn of its conversation are dropped. A question left without
evidence is not scored. The counts of each are printed.

Metrics, per category and over all scored questions, as percentages with one decimal, from
the top 10 of one query (the top 5 is its first five):

- R@5, R@10: the share of the question's evidence turns among the top k, averaged over
  questions;
- All@10: the share of questions with every evidence turn in the top 10;
- NDCG@10: binary relevance, DCG = sum of 1/log2(rank + 1) over the evidence turns in the
  top 10, over the ideal DCG of min(#evidence, 10) relevant turns at the top;
- MRR: 1/rank of the first evidence turn in the top 10, 0 when there is none (MRR@10).

Query latency is the wall time of each engine call, p50 and p95 in ms, after
`WARMUP_QUERIES` untimed queries. The engine records accesses as it would in a server
(a background flush every 0.1 s), so that cost is in the figures.

The data file is given by `--data`; by default `shared/data/locomo/locomo-dev.json` in the
directory that holds this repository. Run `python bench/locomo.py --help` for the options;
see bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pg
from measure import p50, p95
from mnemodb import __version__ as MNEMODB_VERSION
from mnemodb.engine import Engine, Memory, NewMemory
from mnemodb.model.ids import new_ulid
from mnemodb.search.embedders import LOCAL_MODEL, LocalEmbedder
from mnemodb.search.ranking import parse_fusion
from serve_client import ServeProcess

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "data" / "locomo" / "locomo-dev.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
ADVERSARIAL = 5
TOP_K = 10
WARMUP_QUERIES = 10
LATER_DAYS = 30
DAY_MS = 86_400_000
METRICS = ("R@5", "R@10", "All@10", "NDCG@10", "MRR")

_SESSION = re.compile(r"session_(\d+)")
_EVIDENCE_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
_EVIDENCE_SPLIT = re.compile(r"[;,]")


# -- the data ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class Turn:
    dia_id: str
    content: str


@dataclass(slots=True)
class Session:
    number: int
    at_ms: int
    turns: list[Turn]


@dataclass(slots=True)
class Question:
    category: int
    text: str
    evidence: tuple[str, ...]


@dataclass(slots=True)
class Conversation:
    sample_id: str
    sessions: list[Session]
    questions: list[Question]


@dataclass(slots=True)
class DataStats:
    turns: int = 0
    captions: int = 0
    made_unique: int = 0
    adversarial: int = 0
    without_evidence: int = 0
    evidence_entries: int = 0
    evidence_rewritten: int = 0
    evidence_malformed: int = 0
    evidence_missing: int = 0
    examples: list[str] = field(default_factory=list)


def session_time(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' as a UTC datetime."""
    return datetime.strptime(" ".join(text.split()), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def date_prefix(when: datetime) -> str:
    return f"({when.day} {when:%B} {when.year}) "


def turn_text(turn: dict[str, Any], *, captions: bool) -> str:
    text = f"{turn['speaker']}: {turn.get('text', '')}".rstrip()
    caption = turn.get("blip_caption")
    if captions and caption:
        text += f" [shares a photo: {caption}]"
    return text


def normalise_evidence(raw: str) -> list[str] | None:
    """The dia_ids an evidence entry names, in canonical form, or None when it names none."""
    out: list[str] = []
    for piece in _EVIDENCE_SPLIT.split(raw):
        if not piece.strip():
            continue
        match = _EVIDENCE_ID.fullmatch(piece.strip())
        if match is None:
            return None
        out.append(f"D{int(match[1])}:{int(match[2])}")
    return out or None


def load_data(path: Path, *, captions: bool, date_in_text: bool, stats: DataStats) -> list[Conversation]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    conversations: list[Conversation] = []
    for sample in raw:
        conv = sample["conversation"]
        sessions: list[Session] = []
        seen: set[str] = set()
        numbers = sorted(int(m[1]) for key in conv if (m := _SESSION.fullmatch(key)))
        for number in numbers:
            when = session_time(conv[f"session_{number}_date_time"])
            prefix = date_prefix(when) if date_in_text else ""
            turns: list[Turn] = []
            for turn in conv[f"session_{number}"]:
                content = prefix + turn_text(turn, captions=captions)
                if content in seen:
                    # The engine keeps one memory per distinct content in a scope.
                    content += f" ({turn['dia_id']})"
                    stats.made_unique += 1
                seen.add(content)
                turns.append(Turn(turn["dia_id"], content))
                stats.turns += 1
                stats.captions += bool(captions and turn.get("blip_caption"))
            sessions.append(Session(number, int(when.timestamp() * 1000), turns))
        known = {t.dia_id for s in sessions for t in s.turns}
        questions: list[Question] = []
        for qa in sample["qa"]:
            if qa["category"] == ADVERSARIAL:
                stats.adversarial += 1
                continue
            evidence: list[str] = []
            for entry in qa["evidence"]:
                stats.evidence_entries += 1
                ids = normalise_evidence(entry)
                if ids is None:
                    stats.evidence_malformed += 1
                    stats.examples.append(f"{sample['sample_id']} {entry!r}: no id, dropped")
                    continue
                if ids != [entry]:
                    stats.evidence_rewritten += 1
                    stats.examples.append(f"{sample['sample_id']} {entry!r} -> {', '.join(ids)}")
                for dia_id in ids:
                    if dia_id not in known:
                        stats.evidence_missing += 1
                        stats.examples.append(f"{sample['sample_id']} {dia_id!r}: no such turn, dropped")
                    elif dia_id not in evidence:
                        evidence.append(dia_id)
            if not evidence:
                stats.without_evidence += 1
                continue
            questions.append(Question(qa["category"], qa["question"], tuple(evidence)))
        conversations.append(Conversation(sample["sample_id"], sessions, questions))
    return conversations


# -- the engine -------------------------------------------------------------------------------------


class Clock:
    """The engine's clock, in ms: whatever the bench last set."""

    def __init__(self) -> None:
        self.ms = 0

    def __call__(self) -> int:
        return self.ms


def store_all(
    engine: Engine, clock: Clock, conversations: Sequence[Conversation], *, turns: bool
) -> list[tuple[Conversation, str, dict[str, str]]]:
    """Store each conversation in a scope of its own: (conversation, scope, memory id ->
    dia_id) each. The sessions of all conversations are stored in the order of their
    dates: the engine's times never go back (a write is never earlier than the change
    log's last one), so a conversation stored after another that ends later would get
    that one's last date on every memory."""
    scoped: list[tuple[Conversation, str, dict[str, str]]] = [(c, new_ulid(), {}) for c in conversations]
    sessions = sorted(
        ((session.at_ms, index, session) for index, (c, _, _) in enumerate(scoped) for session in c.sessions),
        key=lambda entry: (entry[0], entry[1], entry[2].number),
    )
    for at_ms, index, session in sessions:
        conversation, scope, ids = scoped[index]
        clock.ms = at_ms
        items = [NewMemory(t.content, props={"dia_id": t.dia_id}) for t in session.turns]
        results = engine.memories.store_many(items, scope=scope, turns=turns)
        for turn, result in zip(session.turns, results, strict=True):
            if not result.ok:
                raise SystemExit(f"{conversation.sample_id} {turn.dia_id}: not stored: {result.error}")
            if not result.value.is_new:
                raise SystemExit(f"{conversation.sample_id} {turn.dia_id}: merged into an earlier memory")
            if result.value.memory.created_at != at_ms:
                raise SystemExit(f"{conversation.sample_id} {turn.dia_id}: stored at another time than its session's")
            ids[result.value.memory.id] = turn.dia_id
    return scoped


# A search: (memory id, the dia_id its props hold, if they came back) of the top ten, best first.
Search = Callable[[str, str], list[tuple[str, object]]]


def engine_search(engine: Engine, method: str) -> Search:
    def search(text: str, scope: str) -> list[tuple[str, object]]:
        return [(m.id, m.props.get("dia_id")) for m in query(engine, method, text, scope)]

    return search


class NativeServer:
    """`mnemodb serve` (native profile) over stdio: the same task through the MCP tools a
    client calls, `remember` with `turns: true` and `recall`. The server's clock is the real
    one, so every memory is as new as the run (native `remember` takes no time); the date is
    in the text only under `--date-in-text`."""

    def __init__(self, db: Path | str, embedder: str, weights: str) -> None:
        flags = ["--embedder", embedder, *(["--search-weights", weights] if weights else [])]
        self.server = ServeProcess(db, "native", flags=flags)
        self.server.initialize()

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        reply = self.server.call(tool, arguments)
        result = reply.get("result")
        if not isinstance(result, dict) or result.get("isError") or "structuredContent" not in result:
            raise SystemExit(f"{tool} failed: {reply}")
        content: dict[str, Any] = result["structuredContent"]
        return content

    def store(self, conversation: Conversation, *, turns: bool) -> tuple[str, dict[str, str]]:
        scope = new_ulid()
        ids: dict[str, str] = {}
        for session in conversation.sessions:
            memories = [{"content": t.content, "props": {"dia_id": t.dia_id}} for t in session.turns]
            out = self.call("remember", {"memories": memories, "turns": turns, "scope": scope})
            for turn, stored in zip(session.turns, out["memories"], strict=True):
                if stored.get("status") != "created":
                    raise SystemExit(f"{conversation.sample_id} {turn.dia_id}: {stored}")
                ids[stored["id"]] = turn.dia_id
        return scope, ids

    def wait_embedded(self, count: int, scopes: list[str], timeout_s: float = 1800.0) -> None:
        deadline = time.monotonic() + timeout_s
        while self.call("survey", {"scopes": scopes})["embeddings"] < count:
            if time.monotonic() > deadline:
                raise SystemExit(f"the server embedded fewer than {count} memories in {timeout_s:.0f} s")
            time.sleep(0.5)

    def search(self, text: str, scope: str) -> list[tuple[str, object]]:
        out = self.call("recall", {"query": text, "scopes": [scope], "kinds": ["memory"], "limit": TOP_K})
        return [(item["id"], (item.get("props") or {}).get("dia_id")) for item in out["items"]]

    def close(self) -> None:
        self.server.close()


def ask(
    search: Search,
    clock: Clock,
    scoped: Sequence[tuple[Conversation, str, dict[str, str]]],
    asked_at: dict[str, int],
    by_category: dict[int, list[dict[str, float]]],
    overall: list[dict[str, float]],
    latencies: list[float],
) -> int:
    """Ask every question and score its top ten; the number of hits whose dia_id had to be
    recovered from the bench's own map."""
    unmapped = 0
    for c, scope, ids in scoped:
        clock.ms = asked_at[c.sample_id]
        for q in c.questions:
            t0 = time.perf_counter_ns()
            found = search(q.text, scope)
            latencies.append((time.perf_counter_ns() - t0) / 1e6)
            ranked: list[str | None] = []
            for memory_id, dia_id in found:
                # The engine gives every hit's props; recall's previews leave them out (None).
                if dia_id is not None and ids.get(memory_id) != dia_id:
                    unmapped += 1
                ranked.append(ids.get(memory_id))
            row = scores(ranked, q.evidence)
            by_category[q.category].append(row)
            overall.append(row)
    return unmapped


def query(engine: Engine, method: str, text: str, scope: str) -> list[Memory]:
    if method == "search":
        return [hit.memory for hit in engine.memories.search(text, scopes=[scope], limit=TOP_K)]
    page = engine.items.search(text, kinds=["memory"], limit=TOP_K, scopes=[scope])
    return [f.item for f in page.found if isinstance(f.item, Memory)]


# -- metrics ----------------------------------------------------------------------------------------


def scores(ranked: Sequence[str | None], evidence: Sequence[str]) -> dict[str, float]:
    wanted = set(evidence)
    top = list(ranked[:TOP_K])
    hits = [i for i, dia_id in enumerate(top) if dia_id in wanted]
    dcg = sum(1.0 / math.log2(i + 2) for i in hits)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(wanted), TOP_K)))
    return {
        "R@5": len(wanted.intersection(top[:5])) / len(wanted),
        "R@10": len(wanted.intersection(top)) / len(wanted),
        "All@10": float(wanted <= set(top)),
        "NDCG@10": dcg / ideal,
        "MRR": 1.0 / (hits[0] + 1) if hits else 0.0,
    }


def mean_percent(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    return {m: round(100 * sum(r[m] for r in rows) / len(rows), 1) for m in METRICS}


def table(by_category: dict[int, list[dict[str, float]]], overall: list[dict[str, float]]) -> str:
    head = ["category", "questions", *METRICS]
    rows = [
        [f"{c} {CATEGORIES[c]}", str(len(by_category[c])), *(f"{v:.1f}" for v in mean_percent(by_category[c]).values())]
        for c in CATEGORIES
        if by_category[c]
    ]
    rows.append(["overall", str(len(overall)), *(f"{v:.1f}" for v in mean_percent(overall).values())])
    widths = [max(len(head[i]), *(len(r[i]) for r in rows)) for i in range(len(head))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join([cells[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))])

    return "\n".join([line(head), "  ".join("-" * w for w in widths), *(line(r) for r in rows)])


# -- main -------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description="LoCoMo retrieval (categories 1-4) through mnemodb's engine: every turn a memory, every "
        "question a query in its conversation's scope; R@5, R@10, All@10, NDCG@10 and MRR@10 per category.",
    )
    parser.add_argument(
        "--data",
        type=Path,
        metavar="PATH",
        default=DEFAULT_DATA,
        help="the LoCoMo JSON file (default: shared/data/locomo/locomo-dev.json beside this repository)",
    )
    parser.add_argument(
        "--method",
        choices=("search", "items", "mcp"),
        default="search",
        help="search: Engine.memories.search; items: Engine.items.search(kinds=['memory']); mcp: the native "
        "profile's remember and recall tools, over stdio from `mnemodb serve` (default search)",
    )
    parser.add_argument(
        "--date-in-text", action="store_true", help="prefix every memory with its session date: '(8 May 2023) '"
    )
    parser.add_argument("--no-captions", action="store_true", help="leave shared photos' captions out of the memories")
    parser.add_argument(
        "--no-turns",
        action="store_true",
        help="store each session's turns as separate memories, not as turns of a conversation "
        "(the items method then finds no turn by the words of the one before it)",
    )
    parser.add_argument(
        "--ask-at",
        choices=("end", "later"),
        default="end",
        help=f"the time the queries see: the conversation's last session (end, default) or {LATER_DAYS} days "
        "after it, when no memory gets a recency bonus (later)",
    )
    parser.add_argument(
        "--embedder",
        choices=("none", "local", "local-float", "static"),
        default="none",
        help="local: embed every turn with all-MiniLM-L6-v2 after storing, and search by words and meaning "
        "(implies --method items; default none), int8 on ONNX Runtime where installed; local-float: the float "
        "model in numpy; static: static token vectors distilled from it (bench/static_embedder.py, a candidate "
        "measured against it)",
    )
    parser.add_argument(
        "--search-weights", default="", metavar="NAME=VALUE,...", help="rank fusion weights, e.g. words=1,vector=0.5"
    )
    parser.add_argument(
        "--sweep",
        default="",
        metavar="SETTING;SETTING",
        help="after the main run, ask again under each of these fusion settings and print one line each",
    )
    parser.add_argument(
        "--no-ablation",
        action="store_true",
        help="with --method items, do not ask again without each of the ranking's newer rules "
        "(" + ", ".join(RANKING_RULES) + ") and without all of them (the old ranking)",
    )
    pg.add_option(parser)
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.data.is_file():
        raise SystemExit(f"no data file at {args.data}: pass --data PATH (see bench/README.md)")
    load_start = os.getloadavg()
    wall = time.perf_counter()
    stats = DataStats()
    conversations = load_data(args.data, captions=not args.no_captions, date_in_text=args.date_in_text, stats=stats)
    questions = [q for c in conversations for q in c.questions]
    if len(questions) <= WARMUP_QUERIES:
        raise SystemExit(f"need more than {WARMUP_QUERIES} scored questions")

    clock = Clock()
    runs: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="mnemodb-locomo-") as work, pg.postgres(args.postgresql) as postgres:
        stores = [(f"SQLite {sqlite3.sqlite_version}", str(Path(work) / "locomo.db"))]
        if postgres is not None:
            stores.append((f"{postgres.describe()}, over loopback TCP", postgres.url("locomo")))
        if args.method == "mcp":
            for name, location in stores:
                runs.append(run_mcp(name, location, args, conversations, clock))
        else:
            embedder: Any = None
            if args.embedder in ("local", "local-float"):
                embedder = LocalEmbedder(LOCAL_MODEL if args.embedder == "local-float" else None)
            if args.embedder == "static":
                from static_embedder import StaticMiniLM

                embedder = StaticMiniLM(Path(work) / "static.npy")
            if embedder is not None:
                args.method = "items"
                if hasattr(embedder, "load"):
                    embedder.load()
            for index, (name, location) in enumerate(stores):
                runs.append(run_engine(name, location, args, conversations, clock, embedder, sweep=index == 0))
    return report(args, conversations, questions, stats, runs, load_start, wall)


@dataclass
class Outcome:
    """One store's run: the scores, the query latencies and what loading took."""

    store: str
    by_category: dict[int, list[dict[str, float]]] = field(default_factory=lambda: {c: [] for c in CATEGORIES})
    overall: list[dict[str, float]] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    unmapped: int = 0
    load_s: float = 0.0
    embedded: int = 0
    embed_s: float = 0.0
    # The same questions under the ranking without some of its rules: (label, by category, overall).
    ablations: list[tuple[str, dict[int, list[dict[str, float]]], list[dict[str, float]]]] = field(default_factory=list)


RANKING_RULES = {
    "date": "date_match",
    "author": "author_match",
    "asks": "question_turn",
    "when": "time_told",
    "told": "date_told",
    "sitting": "sitting",
}
"""The ranking's rules added after the retrieval issue's baseline (search.ranking.RankWeights
fields), each reported switched off alone and all together (the old ranking) with
--method items, so a run shows what each buys on its own."""

LATEST_RULES = ("asks", "when")
"""The rules added last, also reported switched off together: the ranking before them."""


def run_mcp(
    name: str, location: str, args: argparse.Namespace, conversations: Sequence[Conversation], clock: Clock
) -> Outcome:
    out = Outcome(name)
    server = NativeServer(location, args.embedder, args.search_weights)
    try:
        started = time.perf_counter()
        scoped = [(c, *server.store(c, turns=not args.no_turns)) for c in conversations]
        out.load_s = time.perf_counter() - started
        if args.embedder == "local":
            out.embedded = sum(len(ids) for _, _, ids in scoped)
            started = time.perf_counter()
            server.wait_embedded(out.embedded, [scope for _, scope, _ in scoped])
            out.embed_s = time.perf_counter() - started
        asked_at = {c.sample_id: 0 for c in conversations}
        for _, scope, q in [(c, scope, q) for c, scope, _ in scoped for q in c.questions][:WARMUP_QUERIES]:
            server.search(q.text, scope)
        out.unmapped = ask(server.search, clock, scoped, asked_at, out.by_category, out.overall, out.latencies)
    finally:
        server.close()
    return out


def run_engine(
    name: str,
    location: str,
    args: argparse.Namespace,
    conversations: Sequence[Conversation],
    clock: Clock,
    embedder: Any,
    *,
    sweep: bool,
) -> Outcome:
    out = Outcome(name)
    engine = Engine.open(location, clock=clock, embedder=embedder, fusion=parse_fusion(args.search_weights))
    try:
        started = time.perf_counter()
        scoped = store_all(engine, clock, conversations, turns=not args.no_turns)
        out.load_s = time.perf_counter() - started
        if embedder is not None:
            started = time.perf_counter()
            out.embedded = engine.embeddings.reindex(batch=128)
            out.embed_s = time.perf_counter() - started
        delay = LATER_DAYS * DAY_MS if args.ask_at == "later" else 0
        asked_at = {c.sample_id: max(s.at_ms for s in c.sessions) + delay for c in conversations}
        warm = [(c, scope, q) for c, scope, _ in scoped for q in c.questions][:WARMUP_QUERIES]
        for c, scope, q in warm:
            clock.ms = asked_at[c.sample_id]
            query(engine, args.method, q.text, scope)
        search = engine_search(engine, args.method)
        out.unmapped = ask(search, clock, scoped, asked_at, out.by_category, out.overall, out.latencies)
        if sweep and args.method == "items" and not args.no_ablation:
            ranked_with = engine.weights
            off_each = [(f"without {name}", {field_name: 0.0}) for name, field_name in RANKING_RULES.items()]
            off_each.append(
                ("without " + " and ".join(LATEST_RULES), {RANKING_RULES[name]: 0.0 for name in LATEST_RULES})
            )
            off_all = (
                "old ranking (none of: " + ", ".join(RANKING_RULES) + ")",
                dict.fromkeys(RANKING_RULES.values(), 0.0),
            )
            for label, zeroed in (*off_each, off_all):
                engine.weights = replace(ranked_with, **zeroed)
                by_category: dict[int, list[dict[str, float]]] = {c: [] for c in CATEGORIES}
                overall: list[dict[str, float]] = []
                ask(search, clock, scoped, asked_at, by_category, overall, [])
                out.ablations.append((label, by_category, overall))
            engine.weights = ranked_with
        settings = filter(None, (s.strip() for s in args.sweep.split(";"))) if sweep else ()
        for setting in settings:
            engine.fusion = parse_fusion(setting)
            swept: dict[int, list[dict[str, float]]] = {c: [] for c in CATEGORIES}
            rows: list[dict[str, float]] = []
            ask(search, clock, scoped, asked_at, swept, rows, [])
            cells = mean_percent(rows)
            per = " ".join(f"{c}:{mean_percent(swept[c])['R@10']:.1f}" for c in CATEGORIES if swept[c])
            print(f"sweep {setting:<36} R@10 {cells['R@10']:.1f} NDCG@10 {cells['NDCG@10']:.1f} by category {per}")
    finally:
        engine.close()
    return out


def report(
    args: argparse.Namespace,
    conversations: Sequence[Conversation],
    questions: Sequence[Question],
    stats: DataStats,
    runs: Sequence[Outcome],
    load_start: tuple[float, float, float],
    wall: float,
) -> int:
    """Print the figures (and write them with --json): SQLite's, then PostgreSQL's when it ran."""
    load_end = os.getloadavg()
    first = runs[0]
    by_category, overall, latencies, unmapped = first.by_category, first.overall, first.latencies, first.unmapped
    load_s, embedded, embed_s = first.load_s, first.embedded, first.embed_s

    counts = Counter(q.category for q in questions)
    print(
        f"== LoCoMo retrieval through mnemodb's {'MCP tools' if args.method == 'mcp' else 'engine'}: "
        f"method {args.method}, date in text "
        f"{'yes' if args.date_in_text else 'no'}, captions {'no' if args.no_captions else 'yes'}, "
        f"turns {'no' if args.no_turns else 'yes'}, asked at {args.ask_at}, embedder {args.embedder} =="
    )
    print(
        f"data: {args.data.name}, {len(conversations)} conversations, "
        f"{sum(len(c.sessions) for c in conversations)} sessions, {stats.turns:,} turns "
        f"({stats.captions} with a photo caption); {stats.made_unique} identical turn texts made unique"
    )
    print(
        "questions scored: "
        + ", ".join(f"{c} {CATEGORIES[c]} {counts[c]}" for c in CATEGORIES)
        + f"; {len(questions)} in all; not scored: {stats.adversarial} adversarial (category {ADVERSARIAL}), "
        f"{stats.without_evidence} without evidence"
    )
    print(
        f"evidence entries: {stats.evidence_entries:,}; {stats.evidence_rewritten} normalised, "
        f"{stats.evidence_malformed} malformed and {stats.evidence_missing} naming no turn dropped"
    )
    for example in stats.examples:
        print(f"  {example}")
    if unmapped:
        print(f"WARNING: {unmapped} hits whose props did not give back the dia_id they were stored with")
    print()
    print(table(by_category, overall))
    print(
        f"R@k, All@10, NDCG@10 (binary) and MRR@10 in %, from the top {TOP_K} of one query per question; "
        "R@5 from the first five of the same list"
    )
    if first.ablations:
        print()
        print("the same questions with rules of the ranking switched off (overall; R@10 by category):")
        ours = mean_percent(overall)
        for label, cats, rows in first.ablations[:-1]:
            cells = mean_percent(rows)
            per = " ".join(f"{c}:{mean_percent(cats[c])['R@10']:.1f}" for c in CATEGORIES if cats[c])
            print(
                f"  {label:<22} R@10 {cells['R@10']:.1f} ({cells['R@10'] - ours['R@10']:+.1f}), "
                f"NDCG@10 {cells['NDCG@10']:.1f} ({cells['NDCG@10'] - ours['NDCG@10']:+.1f}); {per}"
            )
        label, old_by_category, old_overall = first.ablations[-1]
        print()
        print(f"{label}:")
        print(table(old_by_category, old_overall))
    print()
    print(
        f"query latency: p50 {p50(latencies):.2f} ms, p95 {p95(latencies):.2f} ms over {len(latencies)} queries "
        f"(after {WARMUP_QUERIES} warm-up); loading {stats.turns:,} turns took {load_s:.2f} s"
    )
    if embedded:
        print(
            f"embedding: {embedded:,} memories with {args.embedder} in {embed_s:.1f} s "
            f"({embedded / embed_s:.0f} per second); fusion {args.search_weights or 'default'}"
        )
    for other in runs[1:]:
        print()
        print(f"== the same on {other.store} ==")
        if other.unmapped:
            print(f"WARNING: {other.unmapped} hits whose props did not give back the dia_id they were stored with")
        print(table(other.by_category, other.overall))
        ours, theirs = mean_percent(overall), mean_percent(other.overall)
        print("PostgreSQL - SQLite, overall: " + ", ".join(f"{m} {theirs[m] - ours[m]:+.1f}" for m in METRICS))
        print(
            f"query latency: p50 {p50(other.latencies):.2f} ms, p95 {p95(other.latencies):.2f} ms "
            f"(PostgreSQL/SQLite p50 {p50(other.latencies) / p50(latencies):.2f}); loading took {other.load_s:.2f} s"
            + (f"; embedding {other.embed_s:.1f} s" if other.embedded else "")
        )
    print(
        f"mnemodb {MNEMODB_VERSION}, Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"{os.cpu_count()} CPUs; load average {load_start[0]:.2f} at start, {load_end[0]:.2f} at end; "
        f"{time.perf_counter() - wall:.1f} s in all"
    )
    if args.json:
        payload = {
            "overall": mean_percent(overall),
            "by_category": {str(c): mean_percent(by_category[c]) for c in CATEGORIES if by_category[c]},
            "latency_ms": {"p50": round(p50(latencies), 3), "p95": round(p95(latencies), 3)},
            "ablations": {
                label: {
                    "overall": mean_percent(rows),
                    "by_category": {str(c): mean_percent(cats[c]) for c in CATEGORIES if cats[c]},
                }
                for label, cats, rows in first.ablations
            },
            "meta": {
                "data": args.data.name,
                "method": args.method,
                "date_in_text": args.date_in_text,
                "captions": not args.no_captions,
                "stored_as_turns": not args.no_turns,
                "ask_at": args.ask_at,
                "top_k": TOP_K,
                "mrr_cutoff": TOP_K,
                "conversations": len(conversations),
                "turns": stats.turns,
                "made_unique": stats.made_unique,
                "questions": {str(c): counts[c] for c in CATEGORIES},
                "adversarial_excluded": stats.adversarial,
                "without_evidence": stats.without_evidence,
                "evidence": {
                    "entries": stats.evidence_entries,
                    "normalised": stats.evidence_rewritten,
                    "malformed_dropped": stats.evidence_malformed,
                    "missing_dropped": stats.evidence_missing,
                },
                "load_s": round(load_s, 3),
                "embedder": args.embedder,
                "search_weights": args.search_weights,
                "embedded": embedded,
                "embed_s": round(embed_s, 3),
                "mnemodb_version": MNEMODB_VERSION,
                "python": platform.python_version(),
                "sqlite": sqlite3.sqlite_version,
                "loadavg": [load_start, load_end],
            },
        }
        for other in runs[1:]:
            payload["postgresql"] = {
                "store": other.store,
                "overall": mean_percent(other.overall),
                "by_category": {str(c): mean_percent(other.by_category[c]) for c in CATEGORIES if other.by_category[c]},
                "latency_ms": {"p50": round(p50(other.latencies), 3), "p95": round(p95(other.latencies), 3)},
                "load_s": round(other.load_s, 3),
                "embed_s": round(other.embed_s, 3),
            }
        Path(args.json).write_text(json.dumps(payload, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
