"""Backup, health check and size of a PostgreSQL store.

A backup is an SQLite mnemodb file: the whole schema copied from one snapshot (a
REPEATABLE READ transaction, so writers go on meanwhile) into a new SQLite database
beside the target, which then replaces the target in one step (`store.copying`). It is a
database any mnemodb opens as it is, and `mnemodb migrate` takes it back into PostgreSQL.
The server's own tools (pg_dump, base backups) remain the way to back up the server as a
whole; this one needs no access to the server's machine and no matching pg_dump version.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg

from mnemodb.model.errors import EngineError, StoreFailed
from mnemodb.store.base import StoreHealth
from mnemodb.store.copying import copy_into
from mnemodb.store.files import not_a_regular_file, replaced_atomically
from mnemodb.store.postgresql.schema import SCHEMA_VERSION
from mnemodb.store.postgresql.sql import got

if TYPE_CHECKING:
    from mnemodb.store.postgresql.store import PgReadTx, PostgresStore

__all__ = ["backup", "check", "size_bytes"]

# The files SQLite keeps beside a database while it is open.
_SIDECARS = ("-wal", "-shm", "-journal")
# At most this many findings of one kind are listed.
_LISTED = 20


def backup(store: PostgresStore, target: str, progress: Callable[[int, int], None] | None = None) -> None:
    """A consistent copy of the whole schema as an SQLite mnemodb file, taken while the
    store stays in use, written beside `target` and renamed over it only once complete: a
    failure leaves `target` as it was. Refused (StoreFailed) when `target` is not a regular
    file or looks like a database something has open (an SQLite file beside its -wal or
    -shm). `progress(done, total)` counts the entries copied (records, change-log entries,
    tokens, scope names, settings)."""
    from mnemodb.store.sqlite.store import SqliteStore

    destination = Path(target).expanduser()
    kind = not_a_regular_file(destination)
    if kind is not None:
        raise StoreFailed(f"{destination} is {kind}: a backup is written to a file")
    in_use = [f"{destination}{suffix}" for suffix in _SIDECARS if os.path.lexists(f"{destination}{suffix}")]
    if in_use:
        # Replacing a database that something has open would corrupt it for that process.
        raise StoreFailed(f"{in_use[0]} exists: {destination} looks like a database in use; back up elsewhere")
    temporary: Path | None = None
    try:
        with replaced_atomically(destination) as temporary:
            copy = SqliteStore(temporary, create_parent=False)
            try:
                with store.read() as source:
                    copy_into(source, copy.write, progress)
            finally:
                # The last connection's close folds the WAL into the file and removes it.
                copy.close()
    except EngineError as exc:
        raise StoreFailed(f"the backup could not be written ({exc}): nothing was replaced") from exc
    finally:
        if temporary is not None:
            for suffix in _SIDECARS:
                with contextlib.suppress(OSError):
                    os.unlink(f"{temporary}{suffix}")


def check(store: PostgresStore, *, thorough: bool = False) -> StoreHealth:
    """The schema's version and the rules the data keeps: counters that match the rows they
    count, a change log without gaps, indexes PostgreSQL may use. `thorough` also reads
    every row of every table and, where the amcheck extension is installed in the
    database, checks every B-tree index against its table (`bt_index_check`). With the
    server's version, the database's and the schema's size and the extensions' versions."""
    problems: list[str] = []
    details: dict[str, Any] = {}
    with store.read() as tx:
        conn = tx.conn
        version_row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = int(version_row[0]) if version_row else 0
        details["server_version"] = str(conn.execute("SHOW server_version").fetchone()[0])  # type: ignore[index]
        details["schema"] = store.database.schema
        details["database_bytes"] = int(
            conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]  # type: ignore[index]
        )
        details["schema_bytes"] = _schema_bytes(tx, store.database.schema)
        details["extensions"] = {
            str(name): str(ext_version)
            for name, ext_version in conn.execute("SELECT extname, extversion FROM pg_extension ORDER BY extname")
        }
        details["change_log_seq"] = tx.current_seq()
        problems.extend(_invalid_indexes(tx, store.database.schema))
        problems.extend(_log_gaps(tx))
        problems.extend(_counter_drift(tx))
        if thorough:
            problems.extend(_unreadable_tables(tx, store.database.schema))
            if "amcheck" in details["extensions"]:
                problems.extend(_damaged_indexes(tx, store.database.schema))
                details["amcheck"] = "every B-tree index checked"
            else:
                details["amcheck"] = "not installed in this database (CREATE EXTENSION amcheck): indexes not checked"
    return StoreHealth(version, SCHEMA_VERSION, tuple(problems), details)


def size_bytes(store: PostgresStore) -> int:
    """The space the schema's tables take on the server, with their indexes and TOAST."""
    with store.read() as tx:
        return _schema_bytes(tx, store.database.schema)


