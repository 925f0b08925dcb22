"""Memories and entities under an `ItemFilter`: the SQL behind filtered search and
listing (the native face's recall). Mixed into the PostgreSQL store's read transactions."""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import psycopg

from mnemodb.model.records import ENTITY, MEMORY, SUPERSEDES, ItemFilter, Scalar
from mnemodb.store.base import MemoryFieldWeights, TextHit
from mnemodb.store.postgresql import words
from mnemodb.store.postgresql.edges import edge_visible, edge_visible_params
from mnemodb.store.postgresql.entities import oldest_of_each_name
from mnemodb.store.postgresql.memories import MEMORY_TEXT, archived_in
from mnemodb.store.postgresql.nodes import put_scopes
from mnemodb.store.postgresql.sql import got, put
from mnemodb.store.rows import dumps, rows_as

__all__ = ["ItemReads", "filter_sql"]

# SQLite's NOCASE folds ASCII letters only; the SQL side is `ascii_lower`.
_ASCII_FOLD = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def _prop_condition(key: str, value: Scalar) -> tuple[str, list[Any]]:
    """`n.props` holds `key` with exactly this JSON value (true is not 1, 1 is 1.0).

    Read as `json`, not `jsonb`: jsonb refuses the escape `\\u0000`, which stored
    properties may hold. A string is compared as the JSON text `rows.dumps` writes (every
    stored property was written by it, and JSON text needs no `put`), so nothing is
    unescaped either."""
    # SQLite's quoted JSON path cannot name a key with a double quote: refused alike.
    if '"' in key:
        raise ValueError(f"a property name with a double quote cannot be filtered on: {key!r}")
    found = "(n.props::json -> %s)"
    if isinstance(value, bool):
        return f"(json_typeof({found}) = 'boolean' AND {found}::text = %s)", [key, key, dumps(value)]
    if isinstance(value, str):
        return f"(json_typeof({found}) = 'string' AND {found}::text = %s)", [key, key, dumps(value)]
    number = "numeric" if isinstance(value, int) else "float8"
    return (
        f"(json_typeof({found}) = 'number' AND {found}::text::{number} = %s::{number})",
        [key, key, value],
    )


def filter_sql(where: ItemFilter, kind: str, at: int, scopes: Sequence[str]) -> tuple[str, list[Any]]:
    """SQL conditions (joined by AND, "TRUE" when none) over `n` (node) and `m` (memory)
    or `e` (entity), and their parameters. Edges count when they are valid at `at` and lie
    in `scopes`: an edge the reader cannot see decides nothing."""
    own = "m" if kind == "memory" else "e"
    clauses: list[str] = []
    params: list[Any] = []
    if where.types:
        column = "m.memory_type" if kind == "memory" else "e.entity_type"
        clauses.append(f"ascii_lower({column}) = ANY(%s::text[])")
        params.append([put(t).translate(_ASCII_FOLD) for t in where.types])
    if where.pks is not None:
        # An empty set admits nothing.
        clauses.append(f"{own}.node = ANY(%s::bigint[])")
        params.append(list(where.pks))
    if where.created_from is not None:
        clauses.append("n.created_at >= %s")
        params.append(where.created_from)
    if where.created_to is not None:
        clauses.append("n.created_at < %s")
        params.append(where.created_to)
    for key, value in where.props:
        clause, values = _prop_condition(key, value)
        clauses.append(clause)
        params += values
    if kind == "entity":
        if where.memories_only:
            clauses.append("FALSE")
        return " AND ".join(clauses) or "TRUE", params
    if not where.include_archived:
        clauses.append("m.archived_at IS NULL")
    for tag in where.tags:
        clauses.append(f"EXISTS (SELECT 1 FROM memory_tag t WHERE t.node = {own}.node AND t.tag = %s)")
        params.append(put(tag))
    if where.min_importance is not None:
        clauses.append("m.importance >= %s")
        params.append(where.min_importance)
    if where.max_importance is not None:
        clauses.append("m.importance <= %s")
        params.append(where.max_importance)
    # An edge counts when the reader sees it: its scope and both its ends' (the contract's rule).
    valid = f"x.valid_from <= %s AND (x.valid_to IS NULL OR x.valid_to > %s) AND {edge_visible('x')}"
    seen = edge_visible_params(scopes)
    if where.linked_to:
        linked = list(where.linked_to)
        clauses.append(
            f"(EXISTS (SELECT 1 FROM edge x WHERE x.src = m.node AND x.dst = ANY(%s::bigint[]) AND {valid}) "
            f"OR EXISTS (SELECT 1 FROM edge x WHERE x.dst = m.node AND x.src = ANY(%s::bigint[]) AND {valid}))"
        )
        params += [linked, at, at, *seen, linked, at, at, *seen]
    if where.current_only:
        clauses.append(f"NOT EXISTS (SELECT 1 FROM edge x WHERE x.dst = m.node AND x.type = %s AND {valid})")
        params += [SUPERSEDES, at, at, *seen]
    return " AND ".join(clauses) or "TRUE", params


