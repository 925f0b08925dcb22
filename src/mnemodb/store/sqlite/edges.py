"""Edges: typed, directed, time-bounded rows of `edge`, read with both ends' ids. Mixed
into the store's read and write transactions."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Collection, Iterable, Mapping, Sequence
from operator import attrgetter, itemgetter
from typing import Any

from mnemodb.model.records import ENTITY, Direction, Edge, NewEdgeRow, Node, Props, edge_of, node_of
from mnemodb.store.base import AccessStats, EdgesAround, EdgesWalked, EntityKey, NodeReached
from mnemodb.store.sqlite.nodes import view_joins, view_props
from mnemodb.store.sqlite.sql import (
    KEYS_FIRST,
    chunks,
    dumps,
    edge_visible,
    edge_visible_params,
    json_keys,
    keys_text,
    marks,
    padded,
    props_of,
)

__all__ = ["AroundRows", "EdgeReads", "EdgeWrites", "around_ways"]

_EDGE_COLUMNS = "e.pk, e.id, s.id, d.id, e.type, e.scope, e.props, e.valid_from, e.valid_to, e.created_at, e.src, e.dst"
_EDGE_FROM = "edge e JOIN node s ON s.pk = e.src JOIN node d ON d.pk = e.dst"
_EDGE_FROM_AFTER = "edge e CROSS JOIN node s ON s.pk = e.src CROSS JOIN node d ON d.pk = e.dst"
"""`_EDGE_FROM` with the edge read before its ends (a cross join keeps its order)."""
_ENDS: dict[Direction, tuple[str, ...]] = {"out": ("src",), "in": ("dst",), "both": ("src", "dst")}
"""The end a lookup matches, for each direction."""


_FROM_KEY = 0
_FROM_KEYS = 1
_FROM_ID = 2
"""Where `edges_reached`'s statement starts: from one node by its key (a parameter), from
several by one JSON array of keys (`KEYS_FIRST`), or from one node by its id, whose view
the statement reads too (`edges_reached_from_id`)."""
_START_WAY = 2
"""The `way` column of the row of `edges_reached_from_id`'s node itself."""


def _reaching(way: int, far: str, near_end: str, far_end: str, start: int, scoped: bool) -> str:
    """The head of `edges_reached`'s statement for one way of following an edge (0: out of
    its source, 1: into its target): each edge with the view of its `far` end, from its
    `near_end` column's nodes, found as `start` says, its columns as `_R_PK` to
    `_R_FAR_SCOPE` say (the edge's and the far end's scopes only when `scoped`). The near
    end is not joined: the caller knows its id, and that it is visible."""
    near = {_FROM_KEY: "?", _FROM_KEYS: "j.value", _FROM_ID: "(SELECT pk FROM node WHERE id = ?)"}[start]
    return (
        f"SELECT e.pk, e.id, e.type, e.props, e.valid_from, e.valid_to, e.created_at, e.{near_end}, e.{far_end}, "
        f"{far}.id, {far}.label, {far}.props, {far}.created_at, {far}.updated_at, {_KIND_COLUMNS}, {way}"
        f"{f', e.scope, {far}.scope' if scoped else ''} "
        f"FROM {KEYS_FIRST if start == _FROM_KEYS else ''}edge e JOIN node {far} ON {far}.pk = e.{far_end} "
        f"{view_joins(far, 'm', 'n')} WHERE e.{near_end} = {near}"
    )


# The columns of `edges_reached`'s rows. Each column of each row is a call into SQLite, and
# Python's sqlite3 module (3.11) lets go of the interpreter's lock and takes it back around
# the first of them: a few hundred instructions a column, whatever its value. So no column
# is read that the rest of the row tells: the far end's key is the edge's far column; a
# node has a memory row or an entity row, never both (its label tells which), so their
# columns share places; and with one scope read, the edge and the far end are in it (the
# statement tests both), so their scopes are not read.
_R_PK, _R_ID, _R_TYPE, _R_PROPS, _R_FROM, _R_TO, _R_CREATED, _R_NEAR, _R_FAR = range(9)
_R_FAR_ID, _R_LABEL, _R_FAR_PROPS, _R_FAR_CREATED, _R_FAR_UPDATED = range(9, 14)
_R_TEXT, _R_NUMBER, _R_MEMORY_TYPE, _R_SUMMARY, _R_WAY, _R_SCOPE, _R_FAR_SCOPE = range(14, 21)
_KIND_COLUMNS = "ifnull(m.content, n.name), ifnull(m.importance, n.entity_type), m.memory_type, m.summary"
"""`_R_TEXT` to `_R_SUMMARY`: a memory's content, importance, type and summary, or an
entity's name and type (`nodes.view_joins` joins one of the two rows at most)."""


_R_START_SCOPE = _R_TYPE
"""Where the row of `edges_reached_from_id`'s node has its scope, whatever scopes are read:
the statement does not test it (the caller does)."""