# -- the checks ---------------------------------------------------------------------------------


def _schema_bytes(tx: PgReadTx, schema: str) -> int:
    row = tx.conn.execute(
        "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
        "JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = %s AND c.relkind IN ('r', 'm')",
        [schema],
    ).fetchone()
    return int(row[0]) if row else 0


def _invalid_indexes(tx: PgReadTx, schema: str) -> list[str]:
    """Indexes PostgreSQL marks unusable (a build that failed midway)."""
    rows = tx.conn.execute(
        "SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = %s AND NOT (i.indisvalid AND i.indisready) "
        "ORDER BY c.relname",
        [schema],
    ).fetchall()
    return [f"index {name} is not valid (REINDEX INDEX {schema}.{name})" for (name,) in rows[:_LISTED]]


def _log_gaps(tx: PgReadTx) -> list[str]:
    """The change log numbers its entries 1, 2, 3...: a reader that polls it relies on it."""
    row = tx.conn.execute("SELECT COUNT(*), COALESCE(MIN(seq), 1), COALESCE(MAX(seq), 0) FROM change_log").fetchone()
    if row is None:
        return []
    count, lowest, highest = (int(v) for v in row)
    if count and (lowest != 1 or highest != count):
        return [f"the change log holds {count} entries numbered {lowest} to {highest}: it has gaps"]
    return []


def _counter_drift(tx: PgReadTx) -> list[str]:
    """The per-scope memory and tag counters against the rows they count."""
    problems: list[str] = []
    memories = {
        got(scope): int(n)
        for scope, n in tx.conn.execute("SELECT scope, COUNT(*) FROM memory GROUP BY scope ORDER BY scope")
    }
    tags = {
        got(scope): int(n)
        for scope, n in tx.conn.execute(
            "SELECT m.scope, COUNT(DISTINCT t.tag) FROM memory_tag t JOIN memory m ON m.node = t.node "
            "GROUP BY m.scope ORDER BY m.scope"
        )
    }
    counted = tx.memories_per_scope()
    for scope in sorted({*memories, *counted}):
        rows, counter = memories.get(scope, 0), tx.count_memories([scope])
        if rows != counter or counted.get(scope, 0) != rows:
            problems.append(f"scope {scope} holds {rows} memories but its counter says {counter}")
        tag_rows, tag_counter = tags.get(scope, 0), tx.count_tags([scope])
        if tag_rows != tag_counter:
            problems.append(f"scope {scope} has {tag_rows} distinct tags but its counter says {tag_counter}")
    return problems[:_LISTED]


def _tables(tx: PgReadTx, schema: str) -> list[str]:
    return [
        str(r[0])
        for r in tx.conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace "
            "WHERE s.nspname = %s AND c.relkind = 'r' ORDER BY c.relname",
            [schema],
        )
    ]


def _unreadable_tables(tx: PgReadTx, schema: str) -> list[str]:
    """Read every row of every table (and its TOAST): a damaged page fails the read."""
    problems: list[str] = []
    for table in _tables(tx, schema):
        try:
            with tx.conn.transaction():
                # Every column's text, so that values kept out of line are read too.
                tx.conn.execute(f"SELECT SUM(length(t::text)) FROM {schema}.{table} t").fetchone()
        except psycopg.errors.QueryCanceled:
            raise
        except psycopg.DatabaseError as exc:
            problems.append(f"table {table} cannot be read: {_first_line(exc)}")
    return problems[:_LISTED]


def _damaged_indexes(tx: PgReadTx, schema: str) -> list[str]:
    """amcheck's bt_index_check on every B-tree index, each row of the table looked up in it
    (`heapallindexed`): read-only, and it takes no lock that stops writers."""
    problems: list[str] = []
    indexes = tx.conn.execute(
        "SELECT c.oid, c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "JOIN pg_namespace s ON s.oid = c.relnamespace JOIN pg_am a ON a.oid = c.relam "
        "WHERE s.nspname = %s AND a.amname = 'btree' AND i.indisvalid AND i.indisready ORDER BY c.relname",
        [schema],
    ).fetchall()
    for oid, name in indexes:
        try:
            with tx.conn.transaction():
                tx.conn.execute("SELECT bt_index_check(%s::oid, true)", [oid])
        except psycopg.errors.QueryCanceled:
            raise
        except psycopg.DatabaseError as exc:
            problems.append(f"index {name} is damaged ({_first_line(exc)}): REINDEX INDEX {schema}.{name}")
    return problems[:_LISTED]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
