"""The change log, settings and row counts. Mixed into the store's read and write
transactions.

An entry's data is stored packed (`model.packed_changes`): without what its row already
says, so the log holds each id, scope and hash once.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from mnemodb.model.packed_changes import is_packed, pack, unpack
from mnemodb.model.records import Change, ChangeFilter
from mnemodb.store.sqlite.sql import marks

__all__ = ["CHANGE_COLUMNS", "LogReads", "LogWrites", "change_of", "define_log_functions"]

CHANGE_COLUMNS = "seq, at, scope, op, target, data, actor"
"""The columns `change_of` reads, in its order."""

# A page of the log is one walk of an index per (scope, op or actor) it asks for, merged;
# past this many walks, one query over them all.
_WALKS = 64


def change_of(row: Sequence[Any]) -> Change:
    """A change-log row (`CHANGE_COLUMNS`) as a record."""
    return Change(row[0], row[1], row[2], row[3], row[4], unpack(row[1], row[2], row[4], row[5]), row[6])


def _packed(at: int, scope: str | None, target: str | None, text: str) -> str:
    return text if is_packed(text) else pack(at, scope, target, unpack(at, scope, target, text))


def define_log_functions(conn: sqlite3.Connection) -> None:
    """The SQL functions a migration of the log calls: `packed_change(at, scope, target,
    data)` is an entry's data packed (data already packed is returned as it is)."""
    conn.create_function("packed_change", 4, _packed, deterministic=True)


def _equal(column: str, value: str | None) -> tuple[str, list[Any]]:
    """`column` equals `value` (None: is NULL), in a form an index walk can use."""
    return (f"{column} IS NULL", []) if value is None else (f"{column} = ?", [value])


def _one_of(column: str, values: Sequence[str | None]) -> tuple[str, list[Any]]:
    """`column` is one of `values` (None among them: or NULL)."""
    named = [v for v in values if v is not None]
    parts = [f"{column} IN ({marks(len(named))})"] if named else []
    if len(named) < len(values):
        parts.append(f"{column} IS NULL")
    return "(" + " OR ".join(parts) + ")", named


class LogReads:
    conn: sqlite3.Connection

    def counts(self, scopes: Sequence[str] | None) -> dict[str, int]:
        if scopes is None:
            where, params = "", []
        else:
            where, params = f" WHERE scope IN ({marks(len(scopes))})", list(scopes)
        out = {}
        for name, table in (
            ("nodes", "node"),
            ("memories", "memory"),
            ("entities", "entity"),
            ("edges", "edge"),
        ):
            out[name] = int(self.conn.execute(f"SELECT COUNT(*) FROM {table}{where}", params).fetchone()[0])
        obs_where = (
            "" if scopes is None else f" JOIN entity e ON e.node = o.entity WHERE e.scope IN ({marks(len(scopes))})"
        )
        out["observations"] = int(
            self.conn.execute(f"SELECT COUNT(*) FROM observation o{obs_where}", params).fetchone()[0]
        )
        emb_where = "" if scopes is None else f" JOIN node n ON n.pk = b.node WHERE n.scope IN ({marks(len(scopes))})"
        out["embeddings"] = int(self.conn.execute(f"SELECT COUNT(*) FROM embedding b{emb_where}", params).fetchone()[0])
        return out

    def current_seq(self) -> int:
        row = self.conn.execute("SELECT MAX(seq) FROM change_log").fetchone()
        return int(row[0] or 0)

    def last_change_at(self) -> int | None:
        row = self.conn.execute("SELECT at FROM change_log ORDER BY seq DESC LIMIT 1").fetchone()
        return None if row is None else int(row[0])

    def changes(self, since_seq: int, limit: int | None) -> list[Change]:
        sql = f"SELECT {CHANGE_COLUMNS} FROM change_log WHERE seq >= ? ORDER BY seq"
        params: list[Any] = [since_seq]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [change_of(r) for r in self.conn.execute(sql, params)]

    def change_page(
        self, scopes: Sequence[str] | None, where: ChangeFilter, before_seq: int | None, limit: int
    ) -> list[Change]:
        """Entries meeting `where` in `scopes` (and those without a scope), newest first.

        Each walk reads one index in time order, stopping after `limit` rows: per scope (an
        `IS NULL` walk for entries without one), and per op, or else per actor, when the
        filter names some; the walks are merged. An index ends with the rowid (`seq`), so
        "by time, then seq" is the index's own order."""
        if limit <= 0:
            return []
        filters: list[str] = []
        params: list[Any] = []
        if where.at_from is not None:
            filters.append("at >= ?")
            params.append(where.at_from)
        if where.at_to is not None:
            filters.append("at < ?")
            params.append(where.at_to)
        if before_seq is not None:
            row = self.conn.execute("SELECT at FROM change_log WHERE seq = ?", [before_seq]).fetchone()
            if row is not None:
                filters.append("at <= ? AND (at < ? OR seq < ?)")
                params += [row[0], row[0], before_seq]
        scoped: list[str | None] | None = None if scopes is None else [*dict.fromkeys(scopes), None]
        leads: list[tuple[str, list[Any]]]
        if where.target is not None:
            # One item's entries are few: its index finds them, and they are sorted.
            filters.append("target = ?")
            params.append(where.target)
            leads = [("1", [])]
            for column, values in (("scope", scoped), ("op", list(where.ops)), ("actor", list(where.actors))):
                if values:
                    clause, values_params = _one_of(column, values)
                    filters.append(clause)
                    params += values_params
        else:
            lead_column, lead_values = ("op", list(where.ops)) if where.ops else ("actor", list(where.actors))
            if where.ops and where.actors:
                clause, values_params = _one_of("actor", where.actors)
                filters.append(clause)
                params += values_params
            walks = (len(scoped) if scoped is not None else 1) * max(1, len(lead_values))
            if walks > _WALKS:
                for column, values in (("scope", scoped), (lead_column, lead_values)):
                    if values:
                        clause, values_params = _one_of(column, values)
                        filters.append(clause)
                        params += values_params
                leads = [("1", [])]
            else:
                by_scope = [("1", [])] if scoped is None else [_equal("scope", scope) for scope in scoped]
                by_lead = [_equal(lead_column, value) for value in lead_values] or [("1", [])]
                leads = [(f"{a} AND {b}", [*pa, *pb]) for a, pa in by_scope for b, pb in by_lead]
        condition = " AND ".join(filters) or "1"
        order = "ORDER BY at DESC, seq DESC LIMIT ?"
        walks_sql = [
            f"SELECT * FROM (SELECT {CHANGE_COLUMNS} FROM change_log WHERE {lead} AND {condition} {order})"
            for lead, _ in leads
        ]
        args = [value for _, lead_params in leads for value in (*lead_params, *params, limit)]
        sql = walks_sql[0] if len(walks_sql) == 1 else " UNION ALL ".join(walks_sql) + f" {order}"
        if len(walks_sql) > 1:
            args.append(limit)
        return [change_of(r) for r in self.conn.execute(sql, args)]

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
        return None if row is None else str(row[0])


