"""What a SQLite read connection keeps of each scope between reads (store/sqlite/facts.py):
whether a memory there has a tag, the highest importance, and when its first and last
memory were written. A search of a store that
tags nothing runs no tag statement, and what is kept follows every commit: this process's
writer's, another connection's on the same file (as another process's would be), and a
tag or a memory taken away as well as added."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemodb.model.records import ItemFilter
from mnemodb.store.base import TimeRange
from mnemodb.store.sqlite import SqliteStore
from mnemodb.store.sqlite.store import SqliteReadTx
from store.contract.rows import T0, A, B, add_memory
from store.sqlite_plans import traced


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "facts.db"


@pytest.fixture
def store(path: Path) -> Iterator[SqliteStore]:
    opened = SqliteStore(path)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def other(path: Path, store: SqliteStore) -> Iterator[SqliteStore]:
    """A second store on the same file: connections of its own, as another process has."""
    opened = SqliteStore(path)
    try:
        yield opened
    finally:
        opened.close()


def _tagged(tx: SqliteReadTx, scopes: list[str]) -> list[int]:
    return [hit.pk for hit in tx.filtered_tagged(["north"], scopes, 10, ItemFilter(), T0)]


def test_a_store_that_tags_nothing_runs_no_tag_statement(store: SqliteStore) -> None:
    with store.write() as tx:
        for i in range(5):
            add_memory(tx, f"the north road {i}", importance=i)
    for _ in range(2):  # the first read finds it out, the next knows it
        found, statements = traced(store, lambda tx: _tagged(tx, [A, B]))
        assert found == []
        assert not [s for s in statements if "memory_tag" in s], statements
    # What is kept is not read again while nothing changes.
    most, statements = traced(store, lambda tx: tx.most_important([A]))
    assert most == 4
    most, statements = traced(store, lambda tx: tx.most_important([A]))
    assert most == 4
    assert not [s for s in statements if "importance" in s], statements


@pytest.mark.parametrize("writer", ["this store", "another connection"])
def test_what_is_kept_follows_each_commit(store: SqliteStore, other: SqliteStore, writer: str) -> None:
    writes = store if writer == "this store" else other
    with store.write() as tx:
        plain = add_memory(tx, "the south road", importance=3)
    with store.read() as tx:
        assert _tagged(tx, [A]) == []
        assert tx.most_important([A]) == 3
        assert tx.most_important([B]) is None
    with writes.write() as tx:
        tagged = add_memory(tx, "the north road", tags=["north"], importance=9)
        add_memory(tx, "the west road", scope=B, importance=1)
    with store.read() as tx:
        assert _tagged(tx, [A]) == [tagged]
        assert _tagged(tx, [B]) == []
        assert tx.most_important([A]) == 9
        assert tx.most_important([A, B]) == 9
        assert tx.most_important([B]) == 1
    with writes.write() as tx:
        tx.replace_tags(tagged, [])
        tx.set_archived(tagged, T0)
    with store.read() as tx:
        assert _tagged(tx, [A]) == []
        assert tx.most_important([A]) == 3
    with writes.write() as tx:
        tx.add_tags(plain, ["north"])
    with store.read() as tx:
        assert _tagged(tx, [A]) == [plain]


def test_a_read_transaction_keeps_its_snapshot(store: SqliteStore, other: SqliteStore) -> None:
    """A commit during a read is not seen by that read, nor kept as what it saw."""
    with store.write() as tx:
        add_memory(tx, "the south road", importance=2)
    with store.read() as tx:
        assert tx.most_important([A]) == 2
        with other.write() as changing:
            add_memory(changing, "the east road", importance=7)
        assert tx.most_important([A]) == 2
    with store.read() as tx:
        assert tx.most_important([A]) == 7


@pytest.mark.parametrize("writer", ["this store", "another connection"])
def test_the_time_range_kept_follows_each_commit(store: SqliteStore, other: SqliteStore, writer: str) -> None:
    writes = store if writer == "this store" else other
    with store.write() as tx:
        first = add_memory(tx, "the south road", at=T0)
    for _ in range(2):  # the first read finds it out, the next knows it
        span, statements = traced(store, lambda tx: tx.memory_time_range([A, B]))
        assert span == TimeRange(T0, T0)
    assert not [s for s in statements if "created_at" in s], statements
    with writes.write() as tx:
        add_memory(tx, "the north road", at=T0 + 5_000)
        add_memory(tx, "the west road", scope=B, at=T0 - 9_000)
    with store.read() as read:
        assert read.memory_time_range([A]) == TimeRange(T0, T0 + 5_000)
        assert read.memory_time_range([A, B]) == TimeRange(T0 - 9_000, T0 + 5_000)
        assert read.memory_time_range(["nobody's"]) == TimeRange(None, None)
    with writes.write() as tx:
        tx.delete_node(first)
    with store.read() as read:
        assert read.memory_time_range([A]) == TimeRange(T0 + 5_000, T0 + 5_000)
