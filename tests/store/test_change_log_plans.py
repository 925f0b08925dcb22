"""What the change-log reads of the SQLite store read, each planned by SQLite: the
statements are the ones the store runs (caught as it runs them).

A page filtered by actor reads a grant's entries through the actor indexes, which hold only
entries made under a grant (an entry written without one, as every entry is without
tokens, costs no write to them). And each other kind of page walks the one index that
leads with exactly its equality filters and then runs in time order (the rowid, seq,
breaks ties): every scope, by scope, by scope and op, by op. Each of those indexes costs
every entry a write, and none can stand in for another: without `(op, at)` a page of one
rare op over every scope walks the whole log in time order; without `(scope, at)` a
scope's page walks every scope's entries. So every one of them is pinned here, as are the
reads by seq and by target."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from mnemodb.model.ids import SHARED, new_ulid
from mnemodb.model.records import Change, ChangeFilter
from mnemodb.store.sqlite import SqliteStore
from mnemodb.store.sqlite.store import SqliteReadTx
from store.contract.rows import T0
from store.sqlite_plans import plan_rows, plans_of, traced

ACTOR_INDEXES = ("change_log_scope_actor_at", "change_log_actor_at")


def _log(path: Path) -> SqliteStore:
    """200 entries without an actor and 20 by "alice", in two scopes."""
    store = SqliteStore(path)
    with store.write() as tx:
        for i in range(220):
            actor = "alice" if i % 11 == 0 else None
            scope = SHARED if i % 2 else "other"
            tx.append_change(T0 + i, scope, "remove_node", new_ulid(), {"id": "x"}, actor=actor)
    return store


def _page_plans(
    store: SqliteStore, path: Path, scopes: Sequence[str] | None, actors: tuple[str | None, ...]
) -> tuple[list[int], str]:
    page, statements = traced(store, lambda tx: tx.change_page(scopes, ChangeFilter(actors=actors), None, 50))
    reads = [s for s in statements if "FROM change_log" in s]
    return [c.seq for c in page], " // ".join(plans_of(path, reads))


@pytest.mark.parametrize("scopes", [[SHARED, "other"], None], ids=["scoped", "every scope"])
def test_a_grants_entries_are_read_through_an_actor_index(tmp_path: Path, scopes: list[str] | None) -> None:
    path = tmp_path / "log.db"
    store = _log(path)
    try:
        seqs, plan = _page_plans(store, path, scopes, ("alice",))
        without, _ = _page_plans(store, path, scopes, (None,))
    finally:
        store.close()
    assert seqs == [i + 1 for i in range(219, -1, -1) if i % 11 == 0]
    assert without == [i + 1 for i in range(219, -1, -1) if i % 11][:50]
    assert any(index in plan for index in ACTOR_INDEXES), plan
    assert "SCAN change_log" not in plan.replace("SCAN change_log USING INDEX", ""), plan


def test_the_actor_indexes_hold_only_entries_made_under_a_grant(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    _log(path).close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM change_log").fetchone()[0] == 220
        definitions = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index'").fetchall())
    for index in ACTOR_INDEXES:
        assert definitions[index].endswith("WHERE actor IS NOT NULL"), definitions[index]


# -- every kind of page, and the reads by seq and by target -----------------------------------------

_OPS = ("create_node", "create_edge", "update_node", "archive_node")


def _mixed_log(path: Path) -> tuple[SqliteStore, str]:
    """400 entries over three scopes and none, of four ops (one rare), and a target with
    four entries of its own; the target."""
    store = SqliteStore(path)
    target = new_ulid()
    with store.write() as tx:
        for i in range(400):
            scope = (SHARED, "other", "third", None)[i % 4]
            op = "archive_node" if i % 50 == 0 else _OPS[i % 3]
            about = target if i % 100 == 7 else new_ulid()
            tx.append_change(T0 + i // 3, scope, op, about, {"id": "x"})
    return store, target


def _plan_rows(
    store: SqliteStore, path: Path, read: Callable[[SqliteReadTx], object]
) -> list[list[tuple[int, int, str]]]:
    """Every statement `read` ran on the log, as (id, parent, detail) rows of its plan."""
    _, statements = traced(store, read)
    reads = [s for s in statements if "FROM change_log" in s]
    assert reads, statements
    return plan_rows(path, reads)


def _walks(rows: list[tuple[int, int, str]]) -> tuple[list[str], list[str]]:
    """The statement's reads of the log (SEARCH or SCAN details), and the sorts of what a
    read found before the merge of walks: a walk is a co-routine of a UNION ALL, or else the
    statement itself, and a temporary B-tree there means it did not read in the order asked
    for. (The merge sorts each walk's rows, at most a page of them, for its ORDER BY.)"""
    walks = {0} | {i for i, _, detail in rows if detail.startswith("CO-ROUTINE")}
    if any(detail.startswith("MERGE") for _, _, detail in rows):
        walks.discard(0)
    reads = [detail for _, _, detail in rows if " change_log" in detail]
    sorts = [detail for _, parent, detail in rows if parent in walks and "TEMP B-TREE" in detail]
    return reads, sorts


def _page_read_whole(
    every: Sequence[Change], scopes: Sequence[str] | None, where: ChangeFilter, before: int | None, limit: int
) -> list[Change]:
    """The page `change_page` should give, from every entry of the log."""
    start = next((c for c in every if c.seq == before), None)
    kept = [
        c
        for c in every
        if (scopes is None or c.scope in (*scopes, None))
        and (not where.ops or c.op in where.ops)
        and (not where.actors or c.actor in where.actors)
        and (where.at_from is None or c.at >= where.at_from)
        and (where.at_to is None or c.at < where.at_to)
        and (start is None or (c.at, c.seq) < (start.at, start.seq))
    ]
    return sorted(kept, key=lambda c: (c.at, c.seq), reverse=True)[:limit]


_BY_INDEX: list[tuple[str, Sequence[str] | None, ChangeFilter, str]] = [
    ("newest, every scope", None, ChangeFilter(), "change_log_at"),
    ("a time span, every scope", None, ChangeFilter(at_from=T0 + 20, at_to=T0 + 90), "change_log_at"),
    ("newest, by scope", [SHARED, "other"], ChangeFilter(), "change_log_scope_at"),
    ("a time span, by scope", [SHARED], ChangeFilter(at_from=T0 + 20, at_to=T0 + 90), "change_log_scope_at"),
    ("made without a grant, by scope", [SHARED], ChangeFilter(actors=(None,)), "change_log_scope_at"),
    ("an op, by scope", [SHARED, "other"], ChangeFilter(ops=("archive_node",)), "change_log_scope_op_at"),
    ("two ops, by scope", [SHARED], ChangeFilter(ops=("archive_node", "update_node")), "change_log_scope_op_at"),
    ("an op, every scope", None, ChangeFilter(ops=("archive_node",)), "change_log_op_at"),
    (
        "two ops in a time span, every scope",
        None,
        ChangeFilter(ops=("archive_node", "create_edge"), at_from=T0 + 5),
        "change_log_op_at",
    ),
]


@pytest.mark.parametrize(("scopes", "where", "index"), [c[1:] for c in _BY_INDEX], ids=[c[0] for c in _BY_INDEX])
@pytest.mark.parametrize("before", [None, 300], ids=["first page", "next page"])
def test_each_page_walks_the_index_led_by_its_filters_in_time_order(
    tmp_path: Path, scopes: list[str] | None, where: ChangeFilter, index: str, before: int | None
) -> None:
    path = tmp_path / "log.db"
    store, _ = _mixed_log(path)
    try:
        with store.read() as tx:
            page = tx.change_page(scopes, where, before, 20)
            every = tx.changes(1, None)
        plans = _plan_rows(store, path, lambda tx: tx.change_page(scopes, where, before, 20))
    finally:
        store.close()
    assert page and page == _page_read_whole(every, scopes, where, before, 20)
    *lookups, walk = plans
    assert [_walks(rows)[0] for rows in lookups] == [["SEARCH change_log USING INTEGER PRIMARY KEY (rowid=?)"]] * (
        before is not None
    )
    reads, sorts = _walks(walk)
    assert reads and all(
        f"USING INDEX {index} (" in r or f"USING COVERING INDEX {index} (" in r or r.endswith(f"USING INDEX {index}")
        for r in reads
    ), reads
    assert not sorts, walk


def test_the_reads_by_seq_and_by_target_use_the_rowid_and_the_target_index(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    store, target = _mixed_log(path)
    try:
        with store.read() as tx:
            history = tx.changes_of(target)
            page = tx.change_page([SHARED, "other", "third"], ChangeFilter(target=target), None, 20)
        since = _plan_rows(store, path, lambda tx: tx.changes(350, 20))
        of_target = _plan_rows(store, path, lambda tx: tx.changes_of(target))
        target_page = _plan_rows(store, path, lambda tx: tx.change_page(None, ChangeFilter(target=target), None, 20))
    finally:
        store.close()
    assert [c.seq for c in history] == [8, 108, 208, 308]
    assert [c.seq for c in page] == [308, 208, 108, 8]
    assert [_walks(rows) for rows in since] == [(["SEARCH change_log USING INTEGER PRIMARY KEY (rowid>?)"], [])]
    # An item's entries come in seq order from its index, unsorted.
    assert [_walks(rows) for rows in of_target] == [
        (["SEARCH change_log USING INDEX change_log_target (target=?)"], [])
    ]
    # A page of one item sorts its few entries by time (they are few: its index finds them).
    assert [_walks(rows)[0] for rows in target_page] == [["SEARCH change_log USING INDEX change_log_target (target=?)"]]
