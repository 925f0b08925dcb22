"""TextSearch: memories, declared node text and entities by analysed words.

Scores are on the backend's own scale: these tests only ever compare them within one result
set, as the engine does."""

from __future__ import annotations

from mnemodb.model.ids import new_ulid
from mnemodb.model.records import ItemFilter
from mnemodb.store.base import EntityFieldWeights, MemoryFieldWeights, ReadTx, Store, TextHit
from store.contract.rows import T0, A, B, C, add_entity, add_memory, add_node, assert_best_first, pks_of

EVERY = ItemFilter()


def _context_hits(tx: ReadTx, word: str, context: float = 1.0) -> list[int]:
    weights = MemoryFieldWeights(context=context)
    return pks_of(tx.filtered_text_search([word], [A], 10, EVERY, T0, weights))


def test_search_text_finds_content_and_summaryassert_best_first(store: Store) -> None:
    with store.write() as tx:
        strong = add_memory(tx, "apple apple apple")
        weak = add_memory(tx, "an apple fell from the tree onto the grass below the old wall")
        summary = add_memory(tx, "something else entirely", summary="apple")
        add_memory(tx, "pears only")
    with store.read() as tx:
        hits = tx.search_text(["apple"], [A], 10)
        content_only = tx.search_text(["apple"], [A], 10, content_only=True)
    assert set(pks_of(hits)) == {strong, weak, summary}
    assert pks_of(hits).index(strong) < pks_of(hits).index(weak)
    assert_best_first(hits)
    assert set(pks_of(content_only)) == {strong, weak}
    assert_best_first(content_only)


def test_search_text_hits_carry_importance_and_creation_time(store: Store) -> None:
    with store.write() as tx:
        pk = add_memory(tx, "a comet passed", importance=6, at=T0 + 77)
    with store.read() as tx:
        (hit,) = tx.search_text(["comet"], [A], 10)
    assert isinstance(hit, TextHit)
    assert (hit.pk, hit.importance, hit.created_at) == (pk, 6, T0 + 77)
    assert hit.score > 0


def test_search_text_matches_any_term_stemmed(store: Store) -> None:
    with store.write() as tx:
        running = add_memory(tx, "she was running late")
        swims = add_memory(tx, "he swims daily")
        add_memory(tx, "nothing relevant")
    with store.read() as tx:
        assert set(pks_of(tx.search_text(["runs", "swimming"], [A], 10))) == {running, swims}


def test_search_text_filters_scopes_and_limits(store: Store) -> None:
    with store.write() as tx:
        in_a = [add_memory(tx, f"river number {i}") for i in range(3)]
        in_b = add_memory(tx, "river in b", scope=B)
        add_memory(tx, "river in c", scope=C)
    with store.read() as tx:
        assert set(pks_of(tx.search_text(["river"], [A], 10))) == set(in_a)
        assert set(pks_of(tx.search_text(["river"], [A, B], 10))) == {*in_a, in_b}
        assert len(tx.search_text(["river"], [A, B, C], 2)) == 2
        assert tx.search_text(["river"], [], 10) == []
        assert tx.search_text([], [A], 10) == []


def test_equal_matches_tie_in_ascending_pk(store: Store) -> None:
    scopes = [A, B, C, *(new_ulid() for _ in range(9))]
    with store.write() as tx:
        pks = [add_memory(tx, "identical words here", scope=scope) for scope in scopes]
    with store.read() as tx:
        every = tx.search_text(["words"], scopes, 20)
        some = tx.search_text(["words"], scopes[1:], 20)
        filtered = tx.filtered_text_search(["words"], scopes, 20, EVERY, T0, MemoryFieldWeights())
        limited = tx.search_text(["words"], scopes, 4)
    assert pks_of(every) == pks
    assert pks_of(some) == pks[1:]
    assert pks_of(filtered) == pks
    assert pks_of(limited) == pks[:4]
    assert_best_first(every)


def test_a_limit_keeps_the_first_of_the_whole_ranking(store: Store) -> None:
    # Texts of three lengths, four of each: three groups of equal scores, so that most
    # limits cut through a group of ties.
    with store.write() as tx:
        for i in range(12):
            add_memory(tx, " ".join(["lantern", *(["filler"] * (i % 3 * 4)), f"serial{i}"]))
    with store.read() as tx:
        every = tx.search_text(["lantern"], [A], 20)
        limited = {limit: tx.search_text(["lantern"], [A], limit) for limit in range(1, 13)}
    assert len(every) == 12
    assert_best_first(every)
    for limit, hits in limited.items():
        assert pks_of(hits) == pks_of(every)[:limit]


