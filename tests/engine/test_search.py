"""Search and recall through the engine, on a real SQLite file."""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from engine.helpers import open_engine_at
from mnemodb.engine import Engine, InvalidArgument, SearchHit
from mnemodb.engine.graph import NewEntity
from mnemodb.engine.items import ItemPage
from mnemodb.model.records import ItemFilter, Memory
from mnemodb.search.analyzer import query_terms, tag_candidates
from mnemodb.search.ranking import relevance_scorer, text_strengths
from support import SCOPE_A, Clock


def contents(hits: Iterable[SearchHit]) -> list[str]:
    return [h.memory.content for h in hits]


# -- search: analysis -----------------------------------------------------------------------------------


def test_stemming_running_finds_runs(eng: Engine) -> None:
    eng.memories.store("She runs every morning")
    eng.memories.store("He walks to work")
    assert contents(eng.memories.search("running")) == ["She runs every morning"]
    assert contents(eng.memories.search("RUN")) == ["She runs every morning"]


def test_diacritics_are_folded(eng: Engine) -> None:
    eng.memories.store("The café opens at nine")
    assert contents(eng.memories.search("cafe")) == ["The café opens at nine"]


def test_stop_words_are_dropped_from_the_query(eng: Engine) -> None:
    eng.memories.store("the cat sat on a mat")
    eng.memories.store("the dog barked at the moon")
    eng.memories.store("an owl")
    assert contents(eng.memories.search("the cat")) == ["the cat sat on a mat"]
    assert contents(eng.memories.search("what is the owl")) == ["an owl"]


def test_a_query_of_only_stop_words_keeps_them(eng: Engine) -> None:
    eng.memories.store("to be or not to be")
    eng.memories.store("completely different words")
    assert contents(eng.memories.search("to be")) == ["to be or not to be"]


def test_queries_without_words_find_nothing(eng: Engine) -> None:
    eng.memories.store("something")
    assert eng.memories.search("") == []
    assert eng.memories.search("   ") == []
    assert eng.memories.search("---") == []


def test_query_syntax_characters_are_plain_text(eng: Engine) -> None:
    eng.memories.store('He said "hello" AND left (quickly)')
    for query in ['"hello', "hello AND", "NEAR(hello", "hello*", "col:hello", "(quickly", "^hello"]:
        assert contents(eng.memories.search(query)) == ['He said "hello" AND left (quickly)'], query


def test_a_query_with_a_lone_surrogate_is_refused(eng: Engine) -> None:
    with pytest.raises(InvalidArgument, match="lone surrogate"):
        eng.memories.search("bad \ud800")


# -- search: tags -------------------------------------------------------------------------------------------


def test_tag_matches_are_found(eng: Engine) -> None:
    eng.memories.store("nothing in the text about it", ["python"])
    eng.memories.store("unrelated", ["rust"])
    for query in ("python", "PYTHON", "\uff50\uff59\uff54\uff48\uff4f\uff4e", "about python"):
        hits = eng.memories.search(query)
        assert "nothing in the text about it" in contents(hits), query
    [hit] = eng.memories.search("python")
    assert hit.components["tag"] == 1.0
    assert hit.components["text"] == 0.0


def test_a_hyphenated_tag_matches_the_same_query(eng: Engine) -> None:
    eng.memories.store("text without the words", ["api-design"])
    assert contents(eng.memories.search("api-design")) == ["text without the words"]


def test_tag_and_text_match_ranks_above_text_only(eng: Engine) -> None:
    eng.memories.store("notes about kotlin builds")
    eng.memories.store("notes about kotlin tools", ["kotlin"])
    assert contents(eng.memories.search("kotlin")) == ["notes about kotlin tools", "notes about kotlin builds"]


# -- search: ranking ------------------------------------------------------------------------------------------


def test_full_match_ranks_above_partial_match(eng: Engine) -> None:
    # Stored first, so the newest-first tie-break cannot be what puts it on top.
    eng.memories.store("alpha beta gamma")
    eng.memories.store("alpha delta epsilon")
    eng.memories.store("zeta beta eta")
    hits = eng.memories.search("alpha beta")
    assert contents(hits)[0] == "alpha beta gamma"
    assert set(contents(hits)) == {"alpha beta gamma", "alpha delta epsilon", "zeta beta eta"}
    assert hits[0].score > hits[1].score
    assert hits[0].components["text"] == 1.0


