"""Nodes as labels and properties, vectors and per-node history: the SQL behind the
property-graph face. Mixed into the store's read and write transactions.

A node's properties are what the property-graph face shows: a memory's `content` (and
its importance, type and summary when they are not the defaults), an entity's `name`
(and `entityType` when set), then the node's own stored properties.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from mnemodb.model.records import ENTITY, MEMORY, Change, Node, Props, Scalar, node_of
from mnemodb.store.base import (
    AccessStats,
    Coverage,
    EmbeddingChanges,
    NodeKey,
    NodeLabel,
    ScoredPk,
    StoredVector,
)
from mnemodb.store.sqlite.changes import CHANGE_COLUMNS, change_of
from mnemodb.store.sqlite.sql import chunks, dumps, fts_any, marks, padded

__all__ = ["NodeReads", "NodeWrites", "view_joins", "view_props"]


def _index_name(label: str, prop: str) -> str:
    digest = hashlib.sha256(f"{label}\x00{prop}".encode()).hexdigest()[:16]
    return f"node_prop_{digest}"


def _prop_path(prop: str) -> str:
    return '$."' + prop.replace('"', '""') + '"'


# Properties that live in a memory's or an entity's own columns: (table, column).
_FIELD_COLUMNS = {
    ("Memory", "importance"): ("memory", "importance"),
    ("Memory", "memory_type"): ("memory", "memory_type"),
    ("Memory", "summary"): ("memory", "summary"),
    ("Entity", "entityType"): ("entity", "entity_type"),
}

_VIEW_COLUMNS = (
    "n.pk, n.id, n.scope, n.label, n.props, n.created_at, n.updated_at, "
    "m.content, m.importance, m.memory_type, m.summary, e.name, e.entity_type"
)


def view_joins(node: str, memory: str, entity: str) -> str:
    """The joins of a node's view (`_VIEW_COLUMNS`) to its memory row, aliased `memory`,
    and its entity row, aliased `entity`: each table is searched only for a node of the
    label that has a row there. The engine writes a memory row for every Memory node and
    for no other, and an entity row likewise (an import refuses a record that breaks this),
    and no node changes its label. Joined on the pk alone, each node searched both tables,
    and the search of the table it has no row in read a page of it all the same: at
    100,000 entities of the topodb profile's benchmark, 2 of a one-hop traversal's 16
    pages read outside the page cache and 4 of a 2-hop's 38. The label picks the key,
    not a term beside it (`AND n.label = 'Memory'`): SQLite 3.40 searches the table first
    and tests such a term after, where a NULL key searches nothing."""
    return (
        f"LEFT JOIN memory {memory} ON {memory}.node = CASE WHEN {node}.label = '{MEMORY}' THEN {node}.pk END "
        f"LEFT JOIN entity {entity} ON {entity}.node = CASE WHEN {node}.label = '{ENTITY}' THEN {node}.pk END"
    )


_VIEW_FROM = f"node n {view_joins('n', 'm', 'e')}"


def view_props(
    label: str, text: str | None, number: Any, memory_type: str | None, summary: str | None, own: str | None
) -> dict[str, Scalar]:
    """A node's properties as the property-graph face shows them: a memory's (`label`
    MEMORY) `text` as its content, `number` as its importance, then its type and summary;
    an entity's `text` as its name and `number` as its type; then the node's own stored
    properties (`own`, their JSON text). `text` is None for a node with neither row. The
    one place that decides it, for every statement's column layout."""
    props: dict[str, Scalar] = {}
    if text is not None:
        if label == MEMORY:
            props["content"] = text
            if number:
                props["importance"] = number
            if memory_type is not None and memory_type != "general":
                props["memory_type"] = memory_type
            if summary is not None:
                props["summary"] = summary
        else:  # an entity: no other label has a row of its own
            props["name"] = text
            if number:
                props["entityType"] = number
    if own and own != "{}":
        for key, value in json.loads(own).items():
            props.setdefault(key, value)
    return props


def _view(row: Sequence[Any]) -> Node:
    if row[7] is not None:  # a memory
        props = view_props(MEMORY, row[7], row[8], row[9], row[10], row[4])
    else:
        props = view_props(ENTITY, row[11], row[12], None, None, row[4])
    return node_of(row[0], row[1], row[2], row[3], props, row[5], row[6])


def _same_scalar(shown: Any, value: str | int | bool) -> bool:
    """`shown` equals `value` with the same type (True is not 1)."""
    return type(shown) is type(value) and shown == value


