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
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import errors as pg_errors
from psycopg_pool import ConnectionPool, PoolTimeout

from mnemodb.model.errors import OperationTimeout, StoreFailed, StoreUnavailable
from mnemodb.store.postgresql.schema import MIGRATIONS, REQUIRED_EXTENSIONS, SCHEMA_VERSION
from mnemodb.store.postgresql.watchdog import cancelled_at as _cancelled_at

__all__ = ["DEFAULT_SCHEMA", "PostgresDatabase"]

DEFAULT_SCHEMA = "mnemodb"
# Read connections per process, and how long a read waits for one when all are busy
# (then it fails with a clear error rather than hang): `?pool_size=` and `?pool_timeout=`.
DEFAULT_READERS = 8
DEFAULT_POOL_TIMEOUT_S = 10.0
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


# Options of a mnemodb URL that are mnemodb's, not libpq's: they are taken out of the URL
# before it is handed to libpq (which refuses options it does not know).
_OWN_OPTIONS = ("schema", "pool_size", "pool_timeout", "vector_index")
VECTOR_INDEXES = ("auto", "exact")


def _split_url(url: str) -> tuple[str, str, str, dict[str, str]]:
    """(the connection URL for libpq, the schema, the location to show a person (no
    password), mnemodb's own options: `pool_size`, `pool_timeout`, `vector_index`)."""
    parts = urlsplit(url)
    options = parse_qsl(parts.query, keep_blank_values=True)
    own: dict[str, str] = {}
    kept = []
    for key, value in options:
        if key in _OWN_OPTIONS:
            own[key] = value
        else:
            kept.append((key, value))
    schema = own.pop("schema", DEFAULT_SCHEMA)
    if not _IDENTIFIER.fullmatch(schema):
        raise StoreUnavailable(
            f"schema={schema!r}: a schema name is lower-case letters, digits and underscores, starting with a letter"
        )
    conninfo = urlunsplit(parts._replace(query=urlencode(kept)))
    shown = parts.netloc.rpartition("@")
    user = shown[0].partition(":")[0]
    netloc = f"{user}@{shown[2]}" if shown[1] else shown[2]
    location = urlunsplit(parts._replace(netloc=netloc, query=urlencode(options)))
    return conninfo, schema, location, own


# A pooled connection unused for longer than this is checked (one empty round trip) before
# it is lent: the server may have dropped it (a restart, a failover, an idle timeout). One
# in steady use is not, which saves that round trip on every read.
_CHECK_IDLE_AFTER_S = 2.0


def _mark_returned(conn: psycopg.Connection[Any]) -> None:
    conn._mnemodb_returned_at = time.monotonic()  # type: ignore[attr-defined]


def _check_if_idle(conn: psycopg.Connection[Any]) -> None:
    if time.monotonic() - getattr(conn, "_mnemodb_returned_at", 0.0) > _CHECK_IDLE_AFTER_S:
        ConnectionPool.check_connection(conn)


