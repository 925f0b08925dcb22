"""Memories: rows of `memory` with their tags, found by hash, by words and by tag. Mixed
into the PostgreSQL store's read and write transactions.

A memory's words live in the word index `MEMORY_TEXT` (see `words`): content, summary and
turn context, written here by the write methods because the analysis is Python's. The
turn context (`context`) is derived from the `context_from` link: the content of the turn
a memory follows, preceded by that of the turn that one follows. It follows edits and
removals of those turns; SQLite keeps it with triggers, this store in `update_memory`
and `_node_deleting`, which also re-index the neighbours whose context changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import psycopg

from mnemodb.model.records import Memory, MemoryView
from mnemodb.store.base import MemoryCandidates, TextHit, TimeRange
from mnemodb.store.postgresql import words
from mnemodb.store.postgresql.nodes import put_scopes
from mnemodb.store.postgresql.sql import got, got_all, put
from mnemodb.store.rows import props_of, rows_as

__all__ = ["ARCHIVE_DDL", "DDL", "IMPORTANCE_DDL", "MEMORY_TEXT", "MemoryReads", "MemoryWrites", "archived_in"]

# The native search reads all three columns; the other faces content and summary, or
# content alone: each of those column sets keeps its own document frequencies.
MEMORY_TEXT = words.WordIndex(
    name="memory_text",
    owner="memory (node)",
    columns=("content", "summary", "context"),
    modes=(("content",), ("content", "summary")),
)

DDL = """
CREATE TABLE memory (
    node         bigint PRIMARY KEY REFERENCES node (pk) ON DELETE CASCADE,
    scope        text COLLATE "C" NOT NULL,
    hash         text COLLATE "C" NOT NULL,
    content      text COLLATE "C" NOT NULL,
    summary      text COLLATE "C",
    importance   bigint NOT NULL DEFAULT 0 CHECK (importance BETWEEN 0 AND 10),
    memory_type  text COLLATE "C" NOT NULL DEFAULT 'general',
    context      text COLLATE "C",
    context_from bigint
);
CREATE UNIQUE INDEX memory_scope_hash ON memory (scope, hash);
CREATE INDEX memory_context_from ON memory (context_from) WHERE context_from IS NOT NULL;
-- By hash: a memory type has no length limit, and a B-tree entry holds a third of a page.
CREATE INDEX memory_type_nocase ON memory USING hash (ascii_lower(memory_type));

CREATE TABLE memory_tag (
    node  bigint NOT NULL REFERENCES memory (node) ON DELETE CASCADE,
    tag   text COLLATE "C" NOT NULL,
    scope text COLLATE "C" NOT NULL,
    PRIMARY KEY (node, tag)
);
CREATE INDEX memory_tag_tag ON memory_tag (tag, scope, node);

-- Counters kept by triggers, so statistics cost the same at any size.
CREATE TABLE tag_count (
    scope text COLLATE "C" NOT NULL,
    tag   text COLLATE "C" NOT NULL,
    n     bigint NOT NULL,
    PRIMARY KEY (scope, tag)
);
CREATE FUNCTION tag_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO tag_count AS c (scope, tag, n) VALUES (NEW.scope, NEW.tag, 1)
            ON CONFLICT (scope, tag) DO UPDATE SET n = c.n + 1;
    ELSE
        UPDATE tag_count SET n = n - 1 WHERE scope = OLD.scope AND tag = OLD.tag;
        DELETE FROM tag_count WHERE scope = OLD.scope AND tag = OLD.tag AND n <= 0;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER tag_count AFTER INSERT OR DELETE ON memory_tag FOR EACH ROW EXECUTE FUNCTION tag_count();

