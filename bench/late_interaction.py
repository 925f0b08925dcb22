"""Late interaction (MaxSim over all-MiniLM-L6-v2's token vectors) on LoCoMo, as a
re-ranking of the native ranking's first places, fused with it.

The task, the data and the metrics are `locomo.py`'s (every turn a memory, every question
of categories 1-4 a query in its conversation's scope, R@5/R@10/All@10/NDCG@10/MRR@10 per
category), and so is the loading: one engine with the local embedder (int8 on ONNX Runtime
where installed), the turns stored and embedded, the questions asked at the conversation's
last session. Each question is asked twice through `Engine.items.search(kinds=["memory"])`
with a limit of the largest K: by words alone (`semantic=False`) and by words and meaning
(the engine's default fusion). Everything after that is done here, outside the engine:

- every turn and every question is run through the model once for its token vectors
  (`LocalEmbedder.embed_tokens`: the last layer's vector of each token, unit length),
  kept in a cache file (`--cache`) so later runs skip it;
- MaxSim: a candidate's score is the sum over the question's tokens of the best cosine
  over the candidate's tokens. Which of the question's tokens count is a setting: all,
  all but `[CLS]` and `[SEP]`, or also without punctuation. The candidate's tokens are all
  its own (its text, not its context), `[CLS]` and `[SEP]` included;
- the first K places of a ranking (words, or words and meaning) are re-ranked by fusing
  the two orders by reciprocal rank: a candidate at place r of the ranking and place m by
  MaxSim scores 1 / (k + r) + w / (k + m). Places below K stay where they are (they do not
  reach the top 10 for K >= 10).

It prints four tables (words; words and meaning; words and MaxSim; all three) at one
setting (`--setting`), then one line for every setting of the sweep (K, query tokens, w, k)
for both bases, then what it would cost a server: the question's encoding, MaxSim over K
candidates whose token vectors are stored (float32, float16, int8 with a scale per token),
the bytes per memory each way, the same ranking from float16 and int8 vectors, and the
time to encode the K candidates at query time instead.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# MaxSim's products are small (a question's dozen token vectors against 50 candidates' 1,900):
# BLAS threads cost more than they give, most of all on a busy machine (52 ms against 1.9 ms a
# query, measured on two loaded cores), so they run on one thread here, as a server's would.
# Set before numpy is first imported; it holds for the engine's vector search in this process too.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

from locomo import (
    CATEGORIES,
    DEFAULT_DATA,
    Clock,
    Conversation,
    DataStats,
    load_data,
    mean_percent,
    scores,
    store_all,
    table,
)
from measure import p50, p95
from mnemodb import __version__ as MNEMODB_VERSION
from mnemodb.engine import Engine, Memory
from mnemodb.search.embedders import LocalEmbedder
from mnemodb.search.minilm import TokenVectors

Array = np.ndarray[Any, Any]

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CACHE = REPO / "bench" / "out" / "late_interaction"
KS = (30, 50)
QUERY_TOKENS = ("all", "words", "no-punct")
"""all: every token of the question; words: without [CLS] and [SEP]; no-punct: without
those and without punctuation (BERT's: a token that is one punctuation character)."""
WEIGHTS = (0.5, 1.0, 2.0)
RRF_KS = (20.0, 60.0)
COST_QUERIES = 200
AT_QUERY_TIME = 20  # questions whose candidates are encoded at query time: slow, so few


@dataclass(frozen=True, slots=True)
class Setting:
    top: int
    tokens: str
    weight: float
    k: float

    def label(self) -> str:
        return f"K={self.top} query={self.tokens} w={self.weight:g} k={self.k:g}"


def parse_setting(text: str) -> Setting:
    fields = dict(part.split("=", 1) for part in text.split(","))
    return Setting(int(fields["K"]), fields["query"], float(fields["w"]), float(fields["k"]))


# -- token vectors ----------------------------------------------------------------------------------


def cached_tokens(embedder: LocalEmbedder, texts: Sequence[str], cache: Path, what: str) -> dict[str, TokenVectors]:
    """Every text's token vectors, from the cache file when it holds these texts for this model."""
    key = hashlib.sha256("\x00".join([embedder.model, *texts]).encode()).hexdigest()[:16]
    path = cache / f"{what}-{key}.npz"
    if path.is_file():
        with np.load(path) as saved:
            # Each item of an npz file is read from the file again when asked for: read once.
            ids, vectors, offsets = saved["ids"], saved["vectors"], saved["offsets"]
        return {
            text: TokenVectors(ids[a:b], vectors[a:b])
            for text, a, b in zip(texts, offsets[:-1], offsets[1:], strict=True)
        }
    started = time.perf_counter()
    tokens = embedder.embed_tokens(texts)
    print(f"encoded {len(texts):,} {what} for token vectors in {time.perf_counter() - started:.1f} s", flush=True)
    cache.mkdir(parents=True, exist_ok=True)
    offsets = np.cumsum([0, *(len(t.ids) for t in tokens)])
    np.savez(
        path,
        ids=np.concatenate([t.ids for t in tokens]),
        vectors=np.concatenate([t.vectors for t in tokens]),
        offsets=offsets,
    )
    return dict(zip(texts, tokens, strict=True))


def query_rows(tokens: TokenVectors, which: str, drop: set[int], specials: set[int]) -> Array:
    """The question's token vectors that count under `which` (QUERY_TOKENS)."""
    if which == "all":
        return tokens.vectors
    skip = specials if which == "words" else specials | drop
    keep = np.array([int(i) not in skip for i in tokens.ids], dtype=bool)
    if not keep.any():
        return tokens.vectors
    rows: Array = tokens.vectors[keep]
    return rows


def max_sim(query: Array, documents: Sequence[Array]) -> Array:
    """Each document's MaxSim: the sum over the query's rows of the best cosine over the
    document's rows. One product over all documents' rows, then the best per document."""
    stacked = np.concatenate(documents)
    starts = np.cumsum([0, *(len(d) for d in documents[:-1])])
    sims = query @ stacked.T
    best: Array = np.maximum.reduceat(sims, starts, axis=1).sum(axis=0)
    return best


def fused(order: Sequence[str], sims: Array, weight: float, k: float) -> list[str]:
    """`order` re-ranked by reciprocal rank fusion with the order of `sims` (one per item)."""
    by_sim = np.argsort(-sims, kind="stable")
    sim_place = np.empty(len(order), dtype=np.int64)
    sim_place[by_sim] = np.arange(1, len(order) + 1)
    score = [1.0 / (k + place) + weight / (k + int(sim_place[i])) for i, place in enumerate(range(1, len(order) + 1))]
    ranked = sorted(range(len(order)), key=lambda i: -score[i])
    return [order[i] for i in ranked]


# -- int8 storage -----------------------------------------------------------------------------------


def to_int8(vectors: Array) -> tuple[Array, Array]:
    """int8 rows with one float32 scale per row (symmetric): 384 + 4 bytes a token."""
    largest = np.abs(vectors).max(axis=1, keepdims=True)
    scale = np.where(largest > 0, largest / 127.0, 1.0).astype(np.float32)
    return np.rint(vectors / scale).astype(np.int8), scale


def from_int8(values: Array, scale: Array) -> Array:
    rows: Array = values.astype(np.float32) * scale
    return rows


# -- the run ----------------------------------------------------------------------------------------


@dataclass(slots=True)
class Asked:
    """One question: its category and evidence, its text, and the memory contents of the first
    places by words and by words and meaning, best first."""

    number: int
    conversation: int
    category: int
    evidence: tuple[str, ...]
    text: str
    words: list[str]
    hybrid: list[str]


def ask_all(
    engine: Engine, clock: Clock, scoped: Sequence[tuple[Conversation, str, dict[str, str]]], top: int
) -> tuple[list[Asked], list[float], list[float]]:
    asked: list[Asked] = []
    words_ms: list[float] = []
    hybrid_ms: list[float] = []
    for index, (c, scope, _) in enumerate(scoped):
        clock.ms = max(s.at_ms for s in c.sessions)
        for q in c.questions:
            t0 = time.perf_counter_ns()
            words = engine.items.search(q.text, kinds=["memory"], limit=top, scopes=[scope], semantic=False)
            t1 = time.perf_counter_ns()
            hybrid = engine.items.search(q.text, kinds=["memory"], limit=top, scopes=[scope])
            t2 = time.perf_counter_ns()
            words_ms.append((t1 - t0) / 1e6)
            hybrid_ms.append((t2 - t1) / 1e6)
            asked.append(
                Asked(
                    len(asked),
                    index,
                    q.category,
                    q.evidence,
                    q.text,
                    [f.item.content for f in words.found if isinstance(f.item, Memory)],
                    [f.item.content for f in hybrid.found if isinstance(f.item, Memory)],
                )
            )
    return asked, words_ms, hybrid_ms


Ranker = Callable[[Asked], list[str]]


def evaluate(asked: Sequence[Asked], dia_of: dict[str, str], rank: Ranker) -> tuple[dict[int, list[Any]], list[Any]]:
    by_category: dict[int, list[dict[str, float]]] = {c: [] for c in CATEGORIES}
    overall: list[dict[str, float]] = []
    for a in asked:
        row = scores([dia_of[content] for content in rank(a)], a.evidence)
        by_category[a.category].append(row)
        overall.append(row)
    return by_category, overall


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, metavar="PATH", help="the LoCoMo JSON file")
    parser.add_argument("--date-in-text", action="store_true", help="prefix every turn with its session date")
    parser.add_argument(
        "--cache", type=Path, default=DEFAULT_CACHE, metavar="DIR", help="where token vectors are kept between runs"
    )
    parser.add_argument(
        "--setting",
        default="K=30,query=no-punct,w=0.5,k=60",
        metavar="K=..,query=..,w=..,k=..",
        help="the setting of the last two tables (default K=30,query=no-punct,w=0.5,k=60: the sweep's best "
        "on the development split)",
    )
    parser.add_argument("--no-costs", action="store_true", help="skip the timings of what a server would pay")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH")
    args = parser.parse_args(argv)
    chosen = parse_setting(args.setting)
    wall = time.perf_counter()
    load_start = os.getloadavg()

    stats = DataStats()
    conversations = load_data(args.data, captions=True, date_in_text=args.date_in_text, stats=stats)
    embedder = LocalEmbedder()
    embedder.load()
    clock = Clock()
    top = max(*KS, chosen.top)
    with tempfile.TemporaryDirectory(prefix="mnemodb-late-") as work:
        engine = Engine.open(str(Path(work) / "locomo.db"), clock=clock, embedder=embedder)
        try:
            scoped = store_all(engine, clock, conversations, turns=True)
            engine.embeddings.reindex(batch=128)
            asked, words_ms, hybrid_ms = ask_all(engine, clock, scoped, top)
        finally:
            engine.close()
    dia_of = {t.content: t.dia_id for c in conversations for s in c.sessions for t in s.turns}
    turns = list(dia_of)
    questions = list(dict.fromkeys(a.text for a in asked))
    turn_tokens = cached_tokens(embedder, turns, args.cache, "turns")
    question_tokens = cached_tokens(embedder, questions, args.cache, "questions")

    tokenizer = embedder._encoder.tokenizer
    specials = {tokenizer.first, tokenizer.last}
    punctuation = {i for token, i in tokenizer.vocab.items() if len(token) == 1 and not token.isalnum()}
    queries = {
        (text, which): query_rows(question_tokens[text], which, punctuation, specials)
        for text in questions
        for which in QUERY_TOKENS
    }
    # MaxSim of every turn of the question's conversation, once per question-token setting:
    # the first places of both bases are looked up in it, and its own order is the ranking
    # by MaxSim alone over the whole conversation.
    in_conversation = [[t.content for s in c.sessions for t in s.turns] for c in conversations]
    stacked = [np.concatenate([turn_tokens[t].vectors for t in contents]) for contents in in_conversation]
    starts = [np.cumsum([0, *(len(turn_tokens[t].ids) for t in contents[:-1])]) for contents in in_conversation]
    sims: list[dict[str, dict[str, float]]] = []
    whole: list[dict[str, list[str]]] = []
    for a in asked:
        contents = in_conversation[a.conversation]
        sims.append({})
        whole.append({})
        for which in QUERY_TOKENS:
            best = queries[(a.text, which)] @ stacked[a.conversation].T
            values = np.maximum.reduceat(best, starts[a.conversation], axis=1).sum(axis=0)
            sims[-1][which] = dict(zip(contents, values.tolist(), strict=True))
            whole[-1][which] = [contents[i] for i in np.argsort(-values, kind="stable")]

    def reranked(base: str, setting: Setting) -> Ranker:
        def rank(a: Asked) -> list[str]:
            order = a.words if base == "words" else a.hybrid
            head = order[: setting.top]
            values = sims[a.number][setting.tokens]
            return fused(head, np.array([values[c] for c in head]), setting.weight, setting.k)

        return rank

    def with_whole(base: str, setting: Setting) -> Ranker:
        """The base's first K places fused with the first `top` places of MaxSim over the
        whole conversation (setting.top is the latter here), by reciprocal rank."""

        def rank(a: Asked) -> list[str]:
            order = (a.words if base == "words" else a.hybrid)[: max(KS)]
            score: dict[str, float] = {}
            for place, content in enumerate(order, 1):
                score[content] = 1.0 / (setting.k + place)
            for place, content in enumerate(whole[a.number][setting.tokens][: setting.top], 1):
                score[content] = score.get(content, 0.0) + setting.weight / (setting.k + place)
            return sorted(score, key=lambda c: -score[c])

        return rank

    def plain(base: str) -> Ranker:
        return lambda a: a.words if base == "words" else a.hybrid

    print(
        f"== late interaction on LoCoMo: {args.data.name}, {len(conversations)} conversations, "
        f"{stats.turns:,} turns, {len(asked)} questions, model {embedder.model}, date in text "
        f"{'yes' if args.date_in_text else 'no'} =="
    )
    results: dict[str, Any] = {"tables": {}, "sweep": [], "costs": {}}
    variants = [
        ("words", plain("words")),
        ("words + vector (the engine's fusion)", plain("hybrid")),
        (f"words + MaxSim ({chosen.label()})", reranked("words", chosen)),
        (f"words + vector + MaxSim ({chosen.label()})", reranked("hybrid", chosen)),
    ]
    for label, rank in variants:
        by_category, overall = evaluate(asked, dia_of, rank)
        print()
        print(label, flush=True)
        print(table(by_category, overall))
        results["tables"][label] = {
            "overall": mean_percent(overall),
            "by_category": {str(c): mean_percent(by_category[c]) for c in CATEGORIES},
        }

    print()
    print("sweep (every setting tried; overall R@10 / NDCG@10, then R@10 by category):")
    references = {base: mean_percent(evaluate(asked, dia_of, plain(base))[1]) for base in ("words", "hybrid")}
    for base in ("words", "hybrid"):
        ref = references[base]
        print(f"  base {base}: R@10 {ref['R@10']:.1f} NDCG@10 {ref['NDCG@10']:.1f}")
        for top_k, which in itertools.product(KS, QUERY_TOKENS):
            # MaxSim alone over the first K places: the fusion's other end.
            alone = Setting(top_k, which, 1e6, 0.0)
            runs = [("MaxSim alone", alone)] + [
                (f"w={w:g} k={k:g}", Setting(top_k, which, w, k)) for w, k in itertools.product(WEIGHTS, RRF_KS)
            ]
            for name, setting in runs:
                cats, rows = evaluate(asked, dia_of, reranked(base, setting))
                cells = mean_percent(rows)
                per = " ".join(f"{c}:{mean_percent(cats[c])['R@10']:.1f}" for c in CATEGORIES)
                print(
                    f"  {base:<6} K={top_k} query={which:<8} {name:<13} R@10 {cells['R@10']:.1f} "
                    f"({cells['R@10'] - ref['R@10']:+.1f}) NDCG@10 {cells['NDCG@10']:.1f} "
                    f"({cells['NDCG@10'] - ref['NDCG@10']:+.1f}) MRR {cells['MRR']:.1f}; {per}"
                )
                results["sweep"].append(
                    {
                        "base": base,
                        "K": top_k,
                        "query": which,
                        "fusion": name,
                        "overall": cells,
                        "R@10_by_category": {str(c): mean_percent(cats[c])["R@10"] for c in CATEGORIES},
                    }
                )

    print()
    print("the evidence within reach of a re-ranking: R@K of each base (overall; by category)")
    for base in ("words", "hybrid"):
        for top_k in KS:
            reach = [
                len(set(a.evidence) & {dia_of[c] for c in (a.words if base == "words" else a.hybrid)[:top_k]})
                / len(a.evidence)
                for a in asked
            ]
            per = " ".join(
                f"{c}:{100 * np.mean([r for r, a in zip(reach, asked, strict=True) if a.category == c]):.1f}"
                for c in CATEGORIES
            )
            print(f"  {base:<6} R@{top_k} {100 * np.mean(reach):.1f}; {per}")
            results[f"reach_{base}_R@{top_k}"] = round(100 * float(np.mean(reach)), 1)

    print()
    print(
        f"MaxSim over every turn of the conversation (not only the first places), its first N fused with the "
        f"base's first {max(KS)} (sweep as above):"
    )
    for base in ("words", "hybrid"):
        ref = references[base]
        for which in QUERY_TOKENS:
            whole_runs = [("MaxSim alone", Setting(10, which, 1e6, 0.0))]
            whole_runs += [
                (f"N={n} w={w:g} k={k:g}", Setting(n, which, w, k))
                for n, w, k in itertools.product((10, 50), WEIGHTS[:2], RRF_KS)
            ]
            for name, setting in whole_runs:
                cats, rows = evaluate(asked, dia_of, with_whole(base, setting))
                cells = mean_percent(rows)
                per = " ".join(f"{c}:{mean_percent(cats[c])['R@10']:.1f}" for c in CATEGORIES)
                print(
                    f"  {base:<6} query={which:<8} {name:<16} R@10 {cells['R@10']:.1f} "
                    f"({cells['R@10'] - ref['R@10']:+.1f}) NDCG@10 {cells['NDCG@10']:.1f} "
                    f"({cells['NDCG@10'] - ref['NDCG@10']:+.1f}) MRR {cells['MRR']:.1f}; {per}",
                    flush=True,
                )
                results["sweep"].append(
                    {
                        "base": base,
                        "K": "whole conversation",
                        "query": which,
                        "fusion": name,
                        "overall": cells,
                        "R@10_by_category": {str(c): mean_percent(cats[c])["R@10"] for c in CATEGORIES},
                    }
                )

    if not args.no_costs:
        results["costs"] = costs(embedder, asked, turn_tokens, queries, chosen, dia_of, (stacked[0], starts[0]))
    results["latency_ms"] = {
        "words_p50": round(p50(words_ms), 3),
        "hybrid_p50": round(p50(hybrid_ms), 3),
        "limit": top,
    }
    load_end = os.getloadavg()
    print()
    print(
        f"engine search with limit {top}: words p50 {p50(words_ms):.2f} ms, words and meaning p50 "
        f"{p50(hybrid_ms):.2f} ms"
    )
    print(
        f"mnemodb {MNEMODB_VERSION}, Python {platform.python_version()}, {os.cpu_count()} CPUs; load average "
        f"{load_start[0]:.2f} at start, {load_end[0]:.2f} at end; {time.perf_counter() - wall:.1f} s in all"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


def costs(
    embedder: LocalEmbedder,
    asked: Sequence[Asked],
    turn_tokens: dict[str, TokenVectors],
    queries: dict[tuple[str, str], Array],
    chosen: Setting,
    dia_of: dict[str, str],
    conversation: tuple[Array, Array],
) -> dict[str, Any]:
    """What a server would pay per query and per memory, and whether compact storage
    changes the ranking."""
    out: dict[str, Any] = {}
    sample = asked[:: max(1, len(asked) // COST_QUERIES)][:COST_QUERIES]
    print()
    print(f"costs ({len(sample)} questions; p50 / p95 in ms):")
    encode_ms: list[float] = []
    for a in sample:
        t0 = time.perf_counter_ns()
        embedder.embed_tokens([a.text])
        encode_ms.append((time.perf_counter_ns() - t0) / 1e6)
    # The question's pooled vector, which the engine's fusion computes today, under the same
    # load: both come from one forward pass, so a server would pay for it once.
    pooled_ms: list[float] = []
    for a in sample:
        t0 = time.perf_counter_ns()
        embedder.embed([a.text])
        pooled_ms.append((time.perf_counter_ns() - t0) / 1e6)
    print(
        f"  question's token vectors: {p50(encode_ms):.2f} / {p95(encode_ms):.2f} "
        f"(its pooled vector, as the engine's fusion gets it: {p50(pooled_ms):.2f} / {p95(pooled_ms):.2f})"
    )
    out["encode_query_ms"] = {"p50": round(p50(encode_ms), 3), "p95": round(p95(encode_ms), 3)}
    out["encode_query_pooled_ms"] = {"p50": round(p50(pooled_ms), 3), "p95": round(p95(pooled_ms), 3)}

    counts = np.array([len(t.ids) for t in turn_tokens.values()])
    width = next(iter(turn_tokens.values())).vectors.shape[1]
    per_memory = {"float32": 4 * width, "float16": 2 * width, "int8": width + 4}
    print(
        f"  tokens per memory: mean {counts.mean():.1f}, p50 {np.median(counts):.0f}, max {counts.max()} "
        f"([CLS] and [SEP] included)"
    )
    out["tokens_per_memory"] = {"mean": round(float(counts.mean()), 1), "max": int(counts.max())}
    out["bytes_per_memory"] = {}
    for kind, per_token in per_memory.items():
        size = per_token * counts.mean()
        print(f"  {kind}: {per_token} bytes a token, {size:,.0f} bytes a memory on average")
        out["bytes_per_memory"][kind] = round(float(size))

    halves = {text: t.vectors.astype(np.float16) for text, t in turn_tokens.items()}
    bytes8 = {text: to_int8(t.vectors) for text, t in turn_tokens.items()}
    for top_k in KS:
        timings: dict[str, list[float]] = {"float32": [], "float16": [], "int8": []}
        for a in sample:
            head = a.hybrid[:top_k]
            query = queries[(a.text, chosen.tokens)]
            for kind, spent in timings.items():
                t0 = time.perf_counter_ns()
                if kind == "float32":
                    documents = [turn_tokens[c].vectors for c in head]
                elif kind == "float16":
                    documents = [halves[c].astype(np.float32) for c in head]
                else:
                    documents = [from_int8(*bytes8[c]) for c in head]
                fused(head, max_sim(query, documents), chosen.weight, chosen.k)
                spent.append((time.perf_counter_ns() - t0) / 1e6)
        line = ", ".join(f"{kind} {p50(ms):.2f} / {p95(ms):.2f}" for kind, ms in timings.items())
        print(f"  MaxSim and fusion over K={top_k} stored candidates: {line}")
        out[f"maxsim_K{top_k}_ms"] = {kind: round(p50(ms), 3) for kind, ms in timings.items()}

    # MaxSim over every turn of one conversation, float32, as the whole-conversation variant needs.
    rows_of, starts_of = conversation
    spent = []
    for a in sample:
        if a.conversation:
            continue
        t0 = time.perf_counter_ns()
        best = queries[(a.text, chosen.tokens)] @ rows_of.T
        np.argsort(-np.maximum.reduceat(best, starts_of, axis=1).sum(axis=0))
        spent.append((time.perf_counter_ns() - t0) / 1e6)
    print(
        f"  MaxSim over a whole conversation ({len(starts_of)} turns, {len(rows_of):,} token vectors): "
        f"{p50(spent):.2f} / {p95(spent):.2f}"
    )
    out["maxsim_whole_conversation_ms"] = {"turns": len(starts_of), "p50": round(p50(spent), 3)}

    # The ranking from vectors stored compactly: the same setting, the same questions.
    for kind in ("float16", "int8"):
        stored = {
            text: (halves[text].astype(np.float32) if kind == "float16" else from_int8(*bytes8[text]))
            for text in turn_tokens
        }
        rows: list[dict[str, float]] = []
        for a in asked:
            head = a.hybrid[: chosen.top]
            values = max_sim(queries[(a.text, chosen.tokens)], [stored[c] for c in head])
            rows.append(scores([dia_of[c] for c in fused(head, values, chosen.weight, chosen.k)], a.evidence))
        cells = mean_percent(rows)
        print(f"  words + vector + MaxSim from {kind} vectors: R@10 {cells['R@10']:.1f} NDCG@10 {cells['NDCG@10']:.1f}")
        out[f"ranking_from_{kind}"] = cells

    for top_k in KS:
        ms: list[float] = []
        for a in sample[:AT_QUERY_TIME]:
            head = a.hybrid[:top_k]
            t0 = time.perf_counter_ns()
            encoded = embedder.embed_tokens([a.text, *head])
            max_sim(encoded[0].vectors, [t.vectors for t in encoded[1:]])
            ms.append((time.perf_counter_ns() - t0) / 1e6)
        print(
            f"  candidates encoded at query time, K={top_k}: {p50(ms):.1f} / {p95(ms):.1f} ({AT_QUERY_TIME} questions)"
        )
        out[f"encode_at_query_K{top_k}_ms"] = {"p50": round(p50(ms), 1), "p95": round(p95(ms), 1)}
    return out


if __name__ == "__main__":
    sys.exit(main())