class NodeReads:
    conn: sqlite3.Connection

    def node_by_id(self, node_id: str) -> Node | None:
        row = self.conn.execute(
            "SELECT pk, id, scope, label, props, created_at, updated_at FROM node WHERE id = ?", [node_id]
        ).fetchone()
        if row is None:
            return None
        return Node(row[0], row[1], row[2], row[3], json.loads(row[4]), row[5], row[6])

    def nodes_by_ids(self, node_ids: Sequence[str]) -> dict[str, Node]:
        out: dict[str, Node] = {}
        for chunk in chunks(list(dict.fromkeys(node_ids)), 256):
            # A batch of links names a different number of ends each call: `padded`.
            listed = padded(chunk)
            for row in self.conn.execute(
                "SELECT pk, id, scope, label, props, created_at, updated_at FROM node "
                f"WHERE id IN ({marks(len(listed))})",
                listed,
            ):
                # Most nodes a batch links have no properties of their own: no decoder's call.
                props = {} if row[4] == "{}" else json.loads(row[4])
                out[row[1]] = Node(row[0], row[1], row[2], row[3], props, row[5], row[6])
        return out

    def node_keys_by_ids(self, node_ids: Sequence[str]) -> dict[str, NodeKey]:
        out: dict[str, NodeKey] = {}
        for chunk in chunks(list(dict.fromkeys(node_ids)), 256):
            listed = padded(chunk)  # a different number of ends each call
            for row in self.conn.execute(
                f"SELECT pk, id, scope, label FROM node WHERE id IN ({marks(len(listed))})", listed
            ):
                out[row[1]] = NodeKey(*row)
        return out

    def node_pk(self, node_id: str) -> int | None:
        row = self.conn.execute("SELECT pk FROM node WHERE id = ?", [node_id]).fetchone()
        return None if row is None else int(row[0])

    def labels_of(self, pks: Sequence[int]) -> dict[int, NodeLabel]:
        """Node pk -> (label, scope), for the pks that exist."""
        out: dict[int, NodeLabel] = {}
        for chunk in chunks(pks, 500):
            for pk, label, scope in self.conn.execute(
                f"SELECT pk, label, scope FROM node WHERE pk IN ({marks(len(chunk))})", chunk
            ):
                out[pk] = NodeLabel(label, scope)
        return out

    def node_views(self, pks: Sequence[int]) -> dict[int, Node]:
        out: dict[int, Node] = {}
        for start in range(0, len(pks), 400):
            chunk = pks[start : start + 400]
            for row in self.conn.execute(
                f"SELECT {_VIEW_COLUMNS} FROM {_VIEW_FROM} WHERE n.pk IN ({marks(len(chunk))})", chunk
            ):
                out[row[0]] = _view(row)
        return out

    def node_view_by_id(self, node_id: str) -> Node | None:
        row = self.conn.execute(f"SELECT {_VIEW_COLUMNS} FROM {_VIEW_FROM} WHERE n.id = ?", [node_id]).fetchone()
        return None if row is None else _view(row)

    def nodes_with_prop(self, label: str, prop: str, value: str | int | bool, scopes: Sequence[str]) -> list[int]:
        """Nodes of `label` in `scopes` whose property equals `value` exactly (type included)."""
        scope_marks = marks(len(scopes))
        if label == "Entity" and prop == "name":
            if not isinstance(value, str):
                return []
            rows = self.conn.execute(
                f"SELECT node FROM entity WHERE name = ? AND scope IN ({scope_marks}) ORDER BY node",
                [value, *scopes],
            ).fetchall()
            return [r[0] for r in rows]
        if label == "Memory" and prop == "content":
            if not isinstance(value, str):
                return []
            digest = hashlib.sha256(value.encode("utf-8")).hexdigest()
            rows = self.conn.execute(
                f"SELECT node FROM memory WHERE hash = ? AND scope IN ({scope_marks}) ORDER BY node",
                [digest, *scopes],
            ).fetchall()
            return [r[0] for r in rows]
        column = _FIELD_COLUMNS.get((label, prop))
        found: list[int] = []
        if column is not None:
            # A memory's or entity's own field, shown as a property: candidates from its
            # column (the caller checks each against the node's view).
            table, name = column
            rows = self.conn.execute(
                f"SELECT node FROM {table} WHERE {name} = ? AND scope IN ({scope_marks}) ORDER BY node",
                [value, *scopes],
            ).fetchall()
            found = [r[0] for r in rows]
            # The column holds values the view leaves out (the defaults) and compares True
            # as 1: keep only the nodes whose view shows exactly this value, type included.
            views = self.node_views(found)
            found = [pk for pk in found if _same_scalar(views[pk].props.get(prop), value)]
        # Label and path are written into the statement (escaped) so that it matches the
        # partial expression index `ensure_prop_index` made for this pair.
        path = _prop_path(prop).replace("'", "''")
        literal = label.replace("'", "''")
        rows = self.conn.execute(
            f"SELECT pk, json_type(props, '{path}') FROM node WHERE label = '{literal}' "
            f"AND json_extract(props, '{path}') = ? AND scope IN ({scope_marks}) ORDER BY pk",
            [value, *scopes],
        ).fetchall()
        wanted = (
            "true" if value is True else "false" if value is False else "integer" if isinstance(value, int) else "text"
        )
        matched = [pk for pk, kind in rows if kind == wanted]
        return sorted({*found, *matched}) if found else matched

    def node_text_search(self, terms: Sequence[str], scopes: Sequence[str], limit: int) -> list[ScoredPk]:
        """Nodes whose declared text matches any of `terms`, best first (the score is
        FTS5's bm25 negated)."""
        if not terms or limit <= 0:
            return []
        # `rank` is the bm25 column here, not FTS5's own: SQLite's top-N sort orders it,
        # and the rowid makes equal scores come in ascending pk by definition.
        rows = self.conn.execute(
            "SELECT t.rowid, bm25(node_text) AS rank FROM node_text t JOIN node n ON n.pk = t.rowid "
            f"WHERE node_text MATCH ? AND n.scope IN ({marks(len(scopes))}) ORDER BY rank, t.rowid LIMIT ?",
            [fts_any(terms), *scopes, limit],
        ).fetchall()
        return [ScoredPk(int(r[0]), -float(r[1])) for r in rows]

    def node_pks_with_labels(self, labels: Sequence[str]) -> list[int]:
        if not labels:
            return []
        return [
            r[0]
            for r in self.conn.execute(
                f"SELECT pk FROM node WHERE label IN ({marks(len(labels))}) ORDER BY pk", list(labels)
            )
        ]

    def access_of(self, pk: int) -> AccessStats:
        row = self.conn.execute("SELECT count, last_at FROM node_access WHERE node = ?", [pk]).fetchone()
        return AccessStats(0, 0) if row is None else AccessStats(int(row[0]), int(row[1]))

    def access_counts(self, pks: Sequence[int]) -> dict[int, int]:
        """Times each of `pks` was read (absent: never)."""
        out: dict[int, int] = {}
        for start in range(0, len(pks), 400):
            chunk = list(pks[start : start + 400])
            out.update(
                self.conn.execute(f"SELECT node, count FROM node_access WHERE node IN ({marks(len(chunk))})", chunk)
            )
        return out

    def embedding_dim(self, model: str, *, excluding: int | None = None) -> int | None:
        """The length of `model`'s vectors (None when it has none), not counting node `excluding`'s."""
        row = self.conn.execute(
            "SELECT dim FROM embedding WHERE model = ? AND node IS NOT ? LIMIT 1", [model, excluding]
        ).fetchone()
        return None if row is None else int(row[0])

    def embeddings_of_model(self, model: str, *, since: int | None = None) -> list[StoredVector]:
        """(node pk, node id, scope, float32 vector) of every embedding under `model`, or with
        `since` of those written after that generation."""
        later = "" if since is None else "AND b.generation > ? "
        return [
            StoredVector(r[0], r[1], r[2], bytes(r[3]))
            for r in self.conn.execute(
                "SELECT b.node, n.id, n.scope, b.vector FROM embedding b JOIN node n ON n.pk = b.node "
                f"WHERE b.model = ? {later}ORDER BY b.node",
                [model] if since is None else [model, since],
            )
        ]

    def embedded_nodes(self, model: str) -> list[int]:
        """The pks of the nodes with a `model` vector."""
        return [r[0] for r in self.conn.execute("SELECT node FROM embedding WHERE model = ?", [model])]

    def node_versions(self, pks: Sequence[int]) -> dict[int, int]:
        """How many times each of `pks` has changed (see schema migration 9)."""
        out: dict[int, int] = {}
        for start in range(0, len(pks), 400):
            chunk = list(pks[start : start + 400])
            out.update(self.conn.execute(f"SELECT pk, version FROM node WHERE pk IN ({marks(len(chunk))})", chunk))
        return out

    def embedding_changes(self, model: str) -> EmbeddingChanges:
        """(`model`'s generation, how many of its vectors were ever removed)."""
        row = self.conn.execute(
            "SELECT generation, removals FROM embedding_generation WHERE model = ?", [model]
        ).fetchone()
        return EmbeddingChanges(0, 0) if row is None else EmbeddingChanges(int(row[0]), int(row[1]))

    def unembedded(self, model: str, labels: Sequence[str], limit: int, *, after: int = 0) -> list[int]:
        """Nodes of `labels` past pk `after` with no `model` vector, or with one made before
        their last change, in pk order."""
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT n.pk FROM node n LEFT JOIN embedding b ON b.node = n.pk AND b.model = ? "
                f"WHERE n.pk > ? AND n.label IN ({marks(len(labels))}) "
                "AND (b.node IS NULL OR b.node_version < n.version) ORDER BY n.pk LIMIT ?",
                [model, after, *labels, limit],
            )
        ]

    def embedding_coverage(self, model: str, labels: Sequence[str]) -> Coverage:
        """(nodes of `labels` whose `model` vector is current, nodes of `labels`)."""
        row = self.conn.execute(
            "SELECT COUNT(*), COUNT(b.node) FILTER (WHERE b.node_version >= n.version) "
            "FROM node n LEFT JOIN embedding b ON b.node = n.pk AND b.model = ? "
            f"WHERE n.label IN ({marks(len(labels))})",
            [model, *labels],
        ).fetchone()
        return Coverage(int(row[1]), int(row[0]))

    def changes_of(self, target: str) -> list[Change]:
        """Every change-log entry about one node or edge, oldest first."""
        return [
            change_of(r)
            for r in self.conn.execute(
                f"SELECT {CHANGE_COLUMNS} FROM change_log WHERE target = ? ORDER BY seq", [target]
            )
        ]