def test_a_limit_keeps_the_first_of_the_whole_entity_and_node_ranking(store: Store) -> None:
    # As for memories: three groups of equal scores, spread over two scopes, so that most
    # limits cut through a group of ties, which go by ascending pk.
    weights = EntityFieldWeights()
    with store.write() as tx:
        for i in range(12):
            filler = ["filler"] * (i % 3 * 4)
            add_entity(tx, f"Lantern {i}", observations=[" ".join(filler) or "plain"], scope=A if i % 2 else B)
            tx.set_node_text(add_node(tx, scope=B if i % 2 else A), " ".join(["lantern", *filler]))
    with store.read() as tx:
        entities = tx.entity_word_search(["lantern"], [A, B], 20, weights)
        nodes = tx.node_text_search(["lantern"], [A, B], 20)
        some_entities = {n: tx.entity_word_search(["lantern"], [A, B], n, weights) for n in range(1, 13)}
        some_nodes = {n: tx.node_text_search(["lantern"], [A, B], n) for n in range(1, 13)}
    assert len(entities) == len(nodes) == 12
    assert len({hit.score for hit in entities}) == len({hit.score for hit in nodes}) == 3
    assert_best_first(entities)
    assert_best_first(nodes)
    for n in range(1, 13):
        assert some_entities[n] == entities[:n]
        assert some_nodes[n] == nodes[:n]


def test_the_memory_text_index_follows_updates_and_deletes(store: Store) -> None:
    with store.write() as tx:
        pk = add_memory(tx, "the violin is tuned", summary="music")
        tx.update_memory(pk, {"content": "the cello is tuned"})
    with store.read() as tx:
        assert tx.search_text(["violin"], [A], 10) == []
        assert pks_of(tx.search_text(["cello"], [A], 10)) == [pk]
    with store.write() as tx:
        tx.update_memory(pk, {"summary": "strings"})
    with store.read() as tx:
        assert tx.search_text(["music"], [A], 10) == []
        assert pks_of(tx.search_text(["strings"], [A], 10)) == [pk]
    with store.write() as tx:
        tx.delete_node(pk)
    with store.read() as tx:
        assert tx.search_text(["cello", "strings"], [A], 10) == []
        assert tx.filtered_text_search(["cello"], [A], 10, EVERY, T0, MemoryFieldWeights()) == []


def test_memories_with_tags_newest_first_score_zero(store: Store) -> None:
    with store.write() as tx:
        old = add_memory(tx, "one", tags=["red"], importance=2, at=T0)
        mid = add_memory(tx, "two", tags=["blue", "red"], at=T0 + 1)
        add_memory(tx, "three", tags=["green"], at=T0 + 2)
        new = add_memory(tx, "four", tags=["blue"], at=T0 + 3)
        add_memory(tx, "five", tags=["red"], scope=C, at=T0 + 4)
    with store.read() as tx:
        hits = tx.memories_with_tags(["red", "blue"], [A], 10)
        limited = tx.memories_with_tags(["red", "blue"], [A], 2)
        assert tx.memories_with_tags([], [A], 10) == []
    assert pks_of(hits) == [new, mid, old]
    assert all(hit.score == 0.0 for hit in hits)
    assert hits[-1] == TextHit(old, 0.0, 2, T0)
    assert pks_of(limited) == [new, mid]


def test_turn_context_is_searched_by_the_filtered_search_only(store: Store) -> None:
    with store.write() as tx:
        first = add_memory(tx, "zebra stripes at dawn")
        second = add_memory(tx, "yes they were pretty", context_from=first)
        third = add_memory(tx, "what colour exactly", context_from=second)
        other = add_memory(tx, "a lone zebra")
    with store.read() as tx:
        assert set(pks_of(tx.search_text(["zebra"], [A], 10))) == {first, other}
        # The context is the turn followed, preceded by the one that turn followed.
        assert set(_context_hits(tx, "zebra")) == {first, second, third, other}
        assert set(_context_hits(tx, "pretty")) == {second, third}
        assert _context_hits(tx, "colour") == [third]


