"""The scores of many candidates at once, and which candidates can still be among the best."""

from __future__ import annotations

from typing import NamedTuple

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemodb.search.ranking import DEFAULT_WEIGHTS, RankWeights, relevance_scorer, relevances, within_reach

NOW = 1_700_000_000_000
DAY = 86_400_000


class Row(NamedTuple):
    importance: int
    created_at: int


# A candidate: its text strength (0 for a tag alone), whether a tag matched, its importance
# and its creation time (up to ten days old, or a little in the future).
candidate = st.tuples(
    st.one_of(st.just(0.0), st.just(1.0), st.floats(min_value=0.0, max_value=1.0)),
    st.booleans(),
    st.integers(min_value=0, max_value=10),
    st.integers(min_value=NOW - 10 * DAY, max_value=NOW + 1000),
)
weights = st.one_of(
    st.just(DEFAULT_WEIGHTS),
    st.builds(
        RankWeights,
        tag_match=st.floats(min_value=0.0, max_value=1.0),
        importance_floor=st.floats(min_value=-0.5, max_value=1.5),
        recency_max=st.floats(min_value=-0.5, max_value=0.5),
        recency_days=st.floats(min_value=0.5, max_value=30.0),
    ),
)


def _match(text: float, tagged: bool, w: RankWeights) -> float:
    return text + (1.0 - text) * w.tag_match if tagged else text


@settings(max_examples=300, deadline=None)
@given(st.lists(candidate, max_size=60), weights)
def test_relevances_are_the_scorer_s_floats(candidates: list[tuple[float, bool, int, int]], w: RankWeights) -> None:
    score = relevance_scorer(NOW, w)
    matches = {pk: _match(text, tagged, w) for pk, (text, tagged, _, _) in enumerate(candidates)}
    rows = {pk: Row(importance, at) for pk, (_, _, importance, at) in enumerate(candidates)}
    rows[len(candidates)] = Row(5, NOW)  # read, but no candidate: not scored
    expected = {pk: score(text, tagged, imp, at, False) for pk, (text, tagged, imp, at) in enumerate(candidates)}
    assert relevances(matches, rows, NOW, w) == expected


@settings(max_examples=500, deadline=None)
@given(st.lists(candidate, min_size=1, max_size=80), st.integers(min_value=1, max_value=40), weights)
def test_every_candidate_among_the_best_is_within_reach(
    candidates: list[tuple[float, bool, int, int]], limit: int, w: RankWeights
) -> None:
    score = relevance_scorer(NOW, w)
    matches = {pk: _match(text, tagged, w) for pk, (text, tagged, _, _) in enumerate(candidates)}
    scores = {pk: score(text, tagged, imp, at, False) for pk, (text, tagged, imp, at) in enumerate(candidates)}
    best = sorted(scores, key=lambda pk: (-scores[pk], -pk))[:limit]
    most_important = max(c[2] for c in candidates)
    oldest, newest = min(c[3] for c in candidates), max(c[3] for c in candidates)
    reach = within_reach(matches, limit, NOW, most_important, oldest, newest, w)
    assert set(best) <= set(reach)
    assert reach == [pk for pk in matches if pk in reach]  # in the order given
    # Wider bounds than the candidates' own only keep more.
    wider = within_reach(matches, limit, NOW, 10, oldest - DAY, newest + DAY, w)
    assert set(reach) <= set(wider)


def test_candidates_that_cannot_catch_up_are_left_out() -> None:
    # Default weights: a factor of 0.75 (importance 0) to 1.0 (importance 10), and a recency
    # of 0.15 for a memory written now, falling to 0 at a week.
    matches = {1: 1.0, 2: 0.9, 3: 0.5, 4: 0.9}
    # Importance 0 and one creation time: the match alone orders them. 0.5 is behind the
    # two best whatever the tie-break; 0.9 ties with the second best and stays.
    assert within_reach(matches, 2, NOW, 0, NOW - DAY, NOW - DAY) == [1, 2, 4]
    assert within_reach(matches, 3, NOW, 0, NOW - DAY, NOW - DAY) == [1, 2, 4]
    # Up to importance 10 and a day old, 0.5 reaches 0.5 + 0.129, below 0.9 x 0.75 + 0.
    assert within_reach(matches, 2, NOW, 10, NOW - 7 * DAY, NOW - DAY) == [1, 2, 4]
    # The best at least 1.0 x 0.75: 0.9 can reach 0.9 x 0.75 + 0.15, 0.5 only 0.5 x 0.75 + 0.15.
    assert within_reach(matches, 1, NOW, 0, NOW - 30 * DAY, NOW) == [1, 2, 4]
    # All written now: the best is at least 0.75 + 0.15, more than 0.9 x 0.75 + 0.15.
    assert within_reach(matches, 1, NOW, 0, NOW, NOW) == [1]
    # No more candidates than the limit: all of them.
    assert within_reach(matches, 4, NOW, 0, NOW, NOW) == [1, 2, 3, 4]
