"""The segments of the full-text indexes, and merging them off the writing call's path.

An FTS5 index is a set of b-trees (segments), each written by one transaction and merged
into larger ones later; a search reads every segment for each of its terms. FTS5 merges
inside the writing transaction (`automerge`: four segments of one level into one, a
little work at a time), which leaves an index written in many transactions with up to
three segments a level, more while a merge lags: on `peers.py`'s workload seeded in calls
of 300 entities, 7-8 segments an index at 10,000 entities and 9-11 at 100,000; after 300
single `remember` calls more, memory_fts held 24 (15 of one page each).

`merge` runs the rest of that work in turns of a few pages an index, each turn its own
short transaction, so that no write waits long behind one: a step merges any two segments
of one level (`usermerge` 2, set by migration 20), which leaves one segment a level: 1-6
an index on the same files, 4 in memory_fts after the 300 calls. Native `recall` then ran
5.52 M instructions a call at 10,000 entities against 6.04 (5.57 against 6.79 after the
300 calls); one segment an index ('optimize', which rewrites the whole index each time,
0.4 s of CPU at 100,000 entities) 5.33. At 100,000 entities (3-6 segments an index
instead of 9-11, merged at open in 1.0 s) native `recall` ran 15.43 M against 16.10 and
memdb's search 14.60 M against 15.19.

FTS5's merge is an ordinary write: a step that is interrupted (the process killed) is
rolled back as a whole, and an incremental merge between two steps is a consistent index
that the next step continues.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Sequence

__all__ = ["INDEXES", "SPARE_SEGMENTS", "STEP_PAGES", "levels", "merge", "needs_merge"]

INDEXES = ("memory_fts", "entity_text", "entity_words", "entity_name_text", "node_text")
"""Every FTS5 index of the schema."""

STEP_PAGES = 8
"""Pages of merged output a step writes in one index (FTS5 pages of about 4 KB): about
0.7 ms of work on the largest index at 100,000 entities; a turn steps each index that
needs it, and a writer waits for one turn at most."""

SPARE_SEGMENTS = 1
"""Segments more than one a level that start a merge: as soon as a level holds two. Waiting
for six saved the thread no work (0.3-0.4 M instructions a single `remember` either way,
at 10,000 entities, against 2.3 M for the call itself): the pages merged are the same,
only fewer at a time, and searches read the spare segments meanwhile."""

_STRUCTURE_ROWID = 10
"""The row of an index's `_data` table that lists its segments, level by level."""
_STRUCTURE_V2 = b"\xff\x00\x00\x01"
"""Follows the 4-byte cookie in the record of FTS5 from SQLite 3.44, whose segments carry
five more numbers each."""


_VARINTS = re.compile(rb"[\x80-\xff]{8}[\x00-\xff]|[\x80-\xff]{0,7}[\x00-\x7f]")
"""SQLite's variable-length integers, one a match: up to eight bytes with the high bit set
and one without, or eight with it and any ninth. Split by the regular expression engine,
as the segments' own numbers are only counted, not read: decoding each in Python made a
look at the five indexes, every few commits, cost 100-120 µs of CPU instead of 60."""


def _value(varint: bytes) -> int:
    value = 0
    for byte in varint[:8]:
        value = (value << 7) | (byte & 0x7F)
    return (value << 8) | varint[8] if len(varint) == 9 else value


def levels(conn: sqlite3.Connection, index: str) -> list[tuple[int, bool]]:
    """The segments of `index` level by level, smallest first: (how many, whether an
    incremental merge of that level is under way)."""
    row = conn.execute(f"SELECT block FROM {index}_data WHERE id = ?", (_STRUCTURE_ROWID,)).fetchone()
    if row is None:  # an index nothing was ever written to
        return []
    data: bytes = row[0]
    extra = 5 if data[4:8] == _STRUCTURE_V2 else 0
    # The level count, the segment count, the write counter, then for each level: whether
    # it is being merged, its segment count, and each segment's id, first and last page
    # (and the five numbers more).
    numbers = _VARINTS.findall(data, 8 if extra else 4)
    found: list[tuple[int, bool]] = []
    at = 3
    for _ in range(_value(numbers[0])):
        merging, segments = _value(numbers[at]), _value(numbers[at + 1])
        found.append((segments, merging > 0))
        at += 2 + segments * (3 + extra)
    return found


def needs_merge(conn: sqlite3.Connection, index: str) -> bool:
    """Whether `index` holds `SPARE_SEGMENTS` segments more than one a level, or is being
    merged."""
    found = levels(conn, index)
    spare = sum(segments - 1 for segments, _ in found if segments > 1)
    return spare >= SPARE_SEGMENTS or any(merging for _, merging in found)


def merge(
    conn: sqlite3.Connection,
    indexes: Sequence[str],
    take_turn: Callable[[], bool],
    end_turn: Callable[[bool], None],
    pages: int = STEP_PAGES,
) -> bool:
    """Merge the segments of `indexes` on `conn` until no level of any holds two, in turns
    of one transaction each, where each index that still needs it merges about `pages`
    pages (one transaction a turn, not one an index: a commit costs more than merging a
    few small segments). A turn starts only once `take_turn()` has said it may
    (`end_turn(committed)` after it, told whether the turn's step was committed), and only
    if the write lock is free at once (`conn` waits for no one): True when every index is
    merged, False when the turn or the lock was not had, to be tried again later."""
    left = [index for index in indexes if needs_merge(conn, index)]
    while left:
        if not take_turn():
            return False
        committed = False
        try:
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError:
                return False  # another writer holds the lock: it goes first
            try:
                for index in list(left):
                    before = conn.total_changes
                    conn.execute(f"INSERT INTO {index} ({index}, rank) VALUES ('merge', ?)", (pages,))
                    # FTS5 reports a step that found nothing to merge as less than two changes.
                    if conn.total_changes - before < 2:
                        left.remove(index)
                conn.execute("COMMIT")
                committed = True
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        finally:
            end_turn(committed)
    return True