def test_importance_breaks_ties(eng: Engine) -> None:
    eng.memories.store("alpha one", importance=9)
    eng.memories.store("alpha two", importance=0)
    eng.memories.store("alpha six", importance=5)
    hits = eng.memories.search("alpha")
    assert contents(hits) == ["alpha one", "alpha six", "alpha two"]
    assert hits[0].score > hits[1].score > hits[2].score


def test_equal_matches_newest_first(eng: Engine, clock: Clock) -> None:
    eng.memories.store("omega first")
    clock.now += 1000
    eng.memories.store("omega second")
    assert contents(eng.memories.search("omega")) == ["omega second", "omega first"]


def test_recent_memories_rank_above_week_old_ones(eng: Engine, clock: Clock) -> None:
    eng.memories.store("sigma old")
    clock.now += 8 * 86_400_000
    eng.memories.store("sigma new")
    hits = eng.memories.search("sigma")
    assert contents(hits) == ["sigma new", "sigma old"]
    assert hits[0].components["recency"] == pytest.approx(0.15)
    assert hits[1].components["recency"] == 0.0


def test_results_are_capped_by_limit_and_ordered(eng: Engine) -> None:
    for i in range(30):
        eng.memories.store(f"lambda number {i}", importance=i % 11)
    hits = eng.memories.search("lambda", limit=5)
    assert len(hits) == 5
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(h.memory.importance == 10 for h in hits[:2])
    assert len(eng.memories.search("lambda")) == 30
    assert len(eng.memories.search("lambda", limit=1)) == 1


def test_search_views_are_the_search_read_as_shown_fields(eng: Engine, clock: Clock) -> None:
    for i in range(40):
        eng.memories.store(
            f"omega {'filler ' * (i % 4)}number {i}", ["omega"] if i % 5 == 0 else ["other"], importance=i % 11
        )
        clock.now += 3_600_000
    eng.memories.store("omega with a summary", ["x"], summary="omega summary")
    eng.items.archive(eng.memories.store("an archived omega", ["x"]).memory.id)
    eng.memories.search("number 7")  # read once: its last access shows
    eng.access.flush()
    for query, limit in (("omega", 100), ("omega", 7), ("omega filler", 12), ("number 7", 100), ("nothing", 5)):
        hits = eng.memories.search(query, limit=limit, explain=False, record_access=False)
        views = eng.memories.search_views(query, limit=limit)
        assert [(view.pk, score) for view, score in views] == [(h.memory.pk, h.score) for h in hits]
        for (view, _), hit in zip(views, hits, strict=True):
            m = hit.memory
            shown = (m.content, m.summary, m.tags, m.importance, m.memory_type, m.created_at, m.last_accessed_at)
            assert (view.content, view.summary, view.tags, view.importance, view.memory_type) == shown[:5]
            assert (view.created_at, view.last_accessed_at, view.hash) == (*shown[5:], m.hash)
    assert any(view.last_accessed_at is not None for view, _ in eng.memories.search_views("number 7"))
    assert "an archived omega" not in [view.content for view, _ in eng.memories.search_views("omega")]


def test_tied_scores_put_the_newer_memory_first_and_the_limit_keeps_the_newest(eng: Engine) -> None:
    # Tag-only hits written at one time with one importance score alike: the order among
    # them is the tie-break alone, the higher pk first, and the limit cuts the older ones.
    pks = [eng.memories.store(f"entry {i}", ["zeta"]).memory.pk for i in range(6)]
    eng.memories.store("zeta in the text", ["other"])  # a text match, scored apart
    hits = [h for h in eng.memories.search("zeta", limit=5, record_access=False) if h.memory.pk in pks]
    assert len({h.score for h in hits}) == 1
    assert [h.memory.pk for h in hits] == sorted(pks, reverse=True)[:4]
    views = eng.memories.search_views("zeta", limit=5)
    assert [view.pk for view, _ in views if view.pk in pks] == sorted(pks, reverse=True)[:4]


