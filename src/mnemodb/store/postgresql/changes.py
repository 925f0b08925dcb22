"""The change log, settings and row counts. Mixed into the PostgreSQL store's read and
write transactions.

The log's `seq` is not a sequence (a sequence hands out numbers that a rolled-back
transaction never uses, and numbers in the order transactions start, not commit): an
entry takes MAX(seq) + 1 inside the write transaction, which holds the schema's write
lock until it commits. So the log has no gaps, and an entry that commits later always
has a higher number: a reader polling "everything after seq N" never skips one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import psycopg

from mnemodb.model.records import Change
from mnemodb.store.postgresql.nodes import change_of, put_scopes
from mnemodb.store.postgresql.sql import got, put

__all__ = ["DDL", "LogReads", "LogWrites"]

DDL = """
CREATE TABLE change_log (
    seq    bigint PRIMARY KEY,
    at     bigint NOT NULL,
    scope  text COLLATE "C",
    op     text COLLATE "C" NOT NULL,
    target text COLLATE "C",
    data   text COLLATE "C" NOT NULL
);
-- By hash: a target may be a name of any length (a B-tree entry holds a third of a page);
-- one target's entries are few, sorted by seq after the lookup.
CREATE INDEX change_log_target ON change_log USING hash (target);
CREATE INDEX change_log_op ON change_log (op, seq);
"""

_COUNTED = (("nodes", "node"), ("memories", "memory"), ("entities", "entity"), ("edges", "edge"))


class LogReads:
    conn: psycopg.Connection[Any]

    def counts(self, scopes: Sequence[str] | None) -> dict[str, int]:
        where, params = ("", []) if scopes is None else (" WHERE scope = ANY(%s)", [put_scopes(scopes)])
        out = {}
        for name, table in _COUNTED:
            row = self.conn.execute(f"SELECT COUNT(*) FROM {table}{where}", params).fetchone()
            out[name] = int(row[0]) if row else 0
        obs_where = "" if scopes is None else " JOIN entity e ON e.node = o.entity WHERE e.scope = ANY(%s)"
        row = self.conn.execute(f"SELECT COUNT(*) FROM observation o{obs_where}", params).fetchone()
        out["observations"] = int(row[0]) if row else 0
        emb_where = "" if scopes is None else " JOIN node n ON n.pk = b.node WHERE n.scope = ANY(%s)"
        row = self.conn.execute(f"SELECT COUNT(*) FROM embedding b{emb_where}", params).fetchone()
        out["embeddings"] = int(row[0]) if row else 0
        return out

    def current_seq(self) -> int:
        row = self.conn.execute("SELECT MAX(seq) FROM change_log").fetchone()
        return int(row[0] or 0) if row else 0

    def last_change_at(self) -> int | None:
        row = self.conn.execute("SELECT at FROM change_log ORDER BY seq DESC LIMIT 1").fetchone()
        return None if row is None else int(row[0])

    def changes(self, since_seq: int, limit: int | None) -> list[Change]:
        sql = "SELECT seq, at, scope, op, target, data FROM change_log WHERE seq >= %s ORDER BY seq"
        params: list[Any] = [since_seq]
        if limit is not None:
            sql += " LIMIT %s"
            params.append(limit)
        return [change_of(r) for r in self.conn.execute(sql, params)]

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = %s", [put(key)]).fetchone()
        return None if row is None else got(row[0])


class LogWrites(LogReads):
    def append_change(self, at: int, scope: str | None, op: str, target: str | None, data: Mapping[str, Any]) -> int:
        row = self.conn.execute(
            "INSERT INTO change_log (seq, at, scope, op, target, data) "
            "SELECT COALESCE(MAX(seq), 0) + 1, %s, %s, %s, %s, %s FROM change_log RETURNING seq",
            [at, put(scope), put(op), put(target), json.dumps(dict(data), separators=(",", ":"), ensure_ascii=False)],
        ).fetchone()
        assert row is not None
        return int(row[0])

    def rewrite_change(self, seq: int, data: Mapping[str, Any]) -> None:
        """Replace one entry's data (its seq, time, op and target stay): how a forgotten
        item's text leaves the log."""
        self.conn.execute(
            "UPDATE change_log SET data = %s WHERE seq = %s",
            [json.dumps(dict(data), separators=(",", ":"), ensure_ascii=False), seq],
        )

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [put(key), put(value)],
        )
