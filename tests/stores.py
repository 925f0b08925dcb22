"""The store a test runs against, chosen by the MNEMODB_TEST_STORE environment variable.

`sqlite` (the default) is a real SQLite file in the test's directory; `postgresql` a schema
of its own on a real PostgreSQL server this test process starts (`postgres_server.py`).
Each entry of `BACKENDS` names an empty database for one test by a location `open_store`
accepts; the contract suite and the engine tests run against either unchanged.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest

STORE_ENV = "MNEMODB_TEST_STORE"


def _sqlite(db_path: Path) -> str:
    return str(db_path)


def _postgresql(db_path: Path) -> str:
    """A schema of its own in the shared test server's database, named after `db_path`: the
    same path names the same schema, so a test that reopens its store finds its data."""
    from postgres_server import shared_server

    name = "t_" + hashlib.sha1(str(db_path).encode()).hexdigest()[:16]
    return f"{shared_server().url()}?schema={name}"


BACKENDS: dict[str, Callable[[Path], str]] = {"sqlite": _sqlite, "postgresql": _postgresql}


def chosen_backend() -> str:
    """The backend named by MNEMODB_TEST_STORE; a usage error for one this suite lacks."""
    name = os.environ.get(STORE_ENV, "sqlite").strip().lower() or "sqlite"
    if name not in BACKENDS:
        raise pytest.UsageError(f"{STORE_ENV}={name!r}: the tests know the stores {sorted(BACKENDS)}")
    return name


def store_location(db_path: Path) -> str:
    """Where a test's database lives on the chosen backend (`db_path` for SQLite)."""
    return BACKENDS[chosen_backend()](db_path)