def _start_row(scoped: bool) -> str:
    """The row of `edges_reached_from_id`'s node: its view where the others have their far
    end's (its key in `_R_FAR`), its scope in `_R_START_SCOPE`."""
    return (
        f"SELECT NULL, NULL, s.scope, {', '.join(['NULL'] * 5)}, s.pk, s.id, s.label, s.props, s.created_at, "
        f"s.updated_at, {_KIND_COLUMNS}, {_START_WAY}{', NULL, s.scope' if scoped else ''} "
        f"FROM node s {view_joins('s', 'm', 'n')} WHERE s.id = ?"
    )


def _reached_view(r: Sequence[Any], scope: str | None) -> Node:
    """The far end's view of an `edges_reached` row (or the start node's, of its row);
    `scope` is the one scope read, if one was."""
    label = r[_R_LABEL]
    props = view_props(label, r[_R_TEXT], r[_R_NUMBER], r[_R_MEMORY_TYPE], r[_R_SUMMARY], r[_R_FAR_PROPS])
    return node_of(
        r[_R_FAR],
        r[_R_FAR_ID],
        r[_R_FAR_SCOPE] if scope is None else scope,
        label,
        props,
        r[_R_FAR_CREATED],
        r[_R_FAR_UPDATED],
    )


# (the directions that take this way, the far end's alias, the near end's and the far end's columns)
_REACHING = ((("out", "both"), "d", "src", "dst"), (("in", "both"), "s", "dst", "src"))
_AMONG_LISTED = 64
"""The most nodes `edges_among` tests an edge's target against (and `edges_walked` and
`edges_reached` leave out) as one text, a scan of it per edge; more go through a b-tree
of them, built once a statement."""
_LEFT_AS_JSON = 1
_LEFT_AS_TEXT = 2
"""How `edges_walked`'s and `edges_reached`'s statements leave nodes out: those of one
JSON array (a b-tree of them built each run), or those of one text of keys between
commas, scanned per edge (`_AMONG_LISTED` of them at most)."""


_TYPES_MOST = 64
"""Relation types an existing-pair check lists (`open_edge_keys`); past these, it reads every type."""


@functools.lru_cache(maxsize=256)
def _edges_reached_sql(
    direction: Direction, start: int, valid: bool, scope_count: int | None, type_count: int, leaving: int
) -> str:
    """`edges_reached`'s statement from one node by its key, from several as one JSON
    array, or from one node by its id (`start`), kept by shape as `_edges_of_sql`'s (a
    traversal asks for a few shapes, where the text was built anew every hop). Its
    parameters, once a way: the node (its key, the array or its id); the validity instant
    twice; the scopes twice; the edge types; the nodes left out (`_LEFT_AS_TEXT` or
    `_LEFT_AS_JSON`), tested on the edge's far column before the far end and its view are
    looked up. From an id, the node's own row comes first (`_START_ROW`, its id once more
    the first parameter).

    Lists on the right of `IN` made SQLite build a b-tree of them on every run: of the
    frontier, each way, and of the nodes left out. A two-hop traversal's second hop
    built three, which cost more than its look-ups."""
    scoped = scope_count != 1
    parts: list[str] = [_start_row(scoped)] if start == _FROM_ID else []
    for way, (directions, far, near_end, far_end) in enumerate(_REACHING):
        if direction not in directions:
            continue
        part = _reaching(way, far, near_end, far_end, start, scoped)
        if valid:
            part += " AND e.valid_from <= ? AND (e.valid_to IS NULL OR e.valid_to > ?)"
        if scope_count is not None:
            listed = marks(scope_count)
            part += f" AND e.scope IN ({listed}) AND {far}.scope IN ({listed})"
        if type_count:
            part += f" AND e.type IN ({marks(type_count)})"
        if leaving == _LEFT_AS_TEXT:
            part += f" AND instr(?, ',' || e.{far_end} || ',') = 0"
        elif leaving == _LEFT_AS_JSON:
            part += f" AND e.{far_end} NOT IN (SELECT value FROM json_each(?))"
        parts.append(part)
    return " UNION ALL ".join(parts)


_PK = attrgetter("pk")
# `edges_reached`'s rows in edge order, out before in.
_EDGE_AND_WAY = itemgetter(_R_PK, _R_WAY)


def _visible(count: int) -> str:
    """`edge_visible` where both ends are joined already (`_EDGE_FROM`): their scopes come
    from the join, not from a lookup of each end again (a 2-hop traversal read each end
    of every edge three times)."""
    listed = marks(count)
    return f"e.scope IN ({listed}) AND s.scope IN ({listed}) AND d.scope IN ({listed})"


