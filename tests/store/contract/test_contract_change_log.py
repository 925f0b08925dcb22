"""ChangeLogReads and ChangeLogWrites: a gapless, commit-ordered log, who made each entry,
and pages of it, newest first, filtered."""

from __future__ import annotations

import contextlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemodb.model.ids import new_ulid
from mnemodb.model.records import Change, ChangeFilter
from mnemodb.store.base import Store
from store.contract.rows import T0, A, B, C


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


def test_append_changes_appends_in_order_after_the_last_entry(store: Store) -> None:
    with store.write() as tx:
        tx.append_change(T0, A, "create_node", "n1", {"label": "Thing"})
        last = tx.append_changes(
            T0 + 1,
            [
                (A, "create_edge", "e1", {"src": "n1", "props": {"w": 1.5}}),
                (None, "set_meta", None, {}),
                (B, "x", "e2", {}),
            ],
            actor="token-a",
        )
        none = tx.append_changes(T0 + 2, [])
    assert (last, none) == (4, 4)
    with store.write() as tx:
        assert tx.append_change(T0 + 3, A, "delete_node", "n1", {}) == 5
    with store.read() as tx:
        every = tx.changes(0, None)
    assert every[1:4] == [
        Change(2, T0 + 1, A, "create_edge", "e1", {"src": "n1", "props": {"w": 1.5}}, "token-a"),
        Change(3, T0 + 1, None, "set_meta", None, {}, "token-a"),
        Change(4, T0 + 1, B, "x", "e2", {}, "token-a"),
    ]
    assert [c.seq for c in every] == [1, 2, 3, 4, 5]


def test_appended_changes_roll_back_with_their_transaction(store: Store) -> None:
    with contextlib.suppress(_Abort), store.write() as tx:
        tx.append_changes(T0, [(A, "create_node", "n1", {}), (A, "create_node", "n2", {})])
        raise _Abort
    with store.read() as tx:
        assert tx.current_seq() == 0


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


# -- who made each change, and pages of the log --------------------------------------------------------------


def test_an_entry_keeps_who_made_it(store: Store) -> None:
    with store.write() as tx:
        tx.append_change(T0, A, "create_node", "n1", {}, actor="ann")
        tx.append_change(T0, A, "update_node", "n1", {})
        tx.append_change(T0, B, "update_node", "n1", {}, actor="jwt:someone@example.com")
    with store.read() as tx:
        every = tx.changes(0, None)
        assert [c.actor for c in every] == ["ann", None, "jwt:someone@example.com"]
        assert tx.changes_of("n1") == every
        assert tx.change_page(None, ChangeFilter(), None, 10) == every[::-1]
    assert every[0] == Change(1, T0, A, "create_node", "n1", {}, "ann")


def _expected(log: list[Change], scopes: list[str] | None, where: ChangeFilter, before: int | None) -> list[Change]:
    """What `change_page` must give, from the whole log: filtered, newest first by time then seq."""
    order = sorted(log, key=lambda c: (c.at, c.seq), reverse=True)
    if before is not None:
        cut = next((c for c in log if c.seq == before), None)
        if cut is not None:
            order = [c for c in order if (c.at, c.seq) < (cut.at, cut.seq)]
    return [
        c
        for c in order
        if (scopes is None or c.scope is None or c.scope in scopes)
        and (not where.ops or c.op in where.ops)
        and (where.target is None or c.target == where.target)
        and (not where.actors or c.actor in where.actors)
        and (where.at_from is None or c.at >= where.at_from)
        and (where.at_to is None or c.at < where.at_to)
    ]


def _pages(store: Store, scopes: list[str] | None, where: ChangeFilter, limit: int) -> list[list[Change]]:
    """Every page of a walk through the log, each continuing after the last entry of the one before."""
    pages: list[list[Change]] = []
    before: int | None = None
    with store.read() as tx:
        while True:
            page = tx.change_page(scopes, where, before, limit)
            assert len(page) <= limit
            if not page:
                return pages
            pages.append(page)
            before = page[-1].seq


