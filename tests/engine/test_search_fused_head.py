"""A search by words alone fuses each word ranking only down to the places its page can
reach: its pages, `more` and scores must be those of the fusion of the whole rankings,
which an explained search still builds, on a real database with many tied scores."""

from __future__ import annotations

import random

import pytest

from mnemodb.engine import Engine
from mnemodb.engine.graph import NewEntity
from mnemodb.engine.items import ItemPage
from support import Clock

WORDS = ("harbor", "lantern", "copper", "meadow")


def _placed(page: ItemPage) -> list[tuple[str, float | None]]:
    return [(f.item.id, f.score) for f in page.found]


@pytest.fixture
def mixed(eng: Engine, clock: Clock) -> Engine:
    """Memories and entities that hold the same words, many alike but for a serial (so
    their scores tie), with importances and times of every kind, and a kind with few
    matches beside one with many."""
    rng = random.Random(7)
    entities = [NewEntity(f"{rng.choice(WORDS).title()} Yard e{i}", "place", ()) for i in range(40)]
    entities += [NewEntity(f"Meadow Gate g{i}", "place", ()) for i in range(2)]
    eng.graph.create_entities(entities)
    for i in range(60):
        eng.memories.store(f"{rng.choice(WORDS[:3])} {rng.choice(WORDS[:3])} note{i}", (), rng.choice((0, 0, 5)))
        if i % 4 == 0:
            clock.now += 3_600_000
    return eng


@pytest.mark.parametrize("query", ["harbor", "lantern copper", "meadow", "harbor meadow", "yard"])
def test_pages_are_those_of_the_whole_fusion(mixed: Engine, query: str) -> None:
    checked = 0
    for offset, limit in ((0, 1), (0, 2), (1, 3), (0, 10), (7, 5), (30, 10), (0, 60)):
        page = mixed.items.search(query, offset=offset, limit=limit)
        whole = mixed.items.search(query, offset=offset, limit=limit, explain=True)
        assert _placed(page) == _placed(whole), (offset, limit)
        assert page.more == whole.more, (offset, limit)
        checked += len(page.found)
    assert checked  # every query finds something to compare