CREATE TABLE scope_count (
    scope text COLLATE "C" NOT NULL,
    kind  text COLLATE "C" NOT NULL,
    n     bigint NOT NULL,
    PRIMARY KEY (scope, kind)
);
CREATE FUNCTION memory_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO scope_count AS c (scope, kind, n) VALUES (NEW.scope, 'memory', 1)
            ON CONFLICT (scope, kind) DO UPDATE SET n = c.n + 1;
    ELSE
        UPDATE scope_count SET n = n - 1 WHERE scope = OLD.scope AND kind = 'memory';
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER memory_count AFTER INSERT OR DELETE ON memory FOR EACH ROW EXECUTE FUNCTION memory_count();
""" + words.word_index_ddl(MEMORY_TEXT)

# Schema 3: a memory may be archived (`archived_at`): kept, but left out of searches and
# listings unless asked. The archived memories per scope are counted (kind 'archived'), so
# a search knows without a scan when none is there to leave out.
IMPORTANCE_DDL = """
-- The highest importance of a scope's memories that are not archived, by index
-- (`most_important`): what bounds the score of a memory a search has not scored.
CREATE INDEX memory_scope_importance ON memory (scope, importance) WHERE archived_at IS NULL;
"""

ARCHIVE_DDL = """
ALTER TABLE memory ADD COLUMN archived_at bigint;
CREATE FUNCTION memory_archived_count() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    delta bigint := (CASE WHEN TG_OP <> 'DELETE' AND NEW.archived_at IS NOT NULL THEN 1 ELSE 0 END)
                  - (CASE WHEN TG_OP <> 'INSERT' AND OLD.archived_at IS NOT NULL THEN 1 ELSE 0 END);
BEGIN
    IF delta <> 0 THEN
        INSERT INTO scope_count AS c (scope, kind, n) VALUES (COALESCE(NEW.scope, OLD.scope), 'archived', delta)
            ON CONFLICT (scope, kind) DO UPDATE SET n = c.n + excluded.n;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER memory_archived_count AFTER INSERT OR DELETE OR UPDATE OF archived_at ON memory
    FOR EACH ROW EXECUTE FUNCTION memory_archived_count();
