"""A search that needs only its first places ranks only as many memories as it takes to be
sure of them: its pages must be those of the whole ranking, on a real database."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from mnemodb.engine import Engine
from mnemodb.engine.graph import NewEntity
from mnemodb.engine.items import RANKED_POOL, ItemPage, _settled
from mnemodb.model.records import ItemFilter, Memory
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


def _pad(words: int) -> str:
    """Words no query names: the longer a memory, the weaker its text match."""
    return " ".join(f"pad{j}" for j in range(words))


def _strong_then_weak(eng: Engine, clock: Clock, best: int, best_importance: int, late: str, late_words: int) -> None:
    """`best` memories that match best, written long ago with `best_importance`; 150 a
    little weaker, of importance 0 and as old; and `late`, weaker than the first hundred
    of all these by text, of importance 10 and written now: the first pool leaves it out.

    The scores these tests name are the other rules': the sitting rule, which would add to
    each a share of its sitting's best, is off (it is on in the tests of pages under it)."""
    eng.weights = replace(eng.weights, sitting=0.0)
    for i in range(best):
        eng.memories.store(f"lantern melanie {_pad(2)} top{i}", (), best_importance)
    for i in range(150):
        eng.memories.store(f"lantern melanie {_pad(4 + i // 5)} filler{i}", (), 0)
    clock.now += 30 * DAY_MS
    eng.memories.store(f"{late}lantern melanie {_pad(late_words)} late", (), 10)


def _first_and_whole(eng: Engine, query: str) -> tuple[ItemPage, ItemPage]:
    return (
        eng.items.search(query, kinds=["memory"], limit=10),
        eng.items.search(query, kinds=["memory"], limit=RANKED_POOL - 1),
    )


def test_a_memory_the_author_rule_lifts_from_past_the_first_pool_is_on_the_first_page(
    eng: Engine, clock: Clock
) -> None:
    # The eleventh score (0.8) beats the last scored match's strength plus the most recency
    # can add, but not what the author rule makes of it: the late turn, by the Melanie the
    # query names, ranks twelfth by its words and first once raised by half.
    _strong_then_weak(eng, clock, best=11, best_importance=2, late="Melanie: ", late_words=39)
    first, whole = _first_and_whole(eng, "lantern Melanie")
    lifted = whole.found[0].item
    assert isinstance(lifted, Memory) and lifted.content.startswith("Melanie: ")
    assert [f.score for f in whole.found[1:11]] == [0.8] * 10
    assert _placed(first) == _placed(whole)[:10]


def test_the_most_important_memory_bounds_what_a_memory_left_out_scores(eng: Engine, clock: Clock) -> None:
    # Every memory the first pool scores has importance 0 (and the fifty best score 0.75,
    # down to the last place the author rule reads): the late memory past it, of
    # importance 10 and written now, scores above them all, which only the store's most
    # important memory tells, not the pool's.
    _strong_then_weak(eng, clock, best=50, best_importance=0, late="", late_words=22)
    first, whole = _first_and_whole(eng, "lantern harbor")
    late = whole.found[0].item
    assert isinstance(late, Memory) and late.content.endswith(" late")
    assert [f.score for f in whole.found[1:11]] == [0.75] * 10
    assert _placed(first) == _placed(whole)[:10]


def test_an_archived_memory_does_not_count_as_the_most_important(eng: Engine, clock: Clock) -> None:
    # The store's most important memory is archived: those searched have importance 0, and
    # the first page is still that of the whole ranking (archived ones searched or not).
    _strong_then_weak(eng, clock, best=50, best_importance=0, late="", late_words=22)
    late = eng.items.search("lantern late", kinds=["memory"], limit=1).found[0].item
    assert isinstance(late, Memory)
    eng.items.archive(late.hash)
    with eng.store.read() as tx:
        assert tx.most_important([eng.write_scope]) == 0
    first, whole = _first_and_whole(eng, "lantern harbor")
    assert late.pk not in {f.item.pk for f in whole.found}
    assert _placed(first) == _placed(whole)[:10]
    archived = ItemFilter(include_archived=True)
    first = eng.items.search("lantern harbor", kinds=["memory"], where=archived, limit=10)
    whole = eng.items.search("lantern harbor", kinds=["memory"], where=archived, limit=RANKED_POOL - 1)
    assert whole.found[0].item.pk == late.pk
    assert _placed(first) == _placed(whole)[:10]


