"""Opening files memdb made, beyond the current memdb schema (tests/store/test_migrations.py):
how its timestamps are read, how such a file is recognised, files from older memdb versions
with fewer columns, and backups that do not overwrite an earlier one."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemodb.engine import Engine
from mnemodb.store.sqlite.legacy import is_memdb_database, parse_timestamp

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def ms(moment: datetime) -> int:
    return (moment - EPOCH) // timedelta(milliseconds=1)


@contextmanager
def connect(path: Path) -> Iterator[sqlite3.Connection]:
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        yield conn


# -- timestamps -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "moment"),
    [
        ("2024-01-02 03:04:05", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2024-01-02T03:04:05", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2024-01-02T03:04:05Z", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("  2024-01-02 03:04:05 ", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2024-01-02 03:04:05.250", datetime(2024, 1, 2, 3, 4, 5, 250_000, tzinfo=UTC)),
        ("2024-01-02", datetime(2024, 1, 2, tzinfo=UTC)),
    ],
)
def test_memdb_timestamps_are_utc(text: str, moment: datetime) -> None:
    assert parse_timestamp(text) == ms(moment)


def test_numbers_are_taken_as_milliseconds() -> None:
    assert parse_timestamp(1_700_000_000_123) == 1_700_000_000_123
    assert parse_timestamp(1_700_000_000_123.9) == 1_700_000_000_123


@pytest.mark.parametrize("value", [None, "", "yesterday", "2024-13-01", "02/01/2024", "2024-01-02 03:04"])
def test_what_cannot_be_read_is_the_epoch(value: object) -> None:
    assert parse_timestamp(value) == 0


@given(st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1)))
def test_sqlite_current_timestamp_text_reads_back(moment: datetime) -> None:
    # SQLite's CURRENT_TIMESTAMP, which memdb's columns default to, has whole seconds.
    whole = moment.replace(microsecond=0, tzinfo=UTC)
    assert parse_timestamp(whole.strftime("%Y-%m-%d %H:%M:%S")) == ms(whole)


# -- recognising a memdb file --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "memdb"),
    [
        (
            "CREATE TABLE memories (id INTEGER PRIMARY KEY, content TEXT, hash TEXT);"
            "CREATE TABLE tags (memory_id INTEGER, tag TEXT);",
            True,
        ),
        ("", False),
        ("CREATE TABLE memories (id INTEGER PRIMARY KEY, content TEXT, hash TEXT);", False),
        (
            "CREATE TABLE memories (id INTEGER PRIMARY KEY, content TEXT);"
            "CREATE TABLE tags (memory_id INTEGER, tag TEXT);",
            False,
        ),
        (
            "CREATE TABLE memories (id INTEGER PRIMARY KEY, content TEXT, hash TEXT);"
            "CREATE TABLE tags (node INTEGER, tag TEXT);",
            False,
        ),
        ("CREATE TABLE memory (node INTEGER PRIMARY KEY, content TEXT, hash TEXT);", False),
    ],
)
def test_a_memdb_file_is_recognised_by_its_tables(schema: str, memdb: bool) -> None:
    with closing(sqlite3.connect(":memory:")) as conn:
        conn.executescript(schema)
        assert is_memdb_database(conn) is memdb


# -- files of older memdb versions ---------------------------------------------------------------------------

OLDEST = """
CREATE TABLE memories (id INTEGER PRIMARY KEY AUTOINCREMENT, content TEXT NOT NULL, hash TEXT UNIQUE NOT NULL);
CREATE TABLE tags (memory_id INTEGER NOT NULL, tag TEXT NOT NULL, PRIMARY KEY (memory_id, tag));
CREATE TABLE relationships (
  id INTEGER PRIMARY KEY AUTOINCREMENT, from_id INTEGER NOT NULL, to_id INTEGER NOT NULL, relation_type TEXT NOT NULL
);
"""


@pytest.fixture
def oldest(db_path: Path) -> Path:
    """A file from a memdb without summaries, importance, types or times, whose relationships
    name their ends `from_id` and `to_id`; tags stored as typed."""
    db_path.parent.mkdir(parents=True)
    with connect(db_path) as conn:
        conn.executescript(OLDEST)
        conn.executemany(
            "INSERT INTO memories (id, content, hash) VALUES (?, ?, ?)",
            [(3, "first note", "x1"), (5, "second note", "x2"), (6, "second note", "x3")],
        )
        conn.executemany(
            "INSERT INTO tags (memory_id, tag) VALUES (?, ?)", [(3, "Tooling"), (5, "Ops"), (6, "ops"), (6, "Late")]
        )
        conn.executemany(
            "INSERT INTO relationships (id, from_id, to_id, relation_type) VALUES (?, ?, ?, ?)",
            [(4, 3, 5, "supports"), (9, 3, 6, "supports"), (10, 5, 6, "same")],
        )
    return db_path


def test_an_older_memdb_file_migrates_with_the_defaults(oldest: Path) -> None:
    with Engine.open(str(oldest)) as engine:
        first = engine.memories.get(sha256("first note"))
        second = engine.memories.get(sha256("second note"))
        assert first is not None and second is not None
        assert (first.pk, first.tags, first.importance, first.memory_type) == (3, ("tooling",), 0, "general")
        assert first.summary is None
        # The same content twice is one memory under the first id, with every tag, canonical.
        assert (second.pk, second.tags) == (5, ("late", "ops"))
        assert engine.stats().memories == 2
        # The two links to the merged copies are one; the link between them would be a loop.
        [link] = engine.memories.links(first.hash)
        assert (link.edge.pk, link.from_hash, link.to_hash, link.edge.type) == (4, first.hash, second.hash, "supports")
        assert engine.stats().edges == 1
        # Ids continue past the highest memdb gave out.
        later = engine.memories.store("after the move").memory
        assert later.pk > 6
    with connect(oldest) as conn:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert not tables & {"memories", "tags", "relationships"}


def test_a_file_without_relationships_migrates(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    with connect(db_path) as conn:
        conn.executescript(
            "CREATE TABLE memories (id INTEGER PRIMARY KEY, content TEXT NOT NULL, hash TEXT NOT NULL);"
            "CREATE TABLE tags (memory_id INTEGER NOT NULL, tag TEXT NOT NULL);"
        )
        conn.execute("INSERT INTO memories VALUES (1, 'only memory', 'h')")
    with Engine.open(str(db_path)) as engine:
        memory = engine.memories.get(sha256("only memory"))
        assert memory is not None and memory.pk == 1
        assert engine.stats().edges == 0


def test_out_of_range_importance_is_brought_within_0_to_10(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    with connect(db_path) as conn:
        conn.executescript(
            "CREATE TABLE memories (id INTEGER PRIMARY KEY, content TEXT, hash TEXT, importance INTEGER);"
            "CREATE TABLE tags (memory_id INTEGER, tag TEXT);"
        )
        conn.executemany(
            "INSERT INTO memories VALUES (?, ?, ?, ?)",
            [(1, "too high", "a", 42), (2, "too low", "b", -3), (3, "none", "c", None)],
        )
    with Engine.open(str(db_path)) as engine:
        levels = {text: engine.memories.get(sha256(text)) for text in ("too high", "too low", "none")}
        assert {text: m.importance for text, m in levels.items() if m is not None} == {
            "too high": 10,
            "too low": 0,
            "none": 0,
        }


def test_a_second_backup_does_not_overwrite_the_first(oldest: Path) -> None:
    first_backup = Path(f"{oldest}.memdb-backup")
    first_backup.write_bytes(b"an earlier backup")
    with Engine.open(str(oldest)):
        pass
    assert first_backup.read_bytes() == b"an earlier backup"
    second = Path(f"{oldest}.memdb-backup-2")
    assert second.is_file()
    with connect(second) as conn:
        assert conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == 3
