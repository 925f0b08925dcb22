"""A search that needs only its first places leaves out the entities that would rank below
them (names that hold the words only as substrings, when enough entities hold them as
words): its pages must be those of the whole ranking, ties and all, on a real database."""

from __future__ import annotations

import random

import pytest

from mnemodb.engine import Engine
from mnemodb.engine.graph import NewEntity
from mnemodb.engine.items import RANKED_POOL, ItemPage
from mnemodb.model.records import ItemFilter
from mnemodb.search.ranking import ENTITY_FIELD_WEIGHTS
from support import Clock

WORDS = ("harbor", "lantern", "copper")


def _placed(page: ItemPage) -> list[tuple[int, float | None]]:
    return [(f.item.pk, f.score) for f in page.found]


@pytest.fixture
def tied(eng: Engine, clock: Clock) -> Engine:
    """Entities whose names are alike but for a serial (so a word scores them the same),
    in groups of every size, some with an observation or a type that holds a word too;
    names that hold two words run together; and a few memories with the same words."""
    rng = random.Random(18)
    entities = []
    for i in range(150):
        first, second = rng.choice(WORDS), rng.choice(("Works", "Yard", "Lantern"))
        observations = (f"near the {rng.choice(WORDS)}",) if i % 7 == 0 else ()
        kind = "copper" if i % 11 == 0 else rng.choice(("place", "person"))
        entities.append(NewEntity(f"{first.title()} {second} e{i}", kind, observations))
    entities += [NewEntity(f"HarborYard{i}", "place", ()) for i in range(8)]
    entities += [NewEntity(f"CopperLantern{i}", "place", ()) for i in range(3)]
    eng.graph.create_entities(entities)
    for i in range(12):
        eng.memories.store(f"{rng.choice(WORDS)} {rng.choice(WORDS)} note{i}", (), rng.randint(0, 10))
        clock.now += 60_000
    return eng


@pytest.mark.parametrize("query", ["harbor", "lantern", "copper harbor", "yard lantern", "harbor yard"])
@pytest.mark.parametrize("kinds", [("memory", "entity"), ("entity",)])
def test_every_page_is_a_slice_of_the_whole_ranking(tied: Engine, query: str, kinds: tuple[str, ...]) -> None:
    whole = tied.items.search(query, kinds=kinds, limit=RANKED_POOL - 1)
    assert not whole.more and len(whole.found) > 40  # more than the short pages below rank
    for offset, limit in ((0, 1), (0, 3), (0, 10), (4, 10), (0, 25), (20, 30)):
        page = tied.items.search(query, kinds=kinds, offset=offset, limit=limit)
        assert _placed(page) == _placed(whole)[offset : offset + limit], (offset, limit)
        assert page.more == (len(whole.found) > offset + limit)


def test_a_narrowing_filter_pages_the_same(tied: Engine) -> None:
    people = ItemFilter(types=("person",))
    whole = tied.items.search("harbor lantern", where=people, kinds=["entity"], limit=RANKED_POOL - 1)
    assert whole.found and {f.item.entity_type for f in whole.found} == {"person"}  # type: ignore[union-attr]
    page = tied.items.search("harbor lantern", where=people, kinds=["entity"], limit=5)
    assert _placed(page) == _placed(whole)[:5]


@pytest.mark.parametrize("first", [1, 11, 90])
def test_a_cut_ranking_is_the_head_of_the_whole_one(tied: Engine, first: int) -> None:
    graph = tied.graph
    reads = tied.scopes(None)
    with tied.store.read() as tx:
        whole = graph.ranked_by_words(tx, "harbor yard", reads, limit=RANKED_POOL)
        cut = graph.ranked_by_words(tx, "harbor yard", reads, limit=RANKED_POOL, first=first)
        by_word = tx.entity_word_search(["harbor", "yard"], reads, RANKED_POOL, ENTITY_FIELD_WEIGHTS)
    assert whole is not None and cut is not None
    joined = {pk for pk, _ in whole} - {pk for pk, _ in by_word}
    assert len(joined) == 8  # HarborYard0..7, below every word hit
    # What the cut leaves out is those, and only those.
    assert cut == whole[: len(by_word)] and len(cut) >= first


def test_too_few_word_hits_are_not_cut(tied: Engine) -> None:
    graph = tied.graph
    reads = tied.scopes(None)
    with tied.store.read() as tx:
        whole = graph.ranked_by_words(tx, "copper lantern", reads, limit=RANKED_POOL)
        assert whole is not None
        cut = graph.ranked_by_words(tx, "copper lantern", reads, limit=RANKED_POOL, first=len(whole))
    assert cut == whole


@pytest.mark.parametrize("memories", [0, 1, 2, 3, 5])
@pytest.mark.parametrize("hits", [0, 1, 2, 3, 4, 6])
def test_few_memories_and_word_hits_page_the_whole_ranking(eng: Engine, clock: Clock, memories: int, hits: int) -> None:
    """Where the memories are few, the entities holding the words only as substrings may
    reach the first places however many entities hold them as words: every page, and
    whether there is a next one, is that of the whole ranking (`_entity_places`)."""
    eng.graph.create_entities(
        [NewEntity(f"Falcon Ridge e{i}", "place", ()) for i in range(hits)]
        + [NewEntity(f"FalconRidge{i}", "place", ()) for i in range(3)]
    )
    for i in range(memories):
        eng.memories.store(f"falcon ridge note{i}", (), i % 3)
        clock.now += 60_000
    whole = eng.items.search("falcon ridge", limit=RANKED_POOL - 1)
    assert len(whole.found) == memories + hits + 3  # the run-together names are in it
    for offset, limit in ((0, 1), (0, 2), (0, 3), (0, 4), (0, 5), (1, 3), (2, 5), (0, 8)):
        page = eng.items.search("falcon ridge", offset=offset, limit=limit)
        assert _placed(page) == _placed(whole)[offset : offset + limit], (offset, limit)
        assert page.more == (len(whole.found) > offset + limit), (offset, limit)