@functools.lru_cache(maxsize=256)
def _edges_of_sql(direction: Direction, count: int, valid: bool, scope_count: int | None, type_count: int) -> str:
    """`edges_of`'s statement for `count` nodes: two indexed lookups (edge_src, edge_dst)
    rather than one OR, which could scan, both ways in one statement as a UNION ALL. Its
    parameters: the nodes then the filters', once a way. Kept by shape: a look-up or a walk
    asks for the same few shapes every call, and building the text cost about 3 us."""
    filters = ""
    if valid:
        filters += " AND e.valid_from <= ? AND (e.valid_to IS NULL OR e.valid_to > ?)"
    if scope_count is not None:
        filters += f" AND {_visible(scope_count)}"
    if type_count:
        filters += f" AND e.type IN ({marks(type_count)})"
    listed = marks(count)
    return " UNION ALL ".join(
        f"SELECT {_EDGE_COLUMNS} FROM {_EDGE_FROM} WHERE e.{end} IN ({listed}){filters}" for end in _ENDS[direction]
    )


def around_ways(near: str, valid: str, scopes: str, several: bool) -> list[str]:
    """The two ways of `edges_around`'s statement (and `entity_around`'s): the edges whose
    near end is `near` (SQL: a list of parameters, or one node's pk) leaving it (their
    targets joined) and entering it (their sources joined), valid at the instant `valid`
    stands for (twice; no test when empty), in the scopes `scopes` lists."""
    filters = f" AND e.valid_from <= {valid} AND (e.valid_to IS NULL OR e.valid_to > {valid})" if valid else ""
    return [
        "SELECT e.pk, e.src, e.dst, e.valid_from, e.valid_to, e.created_at, e.id, e.type, "
        f"{'e.scope, ' if several else ''}e.props, {far}.id, {far}.label, {'k.scope, ' if several else ''}k.name "
        f"FROM edge e JOIN node {far} ON {far}.pk = e.{far_end} "
        f"LEFT JOIN entity k ON k.node = CASE WHEN {far}.label = '{ENTITY}' THEN {far}.pk END "
        f"WHERE e.{near_end} {near}{filters} AND e.scope IN ({scopes}) AND {far}.scope IN ({scopes})"
        for far, far_end, near_end in (("d", "dst", "src"), ("s", "src", "dst"))
    ]


@functools.lru_cache(maxsize=64)
def _edges_around_sql(count: int, valid: bool, scope_count: int) -> str:
    """`edges_around`'s statement for `count` nodes: the edges leaving them (their targets
    joined) and entering them (their sources joined), each through its end's index, then
    the nodes' access rows (the node's pk in the edge's pk column, no source, the count and
    last read in `valid_from` and `valid_to`). The far end's entity row is joined by its
    label, as a node view's (`view_joins`). Its parameters: the nodes, then the validity
    instant twice and the scopes twice, once a way; then the nodes again.

    Which way a row was found is not a column: the nodes the caller gave tell (an edge
    leaving one of them was found leaving it). Nor, when one scope is read, are the edge's
    and the far entity's scopes: they can only be that one. Each column costs a call into
    SQLite and a value built for every row (a detailed look-up reads a few dozen)."""
    listed = marks(count)
    ways = around_ways(f"IN ({listed})", "?" if valid else "", marks(scope_count), scope_count > 1)
    padding = ", NULL" * (9 if scope_count > 1 else 7)
    access = f"SELECT node, NULL, NULL, count, last_at{padding} FROM node_access WHERE node IN ({listed})"
    return " UNION ALL ".join([*ways, access])


_WAYS = (("out", "both"), ("in", "both"))
"""The directions that follow an edge out of its source (way 0) and into its target (way 1)."""


