"""What the inspector's overview shows: memories created over time, and the largest entities."""

from __future__ import annotations

import pytest

from mnemodb.engine import Engine, NewMemory
from mnemodb.engine.graph import NewEntity
from mnemodb.model.errors import InvalidArgument
from support import Clock

DAY = 86_400_000


def test_growth_counts_memories_in_spans_of_whole_days(eng: Engine, clock: Clock) -> None:
    start = clock.now - clock.now % DAY
    for day, n in ((0, 2), (1, 1), (5, 3), (9, 1)):
        clock.now = start + day * DAY + 3_600_000
        eng.memories.store_many([NewMemory(f"day {day} number {i}") for i in range(n)])
    # Ten days in five spans of two days each.
    assert eng.statistics.growth(spans=5) == [
        (start, 3),
        (start + 2 * DAY, 0),
        (start + 4 * DAY, 3),
        (start + 6 * DAY, 0),
        (start + 8 * DAY, 1),
    ]
    # More spans than days: one a day.
    daily = eng.statistics.growth(spans=50)
    assert len(daily) == 10 and sum(n for _, n in daily) == 7 and daily[5] == (start + 5 * DAY, 3)
    assert eng.statistics.growth(scopes=["01JB0000000000000000000000"]) == []
    with pytest.raises(InvalidArgument):
        eng.statistics.growth(spans=0)


def test_largest_entities_are_those_with_the_most_observations(eng: Engine) -> None:
    eng.graph.create_entities(
        [NewEntity("Ada", "person", ("a", "b", "c")), NewEntity("Bob", "person", ("a",)), NewEntity("Cy", "person")]
    )
    largest = eng.statistics.largest_entities(limit=5)
    assert [(e.name, n) for e, n in largest] == [("Ada", 3), ("Bob", 1)]
    with pytest.raises(InvalidArgument):
        eng.statistics.largest_entities(limit=0)
