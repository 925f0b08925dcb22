"""Export and import: every row as a plain record (`dump`) and one record back in
(`load`). Mixed into the store's read and write transactions."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping
from typing import Any

from mnemodb.store.sqlite.edges import EdgeReads, EdgeWrites
from mnemodb.store.sqlite.entities import EntityWrites
from mnemodb.store.sqlite.memories import MemoryWrites
from mnemodb.store.sqlite.nodes import NodeWrites

__all__ = ["TransferReads", "TransferWrites"]

# The largest row id an import keeps (JavaScript's largest exact integer).
_MAX_KEPT_PK = 2**53 - 1


class TransferReads(EdgeReads):
    conn: sqlite3.Connection

    def dump(self) -> Iterator[dict[str, Any]]:
        """Every node, edge and embedding as plain records, in creation order."""
        conn = self.conn
        tags: dict[int, list[str]] = {}
        for node, tag in conn.execute("SELECT node, tag FROM memory_tag ORDER BY node, tag"):
            tags.setdefault(node, []).append(tag)
        observations: dict[int, list[dict[str, Any]]] = {}
        for entity, content, created_at in conn.execute(
            "SELECT entity, content, created_at FROM observation ORDER BY entity, position"
        ):
            observations.setdefault(entity, []).append({"content": content, "created_at": created_at})
        rows = conn.execute(
            "SELECT n.pk, n.id, n.scope, n.label, n.props, n.created_at, n.updated_at, "
            "m.hash, m.content, m.summary, m.importance, m.memory_type, e.name, e.entity_type, "
            "a.count, a.last_at, e.extra, t.id, m.archived_at "
            "FROM node n LEFT JOIN memory m ON m.node = n.pk LEFT JOIN entity e ON e.node = n.pk "
            "LEFT JOIN node_access a ON a.node = n.pk LEFT JOIN node t ON t.pk = m.context_from ORDER BY n.pk"
        )
        for r in rows:
            record: dict[str, Any] = {
                "type": "node",
                "pk": r[0],
                "id": r[1],
                "scope": r[2],
                "label": r[3],
                "props": json.loads(r[4]),
                "created_at": r[5],
                "updated_at": r[6],
            }
            if r[7] is not None:
                record["memory"] = {
                    "hash": r[7],
                    "content": r[8],
                    "summary": r[9],
                    "importance": r[10],
                    "memory_type": r[11],
                    "tags": tags.get(r[0], []),
                }
                if r[17] is not None:  # a turn: the one it follows, by id
                    record["memory"]["context_from"] = r[17]
                if r[18] is not None:
                    record["memory"]["archived_at"] = r[18]
            if r[12] is not None:
                record["entity"] = {
                    "name": r[12],
                    "entity_type": r[13],
                    "observations": observations.get(r[0], []),
                }
                if r[16]:
                    record["entity"]["extra"] = json.loads(r[16])
            if r[14] is not None:
                record["access"] = {"count": r[14], "last_at": r[15]}
            yield record
        extras = dict(conn.execute("SELECT pk, extra FROM edge WHERE extra IS NOT NULL").fetchall())
        for edge in self._edges("1 ORDER BY e.pk", []):
            record = {
                "type": "edge",
                "pk": edge.pk,
                "id": edge.id,
                "from": edge.src,
                "to": edge.dst,
                "edge_type": edge.type,
                "scope": edge.scope,
                "props": dict(edge.props),
                "valid_from": edge.valid_from,
                "valid_to": edge.valid_to,
                "created_at": edge.created_at,
            }
            if edge.pk in extras:
                record["extra"] = json.loads(extras[edge.pk])
            yield record
        for node_id, model, dim, vector, updated_at in conn.execute(
            "SELECT n.id, b.model, b.dim, b.vector, b.updated_at FROM embedding b JOIN node n ON n.pk = b.node "
            "ORDER BY b.node, b.model"
        ):
            yield {
                "type": "embedding",
                "node": node_id,
                "model": model,
                "dim": dim,
                "vector": bytes(vector).hex(),
                "updated_at": updated_at,
            }


class TransferWrites(MemoryWrites, NodeWrites, EdgeWrites, EntityWrites):
    def _turn_before(self, node_id: Any, scope: str) -> int | None:
        """The pk of the turn a loaded memory followed (a memory of the same scope), when it
        is here; None otherwise (its context is then empty, as for a first turn)."""
        if not isinstance(node_id, str):
            return None
        row = self.conn.execute(
            "SELECT m.node FROM node n JOIN memory m ON m.node = n.pk WHERE n.id = ? AND m.scope = ?", [node_id, scope]
        ).fetchone()
        return None if row is None else int(row[0])

    def load(self, record: Mapping[str, Any]) -> bool:
        """Insert one dumped record unless it is already here. True when something was written.

        The record is one the engine checked (`Transfer._checked_record`): every field of the
        shape and type the data model requires. ValueError (with the reason) for a record
        the database cannot take.
        """
        try:
            return self._load(record)
        except sqlite3.IntegrityError as exc:
            raise ValueError(f"the database refused it: {exc}") from exc

    def _pk_if_free(self, table: str, pk: Any) -> int | None:
        """Keep a record's integer id when no other row has it (memdb clients hold these ids)
        and it is one a JavaScript client holds exactly. A larger one is not kept: after a
        row at SQLite's largest rowid, AUTOINCREMENT could give no row an id again."""
        if not isinstance(pk, int) or isinstance(pk, bool) or not 1 <= pk <= _MAX_KEPT_PK:
            return None
        taken = self.conn.execute(f"SELECT 1 FROM {table} WHERE pk = ?", [pk]).fetchone()
        return None if taken else pk

    def _load(self, record: Mapping[str, Any]) -> bool:
        kind = record["type"]
        if kind == "node":
            return self._load_node(record)
        if kind == "edge":
            if self.conn.execute("SELECT 1 FROM edge WHERE id = ?", [record["id"]]).fetchone():
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
        if kind == "embedding":
            node = self.node_pk(record["node"])
            if node is None:
                raise ValueError(f"embedding refers to node {record['node']}, which is not in the store")
            exists = self.conn.execute(
                "SELECT 1 FROM embedding WHERE node = ? AND model = ?", [node, record["model"]]
            ).fetchone()
            if exists:
                return False
            made = record["updated_at"]
            changed = self.conn.execute("SELECT updated_at FROM node WHERE pk = ?", [node]).fetchone()[0]
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
        self.conn.execute("UPDATE node SET updated_at = ? WHERE pk = ?", [record["updated_at"], pk])
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
            for obs in entity.get("observations", []):
                self.add_observations(pk, [obs["content"]], obs.get("created_at", record["created_at"]))
            # (one observation at a time keeps each one's own time)
        access = record.get("access")
        if access:
            self.conn.execute(
                "INSERT INTO node_access (node, count, last_at) VALUES (?, ?, ?)",
                [pk, access["count"], access["last_at"]],
            )
        return True
