"""The topodb profile shares its database with the memdb and knowledge-graph profiles.

A memdb memory is a `Memory` node whose `content` is its text; a knowledge-graph entity
an `Entity` node with `name` (and `entityType`). Servers of the three profiles run at
the same time on one file and each sees what the others wrote: the servers `mnemodb
serve` builds, each on its own connection, run in this process and spoken to in JSON-RPC.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

import inprocess
from topodb_support import Topo

pytestmark = pytest.mark.inprocess


class Peers:
    def __init__(self, db: Path, stack: ExitStack) -> None:
        env = {"MEMORY_FILE_PATH": ""}
        self.memdb = stack.enter_context(inprocess.wire(db, "memdb", env=env, cwd=db.parent))
        self.kg = stack.enter_context(inprocess.wire(db, "knowledge-graph", env=env, cwd=db.parent))
        self.topo = Topo(stack.enter_context(inprocess.wire(db, "topodb", "--allow-unscoped-changes", env=env)))

    def memdb_ok(self, tool: str, arguments: dict[str, Any]) -> Any:
        result = self.memdb.call(tool, arguments)
        assert result["isError"] is False, result
        assert result["structuredContent"]["ok"] is True, result
        return result["structuredContent"]["result"]

    def kg_ok(self, tool: str, arguments: dict[str, Any]) -> Any:
        result = self.kg.call(tool, arguments)
        assert result["isError"] is False, result
        return result["structuredContent"]


@pytest.fixture(scope="module")
def peers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Peers]:
    with ExitStack() as stack:
        yield Peers(tmp_path_factory.mktemp("topodb-peers") / "shared.db", stack)


def test_a_memdb_memory_is_a_memory_node(peers: Peers) -> None:
    text = "Grace found a moth in relay seventy"
    peers.memdb_ok("store_memory", {"content": text, "tags": ["bugs"], "importance": 3, "memory_type": "fact"})

    topo = peers.topo
    [hit] = topo.ok("search_memories", {"query": "moth relay"})["hits"]
    node = hit["node"]
    assert node["label"] == "Memory" and node["scope"] == "shared"
    assert node["props"]["content"] == text
    assert topo.node(node["id"]) == node
    # The same text through topodb is the same memory.
    assert topo.memory(text) == node["id"]
    [created] = [
        entry["op"]["CreateNode"]
        for entry in topo.ok("get_changes", {"since_seq": 0})["ops"]
        if entry["op"].get("CreateNode", {}).get("id") == node["id"]
    ]
    assert created["label"] == "Memory" and created["props"]["content"] == {"Str": text}

    # And the other way round: a topodb memory is a memdb memory.
    topo.memory("Moths are attracted to relays")
    found = sorted(m["content"] for m in peers.memdb_ok("search_memories", {"query": "moth"}))
    assert found == ["Grace found a moth in relay seventy", "Moths are attracted to relays"]


def test_a_topodb_entity_is_a_knowledge_graph_entity(peers: Peers) -> None:
    topo = peers.topo
    ada = topo.entity("Ada Lovelace", props={"entityType": "person"})
    babbage = topo.entity("Charles Babbage", props={"entityType": "person"})
    topo.link(ada, babbage, "worked_with")

    opened = peers.kg_ok("open_nodes", {"names": ["Ada Lovelace"]})
    assert opened["entities"] == [{"name": "Ada Lovelace", "entityType": "person", "observations": []}]
    graph = peers.kg_ok("read_graph", {})
    assert sorted(e["name"] for e in graph["entities"]) == ["Ada Lovelace", "Charles Babbage"]
    assert graph["relations"] == [{"from": "Ada Lovelace", "to": "Charles Babbage", "relationType": "worked_with"}]

    # An entity made by the knowledge-graph profile is found by name through topodb.
    peers.kg_ok("create_entities", {"entities": [{"name": "Alan", "entityType": "person", "observations": ["x"]}]})
    [alan] = topo.ok("find_by_prop", {"label": "Entity", "prop": "name", "value": "Alan"})["nodes"]
    assert alan["props"]["name"] == "Alan" and alan["props"]["entityType"] == "person"
    assert topo.entity("Alan") == alan["id"]