def _every_candidate_scored(eng: Engine, query: str, limit: int, include_archived: bool) -> list[tuple[int, float]]:
    """The ranking as it was before candidates were cut by a bound: every candidate of the
    pool read with its importance and creation time, and scored."""
    terms = query_terms(query)
    tags = tag_candidates(query)
    pool = limit + max(limit // 2, 25)
    now = eng.clock()
    with eng.store.read() as tx:
        text = tx.search_text(terms, eng.read_scopes, pool, include_archived=include_archived)
        tagged = tx.memories_with_tags(tags, eng.read_scopes, pool, include_archived=include_archived)
    strength = text_strengths({hit.pk: hit.score for hit in text})
    by_tag = {hit.pk for hit in tagged}
    score = relevance_scorer(now, eng.weights)
    scores: dict[int, float] = {}
    for hit in (*text, *tagged):
        scores.setdefault(
            hit.pk, score(strength.get(hit.pk, 0.0), hit.pk in by_tag, hit.importance, hit.created_at, False)
        )
    return [(pk, scores[pk]) for pk in sorted(scores, key=lambda pk: (-scores[pk], -pk))[:limit]]


@pytest.mark.parametrize("seed", range(6))
def test_search_ranks_as_when_every_candidate_was_scored(eng: Engine, clock: Clock, seed: int) -> None:
    # Many matches of like strength (a few words, repeated), importances, tags and ages
    # that reorder them, a few archived: the candidates cut before they are read must be
    # ones that could not have been among the results.
    rng = random.Random(seed)
    words = ["delta", "echo", "foxtrot", "golf", "hotel"]
    stored = []
    for i in range(260):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 6 if seed % 2 else 2)))
        tags = [rng.choice(words)] if rng.random() < 0.2 else ["plain"]
        importance = rng.choice((0, 0, 0, 3, 10)) if seed % 3 else 0
        stored.append(eng.memories.store(f"{text} n{i}", tags, importance=importance).memory)
        clock.now += rng.choice((1, 1000, 3_600_000, 2 * 86_400_000)) if seed % 3 != 1 else 1
    for memory in rng.sample(stored, 15):
        eng.items.archive(memory.id)
    clock.now += rng.choice((0, 86_400_000))
    for query in ("delta", "echo golf", "hotel foxtrot delta", "golf"):
        for limit in (1, 7, 40, 100):
            for include_archived in (False, True):
                expected = _every_candidate_scored(eng, query, limit, include_archived)
                hits = eng.memories.search(
                    query, limit=limit, include_archived=include_archived, record_access=False, explain=False
                )
                assert [(h.memory.pk, h.score) for h in hits] == expected, (query, limit, include_archived)
            views = eng.memories.search_views(query, limit=limit)
            assert [(view.pk, score) for view, score in views] == _every_candidate_scored(eng, query, limit, False)


def test_a_negative_limit_does_not_drop_one_result(eng: Engine) -> None:
    for i in range(3):
        eng.memories.store(f"kappa {i}")
    try:
        hits = eng.memories.search("kappa", limit=-1)
    except InvalidArgument:
        return
    assert hits == []


def test_search_is_limited_to_the_read_scopes(eng: Engine) -> None:
    eng.memories.store("mu in shared")
    eng.memories.store("mu in private", scope=SCOPE_A)
    assert contents(eng.memories.search("mu")) == ["mu in shared"]
    assert contents(eng.memories.search("mu", scopes=[SCOPE_A])) == ["mu in private"]
    assert set(contents(eng.memories.search("mu", scopes=[SCOPE_A, "shared"]))) == {"mu in shared", "mu in private"}


def test_search_sees_updates_and_deletes(eng: Engine) -> None:
    memory = eng.memories.store("pi before").memory
    _, after = eng.memories.update(memory.hash, content="rho after")
    assert eng.memories.search("before") == []
    assert contents(eng.memories.search("after")) == ["rho after"]
    eng.memories.delete(after.hash)
    assert eng.memories.search("after") == []


# -- recall ---------------------------------------------------------------------------------------------------


