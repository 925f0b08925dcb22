"""A store's fingerprint, which verifies a copy (`mnemodb migrate`, a PostgreSQL backup),
sees every part of a change-log entry, who made it included."""

from __future__ import annotations

from pathlib import Path

from mnemodb.store import open_store
from mnemodb.store.copying import copy_into, fingerprint

T0 = 1_700_000_000_000


def _log(path: Path, actor: str | None) -> str:
    store = open_store(str(path))
    try:
        with store.write() as tx:
            tx.append_change(T0, "shared", "create_node", "n1", {"id": "n1"}, actor="ann")
            tx.append_change(T0 + 1, "shared", "update_node", "n1", {"id": "n1"}, actor=actor)
        with store.read() as tx:
            return fingerprint(tx).digest
    finally:
        store.close()


def test_the_fingerprint_tells_entries_made_by_different_actors_apart(tmp_path: Path) -> None:
    same = _log(tmp_path / "a.db", "bob")
    assert _log(tmp_path / "b.db", "bob") == same
    assert _log(tmp_path / "c.db", None) != same
    assert _log(tmp_path / "d.db", "bobby") != same


def test_a_copy_keeps_who_made_each_entry(tmp_path: Path) -> None:
    digest = _log(tmp_path / "source.db", None)
    source, target = open_store(str(tmp_path / "source.db")), open_store(str(tmp_path / "target.db"))
    try:
        with source.read() as tx:
            copied = copy_into(tx, target.write)
            log = tx.changes(0, None)
        with target.read() as tx:
            assert tx.changes(0, None) == log
            assert [c.actor for c in log] == ["ann", None]
            assert fingerprint(tx).digest == copied.digest == digest
    finally:
        source.close()
        target.close()
