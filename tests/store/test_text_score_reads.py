"""How a SQLite read reads the best text matches of a memory search (`ItemReads._text_scores`):
only as many rows as the search asks for, then on from the same statement when a ranking
widens its pool, and that statement closed when the read ends, so that no snapshot is
held past it. The hits are those of a read that takes every row at once (a write
transaction's)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemodb.model.records import ItemFilter
from mnemodb.store.base import MemoryFieldWeights
from mnemodb.store.sqlite import SqliteStore
from store.contract.rows import T0, A, add_memory
from store.sqlite_plans import traced

WEIGHTS = MemoryFieldWeights(content=1.0, summary=1.0, context=0.5)
CURRENT = ItemFilter(current_only=True)
AT = T0 + 10_000


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "scores.db"


@pytest.fixture
def store(path: Path) -> Iterator[SqliteStore]:
    opened = SqliteStore(path)
    try:
        with opened.write() as tx:
            for i in range(400):
                add_memory(tx, "river " + " ".join(["stone"] * (i % 37)) + f" item {i}", at=T0 + i)
        yield opened
    finally:
        opened.close()


def test_a_read_takes_the_rows_asked_for_and_on_from_there(store: SqliteStore) -> None:
    with store.write() as tx:  # every row of the statement's sort at once
        whole = tx.filtered_text_search(["river"], [A], 400, CURRENT, AT, WEIGHTS)
    assert len(whole) == 400

    def widening(tx: object) -> tuple[dict[int, list[object]], list[int]]:
        heads: dict[int, list[object]] = {}
        read: list[int] = []
        for limit in (5, 64, 128, 400):
            heads[limit] = list(tx.filtered_text_search(["river"], [A], limit, CURRENT, AT, WEIGHTS))  # type: ignore[attr-defined]
            read.append(len(tx._scored[1]))  # type: ignore[attr-defined]  # the score rows read so far
        return heads, read

    (heads, read), statements = traced(store, widening)
    for limit, head in heads.items():
        assert head == whole[:limit], limit
    # The first 5, then on to 64 and 128 from the one statement (its sort holds 128),
    # then every match by a statement of its own.
    assert read == [5, 64, 128, 400]
    assert len([s for s in statements if "bm25(memory_fts" in s]) == 2


def test_a_read_part_way_through_the_scores_holds_no_snapshot_past_its_end(path: Path, store: SqliteStore) -> None:
    with store.read() as searched:
        assert len(searched.filtered_text_search(["river"], [A], 3, CURRENT, AT, WEIGHTS)) == 3
    with store.write() as tx:
        add_memory(tx, "river after the read", at=AT)
    # Nothing still reads the snapshot the search saw, though the read's object lives on:
    # the whole log can be copied back.
    busy, logged, copied = store._reader().execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    assert busy == 0 and logged == copied
    assert searched is not None
    with store.read() as tx:
        assert len(tx.filtered_text_search(["river"], [A], 500, CURRENT, AT + 1, WEIGHTS)) == 401