@pytest.fixture
def chain(eng: Engine) -> dict[str, str]:
    """seed -> a <- b -> c -> d, with only the seed matching the query "zebra"."""
    hashes = {name: eng.memories.store(f"{name} node {text}").memory.hash for name, text in _CHAIN.items()}
    eng.memories.relate(hashes["seed"], hashes["a"], "next")
    eng.memories.relate(hashes["b"], hashes["a"], "next")
    eng.memories.relate(hashes["b"], hashes["c"], "next")
    eng.memories.relate(hashes["c"], hashes["d"], "next")
    return hashes


_CHAIN = {"seed": "zebra", "a": "apple", "b": "banana", "c": "cherry", "d": "date"}


def recalled(eng: Engine, query: str, depth: int) -> list[tuple[str, int]]:
    return [(r.memory.content.split()[0], r.depth) for r in eng.memories.recall(query, depth).memories]


def test_recall_follows_relations_both_ways_up_to_depth(eng: Engine, chain: dict[str, str]) -> None:
    assert recalled(eng, "zebra", 0) == [("seed", 0)]
    assert recalled(eng, "zebra", 1) == [("seed", 0), ("a", 1)]
    assert recalled(eng, "zebra", 2) == [("seed", 0), ("a", 1), ("b", 2)]
    assert recalled(eng, "zebra", 3) == [("seed", 0), ("a", 1), ("b", 2), ("c", 3)]


def test_recall_scores_and_links(eng: Engine, chain: dict[str, str]) -> None:
    result = eng.memories.recall("zebra", 2)
    assert [r.score for r in result.memories] == [1.0, 0.5, pytest.approx(1 / 3)]
    links = {(link.from_hash, link.to_hash) for link in result.links}
    assert links == {(chain["seed"], chain["a"]), (chain["b"], chain["a"])}
    assert eng.memories.recall("zebra", 0).links == ()


def test_recall_depth_outside_zero_to_three_is_refused(eng: Engine) -> None:
    for depth in (-1, 4):
        with pytest.raises(InvalidArgument, match="depth"):
            eng.memories.recall("anything", depth)


def test_recall_without_hits_is_empty(eng: Engine, chain: dict[str, str]) -> None:
    result = eng.memories.recall("nonexistentword", 3)
    assert result.memories == ()
    assert result.links == ()


def test_recall_is_capped_at_fifty(eng: Engine) -> None:
    seed = eng.memories.store("hub quokka").memory
    for i in range(60):
        spoke = eng.memories.store(f"spoke {i}").memory
        eng.memories.relate(seed.hash, spoke.hash, "has")
    result = eng.memories.recall("quokka", 1)
    assert len(result.memories) == 50
    assert result.memories[0].memory.id == seed.id
    assert result.memories[0].depth == 0
    assert all(r.depth == 1 for r in result.memories[1:])
    assert len(result.links) == 49


def test_recall_does_not_follow_closed_edges(eng: Engine, clock: Clock) -> None:
    seed = eng.memories.store("walrus seed").memory
    old = eng.memories.store("old friend").memory
    new = eng.memories.store("new friend").memory
    link, _ = eng.memories.relate(seed.hash, old.hash, "knows")
    eng.memories.relate(seed.hash, new.hash, "knows")
    clock.now += 10
    eng.items.relate(close=[(link.edge.id, None)])
    clock.now += 10
    result = eng.memories.recall("walrus", 1)
    assert [r.memory.content for r in result.memories] == ["walrus seed", "new friend"]
    assert [lk.to_hash for lk in result.links] == [new.hash]


def test_recall_does_not_follow_edges_not_yet_valid(eng: Engine, clock: Clock) -> None:
    seed = eng.memories.store("ibis seed").memory
    later = eng.memories.store("future friend").memory
    eng.items.relate(add=[(seed.id, later.id, "will_know", {}, clock.now + 1000)])
    assert [r.memory.content for r in eng.memories.recall("ibis", 1).memories] == ["ibis seed"]
    clock.now += 1000
    assert [r.memory.content for r in eng.memories.recall("ibis", 1).memories] == ["ibis seed", "future friend"]