class NodeWrites(NodeReads):
    def insert_node(self, node_id: str, scope: str, label: str, props: Props, at: int, *, pk: int | None = None) -> int:
        cur = self.conn.execute(
            "INSERT INTO node (pk, id, scope, label, props, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [pk, node_id, scope, label, dumps(dict(props)), at, at],
        )
        return int(cur.lastrowid or 0)

    def touch_node(self, pk: int, at: int) -> None:
        self.conn.execute("UPDATE node SET updated_at = ? WHERE pk = ?", [at, pk])

    def delete_node(self, pk: int) -> None:
        # Memory, tags, entity, observations, edges, embeddings and access rows go by cascade.
        self.conn.execute("DELETE FROM node WHERE pk = ?", [pk])

    def set_embedding(
        self, pk: int, model: str, vector: bytes, dim: int, at: int, *, node_version: int | None = None
    ) -> None:
        if self.conn.execute("SELECT 1 FROM node WHERE pk = ?", [pk]).fetchone() is None:
            return  # no such node: nothing changes (the contract's rule for missing keys)
        # Without `node_version`, the vector is of the node as it is now (a client's own).
        made_at = "(SELECT version FROM node WHERE pk = ?)" if node_version is None else "?"
        self.conn.execute(
            "INSERT INTO embedding (node, model, dim, vector, updated_at, node_version) "
            f"VALUES (?, ?, ?, ?, ?, {made_at}) "
            "ON CONFLICT (node, model) DO UPDATE SET dim = excluded.dim, vector = excluded.vector, "
            "updated_at = excluded.updated_at, node_version = excluded.node_version",
            [pk, model, dim, vector, at, pk if node_version is None else node_version],
        )

    def set_node_text(self, pk: int, text: str | None) -> None:
        self.conn.execute("DELETE FROM node_text WHERE rowid = ?", [pk])
        if text:
            # Only for a node that exists: text kept for a free pk would show up on the node
            # that takes it later (a load keeps free pks).
            self.conn.execute(
                "INSERT INTO node_text (rowid, text) SELECT ?, ? WHERE EXISTS (SELECT 1 FROM node WHERE pk = ?)",
                [pk, text, pk],
            )

    def clear_node_text(self) -> None:
        self.conn.execute("DELETE FROM node_text")

    def ensure_prop_index(self, label: str, prop: str) -> None:
        """An index for equality lookups of one (label, property) pair kept in `props`."""
        if (label, prop) in (("Entity", "name"), ("Memory", "content")):
            return  # these live in indexed columns already
        name = _index_name(label, prop)
        literal = label.replace("'", "''")
        path = _prop_path(prop).replace("'", "''")
        self.conn.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON node (json_extract(props, '{path}')) WHERE label = '{literal}'"
        )

    def replace_node_props(self, pk: int, props: Mapping[str, Scalar], at: int) -> None:
        self.conn.execute(
            "UPDATE node SET props = ?, updated_at = ? WHERE pk = ?",
            [json.dumps(dict(props), separators=(",", ":"), ensure_ascii=False), at, pk],
        )

    def delete_embeddings(self, pk: int) -> None:
        self.conn.execute("DELETE FROM embedding WHERE node = ?", [pk])