@functools.lru_cache(maxsize=256)
def _edges_walked_sql(
    direction: Direction, count: int, valid: bool, scope_count: int, type_count: int, entered: bool, leaving: int
) -> str:
    """`edges_walked`'s statement for `count` nodes (0: any number, as one JSON array the
    statement starts from, each node's edges then looked up): for each way the direction
    takes, the edges leaving them (way 0, their targets joined) or entering them (way 1,
    their sources joined), each through its end's index, with the far end's id, label and
    scope and, when `entered`, whether an edge of the type asked about enters it (through
    edge_dst, stopping at the first). Its parameters, once a way: the type asked about,
    the instant it is asked at twice and the scopes twice (when `entered`); the nodes (or
    their array); the validity instant twice; the scopes twice; the edge types; the nodes
    left out (`_LEFT_AS_JSON` or `_LEFT_AS_TEXT`).

    Several nodes go in as an array rather than a list on the right of `IN`: SQLite built
    a b-tree of such a list for each run, as it does of the nodes left out as an array,
    and at 10,000 entities the four b-trees of a two-hop walk's second hop cost more than
    its look-ups."""
    scopes = marks(scope_count)
    filters = " AND e.valid_from <= ? AND (e.valid_to IS NULL OR e.valid_to > ?)" if valid else ""
    filters += f" AND e.scope IN ({scopes}) AND {{far}}.scope IN ({scopes})"
    if type_count:
        filters += f" AND e.type IN ({marks(type_count)})"
    if leaving == _LEFT_AS_JSON:
        filters += " AND {far}.pk NOT IN (SELECT value FROM json_each(?))"
    elif leaving == _LEFT_AS_TEXT:
        filters += " AND instr(?, ',' || e.{far_end} || ',') = 0"
    flag = (
        "EXISTS (SELECT 1 FROM edge x JOIN node xs ON xs.pk = x.src WHERE x.dst = {far}.pk AND x.type = ? "
        "AND x.valid_from <= ? AND (x.valid_to IS NULL OR x.valid_to > ?) "
        f"AND x.scope IN ({scopes}) AND xs.scope IN ({scopes}))"
        if entered
        else "0"
    )
    # With one scope, the edge's and the far node's scopes are left out: they can only be that one.
    scope, far_scope = ("", "") if scope_count == 1 else ("e.scope, ", "{far}.scope, ")
    # From one node, in one scope, which way a row was found is not a column either: an edge
    # leaving that node was found leaving it (a loop, either way, reaches the same node).
    tagged = scope_count > 1 or count != 1
    ways = [
        f"SELECT {f'{way}, ' if tagged else ''}e.pk, e.src, e.dst, e.valid_from, e.valid_to, e.created_at, e.id, "
        f"e.type, {scope}e.props, "
        f"{far}.id, {far}.label, {far_scope.format(far=far)}{flag.format(far=far)} "
        f"FROM {'' if count else KEYS_FIRST}edge e JOIN node {far} ON {far}.pk = e.{far_end} "
        f"WHERE e.{near_end} {f'IN ({marks(count)})' if count else '= j.value'}"
        f"{filters.format(far=far, far_end=far_end)}"
        for way, far, far_end, near_end in ((0, "d", "dst", "src"), (1, "s", "src", "dst"))
        if direction in _WAYS[way]
    ]
    return " UNION ALL ".join(ways)


def _walked_rows(
    rows: list[Any], ends: Mapping[int, str], found: dict[int, Edge], reached: dict[int, NodeReached]
) -> None:
    """`edges_walked`'s rows of several scopes: the edges into `found`, the far ends into `reached`."""
    for (
        way,
        pk,
        src,
        dst,
        valid_from,
        valid_to,
        created_at,
        edge_id,
        kind,
        scope,
        props,
        far_id,
        label,
        far_scope,
        entered,
    ) in rows:
        # Made as a tuple is, without the named tuple's `__new__` in Python.
        reached[dst if way == 0 else src] = _new_tuple(NodeReached, (far_id, label, far_scope, bool(entered)))
        if pk not in found:
            found[pk] = edge_of(
                pk,
                edge_id,
                ends[src] if way == 0 else far_id,
                far_id if way == 0 else ends[dst],
                kind,
                scope,
                {} if props == "{}" else props_of(props),
                valid_from,
                valid_to,
                created_at,
                src,
                dst,
            )


def _walked_rows_of_one_scope(
    rows: list[Any], scope: str, ends: Mapping[int, str], found: dict[int, Edge], reached: dict[int, NodeReached]
) -> None:
    """`_walked_rows` of rows without the scope columns, all of `scope`."""
    for way, pk, src, dst, valid_from, valid_to, created_at, edge_id, kind, props, far_id, label, entered in rows:
        reached[dst if way == 0 else src] = _new_tuple(NodeReached, (far_id, label, scope, bool(entered)))
        if pk not in found:
            found[pk] = edge_of(
                pk,
                edge_id,
                ends[src] if way == 0 else far_id,
                far_id if way == 0 else ends[dst],
                kind,
                scope,
                {} if props == "{}" else props_of(props),
                valid_from,
                valid_to,
                created_at,
                src,
                dst,
            )


def _walked_rows_from_one_node(
    rows: list[Any], scope: str, node: int, node_id: str, found: dict[int, Edge], reached: dict[int, NodeReached]
) -> None:
    """`_walked_rows_of_one_scope` of the rows of one node's hop, without the way column."""
    for pk, src, dst, valid_from, valid_to, created_at, edge_id, kind, props, far_id, label, entered in rows:
        leaving = src == node
        reached[dst if leaving else src] = _new_tuple(NodeReached, (far_id, label, scope, bool(entered)))
        if pk not in found:
            found[pk] = edge_of(
                pk,
                edge_id,
                node_id if leaving else far_id,
                far_id if leaving else node_id,
                kind,
                scope,
                {} if props == "{}" else props_of(props),
                valid_from,
                valid_to,
                created_at,
                src,
                dst,
            )


_new_tuple = tuple.__new__


_INSERT_EDGES_HEAD = "INSERT INTO edge (id, src, dst, type, scope, props, valid_from, valid_to, created_at) VALUES "
_INSERT_EDGES_MOST = 128
# `insert_edges`' statements by rows written: a batch goes in chunks of 128, 64, ..., 1
# rows, a handful of statement texts, each prepared once.
_INSERT_EDGES = {
    1 << k: _INSERT_EDGES_HEAD + ",".join(["(?, ?, ?, ?, ?, ?, ?, NULL, ?)"] * (1 << k))
    for k in range(_INSERT_EDGES_MOST.bit_length())
}


