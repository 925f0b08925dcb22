"""Admin: what an operator and the composition roots need of a store as a whole."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from mnemodb.model.errors import EngineError, OperationTimeout
from mnemodb.store import open_store
from mnemodb.store.base import Store, StoreHealth
from store.contract.rows import T0, A, add_memory, add_node
from stores import store_location

# Enough rows that reading them all runs well past any instant deadline.
MANY = 3000


def _many_nodes(store: Store) -> None:
    with store.write() as tx:
        for _ in range(MANY):
            add_node(tx)


def test_location_names_the_data_without_a_password(store: Store) -> None:
    assert isinstance(store.location, str) and store.location
    assert urlsplit(store.location).password is None


def test_the_data_outlives_closing_the_store(tmp_path: Path) -> None:
    location = store_location(tmp_path / "reopened" / "store.db")
    first = open_store(location)
    try:
        with first.write() as tx:
            pk = add_memory(tx, "still here")
    finally:
        first.close()
    again = open_store(location)
    try:
        with again.read() as tx:
            memory = tx.memory_by_pk(pk)
    finally:
        again.close()
    assert memory is not None and memory.content == "still here"


def test_warming_the_files_changes_nothing_and_leaves_the_store_usable(store: Store) -> None:
    with store.write() as tx:
        pk = add_memory(tx, "read after warming")
    size = store.size_bytes()
    store.warm(wait=True)
    store.warm()  # on a thread of the store's own: returns at once
    with store.read() as tx:
        memory = tx.memory_by_pk(pk)
    assert memory is not None and memory.content == "read after warming"
    with store.write() as tx:
        add_memory(tx, "written after warming")
    assert store.size_bytes() >= size


def test_warming_a_closed_store_does_nothing(tmp_path: Path) -> None:
    closed = open_store(store_location(tmp_path / "closed" / "store.db"))
    closed.close()
    closed.warm(wait=True)
    closed.warm()


def test_a_closed_store_is_unusable(tmp_path: Path) -> None:
    closing = open_store(store_location(tmp_path / "closed" / "store.db"))
    closing.close()
    with pytest.raises(EngineError), closing.read() as tx:
        tx.current_seq()
    with pytest.raises(EngineError), closing.write() as wx:
        wx.set_meta("k", "v")


def test_files_are_paths(store: Store) -> None:
    files = store.files()
    assert all(isinstance(name, str) and name for name in files)


def test_check_finds_a_fresh_store_sound(store: Store) -> None:
    with store.write() as tx:
        add_memory(tx, "something to check")
    for thorough in (False, True):
        health = store.check(thorough=thorough)
        assert isinstance(health, StoreHealth)
        assert health.schema_version == health.latest_schema
        assert health.problems == ()
        assert isinstance(health.details, Mapping)


def test_size_is_positive(store: Store) -> None:
    with store.write() as tx:
        add_memory(tx, "takes some space")
    assert store.size_bytes() > 0


def test_backup_replaces_the_target_with_a_copy(store: Store, tmp_path: Path) -> None:
    with store.write() as tx:
        add_memory(tx, "backed up")
    target = tmp_path / "backup.copy"
    target.write_bytes(b"old contents")
    progress: list[tuple[int, int]] = []
    store.backup(str(target), lambda done, total: progress.append((done, total)))
    assert target.stat().st_size > 0
    assert target.read_bytes() != b"old contents"
    assert str(target) not in store.files()
    assert all(0 <= done <= total for done, total in progress)
    with store.read() as tx:
        assert tx.count_memories([A]) == 1  # still in use


def test_no_deadline_changes_nothing(store: Store) -> None:
    _many_nodes(store)
    with store.deadline(None), store.read() as tx:
        assert len(tx.node_pks_with_labels(["Thing"])) == MANY


def test_a_passed_deadline_aborts_a_read(store: Store) -> None:
    _many_nodes(store)
    with pytest.raises(OperationTimeout), store.deadline(0), store.read() as tx:
        tx.node_pks_with_labels(["Thing"])
    # Afterwards the thread works again.
    with store.read() as tx:
        assert len(tx.node_pks_with_labels(["Thing"])) == MANY


def test_a_passed_deadline_rolls_a_write_back(store: Store) -> None:
    _many_nodes(store)
    with pytest.raises(OperationTimeout), store.deadline(0), store.write() as tx:
        tx.set_meta("written", "before the long statement")
        tx.append_change(T0, A, "op", None, {})
        tx.node_pks_with_labels(["Thing"])
    with store.read() as tx:
        assert tx.get_meta("written") is None
        assert tx.current_seq() == 0


def test_a_deadline_ends_with_its_block(store: Store) -> None:
    _many_nodes(store)
    with store.deadline(0):
        pass
    with store.read() as tx:
        assert len(tx.node_pks_with_labels(["Thing"])) == MANY
