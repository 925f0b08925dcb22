"""Export and import: every row as a plain record (`dump`) and one record back in
(`load`). Mixed into the PostgreSQL store's read and write transactions.

The records are the export format (`docs/cli.md`) and must be the very ones the SQLite
store gives for the same data, field for field and in the same order, so that an export
moved between the two backends comes back byte for byte. The large scans read through a
server-side cursor, a batch of rows at a time, instead of the whole table at once.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import psycopg
from psycopg import errors as pg_errors

from mnemodb.store.postgresql.edges import EdgeWrites
from mnemodb.store.postgresql.embeddings import EmbeddingWrites
from mnemodb.store.postgresql.entities import EntityWrites
from mnemodb.store.postgresql.memories import MemoryWrites
from mnemodb.store.postgresql.nodes import NodeWrites
from mnemodb.store.postgresql.sql import got, put
from mnemodb.store.rows import props_of

__all__ = ["DDL", "TransferReads", "TransferWrites"]

DDL = ""

# The largest key an import keeps: JavaScript's largest exact integer, as in the SQLite
# store (whose AUTOINCREMENT could hand out no key after a larger one), so that both keep
# the same keys of the same export.
_MAX_KEPT_PK = 2**53 - 1

# Settings that are the schema's own (`database.PostgresDatabase`), not the engine's.
_SCHEMA_KEYS = ("application", "schema_version")

# Rows fetched from the server at a time by the scans of `dump`.
_BATCH = 2000

# Each open scan of `dump` needs a cursor name of its own on the connection.
_cursor_names = itertools.count(1)

_NODES = (
    "SELECT n.pk, n.id, n.scope, n.label, n.props, n.created_at, n.updated_at, "
    "m.hash, m.content, m.summary, m.importance, m.memory_type, e.name, e.entity_type, "
    "a.count, a.last_at, e.extra, t.id, m.archived_at "
    "FROM node n LEFT JOIN memory m ON m.node = n.pk LEFT JOIN entity e ON e.node = n.pk "
    "LEFT JOIN node_access a ON a.node = n.pk LEFT JOIN node t ON t.pk = m.context_from ORDER BY n.pk"
)
_EDGES = (
    "SELECT e.pk, e.id, s.id, d.id, e.type, e.scope, e.props, e.valid_from, e.valid_to, e.created_at, e.extra "
    "FROM edge e JOIN node s ON s.pk = e.src JOIN node d ON d.pk = e.dst ORDER BY e.pk"
)
_EMBEDDINGS = (
    "SELECT n.id, b.model, b.dim, b.vector, b.updated_at FROM embedding b JOIN node n ON n.pk = b.node "
    "ORDER BY b.node, b.model"
)


class TransferReads:
    conn: psycopg.Connection[Any]

    def _scan(self, query: str) -> Iterator[Sequence[Any]]:
        """The rows of `query`, fetched a batch at a time (the connection stays usable for
        other statements meanwhile)."""
        with self.conn.cursor(name=f"mnemodb_dump_{next(_cursor_names)}") as cursor:
            cursor.itersize = _BATCH
            cursor.execute(query)
            yield from cursor

    def dump(self) -> Iterator[dict[str, Any]]:
        """Every node, edge and embedding as plain records, oldest first (nodes, then
        edges, then embeddings)."""
        conn = self.conn
        tags: dict[int, list[str]] = {}
        for node, tag in conn.execute("SELECT node, tag FROM memory_tag ORDER BY node, tag"):
            tags.setdefault(node, []).append(got(tag))
        observations: dict[int, list[dict[str, Any]]] = {}
        for entity, content, created_at in conn.execute(
            "SELECT entity, content, created_at FROM observation ORDER BY entity, position"
        ):
            observations.setdefault(entity, []).append({"content": got(content), "created_at": created_at})
        for r in self._scan(_NODES):
            record: dict[str, Any] = {
                "type": "node",
                "pk": r[0],
                "id": got(r[1]),
                "scope": got(r[2]),
                "label": got(r[3]),
                "props": json.loads(r[4]),
                "created_at": r[5],
                "updated_at": r[6],
            }
            if r[7] is not None:
                record["memory"] = {
                    "hash": got(r[7]),
                    "content": got(r[8]),
                    "summary": got(r[9]),
                    "importance": r[10],
                    "memory_type": got(r[11]),
                    "tags": tags.get(r[0], []),
                }
                if r[17] is not None:  # a turn: the one it follows, by id
                    record["memory"]["context_from"] = got(r[17])
                if r[18] is not None:
                    record["memory"]["archived_at"] = r[18]
            if r[12] is not None:
                record["entity"] = {
                    "name": got(r[12]),
                    "entity_type": got(r[13]),
                    "observations": observations.get(r[0], []),
                }
                if r[16]:
                    record["entity"]["extra"] = json.loads(r[16])
            if r[14] is not None:
                record["access"] = {"count": r[14], "last_at": r[15]}
            yield record
        for r in self._scan(_EDGES):
            record = {
                "type": "edge",
                "pk": r[0],
                "id": got(r[1]),
                "from": got(r[2]),
                "to": got(r[3]),
                "edge_type": got(r[4]),
                "scope": got(r[5]),
                "props": props_of(r[6]),
                "valid_from": r[7],
                "valid_to": r[8],
                "created_at": r[9],
            }
            if r[10] is not None:
                record["extra"] = json.loads(r[10])
            yield record
        for node_id, model, dim, vector, updated_at in self._scan(_EMBEDDINGS):
            yield {
                "type": "embedding",
                "node": got(node_id),
                "model": got(model),
                "dim": dim,
                "vector": bytes(vector).hex(),
                "updated_at": updated_at,
            }

    def meta_items(self) -> dict[str, str]:
        """Every setting, by key, without the schema's own bookkeeping (which SQLite keeps
        in its file header): not part of the store contract, for a copy of the whole database."""
        rows = self.conn.execute("SELECT key, value FROM meta WHERE key <> ALL(%s) ORDER BY key", [list(_SCHEMA_KEYS)])
        return {got(k): got(v) for k, v in rows}


class TransferWrites(TransferReads, MemoryWrites, NodeWrites, EdgeWrites, EntityWrites, EmbeddingWrites):
    def _turn_before(self, node_id: Any, scope: str) -> int | None:
        """The pk of the turn a loaded memory followed (a memory of the same scope), when it
        is here; None otherwise (its context is then empty, as for a first turn)."""
        if not isinstance(node_id, str):
            return None
        row = self.conn.execute(
            "SELECT m.node FROM node n JOIN memory m ON m.node = n.pk WHERE n.id = %s AND m.scope = %s",
            [put(node_id), put(scope)],
        ).fetchone()
        return None if row is None else int(row[0])

    def load(self, record: Mapping[str, Any]) -> bool:
        """Insert one dumped record unless it is already here. True when something was written.

        The record is one the engine checked (`Transfer._checked_record`): every field of the
        shape and type the data model requires. ValueError (with the reason) for a record
        the database cannot take; what the record wrote before the refusal is undone (in
        PostgreSQL a failed statement would end the whole transaction, so the record is
        written inside a savepoint of its own).
        """
        try:
            with self.conn.transaction():
                return self._load(record)
        except pg_errors.IntegrityError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ValueError(f"the database refused it: {first}") from exc

    def _pk_if_free(self, table: str, pk: Any) -> int | None:
        """Keep a record's integer key when no other row has it (memdb clients hold these
        keys) and it is one a JavaScript client holds exactly."""
        if not isinstance(pk, int) or isinstance(pk, bool) or not 1 <= pk <= _MAX_KEPT_PK:
            return None
        taken = self.conn.execute(f"SELECT 1 FROM {table} WHERE pk = %s", [pk]).fetchone()
        return None if taken else pk

    def _load(self, record: Mapping[str, Any]) -> bool:
        kind = record["type"]
        if kind == "node":
            return self._load_node(record)
        if kind == "edge":
            return self._load_edge(record)
        if kind == "embedding":
            return self._load_embedding(record)
        raise ValueError(f"unknown record type {kind!r}")

    def _load_node(self, record: Mapping[str, Any]) -> bool:
        memory = record.get("memory")
        entity = record.get("entity")
        if self.node_pk(record["id"]) is not None:
            return False
        # The same content under another id is the same memory (content-addressed per scope).
        if memory is not None and self.memory_pk(record["scope"], memory["hash"]) is not None:
            return False
        pk = self.insert_node(
            record["id"],
            record["scope"],
            record["label"],
            record.get("props") or {},
            record["created_at"],
            pk=self._pk_if_free("node", record.get("pk")),
        )
        # The node's own time of last change; its version grows as with any update (as in SQLite).
        self.conn.execute("UPDATE node SET updated_at = %s WHERE pk = %s", [record["updated_at"], pk])
        if memory is not None:
            self.insert_memory(
                pk,
                record["scope"],
                memory["hash"],
                memory["content"],
                memory.get("summary"),
                memory.get("importance", 0),
                memory.get("memory_type", "general"),
                context_from=self._turn_before(memory.get("context_from"), record["scope"]),
            )
            self.add_tags(pk, memory.get("tags", []))
            if memory.get("archived_at") is not None:
                self.set_archived(pk, memory["archived_at"])
        if entity is not None:
            self.insert_entity(
                pk, record["scope"], entity["name"], entity.get("entity_type", ""), entity.get("extra") or None
            )
            # One observation at a time keeps each one's own time.
            for obs in entity.get("observations", []):
                self.add_observations(pk, [obs["content"]], obs.get("created_at", record["created_at"]))
        access = record.get("access")
        if access:
            self.conn.execute(
                "INSERT INTO node_access (node, count, last_at) VALUES (%s, %s, %s)",
                [pk, access["count"], access["last_at"]],
            )
        return True

    def _load_edge(self, record: Mapping[str, Any]) -> bool:
        if self.conn.execute("SELECT 1 FROM edge WHERE id = %s", [put(record["id"])]).fetchone():
            return False
        src, dst = self.node_pk(record["from"]), self.node_pk(record["to"])
        if src is None or dst is None:
            missing = record["from"] if src is None else record["to"]
            raise ValueError(f"edge {record['id']} refers to node {missing}, which is not in the store")
        pk = self.insert_edge(
            record["id"],
            src,
            dst,
            record["edge_type"],
            record["scope"],
            record.get("props") or {},
            record["valid_from"],
            record["created_at"],
            pk=self._pk_if_free("edge", record.get("pk")),
        )
        if record.get("valid_to") is not None:
            self.close_edge(pk, record["valid_to"])
        if record.get("extra"):
            self.set_edge_extra(pk, record["extra"])
        return True

    def _load_embedding(self, record: Mapping[str, Any]) -> bool:
        node = self.node_pk(record["node"])
        if node is None:
            raise ValueError(f"embedding refers to node {record['node']}, which is not in the store")
        exists = self.conn.execute(
            "SELECT 1 FROM embedding WHERE node = %s AND model = %s", [node, put(record["model"])]
        ).fetchone()
        if exists:
            return False
        made = record["updated_at"]
        row = self.conn.execute("SELECT updated_at FROM node WHERE pk = %s", [node]).fetchone()
        changed = int(row[0]) if row else made
        self.set_embedding(
            node,
            record["model"],
            bytes.fromhex(record["vector"]),
            record["dim"],
            made,
            # Made before the node's last change: stale here too, to be embedded again.
            node_version=-1 if made < changed else None,
        )
        return True
