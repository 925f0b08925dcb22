"""The change log, settings and row counts. Mixed into the store's read and write
transactions."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from mnemodb.model.records import Change
from mnemodb.store.sqlite.sql import dumps, marks

__all__ = ["LogReads", "LogWrites"]


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
        sql = "SELECT seq, at, scope, op, target, data FROM change_log WHERE seq >= ? ORDER BY seq"
        params: list[Any] = [since_seq]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [Change(r[0], r[1], r[2], r[3], r[4], json.loads(r[5])) for r in self.conn.execute(sql, params)]

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
        return None if row is None else str(row[0])


class LogWrites(LogReads):
    def append_change(self, at: int, scope: str | None, op: str, target: str | None, data: Mapping[str, Any]) -> int:
        # INTEGER PRIMARY KEY without AUTOINCREMENT takes MAX(seq)+1. Writers are serialised
        # by BEGIN IMMEDIATE and a rolled-back insert leaves no row, so the log has no gaps.
        cur = self.conn.execute(
            "INSERT INTO change_log (at, scope, op, target, data) VALUES (?, ?, ?, ?, ?)",
            [at, scope, op, target, dumps(dict(data))],
        )
        return int(cur.lastrowid or 0)

    def rewrite_change(self, seq: int, data: Mapping[str, Any]) -> None:
        """Replace one entry's data (its seq, time, op and target stay): how a forgotten
        item's text leaves the log."""
        self.conn.execute("UPDATE change_log SET data = ? WHERE seq = ?", [dumps(dict(data)), seq])

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [key, value],
        )