def _number(own: dict[str, str], key: str, default: float, *, least: float) -> float:
    raw = own.get(key)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = least - 1
    if not value >= least:
        raise StoreUnavailable(f"{key}={raw!r} in the database URL: a number, at least {least:g}")
    return value


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
    """Connections to one mnemodb schema, made ready to use (created or migrated) on open.

    `readers` bounds the pool of read connections; a read that finds them all busy waits
    at most `pool_timeout_s` (or its deadline) and then fails with a clear error instead of
    hanging. With `read_only`, nothing is created or migrated and every write is refused.
    """

    def __init__(
        self,
        url: str,
        *,
        readers: int | None = None,
        connect_timeout_s: int = 10,
        pool_timeout_s: float | None = None,
        read_only: bool = False,
    ) -> None:
        self._conninfo, self.schema, self.location, own = _split_url(url)
        self.read_only = read_only
        self.readers = readers or int(_number(own, "pool_size", DEFAULT_READERS, least=1))
        self._pool_timeout_s = (
            pool_timeout_s
            if pool_timeout_s is not None
            else _number(own, "pool_timeout", DEFAULT_POOL_TIMEOUT_S, least=0)
        )
        self.vector_index = own.get("vector_index", "auto")
        if self.vector_index not in VECTOR_INDEXES:
            raise StoreUnavailable(
                f"vector_index={self.vector_index!r} in the database URL: one of {', '.join(VECTOR_INDEXES)}"
            )
        options = f"-c jit=off -c search_path={self.schema},public -c lock_timeout=120s"
        self._connect_kwargs: dict[str, Any] = {
            "connect_timeout": connect_timeout_s,
            "application_name": APPLICATION,
            # Transactions are the explicit `transaction()` blocks below, nothing implicit.
            "autocommit": True,
            # JIT compiles a search's plan for longer than the search takes; search_path keeps
            # every statement inside the schema.
            "options": options,
        }
        # Readers start every transaction as one snapshot that may not write, without a
        # statement of its own to say so.
        self._reader_kwargs = {
            **self._connect_kwargs,
            "options": options
            + " -c default_transaction_isolation=repeatable\\ read -c default_transaction_read_only=on",
        }
        self.write_lock_key = _lock_key("write", self.schema)
        self._closed = False
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
            max_size=self.readers,
            kwargs=self._reader_kwargs,
            check=_check_if_idle,
            reset=_mark_returned,
            open=False,
            name=f"mnemodb-{self.schema}",
        )
        try:
            self._readers.open(wait=True, timeout=connect_timeout_s)
        except PoolTimeout:
            self._readers.close()
            self._writer.close()
            raise StoreUnavailable(f"cannot open read connections to PostgreSQL at {self.location}") from None

    # -- connections ----------------------------------------------------------------------

    def connect(self) -> psycopg.Connection[Any]:
        """A new connection of this database's, outside the pool (autocommit): for work that
        cannot run inside a transaction, such as building an index concurrently."""
        return self._connect()

    def _connect(self) -> psycopg.Connection[Any]:
        try:
            return psycopg.connect(self._conninfo, **self._connect_kwargs)
        except psycopg.OperationalError as exc:
            raise _unreachable(self.location, exc) from None

    @contextlib.contextmanager
    def write(self, deadline: float | None = None) -> Iterator[psycopg.Connection[Any]]:
        """A write transaction, serialised against every other writer of this schema; commits
        when the block ends, rolls back if it raises. A statement still running at
        `deadline` (a `time.monotonic()` value) is cancelled, waiting for the lock included."""
        if self.read_only:
            raise StoreFailed(f"the database at {self.location} was opened read-only: nothing was changed")
        with self._writer_lock:
            self._ensure_open()
            conn = self._begin_write()
            try:
                with _cancelled_at(conn, deadline) as disarm:
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", [self.write_lock_key])
                    yield conn
                    # The work is done: the deadline must not interrupt the commit.
                    disarm()
            except BaseException:
                if not conn.closed:
                    with contextlib.suppress(psycopg.Error):
                        conn.execute("ROLLBACK")
                raise
            try:
                conn.execute("COMMIT")
            except psycopg.OperationalError as exc:
                raise StoreUnavailable(
                    f"the connection to PostgreSQL at {self.location} was lost while committing ({exc}): the "
                    "change may or may not have been made; look before retrying"
                ) from exc

    def _begin_write(self) -> psycopg.Connection[Any]:
        """The write connection, in a new transaction. A connection the server dropped since
        its last use (a restart, a failover) is replaced once: nothing was done on it yet."""
        conn = self._writer
        if not conn.closed:
            try:
                conn.execute("BEGIN")
                return conn
            except psycopg.OperationalError:
                if not conn.broken:
                    raise
        conn.close()
        conn = self._writer = self._connect()
        conn.execute("BEGIN")
        return conn

    @contextlib.contextmanager
    def read(self, deadline: float | None = None) -> Iterator[psycopg.Connection[Any]]:
        """A read transaction on one snapshot; a statement still running at `deadline` is cancelled."""
        self._ensure_open()
        wait = self._pool_timeout_s
        if deadline is not None:
            wait = max(0.0, min(wait, deadline - time.monotonic()))
        with contextlib.ExitStack() as stack:
            try:
                conn = stack.enter_context(self._readers.connection(timeout=wait))
            except PoolTimeout:
                if deadline is not None and time.monotonic() >= deadline:
                    raise OperationTimeout("the operation ran past its time limit waiting for a connection") from None
                raise StoreUnavailable(
                    f"no read connection to PostgreSQL at {self.location} could be had in {wait:g} s (all "
                    f"{self.readers} busy, or the server unreachable): nothing was read; retry"
                ) from None
            with _cancelled_at(conn, deadline), conn.transaction():
                yield conn

    def _ensure_open(self) -> None:
        if self._closed:
            raise StoreUnavailable("the store is closed")

    def close(self) -> None:
        self._closed = True
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
        if self.read_only:
            raise StoreUnavailable(
                f"the database at {self.location} has schema {version or 0}, not this mnemodb's "
                f"{SCHEMA_VERSION}, and was opened read-only: open it once where it may be written to "
                "create or upgrade it"
            )
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
                if callable(migration):
                    migration(conn)
                else:
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
