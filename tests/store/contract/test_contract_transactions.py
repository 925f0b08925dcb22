"""Transactions: a write commits whole or not at all, savepoints undo only their block,
a read is one snapshot, and writers never overlap."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

from mnemodb.model.records import ItemFilter
from mnemodb.store.base import Store
from store.contract.rows import T0, A, add_edge, add_entity, add_memory, add_node, digest

# A bound on waiting for a thread that should finish at once: only a hang reaches it.
HANG_S = 60.0


class _Abort(Exception):
    """Raised to roll a block back."""


def _in_thread(work: Callable[[], None]) -> None:
    """Run `work` in another thread and wait for it (a read there is a read of its own)."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(HANG_S)
    assert not thread.is_alive(), "the thread hung"
    if errors:
        raise errors[0]


def test_a_write_commits_when_its_block_ends(store: Store) -> None:
    with store.write() as tx:
        pk = add_memory(tx, "kept", tags=["t"])
        tx.append_change(T0, A, "create", None, {})
    with store.read() as tx:
        assert tx.memory_by_pk(pk) is not None
        assert tx.current_seq() == 1


def test_a_write_that_raises_leaves_nothing_behind(store: Store) -> None:
    with store.write() as tx:
        kept = add_memory(tx, "kept before")
    with contextlib.suppress(_Abort), store.write() as tx:
        memory = add_memory(tx, "lost words", tags=["lost"])
        entity = add_entity(tx, "Lost", observations=["gone"])
        add_edge(tx, memory, entity)
        tx.update_memory(kept, {"content": "changed", "hash": digest("changed")})
        tx.set_meta("lost", "yes")
        tx.append_change(T0, A, "create", None, {})
        tx.set_embedding(memory, "m", b"\x00\x00\x80?", 1, T0)
        raise _Abort
    with store.read() as tx:
        assert tx.labels_of([memory, entity]) == {}
        assert tx.count_memories([A]) == 1
        assert tx.count_tags([A]) == 0
        assert tx.search_text(["lost"], [A], 10) == []
        assert tx.entity_by_name([A], "Lost") is None
        assert tx.get_meta("lost") is None
        assert tx.current_seq() == 0
        assert tx.embedding_changes("m").generation == 0
        before = tx.memory_by_pk(kept)
    assert before is not None and before.content == "kept before"


def test_a_savepoint_undoes_only_its_own_block(store: Store) -> None:
    with store.write() as tx:
        outer = add_memory(tx, "outer words")
        with contextlib.suppress(_Abort), tx.savepoint():
            inner = add_memory(tx, "inner words")
            tx.update_memory(outer, {"importance": 9})
            tx.set_meta("inner", "yes")
            raise _Abort
        after = add_node(tx)
        tx.set_meta("outer", "yes")
    with store.read() as tx:
        memory = tx.memory_by_pk(outer)
        assert tx.memory_by_pk(inner) is None
        assert tx.labels_of([after]).keys() == {after}
        assert tx.get_meta("inner") is None
        assert tx.get_meta("outer") == "yes"
        assert tx.count_memories([A]) == 1
        assert tx.search_text(["inner"], [A], 10) == []
    assert memory is not None and memory.importance == 0


def test_a_savepoint_that_ends_normally_keeps_its_changes(store: Store) -> None:
    with store.write() as tx:
        with tx.savepoint():
            kept = add_node(tx)
            with contextlib.suppress(_Abort), tx.savepoint():
                lost = add_node(tx)
                raise _Abort
        with contextlib.suppress(_Abort), tx.savepoint():
            with tx.savepoint():
                nested = add_node(tx)
            raise _Abort
    with store.read() as tx:
        assert tx.labels_of([kept, lost, nested]).keys() == {kept}


def test_a_savepoint_lets_the_error_through(store: Store) -> None:
    raised = False
    with store.write() as tx:
        try:
            with tx.savepoint():
                raise _Abort
        except _Abort:
            raised = True
    assert raised


def test_a_read_is_one_snapshot(store: Store) -> None:
    with store.write() as tx:
        first = add_memory(tx, "first")
    with store.read() as tx:
        assert tx.count_memories([A]) == 1
        with store.write() as wx:
            second = add_memory(wx, "second")
            wx.update_memory(first, {"importance": 5})
            wx.append_change(T0, A, "create", None, {})
        assert tx.count_memories([A]) == 1
        assert tx.memory_by_pk(second) is None
        memory = tx.memory_by_pk(first)
        assert memory is not None and memory.importance == 0
        assert tx.current_seq() == 0
        assert tx.list_memories([A], ItemFilter(), T0, 0, 10) == [first]
    with store.read() as tx:
        assert tx.count_memories([A]) == 2
        assert tx.current_seq() == 1


def test_a_read_does_not_see_an_uncommitted_write_and_is_not_blocked_by_it(store: Store) -> None:
    seen: list[int] = []
    with store.write() as tx:
        add_memory(tx, "not yet")

        def count() -> None:
            with store.read() as rx:
                seen.append(rx.count_memories([A]))

        _in_thread(count)
    assert seen == [0]


def test_writers_never_overlap(store: Store) -> None:
    entered = threading.Event()
    seqs: list[int] = []

    def second_writer() -> None:
        with store.write() as tx:
            entered.set()
            seqs.append(tx.append_change(T0, A, "second", None, {}))

    thread = threading.Thread(target=second_writer)
    with store.write() as tx:
        seqs.append(tx.append_change(T0, A, "first", None, {}))
        thread.start()
        # However long this waits, the second writer may not start while this one is open.
        assert not entered.wait(0.3)
        seqs.append(tx.append_change(T0, A, "first again", None, {}))
    thread.join(HANG_S)
    assert not thread.is_alive()
    assert seqs == [1, 2, 3]
    with store.read() as rx:
        assert [c.op for c in rx.changes(0, None)] == ["first", "first again", "second"]