PAGE_SCOPES = (A, B, C)
ENTRY = st.tuples(
    st.integers(min_value=0, max_value=4),  # time: repeats and goes back, so time and seq disagree
    st.sampled_from([*PAGE_SCOPES, None]),
    st.sampled_from(["create_node", "update_node", "archive_node"]),
    st.sampled_from(["t1", "t2", None]),
    st.sampled_from([None, "ann", "bob"]),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    entries=st.lists(ENTRY, max_size=12),
    scopes=st.none() | st.lists(st.sampled_from(PAGE_SCOPES), min_size=1, max_size=3, unique=True),
    ops=st.lists(st.sampled_from(["create_node", "update_node", "archive_node", "other"]), max_size=2, unique=True),
    target=st.sampled_from([None, "t1", "t2", "t3"]),
    actors=st.lists(st.sampled_from([None, "ann", "bob", "eve"]), max_size=2, unique=True),
    at_from=st.none() | st.integers(min_value=0, max_value=4),
    at_to=st.none() | st.integers(min_value=0, max_value=5),
    limit=st.integers(min_value=1, max_value=4),
)
def test_a_page_is_the_filtered_log_newest_first_and_pages_follow_on(
    store: Store,
    entries: list[tuple[int, str | None, str, str | None, str | None]],
    scopes: list[str] | None,
    ops: list[str],
    target: str | None,
    actors: list[str | None],
    at_from: int | None,
    at_to: int | None,
    limit: int,
) -> None:
    with store.write() as tx:
        for offset, scope, op, about, actor in entries:
            tx.append_change(T0 + offset, scope, op, about, {"i": offset}, actor=actor)
    where = ChangeFilter(
        ops=tuple(ops),
        target=target,
        actors=tuple(actors),
        at_from=None if at_from is None else T0 + at_from,
        at_to=None if at_to is None else T0 + at_to,
    )
    with store.read() as tx:
        log = tx.changes(0, None)
        first = tx.change_page(scopes, where, None, limit)
    wanted = _expected(log, scopes, where, None)
    assert first == wanted[:limit]
    pages = _pages(store, scopes, where, limit)
    assert [c for page in pages for c in page] == wanted
    if len(log) > 1:
        # A page may start after any entry, whether or not it meets the filter.
        middle = log[len(log) // 2].seq
        with store.read() as tx:
            assert tx.change_page(scopes, where, middle, limit) == _expected(log, scopes, where, middle)[:limit]


def test_a_page_after_a_seq_past_the_last_entry_is_the_first_page(store: Store) -> None:
    with store.write() as tx:
        for i in range(3):
            tx.append_change(T0 + i, A, "op", None, {})
    with store.read() as tx:
        assert [c.seq for c in tx.change_page([A], ChangeFilter(), 99, 2)] == [3, 2]
        assert tx.change_page([A], ChangeFilter(), 1, 2) == []
        assert tx.change_page([A], ChangeFilter(), None, 0) == []


def test_a_page_over_many_scopes_ops_and_actors_is_the_same_as_over_few(store: Store) -> None:
    """Past a few dozen walks (scopes times ops or actors) a page is one query over them all:
    the same entries."""
    many = [new_ulid() for _ in range(80)]
    with store.write() as tx:
        for i, scope in enumerate(many):
            tx.append_change(T0 + i % 7, scope, f"op{i % 3}", None, {}, actor=None if i % 4 else f"who{i % 5}")
            tx.append_change(T0 + i % 5, None if i % 9 == 0 else A, f"op{i % 2}", None, {}, actor=f"who{i % 3}")
    actors: tuple[str | None, ...] = (None, "who0", "who1", "who2")
    with store.read() as tx:
        log = tx.changes(0, None)
        for where in (
            ChangeFilter(),
            ChangeFilter(ops=("op0", "op2")),
            ChangeFilter(actors=actors),
            ChangeFilter(ops=("op1",), actors=(None,), at_from=T0 + 2),
        ):
            for scopes in (many, many[:3], [*many, A]):
                wanted = _expected(log, scopes, where, None)
                assert tx.change_page(scopes, where, None, 500) == wanted
                if len(wanted) > 4:
                    assert tx.change_page(scopes, where, wanted[4].seq, 3) == wanted[5:8]


def test_append_changes_of_more_entries_than_a_statement_holds(store: Store) -> None:
    """300 entries (the SQLite store writes up to 128 a statement): consecutive seqs, in order."""
    entries = [(A if i % 2 else None, "create_edge", f"e{i}", {"i": i, "w": [i, "x"]}) for i in range(300)]
    with store.write() as tx:
        first = tx.append_change(T0, B, "create_node", "n1", {})
        last = tx.append_changes(T0 + 1, entries)
    assert last == first + 300
    with store.read() as tx:
        logged = tx.changes(first + 1, None)
    assert logged == [
        Change(first + 1 + i, T0 + 1, scope, op, target, data) for i, (scope, op, target, data) in enumerate(entries)
    ]
