"""MemoryReads and MemoryWrites: memory rows, tags, counters and the turn a turn follows."""

from __future__ import annotations

import pytest

from mnemodb.model.records import Memory, MemoryView
from mnemodb.store.base import Store, TimeRange
from store.contract.rows import T0, A, B, C, add_entity, add_memory, add_node, digest


def test_a_memory_reads_back_with_every_field(store: Store) -> None:
    with store.write() as tx:
        pk = add_memory(
            tx,
            "the kettle is broken",
            at=T0 + 5,
            tags=["kitchen", "appliance"],
            summary="kettle",
            importance=7,
            memory_type="fact",
            props={"room": "kitchen", "floor": 1},
        )
    with store.read() as tx:
        memory = tx.memory_by_pk(pk)
    assert memory is not None
    assert memory.pk == pk
    assert memory.scope == A
    assert memory.content == "the kettle is broken"
    assert memory.hash == digest("the kettle is broken")
    assert memory.tags == ("appliance", "kitchen")  # sorted
    assert (memory.summary, memory.importance, memory.memory_type) == ("kettle", 7, "fact")
    assert dict(memory.props) == {"room": "kitchen", "floor": 1}
    assert (memory.created_at, memory.updated_at) == (T0 + 5, T0 + 5)
    assert (memory.access_count, memory.last_accessed_at) == (0, None)


def test_missing_or_other_nodes_are_no_memories(store: Store) -> None:
    with store.write() as tx:
        memory = add_memory(tx, "one")
        entity = add_entity(tx, "Ada")
    with store.read() as tx:
        assert tx.memory_by_pk(memory + entity + 100) is None
        assert tx.memory_by_pk(entity) is None
        found = tx.memories_by_pk([memory, entity, memory + entity + 100])
    assert list(found) == [memory]
    assert isinstance(found[memory], Memory)


def test_memory_views_show_the_fields_of_the_memories(store: Store) -> None:
    with store.write() as tx:
        full = add_memory(
            tx, "the kettle is broken", at=T0 + 5, tags=["kitchen", "appliance"], summary="kettle", importance=7
        )
        bare = add_memory(tx, "a plain one", at=T0 + 9, memory_type="fact")
        entity = add_entity(tx, "Ada")
    store.bump_access({bare: (2, T0 + 40)})
    with store.read() as tx:
        views = tx.memory_views([bare, entity, full, full + bare + entity + 100])
        memories = tx.memories_by_pk([full, bare])
    assert sorted(views) == sorted([full, bare])
    for pk, view in views.items():
        memory = memories[pk]
        assert view == MemoryView(
            pk,
            memory.content,
            memory.summary,
            memory.tags,
            memory.importance,
            memory.memory_type,
            memory.created_at,
            memory.last_accessed_at,
            memory.hash,
        )
    assert views[full].tags == ("appliance", "kitchen")
    assert (views[full].summary, views[bare].summary) == ("kettle", None)
    assert (views[full].last_accessed_at, views[bare].last_accessed_at) == (None, T0 + 40)
    assert views[bare].created_at == T0 + 9
    with store.read() as tx:
        assert tx.memory_views([]) == {}


def test_memories_read_their_tags_once_the_first_tag_arrives_and_none_after_the_last_goes(store: Store) -> None:
    # The SQLite store skips the tags' look-up while no memory has a tag: the reads must
    # follow the store from no tags to some and back.
    with store.write() as tx:
        plain = add_memory(tx, "a plain one")
        later = add_memory(tx, "tagged later")
    with store.read() as tx:
        assert {pk: v.tags for pk, v in tx.memory_views([plain, later]).items()} == {plain: (), later: ()}
    with store.write() as tx:
        tx.add_tags(later, ["b", "a"])
    with store.read() as tx:
        views = tx.memory_views([plain, later])
        found = tx.memories_by_pk([plain, later])
    assert {pk: v.tags for pk, v in views.items()} == {plain: (), later: ("a", "b")}
    assert {pk: m.tags for pk, m in found.items()} == {plain: (), later: ("a", "b")}
    with store.write() as tx:
        tx.replace_tags(later, [])
    with store.read() as tx:
        assert {pk: v.tags for pk, v in tx.memory_views([plain, later]).items()} == {plain: (), later: ()}
        assert {pk: m.tags for pk, m in tx.memories_by_pk([plain, later]).items()} == {plain: (), later: ()}