def test_the_context_weight_changes_the_order(store: Store) -> None:
    with store.write() as tx:
        turn = add_memory(tx, "the heron waited by the pond")
        follower = add_memory(tx, "it caught a fish", context_from=turn)
        direct = add_memory(tx, "a heron flew over the field")
    with store.read() as tx:
        low = _context_hits(tx, "heron", context=0.1)
        high = _context_hits(tx, "heron", context=10.0)
        scores = tx.filtered_text_search(["heron"], [A], 10, EVERY, T0, MemoryFieldWeights(context=10.0))
    assert low.index(direct) < low.index(follower)
    assert high.index(follower) < high.index(direct)
    assert set(low) == set(high) == {turn, follower, direct}
    assert_best_first(scores)


def test_the_context_follows_edits_of_the_turns_it_was_taken_from(store: Store) -> None:
    with store.write() as tx:
        first = add_memory(tx, "zebra stripes at dawn")
        second = add_memory(tx, "yes they were pretty", context_from=first)
        third = add_memory(tx, "what colour exactly", context_from=second)
        tx.update_memory(first, {"content": "lion roars at dusk"})
    with store.read() as tx:
        assert _context_hits(tx, "zebra") == []
        assert set(_context_hits(tx, "lion")) == {first, second, third}
    with store.write() as tx:
        tx.update_memory(second, {"content": "no they were plain"})
    with store.read() as tx:
        assert _context_hits(tx, "pretty") == []
        assert set(_context_hits(tx, "plain")) == {second, third}
        assert set(_context_hits(tx, "lion")) == {first, second, third}


def test_the_context_forgets_removed_turns(store: Store) -> None:
    with store.write() as tx:
        first = add_memory(tx, "zebra stripes at dawn")
        second = add_memory(tx, "yes they were pretty", context_from=first)
        third = add_memory(tx, "what colour exactly", context_from=second)
        tx.delete_node(first)
    with store.read() as tx:
        assert _context_hits(tx, "zebra") == []
        assert set(_context_hits(tx, "pretty")) == {second, third}
    with store.write() as tx:
        tx.delete_node(second)
    with store.read() as tx:
        assert _context_hits(tx, "pretty") == []
        assert _context_hits(tx, "colour") == [third]


def test_filtered_search_applies_the_filter(store: Store) -> None:
    with store.write() as tx:
        fact = add_memory(tx, "the tide is high", memory_type="fact", importance=5, tags=["sea"])
        plan = add_memory(tx, "tide tables to check", memory_type="plan")
    with store.read() as tx:
        facts = tx.filtered_text_search(["tide"], [A], 10, ItemFilter(types=("FACT",)), T0, MemoryFieldWeights())
        important = tx.filtered_text_search(["tide"], [A], 10, ItemFilter(min_importance=3), T0, MemoryFieldWeights())
        tagged = tx.filtered_text_search(["tide"], [A], 10, ItemFilter(tags=("sea",)), T0, MemoryFieldWeights())
        every = tx.filtered_text_search(["tide"], [A], 10, EVERY, T0, MemoryFieldWeights())
        modest = tx.filtered_text_search(["tide"], [A], 10, ItemFilter(max_importance=4), T0, MemoryFieldWeights())
    assert pks_of(modest) == [plan]
    assert pks_of(facts) == pks_of(important) == pks_of(tagged) == [fact]
    assert set(pks_of(every)) == {fact, plan}


def test_filtered_tagged_newest_first_meeting_the_filter(store: Store) -> None:
    with store.write() as tx:
        old = add_memory(tx, "one", tags=["sea"], importance=9, at=T0)
        add_memory(tx, "two", tags=["sea"], importance=1, at=T0 + 1)
        new = add_memory(tx, "three", tags=["sea", "sky"], importance=8, at=T0 + 2)
        add_memory(tx, "four", tags=["sea"], importance=9, scope=C, at=T0 + 3)
    with store.read() as tx:
        hits = tx.filtered_tagged(["sea"], [A], 10, ItemFilter(min_importance=5), T0)
        every = tx.filtered_tagged(["sky", "sea"], [A], 2, EVERY, T0)
    assert pks_of(hits) == [new, old]
    assert all(hit.score == 0.0 for hit in hits)
    assert len(every) == 2 and every[0].pk == new


