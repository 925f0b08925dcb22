"""The memdb and knowledge-graph profiles on one database file.

Both profiles keep their data in the same property graph, each looking at its own part
of it:

- memdb sees Memory nodes (content, tags, importance, type) and the relations between
  two memories;
- knowledge-graph sees Entity nodes, their observations, and the relations between two
  entities.

So a memory is never an entity nor an entity a memory: neither profile's tools find,
count, relate or delete the other's items. Every write from either profile goes into
the one change log, in the order it was committed.

The servers are the ones `mnemodb serve` builds, each on its own connection to the file,
run in this process and spoken to in JSON-RPC over the SDK's in-memory streams.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack
from pathlib import Path
from typing import Any

import pytest

import inprocess
from inprocess import Wire
from mnemodb.engine import Engine

pytestmark = pytest.mark.inprocess


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Memdb:
    def __init__(self, server: Wire) -> None:
        self.server = server

    def ok(self, tool: str, arguments: dict[str, Any]) -> Any:
        result = self.server.call(tool, arguments)
        assert result["isError"] is False, result
        envelope = result["structuredContent"]
        assert envelope["ok"] is True, result
        return envelope["result"]

    def store(self, content: str, *tags: str) -> str:
        digest: str = self.ok("store_memory", {"content": content, "tags": list(tags)})["hash"]
        return digest

    def count(self) -> int:
        count: int = self.ok("memory_stats", {})["memoryCount"]
        return count

    def found(self, query: str) -> list[str]:
        return sorted(m["content"] for m in self.ok("search_memories", {"query": query}))


class KnowledgeGraph:
    def __init__(self, server: Wire) -> None:
        self.server = server

    def ok(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = self.server.call(tool, arguments)
        assert result["isError"] is False, result
        structured: dict[str, Any] = result["structuredContent"]
        return structured

    def graph(self) -> dict[str, Any]:
        return self.ok("read_graph", {})

    def found(self, query: str) -> list[str]:
        return sorted(e["name"] for e in self.ok("search_nodes", {"query": query})["entities"])


def serve(db: Path, profile: str) -> AbstractContextManager[Wire]:
    # Run where no server-memory file can be picked up, with no file named in the environment.
    return inprocess.wire(db, profile, env={"MEMORY_FILE_PATH": ""}, cwd=db.parent)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "both.db"


@pytest.fixture
def running() -> Iterator[ExitStack]:
    """Stops the servers a test started, at its end or when the test closes it."""
    with ExitStack() as stack:
        yield stack


@pytest.fixture
def both(db: Path, running: ExitStack) -> tuple[Memdb, KnowledgeGraph]:
    """A memdb server and a knowledge-graph server, running at the same time on one file."""
    memdb = running.enter_context(serve(db, "memdb"))
    kg = running.enter_context(serve(db, "knowledge-graph"))
    return Memdb(memdb), KnowledgeGraph(kg)


TEA = "Alice drinks green tea every morning"
ROCKETS = "Acme builds rockets in the desert"


def write_both(memdb: Memdb, kg: KnowledgeGraph) -> tuple[str, str]:
    """Interleaved writes of similar things through both profiles."""
    tea = memdb.store(TEA, "people")
    kg.ok(
        "create_entities",
        {
            "entities": [
                {"name": "Alice", "entityType": "person", "observations": ["drinks green tea"]},
                {"name": "Acme", "entityType": "company", "observations": []},
            ]
        },
    )
    rockets = memdb.store(ROCKETS, "companies")
    kg.ok("create_relations", {"relations": [{"from": "Alice", "to": "Acme", "relationType": "works_at"}]})
    memdb.ok("create_relationship", {"from_hash": tea, "to_hash": rockets, "relation_type": "related_to"})
    kg.ok("add_observations", {"observations": [{"entityName": "Acme", "contents": ["builds rockets"]}]})
    return tea, rockets


def test_each_profile_sees_only_its_own_items(both: tuple[Memdb, KnowledgeGraph]) -> None:
    memdb, kg = both
    tea, rockets = write_both(memdb, kg)

    # memdb: two memories and the relationship between them; no entity anywhere.
    assert memdb.count() == 2
    assert memdb.found("Alice") == [TEA]
    assert memdb.found("rockets") == [ROCKETS]
    assert memdb.found("works_at") == []
    links = memdb.ok("get_relationships", {"hash": tea})
    assert [(r["from_hash"], r["to_hash"], r["relation_type"]) for r in links] == [(tea, rockets, "related_to")]
    recalled = memdb.ok("recall", {"query": "green tea", "depth": 3})
    assert sorted(m["content"] for m in recalled["memories"]) == [ROCKETS, TEA]

    # knowledge-graph: two entities and their relation; no memory anywhere.
    assert kg.graph() == {
        "entities": [
            {"name": "Alice", "entityType": "person", "observations": ["drinks green tea"]},
            {"name": "Acme", "entityType": "company", "observations": ["builds rockets"]},
        ],
        "relations": [{"from": "Alice", "to": "Acme", "relationType": "works_at"}],
    }
    assert kg.found("morning") == []  # only in the memory
    assert kg.found("desert") == []
    assert kg.found("rockets") == ["Acme"]
    matches = kg.ok("search_observations", {"query": "rockets"})["matches"]
    assert [(m["entityName"], m["observation"]) for m in matches] == [("Acme", "builds rockets")]
    assert kg.ok("filter_observations", {"pattern": "desert"}) == {"entities": []}
    assert kg.ok("filter_relations", {"relationType": "related_to"}) == {"relations": [], "entities": []}
    assert kg.ok("open_nodes", {"names": [TEA, tea]}) == {"entities": [], "relations": []}


def test_deletes_stay_in_their_own_profile(both: tuple[Memdb, KnowledgeGraph]) -> None:
    memdb, kg = both
    tea, _ = write_both(memdb, kg)

    kg.ok("delete_entities", {"entityNames": ["Alice", TEA, tea]})
    assert memdb.count() == 2
    assert memdb.ok("get_memory", {"hash": tea})["content"] == TEA

    assert memdb.ok("delete_memory", {"hash": tea}) == {"deleted": True}
    assert [e["name"] for e in kg.graph()["entities"]] == ["Acme"]
    assert memdb.count() == 1


def test_both_profiles_write_to_one_change_log(
    db: Path, running: ExitStack, both: tuple[Memdb, KnowledgeGraph]
) -> None:
    memdb, kg = both
    tea, rockets = write_both(memdb, kg)
    running.close()

    with Engine.open(str(db)) as engine:
        changes = engine.changes()
        assert engine.current_seq() == len(changes)
    assert [c.seq for c in changes] == list(range(1, len(changes) + 1))

    created = [(c.data["label"], c.data.get("memory", c.data.get("entity"))) for c in changes if c.op == "create_node"]
    assert [(label, fields.get("content", fields.get("name"))) for label, fields in created] == [
        ("Memory", TEA),
        ("Entity", "Alice"),
        ("Entity", "Acme"),
        ("Memory", ROCKETS),
    ]
    edges = [c.data for c in changes if c.op == "create_edge"]
    assert [e["type"] for e in edges] == ["works_at", "related_to"]
    [added] = [c for c in changes if c.op == "add_observations"]
    [acme] = [c.target for c in changes if c.op == "create_node" and c.data.get("entity", {}).get("name") == "Acme"]
    assert (added.target, added.data["contents"]) == (acme, ["builds rockets"])
    assert [fields.get("hash") for label, fields in created if label == "Memory"] == [tea, rockets]


def test_one_after_the_other(db: Path) -> None:
    with serve(db, "memdb") as server:
        memdb = Memdb(server)
        tea = memdb.store(TEA, "people")
        rockets = memdb.store(ROCKETS, "companies")
        memdb.ok("create_relationship", {"from_hash": tea, "to_hash": rockets, "relation_type": "related_to"})

    with serve(db, "knowledge-graph") as server:
        kg = KnowledgeGraph(server)
        assert kg.graph() == {"entities": [], "relations": []}
        assert kg.found("tea") == []
        kg.ok("create_entities", {"entities": [{"name": "Tea", "entityType": "drink", "observations": ["green"]}]})

    with serve(db, "memdb") as server:
        memdb = Memdb(server)
        assert memdb.count() == 2
        assert memdb.found("green") == [TEA]
        assert len(memdb.ok("get_relationships", {"hash": rockets})) == 1

    with serve(db, "knowledge-graph") as server:
        kg = KnowledgeGraph(server)
        assert kg.graph() == {
            "entities": [{"name": "Tea", "entityType": "drink", "observations": ["green"]}],
            "relations": [],
        }

    with Engine.open(str(db)) as engine:
        labels = [c.data["label"] for c in engine.changes() if c.op == "create_node"]
    assert labels == ["Memory", "Memory", "Entity"]
