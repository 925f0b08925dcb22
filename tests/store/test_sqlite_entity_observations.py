"""SQLite: an entity whose search-index row is missing (a database written before the
index kept observations) is read from the observation table, beside entities read from
the index in the same call, each with its own observations."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from mnemodb.model.ids import SHARED
from mnemodb.store import open_store
from store.contract.rows import add_entity


def test_entities_without_an_index_row_read_beside_those_with_one(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = open_store(str(path))
    try:
        with store.write() as tx:
            pks = [add_entity(tx, f"E{i}", "thing", [f"first of {i}", f"second of {i}"]) for i in range(10)]
        unindexed = pks[1::3]
        with sqlite3.connect(path) as conn:
            conn.executemany("DELETE FROM entity_text WHERE rowid = ?", [(pk,) for pk in unindexed])
        with store.read() as tx:
            found = tx.entities_by_pk(pks)
    finally:
        store.close()
    assert unindexed
    assert {pk: found[pk].observations for pk in pks} == {
        pk: (f"first of {i}", f"second of {i}") for i, pk in enumerate(pks)
    }


def test_name_matches_without_an_index_row_come_with_their_observations(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = open_store(str(path))
    try:
        with store.write() as tx:
            pks = [add_entity(tx, f"Entity {i}", "thing", [f"first of {i}", f'é "{i}"']) for i in range(10)]
        unindexed = pks[1::3]
        with sqlite3.connect(path) as conn:
            conn.executemany("DELETE FROM entity_text WHERE rowid = ?", [(pk,) for pk in unindexed])
        with store.read() as tx:
            found = tx.entity_text_matches([("name", ["Entity"], [])], [SHARED])
    finally:
        store.close()
    assert unindexed and found is not None
    assert [m.pk for m in found] == pks
    assert {m.pk: tuple(json.loads(m.observations_json)) for m in found} == {
        pk: (f"first of {i}", f'é "{i}"') for i, pk in enumerate(pks)
    }