"""

_MEMORY_COLUMNS = (
    "n.pk, n.id, n.scope, m.content, m.hash, m.importance, m.memory_type, m.summary, n.props, "
    "n.created_at, n.updated_at, a.count, a.last_at, m.archived_at"
)
_MEMORY_FROM = "memory m JOIN node n ON n.pk = m.node LEFT JOIN node_access a ON a.node = m.node"
# A memory's tags with its row, as an array (empty for none, most memories): a look-up
# or a walk then reads its memories in one statement instead of two.
_TAGS = "ARRAY(SELECT t.tag FROM memory_tag t WHERE t.node = m.node)"

# The context a memory takes from the turn `p` it follows: that turn's content, after the
# content of the turn `pp` that one follows (SQLite's trim, which takes off spaces only).
_CONTEXT_OF_P = "btrim(coalesce(pp.content, '') || ' ' || p.content, ' ')"


def archived_in(conn: psycopg.Connection[Any], scopes: Sequence[str]) -> bool:
    """True when `scopes` hold an archived memory (read from the per-scope counters): a
    search of them without one has nothing to leave out."""
    row = conn.execute(
        "SELECT 1 FROM scope_count WHERE kind = 'archived' AND n > 0 AND scope = ANY(%s) LIMIT 1",
        [put_scopes(scopes)],
    ).fetchone()
    return row is not None


class MemoryReads:
    conn: psycopg.Connection[Any]

    def _memories(self, where: str, params: Sequence[Any]) -> list[Memory]:
        rows = self.conn.execute(
            f"SELECT {_MEMORY_COLUMNS}, {_TAGS} FROM {_MEMORY_FROM} WHERE {where}", params
        ).fetchall()
        return [
            Memory(
                pk=r[0],
                id=got(r[1]),
                scope=got(r[2]),
                content=got(r[3]),
                hash=got(r[4]),
                importance=r[5],
                memory_type=got(r[6]),
                summary=got(r[7]),
                props=props_of(r[8]),
                created_at=r[9],
                updated_at=r[10],
                # Sorted once unescaped: an escaped U+0000 does not sort where U+0000 does.
                tags=tuple(sorted(got_all(r[14]))) if r[14] else (),
                access_count=r[11] or 0,
                last_accessed_at=r[12],
                archived_at=r[13],
            )
            for r in rows
        ]

    def memory_by_hash(self, scopes: Sequence[str], digest: str) -> Memory | None:
        found = self._memories(
            "m.hash = %s AND m.scope = ANY(%s) ORDER BY m.node LIMIT 1", [digest, put_scopes(scopes)]
        )
        return found[0] if found else None

    def memory_pk(self, scope: str, digest: str) -> int | None:
        row = self.conn.execute(
            "SELECT node FROM memory WHERE scope = %s AND hash = %s", [put(scope), put(digest)]
        ).fetchone()
        return None if row is None else int(row[0])

    def latest_memory(self, scope: str, before_pk: int, created_since: int) -> int | None:
        row = self.conn.execute(
            "SELECT m.node FROM memory m JOIN node n ON n.pk = m.node "
            "WHERE m.scope = %s AND m.node < %s AND n.created_at >= %s ORDER BY m.node DESC LIMIT 1",
            [put(scope), before_pk, created_since],
        ).fetchone()
        return None if row is None else int(row[0])

    def memory_by_pk(self, pk: int) -> Memory | None:
        found = self._memories("m.node = %s", [pk])
        return found[0] if found else None

    def memories_by_pk(self, pks: Sequence[int]) -> dict[int, Memory]:
        if not pks:
            return {}
        return {memory.pk: memory for memory in self._memories("m.node = ANY(%s)", [list(pks)])}

    def memory_views(self, pks: Sequence[int]) -> dict[int, MemoryView]:
        if not pks:
            return {}
        # The tags with each row (`_TAGS`), not in a second statement.
        rows = self.conn.execute(
            "SELECT m.node, m.content, m.summary, m.importance, m.memory_type, n.created_at, a.last_at, m.hash, "
            f"{_TAGS} FROM {_MEMORY_FROM} WHERE m.node = ANY(%s)",
            [list(pks)],
        ).fetchall()
        return {
            r[0]: MemoryView(
                pk=r[0],
                content=got(r[1]),
                summary=got(r[2]),
                # Sorted once unescaped: an escaped U+0000 does not sort where U+0000 does.
                tags=tuple(sorted(got_all(r[8]))) if r[8] else (),
                importance=r[3],
                memory_type=got(r[4]),
                created_at=r[5],
                last_accessed_at=r[6],
                hash=got(r[7]),
            )
            for r in rows
        }

    def memory_contents(self, pks: Sequence[int], holding: str) -> dict[int, str]:
        if not pks:
            return {}
        rows = self.conn.execute(
            "SELECT node, content FROM memory WHERE node = ANY(%s) AND strpos(content, %s) > 0",
            [list(pks), put(holding)],
        ).fetchall()
        return {int(pk): got(content) for pk, content in rows}

    def search_text(
        self,
        terms: Sequence[str],
        scopes: Sequence[str],
        limit: int,
        *,
        content_only: bool = False,
        include_archived: bool = False,
    ) -> list[TextHit]:
        """Memories matching any of `terms`, best first, archived ones left out unless
        `include_archived`. With `content_only`, a match in the summary does not count. A
        memory's context is not searched here (see `filtered_text_search`). The score is
        FTS5's bm25 negated, as on SQLite."""
        if not terms or limit <= 0:
            return []
        # Candidates are judged on the index row alone unless archived ones are to be left out.
        live = include_archived or not archived_in(self.conn, scopes)
        # A memory's context is the native search's alone: a column filter, as on SQLite.
        rows = words.ranked(
            self.conn,
            MEMORY_TEXT,
            terms,
            limit=limit,
            columns=("content",) if content_only else ("content", "summary"),
            join="" if live else "JOIN memory m ON m.node = w.node",
            condition="w.scope = ANY(%s)" if live else "w.scope = ANY(%s) AND m.archived_at IS NULL",
            params=[put_scopes(scopes)],
            extra="m.importance, n.created_at",
            extra_join="JOIN memory m ON m.node = r.node JOIN node n ON n.pk = r.node",
        )
        return rows_as(TextHit, rows)

    def memory_candidates(
        self,
        terms: Sequence[str],
        tags: Sequence[str],
        scopes: Sequence[str],
        limit: int,
        *,
        include_archived: bool = False,
    ) -> MemoryCandidates:
        # Whether the scopes hold an archived memory, their highest importance (not
        # archived) and their first and last memory's creation time, in one statement:
        # each an end of an index per scope, as `most_important` and `memory_time_range`.
        row = self.conn.execute(
            "SELECT EXISTS (SELECT 1 FROM scope_count WHERE kind = 'archived' AND n > 0 AND scope = ANY(%s)), "
            "max(x.high), min(y.low), max(y.last) FROM unnest(%s::text[]) AS s(scope) "
            "CROSS JOIN LATERAL (SELECT max(importance) AS high FROM memory "
            "WHERE scope = s.scope AND archived_at IS NULL) x "
            "CROSS JOIN LATERAL (SELECT min(created_at) AS low, max(created_at) AS last FROM node "
            "WHERE label = 'Memory' AND scope = s.scope) y",
            [put_scopes(scopes), put_scopes(scopes)],
        ).fetchone()
        assert row is not None
        archived, high, oldest, newest = row
        # Archived memories are not in the importance index.
        most_important = 10 if high is None or (include_archived and archived) else int(high)
        live = include_archived or not archived
        text: dict[int, float] = {}
        if terms and limit > 0:
            # As `search_text`, without the rows: the candidates' scores alone.
            found = words.ranked(
                self.conn,
                MEMORY_TEXT,
                terms,
                limit=limit,
                columns=("content", "summary"),
                join="" if live else "JOIN memory m ON m.node = w.node",
                condition="w.scope = ANY(%s)" if live else "w.scope = ANY(%s) AND m.archived_at IS NULL",
                params=[put_scopes(scopes)],
            )
            text = {int(pk): float(score) for pk, score in found}
        tagged: list[int] = []
        if tags and limit > 0:
            # As `memories_with_tags`, by pk alone.
            if not live:
                rows = self.conn.execute(
                    "SELECT m.node FROM memory m WHERE m.node IN (SELECT node FROM memory_tag "
                    "WHERE tag = ANY(%s) AND scope = ANY(%s)) AND m.archived_at IS NULL ORDER BY m.node DESC LIMIT %s",
                    [put_scopes(tags), put_scopes(scopes), limit],
                ).fetchall()
            else:
                rows = self.conn.execute(
                    "SELECT DISTINCT node FROM memory_tag WHERE tag = ANY(%s) AND scope = ANY(%s) "
                    "ORDER BY node DESC LIMIT %s",
                    [put_scopes(tags), put_scopes(scopes), limit],
                ).fetchall()
            tagged = [int(pk) for (pk,) in rows]
        return MemoryCandidates(text, tagged, most_important, oldest, newest)

    def memories_with_tags(
        self, tags: Sequence[str], scopes: Sequence[str], limit: int, *, include_archived: bool = False
    ) -> list[TextHit]:
        """The newest memories with any of `tags`, score 0 (archived ones left out unless
        `include_archived`)."""
        if not tags or limit <= 0:
            return []
        if not include_archived and archived_in(self.conn, scopes):
            # The walk goes on past archived memories: their rows are read to know.
            rows = self.conn.execute(
                "SELECT m.node, 0.0::float8, m.importance, n.created_at FROM memory m JOIN node n ON n.pk = m.node "
                "WHERE m.node IN (SELECT node FROM memory_tag WHERE tag = ANY(%s) AND scope = ANY(%s)) "
                "AND m.archived_at IS NULL ORDER BY m.node DESC LIMIT %s",
                [put_scopes(tags), put_scopes(scopes), limit],
            ).fetchall()
            return rows_as(TextHit, rows)
        # The newest `limit` tagged memories from the (tag, scope, node) index alone, then
        # their details: a common tag costs an index scan, not a join and sort of every row.
        rows = self.conn.execute(
            "SELECT t.node, 0.0::float8, m.importance, n.created_at FROM "
            "(SELECT DISTINCT node FROM memory_tag WHERE tag = ANY(%s) AND scope = ANY(%s) "
            "ORDER BY node DESC LIMIT %s) t "
            "JOIN memory m ON m.node = t.node JOIN node n ON n.pk = t.node ORDER BY t.node DESC",
            [put_scopes(tags), put_scopes(scopes), limit],
        ).fetchall()
        return rows_as(TextHit, rows)

    def count_memories(self, scopes: Sequence[str]) -> int:
        row = self.conn.execute(
            "SELECT COALESCE(SUM(n), 0) FROM scope_count WHERE kind = 'memory' AND scope = ANY(%s)",
            [put_scopes(scopes)],
        ).fetchone()
        assert row is not None
        return int(row[0])

    def memories_per_scope(self) -> dict[str, int]:
        """How many memories each scope holds (scopes with none left out)."""
        return {
            got(scope): int(n)
            for scope, n in self.conn.execute(
                "SELECT scope, n FROM scope_count WHERE kind = 'memory' AND n > 0 ORDER BY scope"
            )
        }

    def count_tags(self, scopes: Sequence[str]) -> int:
        """Distinct tags over the memories of `scopes` (from counters kept by triggers)."""
        row = self.conn.execute(
            "SELECT COUNT(DISTINCT tag) FROM tag_count WHERE scope = ANY(%s)", [put_scopes(scopes)]
        ).fetchone()
        assert row is not None
        return int(row[0])

    def memory_time_range(self, scopes: Sequence[str]) -> TimeRange:
        # One scope at a time: MIN and MAX then read one end of the (label, scope,
        # created_at) index each, instead of scanning every memory.
        row = self.conn.execute(
            "SELECT min(x.low), max(x.high) FROM unnest(%s::text[]) AS s(scope) CROSS JOIN LATERAL "
            "(SELECT min(created_at) AS low, max(created_at) AS high FROM node "
            "WHERE label = 'Memory' AND scope = s.scope) x",
            [put_scopes(scopes)],
        ).fetchone()
        assert row is not None
        return TimeRange(row[0], row[1])

    def most_important(self, scopes: Sequence[str]) -> int | None:
        # One scope at a time, as `memory_time_range`: each max reads one end of that
        # scope's entries in the partial index `memory_scope_importance` (schema 6).
        row = self.conn.execute(
            "SELECT max(x.high) FROM unnest(%s::text[]) AS s(scope) CROSS JOIN LATERAL "
            "(SELECT max(importance) AS high FROM memory "
            "WHERE scope = s.scope AND archived_at IS NULL) x",
            [put_scopes(scopes)],
        ).fetchone()
        assert row is not None
        return None if row[0] is None else int(row[0])