ODD_TAGS = ['say "hi"', "back\\slash", "nul\x00byte", "tab\tand\nline", "é", "Z", "a", "😀", "[]", ","]


@pytest.mark.parametrize("count", [1, 3, 520])
def test_memories_read_by_pk_carry_their_tags_sorted_and_untagged_ones_none(store: Store, count: int) -> None:
    # Every third memory untagged, the others with tags JSON, SQL and the stores' escapes
    # must leave as they are; 520: more than one chunk of the SQLite store's read (500).
    with store.write() as tx:
        pks = [
            add_memory(tx, f"memory number {i}", tags=[] if i % 3 == 0 else ODD_TAGS[i % 7 :][: 1 + i % 4])
            for i in range(count)
        ]
    expected = {pk: () if i % 3 == 0 else tuple(sorted(ODD_TAGS[i % 7 :][: 1 + i % 4])) for i, pk in enumerate(pks)}
    with store.read() as tx:
        found = tx.memories_by_pk(pks)
        one = {pk: tx.memory_by_pk(pk) for pk in pks[:4]}
        by_hash = tx.memory_by_hash([A], digest(f"memory number {count - 1}"))
        views = tx.memory_views(pks)
    assert {pk: m.tags for pk, m in found.items()} == expected
    assert {pk: m.tags for pk, m in one.items() if m is not None} == {pk: expected[pk] for pk in pks[:4]}
    assert by_hash is not None and by_hash.tags == expected[pks[-1]]
    assert {pk: v.tags for pk, v in views.items()} == expected  # the views too


def test_memory_by_hash_is_the_oldest_in_the_scopes(store: Store) -> None:
    with store.write() as tx:
        first = add_memory(tx, "same words", scope=B)
        second = add_memory(tx, "same words", scope=A)
        add_memory(tx, "same words", scope=C)
    with store.read() as tx:
        found = tx.memory_by_hash([A, B], digest("same words"))
        only_a = tx.memory_by_hash([A], digest("same words"))
        assert tx.memory_by_hash([A, B], digest("other words")) is None
        assert tx.memory_by_hash([], digest("same words")) is None
    assert found is not None and found.pk == first
    assert only_a is not None and only_a.pk == second


def test_memory_pk_is_exactly_one_scope(store: Store) -> None:
    with store.write() as tx:
        in_a = add_memory(tx, "held in a")
    with store.read() as tx:
        assert tx.memory_pk(A, digest("held in a")) == in_a
        assert tx.memory_pk(B, digest("held in a")) is None
        assert tx.memory_pk(A, digest("never stored")) is None


def test_latest_memory_is_the_newest_before_a_pk_since_a_time(store: Store) -> None:
    with store.write() as tx:
        old = add_memory(tx, "turn one", at=T0)
        middle = add_memory(tx, "turn two", at=T0 + 10)
        add_memory(tx, "elsewhere", scope=B, at=T0 + 20)
        last = add_memory(tx, "turn three", at=T0 + 30)
    with store.read() as tx:
        assert tx.latest_memory(A, last + 100, T0) == last
        assert tx.latest_memory(A, last, T0) == middle
        assert tx.latest_memory(A, middle, T0) == old
        assert tx.latest_memory(A, last, T0 + 11) is None  # too old
        assert tx.latest_memory(A, old, T0) is None
        assert tx.latest_memory(C, last + 100, T0) is None


def test_update_memory_sets_only_the_fields_given(store: Store) -> None:
    with store.write() as tx:
        pk = add_memory(tx, "draft", summary="s", importance=2, memory_type="plan")
        tx.update_memory(pk, {"content": "final", "hash": digest("final"), "importance": 9})
    with store.read() as tx:
        memory = tx.memory_by_pk(pk)
        assert tx.memory_pk(A, digest("final")) == pk
        assert tx.memory_pk(A, digest("draft")) is None
    assert memory is not None
    assert (memory.content, memory.hash, memory.importance) == ("final", digest("final"), 9)
    assert (memory.summary, memory.memory_type) == ("s", "plan")