def test_recall_returns_only_memories(eng: Engine) -> None:
    seed = eng.memories.store("okapi seed").memory
    beyond = eng.memories.store("beyond the entity").memory
    [entity] = eng.graph.create_entities([NewEntity("Okapi", "animal", ("okapi observation",))])
    eng.items.relate(add=[(seed.id, entity.id, "about", {}, None), (entity.id, beyond.id, "about", {}, None)])
    result = eng.memories.recall("okapi", 3)
    assert [r.memory.content for r in result.memories] == ["okapi seed"]
    assert result.links == ()


def test_recall_stays_in_the_read_scopes(eng: Engine) -> None:
    seed = eng.memories.store("yak seed").memory
    private = eng.memories.store("private yak friend", scope=SCOPE_A).memory
    eng.items.relate(add=[(seed.id, private.id, "knows", {}, None)], scopes=["shared", SCOPE_A])
    assert [r.memory.content for r in eng.memories.recall("yak", 2).memories] == ["yak seed"]


# -- the time a question names -----------------------------------------------------------------------


def page_contents(page: ItemPage) -> list[str]:
    return [f.item.content for f in page.found if isinstance(f.item, Memory)]


def word_signals(page: ItemPage) -> list[dict[str, Any]]:
    return [(f.why or {})["words"] for f in page.found]


def test_a_memory_written_at_the_time_a_question_names_ranks_above_an_equal_match(tmp_path: Path) -> None:
    day = 86_400_000
    march, june = 1_677_628_800_000, 1_685_577_600_000  # 1 March 2023, 1 June 2023 (UTC)
    clock = Clock(march + 2 * day)
    with open_engine_at(tmp_path / "dated.db", clock=clock) as eng:
        eng.memories.store("Dinner with Sam at the harbour")
        clock.now = june + 2 * day
        eng.memories.store("Dinner with Sam, at the harbour")
        clock.now = june + 60 * day
        # The same words: without a time the newer one ranks first ...
        assert page_contents(eng.items.search("dinner with Sam", kinds=["memory"])) == [
            "Dinner with Sam, at the harbour",
            "Dinner with Sam at the harbour",
        ]
        # ... the question naming March finds the one written then, and says so.
        page = eng.items.search("Who had dinner with Sam in March 2023?", kinds=["memory"], explain=True)
        assert page_contents(page) == ["Dinner with Sam at the harbour", "Dinner with Sam, at the harbour"]
        assert [signals["date"] for signals in word_signals(page)] == [1.0, 0.0]
        # A time outside the filter the caller gave raises nothing.
        where = ItemFilter(created_from=june)
        page = eng.items.search("dinner with Sam in March 2023", kinds=["memory"], where=where, explain=True)
        assert page_contents(page) == ["Dinner with Sam, at the harbour"]
        assert "date" not in word_signals(page)[0]


def test_a_memory_telling_of_the_time_a_question_names_ranks_above_an_equal_match(tmp_path: Path) -> None:
    day = 86_400_000
    april = 1_680_307_200_000  # 1 April 2023 (UTC)
    clock = Clock(april + 17 * day)
    with open_engine_at(tmp_path / "told.db", clock=clock) as eng:
        eng.memories.store("We went to a convention together last month")
        clock.now += day
        eng.memories.store("We went to a convention together, such fun")
        clock.now = april + 60 * day
        question = "Who went to a convention in March 2023?"
        # Neither was written in March: without the rule the newer one ranks first ...
        eng.weights = replace(eng.weights, date_told=0.0)
        page = eng.items.search(question, kinds=["memory"], explain=True)
        assert page_contents(page) == [
            "We went to a convention together, such fun",
            "We went to a convention together last month",
        ]
        assert [("told" in signals, signals["date"]) for signals in word_signals(page)] == [(False, 0.0)] * 2
        # ... the one whose "last month", read on 18 April, is March ranks first, and says so.
        eng.weights = replace(eng.weights, date_told=0.5)
        page = eng.items.search(question, kinds=["memory"], explain=True)
        assert page_contents(page) == [
            "We went to a convention together last month",
            "We went to a convention together, such fun",
        ]
        assert [(signals["told"], signals["date"]) for signals in word_signals(page)] == [(1.0, 0.0), (0.0, 0.0)]
        # A "last month" that, read when it was written, is another month raises nothing.
        page = eng.items.search("Who went to a convention in January 2023?", kinds=["memory"], explain=True)
        assert [signals["told"] for signals in word_signals(page)] == [0.0, 0.0]


