"""The SQLite store: one file, WAL, FTS5, safe for several processes at once.

Concurrency model, in one process: one write connection, used by one thread at a time
under a lock, and one read connection per thread. Across processes: WAL lets readers
run beside the one writer; every write transaction starts with `BEGIN IMMEDIATE`, so a
writer waits for the write lock up front (busy timeout plus a retry loop) instead of
failing half-way with "database is locked".
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from mnemodb.model.errors import OperationTimeout, StoreFailed, StoreUnavailable
from mnemodb.model.records import Change, Direction, Edge, Memory, Node, Props
from mnemodb.store.base import NodeLabel, StoreHealth, TextHit, TimeRange, VectorIndex
from mnemodb.store.files import (
    create_private_file,
    make_private_dirs,
    not_a_regular_file,
    replaced_atomically,
    same_file,
)
from mnemodb.store.sqlite import legacy
from mnemodb.store.sqlite.entities import EntityReads, EntityWrites
from mnemodb.store.sqlite.items import ItemReads
from mnemodb.store.sqlite.nodes import NodeReads, NodeWrites, bump_version
from mnemodb.store.sqlite.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION
from mnemodb.store.sqlite.sql import edge_visible, edge_visible_params, fts_any, marks
from mnemodb.store.sqlite.tokens import TokenReads, TokenWrites

__all__ = ["SqliteStore"]

log = logging.getLogger(__name__)

T = TypeVar("T")

MEMORY_DB = ":memory:"
# What SQLite keeps beside a database file while it is in use (WAL mode: -wal and -shm).
_SIDECARS = ("", "-wal", "-shm", "-journal")

# A writer asks for the write lock in short waits (SQLite's busy timeout on the write
# connection) inside a retry loop, so a call's time limit is checked between waits; it
# gives up only after two minutes. Readers never need the lock in WAL mode and keep a
# long busy timeout for the rare wait (recovery after a crash).
_WRITE_BUSY_TIMEOUT_S = 0.1
_READ_BUSY_TIMEOUT_S = 5.0
_WRITE_LOCK_DEADLINE_S = 120.0

_MEMORY_COLUMNS = (
    "n.pk, n.id, n.scope, m.content, m.hash, m.importance, m.memory_type, m.summary, n.props, "
    "n.created_at, n.updated_at, a.count, a.last_at"
)
_MEMORY_FROM = "memory m JOIN node n ON n.pk = m.node LEFT JOIN node_access a ON a.node = m.node"
_EDGE_COLUMNS = "e.pk, e.id, s.id, d.id, e.type, e.scope, e.props, e.valid_from, e.valid_to, e.created_at, e.src, e.dst"
_EDGE_FROM = "edge e JOIN node s ON s.pk = e.src JOIN node d ON d.pk = e.dst"
# The largest row id an import keeps (JavaScript's largest exact integer).
_MAX_KEPT_PK = 2**53 - 1


"""A search candidate: (memory pk, bm25, importance, created_at)."""


def _props(text: str) -> dict[str, Any]:
    return {} if text == "{}" else dict(json.loads(text))


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _refusal(exc: sqlite3.Error) -> StoreFailed | None:
    """What a refusal by SQLite means for the caller, when it is the file or the disk."""
    text = str(exc).lower()
    if "readonly" in text or "read-only" in text:
        return StoreFailed(f"the database file is read-only ({exc}): reads work, writes are refused")
    if "disk is full" in text:
        return StoreFailed(f"the disk is full ({exc}): nothing was written; free some space and retry")
    if "disk i/o error" in text:
        return StoreFailed(
            f"the disk refused the write ({exc}: full, over a size limit, or failing): nothing was written"
        )
    if "malformed" in text or "not a database" in text or "vtable constructor failed" in text:
        return StoreFailed(
            f"the database file is damaged ({exc}): restore it from a backup (`PRAGMA integrity_check` "
            "shows what is broken)"
        )
    return None


def _cannot_create(path: str) -> str:
    """Why SQLite could not open `path`, when it is that the file cannot be created there."""
    file = Path(path)
    if path == ":memory:" or file.exists():
        return ""
    try:
        probe = file.with_name(f".{file.name}.probe-{os.getpid()}")
        probe.touch()
        probe.unlink()
    except OSError as exc:
        return f" (the directory is read-only or not writable: {exc.strerror or exc})"
    return ""


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class _Tx(EntityReads, NodeReads, ItemReads, TokenReads):
    """Read methods over one connection. Every method is a few indexed statements."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    # -- memories --------------------------------------------------------------------------

    def _memories(self, where: str, params: Sequence[Any]) -> list[Memory]:
        rows = self.conn.execute(f"SELECT {_MEMORY_COLUMNS} FROM {_MEMORY_FROM} WHERE {where}", params).fetchall()
        if not rows:
            return []
        tags = self._tags_of([r[0] for r in rows])
        return [
            Memory(
                pk=r[0],
                id=r[1],
                scope=r[2],
                content=r[3],
                hash=r[4],
                importance=r[5],
                memory_type=r[6],
                summary=r[7],
                props=_props(r[8]),
                created_at=r[9],
                updated_at=r[10],
                tags=tags.get(r[0], ()),
                access_count=r[11] or 0,
                last_accessed_at=r[12],
            )
            for r in rows
        ]

    def _tags_of(self, pks: Sequence[int]) -> dict[int, tuple[str, ...]]:
        out: dict[int, list[str]] = {}
        for chunk in _chunks(pks, 500):
            for node, tag in self.conn.execute(
                f"SELECT node, tag FROM memory_tag WHERE node IN ({marks(len(chunk))}) ORDER BY node, tag",
                chunk,
            ):
                out.setdefault(node, []).append(tag)
        return {k: tuple(v) for k, v in out.items()}

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
        out: dict[int, Memory] = {}
        for chunk in _chunks(pks, 500):
            for memory in self._memories(f"m.node IN ({marks(len(chunk))})", chunk):
                out[memory.pk] = memory
        return out

    def search_text(
        self, terms: Sequence[str], scopes: Sequence[str], limit: int, *, content_only: bool = False
    ) -> list[TextHit]:
        """Memories matching any of `terms`, best first. With `content_only`, a match in the
        summary does not count. A memory's context is not searched here (see
        `filtered_text_search`). FTS5's bm25 is more negative for a better match: the score
        is its negation."""
        if not terms or limit <= 0:
            return []
        match = fts_any(terms)
        # A memory's context (see schema migration 7) is the native search's alone.
        match = f"{{content}} : ({match})" if content_only else f"{{content summary}} : ({match})"
        if self._holds_only(scopes):
            # Every memory is readable: FTS5 ranks alone and keeps only its top rows,
            # instead of scoring and joining every match before sorting.
            ranked = self.conn.execute(
                "SELECT rowid, rank FROM memory_fts WHERE memory_fts MATCH ? ORDER BY rank LIMIT ?", [match, limit]
            ).fetchall()
            if not ranked:
                return []
            details = {
                pk: (importance, created_at)
                for pk, importance, created_at in self.conn.execute(
                    "SELECT m.node, m.importance, n.created_at FROM memory m JOIN node n ON n.pk = m.node "
                    f"WHERE m.node IN ({marks(len(ranked))})",
                    [pk for pk, _ in ranked],
                )
            }
            return [TextHit(pk, -rank, *details[pk]) for pk, rank in ranked if pk in details]
        rows = self.conn.execute(
            "SELECT f.rowid, bm25(memory_fts) AS rank, m.importance, n.created_at FROM memory_fts f "
            "JOIN memory m ON m.node = f.rowid JOIN node n ON n.pk = f.rowid "
            f"WHERE memory_fts MATCH ? AND m.scope IN ({marks(len(scopes))}) ORDER BY rank LIMIT ?",
            [match, *scopes, limit],
        ).fetchall()
        return [TextHit(pk, -rank, importance, created_at) for pk, rank, importance, created_at in rows]

    def _holds_only(self, scopes: Sequence[str]) -> bool:
        """True when no memory lives outside `scopes` (read from the per-scope counters)."""
        held = self.conn.execute("SELECT scope FROM scope_count WHERE kind = 'memory' AND n > 0").fetchall()
        wanted = set(scopes)
        return all(scope in wanted for (scope,) in held)

    def memories_with_tags(self, tags: Sequence[str], scopes: Sequence[str], limit: int) -> list[TextHit]:
        """The newest memories with any of `tags`, score 0."""
        if not tags or limit <= 0:
            return []
        # The newest `limit` tagged memories, read from the (tag, scope) index alone, then
        # their details: a common tag costs an index scan, not a join and sort of every row.
        rows = self.conn.execute(
            "SELECT t.node, 0.0, m.importance, n.created_at FROM "
            f"(SELECT DISTINCT node FROM memory_tag WHERE tag IN ({marks(len(tags))}) "
            f"AND scope IN ({marks(len(scopes))}) ORDER BY node DESC LIMIT ?) t "
            "CROSS JOIN memory m ON m.node = t.node CROSS JOIN node n ON n.pk = t.node",
            [*tags, *scopes, limit],
        ).fetchall()
        return [TextHit(*row) for row in rows]

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

    def memory_time_range(self, scopes: Sequence[str]) -> TimeRange:
        # One scope at a time: MIN and MAX then read one end of the (label, scope,
        # created_at) index each, instead of scanning every memory.
        oldest: int | None = None
        newest: int | None = None
        for scope in scopes:
            low = self.conn.execute(
                "SELECT MIN(created_at) FROM node WHERE label = 'Memory' AND scope = ?", [scope]
            ).fetchone()[0]
            high = self.conn.execute(
                "SELECT MAX(created_at) FROM node WHERE label = 'Memory' AND scope = ?", [scope]
            ).fetchone()[0]
            if low is not None:
                oldest = low if oldest is None else min(oldest, low)
                newest = high if newest is None else max(newest, high)
        return TimeRange(oldest, newest)

    # -- nodes and entities ---------------------------------------------------------------

    def node_by_id(self, node_id: str) -> Node | None:
        row = self.conn.execute(
            "SELECT pk, id, scope, label, props, created_at, updated_at FROM node WHERE id = ?", [node_id]
        ).fetchone()
        if row is None:
            return None
        return Node(row[0], row[1], row[2], row[3], json.loads(row[4]), row[5], row[6])

    def node_pk(self, node_id: str) -> int | None:
        row = self.conn.execute("SELECT pk FROM node WHERE id = ?", [node_id]).fetchone()
        return None if row is None else int(row[0])

    def labels_of(self, pks: Sequence[int]) -> dict[int, NodeLabel]:
        """Node pk -> (label, scope), for the pks that exist."""
        out: dict[int, NodeLabel] = {}
        for chunk in _chunks(pks, 500):
            for pk, label, scope in self.conn.execute(
                f"SELECT pk, label, scope FROM node WHERE pk IN ({marks(len(chunk))})", chunk
            ):
                out[pk] = NodeLabel(label, scope)
        return out

    # -- edges ------------------------------------------------------------------------------

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
        rows = self.conn.execute(f"SELECT {_EDGE_COLUMNS} FROM {_EDGE_FROM} WHERE {where}", params).fetchall()
        return [
            Edge(
                pk=r[0],
                id=r[1],
                src=r[2],
                dst=r[3],
                type=r[4],
                scope=r[5],
                props=_props(r[6]),
                valid_from=r[7],
                valid_to=r[8],
                created_at=r[9],
                src_pk=r[10],
                dst_pk=r[11],
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
        filters = ""
        extra: list[Any] = []
        if valid_at is not None:
            filters += " AND e.valid_from <= ? AND (e.valid_to IS NULL OR e.valid_to > ?)"
            extra += [valid_at, valid_at]
        if scopes is not None:
            filters += f" AND {edge_visible('e', len(scopes))}"
            extra += edge_visible_params(scopes)
        if edge_types:
            filters += f" AND e.type IN ({marks(len(edge_types))})"
            extra += list(edge_types)
        found: dict[int, Edge] = {}
        for chunk in _chunks(pks, 400):
            chunk_marks = marks(len(chunk))
            # Two indexed lookups (edge_src, edge_dst) rather than one OR, which would scan.
            if direction in ("out", "both"):
                for edge in self._edges(f"e.src IN ({chunk_marks}){filters}", [*chunk, *extra]):
                    found[edge.pk] = edge
            if direction in ("in", "both"):
                for edge in self._edges(f"e.dst IN ({chunk_marks}){filters}", [*chunk, *extra]):
                    found[edge.pk] = edge
        return [found[k] for k in sorted(found)]

    def edges_among(self, pks: Sequence[int], *, valid_at: int | None = None) -> list[Edge]:
        """Edges whose both endpoints are in `pks`."""
        members = set(pks)
        return [e for e in self.edges_of(pks, "out", valid_at=valid_at) if e.dst_pk in members]

    # -- statistics, change log, metadata ---------------------------------------------------

    def counts(self, scopes: Sequence[str] | None) -> dict[str, int]:
        if scopes is None:
            where, params = "", []
        else:
            where, params = f" WHERE scope IN ({marks(len(scopes))})", list(scopes)
        out = {}
        for name, table in (
            ("nodes", "node"),
            ("memories", "memory"),
            ("entities", "entity"),
            ("edges", "edge"),
        ):
            out[name] = int(self.conn.execute(f"SELECT COUNT(*) FROM {table}{where}", params).fetchone()[0])
        obs_where = (
            "" if scopes is None else f" JOIN entity e ON e.node = o.entity WHERE e.scope IN ({marks(len(scopes))})"
        )
        out["observations"] = int(
            self.conn.execute(f"SELECT COUNT(*) FROM observation o{obs_where}", params).fetchone()[0]
        )
        emb_where = "" if scopes is None else f" JOIN node n ON n.pk = b.node WHERE n.scope IN ({marks(len(scopes))})"
        out["embeddings"] = int(self.conn.execute(f"SELECT COUNT(*) FROM embedding b{emb_where}", params).fetchone()[0])
        return out

    def current_seq(self) -> int:
        row = self.conn.execute("SELECT MAX(seq) FROM change_log").fetchone()
        return int(row[0] or 0)

    def changes(self, since_seq: int, limit: int | None) -> list[Change]:
        sql = "SELECT seq, at, scope, op, target, data FROM change_log WHERE seq >= ? ORDER BY seq"
        params: list[Any] = [since_seq]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [Change(r[0], r[1], r[2], r[3], r[4], json.loads(r[5])) for r in self.conn.execute(sql, params)]

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
        return None if row is None else str(row[0])

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
            "a.count, a.last_at, e.extra "
            "FROM node n LEFT JOIN memory m ON m.node = n.pk LEFT JOIN entity e ON e.node = n.pk "
            "LEFT JOIN node_access a ON a.node = n.pk ORDER BY n.pk"
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


class SqliteWriteTx(_Tx, EntityWrites, NodeWrites, TokenWrites):
    """Write methods. Only ever used inside `SqliteStore.write()`."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        super().__init__(conn)
        self._savepoints = 0

    @contextlib.contextmanager
    def savepoint(self) -> Iterator[None]:
        """Changes made inside are undone alone if the block raises; the transaction goes on."""
        self._savepoints += 1
        name = f"item_{self._savepoints}"
        self.conn.execute(f"SAVEPOINT {name}")
        try:
            yield
        except BaseException:
            self.conn.execute(f"ROLLBACK TO {name}")
            self.conn.execute(f"RELEASE {name}")
            raise
        self.conn.execute(f"RELEASE {name}")

    def insert_node(self, node_id: str, scope: str, label: str, props: Props, at: int, *, pk: int | None = None) -> int:
        cur = self.conn.execute(
            "INSERT INTO node (pk, id, scope, label, props, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [pk, node_id, scope, label, _dumps(dict(props)), at, at],
        )
        return int(cur.lastrowid or 0)

    def touch_node(self, pk: int, at: int) -> None:
        self.conn.execute("UPDATE node SET updated_at = ? WHERE pk = ?", [at, pk])

    def delete_node(self, pk: int) -> None:
        # Memory, tags, entity, observations, edges, embeddings and access rows go by cascade.
        self.conn.execute("DELETE FROM node WHERE pk = ?", [pk])

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
        bump_version(self.conn, pk)  # a change of the memory is a change of its node

    def add_tags(self, pk: int, tags: Iterable[str]) -> list[str]:
        added = []
        for tag in tags:
            cur = self.conn.execute(
                "INSERT OR IGNORE INTO memory_tag (node, tag, scope) SELECT ?, ?, scope FROM memory WHERE node = ?",
                [pk, tag, pk],
            )
            if cur.rowcount:
                added.append(tag)
        if added:
            bump_version(self.conn, pk)  # tags are part of the memory
        return added

    def replace_tags(self, pk: int, tags: Iterable[str]) -> None:
        removed = self.conn.execute("DELETE FROM memory_tag WHERE node = ?", [pk]).rowcount
        if not self.add_tags(pk, tags) and removed:
            bump_version(self.conn, pk)

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
            [pk, edge_id, src, dst, edge_type, scope, _dumps(dict(props)), valid_from, at],
        )
        return int(cur.lastrowid or 0)

    def close_edge(self, pk: int, valid_to: int) -> None:
        self.conn.execute("UPDATE edge SET valid_to = ? WHERE pk = ?", [valid_to, pk])

    def delete_edge(self, pk: int) -> None:
        self.conn.execute("DELETE FROM edge WHERE pk = ?", [pk])

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

    def append_change(self, at: int, scope: str | None, op: str, target: str | None, data: Mapping[str, Any]) -> int:
        # INTEGER PRIMARY KEY without AUTOINCREMENT takes MAX(seq)+1. Writers are serialised
        # by BEGIN IMMEDIATE and a rolled-back insert leaves no row, so the log has no gaps.
        cur = self.conn.execute(
            "INSERT INTO change_log (at, scope, op, target, data) VALUES (?, ?, ?, ?, ?)",
            [at, scope, op, target, _dumps(dict(data))],
        )
        return int(cur.lastrowid or 0)

    def rewrite_change(self, seq: int, data: Mapping[str, Any]) -> None:
        """Replace one entry's data (its seq, time, op and target stay): how a forgotten
        item's text leaves the log."""
        self.conn.execute("UPDATE change_log SET data = ? WHERE seq = ?", [_dumps(dict(data)), seq])

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [key, value],
        )

    def load(self, record: Mapping[str, Any]) -> bool:
        """Insert one dumped record unless it is already here. True when something was written.

        The record is one the engine checked (`Engine._checked_record`): every field of the
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
            )
            self.add_tags(pk, memory.get("tags", []))
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


def _with_sidecars(path: str) -> list[str]:
    return [path + suffix for suffix in _SIDECARS]


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _foreign_format(path: str) -> str:
    """A hint when the file is another memory server's own format."""
    try:
        with open(path, "rb") as file:
            head = file.read(4)
    except OSError:
        return ""
    if head == b"redb":
        return " (it is a topodb-mcp redb file, which mnemodb cannot read; name a new file with --db)"
    return ""


class SqliteStore:
    """A mnemodb graph in one SQLite file (or `:memory:`)."""

    def __init__(
        self, path: str | os.PathLike[str] = MEMORY_DB, *, create_parent: bool = True, read_only: bool = False
    ) -> None:
        """Open (or create) the database at `path`. With `read_only`, an existing database is
        opened for reading only: nothing is created, migrated or written, not even the WAL's
        index beside a file in a directory this process may not write to; a write raises
        StoreFailed."""
        self._path = str(path)
        self._in_memory = self._path == MEMORY_DB
        self.read_only = read_only and not self._in_memory
        self._uri: str | None = None
        if not self._in_memory:
            file = Path(self._path).expanduser().resolve()
            if self.read_only:
                self._uri = _read_only_uri(file)
            elif create_parent:
                make_private_dirs(file.parent)
            elif not file.parent.is_dir():
                raise StoreUnavailable(f"database parent directory does not exist: {file.parent}")
            kind = not_a_regular_file(file)
            if kind is not None:  # SQLite would block for good opening a FIFO
                raise StoreUnavailable(f"cannot open database {file}: it is {kind}, not a database file")
            self._path = str(file)
            if not self.read_only:
                # Made here, private, before SQLite makes it with the umask's permissions; its
                # -wal and -shm files take the database file's permissions.
                create_private_file(file)
        self._write_lock = threading.RLock()
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._closed = False
        self._vectors: VectorIndex | None = None
        self._writer = self._connect(_WRITE_BUSY_TIMEOUT_S)
        try:
            self._open_schema()
        except sqlite3.DatabaseError as exc:
            self._writer.close()
            raise StoreUnavailable(f"cannot use {self._path} as a mnemodb database: {exc}") from exc
        except BaseException:
            self._writer.close()
            raise

    @property
    def vectors(self) -> VectorIndex:
        """SQLite has no vector index: the exact one, built on first use (numpy loads then)."""
        if self._vectors is None:
            with self._readers_lock:
                if self._vectors is None:
                    from mnemodb.store.vectors import ExactVectorIndex

                    self._vectors = ExactVectorIndex()
        return self._vectors

    # -- connections ------------------------------------------------------------------------

    @property
    def location(self) -> str:
        return self._path

    def _connect(self, busy_timeout: float = _READ_BUSY_TIMEOUT_S) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self._uri or self._path,
                timeout=busy_timeout,
                isolation_level=None,
                check_same_thread=False,
                cached_statements=512,
                uri=self._uri is not None,
            )
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA temp_store = MEMORY")
        except sqlite3.Error as exc:
            with contextlib.suppress(NameError, sqlite3.Error):
                conn.close()
            raise StoreUnavailable(
                f"cannot open database {self._path}: {exc}{_cannot_create(self._path)}{_foreign_format(self._path)}"
            ) from exc
        conn.set_progress_handler(self._check_deadline, 4000)
        return conn

    def _check_deadline(self) -> int:
        deadline = getattr(self._local, "deadline", None)
        return 1 if deadline is not None and time.monotonic() > deadline else 0

    @contextlib.contextmanager
    def deadline(self, seconds: float | None) -> Iterator[None]:
        """Abort (and roll back) any statement this thread runs after `seconds`."""
        previous = getattr(self._local, "deadline", None)
        self._local.deadline = None if seconds is None else time.monotonic() + seconds
        try:
            yield
        finally:
            self._local.deadline = previous

    def _reader(self) -> sqlite3.Connection:
        if self._in_memory:
            return self._writer
        conn: sqlite3.Connection | None = getattr(self._local, "reader", None)
        if conn is None:
            conn = self._connect()
            conn.execute("PRAGMA query_only = ON")
            self._local.reader = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def _retry_busy(self, action: Callable[[], T], what: str) -> T:
        give_up = time.monotonic() + _WRITE_LOCK_DEADLINE_S
        delay = 0.001
        while True:
            try:
                return action()
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise
                deadline = getattr(self._local, "deadline", None)
                now = time.monotonic()
                if deadline is not None and now > deadline:
                    raise OperationTimeout(
                        f"the database stayed locked by another writer while trying to {what}"
                    ) from exc
                if now > give_up:
                    raise StoreUnavailable(f"database stayed locked while trying to {what}") from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.01)

    # -- schema -------------------------------------------------------------------------------

    def _open_schema(self) -> None:
        conn = self._writer

        # Every check that can refuse the file runs before anything is written to it, in
        # one read transaction: another process may be creating the schema right now, and
        # separate reads could see half of its work.
        def check() -> int:
            conn.execute("BEGIN")
            try:
                return self._check_usable(conn)
            finally:
                conn.execute("COMMIT")

        version = self._retry_busy(check, "read the database's schema")
        if self.read_only:
            if version != SCHEMA_VERSION:
                raise StoreUnavailable(
                    f"database {self._path} has schema version {version}, older than this mnemodb's "
                    f"({SCHEMA_VERSION}), and was opened read-only: open it once where it may be written "
                    "to upgrade it"
                )
            return
        if not self._in_memory:
            # WAL is a property of the file; setting it needs a moment of exclusive access.
            mode = self._retry_busy(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone(), "enable WAL")
            if mode[0].lower() != "wal":
                log.warning("database %s is in %s mode, not WAL", self._path, mode[0])
        if version == SCHEMA_VERSION:
            return
        if version == 0 and legacy.is_memdb_database(conn):
            legacy.backup_before_migration(conn, self._path)
        if version:
            log.info("upgrading database %s from schema %d to %d", self._path, version, SCHEMA_VERSION)
        with self._write_tx() as tx:
            self._migrate(tx)

    def _check_usable(self, conn: sqlite3.Connection) -> int:
        """The file's schema version; StoreUnavailable for a newer schema or another application's file."""
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise StoreUnavailable(
                f"database {self._path} has schema version {version}, newer than this mnemodb "
                f"understands ({SCHEMA_VERSION}); upgrade mnemodb"
            )
        if version == 0:
            app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
            tables = [
                name
                for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                if not name.startswith("sqlite_")
            ]
            if tables and app_id != APPLICATION_ID and not legacy.is_memdb_database(conn):
                raise StoreUnavailable(
                    f"{self._path} is an SQLite database that mnemodb did not create "
                    f"(it has tables {', '.join(sorted(tables)[:5])}); refusing to change it"
                )
        return version

    def _migrate(self, tx: SqliteWriteTx) -> None:
        conn = tx.conn
        # Checked again inside the write lock: another process may have migrated meanwhile.
        version = self._check_usable(conn)
        is_memdb = version == 0 and legacy.is_memdb_database(conn)
        for number in range(version, SCHEMA_VERSION):
            for statement in _split_sql(MIGRATIONS[number]):
                conn.execute(statement)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        if is_memdb:
            legacy.migrate_in_place(tx)

    # -- transactions ---------------------------------------------------------------------

    @contextlib.contextmanager
    def _write_tx(self) -> Iterator[SqliteWriteTx]:
        if self.read_only:
            raise StoreFailed(f"the database {self._path} was opened read-only: nothing was changed")
        with self._write_lock:
            self._ensure_open()
            conn = self._writer
            self._retry_busy(lambda: conn.execute("BEGIN IMMEDIATE"), "start a write")
            try:
                yield SqliteWriteTx(conn)
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            # Past this point the work is done: a deadline must not interrupt the commit.
            deadline, self._local.deadline = getattr(self._local, "deadline", None), None
            try:
                self._retry_busy(lambda: conn.execute("COMMIT"), "commit")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            finally:
                self._local.deadline = deadline

    @contextlib.contextmanager
    def write(self) -> Iterator[SqliteWriteTx]:
        try:
            with self._write_tx() as tx:
                yield tx
        except sqlite3.DatabaseError as exc:
            if "interrupted" in str(exc):
                raise OperationTimeout("the operation ran past its time limit and was rolled back") from exc
            refusal = _refusal(exc)
            if refusal is not None:
                raise refusal from exc
            raise

    @contextlib.contextmanager
    def read(self) -> Iterator[_Tx]:
        self._ensure_open()
        if self._in_memory:
            with self._write_lock:
                yield from self._read_on(self._writer)
            return
        yield from self._read_on(self._reader())

    def _read_on(self, conn: sqlite3.Connection) -> Iterator[_Tx]:
        # One deferred transaction: every statement of the read sees the same snapshot.
        self._retry_busy(lambda: conn.execute("BEGIN"), "start a read")
        try:
            yield _Tx(conn)
        except sqlite3.DatabaseError as exc:
            if "interrupted" in str(exc):
                raise OperationTimeout("the operation ran past its time limit") from exc
            refusal = _refusal(exc)
            if refusal is not None:
                raise refusal from exc
            raise
        finally:
            # Ending a read changes nothing; on a damaged file it may fail again, which
            # must not hide the error that got here.
            if conn.in_transaction:
                try:
                    conn.execute("COMMIT")
                except sqlite3.Error:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")

    def _ensure_open(self) -> None:
        if self._closed:
            raise StoreUnavailable("the store is closed")

    def bump_access(self, hits: Mapping[int, tuple[int, int]]) -> None:
        """Add read counts: `hits` maps node pk to (count, last access ms). Best effort."""
        if not hits or self.read_only:  # statistics: a read-only store keeps none
            return
        with self.write() as tx:
            tx.conn.executemany(
                "INSERT INTO node_access (node, count, last_at) SELECT ?, ?, ? WHERE EXISTS "
                "(SELECT 1 FROM node WHERE pk = ?) ON CONFLICT (node) DO UPDATE SET "
                "count = count + excluded.count, last_at = MAX(last_at, excluded.last_at)",
                [(pk, count, last, pk) for pk, (count, last) in hits.items()],
            )

    # -- maintenance ----------------------------------------------------------------------

    def files(self) -> list[str]:
        """The database file and the files SQLite keeps beside it while it is in use."""
        return [] if self._in_memory else _with_sidecars(self._path)

    def backup(self, target: str, progress: Callable[[int, int], None] | None = None) -> None:
        """A consistent copy of the whole database, taken while it stays in use, to a private
        file that replaces `target` only once it is complete: a failure leaves `target` as it
        was. Refused (StoreFailed) when `target` is the database or one of its files, is not
        a regular file, or looks like a database something has open.

        `progress(done_pages, total_pages)` is called as the copy advances.
        """
        destination = Path(target).expanduser()
        if any(same_file(destination, file) for file in self.files()):
            raise StoreFailed(f"{destination} is the database itself (or one of its files): back up elsewhere")
        kind = not_a_regular_file(destination)
        if kind is not None:
            raise StoreFailed(f"{destination} is {kind}: a backup is written to a file")
        in_use = [file for file in _with_sidecars(str(destination))[1:] if os.path.lexists(file)]
        if in_use:
            # Replacing a database that something has open would corrupt it for that process,
            # and its stale WAL would be read into the copy.
            raise StoreFailed(f"{in_use[0]} exists: {destination} looks like a database in use; back up elsewhere")
        with replaced_atomically(destination) as temporary:
            self._copy_to(str(temporary), progress)

    def _copy_to(self, target: str, progress: Callable[[int, int], None] | None) -> None:
        try:
            self._copy_pages(target, progress)
        except sqlite3.Error as exc:
            refusal = _refusal(exc)
            raise refusal or StoreFailed(f"the backup could not be written ({exc}): nothing was replaced") from exc

    def _copy_pages(self, target: str, progress: Callable[[int, int], None] | None) -> None:
        dest = sqlite3.connect(target)
        try:
            if self._in_memory:
                with self._write_lock:
                    self._writer.backup(dest)
                return
            # A connection of its own, so the copy never holds this process's write lock.
            source = self._connect()
            try:

                def report(status: int, remaining: int, total: int) -> None:
                    if progress is not None:
                        progress(total - remaining, total)

                source.backup(dest, pages=256, progress=report)
            finally:
                source.close()
        finally:
            dest.close()

    def check(self, *, thorough: bool = False) -> StoreHealth:
        """SQLite's quick_check (or, `thorough`, integrity_check, which also checks every
        index against its table), its foreign-key check, and each full-text index's own
        check; with the journal mode, WAL size and free pages."""
        problems: list[str] = []
        with self.read() as tx:
            conn = tx.conn
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            pragma = "integrity_check" if thorough else "quick_check"
            found = [str(row[0]) for row in conn.execute(f"PRAGMA {pragma}")]
            if found != ["ok"]:
                problems.extend(found[:20])
            broken = conn.execute("PRAGMA foreign_key_check").fetchall()
            if broken:
                problems.append(
                    f"{len(broken)} rows refer to rows that are gone (foreign keys), e.g. in {broken[0][0]}"
                )
            mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0])
            pages, free = (
                int(conn.execute(f"PRAGMA {name}").fetchone()[0]) for name in ("page_count", "freelist_count")
            )
            page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
        if not self.read_only and version == SCHEMA_VERSION:
            # The full-text indexes' own check; it is a write statement that changes nothing.
            for table in ("memory_fts", "entity_text", "entity_words", "node_text"):
                try:
                    with self._write_tx() as tx:
                        tx.conn.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")
                except sqlite3.DatabaseError as exc:
                    problems.append(f"the full-text index {table} is damaged ({exc}); restore a backup")
        wal = 0
        if not self._in_memory:
            with contextlib.suppress(OSError):
                wal = os.path.getsize(self._path + "-wal")
        details = {
            "journal_mode": mode,
            "wal_bytes": wal,
            "database_bytes": pages * page_size,
            "free_bytes": free * page_size,
            "read_only": self.read_only,
        }
        return StoreHealth(version, SCHEMA_VERSION, tuple(problems), details)

    def size_bytes(self) -> int:
        if self._in_memory:
            page_size = self._writer.execute("PRAGMA page_size").fetchone()[0]
            pages = self._writer.execute("PRAGMA page_count").fetchone()[0]
            return int(page_size) * int(pages)
        total = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(OSError):
                total += os.path.getsize(self._path + suffix)
        return total

    def close(self) -> None:
        if self._closed:
            return
        with self._write_lock:
            self._closed = True
            with self._readers_lock:
                for conn in self._readers:
                    with contextlib.suppress(sqlite3.Error):
                        conn.close()
                self._readers.clear()
            self._writer.close()


def _read_only_uri(file: Path) -> str:
    """The URI SQLite opens `file` read-only with. In WAL mode a reader needs the WAL's
    index (`-shm`) beside the file; where this process cannot create it (a directory it may
    not write to) and it is not there, no process can have written to the database either,
    so it is opened as immutable, which needs no index."""
    if not file.is_file():
        raise StoreUnavailable(f"no database at {file}")
    sidecars = [Path(f"{file}{suffix}") for suffix in ("-wal", "-shm")]
    immutable = not os.access(file.parent, os.W_OK) and not any(p.exists() for p in sidecars)
    return f"{file.as_uri()}?mode=ro{'&immutable=1' if immutable else ''}"


def _split_sql(script: str) -> list[str]:
    """Split a migration into statements, keeping trigger bodies whole."""
    statements, current = [], ""
    for line in script.splitlines(keepends=True):
        if line.strip().startswith("--"):
            continue
        current += line
        if sqlite3.complete_statement(current):
            if current.strip():
                statements.append(current.strip())
            current = ""
    if current.strip():
        statements.append(current.strip())
    return statements
