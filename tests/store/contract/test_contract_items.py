"""ItemReads: memories and entities under an ItemFilter, pages newest first, and facets."""

from __future__ import annotations

from mnemodb.model.records import SUPERSEDES, ItemFilter
from mnemodb.store.base import Store
from store.contract.rows import T0, A, B, C, add_edge, add_entity, add_memory, add_node

EVERY = ItemFilter()


def test_list_memories_newest_first_in_pages(store: Store) -> None:
    with store.write() as tx:
        pks = [add_memory(tx, f"memory {i}", at=T0 + i, scope=A if i % 2 else B) for i in range(6)]
        add_memory(tx, "hidden", scope=C, at=T0 + 100)
        add_entity(tx, "Not a memory", at=T0 + 200)
    newest = list(reversed(pks))
    with store.read() as tx:
        assert tx.list_memories([A, B], EVERY, T0, 0, 10) == newest
        assert tx.list_memories([A, B], EVERY, T0, 0, 2) == newest[:2]
        assert tx.list_memories([A, B], EVERY, T0, 2, 3) == newest[2:5]
        assert tx.list_memories([A, B], EVERY, T0, 6, 3) == []
        assert tx.list_memories([A], EVERY, T0, 0, 10) == [pk for pk in newest if pk in pks[1::2]]


def test_list_memories_filters(store: Store) -> None:
    with store.write() as tx:
        fact = add_memory(tx, "fact", memory_type="Fact", importance=8, tags=["x", "y"], props={"k": 1}, at=T0)
        plan = add_memory(tx, "plan", memory_type="plan", importance=2, tags=["x"], props={"k": "1"}, at=T0 + 10)
        flag = add_memory(tx, "flag", props={"k": True}, at=T0 + 20)
    with store.read() as rx:

        def listed(where: ItemFilter) -> list[int]:
            return rx.list_memories([A], where, T0, 0, 10)

        assert listed(ItemFilter(types=("fact",))) == [fact]
        assert listed(ItemFilter(types=("FACT", "plan"))) == [plan, fact]
        assert listed(ItemFilter(created_from=T0 + 10)) == [flag, plan]
        assert listed(ItemFilter(created_to=T0 + 10)) == [fact]
        assert listed(ItemFilter(tags=("x", "y"))) == [fact]
        assert listed(ItemFilter(tags=("x",))) == [plan, fact]
        assert listed(ItemFilter(min_importance=5)) == [fact]
        assert listed(ItemFilter(max_importance=2)) == [flag, plan]
        assert listed(ItemFilter(min_importance=1, max_importance=2)) == [plan]
        assert listed(ItemFilter(min_importance=3, max_importance=7)) == []
        assert listed(ItemFilter(props=(("k", 1),))) == [fact]
        assert listed(ItemFilter(props=(("k", "1"),))) == [plan]
        assert listed(ItemFilter(props=(("k", True),))) == [flag]
        assert listed(ItemFilter(pks=(plan, flag))) == [flag, plan]
        assert listed(ItemFilter(pks=())) == []


def test_linked_to_and_current_only_count_open_edges_valid_at_the_time(store: Store) -> None:
    with store.write() as tx:
        ada = add_entity(tx, "Ada")
        old = add_memory(tx, "old fact", at=T0)
        new = add_memory(tx, "new fact", at=T0 + 1)
        loose = add_memory(tx, "loose", at=T0 + 2)
        add_edge(tx, old, ada, "about")
        add_edge(tx, ada, new, "mentions")
        replaced = add_edge(tx, new, old, SUPERSEDES, valid_from=T0 + 50)
        tx.close_edge(replaced, T0 + 80)
    with store.read() as tx:
        assert tx.list_memories([A], ItemFilter(linked_to=(ada,)), T0 + 60, 0, 10) == [new, old]
        assert tx.list_memories([A], ItemFilter(current_only=True), T0 + 60, 0, 10) == [loose, new]
        assert tx.list_memories([A], ItemFilter(current_only=True), T0 + 10, 0, 10) == [loose, new, old]
        assert tx.list_memories([A], ItemFilter(current_only=True), T0 + 80, 0, 10) == [loose, new, old]


def test_edge_conditions_count_only_visible_edges(store: Store) -> None:
    with store.write() as tx:
        hidden = add_entity(tx, "Hidden", scope=C)
        visible = add_entity(tx, "Visible")
        linked = add_memory(tx, "linked to a hidden entity by an edge of A", at=T0)
        replaced = add_memory(tx, "superseded by a hidden memory", at=T0 + 1)
        newer = add_memory(tx, "the hidden newer one", scope=C, at=T0 + 2)
        add_edge(tx, linked, hidden, "about")
        add_edge(tx, linked, visible, "about", scope=C)
        add_edge(tx, newer, replaced, SUPERSEDES)
    with store.read() as tx:
        assert tx.list_memories([A], ItemFilter(linked_to=(hidden,)), T0, 0, 10) == []
        assert tx.list_memories([A], ItemFilter(linked_to=(visible,)), T0, 0, 10) == []
        assert tx.list_memories([A], ItemFilter(current_only=True), T0, 0, 10) == [replaced, linked]
        assert tx.admitted([linked], "memory", ItemFilter(linked_to=(hidden,)), T0, [A]) == set()
        assert tx.admitted([replaced], "memory", ItemFilter(current_only=True), T0, [A]) == {replaced}
        # Readable, they count.
        assert tx.list_memories([A, C], ItemFilter(linked_to=(hidden,)), T0, 0, 10) == [linked]
        assert tx.list_memories([A, C], ItemFilter(current_only=True), T0, 0, 10) == [newer, linked]


