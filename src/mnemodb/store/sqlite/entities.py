"""Entities, observations and the relations between entities: the SQL behind the
knowledge-graph face. Mixed into the store's read and write transactions.

An entity's name is not unique in the schema (the property-graph face may create two of
the same name); where a name must mean one entity, the oldest in the reader's scopes is
the one (`_CANONICAL`).
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from mnemodb.model.records import Entity, Relation, entity_of, relation_of
from mnemodb.store.base import (
    AccessStats,
    EdgesAround,
    EntityFieldWeights,
    EntityKey,
    EntityLink,
    EntityMatch,
    EntityText,
    ScoredPk,
    TextClause,
)
from mnemodb.store.sqlite.edges import AroundRows, around_ways
from mnemodb.store.sqlite.sql import (
    KEYS_FIRST,
    edge_visible,
    edge_visible_params,
    fts_any,
    fts_phrase,
    json_arrays,
    json_keys,
    marks,
    padded,
    rows_as,
)

__all__ = ["EntityReads", "EntityWrites"]

_ENTITY_COLUMNS = "n.pk, n.id, n.scope, e.name, e.entity_type, n.props, n.created_at, n.updated_at, e.extra, t.c3"
_ENTITY_OBSERVATIONS = "entity_text_content t ON t.id = e.node"
"""The observations of `entity_text` (its fourth column, `items`: `c3`), read from the table
FTS5 keeps them in, an ordinary table keyed by rowid: through the virtual table, each
statement asked FTS5 whether the index had changed and each row ran a statement of FTS5's
own reading all four columns (callgrind at 10,000 entities, a native `get`: 592 k -> 581 k
instructions a call; a two-hop `explore`, 18 entities read: 2,637 k -> 2,547 k)."""
_RELATION_COLUMNS = "r.pk, r.src, r.dst, r.type, es.name, ed.name, r.extra"
_RELATION_FROM = "edge r JOIN entity es ON es.node = r.src JOIN entity ed ON ed.node = r.dst"
_MIN_TRIGRAM = 3


def _trigram_pieces(term: str) -> list[str]:
    """The parts of a substring `term` the trigram index can look up. An FTS5 query string
    ends at a NUL, so a term holding one is looked up by the pieces around it (a superset:
    the caller checks the whole term)."""
    return [piece for piece in term.split("\x00") if len(piece) >= _MIN_TRIGRAM]


def _json_object(text: str | None) -> dict[str, Any]:
    return {} if not text or text == "{}" else dict(json.loads(text))


def _dumps_items(observations: Sequence[str]) -> str:
    return json.dumps(list(observations), ensure_ascii=False)


def oldest_of_each_name(alias: str, scopes: Sequence[str]) -> tuple[str, list[str]]:
    """SQL keeping only the oldest entity of each name within `scopes`."""
    return (
        f"{alias}.node = (SELECT MIN(c.node) FROM entity c WHERE c.name = {alias}.name "
        f"AND c.scope IN ({marks(len(scopes))}))",
        list(scopes),
    )


_NAMES_MOST = 256
"""Names a statement of `entity_keys_named` looks up."""


@functools.lru_cache(maxsize=64)
def _entity_around_sql(valid: bool, scope_count: int) -> str:
    """`entity_around`'s statement: the entity the name means (`entity_by_name`'s row with
    its access statistics, laid out in `edges_around`'s columns: its id, text, where a
    target's pk goes), then `_edges_around_sql`'s ways for it. Each part finds the entity
    by its name again, a look-up of the name's index entry: a second statement (its call
    from Python, its parameters bound, its rows fetched) costs more, and so does a part of
    its own for the access statistics. Its parameters, numbered: the name (1), the scopes
    (2 on), then the validity instant when `valid`."""
    scopes = ", ".join(f"?{i}" for i in range(2, 2 + scope_count))
    node = f"(SELECT node FROM entity WHERE name = ?1 AND scope IN ({scopes}) ORDER BY node LIMIT 1)"
    several = scope_count > 1
    entity = (
        "SELECT n.pk, a.count, n.id, n.created_at, n.updated_at, n.scope, e.name, e.entity_type, n.props, e.extra, "
        f"t.c3, a.last_at{', NULL, NULL' if several else ''} FROM entity e JOIN node n ON n.pk = e.node "
        f"LEFT JOIN {_ENTITY_OBSERVATIONS} LEFT JOIN node_access a ON a.node = e.node WHERE e.node = {node}"
    )
    ways = around_ways(f"= {node}", f"?{2 + scope_count}" if valid else "", scopes, several)
    return " UNION ALL ".join([entity, *ways])


_ENTITY_NAMED_IN_SCOPE = (
    "SELECT n.pk, n.id, e.entity_type, n.props, n.created_at, n.updated_at, e.extra, t.c3 FROM entity e "
    f"JOIN node n ON n.pk = e.node LEFT JOIN {_ENTITY_OBSERVATIONS} WHERE e.name = ? AND e.scope = ? "
    "ORDER BY e.node LIMIT 1"
)
"""`entity_by_name` in one scope: `_ENTITY_COLUMNS` but the scope and the name."""
_ENTITIES_REACHED = (
    "SELECT n.pk, e.name, e.entity_type, n.props, n.created_at, n.updated_at, e.extra, t.c3 "
    f"FROM {KEYS_FIRST}entity e JOIN node n ON n.pk = e.node LEFT JOIN {_ENTITY_OBSERVATIONS} WHERE e.node = j.value"
)
"""`entities_reached`' statement: `_ENTITY_COLUMNS` but the id and the scope, by the keys' array."""
_ENTITIES_REACHED_OF_SCOPES = _ENTITIES_REACHED.replace("n.pk, ", "n.pk, n.scope, ", 1)
"""`_ENTITIES_REACHED` with the scope, when the walk's nodes may be of several."""