# A tag on at most this many memories of the read scopes leads a listing filtered by it
# (see `ItemReads._newest`).
_RARE_TAG = 2000


class ItemReads:
    conn: psycopg.Connection[Any]

    def filtered_text_search(
        self,
        terms: Sequence[str],
        scopes: Sequence[str],
        limit: int,
        where: ItemFilter,
        at: int,
        weights: MemoryFieldWeights,
    ) -> list[TextHit]:
        """Memories whose content, summary or context holds any of `terms` and that meet
        `where`, best first, each field weighted by `weights` (the score is FTS5's bm25
        negated, as on SQLite)."""
        if not terms or limit <= 0:
            return []
        if not where.include_archived and not archived_in(self.conn, scopes):
            where = replace(where, include_archived=True)  # none to leave out: no condition for it
        condition, params = filter_sql(where, "memory", at, scopes)
        # Without conditions the candidates are judged on the index row alone.
        join = "" if condition == "TRUE" else "JOIN memory m ON m.node = w.node JOIN node n ON n.pk = w.node"
        rows = words.ranked(
            self.conn,
            MEMORY_TEXT,
            terms,
            limit=limit,
            weights=tuple(weights),
            join=join,
            condition=f"w.scope = ANY(%s) AND {condition}",
            params=[put_scopes(scopes), *params],
            extra="m.importance, n.created_at",
            extra_join="JOIN memory m ON m.node = r.node JOIN node n ON n.pk = r.node",
        )
        return rows_as(TextHit, rows)

    def filtered_tagged(
        self, tags: Sequence[str], scopes: Sequence[str], limit: int, where: ItemFilter, at: int
    ) -> list[TextHit]:
        """The newest memories with any of `tags` that meet `where`, score 0."""
        if not tags or limit <= 0:
            return []
        condition, params = filter_sql(where, "memory", at, scopes)
        # The tagged memories come from the (tag, scope) index, not from testing every
        # memory of the scopes for a tag.
        in_scopes = put_scopes(scopes)
        rows = self.conn.execute(
            "SELECT m.node, 0.0::float8, m.importance, n.created_at FROM memory m JOIN node n ON n.pk = m.node "
            "WHERE m.node IN (SELECT t.node FROM memory_tag t WHERE t.tag = ANY(%s) AND t.scope = ANY(%s)) "
            f"AND m.scope = ANY(%s) AND {condition} ORDER BY m.node DESC LIMIT %s",
            [put_scopes(tags), in_scopes, in_scopes, *params, limit],
        ).fetchall()
        return rows_as(TextHit, rows)

    def _newest(
        self,
        kind: str,
        scopes: Sequence[str],
        condition: str,
        params: list[Any],
        offset: int,
        limit: int,
        *,
        via_tag: str | None = None,
    ) -> list[int]:
        """Nodes of `kind` in `scopes` that meet `condition`, newest first.

        One walk of the (label, scope, created_at) index per scope, each stopping after
        `offset + limit` rows, then merged: reading and sorting every row of the scopes
        costs in proportion to the scopes' size, this in proportion to the page. With
        `via_tag`, a tag every result carries and few memories do, each scope's rows come
        from the tag's index entries instead, so a rare tag does not mean walking every
        memory."""
        if limit <= 0:
            return []
        table, own = ("memory m", "m") if kind == MEMORY else ("entity e", "e")
        source, lead, head = f"node n JOIN {table} ON {own}.node = n.pk", "n.label = %s AND n.scope", put(kind)
        if via_tag is not None:
            source = f"memory_tag t JOIN node n ON n.pk = t.node JOIN {table} ON {own}.node = n.pk"
            lead, head = "t.tag = %s AND t.scope", put(via_tag)
        rows = self.conn.execute(
            "SELECT x.pk FROM unnest(%s::text[]) AS s(scope) CROSS JOIN LATERAL "
            f"(SELECT n.pk, n.created_at FROM {source} WHERE {lead} = s.scope AND {condition} "
            "ORDER BY n.created_at DESC, n.pk DESC LIMIT %s) x "
            "ORDER BY x.created_at DESC, x.pk DESC LIMIT %s OFFSET %s",
            [put_scopes(sorted(set(scopes))), head, *params, offset + limit, limit, offset],
        )
        return [r[0] for r in rows]

    def _rare_tag(self, tags: Sequence[str], scopes: Sequence[str]) -> str | None:
        """Of `tags`, the one the fewest memories in `scopes` carry, when at most
        `_RARE_TAG` do: sorting that many is cheaper than walking the newest memories
        until enough carry it."""
        if not tags:
            return None
        counts = dict.fromkeys(tags, 0)
        for tag, n in self.conn.execute(
            "SELECT tag, SUM(n) FROM tag_count WHERE tag = ANY(%s) AND scope = ANY(%s) GROUP BY tag",
            [put_scopes(tags), put_scopes(scopes)],
        ):
            counts[got(tag)] = int(n)
        tag, n = min(counts.items(), key=lambda kv: kv[1])
        return tag if n <= _RARE_TAG else None

    def list_memories(self, scopes: Sequence[str], where: ItemFilter, at: int, offset: int, limit: int) -> list[int]:
        """Memories that meet `where`, newest first."""
        condition, params = filter_sql(where, "memory", at, scopes)
        via_tag = self._rare_tag(where.tags, scopes)
        return self._newest(MEMORY, scopes, condition, params, offset, limit, via_tag=via_tag)

    def list_entities(self, scopes: Sequence[str], where: ItemFilter, at: int, offset: int, limit: int) -> list[int]:
        """Entities (the oldest of each name) that meet `where`, newest first."""
        condition, params = filter_sql(where, "entity", at, scopes)
        canonical, names = oldest_of_each_name("e", scopes)
        return self._newest(ENTITY, scopes, f"{canonical} AND {condition}", [*names, *params], offset, limit)

    def admitted(self, pks: Sequence[int], kind: str, where: ItemFilter, at: int, scopes: Sequence[str]) -> set[int]:
        """Which of these memories (or entities) meet `where`, for a reader of `scopes`."""
        if not pks:
            return set()
        condition, params = filter_sql(where, kind, at, scopes)
        table, own = ("memory m", "m") if kind == "memory" else ("entity e", "e")
        rows = self.conn.execute(
            f"SELECT {own}.node FROM {table} JOIN node n ON n.pk = {own}.node "
            f"WHERE {own}.node = ANY(%s::bigint[]) AND {condition}",
            [list(pks), *params],
        )
        return {r[0] for r in rows}

    def memory_growth(self, scopes: Sequence[str], start: int, step: int, buckets: int) -> list[int]:
        counts = [0] * buckets
        rows = self.conn.execute(
            "SELECT (created_at - %s) / %s AS b, COUNT(*) FROM node WHERE label = 'Memory' "
            "AND scope = ANY(%s) AND created_at >= %s AND created_at < %s GROUP BY b",
            [start, step, put_scopes(scopes), start, start + step * buckets],
        )
        for bucket, count in rows:
            counts[int(bucket)] = int(count)
        return counts

    def largest_entities(self, scopes: Sequence[str], limit: int) -> list[tuple[int, int]]:
        rows = self.conn.execute(
            "SELECT e.node, COUNT(*) AS c FROM entity e JOIN observation o ON o.entity = e.node "
            "WHERE e.scope = ANY(%s) GROUP BY e.node ORDER BY c DESC, e.node LIMIT %s",
            [put_scopes(scopes), limit],
        )
        return [(int(pk), int(count)) for pk, count in rows]

    def facets(self, scopes: Sequence[str], top: int) -> dict[str, list[tuple[str, int]]]:
        """The most common tags, memory types, entity types and relation types in `scopes`,
        with their counts, most common first (one statement)."""
        in_scopes = put_scopes(scopes)
        rows = self.conn.execute(
            "SELECT k, name, c FROM ("
            "(SELECT 1 AS k, tag AS name, SUM(n) AS c FROM tag_count WHERE scope = ANY(%s) AND n > 0 "
            "GROUP BY tag ORDER BY c DESC, tag LIMIT %s) UNION ALL "
            "(SELECT 2, memory_type, COUNT(*) AS c FROM memory WHERE scope = ANY(%s) "
            "GROUP BY memory_type ORDER BY c DESC, memory_type LIMIT %s) UNION ALL "
            "(SELECT 3, entity_type, COUNT(*) AS c FROM entity WHERE scope = ANY(%s) "
            "AND entity_type <> '' GROUP BY entity_type ORDER BY c DESC, entity_type LIMIT %s) UNION ALL "
            # Only the relations the reader sees: both ends readable too.
            f"(SELECT 4, r.type, COUNT(*) AS c FROM edge r WHERE {edge_visible('r')} "
            "AND r.valid_to IS NULL GROUP BY r.type ORDER BY c DESC, r.type LIMIT %s)"
            ") f ORDER BY k, c DESC, name",
            [in_scopes, top, in_scopes, top, in_scopes, top, *edge_visible_params(scopes), top],
        ).fetchall()
        facets = ("tags", "memory_types", "entity_types", "relation_types")
        out: dict[str, list[tuple[str, int]]] = {facet: [] for facet in facets}
        for k, name, count in rows:
            out[facets[k - 1]].append((got(name), int(count)))
        return out
