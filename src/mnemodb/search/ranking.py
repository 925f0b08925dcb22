"""How a memory's relevance to a query is scored.

relevance = (match x importance factor + recency bonus + date bonus) x author factor
x question factor x time factor + sitting share, in [0, (1 + recency_max +
max(date_match, date_told)) x (1 + author_match) x (1 + time_told) x (1 + sitting)]:

- match, in [0, 1]: the text match relative to the best one in the result set
  (score / best score, so the best text match scores 1 and better matches always score
  higher), raised halfway towards 1 when a tag equals a query term; a tag-only hit
  scores `tag_match`.
- importance factor: `importance_floor` for importance 0 up to 1 for importance 10,
  so importance orders otherwise similar matches without burying a strong match.
- recency: `recency_max` for a memory written now, falling linearly to 0 at
  `recency_days`.
- date: `date_match` for a memory written in the time the query names ("in July 2022",
  "on 9 November, 2022", "last week"; see `search.dates`), else 0. The text says what,
  the creation time says when, and a question naming both wants the memory that has
  both. It is added, not a raise of the match towards 1 as a tag's is: the best text
  matches all have match 1, and a raise could not tell the one written then among them
  (LoCoMo dev: R@10 73.1 -> 74.1 as a raise, 74.6 added; 0.25, 0.5 and 1.0 added give
  74.5, 74.6 and 74.1).

author: among the `AUTHOR_POOL` best, a memory whose opening label names a person the
query names ("Melanie: ..." for "What has Melanie painted?", see `search.analyzer.author`)
has its relevance raised by `author_match` of itself (x 1.5). In a transcript, the words
after the label are that person's own: a question about someone wants what they said
and did, and the turns of the others that merely address them by name ("Wow, Melanie!")
say little about them. A name is a rare word in a note but a common one in a
conversation between two people, so the text match alone hardly tells these apart.
It is a factor, not a term added, so that it orders the author's turns among matches of
the same strength and does not lift a weak match over a strong one. LoCoMo dev, items:
R@10 74.6 -> 76.4, NDCG@10 57.5 -> 62.4, better in each of the five conversations and
every category (x1.1, x1.2, x1.3 gave R@10 75.5, 75.7, 76.4 and NDCG 60.3, 61.4, 62.1).

question: among the same first places, a memory whose text ends by asking ("Caroline: Did
you see that band?", see `search.analyzer.asks`) has its relevance lowered by
`question_turn` of itself (x 0.8). A question in a transcript repeats the words of what
it wants to know, as the question asked of the memory does, but it holds no answer: the
answer is in the turns that reply to it, which find its words in their context.

time: when the query asks for a time ("When did ...?", "How long ...?", see
`search.dates.asks_when`), a memory among the first places whose text says when
("yesterday", "last week", "in May", see `search.dates.tells_time`) has its relevance
raised by `time_told` of itself (x 1.2): the turn that tells of an event with its time is
the one that can answer when it happened; the others only talk about it.

Both are factors, as the author's is, for the same reason: they order matches of like
strength and do not lift a weak match over a strong one. LoCoMo dev, items: R@10 76.4 ->
77.2 and NDCG@10 62.4 -> 63.6 with both, up in every category. The question rule alone:
77.4 / 63.0 (x0.9, x0.7, x0.6, x0.5 gave 77.0 / 62.8, 77.5 / 62.4, 76.5 / 61.5 and
75.5 / 60.6). The time rule alone: 76.5 / 62.9, temporal NDCG@10 74.4 -> 76.6 (x1.4 and
x1.7 gave the same overall and temporal 76.7 and 77.0; x1.4 with the question rule
77.3 / 63.7). Reading when a turn was written is the date rule's; this one reads what it
says.

told: when the query names a time, a memory among the first places that was not written
in it but whose text, read at the time it was written, names a time within it ("last
month" in a turn of 18 April 2023, for "in March 2023"; see `search.dates.named_span`)
gets `date_told` added, as a memory written then gets `date_match`: people tell of an
event after it, in words relative to when they speak, and the date rule's week after the
named time does not reach a "last month" said weeks later. A memory written in the time
gets the date bonus only, not both. LoCoMo dev, items: R@10 77.2 -> 77.3, NDCG@10 63.6
-> 63.7 (single-hop 87.4 / 70.9 -> 87.6 / 71.1, temporal NDCG@10 76.7 -> 76.8, the
others unchanged); of the 96 questions naming a time, 13 evidence turns were written
outside it, and 6 of those say when relative to their own time, so the most it can do
on this split is small.

sitting: among the same first places, once the rules above have scored them, a memory
gets `sitting` times the mean of the three best scores among the first places written
within half an hour of it (its own included: a sitting of fewer than three counts the
missing ones as 0) added, when the first places come from more than one such half hour.
A conversation or a working session about a subject leaves several memories; when the
question's words find several of one sitting, that sitting is about the subject, and its
memories are likelier to hold the answer than a memory that says the same words once in
passing. It is the passage ranking's long-known use of the whole document's score, with
the time a memory was written standing for the document, which a memory store always
has. When every first place was written in one half hour (a store filled at once, an
import), all of them would get the same, and none is given. It is added, as a share of
scores, after the factors: it adds at most `sitting` of the best score near a memory
(a fifth), enough to put a memory of a sitting that matches above one alone in its half
hour matching as well, not to lift a weak match over a strong one. LoCoMo dev, items: R@10 77.3 ->
78.0, NDCG@10 63.7 -> 64.0 (multi-hop R@10 47.9 -> 48.6, temporal 87.2 -> 87.4,
open-domain 39.2 as it was, single-hop 87.6 -> 88.6; temporal NDCG@10 76.8 -> 76.5); a
share of 0.1, 0.15, 0.25 and 0.3 gave 77.7 / 63.9, 77.9 / 64.0, 77.8 / 63.9 and 77.8 /
63.9, and the mean of the best two, three or five was within 0.3 of R@10 of each other
(an outside prototype). With the local model's meaning fused in, 77.9 / 63.9 -> 78.5 /
64.0 (multi-hop R@10 49.7 -> 48.8). The rule reads the first places the other rules read, so a search that needs only
the first page reads on until those are the whole pool's (`items._settled`), unless
every memory of the scopes was written within one half hour.

"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from mnemodb.model.value import Value
from mnemodb.store.base import EntityFieldWeights, MemoryFieldWeights

DAY_MS = 86_400_000


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class RankWeights(Value):
    tag_match: float = 0.5
    date_match: float = 0.5
    importance_floor: float = 0.75
    recency_max: float = 0.15
    recency_days: float = 7.0
    author_match: float = 0.5
    question_turn: float = 0.2
    time_told: float = 0.2
    date_told: float = 0.5
    sitting: float = 0.2


DEFAULT_WEIGHTS = RankWeights()

AUTHOR_POOL = 50
"""How many of a memory ranking's first places are read for their text (the author label,
a question at the end, a time told): the rules lift a turn by at most 1.5 x 1.2, so one
below the first 50 by words seldom reaches the first 10, and reading 50 rows costs well
under a millisecond."""

SITTING_MS = 30 * 60 * 1000
"""How close in time two memories are written for the sitting rule to count them together
(`RankWeights.sitting`): half an hour either way, the gap the turn context already takes
for one conversation (`store`'s turns)."""

SITTING_BEST = 3
"""How many of a sitting's best scores the sitting rule averages: the best alone would be
every memory's own in a sitting it leads; three ask that the sitting match more than once."""

MEMORY_FIELD_WEIGHTS = MemoryFieldWeights(content=1.0, summary=1.0, context=0.5)
"""A word in a memory's turn context (the turns before it) counts half of one in its own
text: 0.5 gave the best NDCG@10 on the LoCoMo development split (1.0 and 0.3 lost), and
still does with the ranking's later rules (words alone, R@10 / NDCG@10: 0.3 76.0 / 62.4,
0.4 77.1 / 63.5, 0.5 77.3 / 63.7, 0.6 77.2 / 63.6, 0.7 76.9 / 62.9)."""

ENTITY_FIELD_WEIGHTS = EntityFieldWeights(name=4.0, entity_type=1.5, observations=1.0)
"""A word in an entity's name counts four times one in its observations, and in its type
one and a half times: a question names the entity it is about."""


def sitting_means(scored: Sequence[tuple[int, float]], created: Mapping[int, int]) -> dict[int, float] | None:
    """The sitting rule's measure (`RankWeights.sitting`) of each (pk, score) of `scored`:
    the mean of the `SITTING_BEST` best scores among `scored` written within `SITTING_MS`
    of it, its own included (fewer count the missing ones as 0); `created` holds when each
    was written. None when all of them were written within `SITTING_MS` of each other: the
    measure would be the same for every one."""
    if not scored:
        return None
    times = [created[pk] for pk, _ in scored]
    if max(times) - min(times) <= SITTING_MS:
        return None
    # By time, each memory's sitting is a run of neighbours: two pointers bound it.
    order = sorted(range(len(scored)), key=times.__getitem__)
    ordered_times = [times[i] for i in order]
    ordered_scores = [scored[i][1] for i in order]
    means: dict[int, float] = {}
    first = last = 0
    for place, index in enumerate(order):
        at = ordered_times[place]
        while ordered_times[first] < at - SITTING_MS:
            first += 1
        while last < len(order) and ordered_times[last] <= at + SITTING_MS:
            last += 1
        best = heapq.nlargest(SITTING_BEST, ordered_scores[first:last])
        means[scored[index][0]] = sum(best) / SITTING_BEST
    return means


def text_strengths(scores: Mapping[int, float]) -> dict[int, float]:
    """Text-search scores (higher is better, on the store's own scale) as strengths in
    (0, 1], the best one 1."""
    if not scores:
        return {}
    best = max(scores.values())
    if best <= 0:
        return dict.fromkeys(scores, 1.0)
    return {pk: v / best for pk, v in scores.items()}


def relevance(
    text: float,
    tag_hit: bool,
    importance: int,
    created_at: int,
    now: int,
    weights: RankWeights = DEFAULT_WEIGHTS,
    dated: bool | None = None,
) -> tuple[float, dict[str, float]]:
    """The relevance of one candidate and the parts it is made of. `dated`: whether the
    memory was written in the time the query names (None: the query names none)."""
    match = text + (1.0 - text) * weights.tag_match if tag_hit else text
    factor = weights.importance_floor + (1.0 - weights.importance_floor) * max(0, min(10, importance)) / 10
    age_days = max(0.0, (now - created_at) / DAY_MS)
    recency = max(0.0, (weights.recency_days - age_days) / weights.recency_days) * weights.recency_max
    score = match * factor + recency + (weights.date_match if dated else 0.0)
    parts = {"text": text, "tag": 1.0 if tag_hit else 0.0, "importance": factor, "recency": recency}
    if dated is not None:
        parts["date"] = 1.0 if dated else 0.0
    return score, parts


def relevance_scorer(
    now: int, weights: RankWeights = DEFAULT_WEIGHTS
) -> Callable[[float, bool, int, int, bool], float]:
    """`relevance`'s score alone, as a function of (text, tag_hit, importance, created_at,
    dated), for scoring many candidates at one time `now`: the same arithmetic, without
    the parts."""
    floor, tag_match, date_match = weights.importance_floor, weights.tag_match, weights.date_match
    days, most = weights.recency_days, weights.recency_max
    factors = [floor + (1.0 - floor) * importance / 10 for importance in range(11)]

    def score(text: float, tag_hit: bool, importance: int, created_at: int, dated: bool = False) -> float:
        # `x if x > 0.0 else 0.0` is `max(0.0, x)` (NaN and -0.0 included), and the index
        # `max(0, min(10, importance))`, without the builtins' calls: a search scores a
        # few dozen candidates, and the three calls were a third of each score's cost.
        match = text + (1.0 - text) * tag_match if tag_hit else text
        age_days = (now - created_at) / DAY_MS
        fresh = (days - (age_days if age_days > 0.0 else 0.0)) / days
        bonus = date_match if dated else 0.0
        factor = factors[importance if 0 <= importance <= 10 else (0 if importance < 0 else 10)]
        return match * factor + (fresh if fresh > 0.0 else 0.0) * most + bonus

    return score


class Scored(Protocol):
    """What a memory's relevance is computed from, besides its match."""

    @property
    def importance(self) -> int: ...

    @property
    def created_at(self) -> int: ...


def relevances(
    matches: Mapping[int, float], rows: Mapping[int, Scored], now: int, weights: RankWeights = DEFAULT_WEIGHTS
) -> dict[int, float]:
    """`relevance_scorer`'s score of each of `rows` (pk -> its importance and creation
    time) whose match is in `matches` (its text strength, raised by a tag as `relevance`
    raises it), with no query date: the same arithmetic in the same order, so the same
    floats, without a call per candidate."""
    floor, days, most = weights.importance_floor, weights.recency_days, weights.recency_max
    factors = [floor + (1.0 - floor) * importance / 10 for importance in range(11)]
    out: dict[int, float] = {}
    # `x if x > 0.0 else 0.0` is `max(0.0, x)` (NaN and -0.0 included) without a call, and
    # the index `max(0, min(10, importance))`.
    for pk, row in rows.items():
        match = matches.get(pk)
        if match is None:
            continue
        importance = row.importance
        age = (now - row.created_at) / DAY_MS
        fresh = (days - (age if age > 0.0 else 0.0)) / days
        out[pk] = (
            match * factors[importance if 0 <= importance <= 10 else (0 if importance < 0 else 10)]
            + (fresh if fresh > 0.0 else 0.0) * most
            + 0.0
        )
    return out


def within_reach(
    matches: Mapping[int, float],
    limit: int,
    now: int,
    most_important: int,
    oldest: int,
    newest: int,
    weights: RankWeights = DEFAULT_WEIGHTS,
) -> list[int]:
    """The candidates, of `matches` (pk -> match: the text strength, raised by a tag as
    `relevance` raises it), that can be among the `limit` most relevant when each one's
    importance is from 0 to `most_important` and its creation time from `oldest` to
    `newest` (no query date), in the order given.

    A candidate is left out when even its highest possible relevance is below the lowest
    possible relevance of `limit` others: those are all more relevant than it, whatever
    its importance, its age and the tie-break. The bounds are `relevance_scorer`'s own
    arithmetic at the ends of those ranges: each of its steps is monotonic in its inputs
    (floating point rounding included), so no candidate's score falls outside them."""
    if len(matches) <= limit:
        return list(matches)
    floor, days, most = weights.importance_floor, weights.recency_days, weights.recency_max
    ends = [floor + (1.0 - floor) * importance / 10 for importance in (0, max(0, min(10, most_important)))]
    low_factor, high_factor = min(ends), max(ends)
    recencies = [max(0.0, (days - max(0.0, (now - at) / DAY_MS)) / days) * most for at in (oldest, newest)]
    low_recency, high_recency = min(recencies), max(recencies)
    if low_factor >= 0.0 and min(matches.values()) >= 0.0:
        # The usual case (no weight or match below 0): the lower factor gives the lower
        # product, and the same bounds come without a call per candidate.
        lows = sorted([m * low_factor + low_recency for m in matches.values()], reverse=True)
        bar = lows[limit - 1]
        return [pk for pk, m in matches.items() if not m * high_factor + high_recency < bar]
    lows = sorted([min(m * low_factor, m * high_factor) + low_recency for m in matches.values()], reverse=True)
    bar = lows[limit - 1]
    # `not below`: a comparison with a NaN (weights that make no sense) keeps the candidate.
    return [pk for pk, m in matches.items() if not max(m * low_factor, m * high_factor) + high_recency < bar]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class FusionWeights(Value):
    """How the rankings of one search become one: weighted reciprocal rank fusion.

    An item at rank r (from 1) of a ranking adds weight / (k + r) to its score: `words` for
    the word rankings (memories by text and tags, entities by name and observations),
    `vector` for the ranking by embedding. Rank fusion needs no common scale between a
    bm25 value and a cosine, which is why it is used rather than a weighted sum of scores.
    `access` then raises items that were read often: the fused score is multiplied by
    1 + access x min(1, log(1 + reads) / log(1 + ACCESS_SATURATION)).

    The defaults are tuned on the LoCoMo development split (bench/locomo.py --sweep): the
    word ranking is the stronger one there, so vectors weigh less. A quarter of its weight
    with k = 20 was chosen when words gave R@10 74.7 / NDCG@10 57.4 (75.8 / 58.7 fused,
    69.3 / 50.8 with equal weights and k = 60); the word ranking's rules have since made it
    77.3 / 63.7, and a quarter then lowered NDCG@10 (77.6 / 62.8; session date in the text,
    77.7 / 62.3 against words' 77.6 / 63.1). At 0.15 meaning adds to both measures: 77.9 /
    63.9 (date in the text 78.0 / 63.2); 0.05 and 0.1 give 77.6-77.8 / 63.2-63.9. A memory
    found by meaning alone still comes first when words find nothing. A weight of 0
    switches a ranking off."""

    words: float = 1.0
    vector: float = 0.15
    k: float = 20.0
    access: float = 0.0


DEFAULT_FUSION = FusionWeights()
# Reads after which an item counts as fully familiar for the access signal.
ACCESS_SATURATION = 50


def parse_fusion(text: str) -> FusionWeights:
    """FusionWeights from "words=1,vector=0.7,k=60,access=0" (any subset; the rest default)."""
    values: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        name = name.strip()
        if not sep or name not in FusionWeights.__dataclass_fields__:
            raise ValueError(f"{part!r}: give name=value with a name among words, vector, k, access")
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"{part!r}: {value.strip()!r} is not a number") from None
        if not math.isfinite(number) or number < 0 or (name == "k" and number <= 0):
            raise ValueError(f"{part!r}: weights must be finite and not negative (k above 0)")
        values[name] = number
    return FusionWeights(**values)
