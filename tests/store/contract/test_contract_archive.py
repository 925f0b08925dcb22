"""Archived memories: kept and read by key, left out of every search and listing unless
asked (`include_archived`), and carried by dump and load."""

from __future__ import annotations

from mnemodb.model.records import ItemFilter
from mnemodb.store.base import MemoryFieldWeights, ReadTx, Store
from store.contract.rows import T0, A, B, add_memory, digest

EVERY = ItemFilter(include_archived=True)
LIVE = ItemFilter()


def _archive(store: Store, *pks: int, at: int | None = T0 + 100) -> None:
    with store.write() as tx:
        for pk in pks:
            tx.set_archived(pk, at)


def test_an_archived_memory_is_read_by_key_with_the_time_it_was_archived(store: Store) -> None:
    with store.write() as tx:
        kept = add_memory(tx, "kept", at=T0)
        archived = add_memory(tx, "archived", at=T0 + 1)
    _archive(store, archived)
    with store.read() as tx:
        memory = tx.memory_by_pk(archived)
        assert memory is not None and memory.archived_at == T0 + 100
        assert memory.updated_at == T0 + 1  # the store does not touch the node: the engine does
        assert tx.memories_by_pk([kept, archived])[archived].archived_at == T0 + 100
        assert tx.memories_by_pk([kept])[kept].archived_at is None
        by_hash = tx.memory_by_hash([A], digest("archived"))
        assert by_hash is not None and by_hash.pk == archived
        assert tx.memory_pk(A, digest("archived")) == archived
        assert tx.count_memories([A]) == 2
    _archive(store, archived, at=None)
    with store.read() as tx:
        memory = tx.memory_by_pk(archived)
        assert memory is not None and memory.archived_at is None
    with store.write() as tx:
        tx.set_archived(99_999, T0)  # a missing memory: nothing happens


def _searched(tx: ReadTx, scopes: list[str], *, include_archived: bool = False) -> list[int]:
    return [hit.pk for hit in tx.search_text(["kettle"], scopes, 10, include_archived=include_archived)]


def test_search_text_leaves_archived_memories_out_unless_asked(store: Store) -> None:
    with store.write() as tx:
        first = add_memory(tx, "the kettle boils", at=T0)
        second = add_memory(tx, "a kettle whistles", at=T0 + 1)
        elsewhere = add_memory(tx, "the kettle of scope b", scope=B, at=T0 + 2)
    with store.read() as tx:
        every = _searched(tx, [A, B])
        assert sorted(every) == sorted([first, second, elsewhere])
    _archive(store, second, elsewhere)
    with store.read() as tx:
        # One scope that holds every memory, and several: each way of searching leaves them out.
        assert _searched(tx, [A, B]) == [pk for pk in every if pk == first]
        assert _searched(tx, [A]) == [first]
        assert _searched(tx, [B]) == []
        assert sorted(_searched(tx, [A, B], include_archived=True)) == sorted(every)
        assert [h.pk for h in tx.search_text(["kettle"], [A], 10, content_only=True)] == [first]
        assert [h.pk for h in tx.search_text(["kettle"], [B], 10, include_archived=True)] == [elsewhere]
    _archive(store, second, elsewhere, at=None)
    with store.read() as tx:
        assert _searched(tx, [A, B]) == every


def test_an_archived_memory_does_not_take_a_place_among_the_best(store: Store) -> None:
    with store.write() as tx:
        best = add_memory(tx, "kettle kettle kettle", at=T0)
        good = add_memory(tx, "kettle kettle and tea", at=T0 + 1)
        fair = add_memory(tx, "a kettle, with tea and toast and jam", at=T0 + 2)
    _archive(store, best)
    with store.read() as tx:
        assert [h.pk for h in tx.search_text(["kettle"], [A], 2)] == [good, fair]


def test_memories_with_tags_leave_archived_ones_out_unless_asked(store: Store) -> None:
    with store.write() as tx:
        pks = [add_memory(tx, f"tagged {i}", tags=["x"], at=T0 + i) for i in range(4)]
        add_memory(tx, "tagged in b", scope=B, tags=["x"], at=T0 + 10)
    _archive(store, pks[3], pks[2])
    with store.read() as tx:
        assert [h.pk for h in tx.memories_with_tags(["x"], [A], 2)] == [pks[1], pks[0]]
        assert [h.pk for h in tx.memories_with_tags(["x"], [A], 2, include_archived=True)] == [pks[3], pks[2]]
        assert all(h.score == 0.0 for h in tx.memories_with_tags(["x"], [A], 10))


def test_a_filter_admits_archived_memories_only_with_include_archived(store: Store) -> None:
    with store.write() as tx:
        pks = [add_memory(tx, f"kettle memory {i}", tags=["x"], at=T0 + i) for i in range(5)]
    _archive(store, pks[4], pks[3], pks[1])
    live = [pks[2], pks[0]]
    newest = list(reversed(pks))
    weights = MemoryFieldWeights()
    with store.read() as tx:
        # A page is filled with live memories: the archived ones take no places in it.
        assert tx.list_memories([A], LIVE, T0, 0, 2) == live
        assert tx.list_memories([A], LIVE, T0, 1, 2) == live[1:]
        assert tx.list_memories([A], EVERY, T0, 0, 2) == newest[:2]
        assert tx.list_memories([A], ItemFilter(tags=("x",)), T0, 0, 10) == live
        assert sorted(h.pk for h in tx.filtered_text_search(["kettle"], [A], 10, LIVE, T0, weights)) == sorted(live)
        assert len(tx.filtered_text_search(["kettle"], [A], 10, EVERY, T0, weights)) == 5
        assert [h.pk for h in tx.filtered_tagged(["x"], [A], 2, LIVE, T0)] == live
        assert [h.pk for h in tx.filtered_tagged(["x"], [A], 2, EVERY, T0)] == newest[:2]
        assert tx.admitted(pks, "memory", LIVE, T0, [A]) == set(live)
        assert tx.admitted(pks, "memory", EVERY, T0, [A]) == set(pks)


def test_deleting_an_archived_memory_leaves_searches_right(store: Store) -> None:
    with store.write() as tx:
        kept = add_memory(tx, "kettle one", at=T0)
        gone = add_memory(tx, "kettle two", at=T0 + 1)
    _archive(store, gone)
    with store.write() as tx:
        tx.delete_node(gone)
    with store.read() as tx:
        assert _searched(tx, [A]) == [kept]
        assert _searched(tx, [A], include_archived=True) == [kept]
        assert tx.count_memories([A]) == 1


def test_dump_and_load_keep_the_time_a_memory_was_archived(store: Store, other_store: Store) -> None:
    with store.write() as tx:
        kept = add_memory(tx, "kettle kept", at=T0)
        archived = add_memory(tx, "kettle archived", at=T0 + 1)
    _archive(store, archived)
    with store.read() as tx:
        records = list(tx.dump())
    memories = {r["pk"]: r["memory"] for r in records if r["type"] == "node"}
    assert memories[archived]["archived_at"] == T0 + 100
    assert "archived_at" not in memories[kept]
    with other_store.write() as tx:
        assert all(tx.load(record) for record in records)
    with other_store.read() as tx:
        assert list(tx.dump()) == records
        loaded = tx.memory_by_pk(archived)
        assert loaded is not None and loaded.archived_at == T0 + 100
        assert _searched(tx, [A]) == [kept]
        assert sorted(_searched(tx, [A], include_archived=True)) == sorted([kept, archived])