def _props_text(props: Props) -> str:
    """An edge's properties as stored: most edges have none, and their text is a constant
    rather than an encoder's call per relation written."""
    return dumps(dict(props)) if props else "{}"


def _pairs_reached(rows: list[Any], ends: Mapping[int, str], scope: str | None) -> list[tuple[Edge, Node]]:
    """`edges_reached`'s pairs of its statement's rows (those of edges), in edge order, out
    before in; the near end's id from `ends`; `scope` the one scope read, if one was."""
    rows.sort(key=_EDGE_AND_WAY)
    return [
        (
            edge_of(
                r[_R_PK],
                r[_R_ID],
                ends[r[_R_NEAR]] if r[_R_WAY] == 0 else r[_R_FAR_ID],
                r[_R_FAR_ID] if r[_R_WAY] == 0 else ends[r[_R_NEAR]],
                r[_R_TYPE],
                r[_R_SCOPE] if scope is None else scope,
                {} if r[_R_PROPS] == "{}" else props_of(r[_R_PROPS]),
                r[_R_FROM],
                r[_R_TO],
                r[_R_CREATED],
                r[_R_NEAR] if r[_R_WAY] == 0 else r[_R_FAR],
                r[_R_FAR] if r[_R_WAY] == 0 else r[_R_NEAR],
            ),
            _reached_view(r, scope),
        )
        for r in rows
    ]


def _one_scope(scopes: Sequence[str] | None) -> str | None:
    """The scope of every row `edges_reached` reads in `scopes`, when they name one alone."""
    return scopes[0] if scopes is not None and len(scopes) == 1 else None


class AroundRows:
    """`edges_around`'s result, read from its statement's rows (and `entity_around`'s)."""

    __slots__ = ("access", "found", "keys", "labels", "nodes", "one")

    def __init__(self, nodes: Mapping[int, str], scopes: Sequence[str]) -> None:
        self.nodes = nodes
        self.found: dict[int, Edge] = {}
        self.labels: dict[int, str] = {}
        self.keys: dict[int, EntityKey] = {}
        self.access: dict[int, AccessStats] = {}
        # One scope read: the rows leave the scopes out (`_edges_around_sql`).
        self.one = scopes[0] if len(scopes) == 1 else None

    def read(self, rows: Iterable[Sequence[Any]]) -> None:
        nodes, found, labels, keys, access, one = self.nodes, self.found, self.labels, self.keys, self.access, self.one
        for row in rows:
            if one is None:
                pk, src, dst, valid_from, valid_to, created_at, edge_id, kind, scope, props, far_id, label = row[:12]
                key_scope, name = row[12], row[13]
            else:
                pk, src, dst, valid_from, valid_to, created_at, edge_id, kind, props, far_id, label, name = row
                scope = key_scope = one
            if src is None:
                access[pk] = AccessStats(valid_from, valid_to)
                continue
            if pk in found:
                continue
            # Found leaving one of the nodes when its source is one (its other end may be
            # one too: then both ids are known already).
            if src in nodes:
                far = dst
                src_id, dst_id = nodes[src], nodes.get(dst, far_id)
            else:
                far = src
                src_id, dst_id = far_id, nodes[dst]
            found[pk] = edge_of(
                pk,
                edge_id,
                src_id,
                dst_id,
                kind,
                scope,
                {} if props == "{}" else props_of(props),
                valid_from,
                valid_to,
                created_at,
                src,
                dst,
            )
            if far not in nodes:
                labels[far] = label
                if name is not None:
                    keys[far] = EntityKey(far, far_id, key_scope, name)

    def result(self) -> EdgesAround:
        found = self.found
        return EdgesAround([found[pk] for pk in sorted(found)], self.labels, self.keys, self.access)


