"""The PostgreSQL store's foundation on a real server: the schema's creation and version
checks, migrations under concurrent starts, serialised writers, and the errors a person
sees when the server, the database, the role or an extension is not what mnemodb needs."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator

import psycopg
import pytest

from mnemodb.engine import Engine
from mnemodb.engine.tokens import Grant, granted
from mnemodb.model.errors import StoreUnavailable
from mnemodb.model.ids import content_hash, new_ulid
from mnemodb.store import open_store
from mnemodb.store.postgresql import database as postgres_database
from mnemodb.store.postgresql.database import PostgresDatabase
from mnemodb.store.postgresql.schema import MIGRATIONS, SCHEMA_VERSION
from postgres_server import PostgresServer

T0 = 1_700_000_000_000

_names = itertools.count()


@pytest.fixture
def database_url(postgres: PostgresServer) -> str:
    """The URL of a new, empty database on the test server."""
    name = f"db{next(_names)}"
    postgres.psql(f"CREATE DATABASE {name}")
    return postgres.url(name)


@pytest.fixture
def opened(database_url: str) -> Iterator[PostgresDatabase]:
    database = PostgresDatabase(database_url)
    try:
        yield database
    finally:
        database.close()


def meta(url: str, schema: str = "mnemodb") -> dict[str, str]:
    with psycopg.connect(url) as conn:
        return dict(conn.execute(f"SELECT key, value FROM {schema}.meta").fetchall())


def test_opening_creates_the_schema_marked_as_mnemodb_s_at_the_latest_version(opened: PostgresDatabase) -> None:
    url = opened.location
    assert meta(url) == {"application": "mnemodb", "schema_version": str(SCHEMA_VERSION)}
    with psycopg.connect(url) as conn:
        installed = {r[0] for r in conn.execute("SELECT extname FROM pg_extension")}
    assert {"pg_trgm", "vector"} <= installed


def test_a_schema_of_another_name_is_a_separate_database(database_url: str) -> None:
    first = PostgresDatabase(database_url + "?schema=team_a")
    second = PostgresDatabase(database_url + "?schema=team_b")
    try:
        with first.write() as conn:
            conn.execute("INSERT INTO meta (key, value) VALUES ('owner', 'a')")
        assert meta(database_url, "team_a")["owner"] == "a"
        assert "owner" not in meta(database_url, "team_b")
        assert first.write_lock_key != second.write_lock_key
    finally:
        first.close()
        second.close()


def test_processes_starting_together_migrate_once(database_url: str) -> None:
    """Six openers at once on an empty database: one creates the schema, the others wait
    for it and find it current (a second run of the migrations would fail: CREATE TABLE)."""
    start = threading.Barrier(6)
    failures: list[BaseException] = []
    opened: list[PostgresDatabase] = []

    def open_one() -> None:
        start.wait()
        try:
            opened.append(PostgresDatabase(database_url, readers=1))
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for database in opened:
        database.close()
    assert failures == []
    assert len(opened) == 6
    assert meta(database_url)["schema_version"] == str(SCHEMA_VERSION)


def test_a_schema_2_database_is_upgraded_keeping_every_log_entry(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Schema 3 adds who made each change and archived memories: a database made at schema
    2, with what that version wrote, keeps every entry (made by nobody known) and every
    memory (not archived), and takes both new kinds of write."""
    monkeypatch.setattr(postgres_database, "MIGRATIONS", MIGRATIONS[:2])
    monkeypatch.setattr(postgres_database, "SCHEMA_VERSION", 2)
    old = open_store(database_url)
    try:
        with old.write() as tx:
            node_id = new_ulid()
            pk = tx.insert_node(node_id, "shared", "Memory", {}, T0)
            content = "deploys run on fridays"
            tx.insert_memory(pk, "shared", content_hash(content), content, None, 0, "fact")
            for seq, op in enumerate(("create_node", "update_node", "add_tags"), start=1):
                tx.conn.execute(  # type: ignore[attr-defined]
                    "INSERT INTO change_log (seq, at, scope, op, target, data) VALUES (%s, %s, 'shared', %s, %s, '{}')",
                    [seq, T0 + seq, op, node_id],
                )
    finally:
        old.close()
    assert meta(database_url)["schema_version"] == "2"
    monkeypatch.undo()
    with Engine.open(database_url) as engine:
        assert meta(database_url)["schema_version"] == str(SCHEMA_VERSION)
        log = engine.changes()
        assert [(c.seq, c.at, c.op, c.target, c.actor) for c in log] == [
            (1, T0 + 1, "create_node", node_id, None),
            (2, T0 + 2, "update_node", node_id, None),
            (3, T0 + 3, "add_tags", node_id, None),
        ]
        assert [c.seq for c in engine.change_log.page(every_scope=True, actors=[None]).changes] == [3, 2, 1]
        assert [h.memory.id for h in engine.memories.search("deploys")] == [node_id]
        with granted(Grant("ops-token", ("shared",), "shared", ("shared",))):
            assert engine.items.archive(node_id).archived_at is not None
        assert engine.memories.search("deploys") == []
        assert engine.changes()[-1].actor == "ops-token"


def test_a_newer_schema_is_refused_untouched(database_url: str) -> None:
    PostgresDatabase(database_url).close()
    with psycopg.connect(database_url) as conn:
        conn.execute("UPDATE mnemodb.meta SET value = %s WHERE key = 'schema_version'", [str(SCHEMA_VERSION + 1)])
    with pytest.raises(StoreUnavailable, match=f"schema {SCHEMA_VERSION + 1}, newer than .*upgrade mnemodb"):
        PostgresDatabase(database_url)
    assert meta(database_url)["schema_version"] == str(SCHEMA_VERSION + 1)