def test_a_memory_written_at_the_time_named_is_not_raised_again_for_telling_it(tmp_path: Path) -> None:
    march = 1_677_628_800_000  # 1 March 2023 (UTC)
    clock = Clock(march + 86_400_000)
    with open_engine_at(tmp_path / "dated-told.db", clock=clock) as eng:
        eng.memories.store("A convention yesterday")
        eng.memories.store("A convention, such fun")
        clock.now = march + 90 * 86_400_000
        page = eng.items.search("a convention in March 2023", kinds=["memory"], explain=True)
        # Both written then: the date rule raises both, and the text's own time adds nothing.
        assert [signals["date"] for signals in word_signals(page)] == [1.0, 1.0]
        assert all("told" not in signals for signals in word_signals(page))


def test_a_question_naming_no_time_explains_no_date(tmp_path: Path) -> None:
    with open_engine_at(tmp_path / "undated.db", clock=Clock()) as eng:
        eng.memories.store("Dinner with Sam")
        page = eng.items.search("dinner with Sam", kinds=["memory"], explain=True)
        assert "date" not in word_signals(page)[0]
        assert "told" not in word_signals(page)[0]


# -- the author a question names -------------------------------------------------------------------


def test_a_turn_by_the_person_a_question_names_ranks_above_one_addressing_them(tmp_path: Path) -> None:
    clock = Clock(1_700_000_000_000)
    with open_engine_at(tmp_path / "authors.db", clock=clock) as eng:
        eng.memories.store("Melanie: I painted the lake at dawn with the kids, and it took us all morning")
        clock.now += 60_000
        eng.memories.store("Caroline: Melanie, you painted the lake at dawn")
        # By words alone the newer turn, which only addresses Melanie, ranks first ...
        eng.weights = replace(eng.weights, author_match=0.0)
        question = "What has melanie painted?"
        assert page_contents(eng.items.search(question, kinds=["memory"]))[0].startswith("Caroline")
        # ... the rule raises the turn Melanie wrote, and says so.
        eng.weights = replace(eng.weights, author_match=0.5)
        page = eng.items.search(question, kinds=["memory"], explain=True)
        assert page_contents(page) == [
            "Melanie: I painted the lake at dawn with the kids, and it took us all morning",
            "Caroline: Melanie, you painted the lake at dawn",
        ]
        assert [signals["author"] for signals in word_signals(page)] == [1.0, 0.0]
        # A question naming nobody's label leaves the words' order.
        page = eng.items.search("who painted the lake at dawn?", kinds=["memory"], explain=True)
        assert page_contents(page)[0].startswith("Caroline")
        assert [signals["author"] for signals in word_signals(page)] == [0.0, 0.0]


# -- a turn that asks, a turn that says when -------------------------------------------------------


def test_a_turn_ending_on_a_question_ranks_below_one_telling(tmp_path: Path) -> None:
    clock = Clock(1_700_000_000_000)
    with open_engine_at(tmp_path / "asking.db", clock=clock) as eng:
        eng.memories.store("Melanie: I play the clarinet in a band on weekends, I love it")
        clock.now += 60_000
        eng.memories.store("Caroline: Do you play in a band?")
        question = "Who plays in a band?"
        # By words (and without the author rule) the short question ranks first ...
        eng.weights = replace(eng.weights, author_match=0.0, question_turn=0.0)
        page = eng.items.search(question, kinds=["memory"], explain=True)
        assert page_contents(page)[0].startswith("Caroline")
        assert all("asks" not in signals for signals in word_signals(page))
        # ... the rule lowers it below the turn that tells, and says which one asks.
        eng.weights = replace(eng.weights, question_turn=0.5)
        page = eng.items.search(question, kinds=["memory"], explain=True)
        assert page_contents(page) == [
            "Melanie: I play the clarinet in a band on weekends, I love it",
            "Caroline: Do you play in a band?",
        ]
        assert [signals["asks"] for signals in word_signals(page)] == [0.0, 1.0]
        told, asked = (f.why["words"]["score"] for f in page.found if f.why)
        assert asked < told


