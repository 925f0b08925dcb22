"""Memories: rows of `memory` with their tags, found by hash, by words and by tag. Mixed
into the store's read and write transactions."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mnemodb.model.records import Memory, MemoryView, memory_of
from mnemodb.store.base import MemoryCandidates, TextHit
from mnemodb.store.sqlite.sql import KEYS_FIRST, chunks, fts_any, json_arrays, json_keys, marks, props_of, rows_as

__all__ = ["MemoryReads", "MemoryWrites", "archived_in"]

_MEMORY_COLUMNS = (
    "n.pk, n.id, n.scope, m.content, m.hash, m.importance, m.memory_type, m.summary, n.props, "
    "n.created_at, n.updated_at, a.count, a.last_at, m.archived_at"
)
# A memory's tags with its row, as a JSON array ('[]' for none, most memories): a
# look-up or a walk then reads its memories in one statement instead of two. In a store
# where no memory has a tag, the per-row look-up is skipped: SQLite runs the EXISTS, which
# names no column of the row, once a statement. It saves 0.13 M of the 1.60 M
# instructions that a search's winners' statement costs at 10,000 untagged memories.
_TAGS = (
    "CASE WHEN EXISTS (SELECT 1 FROM memory_tag) "
    "THEN (SELECT json_group_array(t.tag) FROM memory_tag t WHERE t.node = m.node) ELSE '[]' END"
)
_MEMORY_FROM = "memory m JOIN node n ON n.pk = m.node LEFT JOIN node_access a ON a.node = m.node"
# `_TAGS` for `memory_views`, NULL rather than '[]' where no memory has a tag: a NULL
# column costs the `sqlite3` module no text to make (0.05 M of the 1.47 M instructions the
# winners' statement of a search costs at 10,000 untagged memories). The memory table
# first (`CROSS JOIN`), sought by the pks given, then the node and the access counts by
# its pk: 0.04 M fewer than the order SQLite picked (the node first).
_VIEW_TAGS = (
    "CASE WHEN EXISTS (SELECT 1 FROM memory_tag) "
    "THEN (SELECT json_group_array(t.tag) FROM memory_tag t WHERE t.node = m.node) END"
)
_VIEW_FROM = "memory m CROSS JOIN node n ON n.pk = m.node LEFT JOIN node_access a ON a.node = m.node"


def archived_in(conn: sqlite3.Connection, scopes: Sequence[str]) -> bool:
    """True when `scopes` hold an archived memory (read from the per-scope counters): a
    search of them without one has nothing to leave out."""
    row = conn.execute(
        f"SELECT 1 FROM scope_count WHERE kind = 'archived' AND n > 0 AND scope IN ({marks(len(scopes))}) LIMIT 1",
        list(scopes),
    ).fetchone()
    return row is not None


class MemoryReads:
    conn: sqlite3.Connection
    # The contents of the memories a search judged in this transaction (`ItemReads.
    # filtered_text_search` reads them with the rows it judges), by the connection's
    # changes when they were read: the rules on a ranking's first places read them next.
    _contents_read: tuple[int, dict[int, str]] | None = None

    def _memories(self, where: str, params: Sequence[Any], *, driven_by: str = "") -> list[Memory]:
        """The memories a condition on `m` (memory), `n` (node) and `driven_by` (a table the
        statement starts from, cross-joined before the memory) selects."""
        rows = self.conn.execute(
            f"SELECT {_MEMORY_COLUMNS}, {_TAGS} FROM {driven_by}{_MEMORY_FROM} WHERE {where}", params
        ).fetchall()
        if not rows:
            return []
        # The tagged rows' arrays decoded in one call, as the entities' observations are;
        # each sorted here, as the separate read of the tags ordered them.
        tagged = [r[14] for r in rows if r[14] != "[]"]
        decoded = iter(json_arrays(tagged) if tagged else ())
        untagged: tuple[str, ...] = ()
        # Positional arguments in the record's field order, unpacked from the row: the
        # keyword form cost about 30 % more, paid for every winner of every search; made
        # without the frozen dataclass's `__init__` (`memory_of`).
        return [
            memory_of(
                pk,
                id_,
                scope,
                content,
                digest,
                untagged if tags == "[]" else tuple(sorted(next(decoded))),
                importance,
                memory_type,
                summary,
                props_of(props),
                created_at,
                updated_at,
                count or 0,
                last_at,
                archived_at,
            )
            for (
                pk,
                id_,
                scope,
                content,
                digest,
                importance,
                memory_type,
                summary,
                props,
                created_at,
                updated_at,
                count,
                last_at,
                archived_at,
                tags,
            ) in rows
        ]

    def memory_by_hash(self, scopes: Sequence[str], digest: str) -> Memory | None:
        found = self._memories(
            f"m.hash = ? AND m.scope IN ({marks(len(scopes))}) ORDER BY m.node LIMIT 1", [digest, *scopes]
        )
        return found[0] if found else None

    def memory_pk(self, scope: str, digest: str) -> int | None:
        row = self.conn.execute("SELECT node FROM memory WHERE scope = ? AND hash = ?", [scope, digest]).fetchone()
        return None if row is None else int(row[0])

    def latest_memory(self, scope: str, before_pk: int, created_since: int) -> int | None:
        row = self.conn.execute(
            "SELECT m.node FROM memory m JOIN node n ON n.pk = m.node "
            "WHERE m.scope = ? AND m.node < ? AND n.created_at >= ? ORDER BY m.node DESC LIMIT 1",
            [scope, before_pk, created_since],
        ).fetchone()
        return None if row is None else int(row[0])

    def memory_by_pk(self, pk: int) -> Memory | None:
        found = self._memories("m.node = ?", [pk])
        return found[0] if found else None

    def memories_by_pk(self, pks: Sequence[int]) -> dict[int, Memory]:
        if len(pks) <= 1:
            return {memory.pk: memory for memory in self._memories("m.node = ?", pks)} if pks else {}
        # Several: the statement walks their keys (one JSON array), as `entities_by_pk` does.
        # A list on the right of `IN` was copied into a b-tree of its own each run (callgrind
        # at 10,000 entities, three memories: 120 k -> 93 k instructions). Sorted and once
        # each, the keys give the rows in that b-tree's order, as before.
        keyed = self._memories("m.node = j.value", [json_keys(sorted(set(pks)))], driven_by=KEYS_FIRST)
        return {memory.pk: memory for memory in keyed}

    def memory_views(self, pks: Sequence[int]) -> dict[int, MemoryView]:
        out: dict[int, MemoryView] = {}
        for chunk in chunks(pks, 500):
            # The tags with each row (`_VIEW_TAGS`), not in a second statement; the columns
            # in the view's order, so that an untagged row (most) becomes a view as it is.
            rows = self.conn.execute(
                f"SELECT m.node, m.content, m.summary, {_VIEW_TAGS}, m.importance, m.memory_type, n.created_at, "
                f"a.last_at, m.hash FROM {_VIEW_FROM} WHERE m.node IN ({marks(len(chunk))})",
                chunk,
            ).fetchall()
            if not rows:
                continue
            # The tagged rows' arrays decoded in one call, each sorted (as `_memories` does).
            # Built as `rows_as` builds records, without the named tuple's own `__new__`.
            # No row has tags where the first has NULL: no memory has a tag.
            tagged = [] if rows[0][3] is None else [r[3] for r in rows if r[3] != "[]"]
            if not tagged:
                untagged: tuple[str, ...] = ()
                for pk, content, summary, _, importance, memory_type, born, last_at, digest in rows:
                    out[pk] = tuple.__new__(
                        MemoryView, (pk, content, summary, untagged, importance, memory_type, born, last_at, digest)
                    )
                continue
            decoded = iter(json.loads("[" + ",".join(tagged) + "]"))
            for pk, content, summary, tags, importance, memory_type, born, last_at, digest in rows:
                out[pk] = tuple.__new__(
                    MemoryView,
                    (
                        pk,
                        content,
                        summary,
                        () if tags == "[]" else tuple(sorted(next(decoded))),
                        importance,
                        memory_type,
                        born,
                        last_at,
                        digest,
                    ),
                )
        return out

    def memory_contents(self, pks: Sequence[int], holding: str) -> dict[int, str]:
        out: dict[int, str] = {}
        kept = self._contents_read
        if kept is not None and kept[0] == self.conn.total_changes:
            known = kept[1]
            # `holding in content` is `instr(content, holding) > 0`, the empty text included.
            out.update((pk, known[pk]) for pk in pks if pk in known and holding in known[pk])
            pks = [pk for pk in pks if pk not in known]
        for chunk in chunks(pks, 500):
            out.update(
                self.conn.execute(
                    f"SELECT node, content FROM memory WHERE node IN ({marks(len(chunk))}) AND instr(content, ?) > 0",
                    [*chunk, holding],
                ).fetchall()
            )
        return out

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
        memory's context is not searched here (see `filtered_text_search`). FTS5's bm25 is
        more negative for a better match: the score is its negation."""
        if not terms or limit <= 0:
            return []
        match = fts_any(terms)
        # A memory's context (see schema migration 7) is the native search's alone.
        match = f"{{content}} : ({match})" if content_only else f"{{content summary}} : ({match})"
        live = include_archived or not archived_in(self.conn, scopes)
        if live and self._holds_only(scopes):
            # Every memory is readable: the matches are ranked alone and only the top rows
            # kept, instead of joining every match before sorting; the rows kept are joined
            # in the same statement (a second one cost 0.08 ms a query). The order names
            # the rowid too, so SQLite's own top-N sort keeps them: FTS5's `ORDER BY rank`
            # sorts every match in a statement of its own and seeks each back, 0.12 ms more
            # a query at 10,000 memories (0.54 against 0.42 ms), for the same rows.
            rows = self.conn.execute(
                "SELECT f.rowid, -f.rank, m.importance, n.created_at FROM "
                "(SELECT rowid, rank FROM memory_fts WHERE memory_fts MATCH ? ORDER BY rank, rowid LIMIT ?) f "
                "CROSS JOIN memory m ON m.node = f.rowid CROSS JOIN node n ON n.pk = f.rowid ORDER BY f.rank, f.rowid",
                [match, limit],
            ).fetchall()
            return rows_as(TextHit, rows)
        rows = self.conn.execute(
            "SELECT f.rowid, -bm25(memory_fts) AS score, m.importance, n.created_at FROM memory_fts f "
            "JOIN memory m ON m.node = f.rowid JOIN node n ON n.pk = f.rowid "
            f"WHERE memory_fts MATCH ? AND m.scope IN ({marks(len(scopes))}) "
            f"{'' if live else 'AND m.archived_at IS NULL '}ORDER BY score DESC, f.rowid LIMIT ?",
            [match, *scopes, limit],
        ).fetchall()
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
        wanted = set(scopes)
        # The counters of every scope holding memories, and for each scope read its
        # highest importance (not archived), its first and last memory's creation time
        # and whether any of its memories has a tag (the tag counters): one statement, a
        # seek in an index each.
        read = marks(len(scopes))
        facts = self.conn.execute(
            "SELECT c.kind, c.scope, "
            f"CASE WHEN c.kind = 'memory' AND c.scope IN ({read}) THEN (SELECT MAX(importance) FROM memory "
            "WHERE scope = c.scope AND archived_at IS NULL) END, "
            f"CASE WHEN c.kind = 'memory' AND c.scope IN ({read}) THEN (SELECT MIN(created_at) FROM node "
            "WHERE label = 'Memory' AND scope = c.scope) END, "
            f"CASE WHEN c.kind = 'memory' AND c.scope IN ({read}) THEN (SELECT MAX(created_at) FROM node "
            "WHERE label = 'Memory' AND scope = c.scope) END, "
            f"CASE WHEN c.kind = 'memory' AND c.scope IN ({read}) THEN EXISTS (SELECT 1 FROM tag_count "
            "WHERE scope = c.scope AND n > 0) END "
            "FROM scope_count c WHERE c.kind IN ('memory', 'archived') AND c.n > 0",
            [*scopes, *scopes, *scopes, *scopes],
        ).fetchall()
        holds_only = True
        archived = False
        any_tag = False
        most_important = -1
        oldest: int | None = None
        newest: int | None = None
        for kind, scope, high, low, last, has_tag in facts:
            if kind == "archived":
                archived = archived or scope in wanted
            elif scope not in wanted:
                holds_only = False
            elif low is not None:
                most_important = max(most_important, -1 if high is None else high)
                oldest = low if oldest is None else min(oldest, low)
                newest = last if newest is None else max(newest, last)
                any_tag = any_tag or bool(has_tag)
        if include_archived and archived:
            # Archived memories are not in the importance index.
            most_important = 10
        leave_archived = archived and not include_archived
        text: dict[int, float] = {}
        if terms and limit > 0:
            # As `search_text`, without the rows: the candidates' scores alone.
            match = f"{{content summary}} : ({fts_any(terms)})"
            if holds_only and not leave_archived:
                # `rank` as it is, negated here: a result column `-rank` beside the order's
                # `rank` makes FTS5 run bm25 twice a match (0.11 M of a search's 6 M
                # instructions at 10,000 memories). `0.0 - rank` is SQLite's own `-rank`.
                rows = self.conn.execute(
                    "SELECT rowid, rank FROM memory_fts WHERE memory_fts MATCH ? ORDER BY rank, rowid LIMIT ?",
                    [match, limit],
                ).fetchall()
                text = {pk: 0.0 - rank for pk, rank in rows}
            else:
                rows = self.conn.execute(
                    "SELECT f.rowid, -bm25(memory_fts) AS score FROM memory_fts f "
                    f"JOIN memory m ON m.node = f.rowid WHERE memory_fts MATCH ? AND m.scope IN ({read}) "
                    f"{'AND m.archived_at IS NULL ' if leave_archived else ''}ORDER BY score DESC, f.rowid LIMIT ?",
                    [match, *scopes, limit],
                ).fetchall()
                text = dict(rows)
        tagged: list[int] = []
        # No memory of the scopes read has a tag (the usual store): no statement to find none.
        if tags and limit > 0 and any_tag:
            # As `memories_with_tags`, by pk alone.
            if leave_archived:
                found = self.conn.execute(
                    f"SELECT node FROM memory WHERE node IN (SELECT node FROM memory_tag WHERE tag IN "
                    f"({marks(len(tags))}) AND scope IN ({read})) AND archived_at IS NULL ORDER BY node DESC LIMIT ?",
                    [*tags, *scopes, limit],
                ).fetchall()
            else:
                found = self.conn.execute(
                    f"SELECT DISTINCT node FROM memory_tag WHERE tag IN ({marks(len(tags))}) "
                    f"AND scope IN ({read}) ORDER BY node DESC LIMIT ?",
                    [*tags, *scopes, limit],
                ).fetchall()
            tagged = [pk for (pk,) in found]
        return MemoryCandidates(text, tagged, 10 if most_important < 0 else most_important, oldest, newest)

    def _holds_only(self, scopes: Sequence[str]) -> bool:
        """True when no memory lives outside `scopes` (read from the per-scope counters)."""
        held = self.conn.execute("SELECT scope FROM scope_count WHERE kind = 'memory' AND n > 0").fetchall()
        wanted = set(scopes)
        return all(scope in wanted for (scope,) in held)

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
                "SELECT m.node, 0.0, m.importance, n.created_at FROM memory m CROSS JOIN node n ON n.pk = m.node "
                f"WHERE m.node IN (SELECT node FROM memory_tag WHERE tag IN ({marks(len(tags))}) "
                f"AND scope IN ({marks(len(scopes))})) AND m.archived_at IS NULL ORDER BY m.node DESC LIMIT ?",
                [*tags, *scopes, limit],
            ).fetchall()
            return rows_as(TextHit, rows)
        # The newest `limit` tagged memories, read from the (tag, scope) index alone, then
        # their details: a common tag costs an index scan, not a join and sort of every row.
        rows = self.conn.execute(
            "SELECT t.node, 0.0, m.importance, n.created_at FROM "
            f"(SELECT DISTINCT node FROM memory_tag WHERE tag IN ({marks(len(tags))}) "
            f"AND scope IN ({marks(len(scopes))}) ORDER BY node DESC LIMIT ?) t "
            "CROSS JOIN memory m ON m.node = t.node CROSS JOIN node n ON n.pk = t.node",
            [*tags, *scopes, limit],
        ).fetchall()
        return rows_as(TextHit, rows)

    def count_memories(self, scopes: Sequence[str]) -> int:
        row = self.conn.execute(
            f"SELECT COALESCE(SUM(n), 0) FROM scope_count WHERE kind = 'memory' AND scope IN ({marks(len(scopes))})",
            scopes,
        ).fetchone()
        return int(row[0])

    def memories_per_scope(self) -> dict[str, int]:
        """How many memories each scope holds (scopes with none left out)."""
        return dict(
            self.conn.execute("SELECT scope, n FROM scope_count WHERE kind = 'memory' AND n > 0 ORDER BY scope")
        )

    def count_tags(self, scopes: Sequence[str]) -> int:
        """Distinct tags over the memories of `scopes` (from counters kept by triggers)."""
        row = self.conn.execute(
            f"SELECT COUNT(DISTINCT tag) FROM tag_count WHERE scope IN ({marks(len(scopes))})", scopes
        ).fetchone()
        return int(row[0])


