"""An archived memory in every profile, and who made each change: no profile's search or
recall finds an archived memory, a look-up by its hash or id still does, and no reply of
an upstream-compatible profile gains a field (the archive state and the actor stay the
engine's, for the web inspector). Served in this process on the chosen store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import inprocess
from mnemodb.engine import Engine
from mnemodb.engine.tokens import Grant, granted
from native_support import Native
from stores import store_location
from topodb_support import Topo

pytestmark = pytest.mark.inprocess

KETTLE = "The kettle in the kitchen is broken"
TOASTER = "The toaster in the kitchen is new"


@pytest.fixture
def db(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """A database with two memories, the kettle's archived under a token; the ids and hashes."""
    location = store_location(tmp_path / "data" / "memory.db")
    with Engine.open(location) as engine:
        kettle = engine.memories.store(KETTLE, ["kitchen"]).memory
        toaster = engine.memories.store(TOASTER, ["kitchen"]).memory
        with granted(Grant("ops-laptop", ("shared",), "shared", ("shared",))):
            engine.items.archive(kettle.id)
        assert engine.changes()[-1].actor == "ops-laptop"
    yield location, {"kettle": kettle.id, "kettle_hash": kettle.hash, "toaster": toaster.id}


def _memdb_ok(server: inprocess.Wire, tool: str, arguments: dict[str, Any]) -> Any:
    result = server.call(tool, arguments)
    assert result["isError"] is False, result
    envelope = result["structuredContent"]
    assert envelope["ok"] is True, result
    return envelope["result"]


def test_memdb_finds_an_archived_memory_by_hash_only_with_the_fields_it_always_had(
    db: tuple[str, dict[str, str]],
) -> None:
    location, ids = db
    with inprocess.wire(location, "memdb") as server:
        found = _memdb_ok(server, "search_memories", {"query": "kitchen"})
        assert [m["content"] for m in found] == [TOASTER]
        assert _memdb_ok(server, "search_memories", {"query": "kettle"}) == []
        recalled = _memdb_ok(server, "recall", {"query": "kettle broken", "depth": 1})
        assert recalled["memories"] == []
        archived = _memdb_ok(server, "get_memory", {"hash": ids["kettle_hash"]})
        assert archived["content"] == KETTLE
        live = _memdb_ok(server, "get_memory", {"hash": found[0]["hash"]})
        assert set(archived) == set(live)  # the same fields as any memory: nothing about archiving


def test_topodb_searches_leave_it_out_and_its_change_log_reads_as_before(db: tuple[str, dict[str, str]]) -> None:
    location, ids = db
    with Topo.in_process(location, "--allow-unscoped-changes") as topo:
        hits = topo.ok("search_memories", {"query": "kitchen", "k": 10})["hits"]
        assert [hit["node"]["id"] for hit in hits] == [ids["toaster"]]
        assert topo.ok("get_node", {"id": ids["kettle"]})["node"]["id"] == ids["kettle"]
        ops = topo.ok("get_changes", {"since_seq": 0})["ops"]
        assert all(set(entry) == {"op", "seq"} for entry in ops)
        # An archive is no op topodb knows: it reads as a change of no property.
        assert ops[-1]["op"] == {"SetNodeProps": {"id": ids["kettle"], "props": {}}}


def test_native_recall_leaves_it_out_get_says_it_is_archived_and_audit_reads_as_before(
    db: tuple[str, dict[str, str]],
) -> None:
    location, ids = db
    with Native.in_process(location) as native:
        found = native.call("recall", {"query": "kitchen"})["items"]
        assert [item["id"] for item in found] == [ids["toaster"]]
        assert native.call("recall", {"query": "kettle"})["items"] == []
        [kettle] = native.call("get", {"refs": [ids["kettle"]]})["items"]
        assert kettle["text"] == KETTLE and kettle["archived"].endswith("Z")
        [toaster] = native.call("get", {"refs": [ids["toaster"]]})["items"]
        assert "archived" not in toaster
        changes = native.call("audit", {})["changes"]
        assert changes[-1]["op"] == "archive_node"
        assert all(set(change) <= {"seq", "at", "op", "target", "scope", "data"} for change in changes)
