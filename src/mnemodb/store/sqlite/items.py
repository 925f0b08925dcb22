"""Memories and entities under an `ItemFilter`: the SQL behind filtered search and
listing (the native face's recall). Mixed into the store's read transactions."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from mnemodb.model.records import ENTITY, MEMORY, SUPERSEDES, ItemFilter, Scalar
from mnemodb.store.base import MemoryFieldWeights, TextHit
from mnemodb.store.sqlite.entities import oldest_of_each_name
from mnemodb.store.sqlite.sql import edge_visible, edge_visible_params, fts_any, marks, rows_as

__all__ = ["ItemReads", "filter_sql"]


def _json_path(key: str) -> str:
    # A quoted JSON path label takes any key; only a double quote inside it cannot be written.
    if '"' in key:
        raise ValueError(f"a property name with a double quote cannot be filtered on: {key!r}")
    return f'$."{key}"'


def _prop_condition(key: str, value: Scalar) -> tuple[str, list[Any]]:
    """`n.props` holds `key` with exactly this JSON value (true is not 1, 1 is 1.0)."""
    path = _json_path(key)
    if isinstance(value, bool):
        return "json_type(n.props, ?) = ?", [path, "true" if value else "false"]
    if isinstance(value, str):
        return "(json_type(n.props, ?) = 'text' AND json_extract(n.props, ?) = ?)", [path, path, value]
    return "(json_type(n.props, ?) IN ('integer', 'real') AND json_extract(n.props, ?) = ?)", [path, path, value]


def filter_sql(where: ItemFilter, kind: str, at: int, scopes: Sequence[str]) -> tuple[str, list[Any]]:
    """SQL conditions (joined by AND, "1" when none) over `n` (node) and `m` (memory) or `e`
    (entity), and their parameters. Edges count when they are valid at `at` and lie in
    `scopes`: an edge the reader cannot see decides nothing."""
    own = "m" if kind == "memory" else "e"
    clauses: list[str] = []
    params: list[Any] = []
    if where.types:
        column = "m.memory_type" if kind == "memory" else "e.entity_type"
        clauses.append(f"{column} COLLATE NOCASE IN ({marks(len(where.types))})")
        params += where.types
    if where.pks is not None:
        # An empty set admits nothing; a large one is passed as JSON rather than as parameters.
        clauses.append(f"{own}.node IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(list(where.pks)))
    if where.created_from is not None:
        clauses.append("n.created_at >= ?")
        params.append(where.created_from)
    if where.created_to is not None:
        clauses.append("n.created_at < ?")
        params.append(where.created_to)
    for key, value in where.props:
        clause, values = _prop_condition(key, value)
        clauses.append(clause)
        params += values
    if kind == "entity":
        if where.memories_only:
            clauses.append("0")
        return " AND ".join(clauses) or "1", params
    if not where.include_archived:
        clauses.append("m.archived_at IS NULL")
    for tag in where.tags:
        clauses.append(f"EXISTS (SELECT 1 FROM memory_tag t WHERE t.node = {own}.node AND t.tag = ?)")
        params.append(tag)
    if where.min_importance is not None:
        clauses.append("m.importance >= ?")
        params.append(where.min_importance)
    if where.max_importance is not None:
        clauses.append("m.importance <= ?")
        params.append(where.max_importance)
    # An edge counts when the reader sees it: its scope and both its ends' (the contract's rule).
    valid = f"x.valid_from <= ? AND (x.valid_to IS NULL OR x.valid_to > ?) AND {edge_visible('x', len(scopes))}"
    seen = edge_visible_params(scopes)
    if where.linked_to:
        linked = marks(len(where.linked_to))
        clauses.append(
            f"(EXISTS (SELECT 1 FROM edge x WHERE x.src = m.node AND x.dst IN ({linked}) AND {valid}) "
            f"OR EXISTS (SELECT 1 FROM edge x WHERE x.dst = m.node AND x.src IN ({linked}) AND {valid}))"
        )
        params += [*where.linked_to, at, at, *seen, *where.linked_to, at, at, *seen]
    if where.current_only:
        # Where no edge of the type exists at all (most stores), one look in the type index,
        # which SQLite makes once a statement, spares the probe of each memory's entering
        # edges: 0.54 -> 0.36 ms for judging 64 memories at 100,000.
        clauses.append(
            "(NOT EXISTS (SELECT 1 FROM edge WHERE type = ? COLLATE NOCASE) "
            f"OR NOT EXISTS (SELECT 1 FROM edge x WHERE x.dst = m.node AND x.type = ? AND {valid}))"
        )
        params += [SUPERSEDES, SUPERSEDES, at, at, *seen]
    return " AND ".join(clauses) or "1", params


# A tag on at most this many memories of the read scopes leads a listing filtered by it
# (see `ItemReads._newest`).
_RARE_TAG = 2000
# The fewest best text matches `ItemReads._text_scores` reads at once. Each row read
# costs about 1 µs more (at 100,000 memories, 1.63 ms for the best 64 of a bench
# question's matches, 1.79 for 128, 1.92 for 320), and each read again scores every match.
_SCORED_LEAST = 128
# A listing walks each read scope apart up to this many scopes (see `ItemReads._newest`).
_WALKS = 32


class ItemReads:
    conn: sqlite3.Connection
    # `FactReads.tags_in`, which the store's read transactions mix in beside this class.
    tags_in: Callable[[Sequence[str]], bool | None]
    # The last query's scores (see `_text_scores`), by (query, weights, changes so far), and
    # the most its statement's sort holds.
    _scored: tuple[tuple[str, tuple[float, ...], int], list[tuple[int, float]], bool, int] | None = None
    # The text-score statement read part way, in a read that closes it at its end.
    _scoring: sqlite3.Cursor | None = None
    # The statement that scores and judges the best matches at once, read part way in a
    # read (see `_judge_on`), by the key of `filtered_text_search`'s judged hits, and the
    # most its sort holds.
    _judging: tuple[tuple[Any, ...], sqlite3.Cursor, int] | None = None
    # Whether the transaction closes an open text-score statement at its end (`end_scoring`),
    # so that it may be read part way.
    reads_lazily: bool = False
    # The last fast-path call's passing hits and how far down the scores it judged (see
    # `filtered_text_search`), by (query, weights, changes so far, filter, scopes).
    _judged: tuple[tuple[Any, ...], list[TextHit], int] | None = None
    # The contents of the memories judged (see `MemoryReads.memory_contents`).
    _contents_read: tuple[int, dict[int, str]] | None = None

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
        negated)."""
        if not terms or limit <= 0:
            return []
        condition, params = filter_sql(where, "memory", at, scopes)
        match = fts_any(terms)
        if where.narrowing:
            # A narrowing filter (anything past scopes, archiving and superseding) may pass
            # few of the best matches: every match is judged in one statement.
            rows = self.conn.execute(
                "SELECT f.rowid, -bm25(memory_fts, ?, ?, ?) AS score, m.importance, n.created_at "
                "FROM memory_fts f JOIN memory m ON m.node = f.rowid JOIN node n ON n.pk = f.rowid "
                f"WHERE memory_fts MATCH ? AND m.scope IN ({marks(len(scopes))}) AND {condition} "
                "ORDER BY score DESC, f.rowid LIMIT ?",
                [*weights, match, *scopes, *params, limit],
            ).fetchall()
            return rows_as(TextHit, rows)
        # Otherwise most matches pass, and only the best are read: the best matches are
        # scored from the index alone, then the rows of the best are joined and judged, a
        # batch at a time, until `limit` pass. Joining and judging every match cost 5 ms a
        # query at 100,000 memories (1,200 matches); scoring them all costs 1.3 ms.
        # A ranking that widens its pool asks again for more of the same: the rows judged
        # for the last call are kept, and only those past them are joined.
        key = (match, tuple(weights), self.conn.total_changes, condition, tuple(params), tuple(scopes))
        hits: list[TextHit] = []
        start, batch = 0, limit
        if self._judged is not None and self._judged[0] == key:
            hits, start = list(self._judged[1]), self._judged[2]
            batch = max(limit - len(hits), 1)
            if self._judging is not None and self._judging[0] == key and len(hits) < limit:
                start = self._judge_on(hits, limit)
        elif self.reads_lazily:
            # In a read: the scores and the rows judged in one statement, read only as far
            # as `limit` hits (a wider pool reads on from there, `_judge_on`).
            self.end_scoring()
            count = max(2 * limit, _SCORED_LEAST)
            self._scored = ((match, tuple(weights), self.conn.total_changes), [], False, count)
            self._judging = (
                key,
                self.conn.execute(
                    "SELECT s.rowid, s.score, m.importance, n.created_at, m.content FROM "
                    "(SELECT rowid, -bm25(memory_fts, ?, ?, ?) AS score FROM memory_fts WHERE memory_fts MATCH ? "
                    "ORDER BY score DESC, rowid LIMIT ?) s "
                    f"LEFT JOIN memory m ON m.node = s.rowid AND +m.scope IN ({marks(len(scopes))}) AND {condition} "
                    "LEFT JOIN node n ON n.pk = m.node",
                    [*weights, match, count, *scopes, *params],
                ),
                count,
            )
            start = self._judge_on(hits, limit)
            batch = max(limit - len(hits), 1) * 4
        while len(hits) < limit:
            ranked, every = self._text_scores(match, weights, start + min(batch, 500))
            part = ranked[start : start + min(batch, 500)]
            if not part:
                break
            start += len(part)
            batch *= 4
            # The unary + keeps SQLite from walking every memory of the scopes by the scope
            # index instead of looking the batch up by pk (1.8 ms for 40 rows at 10,000).
            # Each passing row's content comes with it: the rules on the ranking's first
            # places read it next, and reading it again was a statement of its own (0.2 ms
            # for 50 memories at 100,000).
            passed: dict[int, tuple[int, int]] = {}
            kept = self._contents_read
            if kept is None or kept[0] != self.conn.total_changes:
                kept = self._contents_read = (self.conn.total_changes, {})
            contents = kept[1]
            for pk, importance, created_at, content in self.conn.execute(
                "SELECT m.node, m.importance, n.created_at, m.content FROM memory m CROSS JOIN node n ON n.pk = m.node "
                f"WHERE m.node IN ({marks(len(part))}) AND +m.scope IN ({marks(len(scopes))}) AND {condition}",
                [*(pk for pk, _ in part), *scopes, *params],
            ):
                passed[pk] = (importance, created_at)
                contents[pk] = content
            # Made as `rows_as` makes records, without the named tuple's own `__new__`.
            hits += [tuple.__new__(TextHit, (pk, score, *passed[pk])) for pk, score in part if pk in passed]
            if every and start >= len(ranked):
                break
        self._judged = (key, hits, start)
        return hits[:limit]

    def _judge_on(self, hits: list[TextHit], limit: int) -> int:
        """Read on from the open statement that scores the best matches and judges each
        one's row as it comes (a LEFT JOIN: a row that does not pass comes with its
        columns NULL; importance never is), adding to `hits` until `limit` pass or the
        statement ends; keep the scores read with the query's (`_scored`). How many of the
        scored matches have been judged.

        One statement instead of two (the scores, then the best looked up by pk in an IN
        list, whose parameters, text and the index SQLite builds of it are spared), and a
        row is joined only when a pool reaches it. The scored matches come in the
        subquery's order: SQLite runs it as a co-routine the joins loop over."""
        assert self._judging is not None and self._scored is not None
        cursor, count = self._judging[1], self._judging[2]
        ranked = self._scored[1]
        kept = self._contents_read
        if kept is None or kept[0] != self.conn.total_changes:
            kept = self._contents_read = (self.conn.total_changes, {})
        contents = kept[1]
        ended = False
        while len(hits) < limit and not ended:
            wanted = limit - len(hits)
            rows = cursor.fetchmany(wanted)
            ended = len(rows) < wanted
            for pk, score, importance, created_at, content in rows:
                ranked.append((pk, score))
                if importance is not None:
                    # Made as `rows_as` makes records, without the named tuple's own `__new__`.
                    hits.append(tuple.__new__(TextHit, (pk, score, importance, created_at)))
                    contents[pk] = content
        if ended or len(ranked) >= count:
            # Read to its end: every match when the sort held fewer than it could.
            self.end_scoring()
            self._scored = (self._scored[0], ranked, len(ranked) < count, count)
        return len(ranked)

    def _text_scores(self, match: str, weights: MemoryFieldWeights, least: int) -> tuple[list[tuple[int, float]], bool]:
        """The best memories matching the FTS5 query `match`, with their scores, best first
        (ties by pk): at least the first `least`, or every match; and whether they are
        every match. Kept for the next call with the same query in this transaction, unless
        the transaction has written since: a ranking may ask for a longer list of the best.

        Only the best are read: FTS5 scores every match either way, but SQLite keeps the
        best in its own top-N sort, and the rest never become rows in Python (at 100,000
        memories a query matches about 1,100)."""
        key = (match, tuple(weights), self.conn.total_changes)
        scored = self._scored
        if scored is not None and scored[0] == key:
            ranked, every, count = scored[1], scored[2], scored[3]
            if every or len(ranked) >= least:
                return ranked, every
            pending = self._scoring
            if pending is not None:
                # The statement's sort holds `count` rows: the rows past those read are
                # read from it, not scored again.
                ranked += pending.fetchmany(min(least, count) - len(ranked))
                every = len(ranked) < min(least, count)
                if every or len(ranked) == count:
                    self.end_scoring()
                self._scored = (key, ranked, every, count)
                if every or len(ranked) >= least:
                    return ranked, every
        self.end_scoring()
        # Twice what is asked: a ranking that widens its pool (from 64 to 128 memories)
        # seldom scores every match again.
        count = max(2 * least, _SCORED_LEAST)
        cursor = self.conn.execute(
            "SELECT rowid, -bm25(memory_fts, ?, ?, ?) AS score FROM memory_fts WHERE memory_fts MATCH ? "
            "ORDER BY score DESC, rowid LIMIT ?",
            [*weights, match, count],
        )
        if self.reads_lazily:
            # Only the rows asked for become rows in Python (the pool of 64 at first): the
            # sort is done either way, and a wider pool reads on from where this stopped
            # (`end_scoring` closes the statement when the transaction ends).
            ranked = cursor.fetchmany(least)
            every = len(ranked) < least
            if not every:
                self._scoring = cursor
        else:
            ranked = cursor.fetchall()
            every = len(ranked) < count
        self._scored = (key, ranked, every, count)
        return ranked, every

    def end_scoring(self) -> None:
        """Close the text-score statement still open in this transaction, if any: a
        statement left open would hold the read's snapshot past its end."""
        pending = self._scoring
        if pending is not None:
            self._scoring = None
            pending.close()
        judging = self._judging
        if judging is not None:
            self._judging = None
            judging[1].close()

    def filtered_tagged(
        self, tags: Sequence[str], scopes: Sequence[str], limit: int, where: ItemFilter, at: int
    ) -> list[TextHit]:
        """The newest memories with any of `tags` that meet `where`, score 0."""
        # Most stores tag nothing: the statement, which would find nothing, is spared.
        if not tags or self.tags_in(scopes) is False:
            return []
        condition, params = filter_sql(where, "memory", at, scopes)
        # The tagged memories come from the (tag, scope) index (the unary + keeps SQLite from
        # walking the scope index instead): testing every memory of the scopes for a tag
        # cost 17 ms a query at 100,000 memories, tagged or not.
        in_scopes = f"IN ({marks(len(scopes))})"
        rows = self.conn.execute(
            "SELECT m.node, 0.0, m.importance, n.created_at FROM memory m JOIN node n ON n.pk = m.node "
            f"WHERE m.node IN (SELECT t.node FROM memory_tag t WHERE t.tag IN ({marks(len(tags))}) "
            f"AND t.scope {in_scopes}) AND +m.scope {in_scopes} AND {condition} ORDER BY m.node DESC LIMIT ?",
            [*tags, *scopes, *scopes, *params, limit],
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
        `offset + limit` rows, then merged: the newest ten of 100,000 memories took 88 ms
        when every row of the scopes was read and sorted, and now take well under 1 ms
        (the merge sorts at most `offset + limit` rows per scope). With `via_tag`, a tag
        every result carries and few memories do, each scope's rows come from the tag's
        index entries instead, so a rare tag does not mean walking every memory."""
        table, own = ("memory m", "m") if kind == MEMORY else ("entity e", "e")
        source, lead, head = f"node n JOIN {table} ON {own}.node = n.pk", "n.label = ? AND n.scope", kind
        if via_tag is not None:
            source = f"memory_tag t JOIN node n ON n.pk = t.node JOIN {table} ON {own}.node = n.pk"
            lead, head = "t.tag = ? AND t.scope", via_tag
        # Past a few dozen scopes one sorted read of them all beats as many walks (and SQLite
        # allows 500 SELECTs in a compound at most).
        groups = [[scope] for scope in scopes] if len(scopes) <= _WALKS else [list(scopes)]
        parts = [
            f"SELECT * FROM (SELECT n.pk AS pk, n.created_at AS born FROM {source} WHERE {lead} "
            f"IN ({marks(len(group))}) AND {condition} ORDER BY n.created_at DESC, n.pk DESC LIMIT ?)"
            for group in groups
        ]
        sql = " UNION ALL ".join(parts) + " ORDER BY born DESC, pk DESC LIMIT ? OFFSET ?"
        args = [value for group in groups for value in (head, *group, *params, offset + limit)]
        return [r[0] for r in self.conn.execute(sql, [*args, limit, offset])]

    def _rare_tag(self, tags: Sequence[str], scopes: Sequence[str]) -> str | None:
        """Of `tags`, the one the fewest memories in `scopes` carry, when at most
        `_RARE_TAG` do: sorting that many is cheaper than walking the newest memories
        until enough carry it."""
        if not tags:
            return None
        counts = dict.fromkeys(tags, 0)
        for tag, n in self.conn.execute(
            f"SELECT tag, SUM(n) FROM tag_count WHERE tag IN ({marks(len(tags))}) "
            f"AND scope IN ({marks(len(scopes))}) GROUP BY tag",
            [*tags, *scopes],
        ):
            counts[tag] = int(n)
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
        table = "memory m" if kind == "memory" else "entity e"
        own = "m" if kind == "memory" else "e"
        rows = self.conn.execute(
            f"SELECT {own}.node FROM {table} JOIN node n ON n.pk = {own}.node "
            f"WHERE {own}.node IN ({marks(len(pks))}) AND {condition}",
            [*pks, *params],
        )
        return {r[0] for r in rows}

    def memory_growth(self, scopes: Sequence[str], start: int, step: int, buckets: int) -> list[int]:
        counts = [0] * buckets
        rows = self.conn.execute(
            f"SELECT (created_at - ?) / ? AS b, COUNT(*) FROM node WHERE label = 'Memory' "
            f"AND scope IN ({marks(len(scopes))}) AND created_at >= ? AND created_at < ? GROUP BY b",
            [start, step, *scopes, start, start + step * buckets],
        )
        for bucket, count in rows:
            counts[int(bucket)] = int(count)
        return counts

    def largest_entities(self, scopes: Sequence[str], limit: int) -> list[tuple[int, int]]:
        rows = self.conn.execute(
            f"SELECT e.node, COUNT(*) AS c FROM entity e JOIN observation o ON o.entity = e.node "
            f"WHERE e.scope IN ({marks(len(scopes))}) GROUP BY e.node ORDER BY c DESC, e.node LIMIT ?",
            [*scopes, limit],
        )
        return [(int(pk), int(count)) for pk, count in rows]

    def facets(self, scopes: Sequence[str], top: int) -> dict[str, list[tuple[str, int]]]:
        """The most common tags, memory types, entity types and relation types in `scopes`,
        with their counts, most common first."""
        marked = marks(len(scopes))

        def top_of(sql: str, params: Sequence[str] = scopes) -> list[tuple[str, int]]:
            return [(str(r[0]), int(r[1])) for r in self.conn.execute(sql, [*params, top])]

        return {
            "tags": top_of(
                f"SELECT tag, SUM(n) AS c FROM tag_count WHERE scope IN ({marked}) AND n > 0 "
                "GROUP BY tag ORDER BY c DESC, tag LIMIT ?"
            ),
            "memory_types": top_of(
                f"SELECT memory_type, COUNT(*) AS c FROM memory WHERE scope IN ({marked}) "
                "GROUP BY memory_type ORDER BY c DESC, memory_type LIMIT ?"
            ),
            "entity_types": top_of(
                f"SELECT entity_type, COUNT(*) AS c FROM entity WHERE scope IN ({marked}) AND entity_type != '' "
                "GROUP BY entity_type ORDER BY c DESC, entity_type LIMIT ?"
            ),
            # Only the relations the reader sees: both ends readable too.
            "relation_types": top_of(
                f"SELECT r.type, COUNT(*) AS c FROM edge r WHERE {edge_visible('r', len(scopes))} "
                "AND r.valid_to IS NULL GROUP BY r.type ORDER BY c DESC, r.type LIMIT ?",
                edge_visible_params(scopes),
            ),
        }