class EdgeReads:
    conn: sqlite3.Connection

    def edges_of_types(
        self, types: Sequence[str] | None, scopes: Sequence[str], *, valid_at: int | None, limit: int
    ) -> list[Edge]:
        """Edges of these types (every type for None) in `scopes`, valid at `valid_at` unless
        it is None, newest first."""
        typed = f"e.type IN ({marks(len(types))}) AND " if types is not None else ""
        valid = " AND e.valid_from <= ? AND (e.valid_to IS NULL OR e.valid_to > ?)" if valid_at is not None else ""
        return self._edges(
            f"{typed}{edge_visible('e', len(scopes))}{valid} ORDER BY e.pk DESC LIMIT ?",
            [
                *(types or ()),
                *edge_visible_params(scopes),
                *([valid_at, valid_at] if valid_at is not None else []),
                limit,
            ],
        )

    def _edges(self, where: str, params: Sequence[Any]) -> list[Edge]:
        return self._edge_rows(f"SELECT {_EDGE_COLUMNS} FROM {_EDGE_FROM} WHERE {where}", params)

    def _edge_rows(self, sql: str, params: Sequence[Any]) -> list[Edge]:
        """The edges a statement selecting `_EDGE_COLUMNS` finds."""
        rows = self.conn.execute(sql, params).fetchall()
        # Positional, in `Edge`'s field order (that of `_EDGE_COLUMNS`): a traversal builds
        # dozens of these per call, and keywords cost a fifth more.
        return [
            edge_of(
                r[0],
                r[1],
                r[2],
                r[3],
                r[4],
                r[5],
                {} if r[6] == "{}" else props_of(r[6]),
                r[7],
                r[8],
                r[9],
                r[10],
                r[11],
            )
            for r in rows
        ]

    def edge_by_pk(self, pk: int) -> Edge | None:
        found = self._edges("e.pk = ?", [pk])
        return found[0] if found else None

    def edge_by_id(self, edge_id: str) -> Edge | None:
        found = self._edges("e.id = ?", [edge_id])
        return found[0] if found else None

    def find_edges(self, src: int, dst: int, edge_type: str, *, open_only: bool = False) -> list[Edge]:
        """Edges of this type from `src` to `dst`, oldest first; with `open_only`, those not closed."""
        where = "e.src = ? AND e.dst = ? AND e.type = ?"
        if open_only:
            where += " AND e.valid_to IS NULL"
        return self._edges(where + " ORDER BY e.pk", [src, dst, edge_type])

    def open_edge_keys(self, keys: Sequence[tuple[int, int, str]]) -> set[tuple[int, int, str]]:
        """Which of these (src, dst, type) have an open edge: per chunk of pairs, one
        statement whose sources and targets go in as two IN lists (`padded`), the pairs and
        types told apart here (as JSON text would cut a type at a U+0000). It reads an index
        of one end per pair's end, as a JSON array of the pairs did, at a third of the cost
        (0.1 ms for 100 pairs, not 0.25: no JSON to decode in SQLite). The types go in as a
        third list, so that the index walked reads only the end's edges of those types:
        100 new relations to entities with a relation or two each, 78 -> 41 us. (Past
        `_TYPES_MOST` types, which a call of relations of one or a few types never has,
        every type is read.)"""
        if not keys:
            return set()
        wanted = set(keys)
        found: set[tuple[int, int, str]] = set()
        distinct = list(dict.fromkeys(edge_type for _, _, edge_type in keys))
        types = padded(distinct) if len(distinct) <= _TYPES_MOST else []
        of_types = f" AND e.type IN ({marks(len(types))})" if types else ""
        for chunk in chunks(list({(src, dst): None for src, dst, _ in keys}), 256):
            sources = padded(list(dict.fromkeys(src for src, _ in chunk)))
            targets = padded(list(dict.fromkeys(dst for _, dst in chunk)))
            rows = self.conn.execute(
                f"SELECT e.src, e.dst, e.type FROM edge e WHERE e.src IN ({marks(len(sources))}) "
                f"AND e.dst IN ({marks(len(targets))}){of_types} AND e.valid_to IS NULL",
                [*sources, *targets, *types],
            )
            found.update(key for key in rows if key in wanted)
        return found

    def edges_of(
        self,
        pks: Sequence[int],
        direction: Direction,
        *,
        valid_at: int | None = None,
        scopes: Sequence[str] | None = None,
        edge_types: Sequence[str] | None = None,
    ) -> list[Edge]:
        """Edges leaving (`out`), entering (`in`) or touching (`both`) any of `pks`."""
        if not pks:
            return []
        extra: list[Any] = []
        if valid_at is not None:
            extra += [valid_at, valid_at]
        if scopes is not None:
            extra += edge_visible_params(scopes)
        if edge_types:
            extra += list(edge_types)
        found: dict[int, Edge] = {}  # an edge between two of `pks` is found both ways: kept once
        ways = len(_ENDS[direction])
        for chunk in chunks(pks, 400):
            sql = _edges_of_sql(
                direction,
                len(chunk),
                valid_at is not None,
                None if scopes is None else len(scopes),
                len(edge_types) if edge_types else 0,
            )
            for edge in self._edge_rows(sql, [*chunk, *extra] * ways):
                found[edge.pk] = edge
        return [found[k] for k in sorted(found)]

    def edges_reached(
        self,
        ends: Mapping[int, str],
        direction: Direction,
        *,
        valid_at: int | None = None,
        scopes: Sequence[str] | None = None,
        edge_types: Sequence[str] | None = None,
        leaving_out: Collection[int] = (),
    ) -> list[tuple[Edge, Node]]:
        """One hop of a traversal in one statement (per 400 nodes): `edges_of`, each with
        the view of the end it reaches, one pair per way it is followed (an edge between
        two of `ends` twice), oldest edge first and leaving before entering; those that
        lead to a node of `leaving_out` are neither joined nor built."""
        if not ends:
            return []
        filters = self._reached_filters(valid_at, scopes, edge_types, leaving_out)
        ways = sum(direction in directions for directions, _, _, _ in _REACHING)
        leaving = 0 if not leaving_out else _LEFT_AS_JSON if len(leaving_out) > _AMONG_LISTED else _LEFT_AS_TEXT
        rows: list[Any] = []
        for chunk in chunks(list(ends), 400):
            # One node by a parameter (an equality to SQLite), several by their array.
            start = _FROM_KEYS if len(chunk) > 1 else _FROM_KEY
            sql = _edges_reached_sql(
                direction,
                start,
                valid_at is not None,
                None if scopes is None else len(scopes),
                len(edge_types) if edge_types else 0,
                leaving,
            )
            near = json_keys(chunk) if start == _FROM_KEYS else chunk[0]
            rows += self.conn.execute(sql, [near, *filters] * ways).fetchall()
        return _pairs_reached(rows, ends, _one_scope(scopes))

    def edges_reached_from_id(
        self,
        node_id: str,
        direction: Direction,
        *,
        valid_at: int | None = None,
        scopes: Sequence[str] | None = None,
        edge_types: Sequence[str] | None = None,
    ) -> tuple[Node | None, list[tuple[Edge, Node]]]:
        """`node_view_by_id` and `edges_reached` from that node in one statement: a
        traversal's start and first hop, a statement less than one each (a point read
        costs about as much as a short hop's statement)."""
        filters = self._reached_filters(valid_at, scopes, edge_types, ())
        sql = _edges_reached_sql(
            direction,
            _FROM_ID,
            valid_at is not None,
            None if scopes is None else len(scopes),
            len(edge_types) if edge_types else 0,
            0,
        )
        ways = sum(direction in directions for directions, _, _, _ in _REACHING)
        rows = self.conn.execute(sql, [node_id, *[node_id, *filters] * ways]).fetchall()
        if not rows or rows[0][_R_WAY] != _START_WAY:
            return None, []
        start = _reached_view(rows[0], rows[0][_R_START_SCOPE])
        return start, _pairs_reached(rows[1:], {start.pk: start.id}, _one_scope(scopes))

    @staticmethod
    def _reached_filters(
        valid_at: int | None,
        scopes: Sequence[str] | None,
        edge_types: Sequence[str] | None,
        leaving_out: Collection[int],
    ) -> list[Any]:
        """The parameters of `_edges_reached_sql`'s filters, once a way."""
        filters: list[Any] = []
        if valid_at is not None:
            filters += [valid_at, valid_at]
        if scopes is not None:
            filters += [*scopes, *scopes]
        if edge_types:
            filters += edge_types
        if len(leaving_out) > _AMONG_LISTED:
            filters.append(json_keys(leaving_out))
        elif leaving_out:
            filters.append(keys_text(leaving_out))
        return filters

    def edges_around(self, nodes: Mapping[int, str], *, valid_at: int | None, scopes: Sequence[str]) -> EdgesAround:
        """A detailed look-up's edges, their other ends' labels and keys, and its nodes'
        access statistics, in one statement (per 300 nodes)."""
        if not nodes or not scopes:
            return EdgesAround([], {}, {}, {})
        valid = [] if valid_at is None else [valid_at, valid_at]
        around = AroundRows(nodes, scopes)
        for chunk in chunks(list(nodes), 300):
            way_params = [*chunk, *valid, *scopes, *scopes]
            around.read(
                self.conn.execute(
                    _edges_around_sql(len(chunk), valid_at is not None, len(scopes)), [*way_params, *way_params, *chunk]
                ).fetchall()
            )
        return around.result()

    def edges_walked(
        self,
        ends: Mapping[int, str],
        direction: Direction,
        *,
        valid_at: int | None,
        scopes: Sequence[str],
        edge_types: Sequence[str] | None = None,
        entered_by: str | None = None,
        entered_at: int = 0,
        leaving_out: Collection[int] = (),
    ) -> EdgesWalked:
        """One hop of a walk, with what it needs of the nodes it reaches, in one statement
        (per 300 nodes)."""
        found: dict[int, Edge] = {}
        reached: dict[int, NodeReached] = {}
        if not ends or not scopes:
            return EdgesWalked([], reached)
        valid = [] if valid_at is None else [valid_at, valid_at]
        flag = [] if entered_by is None else [entered_by, entered_at, entered_at, *scopes, *scopes]
        types = list(edge_types) if edge_types else []
        left: list[str] = []
        leaving = 0
        if len(leaving_out) > _AMONG_LISTED:
            left, leaving = [json_keys(leaving_out)], _LEFT_AS_JSON
        elif leaving_out:
            left, leaving = [keys_text(leaving_out)], _LEFT_AS_TEXT
        ways = sum(direction in way for way in _WAYS)
        nodes_walked = list(ends)
        # A hop of at most 300 nodes (most) as it is, without a generator to slice it.
        for chunk in (nodes_walked,) if len(nodes_walked) <= 300 else chunks(nodes_walked, 300):
            # One node by `IN` (an equality to SQLite), several by their array.
            keyed = len(chunk) > 1
            sql = _edges_walked_sql(
                direction,
                0 if keyed else len(chunk),
                valid_at is not None,
                len(scopes),
                len(types),
                entered_by is not None,
                leaving,
            )
            nodes = [json_keys(chunk)] if keyed else chunk
            way_params = [*flag, *nodes, *valid, *scopes, *scopes, *types, *left]
            rows = self.conn.execute(sql, way_params * ways).fetchall()
            if len(scopes) == 1:
                # One scope read: the edge's and the far node's scopes can only be that one,
                # and are not columns (each costs a call into SQLite and a value built, for
                # every row).
                if keyed:
                    _walked_rows_of_one_scope(rows, scopes[0], ends, found, reached)
                else:
                    _walked_rows_from_one_node(rows, scopes[0], chunk[0], ends[chunk[0]], found, reached)
            else:
                _walked_rows(rows, ends, found, reached)
        return EdgesWalked([found[pk] for pk in sorted(found)], reached)

    def edges_among(self, pks: Sequence[int], *, valid_at: int | None = None) -> list[Edge]:
        """Edges whose both endpoints are in `pks`: those leaving each chunk of `pks`
        through edge_src, their targets checked against every one of `pks` in the statement,
        so that the edges leaving the walk are neither read nor built."""
        if not pks:
            return []
        valid = " AND e.valid_from <= ? AND (e.valid_to IS NULL OR e.valid_to > ?)" if valid_at is not None else ""
        if len(pks) <= _AMONG_LISTED:
            # A walk's few last nodes: the statement walks their keys (one JSON array) and
            # tests each edge's target against them as text. Lists of keys on the right of
            # `IN` made SQLite build a b-tree of them for each run, two here, which cost more
            # than the statement's look-ups (callgrind at 10,000 entities, five nodes and
            # no edge among them: 115 k -> 62 k instructions). The ends' nodes are joined
            # in that order, after the edge: joined as `_EDGE_FROM` joins them, SQLite read
            # each key's source node before its edges, for every key, most with no edge
            # among the others.
            keys = list(dict.fromkeys(pks))
            found = self._edge_rows(
                f"SELECT {_EDGE_COLUMNS} FROM {KEYS_FIRST}{_EDGE_FROM_AFTER} "
                f"WHERE e.src = j.value AND instr(?, ',' || e.dst || ',') > 0{valid}",
                [
                    json_keys(keys),
                    keys_text(keys),
                    *([valid_at, valid_at] if valid_at is not None else []),
                ],
            )
            found.sort(key=_PK)
            return found
        members = json_keys(pks)
        found = []
        for chunk in chunks(pks, 400):
            found += self._edges(
                f"e.src IN ({marks(len(chunk))}) AND e.dst IN (SELECT value FROM json_each(?)){valid}",
                [*chunk, members, *([valid_at, valid_at] if valid_at is not None else [])],
            )
        found.sort(key=_PK)
        return found