class MemoryWrites(MemoryReads):
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
        # The context's text is derived here from the turn it follows, as the triggers of
        # schema migration 7 derive it again when those turns change.
        before = None
        if context_from is not None:
            before = self.conn.execute(
                "SELECT p.node, trim(coalesce(pp.content, '') || ' ' || p.content) "
                "FROM memory p LEFT JOIN memory pp ON pp.node = p.context_from WHERE p.node = ?",
                [context_from],
            ).fetchone()
        self.conn.execute(
            "INSERT INTO memory (node, scope, hash, content, summary, importance, memory_type, context_from, context) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [pk, scope, digest, content, summary, importance, memory_type, *(before or (None, None))],
        )

    _MEMORY_FIELDS = frozenset({"hash", "content", "summary", "importance", "memory_type"})

    def update_memory(self, pk: int, fields: Mapping[str, Any]) -> None:
        unknown = set(fields) - self._MEMORY_FIELDS
        if unknown:
            raise ValueError(f"not memory fields: {sorted(unknown)}")
        if not fields:
            return
        names = list(fields)
        self.conn.execute(
            f"UPDATE memory SET {', '.join(f'{n} = ?' for n in names)} WHERE node = ?",
            [*(fields[n] for n in names), pk],
        )

    def set_archived(self, pk: int, at: int | None) -> None:
        self.conn.execute("UPDATE memory SET archived_at = ? WHERE node = ?", [at, pk])

    def add_tags(self, pk: int, tags: Iterable[str]) -> list[str]:
        added = []
        for tag in tags:
            cur = self.conn.execute(
                "INSERT OR IGNORE INTO memory_tag (node, tag, scope) SELECT ?, ?, scope FROM memory WHERE node = ?",
                [pk, tag, pk],
            )
            if cur.rowcount:
                added.append(tag)
        return added

    def replace_tags(self, pk: int, tags: Iterable[str]) -> None:
        self.conn.execute("DELETE FROM memory_tag WHERE node = ?", [pk])
        self.add_tags(pk, tags)