def test_a_memory_telling_of_the_time_named_is_lifted_from_past_the_first_pool(eng: Engine, clock: Clock) -> None:
    # The eleventh score (1.0) beats the last scored match's strength plus the most recency
    # can add, but not with the bonus for telling of the time the query names: the late
    # memory, written a month after that time, says "last month" and ranks first. The
    # other rules on the text are off, so that this bonus alone decides when to stop.
    eng.weights = replace(eng.weights, author_match=0.0, question_turn=0.0, time_told=0.0)
    _strong_then_weak(eng, clock, best=11, best_importance=10, late="last month ", late_words=39)
    named = datetime.fromtimestamp((clock.now - 20 * DAY_MS) / 1000, UTC)
    first, whole = _first_and_whole(eng, f"lantern Melanie on {named.day} {named:%B} {named.year}")
    late = whole.found[0].item
    assert isinstance(late, Memory) and late.content.startswith("last month ")
    assert [f.score for f in whole.found[1:11]] == [1.0] * 10
    assert _placed(first) == _placed(whole)[:10]


@pytest.mark.parametrize(
    ("best", "importance", "late", "late_words", "query"),
    [
        (11, 2, "Melanie: ", 39, "lantern Melanie"),
        (50, 0, "", 22, "lantern harbor"),
        (11, 2, "Melanie: yesterday ", 39, "when did Melanie light the lantern"),
    ],
)
def test_pages_under_the_sitting_rule_are_slices_of_the_whole_ranking(
    eng: Engine, clock: Clock, best: int, importance: int, late: str, late_words: int, query: str
) -> None:
    # The same stores, written in two sittings a month apart, with the sitting rule on:
    # a memory left out of the first pool could change what it adds to the first places,
    # so the ranking reads on until they are those of the whole pool.
    _strong_then_weak(eng, clock, best=best, best_importance=importance, late=late, late_words=late_words)
    eng.weights = replace(eng.weights, sitting=0.2)
    first, whole = _first_and_whole(eng, query)
    assert any("sitting" in (f.why or {}).get("words", {}) for f in eng.items.search(query, explain=True).found)
    assert _placed(first) == _placed(whole)[:10]


def test_under_the_sitting_rule_the_first_places_are_settled_only_when_all_fifty_are() -> None:
    # Ten strong memories and forty weak ones: without the sitting rule the first ten are
    # sure (lowered the most, they beat the most a memory left out can be raised to); with
    # it they are not, for a memory left out could enter the fifty the rule reads and
    # change what it adds to them.
    ranking = [(pk, 1.0) for pk in range(10)] + [(pk, 0.2) for pk in range(10, 50)]
    assert _settled(ranking, 10, 0.3, 0.8, 1.5)
    assert not _settled(ranking, 10, 0.3, 0.8, 1.5, sitting=True)
    # Once the fiftieth beats what a memory left out scores, the fifty are those of the pool.
    assert _settled(ranking, 10, 0.1, 0.8, 1.5, sitting=True)


@pytest.fixture
def told(eng: Engine, clock: Clock) -> Engine:
    """Memories sharing a few words in every mix, some by a named speaker, some ending on a
    question, some saying when: every rule on the first places' text lowers or raises some."""
    rng = random.Random(19)
    for i in range(MEMORIES):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 14)))
        label = rng.choice(("Melanie: ", "Caroline: ", ""))
        end = rng.choice(("?", " yesterday", " last week", "", ""))
        eng.memories.store(f"{label}{text} note{i}{end}", (), rng.randint(0, 10))
        clock.now += rng.randint(0, 2 * DAY_MS // 20)
    return eng


@pytest.mark.parametrize(
    "query",
    [
        "When did Melanie see the harbor?",
        "copper lantern",
        "how long was the meadow signal",
        "what did Caroline say of the harbor last week",
    ],
)
def test_pages_under_the_text_rules_are_slices_of_the_whole_ranking(told: Engine, query: str) -> None:
    whole = told.items.search(query, kinds=["memory"], limit=RANKED_POOL - 1)
    for offset, limit in ((0, 1), (0, 3), (0, 10), (5, 10), (0, 40)):
        page = told.items.search(query, kinds=["memory"], offset=offset, limit=limit)
        assert _placed(page) == _placed(whole)[offset : offset + limit], (offset, limit)


def test_a_memory_the_time_rule_lifts_from_past_the_first_pool_is_on_the_first_page(eng: Engine, clock: Clock) -> None:
    # As above, with the late turn saying when, for a question asking when: raised by the
    # author and the time rules together, it ranks first.
    _strong_then_weak(eng, clock, best=11, best_importance=2, late="Melanie: yesterday ", late_words=39)
    first, whole = _first_and_whole(eng, "when did Melanie light the lantern")
    lifted = whole.found[0].item
    assert isinstance(lifted, Memory) and lifted.content.startswith("Melanie: yesterday")
    assert _placed(first) == _placed(whole)[:10]