def test_a_schema_holding_another_application_s_tables_is_refused_untouched(database_url: str) -> None:
    with psycopg.connect(database_url) as conn:
        conn.execute("CREATE SCHEMA mnemodb")
        conn.execute("CREATE TABLE mnemodb.invoices (id int)")
    with pytest.raises(StoreUnavailable, match=r"not a mnemodb database \(invoices\): name another with"):
        PostgresDatabase(database_url)
    with psycopg.connect(database_url) as conn:
        tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'mnemodb'")]
    assert tables == ["invoices"]


def test_writers_are_serialised_so_read_modify_write_loses_nothing(opened: PostgresDatabase) -> None:
    """Four threads each add one to a counter fifty times, each time in its own write
    transaction that reads the counter and writes it back: READ COMMITTED alone would lose
    increments; the write lock loses none."""
    with opened.write() as conn:
        conn.execute("INSERT INTO meta (key, value) VALUES ('counter', '0')")

    def add(database: PostgresDatabase) -> None:
        for _ in range(50):
            with database.write() as conn:
                row = conn.execute("SELECT value FROM meta WHERE key = 'counter'").fetchone()
                assert row is not None
                conn.execute("UPDATE meta SET value = %s WHERE key = 'counter'", [str(int(row[0]) + 1)])

    # A second process's writer: its own PostgresDatabase, its own connection.
    other = PostgresDatabase(opened.location)
    try:
        threads = [threading.Thread(target=add, args=[database]) for database in (opened, opened, other, other)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        other.close()
    assert meta(opened.location)["counter"] == "200"


def test_a_read_sees_one_snapshot_and_cannot_write(opened: PostgresDatabase) -> None:
    with opened.read() as conn:
        before = conn.execute("SELECT count(*) FROM meta").fetchone()
        with opened.write() as writer:
            writer.execute("INSERT INTO meta (key, value) VALUES ('later', 'x')")
        assert conn.execute("SELECT count(*) FROM meta").fetchone() == before
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            conn.execute("INSERT INTO meta (key, value) VALUES ('nope', 'x')")


def test_an_unreachable_server_is_a_one_line_error_that_says_where(postgres: PostgresServer) -> None:
    with socket_closed_port() as port:
        url = f"postgresql://postgres:secret@127.0.0.1:{port}/postgres"
        with pytest.raises(StoreUnavailable) as refused:
            PostgresDatabase(url, connect_timeout_s=2)
    message = str(refused.value)
    assert message.startswith(f"cannot reach PostgreSQL at postgresql://postgres@127.0.0.1:{port}/postgres: ")
    assert "is the server running" in message
    assert "secret" not in message


def test_a_missing_database_says_how_to_make_it(postgres: PostgresServer) -> None:
    with pytest.raises(StoreUnavailable, match=r'database "nowhere" does not exist.*create it \(createdb\)'):
        PostgresDatabase(postgres.url("nowhere"))


def test_a_role_that_may_not_create_the_schema_is_told_what_to_grant(
    postgres: PostgresServer, database_url: str
) -> None:
    role = f"reader{next(_names)}"
    postgres.psql(f"CREATE ROLE {role} LOGIN")
    # The extensions are there already (an administrator's part); the role lacks CREATE.
    PostgresDatabase(database_url + "?schema=admin_made").close()
    url = database_url.replace("postgres@", f"{role}@")
    with pytest.raises(StoreUnavailable, match=r"may not create schema 'mnemodb'.*grant it CREATE"):
        PostgresDatabase(url)


def test_a_schema_name_must_be_a_plain_identifier(postgres: PostgresServer) -> None:
    with pytest.raises(StoreUnavailable, match="a schema name is lower-case letters"):
        PostgresDatabase(postgres.url() + "?schema=x;DROP TABLE y")


class socket_closed_port:
    """A loopback port nothing listens on, for the block's duration."""

    def __enter__(self) -> int:
        import socket

        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        port: int = self._socket.getsockname()[1]
        return port

    def __exit__(self, *exc: object) -> None:
        self._socket.close()


def test_a_role_that_may_not_install_an_extension_is_told_who_can(postgres: PostgresServer, database_url: str) -> None:
    """pgvector is not a trusted extension: a role with every right on its database but
    not superuser cannot install it, and is told what to ask an administrator for."""
    role = f"owner{next(_names)}"
    database = database_url.rsplit("/", 1)[1]
    postgres.psql(f"CREATE ROLE {role} LOGIN")
    postgres.psql(f"GRANT ALL ON DATABASE {database} TO {role}")
    url = database_url.replace("postgres@", f"{role}@")
    with pytest.raises(
        StoreUnavailable, match=rf"ask an administrator to run CREATE EXTENSION vector; in database '{database}'"
    ):
        PostgresDatabase(url)
    postgres.psql("CREATE EXTENSION vector", database)
    PostgresDatabase(url).close()  # with the extension there, the role makes the rest itself
    assert meta(database_url)["application"] == "mnemodb"


def test_a_read_that_finds_every_connection_busy_fails_clearly_instead_of_waiting(database_url: str) -> None:
    database = PostgresDatabase(database_url + "?pool_size=1&pool_timeout=0.3")
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with database.read():
            holding.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(30)
        with pytest.raises(StoreUnavailable, match=r"could be had in 0.3 s \(all 1 busy.*retry"), database.read():
            pass
    finally:
        release.set()
        holder.join(30)
        database.close()
    assert database.readers == 1


@pytest.mark.parametrize(("option", "says"), [("pool_size=0", "pool_size='0'"), ("pool_timeout=soon", "pool_timeout")])
def test_a_bad_pool_option_is_refused_by_name(database_url: str, option: str, says: str) -> None:
    with pytest.raises(StoreUnavailable, match=says):
        PostgresDatabase(f"{database_url}?{option}")
