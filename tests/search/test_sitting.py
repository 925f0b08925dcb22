"""The sitting rule's measure: the best scores among the memories written near each one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mnemodb.search.ranking import SITTING_BEST, SITTING_MS, sitting_means

HOUR = 3_600_000


def test_each_memory_gets_the_mean_of_the_best_three_of_its_half_hour() -> None:
    scored = [(1, 0.9), (2, 0.6), (3, 0.3), (4, 0.2), (5, 1.0)]
    created = {1: 0, 2: 60_000, 3: 120_000, 4: 180_000, 5: 5 * HOUR}
    means = sitting_means(scored, created)
    assert means is not None
    # The first four were written within minutes: the three best of them are 0.9, 0.6, 0.3.
    for pk in (1, 2, 3, 4):
        assert means[pk] == (0.9 + 0.6 + 0.3) / 3
    # Alone in its half hour, the last counts the two missing ones as 0.
    assert means[5] == 1.0 / 3


def test_the_half_hour_is_counted_from_each_memory_both_ways() -> None:
    # 1 and 3 are 40 minutes apart: each is near 2, not near each other.
    scored = [(1, 0.5), (2, 0.4), (3, 0.9), (4, 0.1)]
    created = {1: 0, 2: 20 * 60_000, 3: 40 * 60_000, 4: 10 * HOUR}
    means = sitting_means(scored, created)
    assert means is not None
    assert means[1] == (0.5 + 0.4) / 3
    assert means[2] == (0.9 + 0.5 + 0.4) / 3
    assert means[3] == (0.9 + 0.4) / 3
    assert means[4] == 0.1 / 3


def test_nothing_when_every_memory_was_written_within_one_half_hour() -> None:
    assert sitting_means([], {}) is None
    assert sitting_means([(1, 0.5)], {1: 0}) is None
    assert sitting_means([(1, 0.5), (2, 0.4)], {1: 0, 2: SITTING_MS}) is None
    assert sitting_means([(1, 0.5), (2, 0.4)], {1: 0, 2: SITTING_MS + 1}) is not None


memories = st.lists(
    st.tuples(st.floats(min_value=0.0, max_value=3.0), st.integers(min_value=0, max_value=6 * HOUR)),
    min_size=1,
    max_size=60,
)


@given(memories)
def test_the_measure_is_what_reading_every_pair_gives(rows: list[tuple[float, int]]) -> None:
    scored = [(pk, score) for pk, (score, _) in enumerate(rows)]
    created = {pk: at for pk, (_, at) in enumerate(rows)}
    means = sitting_means(scored, created)
    times = list(created.values())
    if max(times) - min(times) <= SITTING_MS:
        assert means is None
        return
    assert means is not None and set(means) == set(created)
    for pk, score in scored:
        near = sorted((s for other, s in scored if abs(created[other] - created[pk]) <= SITTING_MS), reverse=True)
        assert means[pk] == sum(near[:SITTING_BEST]) / SITTING_BEST
        assert means[pk] >= score / SITTING_BEST
