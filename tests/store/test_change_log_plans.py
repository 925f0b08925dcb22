"""What a page of the change log filtered by actor reads in the SQLite store: a grant's
entries through the actor indexes, which hold only entries made under a grant (an entry
written without one, as every entry is without tokens, costs no write to them). The
statements are the ones the store runs (caught as it runs them), each planned by SQLite."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest

from mnemodb.model.ids import SHARED, new_ulid
from mnemodb.model.records import ChangeFilter
from mnemodb.store.sqlite import SqliteStore
from store.contract.rows import T0

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
    statements: list[str] = []
    with store.read() as tx:
        tx.conn.set_trace_callback(statements.append)
        try:
            page = tx.change_page(scopes, ChangeFilter(actors=actors), None, 50)
        finally:
            tx.conn.set_trace_callback(None)
    reads = [s for s in statements if "FROM change_log" in s]
    with sqlite3.connect(path) as conn:
        plans = [" / ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {s}")) for s in reads]
    return [c.seq for c in page], " // ".join(plans)


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
