"""ChangeLogReads and ChangeLogWrites: a gapless, commit-ordered log."""

from __future__ import annotations

import contextlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemodb.model.records import Change
from mnemodb.store.base import Store
from store.contract.rows import T0, A, B


class _Abort(Exception):
    """Raised to roll a block back."""


def test_an_empty_log(store: Store) -> None:
    with store.read() as tx:
        assert tx.last_change_at() is None
        assert tx.current_seq() == 0
        assert tx.changes(0, None) == []
        assert tx.changes_of("anything") == []


def test_append_returns_the_next_seq_and_entries_read_back(store: Store) -> None:
    with store.write() as tx:
        first = tx.append_change(T0, A, "create_node", "n1", {"label": "Thing"})
        second = tx.append_change(T0 + 1, None, "set_meta", None, {})
    with store.write() as tx:
        third = tx.append_change(T0 + 2, B, "delete_node", "n1", {"why": ["x", 1, True, None, 1.5]})
    assert (first, second, third) == (1, 2, 3)
    with store.read() as tx:
        assert tx.current_seq() == 3
        assert tx.last_change_at() == T0 + 2
        every = tx.changes(0, None)
        assert tx.changes(2, None) == every[1:]
        assert tx.changes(1, 2) == every[:2]
        assert tx.changes(4, None) == []
        assert tx.changes_of("n1") == [every[0], every[2]]
    assert every[0] == Change(1, T0, A, "create_node", "n1", {"label": "Thing"})
    assert every[1] == Change(2, T0 + 1, None, "set_meta", None, {})
    assert every[2] == Change(3, T0 + 2, B, "delete_node", "n1", {"why": ["x", 1, True, None, 1.5]})


def test_rewrite_change_keeps_seq_time_op_and_target(store: Store) -> None:
    with store.write() as tx:
        tx.append_change(T0, A, "create_node", "n1", {"content": "secret"})
        seq = tx.append_change(T0 + 1, A, "update_node", "n1", {"content": "more secret"})
        tx.append_change(T0 + 2, A, "create_node", "n2", {})
        tx.rewrite_change(seq, {"redacted": True})
        tx.rewrite_change(99, {"nothing": "here"})
    with store.read() as tx:
        assert tx.current_seq() == 3
        (change,) = tx.changes(seq, 1)
        assert [c.seq for c in tx.changes(0, None)] == [1, 2, 3]
    assert change == Change(seq, T0 + 1, A, "update_node", "n1", {"redacted": True})


def test_a_rolled_back_write_leaves_no_gap(store: Store) -> None:
    with store.write() as tx:
        tx.append_change(T0, A, "a", None, {})
    with contextlib.suppress(_Abort), store.write() as tx:
        tx.append_change(T0, A, "lost", None, {})
        raise _Abort
    with store.write() as tx:
        seq = tx.append_change(T0, A, "b", None, {})
    assert seq == 2
    with store.read() as tx:
        assert [(c.seq, c.op) for c in tx.changes(0, None)] == [(1, "a"), (2, "b")]


def test_a_rolled_back_savepoint_leaves_no_gap(store: Store) -> None:
    with store.write() as tx:
        tx.append_change(T0, A, "a", None, {})
        with contextlib.suppress(_Abort), tx.savepoint():
            tx.append_change(T0, A, "lost", None, {})
            raise _Abort
        seq = tx.append_change(T0, A, "b", None, {})
    assert seq == 2


# Each step: a write transaction appending some entries, committed or rolled back, with
# an inner savepoint that keeps or drops its own entries.
STEP = st.tuples(
    st.integers(min_value=0, max_value=3),
    st.integers(min_value=0, max_value=2),
    st.booleans(),
    st.booleans(),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(STEP, max_size=8))
def test_the_log_stays_gapless_over_any_commits_and_rollbacks(
    store: Store, steps: list[tuple[int, int, bool, bool]]
) -> None:
    with store.read() as tx:
        start = tx.current_seq()
    expected = start
    for outer, inner, inner_kept, committed in steps:
        kept = 0
        with contextlib.suppress(_Abort), store.write() as tx:
            for _ in range(outer):
                kept += 1
                assert tx.append_change(T0, A, "step", None, {}) == expected + kept
            with contextlib.suppress(_Abort), tx.savepoint():
                for _ in range(inner):
                    tx.append_change(T0, A, "inner", None, {})
                if not inner_kept:
                    raise _Abort
            if inner_kept:
                kept += inner
            if not committed:
                raise _Abort
        if committed:
            expected += kept
        with store.read() as tx:
            assert tx.current_seq() == expected
    with store.read() as tx:
        seqs = [c.seq for c in tx.changes(start + 1, None)]
    assert seqs == list(range(start + 1, expected + 1))