_APPEND = "INSERT INTO change_log (at, scope, op, target, data, actor) VALUES (?, ?, ?, ?, ?, ?)"
_APPEND_MOST = 128
# `append_changes`' statements by rows appended.
_APPEND_ROWS = {1 << k: _APPEND + ", (?, ?, ?, ?, ?, ?)" * ((1 << k) - 1) for k in range(_APPEND_MOST.bit_length())}


class LogWrites(LogReads):
    def append_change(
        self,
        at: int,
        scope: str | None,
        op: str,
        target: str | None,
        data: Mapping[str, Any],
        *,
        actor: str | None = None,
    ) -> int:
        # INTEGER PRIMARY KEY without AUTOINCREMENT takes MAX(seq)+1. Writers are serialised
        # by BEGIN IMMEDIATE and a rolled-back insert leaves no row, so the log has no gaps.
        cur = self.conn.execute(
            _APPEND,
            [at, scope, op, target, pack(at, scope, target, data), actor],
        )
        return int(cur.lastrowid or 0)

    def append_changes(
        self,
        at: int,
        entries: Sequence[tuple[str | None, str, str | None, Mapping[str, Any]]],
        *,
        actor: str | None = None,
    ) -> int:
        # Several rows a statement (chunks of 128, 64, ..., 1: a handful of statement texts,
        # each prepared once); seqs follow on as `append_change`'s do, the last one the
        # last inserted rowid.
        if not entries:
            return int(self.conn.execute("SELECT COALESCE(MAX(seq), 0) FROM change_log").fetchone()[0])
        done = 0
        last = 0
        while done < len(entries):
            size = min(_APPEND_MOST, 1 << ((len(entries) - done).bit_length() - 1))
            values: list[Any] = []
            for scope, op, target, data in entries[done : done + size]:
                values += (at, scope, op, target, pack(at, scope, target, data), actor)
            last = int(self.conn.execute(_APPEND_ROWS[size], values).lastrowid or 0)
            done += size
        return last

    def rewrite_change(self, seq: int, data: Mapping[str, Any]) -> None:
        """Replace one entry's data (its seq, time, op and target stay): how a forgotten
        item's text leaves the log."""
        row = self.conn.execute("SELECT at, scope, target FROM change_log WHERE seq = ?", [seq]).fetchone()
        if row is not None:
            self.conn.execute("UPDATE change_log SET data = ? WHERE seq = ?", [pack(row[0], row[1], row[2], data), seq])

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [key, value],
        )
