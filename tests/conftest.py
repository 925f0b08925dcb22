"""Shared fixtures: real SQLite files, and real `mnemodb serve` processes over stdio.

Markers: a server test that runs its server in this process is marked `inprocess`
(`inprocess.inprocess`); every other test under tests/server starts server processes
and is marked `e2e` here; every test under tests/browser drives a real Chromium and is
marked `browser` here. `scripts/test --fast` leaves the `e2e` and `browser` ones out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemodb.engine import Engine
from mnemodb.search.embedders import LocalEmbedder, local_available
from postgres_server import PostgresServer, shared_server
from stores import store_location
from support import RawServer, serve_command

SERVER_TESTS = Path(__file__).parent / "server"
BROWSER_TESTS = Path(__file__).parent / "browser"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "inprocess: serves in the tests' own process, over in-memory streams")
    config.addinivalue_line("markers", "e2e: starts real server processes (stdio or HTTP)")
    config.addinivalue_line("markers", "browser: drives the web inspector in a real Chromium (tests/browser)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(SERVER_TESTS) and item.get_closest_marker("inprocess") is None:
            item.add_marker(pytest.mark.e2e)
        if item.path.is_relative_to(BROWSER_TESTS):
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def local_embedder() -> LocalEmbedder:
    """The local all-MiniLM-L6-v2 embedder, shared by the session: loading it takes seconds."""
    if not local_available():
        pytest.skip("the local embedding model is not installed")
    return LocalEmbedder()


@pytest.fixture(scope="session")
def postgres() -> PostgresServer:
    """A real PostgreSQL 18 (pg_trgm, pgvector) of this test process's own, started on first
    use and removed when the process exits."""
    return shared_server()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "memory.db"


@pytest.fixture
def engine(db_path: Path) -> Iterator[Engine]:
    with Engine.open(store_location(db_path)) as opened:
        yield opened


@pytest.fixture
def raw_server(db_path: Path) -> Iterator[RawServer]:
    server = RawServer(serve_command(db_path))
    try:
        yield server
    finally:
        if server.proc.poll() is None:
            server.close()