class EntityReads:
    conn: sqlite3.Connection

    def _entities(self, where: str, params: Sequence[Any], *, driven_by: str = "") -> list[Entity]:
        """The entities a condition on `e` (entity), `n` (node) and `driven_by` (a table the
        statement starts from, cross-joined before the entity) selects."""
        # Observations come with the row, from the search index's copy (kept in the same
        # transactions as the observation table), instead of a second query.
        rows = self.conn.execute(
            f"SELECT {_ENTITY_COLUMNS} FROM {driven_by}entity e JOIN node n ON n.pk = e.node "
            f"LEFT JOIN {_ENTITY_OBSERVATIONS} WHERE {where}",
            params,
        ).fetchall()
        if not rows:  # a look-up of a name that is not there
            return []
        return self._entities_of(rows)

    def _entities_of(self, rows: Sequence[Sequence[Any]]) -> list[Entity]:
        """The entities of rows of `_ENTITY_COLUMNS`."""
        missing = [r[0] for r in rows if r[9] is None]
        observations = self.observations_of(missing) if missing else {}
        # The observation arrays are decoded in one call rather than one call a row: a
        # search reads thousands of entities, and each call has its own fixed cost.
        arrays = json_arrays(r[9] for r in rows if r[9] is not None)
        stored = iter(arrays)
        # Positional arguments, without the frozen dataclass's `__init__` (`entity_of`): a
        # search builds thousands of these a call, a walk dozens. Most have no properties
        # and no extra fields: those are told here, without a call.
        return [
            entity_of(
                r[0],
                r[1],
                r[2],
                r[3],
                r[4],
                tuple(next(stored)) if r[9] is not None else observations.get(r[0], ()),
                {} if r[5] == "{}" else _json_object(r[5]),
                r[6],
                r[7],
                {} if r[8] is None else _json_object(r[8]),
            )
            for r in rows
        ]

    def entity_around(
        self, scopes: Sequence[str], name: str, *, valid_at: int | None
    ) -> tuple[Entity, EdgesAround] | None:
        """`entity_by_name`, then `edges_around` of that entity, in one statement."""
        if not scopes:
            return None
        params: list[Any] = [name, *scopes]
        if valid_at is not None:
            params.append(valid_at)
        rows = self.conn.execute(_entity_around_sql(valid_at is not None, len(scopes)), params).fetchall()
        if not rows:  # no such name: no entity row, and no edges of it either
            return None
        # The entity's row (an id, text, in the target's place) is the first part's, read
        # first: SQLite runs a compound's parts in order, without promising it.
        row = rows[0]
        rest = rows[1:]
        if type(row[2]) is not str:
            row = next(r for r in rows if type(r[2]) is str)
            rest = [r for r in rows if r is not row]
        pk, count, node_id, created_at, updated_at, scope, entity_name, entity_type, props, extra, stored, last = row[
            :12
        ]
        # In `_ENTITY_COLUMNS`' order.
        entity = self._entities_of(
            [(pk, node_id, scope, entity_name, entity_type, props, created_at, updated_at, extra, stored)]
        )[0]
        around = AroundRows({pk: node_id}, scopes)
        if count is not None:
            around.access[pk] = AccessStats(count, last)
        around.read(rest)
        return entity, around.result()

    def observations_of(self, pks: Sequence[int]) -> dict[int, tuple[str, ...]]:
        out: dict[int, list[str]] = {}
        for start in range(0, len(pks), 500):
            chunk = pks[start : start + 500]
            for entity, content in self.conn.execute(
                f"SELECT entity, content FROM observation WHERE entity IN ({marks(len(chunk))}) "
                "ORDER BY entity, position",
                chunk,
            ):
                out.setdefault(entity, []).append(content)
        return {k: tuple(v) for k, v in out.items()}

    def entity_by_name(self, scopes: Sequence[str], name: str) -> Entity | None:
        if len(scopes) == 1:
            # One scope: the entity's scope and name are the ones asked about, not columns
            # (each costs a call into SQLite and a value built).
            row = self.conn.execute(_ENTITY_NAMED_IN_SCOPE, [name, scopes[0]]).fetchone()
            if row is None:
                return None
            pk, node_id, kind, props, created_at, updated_at, extra, stored = row
            return self._entities_of(
                [(pk, node_id, scopes[0], name, kind, props, created_at, updated_at, extra, stored)]
            )[0]
        found = self._entities(
            f"e.name = ? AND e.scope IN ({marks(len(scopes))}) ORDER BY e.node LIMIT 1", [name, *scopes]
        )
        return found[0] if found else None

    def entity_by_name_nocase(self, scopes: Sequence[str], name: str) -> Entity | None:
        """The entity whose name equals `name` ignoring case, when exactly one does."""
        in_scopes = f"scope IN ({marks(len(scopes))})"
        # Names, not entities, are counted: two entities of one name are still one name,
        # which means its oldest entity.
        if name.isascii():
            # Named, as the planner may otherwise walk a whole scope of `entity_scope_name`
            # for the order of DISTINCT.
            names = [
                r[0]
                for r in self.conn.execute(
                    "SELECT DISTINCT name FROM entity INDEXED BY entity_scope_name_nocase "
                    f"WHERE name = ? COLLATE NOCASE AND {in_scopes} LIMIT 2",
                    [name, *scopes],
                )
            ]
        else:
            # SQLite folds only ASCII letters: compare the names here.
            wanted = name.casefold()
            names = list(
                dict.fromkeys(
                    other
                    for (other,) in self.conn.execute(f"SELECT name FROM entity WHERE {in_scopes}", list(scopes))
                    if other.casefold() == wanted
                )
            )
        if len(names) != 1:
            return None
        return self.entity_by_name(scopes, names[0])

    def entities_named(self, scopes: Sequence[str], names: Sequence[str]) -> dict[str, Entity]:
        """The entity each name means (the oldest of that name), for the names that exist."""
        out: dict[str, Entity] = {}
        unique = list(dict.fromkeys(names))
        for start in range(0, len(unique), 400):
            chunk = unique[start : start + 400]
            for entity in self._entities(
                f"e.name IN ({marks(len(chunk))}) AND e.scope IN ({marks(len(scopes))}) ORDER BY e.node",
                [*chunk, *scopes],
            ):
                out.setdefault(entity.name, entity)
        return out

    def entity_keys_named(self, scopes: Sequence[str], names: Sequence[str]) -> dict[str, EntityKey]:
        """`entities_named`, each entity's key only (no observations to decode)."""
        out: dict[str, EntityKey] = {}
        unique = list(dict.fromkeys(names))
        for start in range(0, len(unique), _NAMES_MOST):
            chunk = unique[start : start + _NAMES_MOST]
            # A relation batch names a different number of ends each call: `padded`. The
            # oldest entity of a name is kept, by pk here rather than sorted by SQLite.
            listed = padded(chunk)
            # `_make` builds the tuple in C; `EntityKey(*row)` runs the class's Python
            # `__new__` (200 keys a call of 100 relations).
            make = EntityKey._make
            for row in self.conn.execute(
                "SELECT e.node, n.id, e.scope, e.name FROM entity e JOIN node n ON n.pk = e.node "
                f"WHERE e.name IN ({marks(len(listed))}) AND e.scope IN ({marks(len(scopes))})",
                [*listed, *scopes],
            ):
                known = out.get(row[3])
                if known is None or row[0] < known.pk:
                    out[row[3]] = make(row)
        return out

    def entities_by_pk(self, pks: Sequence[int]) -> dict[int, Entity]:
        if not pks:
            return {}
        # One statement for any number (a search can return thousands): the keys go in as
        # one JSON array, which the statement walks, looking each entity up by its key.
        # `e.node IN (SELECT value FROM json_each(?))` first copied the keys into a b-tree
        # of its own, which SQLite creates for each run: most of a short read's cost
        # (callgrind at 10,000 entities, four entities: 128 k -> 94 k instructions). Sorted
        # and once each, the keys give the rows in that b-tree's order, as before.
        found = self._entities("e.node = j.value", [json_keys(sorted(set(pks)))], driven_by=KEYS_FIRST)
        return {entity.pk: entity for entity in found}

    def entities_reached(self, ids: Mapping[int, str], scope: str | None) -> dict[int, Entity]:
        if not ids:
            return {}
        # `entities_by_pk` without the columns the walk read already: each costs a call into
        # SQLite and a value built, for every row.
        keys = json_keys(sorted(ids))
        if scope is None:
            return {
                entity.pk: entity
                for entity in self._entities_of(
                    [
                        (pk, ids[pk], in_scope, *rest)
                        for pk, in_scope, *rest in self.conn.execute(_ENTITIES_REACHED_OF_SCOPES, [keys])
                    ]
                )
            }
        return {
            entity.pk: entity
            for entity in self._entities_of(
                [
                    (pk, ids[pk], scope, name, kind, props, created_at, updated_at, extra, stored)
                    for pk, name, kind, props, created_at, updated_at, extra, stored in self.conn.execute(
                        _ENTITIES_REACHED, [keys]
                    )
                ]
            )
        }

    def entity_keys_by_pk(self, pks: Sequence[int]) -> dict[int, EntityKey]:
        if not pks:
            return {}
        rows = self.conn.execute(
            "SELECT e.node, n.id, e.scope, e.name FROM entity e JOIN node n ON n.pk = e.node "
            "WHERE e.node IN (SELECT value FROM json_each(?))",
            [json_keys(pks)],
        )
        return {row[0]: EntityKey(*row) for row in rows}

    def entity_pks(self, scopes: Sequence[str], *, after: int = 0, limit: int | None = None) -> list[int]:
        """Entities in creation order (one per name), from just after `after`."""
        canonical, params = oldest_of_each_name("e", scopes)
        sql = (
            f"SELECT e.node FROM entity e WHERE e.node > ? AND e.scope IN ({marks(len(scopes))}) "
            f"AND {canonical} ORDER BY e.node"
        )
        args: list[Any] = [after, *scopes, *params]
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        return [r[0] for r in self.conn.execute(sql, args)]

    def entity_names_starting(self, scopes: Sequence[str], prefix: str, limit: int) -> list[str]:
        """Distinct entity names that start with `prefix` (ignoring the case of ASCII letters,
        as LIKE does), in order ignoring that case too, at most `limit`."""
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self.conn.execute(
            f"SELECT DISTINCT name FROM entity WHERE scope IN ({marks(len(scopes))}) "
            "AND name LIKE ? ESCAPE '\\' ORDER BY name COLLATE NOCASE, name LIMIT ?",
            [*scopes, escaped + "%", limit],
        ).fetchall()
        return [r[0] for r in rows]

    def entity_pks_of_type(self, scopes: Sequence[str], entity_type: str) -> list[int]:
        """Entities whose type equals `entity_type` ignoring case, in creation order."""
        canonical, params = oldest_of_each_name("e", scopes)
        if entity_type.isascii():
            rows = self.conn.execute(
                f"SELECT e.node FROM entity e WHERE e.entity_type = ? COLLATE NOCASE "
                f"AND e.scope IN ({marks(len(scopes))}) AND {canonical} ORDER BY e.node",
                [entity_type, *scopes, *params],
            ).fetchall()
            return [r[0] for r in rows]
        # SQLite folds ASCII only: compare the rest here.
        wanted = entity_type.lower()
        rows = self.conn.execute(
            f"SELECT e.node, e.entity_type FROM entity e WHERE e.scope IN ({marks(len(scopes))}) "
            f"AND {canonical} ORDER BY e.node",
            [*scopes, *params],
        ).fetchall()
        return [pk for pk, kind in rows if kind.lower() == wanted]

    @staticmethod
    def _text_match(clauses: Sequence[TextClause]) -> tuple[bool, str] | None:
        """The FTS5 query of `clauses`, and whether it reads names alone; None when no
        clause can use the trigram index."""
        names_only = all(column == "name" for column, _, _ in clauses)
        parts: list[str] = []
        for column, every, some in clauses:
            terms = [fts_phrase(piece) for t in every for piece in _trigram_pieces(t)]
            if some and all(len(t) >= _MIN_TRIGRAM and "\x00" not in t for t in some):
                terms.append("(" + " OR ".join(fts_phrase(t) for t in some) + ")")
            if not terms:
                continue
            expression = " AND ".join(terms)
            parts.append(f"{column} : ({expression})" if column and not names_only else f"({expression})")
        if not parts:
            return None
        return names_only, " AND ".join(parts)

    def entity_text_search(self, clauses: Sequence[TextClause], scopes: Sequence[str]) -> list[int] | None:
        """Entities whose text satisfies every clause's substring conditions (a superset
        the caller checks exactly), or None when no clause can use the trigram index.
        Conditions on names alone read the index of names (`entity_name_text`), which
        matches what the name column of `entity_text` matches."""
        match = self._text_match(clauses)
        if match is None:
            return None
        names_only, expression = match
        canonical, params = oldest_of_each_name("e", scopes)
        index = "entity_name_text" if names_only else "entity_text"
        rows = self.conn.execute(
            f"SELECT t.rowid FROM {index} t JOIN entity e ON e.node = t.rowid "
            f"WHERE {index} MATCH ? AND e.scope IN ({marks(len(scopes))}) AND {canonical} ORDER BY t.rowid",
            [expression, *scopes, *params],
        ).fetchall()
        return [r[0] for r in rows]

    def entity_text_matches(self, clauses: Sequence[TextClause], scopes: Sequence[str]) -> list[EntityMatch] | None:
        """`entity_text_search`'s candidates with their name, type, observations (the search
        index's JSON copy) and extra fields, in the same statement: no second look-up of
        each, no node row."""
        match = self._text_match(clauses)
        if match is None:
            return None
        names_only, expression = match
        canonical, params = oldest_of_each_name("e", scopes)
        if names_only:
            source = "entity_name_text m JOIN entity e ON e.node = m.rowid LEFT JOIN entity_text t ON t.rowid = m.rowid"
        else:
            source = "entity_text t JOIN entity e ON e.node = t.rowid"
        index = "entity_name_text" if names_only else "entity_text"
        rows = self.conn.execute(
            f"SELECT e.node, e.name, e.entity_type, t.items, e.extra FROM {source} "
            f"WHERE {index} MATCH ? AND e.scope IN ({marks(len(scopes))}) AND {canonical} ORDER BY e.node",
            [expression, *scopes, *params],
        ).fetchall()
        missing = [r[0] for r in rows if r[3] is None]
        if missing:  # an entity without its index row: its observations from their own table
            observations = self.observations_of(missing)
            rows = [r if r[3] is not None else (*r[:3], _dumps_items(observations.get(r[0], ())), r[4]) for r in rows]
        return rows_as(EntityMatch, rows)

    def entity_word_search(
        self, terms: Sequence[str], scopes: Sequence[str], limit: int, weights: EntityFieldWeights
    ) -> list[ScoredPk]:
        """Entities whose name, type or observations hold any of `terms` as words (stemmed,
        as memories are searched), best first, at most `limit`, each field weighted by
        `weights` (the score is FTS5's bm25 negated)."""
        if not terms or limit <= 0:
            return []
        canonical, params = oldest_of_each_name("e", scopes)
        # `rank` is the bm25 column here, not FTS5's own, so SQLite's top-N sort already
        # keeps the rows; the rowid makes equal scores come in ascending pk by definition.
        # Ranking the words alone before the join (as memories are) saved nothing: over
        # the bench's 200 questions, bm25 of every match is 0.23 of the 0.6 ms a statement
        # at 100,000 entities, the rest is reading each match's entity row.
        rows = self.conn.execute(
            "SELECT w.rowid, bm25(entity_words, ?, ?, ?) AS rank "
            "FROM entity_words w JOIN entity e ON e.node = w.rowid "
            f"WHERE entity_words MATCH ? AND e.scope IN ({marks(len(scopes))}) AND {canonical} "
            "ORDER BY rank, w.rowid LIMIT ?",
            [*weights, fts_any(terms), *scopes, *params, limit],
        ).fetchall()
        return [ScoredPk(int(pk), -float(rank)) for pk, rank in rows]

    def entity_texts(self, scopes: Sequence[str], pks: Sequence[int] | None = None) -> Iterator[EntityText]:
        """(pk, name, type, observations joined by spaces, observations as a JSON array) of
        the given entities, or of every entity in `scopes`, in creation order: one query,
        for search (which parses the array only for the entities that match)."""
        if pks is None:
            canonical, params = oldest_of_each_name("e", scopes)
            yield from map(
                EntityText._make,
                self.conn.execute(
                    "SELECT t.rowid, t.name, t.type, t.obs, t.items "
                    "FROM entity_text t JOIN entity e ON e.node = t.rowid "
                    f"WHERE e.scope IN ({marks(len(scopes))}) AND {canonical} ORDER BY t.rowid",
                    [*scopes, *params],
                ),
            )
            return
        ordered = sorted(pks)
        for start in range(0, len(ordered), 500):
            chunk = ordered[start : start + 500]
            yield from map(
                EntityText._make,
                self.conn.execute(
                    f"SELECT rowid, name, type, obs, items FROM entity_text WHERE rowid IN ({marks(len(chunk))}) "
                    "ORDER BY rowid",
                    chunk,
                ),
            )

    # -- relations between entities ---------------------------------------------------------

    def _relations(self, where: str, params: Sequence[Any]) -> list[Relation]:
        rows = self.conn.execute(f"SELECT {_RELATION_COLUMNS} FROM {_RELATION_FROM} WHERE {where}", params)
        return [
            Relation(
                from_name=r[4],
                to_name=r[5],
                type=r[3],
                pk=r[0],
                src_pk=r[1],
                dst_pk=r[2],
                extra=_json_object(r[6]),
            )
            for r in rows
        ]

    def entity_links(self, pks: Sequence[int], scopes: Sequence[str]) -> list[EntityLink]:
        """(relation pk, from pk, to pk) of the open relations between entities touching
        `pks`, oldest first: the light rows graph walks step over."""
        if not pks:
            return []
        found: dict[int, tuple[int, int, int]] = {}
        scope_filter = f"r.valid_to IS NULL AND {edge_visible('r', len(scopes))}"
        for start in range(0, len(pks), 400):
            chunk = pks[start : start + 400]
            chunk_marks = marks(len(chunk))
            for column in ("r.src", "r.dst"):
                for row in self.conn.execute(
                    "SELECT r.pk, r.src, r.dst FROM edge r JOIN entity es ON es.node = r.src "
                    f"JOIN entity ed ON ed.node = r.dst WHERE {column} IN ({chunk_marks}) AND {scope_filter}",
                    [*chunk, *edge_visible_params(scopes)],
                ):
                    found[row[0]] = row
        return rows_as(EntityLink, sorted(found.values()))  # by pk: each row's first column, unique

    def relations_by_pk(self, pks: Sequence[int]) -> dict[int, Relation]:
        out: dict[int, Relation] = {}
        for start in range(0, len(pks), 400):
            chunk = pks[start : start + 400]
            for relation in self._relations(f"r.pk IN ({marks(len(chunk))})", chunk):
                out[relation.pk] = relation
        return out

    def relations_touching(
        self, pks: Sequence[int], scopes: Sequence[str], *, both_ends: bool = False
    ) -> list[Relation]:
        """Open relations with one end (or, with `both_ends`, both ends) among `pks`, oldest first."""
        if not pks:
            return []
        # One statement for any number of ends (a search can touch thousands): the ends
        # go in as one JSON array. Each relation comes once: from the side of its source,
        # or from the side of its target when its source is not among `pks`. Both ends are
        # entities, whose scope is their node's, so the entity rows that give the names
        # also give the scopes `edge_visible` would look up in `node`.
        listed = marks(len(scopes))
        visible = f"r.valid_to IS NULL AND r.scope IN ({listed}) AND es.scope IN ({listed}) AND ed.scope IN ({listed})"
        columns = "r.pk, r.src, r.dst, r.type, es.name, ed.name, r.extra"
        ends = "CROSS JOIN entity es ON es.node = r.src CROSS JOIN entity ed ON ed.node = r.dst"
        from_source = f"SELECT {columns} FROM touched m CROSS JOIN edge r ON r.src = m.pk {ends} WHERE {visible}"
        params: list[Any] = [json.dumps(sorted(set(pks))), *scopes, *scopes, *scopes]
        if both_ends:
            statement = f"{from_source} AND r.dst IN touched"
        else:
            from_target = (
                f"SELECT {columns} FROM touched m CROSS JOIN edge r ON r.dst = m.pk {ends} "
                f"WHERE {visible} AND r.src NOT IN touched"
            )
            statement = f"{from_source} UNION ALL {from_target}"
            params += [*scopes, *scopes, *scopes]
        rows = self.conn.execute(
            f"WITH touched(pk) AS MATERIALIZED (SELECT value FROM json_each(?)) {statement} ORDER BY 1", params
        )
        # Thousands a search: made without the record's `__init__`.
        return [relation_of(r[4], r[5], r[3], r[0], r[1], r[2], _json_object(r[6])) for r in rows]

    def relations_matching(
        self,
        scopes: Sequence[str],
        *,
        relation_type: str | None = None,
        ignore_case: bool = False,
        from_pk: int | None = None,
        to_pk: int | None = None,
        after: int = 0,
        limit: int | None = None,
    ) -> list[Relation]:
        """Open relations between entities in `scopes`, filtered, oldest first."""
        where = f"r.pk > ? AND r.valid_to IS NULL AND {edge_visible('r', len(scopes))}"
        params: list[Any] = [after, *edge_visible_params(scopes)]
        if relation_type is not None:
            where += " AND r.type = ? COLLATE NOCASE" if ignore_case else " AND r.type = ?"
            params.append(relation_type)
        if from_pk is not None:
            where += " AND r.src = ?"
            params.append(from_pk)
        if to_pk is not None:
            where += " AND r.dst = ?"
            params.append(to_pk)
        where += " ORDER BY r.pk"
        if limit is not None:
            where += " LIMIT ?"
            params.append(limit)
        return self._relations(where, params)


