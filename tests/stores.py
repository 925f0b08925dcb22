"""The store a test runs against, chosen by the MNEMODB_TEST_STORE environment variable.

`sqlite` (the default) is a real SQLite file in the test's directory. A second backend adds
an entry to `BACKENDS` that makes an empty database for one test and returns its
location (a URL `open_store` accepts); the contract suite and the engine tests then run
against it unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

STORE_ENV = "MNEMODB_TEST_STORE"


def _sqlite(db_path: Path) -> str:
    return str(db_path)


BACKENDS: dict[str, Callable[[Path], str]] = {"sqlite": _sqlite}


def chosen_backend() -> str:
    """The backend named by MNEMODB_TEST_STORE; a usage error for one this suite lacks."""
    name = os.environ.get(STORE_ENV, "sqlite").strip().lower() or "sqlite"
    if name not in BACKENDS:
        raise pytest.UsageError(f"{STORE_ENV}={name!r}: the tests know the stores {sorted(BACKENDS)}")
    return name


def store_location(db_path: Path) -> str:
    """Where a test's database lives on the chosen backend (`db_path` for SQLite)."""
    return BACKENDS[chosen_backend()](db_path)
