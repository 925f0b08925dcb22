"""Engine fixtures: a real database of the chosen store (`stores.py`; SQLite by default)
and a clock the test controls."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemodb.engine import Engine
from mnemodb.store import open_store
from stores import store_location
from support import Clock


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def eng(db_path: Path, clock: Clock) -> Iterator[Engine]:
    # A long access interval: statistics are written only by access.flush() (or close).
    with Engine(open_store(store_location(db_path)), clock=clock, access_interval=3600) as opened:
        yield opened
