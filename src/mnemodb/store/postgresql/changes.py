"""The change log, settings and row counts. Mixed into the PostgreSQL store's read and
write transactions.

The log's `seq` is not a sequence (a sequence hands out numbers that a rolled-back
transaction never uses, and numbers in the order transactions start, not commit): an
entry takes MAX(seq) + 1 inside the write transaction, which holds the schema's write
lock until it commits. So the log has no gaps, and an entry that commits later always
has a higher number: a reader polling "everything after seq N" never skips one.

An entry's data is stored packed (`model.packed_changes`): without what its row already
says, so the log holds each id, scope and hash once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import psycopg

from mnemodb.model.packed_changes import pack, unpack
from mnemodb.model.records import Change, ChangeFilter
from mnemodb.store.postgresql.nodes import CHANGE_COLUMNS, change_of, put_scopes
from mnemodb.store.postgresql.sql import got, put

__all__ = ["ACTOR_DDL", "ACTOR_PARTIAL_DDL", "DDL", "LogReads", "LogWrites", "pack_log"]

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

# Schema 3: who made each change (`actor`, the grant's name; NULL without one), and the
# indexes a page of the log walks, newest first, filtered by scope, op, actor and time:
# each leads one kind of filter in time order, so a page reads about as many rows as it
# returns. An actor may be a JWT subject of any length: its index holds the first 200
# characters (a B-tree entry holds a third of a page), and the whole name is compared after.
ACTOR_DDL = """
ALTER TABLE change_log ADD COLUMN actor text COLLATE "C";
CREATE INDEX change_log_at ON change_log (at, seq);
CREATE INDEX change_log_scope_at ON change_log (scope, at, seq);
CREATE INDEX change_log_scope_op_at ON change_log (scope, op, at, seq);
CREATE INDEX change_log_scope_actor_at ON change_log (scope, left(actor, 200), at, seq);
CREATE INDEX change_log_op_at ON change_log (op, at, seq);
CREATE INDEX change_log_actor_at ON change_log (left(actor, 200), at, seq);
"""

# Schema 5: the actor indexes hold only entries made under a grant (without tokens no
# entry has an actor, yet each was written to both). A page filtered by a grant's name
# walks them as before (`actor = %s` implies NOT NULL); one asking for the entries made
# without a grant walks `change_log_scope_at` or `change_log_at`.
ACTOR_PARTIAL_DDL = """
DROP INDEX change_log_scope_actor_at;
DROP INDEX change_log_actor_at;
CREATE INDEX change_log_scope_actor_at ON change_log (scope, left(actor, 200), at, seq) WHERE actor IS NOT NULL;
CREATE INDEX change_log_actor_at ON change_log (left(actor, 200), at, seq) WHERE actor IS NOT NULL;
"""

# Entries packed by one statement of the migration that packs a log.
_PACK_BATCH = 2000


def pack_log(conn: psycopg.Connection[Any]) -> None:
    """Schema 4: every entry's data packed in place (`model.packed_changes`), a batch of
    entries at a time in seq order; and `change_log_op` goes, as a page filtered by op walks
    `change_log_op_at` or `change_log_scope_op_at` and nothing reads ops in seq order."""
    after = 0
    while True:
        rows = conn.execute(
            "SELECT seq, at, scope, target, data FROM change_log WHERE seq > %s ORDER BY seq LIMIT %s",
            [after, _PACK_BATCH],
        ).fetchall()
        if not rows:
            break
        packed = []
        for seq, at, stored_scope, stored_target, data in rows:
            scope, target = got(stored_scope), got(stored_target)
            text = pack(at, scope, target, unpack(at, scope, target, data))
            if text != data:
                packed.append((text, seq))
        if packed:
            with conn.cursor() as cur:
                cur.executemany("UPDATE change_log SET data = %s WHERE seq = %s", packed)
        after = rows[-1][0]
    conn.execute("DROP INDEX change_log_op")


# A page of the log is one walk of an index per (scope, op or actor) it asks for, merged;
# past this many walks, one query over them all.
_WALKS = 64


def _equal(column: str, value: str | None) -> tuple[str, list[Any]]:
    """`column` equals `value` (None: is NULL), in a form an index walk can use; an actor
    by its indexed prefix, then whole."""
    if column == "actor":
        if value is None:
            return "left(actor, 200) IS NULL", []
        return "left(actor, 200) = left(%s, 200) AND actor = %s", [put(value), put(value)]
    return (f"{column} IS NULL", []) if value is None else (f"{column} = %s", [put(value)])


def _one_of(column: str, values: Sequence[str | None]) -> tuple[str, list[Any]]:
    """`column` is one of `values` (None among them: or NULL); an actor by its indexed
    prefix too, so that the planner may walk its index."""
    named = [put(v) for v in values if v is not None]
    key = "left(actor, 200)" if column == "actor" else column
    parts: list[str] = []
    params: list[Any] = []
    if named:
        parts.append(f"{key} = ANY(%s::text[])" + (" AND actor = ANY(%s::text[])" if column == "actor" else ""))
        params += [[v[:200] for v in named], named] if column == "actor" else [named]
    if len(named) < len(values):
        parts.append(f"{key} IS NULL")
    return "(" + " OR ".join(f"({p})" for p in parts) + ")", params


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
        sql = f"SELECT {CHANGE_COLUMNS} FROM change_log WHERE seq >= %s ORDER BY seq"
        params: list[Any] = [since_seq]
        if limit is not None:
            sql += " LIMIT %s"
            params.append(limit)
        return [change_of(r) for r in self.conn.execute(sql, params)]

    def change_page(
        self, scopes: Sequence[str] | None, where: ChangeFilter, before_seq: int | None, limit: int
    ) -> list[Change]:
        """Entries meeting `where` in `scopes` (and those without a scope), newest first.

        Each walk reads one index in (time, seq) order, stopping after `limit` rows: per
        scope (an `IS NULL` walk for entries without one), and per op, or else per actor,
        when the filter names some; the walks are merged (a B-tree walk is ordered for one
        leading value, not for a set of them)."""
        if limit <= 0:
            return []
        filters: list[str] = []
        params: list[Any] = []
        if where.at_from is not None:
            filters.append("at >= %s")
            params.append(where.at_from)
        if where.at_to is not None:
            filters.append("at < %s")
            params.append(where.at_to)
        if before_seq is not None:
            row = self.conn.execute("SELECT at FROM change_log WHERE seq = %s", [before_seq]).fetchone()
            if row is not None:
                filters.append("(at, seq) < (%s, %s)")
                params += [row[0], before_seq]
        scoped: list[str | None] | None = None if scopes is None else [*dict.fromkeys(scopes), None]
        leads: list[tuple[str, list[Any]]]
        if where.target is not None:
            # One item's entries are few: its index finds them, and they are sorted.
            filters.append("target = %s")
            params.append(put(where.target))
            leads = [("TRUE", [])]
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
                leads = [("TRUE", [])]
            else:
                by_scope = [("TRUE", [])] if scoped is None else [_equal("scope", scope) for scope in scoped]
                by_lead = [_equal(lead_column, value) for value in lead_values] or [("TRUE", [])]
                leads = [(f"{a} AND {b}", [*pa, *pb]) for a, pa in by_scope for b, pb in by_lead]
        condition = " AND ".join(filters) or "TRUE"
        order = "ORDER BY at DESC, seq DESC LIMIT %s"
        walks_sql = [
            f"(SELECT {CHANGE_COLUMNS} FROM change_log WHERE {lead} AND {condition} {order})" for lead, _ in leads
        ]
        args = [value for _, lead_params in leads for value in (*lead_params, *params, limit)]
        if len(walks_sql) == 1:
            sql = walks_sql[0]
        else:
            sql = " UNION ALL ".join(walks_sql) + f" {order}"
            args.append(limit)
        return [change_of(r) for r in self.conn.execute(sql, args)]

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = %s", [put(key)]).fetchone()
        return None if row is None else got(row[0])


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
        row = self.conn.execute(
            "INSERT INTO change_log (seq, at, scope, op, target, data, actor) "
            "SELECT COALESCE(MAX(seq), 0) + 1, %s, %s, %s, %s, %s, %s FROM change_log RETURNING seq",
            [
                at,
                put(scope),
                put(op),
                put(target),
                pack(at, scope, target, data),
                put(actor),
            ],
        ).fetchone()
        assert row is not None
        return int(row[0])

    def append_changes(
        self,
        at: int,
        entries: Sequence[tuple[str | None, str, str | None, Mapping[str, Any]]],
        *,
        actor: str | None = None,
    ) -> int:
        seq = None
        for scope, op, target, data in entries:
            seq = self.append_change(at, scope, op, target, data, actor=actor)
        return self.current_seq() if seq is None else seq

    def rewrite_change(self, seq: int, data: Mapping[str, Any]) -> None:
        """Replace one entry's data (its seq, time, op and target stay): how a forgotten
        item's text leaves the log."""
        row = self.conn.execute("SELECT at, scope, target FROM change_log WHERE seq = %s", [seq]).fetchone()
        if row is not None:
            self.conn.execute(
                "UPDATE change_log SET data = %s WHERE seq = %s", [pack(row[0], got(row[1]), got(row[2]), data), seq]
            )

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [put(key), put(value)],
        )