class EdgeWrites(EdgeReads):
    def insert_edge(
        self,
        edge_id: str,
        src: int,
        dst: int,
        edge_type: str,
        scope: str,
        props: Props,
        valid_from: int,
        at: int,
        *,
        pk: int | None = None,
    ) -> int:
        cur = self.conn.execute(
            "INSERT INTO edge (pk, id, src, dst, type, scope, props, valid_from, valid_to, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)",
            [pk, edge_id, src, dst, edge_type, scope, _props_text(props), valid_from, at],
        )
        return int(cur.lastrowid or 0)

    def insert_edges(self, rows: Sequence[NewEdgeRow]) -> list[int]:
        """New open edges, several rows a statement: 100 relations cost about 0.5 ms less this
        way than one statement each. A table with AUTOINCREMENT gives a statement's rows
        consecutive keys, the last of them its last inserted rowid."""
        pks: list[int] = []
        done = 0
        while done < len(rows):
            size = min(_INSERT_EDGES_MOST, 1 << ((len(rows) - done).bit_length() - 1))
            values: list[Any] = []
            for edge_id, src, dst, edge_type, scope, props, valid_from, at in rows[done : done + size]:
                values += (edge_id, src, dst, edge_type, scope, _props_text(props), valid_from, at)
            last = int(self.conn.execute(_INSERT_EDGES[size], values).lastrowid or 0)
            pks += range(last - size + 1, last + 1)
            done += size
        return pks

    def close_edge(self, pk: int, valid_to: int) -> None:
        self.conn.execute("UPDATE edge SET valid_to = ? WHERE pk = ?", [valid_to, pk])

    def delete_edge(self, pk: int) -> None:
        self.conn.execute("DELETE FROM edge WHERE pk = ?", [pk])