class EntityWrites(EntityReads):
    def insert_entity(
        self,
        pk: int,
        scope: str,
        name: str,
        entity_type: str,
        extra: Mapping[str, Any] | None = None,
        observations: Sequence[str] = (),
        at: int = 0,
    ) -> list[str]:
        """Insert an entity with its first observations (duplicates dropped); returns those kept."""
        self.conn.execute(
            "INSERT INTO entity (node, scope, name, entity_type, extra) VALUES (?, ?, ?, ?, ?)",
            [pk, scope, name, entity_type, json.dumps(dict(extra), ensure_ascii=False) if extra else None],
        )
        kept = list(dict.fromkeys(observations))
        self.conn.executemany(
            "INSERT INTO observation (entity, position, content, created_at) VALUES (?, ?, ?, ?)",
            [(pk, position, content, at) for position, content in enumerate(kept)],
        )
        self._index_text(pk, name, entity_type, kept)
        return kept

    def _index_text(self, pk: int, name: str, entity_type: str, observations: Sequence[str]) -> None:
        """Put a new entity's text in the substring index and the word index over it."""
        joined = " ".join(observations)
        self.conn.execute(
            "INSERT INTO entity_text (rowid, name, type, obs, items) VALUES (?, ?, ?, ?, ?)",
            [pk, name, entity_type, joined, _dumps_items(observations)],
        )
        self.conn.execute(
            "INSERT INTO entity_words (rowid, name, type, obs) VALUES (?, ?, ?, ?)", [pk, name, entity_type, joined]
        )

    def sync_entity_text(self, pk: int) -> None:
        """Rewrite the entity's row in the substring index (after its name, type or observations change)."""
        row = self.conn.execute("SELECT name, entity_type FROM entity WHERE node = ?", [pk]).fetchone()
        observations = [
            r[0] for r in self.conn.execute("SELECT content FROM observation WHERE entity = ? ORDER BY position", [pk])
        ]
        # The word index forgets the old text while its content table still holds it.
        self.conn.execute(
            "INSERT INTO entity_words (entity_words, rowid, name, type, obs) "
            "SELECT 'delete', rowid, name, type, obs FROM entity_text WHERE rowid = ?",
            [pk],
        )
        self.conn.execute("DELETE FROM entity_text WHERE rowid = ?", [pk])
        if row is not None:
            self._index_text(pk, row[0], row[1], observations)

    def rename_entity(self, pk: int, name: str | None = None, entity_type: str | None = None) -> None:
        """Change an entity's name and/or type (its search text follows)."""
        if name is not None:
            self.conn.execute("UPDATE entity SET name = ? WHERE node = ?", [name, pk])
        if entity_type is not None:
            self.conn.execute("UPDATE entity SET entity_type = ? WHERE node = ?", [entity_type, pk])
        self.sync_entity_text(pk)

    def add_observations(self, entity_pk: int, contents: Sequence[str], at: int) -> list[str]:
        if self.conn.execute("SELECT 1 FROM entity WHERE node = ?", [entity_pk]).fetchone() is None:
            return []  # no such entity: nothing changes (the contract's rule for missing keys)
        row = self.conn.execute(
            "SELECT COALESCE(MAX(position), -1) FROM observation WHERE entity = ?", [entity_pk]
        ).fetchone()
        position = int(row[0])
        added = []
        for content in contents:
            position += 1
            cur = self.conn.execute(
                "INSERT OR IGNORE INTO observation (entity, position, content, created_at) VALUES (?, ?, ?, ?)",
                [entity_pk, position, content, at],
            )
            if cur.rowcount:
                added.append(content)
        if added:
            self.sync_entity_text(entity_pk)
        return added

    def delete_observations(self, entity_pk: int, contents: Sequence[str]) -> list[str]:
        removed = []
        for content in contents:
            cur = self.conn.execute("DELETE FROM observation WHERE entity = ? AND content = ?", [entity_pk, content])
            if cur.rowcount:
                removed.append(content)
        if removed:
            self.sync_entity_text(entity_pk)
        return removed

    def set_edge_extra(self, pk: int, extra: Mapping[str, Any] | None) -> None:
        value = json.dumps(dict(extra), ensure_ascii=False) if extra else None
        self.conn.execute("UPDATE edge SET extra = ? WHERE pk = ?", [value, pk])