def test_update_memory_can_clear_the_summary(store: Store) -> None:
    with store.write() as tx:
        pk = add_memory(tx, "with summary", summary="short")
        tx.update_memory(pk, {"summary": None, "memory_type": "lesson"})
    with store.read() as tx:
        memory = tx.memory_by_pk(pk)
    assert memory is not None and (memory.summary, memory.memory_type) == (None, "lesson")


def test_update_memory_refuses_other_field_names(store: Store) -> None:
    with store.write() as tx:
        pk = add_memory(tx, "text")
        with pytest.raises(ValueError):
            tx.update_memory(pk, {"scope": B})
        with pytest.raises(ValueError):
            tx.update_memory(pk, {"content": "x", "tags": ["a"]})
        memory = tx.memory_by_pk(pk)
    assert memory is not None and memory.content == "text" and memory.scope == A


def test_add_tags_returns_those_added_in_the_order_given(store: Store) -> None:
    with store.write() as tx:
        pk = add_memory(tx, "tagged", tags=["b"])
        added = tx.add_tags(pk, ["z", "b", "a", "z"])
        memory = tx.memory_by_pk(pk)
    assert added == ["z", "a"]
    assert memory is not None and memory.tags == ("a", "b", "z")


def test_replace_tags_makes_them_exactly_the_given_ones(store: Store) -> None:
    with store.write() as tx:
        pk = add_memory(tx, "tagged", tags=["old", "kept"])
        tx.replace_tags(pk, ["kept", "new"])
        replaced = tx.memory_by_pk(pk)
        tx.replace_tags(pk, [])
        cleared = tx.memory_by_pk(pk)
    assert replaced is not None and replaced.tags == ("kept", "new")
    assert cleared is not None and cleared.tags == ()


def test_count_memories_follows_inserts_and_deletes_per_scope(store: Store) -> None:
    with store.read() as tx:
        assert tx.count_memories([A, B]) == 0
        assert tx.memories_per_scope() == {}
    with store.write() as tx:
        first = add_memory(tx, "a1")
        add_memory(tx, "a2")
        add_memory(tx, "b1", scope=B)
        add_node(tx, "Thing")
        add_entity(tx, "Not a memory")
    with store.read() as tx:
        assert tx.count_memories([A]) == 2
        assert tx.count_memories([A, B]) == 3
        assert tx.count_memories([C]) == 0
        assert tx.memories_per_scope() == {A: 2, B: 1}
    with store.write() as tx:
        tx.delete_node(first)
    with store.read() as tx:
        assert tx.count_memories([A, B]) == 2
        assert tx.memories_per_scope() == {A: 1, B: 1}
    with store.write() as tx:
        for pk in tx.node_pks_with_labels(["Memory"]):
            tx.delete_node(pk)
    with store.read() as tx:
        assert tx.count_memories([A, B]) == 0
        assert tx.memories_per_scope() == {}


def test_memories_per_scope_is_by_scope(store: Store) -> None:
    with store.write() as tx:
        for scope in (C, B, A):
            add_memory(tx, f"in {scope}", scope=scope)
    with store.read() as tx:
        assert list(tx.memories_per_scope()) == sorted([A, B, C])


def test_count_tags_counts_distinct_tags_and_follows_changes(store: Store) -> None:
    with store.write() as tx:
        first = add_memory(tx, "one", tags=["x", "y"])
        second = add_memory(tx, "two", tags=["y", "z"])
        add_memory(tx, "three", scope=B, tags=["w", "x"])
    with store.read() as tx:
        assert tx.count_tags([A]) == 3
        assert tx.count_tags([B]) == 2
        assert tx.count_tags([A, B]) == 4
        assert tx.count_tags([C]) == 0
    with store.write() as tx:
        tx.replace_tags(second, ["y"])  # z is gone
        tx.delete_node(first)  # x stays in B only, y on second
    with store.read() as tx:
        assert tx.count_tags([A]) == 1
        assert tx.count_tags([A, B]) == 3
    with store.write() as tx:
        tx.add_tags(second, ["fresh"])
    with store.read() as tx:
        assert tx.count_tags([A]) == 2