def test_node_text_search_finds_declared_text(store: Store) -> None:
    with store.write() as tx:
        strong = add_node(tx)
        weak = add_node(tx)
        hidden = add_node(tx, scope=C)
        plain = add_node(tx)
        tx.set_node_text(strong, "orbit orbit orbit")
        tx.set_node_text(weak, "a long text that mentions an orbit once among many other words")
        tx.set_node_text(hidden, "orbit")
        tx.set_node_text(plain, "orbit")
        tx.set_node_text(plain, None)
    with store.read() as tx:
        hits = tx.node_text_search(["orbit"], [A], 10)
        assert tx.node_text_search(["orbit"], [A], 1) == hits[:1]
    assert pks_of(hits) == [strong, weak]
    assert_best_first(hits)
    with store.write() as tx:
        tx.clear_node_text()
    with store.read() as tx:
        assert tx.node_text_search(["orbit"], [A, C], 10) == []


def test_set_node_text_replaces_the_old_text(store: Store) -> None:
    with store.write() as tx:
        pk = add_node(tx)
        tx.set_node_text(pk, "first words")
        tx.set_node_text(pk, "second words")
    with store.read() as tx:
        assert tx.node_text_search(["first"], [A], 10) == []
        assert pks_of(tx.node_text_search(["second"], [A], 10)) == [pk]


def test_entity_word_search_ranks_by_weighted_fields(store: Store) -> None:
    with store.write() as tx:
        named = add_entity(tx, "Falcon", "bird", ["lives near rivers"])
        observed = add_entity(tx, "River", "place", ["a falcon nests by its banks"])
        add_entity(tx, "Falcon", "bird", scope=A)  # not what the name means
        add_entity(tx, "Falcon Two", scope=C)
    with store.read() as tx:
        by_name = tx.entity_word_search(["falcon"], [A], 10, EntityFieldWeights(name=10.0, observations=0.1))
        by_obs = tx.entity_word_search(["falcon"], [A], 10, EntityFieldWeights(name=0.1, observations=10.0))
        by_type = tx.entity_word_search(["place"], [A], 10, EntityFieldWeights())
        stemmed = tx.entity_word_search(["nesting"], [A], 10, EntityFieldWeights())
    assert pks_of(by_name) == [named, observed]
    assert pks_of(by_obs) == [observed, named]
    assert_best_first(by_name)
    assert_best_first(by_obs)
    assert pks_of(by_type) == [observed]
    assert pks_of(stemmed) == [observed]


def test_the_entity_word_index_follows_observations_and_renames(store: Store) -> None:
    weights = EntityFieldWeights()
    with store.write() as tx:
        pk = add_entity(tx, "Ada", "person", ["wrote programs"])
        tx.add_observations(pk, ["studied mathematics"], T0)
        tx.delete_observations(pk, ["wrote programs"])
        tx.rename_entity(pk, name="Augusta", entity_type="countess")
    with store.read() as tx:
        assert pks_of(tx.entity_word_search(["mathematics"], [A], 10, weights)) == [pk]
        assert tx.entity_word_search(["programs"], [A], 10, weights) == []
        assert tx.entity_word_search(["ada", "person"], [A], 10, weights) == []
        assert pks_of(tx.entity_word_search(["augusta"], [A], 10, weights)) == [pk]
        assert pks_of(tx.entity_word_search(["countess"], [A], 10, weights)) == [pk]


def test_a_word_every_row_holds_still_scores_positive(store: Store) -> None:
    with store.write() as tx:
        pks = [add_memory(tx, f"common word {i}") for i in range(5)]
        entities = [add_entity(tx, f"Common {i}") for i in range(5)]
        for pk in pks:
            tx.set_node_text(pk, "common")
    with store.read() as tx:
        assert_best_first(tx.search_text(["common"], [A], 10))
        assert_best_first(tx.entity_word_search(["common"], [A], 10, EntityFieldWeights()))
        assert_best_first(tx.node_text_search(["common"], [A], 10))
        assert len(tx.entity_word_search(["common"], [A], 10, EntityFieldWeights())) == len(entities)


def test_equal_entity_and_node_matches_tie_in_ascending_pk(store: Store) -> None:
    with store.write() as tx:
        entities = [add_entity(tx, f"Falcon {chr(ord('a') + i)}") for i in range(10)]
        nodes = [add_node(tx) for _ in range(10)]
        for pk in nodes:
            tx.set_node_text(pk, "same declared text")
    with store.read() as tx:
        found = tx.entity_word_search(["falcon"], [A], 20, EntityFieldWeights())
        declared = tx.node_text_search(["declared"], [A], 20)
        first_three = tx.entity_word_search(["falcon"], [A], 3, EntityFieldWeights())
    assert pks_of(found) == entities
    assert pks_of(first_three) == entities[:3]
    assert pks_of(declared) == nodes
