"""Shared fixtures: real SQLite files, and real `mnemodb serve` processes over stdio."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemodb.engine import Engine
from mnemodb.search.embedders import LocalEmbedder, local_available
from stores import store_location
from support import RawServer, serve_command


@pytest.fixture(scope="session")
def local_embedder() -> LocalEmbedder:
    """The local all-MiniLM-L6-v2 embedder, shared by the session: loading it takes seconds."""
    if not local_available():
        pytest.skip("the local embedding model is not installed")
    return LocalEmbedder()


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