class MemoryWrites(MemoryReads):
    def _index_memories(self, pks: Sequence[int]) -> None:
        """Write these memories' rows of the word index from their current text."""
        for pk, scope, content, summary, context in self.conn.execute(
            "SELECT node, scope, content, summary, context FROM memory WHERE node = ANY(%s) ORDER BY node",
            [sorted(pks)],
        ).fetchall():
            words.index_row(self.conn, MEMORY_TEXT, pk, scope, [got(content), got(summary), got(context)])

    def insert_memory(
        self,
        pk: int,
        scope: str,
        digest: str,
        content: str,
        summary: str | None,
        importance: int,
        memory_type: str,
        *,
        context_from: int | None = None,
    ) -> None:
        # The context's text is derived here from the turn it follows, as `update_memory`
        # and `_node_deleting` derive it again when those turns change.
        row = self.conn.execute(
            "INSERT INTO memory (node, scope, hash, content, summary, importance, memory_type, context_from, context) "
            f"SELECT %s, %s, %s, %s, %s, %s, %s, p.node, {_CONTEXT_OF_P} FROM (SELECT 1) one "
            "LEFT JOIN memory p ON p.node = %s LEFT JOIN memory pp ON pp.node = p.context_from "
            "RETURNING context",
            [pk, put(scope), put(digest), put(content), put(summary), importance, put(memory_type), context_from],
        ).fetchone()
        assert row is not None
        words.index_row(self.conn, MEMORY_TEXT, pk, put(scope), [content, summary, got(row[0])])

    _MEMORY_FIELDS = frozenset({"hash", "content", "summary", "importance", "memory_type"})

    def update_memory(self, pk: int, fields: Mapping[str, Any]) -> None:
        unknown = set(fields) - self._MEMORY_FIELDS
        if unknown:
            raise ValueError(f"not memory fields: {sorted(unknown)}")
        if not fields:
            return
        names = list(fields)
        values = [put(fields[n]) if isinstance(fields[n], str) else fields[n] for n in names]
        updated = self.conn.execute(
            f"UPDATE memory SET {', '.join(f'{n} = %s' for n in names)} WHERE node = %s RETURNING node",
            [*values, pk],
        ).fetchone()
        if updated is None:
            return
        stale: set[int] = set()
        if "content" in fields or "summary" in fields:
            stale.add(pk)
        if "content" in fields:
            # The turns that follow this one (and the turns after those) took their context
            # from its content.
            followers = self.conn.execute(
                "UPDATE memory f SET context = "
                f"(SELECT {_CONTEXT_OF_P} FROM memory p LEFT JOIN memory pp ON pp.node = p.context_from "
                "WHERE p.node = f.context_from) "
                "WHERE f.context_from = %s OR f.context_from IN (SELECT node FROM memory WHERE context_from = %s) "
                "RETURNING f.node",
                [pk, pk],
            ).fetchall()
            stale.update(r[0] for r in followers)
        if stale:
            self._index_memories(sorted(stale))

    def _node_deleting(self, pk: int) -> None:
        # A forgotten memory's words must not live on in its neighbours' contexts: the turns
        # two after it keep their own predecessor's content alone, the turns right after it
        # lose their context and link. Read before any change, as SQLite's trigger reads.
        second = self.conn.execute(
            "UPDATE memory f SET context = (SELECT p.content FROM memory p WHERE p.node = f.context_from) "
            "WHERE f.context_from IN (SELECT node FROM memory WHERE context_from = %s) RETURNING f.node",
            [pk],
        ).fetchall()
        first = self.conn.execute(
            "UPDATE memory SET context = NULL, context_from = NULL WHERE context_from = %s RETURNING node", [pk]
        ).fetchall()
        stale = sorted({r[0] for r in second} | {r[0] for r in first})
        if stale:
            self._index_memories(stale)
        super()._node_deleting(pk)  # type: ignore[misc]

    def set_archived(self, pk: int, at: int | None) -> None:
        self.conn.execute("UPDATE memory SET archived_at = %s WHERE node = %s", [at, pk])

    def add_tags(self, pk: int, tags: Iterable[str]) -> list[str]:
        added = []
        for tag in tags:
            row = self.conn.execute(
                "INSERT INTO memory_tag (node, tag, scope) SELECT node, %s, scope FROM memory WHERE node = %s "
                "ON CONFLICT (node, tag) DO NOTHING RETURNING tag",
                [put(tag), pk],
            ).fetchone()
            if row is not None:
                added.append(tag)
        return added

    def replace_tags(self, pk: int, tags: Iterable[str]) -> None:
        self.conn.execute("DELETE FROM memory_tag WHERE node = %s", [pk])
        self.add_tags(pk, tags)
