"""The segments of the full-text indexes, and merging them off the writing call's path.

An FTS5 index is a set of b-trees (segments), each written by one transaction and merged
into larger ones later; a search reads every segment for each of its terms. FTS5 merges
inside the writing transaction (`automerge`: four segments of one level into one, a
little work at a time), which leaves an index written in many transactions with up to
three segments a level, more while a merge lags: on `peers.py`'s workload seeded in calls
of 300 entities, 7-8 segments an index at 10,000 entities and 9-11 at 100,000; after 300
single `remember` calls more, memory_fts held 24 (15 of one page each).

`merge` runs the rest of that work in steps of a few pages, each its own short
transaction, so that no write waits long behind one: a step merges any two segments of
one level (`usermerge` 2, set by migration 20), which leaves one segment a level: 1-6 an
index on the same files, 4 in memory_fts after the 300 calls. Native `recall` then ran
5.52 M instructions a call at 10,000 entities against 6.04 (and 6.79 after the 300
calls); one segment an index ('optimize', which rewrites the whole index each time) 5.33.

FTS5's merge is an ordinary write: a step that is interrupted (the process killed) is
rolled back as a whole, and an incremental merge between two steps is a consistent index
that the next step continues.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

__all__ = ["INDEXES", "STEP_PAGES", "levels", "merge", "needs_merge"]

INDEXES = ("memory_fts", "entity_text", "entity_words", "entity_name_text", "node_text")
"""Every FTS5 index of the schema."""

STEP_PAGES = 16
"""Pages of merged output a step writes (FTS5 pages of about 4 KB): about 1.5 ms of work
on the largest index at 100,000 entities, which is as long as a writer can wait for one."""

_STRUCTURE_ROWID = 10
"""The row of an index's `_data` table that lists its segments, level by level."""
_STRUCTURE_V2 = b"\xff\x00\x00\x01"
"""Follows the 4-byte cookie in the record of FTS5 from SQLite 3.44, whose segments carry
five more numbers each."""


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """SQLite's variable-length integer at `at` in `data`, and where the next one starts."""
    value = 0
    for offset in range(8):
        byte = data[at + offset]
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, at + offset + 1
    return (value << 8) | data[at + 8], at + 9


def levels(conn: sqlite3.Connection, index: str) -> list[tuple[int, bool]]:
    """The segments of `index` level by level, smallest first: (how many, whether an
    incremental merge of that level is under way)."""
    row = conn.execute(f"SELECT block FROM {index}_data WHERE id = ?", (_STRUCTURE_ROWID,)).fetchone()
    if row is None:  # an index nothing was ever written to
        return []
    data: bytes = row[0]
    extra = 5 if data[4:8] == _STRUCTURE_V2 else 0
    at = 8 if extra else 4
    count, at = _varint(data, at)
    _, at = _varint(data, at)  # segments on all levels
    _, at = _varint(data, at)  # the write counter
    found: list[tuple[int, bool]] = []
    for _ in range(count):
        merging, at = _varint(data, at)
        segments, at = _varint(data, at)
        for _ in range(segments * (3 + extra)):  # id, first and last page (and the extra)
            _, at = _varint(data, at)
        found.append((segments, merging > 0))
    return found


def needs_merge(conn: sqlite3.Connection, index: str) -> bool:
    """Whether a level of `index` holds two segments or more, or is being merged."""
    return any(segments > 1 or merging for segments, merging in levels(conn, index))


def merge(
    conn: sqlite3.Connection,
    index: str,
    take_turn: Callable[[], bool],
    end_turn: Callable[[], None],
    pages: int = STEP_PAGES,
) -> bool:
    """Merge the segments of `index` on `conn` in steps of about `pages` pages, each in a
    transaction of its own, until no level holds two. Each step starts only once
    `take_turn()` has said it may (`end_turn()` after it), and only if the write lock is
    free at once (`conn` waits for no one): True when the index is merged, False when the
    turn or the lock was not had, to be tried again later."""
    while True:
        if not take_turn():
            return False
        try:
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError:
                return False  # another writer holds the lock: it goes first
            try:
                before = conn.total_changes
                conn.execute(f"INSERT INTO {index} ({index}, rank) VALUES ('merge', ?)", (pages,))
                # FTS5 reports a step that found nothing to merge as less than two changes.
                worked = conn.total_changes - before >= 2
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        finally:
            end_turn()
        if not worked:
            return True