def test_memory_time_range(store: Store) -> None:
    with store.read() as tx:
        assert tx.memory_time_range([A]) == TimeRange(None, None)
    with store.write() as tx:
        add_memory(tx, "mid", at=T0 + 50)
        add_memory(tx, "early", at=T0 + 10)
        add_memory(tx, "late", scope=B, at=T0 + 90)
        add_entity(tx, "Not counted", at=T0 + 500)
    with store.read() as tx:
        in_a = tx.memory_time_range([A])
        both = tx.memory_time_range([A, B])
        assert tx.memory_time_range([C]) == TimeRange(None, None)
    assert in_a == TimeRange(T0 + 10, T0 + 50)
    assert (in_a.oldest, in_a.newest) == (T0 + 10, T0 + 50)
    assert both == TimeRange(T0 + 10, T0 + 90)


def test_most_important_is_the_highest_importance_of_the_scopes_memories_not_archived(store: Store) -> None:
    with store.read() as tx:
        assert tx.most_important([A]) is None
    with store.write() as tx:
        add_memory(tx, "low", importance=2)
        add_memory(tx, "mid", importance=6)
        top = add_memory(tx, "top", importance=9)
        elsewhere = add_memory(tx, "elsewhere", scope=B, importance=10)
        add_memory(tx, "zero", scope=C, importance=0)
        add_entity(tx, "Not a memory")
    with store.read() as tx:
        assert tx.most_important([A]) == 9
        assert tx.most_important([A, B]) == 10
        assert tx.most_important([C]) == 0  # 0 is an importance, not none
        assert tx.most_important([A, C]) == 9
        assert tx.most_important([]) is None
    with store.write() as tx:
        tx.set_archived(top, T0 + 1)
        tx.set_archived(add_memory(tx, "archived only", scope=C, importance=4), T0 + 1)
    with store.read() as tx:
        assert tx.most_important([A]) == 6
        assert tx.most_important([C]) == 0
    with store.write() as tx:
        tx.set_archived(top, None)
        tx.set_archived(elsewhere, T0 + 2)
    with store.read() as tx:
        assert tx.most_important([A]) == 9
        assert tx.most_important([B]) is None  # only archived memories


def test_deleting_a_memory_node_removes_the_memory_and_its_tags(store: Store) -> None:
    with store.write() as tx:
        pk = add_memory(tx, "doomed", tags=["gone"])
        tx.delete_node(pk)
    with store.read() as tx:
        assert tx.memory_by_pk(pk) is None
        assert tx.memory_pk(A, digest("doomed")) is None
        assert tx.memories_with_tags(["gone"], [A], 10) == []
        assert tx.count_tags([A]) == 0


def test_writes_to_a_missing_memory_change_nothing(store: Store) -> None:
    with store.write() as tx:
        pk = add_memory(tx, "present", tags=["t"])
        missing = pk + 1000
        tx.update_memory(missing, {"content": "ghost", "hash": digest("ghost")})
        assert tx.add_tags(missing, ["t", "u"]) == []
        tx.replace_tags(missing, ["v"])
    with store.read() as tx:
        assert tx.memory_by_pk(missing) is None
        assert tx.count_memories([A]) == 1
        assert tx.count_tags([A]) == 1
        assert tx.memories_with_tags(["u", "v"], [A], 10) == []


def test_memory_contents_reads_only_the_memories_whose_content_holds_the_text(store: Store) -> None:
    with store.write() as tx:
        labelled = add_memory(tx, "Melanie: I painted a sunset", at=T0)
        plain = add_memory(tx, "the kettle is broken", at=T0 + 1)
        nul = add_memory(tx, "Tom:\x00 a NUL after the label", at=T0 + 2)
        entity = add_entity(tx, "Melanie: the painter", at=T0 + 3)
    with store.read() as tx:
        found = tx.memory_contents([labelled, plain, nul, entity, 99_999], ":")
        assert found == {labelled: "Melanie: I painted a sunset", nul: "Tom:\x00 a NUL after the label"}
        assert tx.memory_contents([labelled, plain], "kettle") == {plain: "the kettle is broken"}
        assert tx.memory_contents([labelled], "MELANIE") == {}  # a plain substring: case counts
        assert tx.memory_contents([], ":") == {}
