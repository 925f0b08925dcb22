"""Facts about a scope that a search reads on every call and that change only with writes:
whether any memory of the scope has a tag, the highest importance of its memories not
archived, and when its first and last memory were written. Each is an end of an index, but
a statement all the same (its binding, stepping and the interpreter's lock given up and
taken back): a native `recall` at 10,000 untagged memories spent about 0.06 M of its 6.35 M
instructions on the tags statement that could find nothing, and 0.01 M on the importance;
read on every search, the two time statements took it from 4.20 to 5.57 statements a
call (0.94 to 0.98 ms of CPU, `bench/native_recall.py`); kept, 4.20 and 1.00 ms against
1.00, the same.

They are kept per read connection, for as long as the file's data version stays the same.
SQLite's `PRAGMA data_version` changes, on one connection, whenever another connection has
committed (in this process or any other), and inside a read transaction it gives the
snapshot's version: what is kept is what that snapshot holds. A read connection never
writes (`query_only`), so no change of its own can go unseen. The writer's connection,
which reads inside its own transactions, keeps nothing: a change it rolls back would leave
the version as it was.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from mnemodb.store.base import TimeRange

__all__ = ["FactReads", "ScopeFacts"]


class ScopeFacts:
    """What one read connection knows of each scope at the data version `version`."""

    __slots__ = ("most_important", "tagged", "time_range", "version")

    def __init__(self) -> None:
        self.version: int | None = None
        self.tagged: dict[str, bool] = {}
        # None is a fact too: no memory there to have an importance.
        self.most_important: dict[str, int | None] = {}
        self.time_range: dict[str, TimeRange] = {}

    def at(self, conn: sqlite3.Connection) -> ScopeFacts:
        """These facts, emptied when the data `conn`'s read transaction sees is not the
        data they were read from. Called inside that transaction, once."""
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        if version != self.version:
            self.version = version
            self.tagged.clear()
            self.most_important.clear()
            self.time_range.clear()
        return self


class FactReads:
    """The facts above, read through the transaction's connection: kept across reads when
    the store gave the transaction its connection's `ScopeFacts` (`kept_facts`), read
    afresh each time otherwise. Mixed into the store's read transactions."""

    conn: sqlite3.Connection
    kept_facts: ScopeFacts | None = None
    _facts_checked: bool = False

    def _facts(self) -> ScopeFacts | None:
        kept = self.kept_facts
        if kept is not None and not self._facts_checked:
            kept.at(self.conn)
            self._facts_checked = True
        return kept

    def tags_in(self, scopes: Sequence[str]) -> bool | None:
        """Whether a memory of `scopes` has a tag (from the per-scope counters); None when
        nothing is kept for this transaction, where asking would cost the statement it saves."""
        facts = self._facts()
        if facts is None:
            return None
        known = facts.tagged
        for scope in scopes:
            tagged = known.get(scope)
            if tagged is None:
                row = self.conn.execute("SELECT 1 FROM tag_count WHERE scope = ? AND n > 0 LIMIT 1", [scope]).fetchone()
                tagged = known[scope] = row is not None
            if tagged:
                return True
        return False

    def most_important(self, scopes: Sequence[str]) -> int | None:
        """The highest importance of the memories of `scopes` that are not archived (None
        when there are none)."""
        # One scope at a time: MAX then reads the last entry of that scope in the partial
        # index `memory_scope_importance` (schema 19), one seek, whatever the scope holds.
        facts = self._facts()
        known = facts.most_important if facts is not None else None
        best: int | None = None
        for scope in scopes:
            if known is not None and scope in known:
                high = known[scope]
            else:
                found = self.conn.execute(
                    "SELECT MAX(importance) FROM memory WHERE scope = ? AND archived_at IS NULL", [scope]
                ).fetchone()[0]
                high = None if found is None else int(found)
                if known is not None:
                    known[scope] = high
            if high is not None and (best is None or high > best):
                best = high
        return best

    def memory_time_range(self, scopes: Sequence[str]) -> TimeRange:
        """When the oldest and the newest memory of `scopes` were stored (None, None: none)."""
        facts = self._facts()
        known = facts.time_range if facts is not None else None
        oldest: int | None = None
        newest: int | None = None
        for scope in scopes:
            if known is not None and scope in known:
                low, high = known[scope]
            else:
                # One scope at a time, MIN and MAX apart: each then reads one end of the
                # (label, scope, created_at) index, where both in one statement would read
                # every memory of the scope.
                low = self.conn.execute(
                    "SELECT MIN(created_at) FROM node WHERE label = 'Memory' AND scope = ?", [scope]
                ).fetchone()[0]
                high = self.conn.execute(
                    "SELECT MAX(created_at) FROM node WHERE label = 'Memory' AND scope = ?", [scope]
                ).fetchone()[0]
                if known is not None:
                    known[scope] = TimeRange(low, high)
            if low is not None and high is not None:
                oldest = low if oldest is None else min(oldest, low)
                newest = high if newest is None else max(newest, high)
        return TimeRange(oldest, newest)
