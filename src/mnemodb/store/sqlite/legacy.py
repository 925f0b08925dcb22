"""Opening a database file that memdb made: detect it, back it up, migrate it in place.

memdb keeps `memories`, `tags` and `relationships` tables (plural names) with integer
ids. The migration copies every row into mnemodb's tables in the same transaction that
creates them, keeping memdb's integer ids as the node and edge row ids so that every
id a client saw before still means the same memory, then drops the old tables. A copy
of the original file is written first, next to it.
"""

from __future__ import annotations

import hashlib
import logging
import re
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mnemodb.model import ops
from mnemodb.model.ids import SHARED, ulid_at
from mnemodb.model.rules import normalize_tag
from mnemodb.model.times import epoch_ms
from mnemodb.store.files import create_private_file
from mnemodb.store.sqlite.schema import MIGRATIONS

if TYPE_CHECKING:
    from mnemodb.store.sqlite.store import SqliteWriteTx

log = logging.getLogger(__name__)

_TABLES = ("memories", "tags", "relationships")


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def is_memdb_database(conn: sqlite3.Connection) -> bool:
    """True for a file holding memdb's schema (and not yet migrated)."""
    memory_columns = _columns(conn, "memories")
    return {"id", "content", "hash"} <= memory_columns and "memory_id" in _columns(conn, "tags")


def backup_before_migration(conn: sqlite3.Connection, path: str) -> Path:
    """Copy the whole memdb database next to it before anything is changed."""
    target = Path(path + ".memdb-backup")
    n = 1
    while target.exists():
        n += 1
        target = Path(f"{path}.memdb-backup-{n}")
    create_private_file(target)  # the copy holds what the database holds: as private
    dest = sqlite3.connect(target)
    try:
        conn.backup(dest)
    finally:
        dest.close()
    log.warning("found a memdb database at %s; a copy was saved to %s before migrating it", path, target)
    return target


def parse_timestamp(text: Any) -> int:
    """memdb's `YYYY-MM-DD HH:MM:SS` (UTC, SQLite CURRENT_TIMESTAMP) as epoch milliseconds."""
    if isinstance(text, int | float):
        return int(text)
    value = str(text or "").strip().replace("T", " ").rstrip("Z")
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d"):
        try:
            return epoch_ms(datetime.strptime(value, fmt))
        except ValueError:
            continue
    return 0


def migrate_in_place(tx: SqliteWriteTx) -> tuple[int, int]:
    """Move memdb's rows into mnemodb's tables (already created in this transaction)."""
    conn = tx.conn
    memory_columns = _columns(conn, "memories")
    tags: dict[int, list[str]] = {}
    for memory_id, tag in conn.execute("SELECT memory_id, tag FROM tags ORDER BY memory_id, tag"):
        # Older memdb versions stored tags as typed; searches compare canonical tags.
        tags.setdefault(memory_id, []).append(normalize_tag(str(tag)))

    def col(name: str, default: str) -> str:
        return name if name in memory_columns else default

    select = ", ".join(
        [
            "id",
            "content",
            col("summary", "NULL"),
            col("importance", "0"),
            col("memory_type", "'general'"),
            col("created_at", "NULL"),
            col("accessed_at", "NULL"),
            "hash",
        ]
    )
    rows = conn.execute(f"SELECT {select} FROM memories ORDER BY id").fetchall()
    # memdb id -> the node it became. Files from memdb's MD5 era carry 32-character
    # hashes that no hash tool accepts; every memory is re-hashed with SHA-256 here, and
    # content stored twice (once per era) becomes one memory with both sets of tags.
    node_of: dict[int, int] = {}
    by_hash: dict[str, int] = {}
    for memory_id, content, summary, importance, memory_type, created_at, accessed_at, _old in rows:
        digest = hashlib.sha256(str(content).encode("utf-8")).hexdigest()
        kept = by_hash.get(digest)
        if kept is not None:
            node_of[memory_id] = kept
            conn.execute(
                "UPDATE memory SET importance = MAX(importance, ?) WHERE node = ?",
                [max(0, min(10, int(importance or 0))), kept],
            )
            added = tx.add_tags(kept, tags.get(memory_id, []))
            if added:
                memory = tx.memory_by_pk(kept)
                assert memory is not None
                tx.append_change(parse_timestamp(created_at), *ops.tags_added(SHARED, memory.id, added))
            continue
        at = parse_timestamp(created_at)
        pk = tx.insert_node(ulid_at(at), SHARED, "Memory", {}, at, pk=memory_id)
        level = max(0, min(10, int(importance or 0)))
        tx.insert_memory(pk, SHARED, digest, str(content), summary, level, memory_type or "general")
        tx.add_tags(pk, tags.get(memory_id, []))
        accessed = parse_timestamp(accessed_at) if accessed_at else 0
        if accessed > at:
            conn.execute("INSERT INTO node_access (node, count, last_at) VALUES (?, 0, ?)", [pk, accessed])
        memory = tx.memory_by_pk(pk)
        assert memory is not None
        tx.append_change(at, *ops.memory_created(memory))
        node_of[memory_id] = by_hash[digest] = pk

    relationship_count = 0
    if _columns(conn, "relationships"):
        rel_columns = _columns(conn, "relationships")
        src = "from_memory_id" if "from_memory_id" in rel_columns else "from_id"
        dst = "to_memory_id" if "to_memory_id" in rel_columns else "to_id"
        created = "created_at" if "created_at" in rel_columns else "NULL"
        for rel_id, from_id, to_id, relation_type, created_at in conn.execute(
            f"SELECT id, {src}, {dst}, relation_type, {created} FROM relationships ORDER BY id"
        ).fetchall():
            source, target = node_of.get(from_id), node_of.get(to_id)
            if source is None or target is None or source == target:
                continue
            if tx.find_edges(source, target, relation_type):
                continue  # both ends were merged duplicates: the link already exists
            at = parse_timestamp(created_at)
            edge_pk = tx.insert_edge(ulid_at(at), source, target, relation_type, SHARED, {}, at, at, pk=rel_id)
            edge = tx.edge_by_pk(edge_pk)
            assert edge is not None
            tx.append_change(at, *ops.edge_created(edge))
            relationship_count += 1

    # New ids continue after the highest id memdb ever gave, even one since deleted: a
    # client may still hold it.
    for old, new in (("memories", "node"), ("relationships", "edge")):
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", [old]).fetchone()
        if row is None:
            continue
        if conn.execute("SELECT 1 FROM sqlite_sequence WHERE name = ?", [new]).fetchone():
            conn.execute("UPDATE sqlite_sequence SET seq = MAX(seq, ?) WHERE name = ?", [row[0], new])
        else:
            conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", [new, row[0]])

    # Drop the old tables last. Dropping memdb's FTS5 table takes its shadow tables with
    # it, and dropping a table takes its triggers.
    ours = set(re.findall(r"CREATE VIRTUAL TABLE (\w+)", "".join(MIGRATIONS)))
    virtual = [
        name
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%'"
        )
        if name not in ours
    ]
    for name in virtual:
        conn.execute(f'DROP TABLE IF EXISTS "{name}"')
    for table in ("relationships", "tags", "memories"):
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    log.warning("migrated %d memories and %d relationships from memdb's schema", len(by_hash), relationship_count)
    return len(by_hash), relationship_count