def test_a_question_asking_when_raises_a_turn_that_says_when(tmp_path: Path) -> None:
    clock = Clock(1_700_000_000_000)
    with open_engine_at(tmp_path / "when.db", clock=clock) as eng:
        eng.memories.store("Jon: I got mentored by an amazing business owner yesterday, so inspiring")
        clock.now += 60_000
        eng.memories.store("Gina: mentored by a business owner")
        eng.weights = replace(eng.weights, time_told=0.0)
        question = "When were they mentored by a business owner"
        assert page_contents(eng.items.search(question, kinds=["memory"]))[0].startswith("Gina")
        eng.weights = replace(eng.weights, time_told=0.5)
        page = eng.items.search(question, kinds=["memory"], explain=True)
        assert page_contents(page)[0].startswith("Jon")
        assert [signals["time"] for signals in word_signals(page)] == [1.0, 0.0]
        # A question that does not ask when leaves the words' order and explains no time.
        page = eng.items.search("Were they mentored by a business owner", kinds=["memory"], explain=True)
        assert page_contents(page)[0].startswith("Gina")
        assert all("time" not in signals for signals in word_signals(page))


# -- the sitting a memory was written in -----------------------------------------------------------


def test_a_memory_whose_sitting_holds_more_of_the_question_ranks_above_an_equal_match(tmp_path: Path) -> None:
    day = 86_400_000
    clock = Clock(1_700_000_000_000)
    with open_engine_at(tmp_path / "sittings.db", clock=clock) as eng:
        # One conversation about the ridge trail: three turns, a minute apart ...
        eng.memories.store("Jon: we walked the ridge trail at dawn")
        clock.now += 60_000
        eng.memories.store("Gina: the ridge was windy")
        clock.now += 60_000
        eng.memories.store("Jon: the trail was muddy after the rain")
        # ... and, days later, a turn that names it in passing, as strongly as the first.
        clock.now += 5 * day
        eng.memories.store("Gina: we walked the ridge trail at noon")
        clock.now += 30 * day
        question = "Which trail on the ridge did they walk?"
        eng.weights = replace(eng.weights, sitting=0.0)
        page = eng.items.search(question, kinds=["memory"], explain=True)
        # Equal by their words, the newer of the two ranks first without the rule ...
        assert page_contents(page)[:2] == [
            "Gina: we walked the ridge trail at noon",
            "Jon: we walked the ridge trail at dawn",
        ]
        assert all("sitting" not in signals for signals in word_signals(page))
        # ... and below the turn whose conversation holds more of the question with it.
        eng.weights = replace(eng.weights, sitting=0.2)
        page = eng.items.search(question, kinds=["memory"], explain=True)
        assert page_contents(page)[:2] == [
            "Jon: we walked the ridge trail at dawn",
            "Gina: we walked the ridge trail at noon",
        ]
        signals = [signals["sitting"] for signals in word_signals(page)]
        # The three turns of the conversation share the mean of their three scores; the turn
        # alone in its half hour gets its own score over three (the missing two count 0), and
        # a share of 0.2 of that is added to it.
        assert signals[0] == signals[2] == signals[3] > signals[1] == pytest.approx(0.75 / 3, abs=1e-4)
        assert [f.score for f in page.found][1] == pytest.approx(0.75 + 0.2 * 0.75 / 3)


def test_memories_written_in_one_sitting_are_not_told_apart_by_it(tmp_path: Path) -> None:
    clock = Clock(1_700_000_000_000)
    with open_engine_at(tmp_path / "one-sitting.db", clock=clock) as eng:
        for text in ("we walked the ridge trail at dawn", "the ridge was windy", "the trail was muddy"):
            eng.memories.store(text)
            clock.now += 60_000
        page = eng.items.search("the ridge trail", kinds=["memory"], explain=True)
        assert len(page.found) == 3
        assert all("sitting" not in signals for signals in word_signals(page))
