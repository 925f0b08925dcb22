"""The contract suite's fixture: a fresh, empty store of the backend chosen by
MNEMODB_TEST_STORE (`tests/stores.py`), opened through `open_store` and closed after."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemodb.store import open_store
from mnemodb.store.base import Store
from stores import store_location


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(store_location(tmp_path / "contract" / "store.db"))
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def other_store(tmp_path: Path) -> Iterator[Store]:
    """A second empty store, for what moves between two (dump and load)."""
    opened = open_store(store_location(tmp_path / "contract-other" / "store.db"))
    try:
        yield opened
    finally:
        opened.close()
