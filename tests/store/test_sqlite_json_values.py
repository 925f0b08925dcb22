"""SQLite: the JSON values the store passes to and reads from its statements (key lists
for `json_each`, arrays of observations and tags) mean what the standard library makes of
them, whichever encoder or decoder wrote or read them; and a read transaction ends, with
its lock given back, however the read inside it ends."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import pytest

from mnemodb.model.errors import OperationTimeout
from mnemodb.store import open_store
from mnemodb.store.sqlite.sql import json_arrays, json_keys
from store.contract.rows import add_entity

ODD_TEXTS = ["plain", "é ü 🎉", 'a "quoted" \\ one', "\x00\x01\x1f\x7f", "\u2028\u2029", ""]


def test_key_lists_are_read_back_by_json_each() -> None:
    keys = [1, 2, 2**63 - 1, -(2**63), 0]
    text = json_keys(iter(keys))
    assert json.loads(text) == keys
    conn = sqlite3.connect(":memory:")
    assert [row[0] for row in conn.execute("SELECT value FROM json_each(?)", [text])] == keys


def test_arrays_decode_as_the_standard_library_decodes_them() -> None:
    arrays = [json.dumps(ODD_TEXTS, ensure_ascii=False), json.dumps(ODD_TEXTS), "[]", '["x"]']
    assert json_arrays(arrays) == [json.loads(a) for a in arrays]
    # What orjson refuses (a lone surrogate's escape) is read by the standard library.
    assert json_arrays(['["a"]', '["\\ud800 b"]']) == [["a"], ["\ud800 b"]]
    with pytest.raises(ValueError):
        json_arrays(["[1", "2]x"])


def test_observations_and_tags_of_any_text_are_read_back_as_written(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "store.db"))
    try:
        with store.write() as tx:
            pks = [add_entity(tx, f"E{i}", "thing", [text, f"{i}"]) for i, text in enumerate(ODD_TEXTS)]
        with store.read() as tx:
            found = tx.entities_by_pk(pks)
            keys = tx.entity_keys_by_pk(pks)
    finally:
        store.close()
    assert [found[pk].observations for pk in pks] == [(text, f"{i}") for i, text in enumerate(ODD_TEXTS)]
    assert [keys[pk].name for pk in pks] == [f"E{i}" for i in range(len(ODD_TEXTS))]


@pytest.mark.parametrize("location", ["file", ":memory:"])
def test_a_read_that_fails_ends_its_transaction_and_gives_its_lock_back(tmp_path: Path, location: str) -> None:
    store = open_store(str(tmp_path / "store.db") if location == "file" else ":memory:")
    try:
        with pytest.raises(KeyError), store.read() as tx:
            conn = tx.conn  # type: ignore[attr-defined]
            raise KeyError("the read's own error, unchanged")
        assert not conn.in_transaction
        # A statement stopped by the time limit is said as a timeout, and rolled back.
        with pytest.raises(OperationTimeout), store.read() as tx:
            raise sqlite3.OperationalError("interrupted")
        assert not conn.in_transaction
        # The lock (an in-memory store reads on its writer) is free for another thread.
        wrote = threading.Event()

        def write() -> None:
            with store.write() as tx:
                add_entity(tx, "After", "thing", ["written"])
            wrote.set()

        writer = threading.Thread(target=write)
        writer.start()
        writer.join(timeout=30)
        assert wrote.is_set()
    finally:
        store.close()
