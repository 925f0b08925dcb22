"""Engine fixtures: a real SQLite file and a clock the test controls."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemodb.engine import Engine
from mnemodb.store.sqlite import SqliteStore
from support import Clock


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def eng(db_path: Path, clock: Clock) -> Iterator[Engine]:
    # A long access interval: statistics are written only by access.flush() (or close).
    with Engine(SqliteStore(db_path), clock=clock, access_interval=3600) as opened:
        yield opened