def test_list_entities_newest_first_names_mean(store: Store) -> None:
    with store.write() as tx:
        ada = add_entity(tx, "Ada", "person", at=T0)
        add_entity(tx, "Ada", "person", at=T0 + 5)  # not what the name means
        bob = add_entity(tx, "Bob", "Person", props={"k": 1}, at=T0 + 1)
        place = add_entity(tx, "Paris", "place", at=T0 + 2)
        add_entity(tx, "Hidden", "person", scope=C, at=T0 + 3)
        add_memory(tx, "a memory", at=T0 + 9)
    with store.read() as tx:
        assert tx.list_entities([A], EVERY, T0, 0, 10) == [place, bob, ada]
        assert tx.list_entities([A], EVERY, T0, 1, 1) == [bob]
        assert tx.list_entities([A], ItemFilter(types=("PERSON",)), T0, 0, 10) == [bob, ada]
        assert tx.list_entities([A], ItemFilter(props=(("k", 1),)), T0, 0, 10) == [bob]
        assert tx.list_entities([A], ItemFilter(created_from=T0 + 1), T0, 0, 10) == [place, bob]
        # Conditions about memories only: an entity never meets them.
        assert tx.list_entities([A], ItemFilter(min_importance=0), T0, 0, 10) == []
        assert tx.list_entities([A], ItemFilter(max_importance=10), T0, 0, 10) == []
        assert tx.list_entities([A], ItemFilter(tags=("x",)), T0, 0, 10) == []


def test_admitted_says_which_items_meet_the_filter(store: Store) -> None:
    with store.write() as tx:
        fact = add_memory(tx, "a", memory_type="fact")
        plan = add_memory(tx, "b", memory_type="plan")
        ada = add_entity(tx, "Ada", "fact")
        thing = add_node(tx)
    with store.read() as tx:
        assert tx.admitted([fact, plan, ada, thing], "memory", ItemFilter(types=("fact",)), T0, [A]) == {fact}
        assert tx.admitted([fact, plan, ada, thing], "entity", ItemFilter(types=("fact",)), T0, [A]) == {ada}
        assert tx.admitted([fact, plan], "memory", EVERY, T0, [A]) == {fact, plan}
        assert tx.admitted([], "memory", EVERY, T0, [A]) == set()


def test_facets_most_common_first_ties_by_value(store: Store) -> None:
    with store.write() as tx:
        add_memory(tx, "1", tags=["b", "a"], memory_type="fact")
        add_memory(tx, "2", tags=["b", "c"], memory_type="plan")
        add_memory(tx, "3", tags=["b"], memory_type="plan")
        add_memory(tx, "4", tags=["z", "b"], memory_type="fact", scope=C)
        one = add_entity(tx, "One", "person")
        two = add_entity(tx, "Two", "place")
        add_entity(tx, "Three", "place")
        add_edge(tx, one, two, "knows")
        add_edge(tx, two, one, "knows")
        add_edge(tx, one, one, "likes")
    with store.read() as tx:
        facets = tx.facets([A], 2)
        top_one = tx.facets([A], 1)
    assert facets == {
        "tags": [("b", 3), ("a", 1)],
        "memory_types": [("plan", 2), ("fact", 1)],
        "entity_types": [("place", 2), ("person", 1)],
        "relation_types": [("knows", 2), ("likes", 1)],
    }
    assert top_one["tags"] == [("b", 3)]


def test_facets_count_only_visible_relations(store: Store) -> None:
    with store.write() as tx:
        here = add_entity(tx, "Here")
        there = add_entity(tx, "There", scope=C)
        add_edge(tx, here, there, "reaches")
        add_edge(tx, here, here, "self")
    with store.read() as tx:
        assert tx.facets([A], 10)["relation_types"] == [("self", 1)]


def test_memory_growth_counts_memories_per_span_of_time(store: Store) -> None:
    with store.write() as tx:
        for offset in (0, 5, 9, 10, 35, 40):
            add_memory(tx, f"at {offset}", at=T0 + offset)
        add_memory(tx, "elsewhere", scope=C, at=T0 + 1)
        add_entity(tx, "Not a memory", at=T0 + 2)
    with store.read() as tx:
        assert tx.memory_growth([A], T0, 10, 4) == [3, 1, 0, 1]
        assert tx.memory_growth([A, C], T0, 10, 5) == [4, 1, 0, 1, 1]
        assert tx.memory_growth([A], T0 + 5, 5, 2) == [2, 1]
        assert tx.memory_growth([B], T0, 10, 3) == [0, 0, 0]


def test_largest_entities_have_the_most_observations(store: Store) -> None:
    with store.write() as tx:
        small = add_entity(tx, "small", observations=["one"])
        big = add_entity(tx, "big", observations=["one", "two", "three"])
        middle = add_entity(tx, "middle", observations=["one", "two"])
        tie = add_entity(tx, "tie", observations=["one", "two"])
        add_entity(tx, "empty")
        add_entity(tx, "hidden", observations=["a", "b", "c", "d"], scope=C)
    with store.read() as tx:
        assert tx.largest_entities([A], 10) == [(big, 3), (middle, 2), (tie, 2), (small, 1)]
        assert tx.largest_entities([A], 2) == [(big, 3), (middle, 2)]
        assert tx.largest_entities([B], 5) == []
