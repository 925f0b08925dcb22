"""One mnemodb schema in a PostgreSQL database: connections, write serialisation, and the
schema's lifecycle (creation, migrations, version checks).

This is the foundation the PostgreSQL store is built on; `open_store` does not offer that
store until it meets the whole contract (`store/base.py`).

- **Writers are serialised** across processes and hosts, as the contract requires: a write
  transaction is READ COMMITTED and first takes a transaction-scoped advisory lock keyed by
  the schema's name, so every statement after it sees what the writer before committed
  (under REPEATABLE READ the snapshot would predate the wait). One write connection per
  process, used under a lock.
- **Reads** come from a pool, each one REPEATABLE READ READ ONLY: one snapshot for the
  whole transaction, as SQLite's WAL readers have.
- **Migrations** run under their own advisory lock, so several processes starting together
  migrate once; a schema newer than this mnemodb's is refused ("upgrade mnemodb"), and so is
  a schema that holds tables but is not mnemodb's.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool

from mnemodb.model.errors import StoreFailed, StoreUnavailable
from mnemodb.store.postgresql.schema import MIGRATIONS, REQUIRED_EXTENSIONS, SCHEMA_VERSION

__all__ = ["DEFAULT_SCHEMA", "PostgresDatabase"]

DEFAULT_SCHEMA = "mnemodb"
_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_]{0,62}")
APPLICATION = "mnemodb"

# How managed services and packages provide the extensions, for the error that names one missing.
_EXTENSION_HINTS = {
    "pg_trgm": "it ships with PostgreSQL's contrib modules (Debian: postgresql-contrib)",
    "vector": (
        "it is pgvector (Debian: postgresql-<version>-pgvector; Amazon RDS and Aurora, Google Cloud SQL, "
        "Azure Database for PostgreSQL, Supabase and Neon ship it)"
    ),
}


def _lock_key(purpose: str, schema: str) -> int:
    """A stable signed 64-bit advisory-lock key for one purpose in one schema: two mnemodb
    schemas in one database do not contend."""
    digest = hashlib.sha256(f"mnemodb {purpose} {schema}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _split_url(url: str) -> tuple[str, str, str]:
    """(the connection URL for libpq, the schema, the location to show a person: no password)."""
    parts = urlsplit(url)
    options = parse_qsl(parts.query, keep_blank_values=True)
    schema = DEFAULT_SCHEMA
    kept = []
    for key, value in options:
        if key == "schema":
            schema = value
        else:
            kept.append((key, value))
    if not _IDENTIFIER.fullmatch(schema):
        raise StoreUnavailable(
            f"schema={schema!r}: a schema name is lower-case letters, digits and underscores, starting with a letter"
        )
    conninfo = urlunsplit(parts._replace(query=urlencode(kept)))
    shown = parts.netloc.rpartition("@")
    user = shown[0].partition(":")[0]
    netloc = f"{user}@{shown[2]}" if shown[1] else shown[2]
    location = urlunsplit(parts._replace(netloc=netloc, query=urlencode(options)))
    return conninfo, schema, location


def _unreachable(location: str, exc: psycopg.OperationalError) -> StoreUnavailable:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    lowered = text.lower()
    if "password authentication failed" in lowered or "no password supplied" in lowered:
        return StoreUnavailable(f"PostgreSQL refused the login at {location}: check the user and password ({text})")
    if "does not exist" in lowered and "database" in lowered:
        return StoreUnavailable(f"{text} at {location}: create it (createdb) or name another database")
    if "role" in lowered and "does not exist" in lowered:
        return StoreUnavailable(f"{text} at {location}: create the role or name another user")
    return StoreUnavailable(
        f"cannot reach PostgreSQL at {location}: {text} (is the server running and accepting connections there?)"
    )


class PostgresDatabase:
    """Connections to one mnemodb schema, made ready to use (created or migrated) on open."""

    def __init__(self, url: str, *, readers: int = 8, connect_timeout_s: int = 10) -> None:
        self._conninfo, self.schema, self.location = _split_url(url)
        self._connect_kwargs: dict[str, Any] = {
            "connect_timeout": connect_timeout_s,
            "application_name": APPLICATION,
            # Transactions are the explicit `transaction()` blocks below, nothing implicit.
            "autocommit": True,
            # JIT compiles a search's plan for longer than the search takes; search_path keeps
            # every statement inside the schema.
            "options": f"-c jit=off -c search_path={self.schema},public -c lock_timeout=120s",
        }
        self.write_lock_key = _lock_key("write", self.schema)
        self._writer_lock = threading.RLock()
        self._writer = self._connect()
        try:
            self._open_schema()
        except BaseException:
            self._writer.close()
            raise
        self._readers = ConnectionPool(
            self._conninfo,
            min_size=1,
            max_size=max(1, readers),
            kwargs=self._connect_kwargs,
            check=ConnectionPool.check_connection,
            open=True,
        )

    # -- connections ----------------------------------------------------------------------

    def _connect(self) -> psycopg.Connection[Any]:
        try:
            return psycopg.connect(self._conninfo, **self._connect_kwargs)
        except psycopg.OperationalError as exc:
            raise _unreachable(self.location, exc) from None

    @contextlib.contextmanager
    def write(self) -> Iterator[psycopg.Connection[Any]]:
        """A write transaction, serialised against every other writer of this schema; commits
        when the block ends, rolls back if it raises."""
        with self._writer_lock:
            conn = self._writer
            if conn.closed:
                conn = self._writer = self._connect()
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL READ COMMITTED")
                conn.execute("SELECT pg_advisory_xact_lock(%s)", [self.write_lock_key])
                yield conn

    @contextlib.contextmanager
    def read(self) -> Iterator[psycopg.Connection[Any]]:
        """A read transaction on one snapshot."""
        with self._readers.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            yield conn

    def close(self) -> None:
        self._readers.close()
        with self._writer_lock:
            self._writer.close()

    # -- the schema -------------------------------------------------------------------------

    def _version(self, conn: psycopg.Connection[Any]) -> int | None:
        """The schema's version: None when the schema does not exist yet or is empty; refuses a
        schema that is not mnemodb's or is newer than this mnemodb."""
        exists = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", [self.schema]).fetchone()
        if exists is None:
            return None
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s ORDER BY 1", [self.schema]
            )
        ]
        if not tables:
            return None
        marker = None
        if "meta" in tables:
            marker = dict(
                conn.execute(
                    f"SELECT key, value FROM {self.schema}.meta WHERE key IN ('application', 'schema_version')"
                ).fetchall()
            )
        if not marker or marker.get("application") != APPLICATION:
            raise StoreUnavailable(
                f"schema {self.schema!r} at {self.location} holds tables that are not a mnemodb database "
                f"({', '.join(tables[:5])}{', ...' if len(tables) > 5 else ''}): name another with ?schema="
            )
        version = int(marker.get("schema_version", "0"))
        if version > SCHEMA_VERSION:
            raise StoreUnavailable(
                f"the database at {self.location} has schema {version}, newer than this mnemodb's "
                f"{SCHEMA_VERSION}: upgrade mnemodb"
            )
        return version

    def _open_schema(self) -> None:
        conn = self._writer
        with conn.transaction():
            version = self._version(conn)
        if version == SCHEMA_VERSION:
            return
        with conn.transaction():
            # Several processes starting together: one migrates, the others wait and then
            # find the schema current.
            conn.execute("SELECT pg_advisory_xact_lock(%s)", [_lock_key("migrate", self.schema)])
            version = self._version(conn)
            if version == SCHEMA_VERSION:
                return
            self._ensure_extensions(conn)
            try:
                conn.execute(f"CREATE SCHEMA IF NOT EXISTS {self.schema}")
            except pg_errors.InsufficientPrivilege:
                raise StoreUnavailable(
                    f"the role may not create schema {self.schema!r} at {self.location}: grant it CREATE on the "
                    f"database, or create the schema for it (CREATE SCHEMA {self.schema} AUTHORIZATION <role>)"
                ) from None
            for number, migration in enumerate(MIGRATIONS[version or 0 :], start=(version or 0) + 1):
                conn.execute(migration)
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema_version', %s) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    [str(number)],
                )
            conn.execute(
                "INSERT INTO meta (key, value) VALUES ('application', %s) ON CONFLICT (key) DO NOTHING",
                [APPLICATION],
            )

    def _ensure_extensions(self, conn: psycopg.Connection[Any]) -> None:
        available = {
            r[0]: r[1]
            for r in conn.execute(
                "SELECT name, installed_version FROM pg_available_extensions WHERE name = ANY(%s)",
                [list(REQUIRED_EXTENSIONS)],
            )
        }
        database = conn.info.dbname
        for extension in REQUIRED_EXTENSIONS:
            if extension not in available:
                raise StoreUnavailable(
                    f"the PostgreSQL server at {self.location} lacks the {extension} extension, which mnemodb "
                    f"needs: {_EXTENSION_HINTS[extension]}"
                )
            if available[extension] is not None:
                continue
            try:
                with conn.transaction():  # a savepoint: a refusal leaves the migration's transaction usable
                    conn.execute(f"CREATE EXTENSION IF NOT EXISTS {extension}")
            except pg_errors.InsufficientPrivilege:
                raise StoreUnavailable(
                    f"the role may not install the {extension} extension: ask an administrator to run "
                    f"CREATE EXTENSION {extension}; in database {database!r} at {self.location}"
                ) from None
            except psycopg.Error as exc:
                raise StoreFailed(f"could not install the {extension} extension at {self.location}: {exc}") from None
