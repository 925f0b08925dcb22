"""The PostgreSQL the tests start by themselves: what the PostgreSQL store will be tested on.

These check the server, not a store: that it runs, that the extensions the store needs are
there, and that the driver talks to it.
"""

from __future__ import annotations

import itertools

import psycopg
import pytest

from mnemodb.store import open_store
from postgres_server import PostgresServer

_databases = itertools.count()


def fresh_database(server: PostgresServer) -> str:
    name = f"t{next(_databases)}"
    server.psql(f"CREATE DATABASE {name}")
    return name


def test_the_server_is_postgresql_18_on_loopback(postgres: PostgresServer) -> None:
    assert postgres.psql("SHOW server_version").startswith("18.")
    assert postgres.psql("SHOW listen_addresses") == "127.0.0.1"
    assert postgres.psql("SHOW jit") == "off"


def test_pg_trgm_and_pgvector_can_be_created_and_used(postgres: PostgresServer) -> None:
    database = fresh_database(postgres)
    with psycopg.connect(postgres.url(database), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION pg_trgm")
        conn.execute("CREATE EXTENSION vector")
        conn.execute("CREATE TABLE doc (id int PRIMARY KEY, body text, embedding vector(3))")
        conn.execute("CREATE INDEX doc_body ON doc USING gin (body gin_trgm_ops)")
        conn.execute("CREATE INDEX doc_embedding ON doc USING hnsw (embedding vector_cosine_ops)")
        conn.execute("INSERT INTO doc VALUES (1, 'AuthService handles login', '[1,0,0]'), (2, 'billing', '[0,1,0]')")
        assert conn.execute("SELECT id FROM doc WHERE body LIKE '%Service%'").fetchall() == [(1,)]
        nearest = conn.execute("SELECT id FROM doc ORDER BY embedding <=> '[0.9,0.1,0]' LIMIT 1").fetchone()
        assert nearest == (1,)


def test_text_cannot_hold_u0000_there_which_is_why_the_store_escapes_it(postgres: PostgresServer) -> None:
    """The store contract keeps U+0000 in text; PostgreSQL's text refuses it, so the
    PostgreSQL store must escape it (docs/design.md, "The store contract")."""
    with psycopg.connect(postgres.url()) as conn, pytest.raises(psycopg.DataError):
        conn.execute("SELECT %s::text", ["a\x00b"])


def test_open_store_opens_a_postgresql_url_as_the_postgresql_store(postgres: PostgresServer) -> None:
    store = open_store(f"{postgres.url()}?schema=opened_by_url")
    try:
        assert type(store).__name__ == "PostgresStore"
        assert store.location == f"{postgres.url()}?schema=opened_by_url"
        with store.read() as tx:
            assert tx.current_seq() == 0
    finally:
        store.close()
