"""A search that needs only its first places ranks only as many memories as it takes to be
sure of them: its pages must be those of the whole ranking, on a real database."""

from __future__ import annotations

import random

import pytest

from mnemodb.engine import Engine
from mnemodb.engine.graph import NewEntity
from mnemodb.engine.items import RANKED_POOL, ItemPage
from mnemodb.search.ranking import DAY_MS
from support import Clock

WORDS = ("harbor", "lantern", "copper", "meadow", "signal")
MEMORIES = 260
"""More than a short page's first cut, fewer than the whole pool: a page as long as the
pool then ranks every match, which is the reference."""


def _placed(page: ItemPage) -> list[tuple[int, float | None]]:
    return [(f.item.pk, f.score) for f in page.found]


@pytest.fixture
def varied(eng: Engine, clock: Clock) -> Engine:
    """Memories sharing a few words in every mix, with every importance, written over two
    weeks (inside and past the recency window), some archived; and entities named by the
    same words."""
    rng = random.Random(18)
    archived = []
    for i in range(MEMORIES):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 14)))
        stored = eng.memories.store(f"{text} note{i}", (), rng.randint(0, 10))
        if i % 23 == 0:
            archived.append(stored.memory.hash)
        clock.now += rng.randint(0, 2 * DAY_MS // 20)
    for digest in archived:
        eng.items.archive(digest)
    eng.graph.create_entities([NewEntity(f"{word.title()} Works", "place", (f"by the {word}",)) for word in WORDS])
    return eng


@pytest.mark.parametrize("query", ["harbor", "copper lantern", "meadow signal harbor", "lantern note7"])
def test_every_page_is_a_slice_of_the_whole_ranking(varied: Engine, query: str) -> None:
    whole = varied.items.search(query, limit=RANKED_POOL - 1)
    assert not whole.more and len(whole.found) > 100  # the short pages below rank a cut
    for offset, limit in ((0, 1), (0, 3), (0, 10), (5, 10), (0, 40), (30, 60)):
        page = varied.items.search(query, offset=offset, limit=limit)
        assert _placed(page) == _placed(whole)[offset : offset + limit], (offset, limit)
        assert page.more == (len(whole.found) > offset + limit)


def test_memories_only_and_explained_pages_match_too(varied: Engine) -> None:
    whole = varied.items.search("signal copper", kinds=["memory"], limit=RANKED_POOL - 1, explain=True)
    page = varied.items.search("signal copper", kinds=["memory"], limit=8, explain=True)
    assert _placed(page) == _placed(whole)[:8]
    assert [f.why for f in page.found] == [f.why for f in whole.found[:8]]
