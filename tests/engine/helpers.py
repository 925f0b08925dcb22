"""What several engine test files share: a store of the backend the suite runs against
(`stores.py`, MNEMODB_TEST_STORE), the mark of a test that is about SQLite itself, and the
few reads of stored data the store contract has no method for.

A test reads what a write left in the database through the contract (`committed`), not by
SQL, so it proves the same thing on every store. Only where the contract has no read for
a fact (a memory's turn-context text; whether a secret is anywhere in the database) does a
helper here look into the database itself, in each backend's own way.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest

from mnemodb.engine import Engine
from mnemodb.store import open_store
from mnemodb.store.base import ReadTx, Store
from stores import chosen_backend, store_location

__all__ = ["committed", "memory_context", "open_engine_at", "sqlite_only", "store_at", "stored_bytes"]


def sqlite_only(why: str) -> pytest.MarkDecorator:
    """Skip a test that is about SQLite itself (`why`) when the suite runs on another store."""
    return pytest.mark.skipif(chosen_backend() != "sqlite", reason=f"about SQLite itself: {why}")


def store_at(db_path: Path) -> Store:
    """The store of the chosen backend that `db_path` names: the same path, the same data."""
    return open_store(store_location(db_path))


def open_engine_at(db_path: Path, **options: Any) -> Engine:
    """`Engine.open` on the chosen backend's database for `db_path`."""
    return Engine.open(store_location(db_path), **options)


@contextlib.contextmanager
def committed(db_path: Path) -> Iterator[ReadTx]:
    """A read of the database `db_path` names through a store of its own: what was committed
    there, whatever an engine that wrote it still holds in its own connection or caches."""
    store = store_at(db_path)
    try:
        with store.read() as tx:
            yield tx
    finally:
        store.close()


def _server_connection(store: Store) -> tuple[Any, str]:
    """A psycopg connection of the test's own to a server store's database, and the store's
    schema (the `schema=` option of its location, which libpq does not take)."""
    import psycopg

    parts = urlsplit(store.location)
    options = parse_qsl(parts.query, keep_blank_values=True)
    schema = dict(options).get("schema", "mnemodb")
    libpq = [(k, v) for k, v in options if k not in ("schema", "pool_size", "pool_timeout")]
    return psycopg.connect(urlunsplit(parts._replace(query=urlencode(libpq))), autocommit=True), schema


def stored_bytes(store: Store) -> bytes:
    """Everything the database holds, to search for a value that must not be there: the bytes
    of every file of a store kept in files (the journal and free pages included), or the text
    of every row of every table of a server store's schema."""
    files = [Path(name) for name in store.files()]
    if files:
        return b"".join(f.read_bytes() for f in files if f.exists())
    conn, schema = _server_connection(store)
    with conn:
        tables = [
            str(row[0])
            for row in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s ORDER BY 1", [schema]
            )
        ]
        assert tables, f"schema {schema} holds no tables: the search would prove nothing"
        rows = [str(row[0]) for table in tables for row in conn.execute(f'SELECT t::text FROM "{schema}"."{table}" t')]
    return "\n".join(rows).encode()


def memory_context(store: Store, content: str) -> str | None:
    """The turn-context text the store keeps for the memory holding `content` (None: none),
    read from its `memory` table: the contract derives this text but has no read of it, and
    the tests hold it to the exact text (`MemoryWrites.insert_memory`)."""
    files = store.files()
    if files:
        with contextlib.closing(sqlite3.connect(files[0])) as conn:
            row = conn.execute("SELECT context FROM memory WHERE content = ?", [content]).fetchone()
    else:
        conn_pg, schema = _server_connection(store)
        with conn_pg:
            row = conn_pg.execute(f'SELECT context FROM "{schema}".memory WHERE content = %s', [content]).fetchone()
    assert row is not None, f"no memory holds {content!r}"
    return None if row[0] is None else str(row[0])
