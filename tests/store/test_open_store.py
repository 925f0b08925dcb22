"""Opening a store by location: a file path or a URL, the one way in above the store."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemodb.engine import Engine
from mnemodb.engine.graph import NewEntity
from mnemodb.model.errors import StoreUnavailable
from mnemodb.server.settings import resolve_db_path
from mnemodb.store import open_store, sqlite_path


@pytest.mark.parametrize(
    ("location", "path"),
    [
        ("memory.db", "memory.db"),
        ("/srv/data/memory.db", "/srv/data/memory.db"),
        ("~/notes.db", "~/notes.db"),
        (":memory:", ":memory:"),
        ("sqlite:///memory.db", "memory.db"),
        ("sqlite:///data/memory.db", "data/memory.db"),
        ("sqlite:////srv/data/memory.db", "/srv/data/memory.db"),
        ("SQLite:///memory.db", "memory.db"),
        ("sqlite:///with%20space.db", "with space.db"),
        ("sqlite://", ":memory:"),
        ("sqlite:///:memory:", ":memory:"),
    ],
)
def test_a_path_or_a_sqlite_url_names_a_sqlite_database(location: str, path: str) -> None:
    assert sqlite_path(location) == path


@pytest.mark.parametrize("location", ["postgresql://team@db.internal/memory", "postgres://h/db", "mysql://h/db"])
def test_another_kind_of_url_is_not_a_sqlite_database(location: str) -> None:
    assert sqlite_path(location) is None


@pytest.mark.parametrize(
    ("location", "says"),
    [
        ("postgresql://team@127.0.0.1:1/memory", "cannot reach PostgreSQL at postgresql://team@127.0.0.1:1/memory"),
        ("mysql://h/db", "unknown kind of database 'mysql'"),
        ("sqlite://host/memory.db", "names a file, not a host"),
        ("sqlite:///memory.db?mode=ro", "takes no options"),
    ],
)
def test_a_location_no_store_can_open_is_a_clear_error(location: str, says: str) -> None:
    with pytest.raises(StoreUnavailable, match=says):
        open_store(location)


def test_a_sqlite_url_opens_the_same_file_as_its_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with Engine.open("sqlite:///data/memory.db") as engine:
        engine.graph.create_entities([NewEntity("Ada")])
        assert Path(engine.store.location) == tmp_path / "data" / "memory.db"
    with Engine.open(str(tmp_path / "data" / "memory.db")) as engine:
        assert engine.graph.open(["Ada"]).entities[0].name == "Ada"


def test_settings_resolve_a_sqlite_url_to_its_file_and_keep_another_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert resolve_db_path("sqlite:///a.db") == str(tmp_path / "a.db")
    assert resolve_db_path(" a.db ") == str(tmp_path / "a.db")
    assert resolve_db_path("sqlite://") == ":memory:"
    assert resolve_db_path("postgresql://team@db/memory") == "postgresql://team@db/memory"
