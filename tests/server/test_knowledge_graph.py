"""Behaviour of the knowledge-graph profile's 16 tools, spoken to in JSON-RPC.

The checklist is what the two upstream servers' own suites cover (server-memory's
create, add, delete, read, open and persistence cases; better-memory's neighbours,
paths, subgraphs and filters), plus the deliberate fixes (duplicates within one call
stored once, relations to missing entities refused, no lost writes between processes)
and what mnemodb adds (read_graph paging, the resource, a time limit on patterns).
Search and its query language are in test_knowledge_graph_search.py.

The servers are the ones `mnemodb serve` builds, run in this process over the SDK's
in-memory streams. Most tests share one server and start from an empty graph; tests
about restarts or a possibly stuck pattern start their own. Two processes writing one
file are real `mnemodb serve` processes over stdio.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp_types import TextContent, TextResourceContents

import inprocess
from inprocess import Wire
from support import PROFILE_TOOLS, RawServer, serve_command

pytestmark = pytest.mark.inprocess

PROFILE = "knowledge-graph"
INVALID_PREFIX = "MCP error -32602: Input validation error: Invalid arguments for tool "
NO_PATH = "No path found between the specified entities"

TOOL_NAMES = PROFILE_TOOLS["knowledge-graph"]
WRITE_TOOLS = {"create_entities", "create_relations", "add_observations"}
DELETE_TOOLS = {"delete_entities", "delete_observations", "delete_relations"}
# As upstream, these tools' text is the bare list their structured content wraps.
LIST_TEXT = {
    "create_entities": "entities",
    "create_relations": "relations",
    "add_observations": "results",
    "get_neighbors": "neighbors",
}
REQUIRED: dict[str, list[str]] = {
    "create_entities": ["entities"],
    "create_relations": ["relations"],
    "add_observations": ["observations"],
    "delete_entities": ["entityNames"],
    "delete_observations": ["deletions"],
    "delete_relations": ["relations"],
    "read_graph": [],
    "search_nodes": ["query"],
    "open_nodes": ["names"],
    "search_observations": ["query"],
    "get_neighbors": ["entityName"],
    "find_path": ["fromEntity", "toEntity"],
    "get_subgraph": ["entityNames"],
    "filter_by_type": ["entityType"],
    "filter_relations": [],
    "filter_observations": ["pattern"],
}
OPTIONAL: dict[str, list[str]] = {
    "read_graph": ["limit", "cursor"],
    "search_nodes": ["includeNeighbors", "fuzzy", "limit"],
    "search_observations": ["limit", "includeEntity", "fuzzy"],
    "get_neighbors": ["direction", "relationType"],
    "find_path": ["maxDepth"],
    "get_subgraph": ["depth"],
    "filter_relations": ["relationType", "fromEntity", "toEntity"],
}
OUTPUT_KEYS: dict[str, list[str]] = {
    "create_entities": ["entities"],
    "create_relations": ["relations"],
    "add_observations": ["results"],
    "delete_entities": ["success", "message"],
    "delete_observations": ["success", "message"],
    "delete_relations": ["success", "message"],
    "read_graph": ["entities", "relations"],
    "search_nodes": ["entities", "relations", "scores"],
    "open_nodes": ["entities", "relations"],
    "search_observations": ["matches"],
    "get_neighbors": ["neighbors"],
    "find_path": ["path", "relations", "length"],
    "get_subgraph": ["entities", "relations"],
    "filter_by_type": ["entities", "relations"],
    "filter_relations": ["relations", "entities"],
    "filter_observations": ["entities"],
}


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def ent(name: str, entity_type: str, *observations: str) -> dict[str, Any]:
    """An entity as the tools take and return it."""
    return {"name": name, "entityType": entity_type, "observations": list(observations)}


def rel(src: str, dst: str, relation_type: str) -> dict[str, Any]:
    return {"from": src, "to": dst, "relationType": relation_type}


def names(entities: Sequence[dict[str, Any]]) -> list[str]:
    return [e["name"] for e in entities]


def triples(relations: Sequence[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(r["from"], r["to"], r["relationType"]) for r in relations]


class Graph:
    """A knowledge-graph server, with every result checked against the profile's rules:
    the text is the compact JSON of the structured content (the delete tools' text is
    their message, and the list tools' the bare list) and the structured content
    satisfies the tool's output schema."""

    def __init__(self, server: RawServer | Wire, output_schemas: dict[str, Any]) -> None:
        self.server = server
        self.output_schemas = output_schemas

    def raw(self, tool: str, arguments: Any = None) -> dict[str, Any]:
        return self.server.call(tool, arguments)

    def ok(self, tool: str, arguments: Any = None) -> dict[str, Any]:
        result = self.raw(tool, arguments)
        assert result["isError"] is False, result
        structured: dict[str, Any] = result["structuredContent"]
        jsonschema.validate(structured, self.output_schemas[tool])
        if tool in DELETE_TOOLS:
            assert structured == {"success": True, "message": result["content"][0]["text"]}
            assert result["content"] == [{"type": "text", "text": structured["message"]}]
        elif tool in LIST_TEXT:
            assert list(structured) == [LIST_TEXT[tool]]
            assert result["content"] == [{"type": "text", "text": compact(structured[LIST_TEXT[tool]])}], result
        else:
            assert result["content"] == [{"type": "text", "text": compact(structured)}], result
        return structured

    def error(self, tool: str, arguments: Any = None) -> str:
        """The text of an error result (which has no structured content)."""
        result = self.raw(tool, arguments)
        assert result["isError"] is True, result
        assert result.get("structuredContent") is None, result
        [block] = result["content"]
        assert block["type"] == "text"
        text: str = block["text"]
        return text

    def create(self, *entities: dict[str, Any]) -> None:
        self.ok("create_entities", {"entities": list(entities)})

    def relate(self, *relations: tuple[str, str, str]) -> None:
        self.ok("create_relations", {"relations": [rel(*r) for r in relations]})

    def graph(self) -> dict[str, Any]:
        return self.ok("read_graph", {})

    def no_path(self, arguments: dict[str, Any]) -> None:
        result = self.raw("find_path", arguments)
        assert result == {
            "content": [{"type": "text", "text": NO_PATH}],
            "isError": False,
            "structuredContent": {"path": None, "relations": None, "length": None},
        }


# Servers run where no server-memory file can be picked up, with no file named in the environment.
NO_MEMORY_FILE = {"MEMORY_FILE_PATH": ""}


def spawn(db: Path) -> RawServer:
    return RawServer(serve_command(db, PROFILE), env=NO_MEMORY_FILE, cwd=db.parent)


def start(db: Path) -> tuple[RawServer, dict[str, Any]]:
    server = spawn(db)
    server.initialize()
    tools = server.request("tools/list")["result"]["tools"]
    return server, {t["name"]: t["outputSchema"] for t in tools}


@contextmanager
def in_process(db: Path, env: dict[str, str] | None = None) -> Iterator[Graph]:
    """The server `mnemodb serve` builds for `db`, in this process (`env` added to its environment)."""
    with inprocess.wire(db, PROFILE, env={**NO_MEMORY_FILE, **(env or {})}, cwd=db.parent) as server:
        tools = server.request("tools/list")["result"]["tools"]
        yield Graph(server, {t["name"]: t["outputSchema"] for t in tools})


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Graph]:
    with in_process(tmp_path_factory.mktemp("knowledge-graph") / "memory.db") as graph:
        yield graph


@pytest.fixture
def kg(shared: Graph) -> Graph:
    """The shared server with an empty graph."""
    existing = names(shared.graph()["entities"])
    if existing:
        shared.ok("delete_entities", {"entityNames": existing})
    assert shared.graph() == {"entities": [], "relations": []}
    return shared


@pytest.fixture
def own(tmp_path: Path) -> Iterator[Graph]:
    """A server of its own, on a fresh file."""
    with in_process(tmp_path / "own.db") as graph:
        yield graph


# -- tools/list and the resource ---------------------------------------------------------------------


@pytest.mark.anyio
async def test_tools_listed_with_schemas_annotations_and_output_schemas(tmp_path: Path) -> None:
    async with inprocess.client(tmp_path / "m.db", PROFILE, env=NO_MEMORY_FILE, cwd=tmp_path) as client:
        assert client.server_info is not None
        assert client.server_info.name == "memory-server"
        tools = (await client.list_tools()).tools

    assert [t.name for t in tools] == TOOL_NAMES
    for tool in tools:
        assert tool.title and tool.description, tool.name
        schema = tool.input_schema
        assert schema["type"] == "object", tool.name
        assert schema.get("required", []) == REQUIRED[tool.name], tool.name
        assert list(schema["properties"]) == REQUIRED[tool.name] + OPTIONAL.get(tool.name, []), tool.name
        # Unknown keys are dropped, not refused, so the schema does not forbid them.
        assert schema.get("additionalProperties") is not False, tool.name

        annotations = tool.annotations
        assert annotations is not None, tool.name
        assert annotations.open_world_hint is False, tool.name
        if tool.name in WRITE_TOOLS:
            assert (annotations.read_only_hint, annotations.destructive_hint) == (False, False), tool.name
        elif tool.name in DELETE_TOOLS:
            assert (annotations.read_only_hint, annotations.destructive_hint) == (False, True), tool.name
            assert annotations.idempotent_hint is True, tool.name
        else:
            assert annotations.read_only_hint is True, tool.name

        output = tool.output_schema
        assert output is not None, tool.name
        assert output["type"] == "object", tool.name
        assert list(output["required"]) == OUTPUT_KEYS[tool.name], tool.name
        assert set(OUTPUT_KEYS[tool.name]) <= set(output["properties"]), tool.name
        jsonschema.Draft202012Validator.check_schema(output)

    entity_items = tools[0].input_schema["properties"]["entities"]["items"]
    assert entity_items["required"] == ["name", "entityType", "observations"]
    direction = tools[TOOL_NAMES.index("get_neighbors")].input_schema["properties"]["direction"]
    assert direction["enum"] == ["incoming", "outgoing", "both"]


@pytest.mark.anyio
async def test_knowledge_graph_resource(tmp_path: Path) -> None:
    async with inprocess.client(tmp_path / "m.db", PROFILE, env=NO_MEMORY_FILE, cwd=tmp_path) as client:
        [listed] = (await client.list_resources()).resources
        empty = await client.read_resource("memory://knowledge-graph")
        await client.call_tool(
            "create_entities", {"entities": [ent("Café", "place", "serves ☕"), ent("Bob", "person")]}
        )
        await client.call_tool("create_relations", {"relations": [rel("Bob", "Café", "visits")]})
        full = await client.read_resource("memory://knowledge-graph")
        graph = await client.call_tool("read_graph", {})

    assert (str(listed.uri), listed.name, listed.mime_type) == (
        "memory://knowledge-graph",
        "knowledge-graph",
        "application/json",
    )
    [before] = empty.contents
    assert isinstance(before, TextResourceContents)
    assert before.mime_type == "application/json"
    assert json.loads(before.text) == {"entities": [], "relations": []}
    [after] = full.contents
    assert isinstance(after, TextResourceContents)
    assert json.loads(after.text) == {
        "entities": [ent("Café", "place", "serves ☕"), ent("Bob", "person")],
        "relations": [rel("Bob", "Café", "visits")],
    }
    assert json.loads(after.text) == graph.structured_content
    [block] = graph.content
    assert isinstance(block, TextContent)
    assert "serves ☕" in block.text  # not \u-escaped


def test_resource_subscribers_hear_of_every_successful_write(own: Graph) -> None:
    server = own.server
    uri = "memory://knowledge-graph"

    def call(tool: str, arguments: dict[str, Any], request_id: int) -> list[dict[str, Any]]:
        """Every message up to and including the reply to this call."""
        server.send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments},
            }
        )
        messages = [server.recv()]
        while messages[-1].get("id") != request_id:
            messages.append(server.recv())
        return messages

    updated = {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}}
    assert "result" in server.request("resources/subscribe", {"uri": uri})
    created = call("create_entities", {"entities": [ent("A", "t")]}, 1)
    read = call("read_graph", {}, 2)
    failed = call("add_observations", {"observations": [{"entityName": "Missing", "contents": ["x"]}]}, 3)
    deleted = call("delete_entities", {"entityNames": ["A"]}, 4)
    assert "result" in server.request("resources/unsubscribe", {"uri": uri})
    after = call("create_entities", {"entities": [ent("B", "t")]}, 5)

    assert created[:-1] == [updated]  # sent before the reply
    assert created[-1]["result"]["isError"] is False
    assert read[:-1] == []  # reads never notify
    assert failed[:-1] == [] and failed[-1]["result"]["isError"] is True
    assert deleted[:-1] == [updated]
    assert after[:-1] == []


# -- create_entities -----------------------------------------------------------------------------------


def test_create_entities_returns_the_new_ones_and_skips_existing_names(kg: Graph) -> None:
    first = kg.ok("create_entities", {"entities": [ent("Alice", "person", "likes tea"), ent("Acme", "company")]})
    again = kg.ok("create_entities", {"entities": [ent("Alice", "robot", "something else"), ent("Bob", "person", "x")]})
    graph = kg.graph()

    assert first == {"entities": [ent("Alice", "person", "likes tea"), ent("Acme", "company")]}
    assert [list(e) for e in first["entities"]] == [["name", "entityType", "observations"]] * 2
    assert again == {"entities": [ent("Bob", "person", "x")]}
    # The existing Alice is left exactly as she was: no new type, no merged observations.
    assert graph == {
        "entities": [ent("Alice", "person", "likes tea"), ent("Acme", "company"), ent("Bob", "person", "x")],
        "relations": [],
    }


def test_create_with_empty_lists(kg: Graph) -> None:
    assert kg.ok("create_entities", {"entities": []}) == {"entities": []}
    assert kg.ok("create_relations", {"relations": []}) == {"relations": []}
    assert kg.ok("add_observations", {"observations": []}) == {"results": []}
    assert kg.graph() == {"entities": [], "relations": []}


def test_duplicates_within_one_call_are_stored_once_with_both_observation_sets(kg: Graph) -> None:
    # Upstream stored both copies; mnemodb keeps one entity with every observation.
    created = kg.ok(
        "create_entities",
        {
            "entities": [
                ent("Alice", "person", "a1", "shared"),
                ent("Bob", "person"),
                ent("Alice", "person", "shared", "a2"),
            ]
        },
    )
    graph = kg.graph()
    opened = kg.ok("open_nodes", {"names": ["Alice"]})

    assert created == {"entities": [ent("Alice", "person", "a1", "shared", "a2"), ent("Bob", "person")]}
    assert graph["entities"] == created["entities"]
    assert opened["entities"] == [ent("Alice", "person", "a1", "shared", "a2")]


# -- create_relations ------------------------------------------------------------------------------------


def test_create_relations_skips_existing_and_repeated_ones(kg: Graph) -> None:
    kg.create(ent("A", "t"), ent("B", "t"), ent("C", "t"))
    first = kg.ok("create_relations", {"relations": [rel("A", "B", "knows"), rel("B", "C", "knows")]})
    second = kg.ok(
        "create_relations",
        {
            "relations": [
                rel("A", "B", "knows"),  # already there
                rel("A", "B", "likes"),  # same ends, another type
                rel("C", "A", "knows"),
                rel("A", "B", "likes"),  # repeated within the call
            ]
        },
    )

    assert first == {"relations": [rel("A", "B", "knows"), rel("B", "C", "knows")]}
    assert [list(r) for r in first["relations"]] == [["from", "to", "relationType"]] * 2
    assert second == {"relations": [rel("A", "B", "likes"), rel("C", "A", "knows")]}
    assert triples(kg.graph()["relations"]) == [
        ("A", "B", "knows"),
        ("B", "C", "knows"),
        ("A", "B", "likes"),
        ("C", "A", "knows"),
    ]


def test_relation_to_a_missing_entity_is_refused_and_nothing_is_written(kg: Graph) -> None:
    # Upstream stored dangling relations; mnemodb refuses the whole call.
    kg.create(ent("A", "t"), ent("B", "t"))
    missing_target = kg.error("create_relations", {"relations": [rel("A", "B", "knows"), rel("B", "Ghost", "haunts")]})
    missing_source = kg.error("create_relations", {"relations": [rel("Nobody", "A", "knows"), rel("B", "A", "x")]})

    assert missing_target == "Entity with name Ghost not found"
    assert missing_source == "Entity with name Nobody not found"
    assert kg.graph() == {"entities": [ent("A", "t"), ent("B", "t")], "relations": []}


# -- add_observations -------------------------------------------------------------------------------------


def test_add_observations_returns_what_was_added(kg: Graph) -> None:
    kg.create(ent("A", "t", "x"), ent("B", "t"))
    added = kg.ok(
        "add_observations",
        {"observations": [{"entityName": "A", "contents": ["x", "y"]}, {"entityName": "B", "contents": ["z"]}]},
    )
    again = kg.ok(
        "add_observations",
        {"observations": [{"entityName": "A", "contents": ["y", "x"]}, {"entityName": "B", "contents": ["z"]}]},
    )

    assert added == {
        "results": [{"entityName": "A", "addedObservations": ["y"]}, {"entityName": "B", "addedObservations": ["z"]}]
    }
    assert [list(r) for r in added["results"]] == [["entityName", "addedObservations"]] * 2
    assert again == {
        "results": [{"entityName": "A", "addedObservations": []}, {"entityName": "B", "addedObservations": []}]
    }
    assert kg.graph()["entities"] == [ent("A", "t", "x", "y"), ent("B", "t", "z")]


def test_add_observations_to_a_missing_entity_fails_the_whole_call(kg: Graph) -> None:
    kg.create(ent("A", "t", "x"))
    text = kg.error(
        "add_observations",
        {"observations": [{"entityName": "A", "contents": ["new"]}, {"entityName": "NonExistent", "contents": ["y"]}]},
    )
    assert text == "Entity with name NonExistent not found"
    assert kg.graph()["entities"] == [ent("A", "t", "x")]


# -- the delete tools ---------------------------------------------------------------------------------------


def test_delete_entities_takes_their_relations_along(kg: Graph) -> None:
    kg.create(ent("A", "t"), ent("B", "t"), ent("C", "t"))
    kg.relate(("A", "B", "r"), ("B", "C", "r"), ("C", "A", "r"), ("B", "B", "self"))
    deleted = kg.ok("delete_entities", {"entityNames": ["B", "Missing"]})
    missing_only = kg.ok("delete_entities", {"entityNames": ["Missing"]})

    assert deleted == {"success": True, "message": "Entities deleted successfully"}
    assert missing_only == deleted
    assert kg.graph() == {"entities": [ent("A", "t"), ent("C", "t")], "relations": [rel("C", "A", "r")]}


def test_delete_observations(kg: Graph) -> None:
    kg.create(ent("A", "t", "x", "y", "z"), ent("B", "t", "y"))
    deleted = kg.ok(
        "delete_observations",
        {
            "deletions": [
                {"entityName": "A", "observations": ["y", "not there"]},
                {"entityName": "Missing", "observations": ["x"]},
            ]
        },
    )
    assert deleted == {"success": True, "message": "Observations deleted successfully"}
    assert kg.graph()["entities"] == [ent("A", "t", "x", "z"), ent("B", "t", "y")]


def test_delete_relations_removes_only_exact_matches(kg: Graph) -> None:
    kg.create(ent("A", "t"), ent("B", "t"))
    kg.relate(("A", "B", "knows"), ("A", "B", "likes"), ("B", "A", "knows"))
    deleted = kg.ok(
        "delete_relations",
        {"relations": [rel("A", "B", "knows"), rel("A", "B", "hates"), rel("Ghost", "A", "knows")]},
    )
    assert deleted == {"success": True, "message": "Relations deleted successfully"}
    assert triples(kg.graph()["relations"]) == [("A", "B", "likes"), ("B", "A", "knows")]
    assert names(kg.graph()["entities"]) == ["A", "B"]


# -- read_graph and open_nodes --------------------------------------------------------------------------------


def test_read_graph_of_an_empty_and_a_full_store(kg: Graph) -> None:
    empty = kg.raw("read_graph", {})
    kg.create(ent("Alice", "person", "o1", "o2"), ent("Acme", "company"))
    kg.relate(("Alice", "Acme", "works_at"))
    full = kg.graph()

    assert empty["structuredContent"] == {"entities": [], "relations": []}
    assert empty["content"] == [{"type": "text", "text": '{"entities":[],"relations":[]}'}]
    assert full == {
        "entities": [ent("Alice", "person", "o1", "o2"), ent("Acme", "company")],
        "relations": [rel("Alice", "Acme", "works_at")],
    }
    assert list(full) == ["entities", "relations"]  # no nextCursor without a limit


def test_open_nodes_returns_the_named_entities_and_the_relations_among_them(kg: Graph) -> None:
    kg.create(ent("A", "t", "a"), ent("B", "t"), ent("C", "t"), ent("D", "t"))
    kg.relate(("A", "B", "knows"), ("B", "C", "knows"), ("D", "A", "knows"), ("B", "A", "likes"))
    opened = kg.ok("open_nodes", {"names": ["B", "Missing", "A"]})

    assert opened == {
        "entities": [ent("A", "t", "a"), ent("B", "t")],  # in creation order
        "relations": [rel("A", "B", "knows"), rel("B", "A", "likes")],  # only those with both ends opened
    }
    assert kg.ok("open_nodes", {"names": []}) == {"entities": [], "relations": []}
    assert kg.ok("open_nodes", {"names": ["Missing"]}) == {"entities": [], "relations": []}


def test_the_graph_survives_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "persist.db"
    with in_process(db) as first:
        first.create(ent("Alice", "person", "likes tea"), ent("Acme", "company"))
        first.relate(("Alice", "Acme", "works_at"))
        first.ok("add_observations", {"observations": [{"entityName": "Acme", "contents": ["makes anvils"]}]})
        before = first.graph()
    with in_process(db) as second:
        after = second.graph()

    assert (
        after
        == before
        == {
            "entities": [ent("Alice", "person", "likes tea"), ent("Acme", "company", "makes anvils")],
            "relations": [rel("Alice", "Acme", "works_at")],
        }
    )
    # Nothing of the storage shows through: exactly the three keys of each.
    assert [list(e) for e in after["entities"]] == [["name", "entityType", "observations"]] * 2
    assert [list(r) for r in after["relations"]] == [["from", "to", "relationType"]]


# -- read_graph paging ----------------------------------------------------------------------------------------

PAGED = [f"E{i}" for i in range(7)]
PAGED_RELATIONS = [
    ("E0", "E1", "next"),
    ("E1", "E0", "back"),
    ("E6", "E0", "wraps"),  # to an earlier page
    ("E2", "E5", "jumps"),  # to a later page
    ("E3", "E3", "self"),
    ("E5", "E6", "next"),
    ("E4", "E2", "back"),
]


def pages(kg: Graph, limit: int, cursor: str | None = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    while True:
        arguments: dict[str, Any] = {"limit": limit}
        if cursor is not None:
            arguments["cursor"] = cursor
        page = kg.ok("read_graph", arguments)
        out.append(page)
        assert len(out) <= len(PAGED) + 1, "paging does not end"
        if "nextCursor" not in page:
            return out
        assert list(page) == ["entities", "relations", "nextCursor"]
        cursor = page["nextCursor"]
        assert isinstance(cursor, str) and cursor


@pytest.mark.parametrize("limit", [1, 3, 6, 7, 50])
def test_read_graph_pages_hold_every_entity_and_relation_once(kg: Graph, limit: int) -> None:
    kg.create(*(ent(name, "node", f"obs of {name}") for name in PAGED))
    kg.relate(*PAGED_RELATIONS)
    walked = pages(kg, limit)

    assert [len(p["entities"]) for p in walked] == [
        min(limit, len(PAGED) - start) for start in range(0, len(PAGED), limit)
    ]
    assert list(walked[-1]) == ["entities", "relations"]
    entities = [e for p in walked for e in p["entities"]]
    assert entities == [ent(name, "node", f"obs of {name}") for name in PAGED]
    relations = [r for p in walked for r in triples(p["relations"])]
    assert sorted(relations) == sorted(PAGED_RELATIONS)  # each exactly once
    for page in walked:
        on_page = set(names(page["entities"]))
        assert all(src in on_page for src, _, _ in triples(page["relations"])), page
    # Without a limit: the upstream shape, everything at once.
    whole = kg.graph()
    assert list(whole) == ["entities", "relations"]
    assert whole["entities"] == entities
    assert triples(whole["relations"]) == PAGED_RELATIONS


def test_read_graph_cursor_survives_writes_between_pages(kg: Graph) -> None:
    kg.create(*(ent(name, "node") for name in PAGED[:4]))
    first = kg.ok("read_graph", {"limit": 2})
    kg.create(ent("Late", "node"))
    kg.ok("delete_entities", {"entityNames": ["E0"]})  # already read
    rest = pages(kg, 2, first["nextCursor"])

    assert names(first["entities"]) == ["E0", "E1"]
    assert [n for p in rest for n in names(p["entities"])] == ["E2", "E3", "Late"]


def test_read_graph_rest_without_a_limit_repeats_nothing(kg: Graph) -> None:
    # A client may take the first page with a limit, then the rest at once with only the cursor.
    kg.create(*(ent(name, "node") for name in PAGED))
    kg.relate(*PAGED_RELATIONS)
    first = kg.ok("read_graph", {"limit": 3})
    rest = kg.ok("read_graph", {"cursor": first["nextCursor"]})

    assert names(first["entities"]) + names(rest["entities"]) == PAGED
    assert list(rest) == ["entities", "relations"]
    relations = triples(first["relations"]) + triples(rest["relations"])
    assert sorted(relations) == sorted(PAGED_RELATIONS)


def test_read_graph_refuses_a_cursor_it_did_not_give_out(kg: Graph) -> None:
    kg.create(ent("A", "t"))
    text = kg.error("read_graph", {"limit": 1, "cursor": "not-a-cursor"})
    assert "cursor" in text


# -- get_neighbors ---------------------------------------------------------------------------------------------


def test_get_neighbors_by_direction_and_type(kg: Graph) -> None:
    kg.create(ent("A", "t", "a"), ent("B", "t"), ent("C", "t"), ent("D", "t"))
    kg.relate(("A", "B", "knows"), ("C", "A", "manages"), ("B", "C", "knows"), ("A", "D", "likes"))

    def neighbors(**arguments: Any) -> list[tuple[str, tuple[str, str, str], str]]:
        found = kg.ok("get_neighbors", {"entityName": "A", **arguments})["neighbors"]
        assert all(list(n) == ["entity", "relation", "direction"] for n in found)
        return [(n["entity"], triples([n["relation"]])[0], n["direction"]) for n in found]

    assert neighbors() == [
        ("B", ("A", "B", "knows"), "outgoing"),
        ("C", ("C", "A", "manages"), "incoming"),
        ("D", ("A", "D", "likes"), "outgoing"),
    ]
    assert neighbors(direction="both") == neighbors()
    assert neighbors(direction="outgoing") == [
        ("B", ("A", "B", "knows"), "outgoing"),
        ("D", ("A", "D", "likes"), "outgoing"),
    ]
    assert neighbors(direction="incoming") == [("C", ("C", "A", "manages"), "incoming")]
    assert neighbors(relationType="knows") == [("B", ("A", "B", "knows"), "outgoing")]
    assert neighbors(relationType="KNOWS") == []  # relation types are exact here
    assert neighbors(direction="incoming", relationType="likes") == []
    assert kg.ok("get_neighbors", {"entityName": "Missing"}) == {"neighbors": []}


def test_a_self_loop_is_a_neighbor_both_ways(kg: Graph) -> None:
    kg.create(ent("A", "t"))
    kg.relate(("A", "A", "mirrors"))
    found = kg.ok("get_neighbors", {"entityName": "A"})["neighbors"]
    assert [(n["entity"], n["direction"]) for n in found] == [("A", "outgoing"), ("A", "incoming")]


# -- find_path ------------------------------------------------------------------------------------------------


@pytest.fixture
def chain(kg: Graph) -> Graph:
    """A -> B -> C -> D, and E on its own."""
    kg.create(ent("A", "t", "a"), ent("B", "t"), ent("C", "t"), ent("D", "t", "d"), ent("E", "t"))
    kg.relate(("A", "B", "r"), ("B", "C", "r"), ("C", "D", "r"))
    return kg


def test_find_path_direct_and_over_several_hops(chain: Graph) -> None:
    direct = chain.ok("find_path", {"fromEntity": "A", "toEntity": "B"})
    long = chain.ok("find_path", {"fromEntity": "A", "toEntity": "D"})
    backwards = chain.ok("find_path", {"fromEntity": "D", "toEntity": "A"})

    assert direct == {"path": [ent("A", "t", "a"), ent("B", "t")], "relations": [rel("A", "B", "r")], "length": 1}
    assert list(direct) == ["path", "relations", "length"]
    assert names(long["path"]) == ["A", "B", "C", "D"]
    assert triples(long["relations"]) == [("A", "B", "r"), ("B", "C", "r"), ("C", "D", "r")]
    assert long["length"] == 3
    # Relations are followed either way and reported as stored.
    assert names(backwards["path"]) == ["D", "C", "B", "A"]
    assert triples(backwards["relations"]) == [("C", "D", "r"), ("B", "C", "r"), ("A", "B", "r")]
    assert backwards["length"] == 3


def test_find_path_same_node_missing_and_disconnected(chain: Graph) -> None:
    same = chain.ok("find_path", {"fromEntity": "A", "toEntity": "A"})
    assert same == {"path": [ent("A", "t", "a")], "relations": [], "length": 0}
    chain.no_path({"fromEntity": "A", "toEntity": "E"})
    chain.no_path({"fromEntity": "A", "toEntity": "Missing"})
    chain.no_path({"fromEntity": "Missing", "toEntity": "A"})


def test_find_path_max_depth_and_shortest(chain: Graph) -> None:
    chain.no_path({"fromEntity": "A", "toEntity": "D", "maxDepth": 2})
    assert chain.ok("find_path", {"fromEntity": "A", "toEntity": "D", "maxDepth": 3})["length"] == 3
    chain.relate(("D", "A", "shortcut"))
    shortest = chain.ok("find_path", {"fromEntity": "A", "toEntity": "D"})
    assert (names(shortest["path"]), triples(shortest["relations"]), shortest["length"]) == (
        ["A", "D"],
        [("D", "A", "shortcut")],
        1,
    )


# -- get_subgraph -----------------------------------------------------------------------------------------------


def test_get_subgraph_by_depth(chain: Graph) -> None:
    one_hop = chain.ok("get_subgraph", {"entityNames": ["B"]})
    two_hops = chain.ok("get_subgraph", {"entityNames": ["A"], "depth": 2})
    no_hops = chain.ok("get_subgraph", {"entityNames": ["A", "D"], "depth": 0})
    missing = chain.ok("get_subgraph", {"entityNames": ["Missing"], "depth": 3})

    assert one_hop == {
        "entities": [ent("A", "t", "a"), ent("B", "t"), ent("C", "t")],
        "relations": [rel("A", "B", "r"), rel("B", "C", "r")],
    }
    assert names(two_hops["entities"]) == ["A", "B", "C"]
    assert triples(two_hops["relations"]) == [("A", "B", "r"), ("B", "C", "r")]
    assert no_hops == {"entities": [ent("A", "t", "a"), ent("D", "t", "d")], "relations": []}
    assert missing == {"entities": [], "relations": []}


def test_get_subgraph_keeps_every_relation_among_its_entities_oldest_first(kg: Graph) -> None:
    kg.create(*(ent(name, "t") for name in "ABCDEF"))
    # C -> D joins two entities of the last hop; F -> A is the oldest relation of A, read
    # in the first hop; E is three hops from A.
    kg.relate(("F", "A", "r"), ("C", "D", "r"), ("A", "B", "r"), ("B", "C", "r"), ("B", "D", "r"), ("D", "E", "r"))

    def subgraph(name: str, depth: int) -> tuple[list[str], list[tuple[str, str, str]]]:
        result = kg.ok("get_subgraph", {"entityNames": [name], "depth": depth})
        return names(result["entities"]), triples(result["relations"])

    assert subgraph("B", 1) == (
        ["A", "B", "C", "D"],
        [("C", "D", "r"), ("A", "B", "r"), ("B", "C", "r"), ("B", "D", "r")],
    )
    assert subgraph("A", 2) == (
        ["A", "B", "C", "D", "F"],
        [("F", "A", "r"), ("C", "D", "r"), ("A", "B", "r"), ("B", "C", "r"), ("B", "D", "r")],
    )
    everything = (
        ["A", "B", "C", "D", "E", "F"],
        [("F", "A", "r"), ("C", "D", "r"), ("A", "B", "r"), ("B", "C", "r"), ("B", "D", "r"), ("D", "E", "r")],
    )
    assert subgraph("A", 3) == everything
    assert subgraph("A", 10) == everything  # stops once a hop adds no one
    assert subgraph("E", 0) == (["E"], [])


# -- filter_by_type, filter_relations, filter_observations --------------------------------------------------------


def test_filter_by_type_is_case_insensitive_and_keeps_relations_among_the_results(kg: Graph) -> None:
    kg.create(ent("Alice", "person", "a"), ent("Acme", "company"), ent("Bob", "Person"), ent("Persona", "personal"))
    kg.relate(("Alice", "Bob", "knows"), ("Alice", "Acme", "works_at"), ("Bob", "Persona", "plays"))
    people = kg.ok("filter_by_type", {"entityType": "person"})

    assert people == {
        "entities": [ent("Alice", "person", "a"), ent("Bob", "Person")],
        "relations": [rel("Alice", "Bob", "knows")],
    }
    assert kg.ok("filter_by_type", {"entityType": "PERSON"}) == people
    assert kg.ok("filter_by_type", {"entityType": "robot"}) == {"entities": [], "relations": []}


def test_filter_relations_by_type_source_and_target(kg: Graph) -> None:
    kg.create(ent("A", "t", "a"), ent("B", "t"), ent("C", "t"), ent("D", "t"))
    kg.relate(("A", "B", "knows"), ("A", "C", "works_with"), ("B", "C", "knows"), ("C", "A", "KNOWS"))

    def found(**arguments: Any) -> tuple[list[tuple[str, str, str]], list[str]]:
        result = kg.ok("filter_relations", arguments)
        assert list(result) == ["relations", "entities"]
        return triples(result["relations"]), names(result["entities"])

    by_type = found(relationType="Knows")
    assert by_type == ([("A", "B", "knows"), ("B", "C", "knows"), ("C", "A", "KNOWS")], ["A", "B", "C"])
    assert found(fromEntity="A") == ([("A", "B", "knows"), ("A", "C", "works_with")], ["A", "B", "C"])
    assert found(toEntity="C") == ([("A", "C", "works_with"), ("B", "C", "knows")], ["A", "B", "C"])
    assert found(relationType="knows", fromEntity="B") == ([("B", "C", "knows")], ["B", "C"])
    assert found(fromEntity="A", toEntity="B") == ([("A", "B", "knows")], ["A", "B"])
    everything = [("A", "B", "knows"), ("A", "C", "works_with"), ("B", "C", "knows"), ("C", "A", "KNOWS")]
    assert found() == (everything, ["A", "B", "C"])
    assert found(fromEntity="Missing") == ([], [])
    assert found(fromEntity="a") == ([], [])  # names are exact
    # The connected entities come whole.
    full = kg.ok("filter_relations", {"toEntity": "A"})
    assert full["entities"] == [ent("A", "t", "a"), ent("C", "t")]


@pytest.fixture
def notes(kg: Graph) -> Graph:
    kg.create(
        ent("Journal", "log", "[2025-01-15] Started the project", "plain words"),
        ent("Parser", "module", "Tech debt: the tokenizer is copied twice"),
        ent("Docs", "module", "TODO: write the docs"),
        ent("OldApi", "api", "This endpoint is Deprecated since v2"),
        ent("Cache", "module", "Purpose: keep sessions warm"),
        ent("Clock", "module", "Quirk: returns 0 on the first call"),
        ent("Misc", "note", "mentions [2025-01-15] later on", "nothing special"),
        ent("Empty", "note"),
    )
    return kg


def filtered(kg: Graph, pattern: str) -> list[str]:
    return names(kg.ok("filter_observations", {"pattern": pattern})["entities"])


def test_filter_observations_presets(notes: Graph) -> None:
    assert filtered(notes, "dated") == ["Journal"]  # the date must come first
    assert filtered(notes, "techdebt") == ["Parser", "Docs"]
    assert filtered(notes, "deprecated") == ["OldApi"]
    assert filtered(notes, "purpose") == ["Cache"]
    assert filtered(notes, "quirk") == ["Clock"]
    assert filtered(notes, "TECHDEBT") == ["Parser", "Docs"]  # preset names ignore case
    result = notes.ok("filter_observations", {"pattern": "dated"})
    assert result == {"entities": [ent("Journal", "log", "[2025-01-15] Started the project", "plain words")]}


def test_filter_observations_with_a_regular_expression(notes: Graph) -> None:
    assert filtered(notes, r"returns \d") == ["Clock"]
    assert filtered(notes, "STARTED") == ["Journal"]  # case-insensitive
    assert filtered(notes, r"^nothing\s+spec") == ["Misc"]
    assert filtered(notes, "docs$") == ["Docs"]
    assert filtered(notes, r"\[2025-01-15\]") == ["Journal", "Misc"]
    assert filtered(notes, "constructor") == []  # a name, not a preset
    # An empty pattern matches every entity that has an observation.
    assert filtered(notes, "") == ["Journal", "Parser", "Docs", "OldApi", "Cache", "Clock", "Misc"]


@pytest.mark.parametrize("pattern", ["(", "[a-", "*", "a{2,1}", "(?x)a{1 0 0 0 0 0 0}", "(?i)a"])
def test_filter_observations_refuses_an_invalid_pattern_clearly(notes: Graph, pattern: str) -> None:
    text = notes.error("filter_observations", {"pattern": pattern})
    assert text.startswith(f"Invalid regular expression: /{pattern}/i: "), text


def test_filter_observations_reads_braces_javascript_does_not_count_as_text(own: Graph) -> None:
    # `a{1 0 0}` is no repeat in JavaScript (nor, without verbose mode, in Python): the
    # braces and spaces are the text to find.
    own.create(ent("Braces", "t", "a{1 0 0} and a{,3}"), ent("Plain", "t", "a" * 100))
    assert filtered(own, "a{1 0 0}") == ["Braces"]
    assert filtered(own, "a{,3}") == ["Braces"]


def test_a_catastrophic_pattern_cannot_hang_the_server(own: Graph) -> None:
    own.create(ent("Victim", "t", "a" * 40 + "!"), ent("Other", "t", "fine"))
    result = own.raw("filter_observations", {"pattern": "(a+)+$"})
    # Either answer is acceptable, as long as there is one: an error, or the (empty) result.
    if result["isError"]:
        [block] = result["content"]
        assert block["text"], result
    else:
        assert result["structuredContent"] == {"entities": []}
    # And the server goes on answering.
    assert names(own.graph()["entities"]) == ["Victim", "Other"]
    assert filtered(own, "fine") == ["Other"]


def test_a_pattern_stopped_for_running_too_long_is_named_as_the_cause(tmp_path: Path) -> None:
    # No backtracking engine finishes this one: it is stopped at the pattern time limit,
    # well within the call's own limit, and the message should say what to change. The
    # pattern's limit is CPU time and the call's wall-clock time (see PATTERN_TIME_LIMIT_S),
    # so the call, and the client's wait for its reply, are given ten minutes: a busy
    # machine (a CPU-bound thread at a tenth of a core takes 20 s for 2 s of CPU) cannot
    # make either end first.
    with in_process(tmp_path / "own.db", {"MNEMODB_TOOL_TIMEOUT_MS": "600000"}) as own:
        assert isinstance(own.server, Wire)
        own.server.reply_timeout_s = 600.0
        own.create(ent("Victim", "t", "a" * 100 + "!"), ent("Other", "t", "fine"))
        text = own.error("filter_observations", {"pattern": "(a|aa)+$"})
        assert "pattern" in text, text
        # And the server goes on answering.
        assert filtered(own, "fine") == ["Other"]


# -- validation, unknown keys and unknown tools -------------------------------------------------------------------


def issues_of(text: str, tool: str) -> list[dict[str, Any]]:
    prefix = f"{INVALID_PREFIX}{tool}: "
    assert text.startswith(prefix), text
    issues: list[dict[str, Any]] = json.loads(text[len(prefix) :])
    return issues


@pytest.mark.parametrize("tool", [t for t in TOOL_NAMES if REQUIRED[t]])
def test_a_missing_required_field_is_an_input_validation_error(shared: Graph, tool: str) -> None:
    issues = issues_of(shared.error(tool, {}), tool)
    assert [issue["path"] for issue in issues] == [[field] for field in REQUIRED[tool]]
    assert all(issue["code"] == "invalid_type" for issue in issues)
    assert all(issue["message"].endswith("received undefined") for issue in issues)


@pytest.mark.parametrize(
    ("tool", "arguments", "path"),
    [
        ("create_entities", {"entities": "x"}, ["entities"]),
        ("create_entities", {"entities": [{"name": "A", "entityType": "t"}]}, ["entities", 0, "observations"]),
        ("create_relations", {"relations": [{"from": "A", "to": 5, "relationType": "r"}]}, ["relations", 0, "to"]),
        ("add_observations", {"observations": [{"entityName": "A"}]}, ["observations", 0, "contents"]),
        ("search_nodes", {"query": 5}, ["query"]),
        ("search_nodes", {"query": "x", "limit": "x"}, ["limit"]),
        ("open_nodes", {"names": [1, "a"]}, ["names", 0]),
        ("get_neighbors", {"entityName": "A", "direction": "up"}, ["direction"]),
        ("find_path", {"fromEntity": "A", "toEntity": "B", "maxDepth": "2"}, ["maxDepth"]),
    ],
)
def test_a_wrong_value_is_an_input_validation_error(
    shared: Graph, tool: str, arguments: dict[str, Any], path: list[str | int]
) -> None:
    issues = issues_of(shared.error(tool, arguments), tool)
    assert [issue["path"] for issue in issues] == [path]


def test_an_invalid_call_writes_nothing(kg: Graph) -> None:
    text = kg.error("create_entities", {"entities": [ent("A", "t"), {"name": "B", "entityType": "t"}]})
    assert text.startswith(INVALID_PREFIX + "create_entities: ")
    assert kg.graph() == {"entities": [], "relations": []}


def test_unknown_keys_are_ignored(kg: Graph) -> None:
    created = kg.ok(
        "create_entities",
        {"entities": [{**ent("A", "t", "o"), "type": "entity", "colour": "red"}, ent("B", "t")], "dryRun": True},
    )
    related = kg.ok("create_relations", {"relations": [{**rel("A", "B", "r"), "type": "relation", "weight": 3}]})
    graph = kg.ok("read_graph", {"verbose": True})

    assert created == {"entities": [ent("A", "t", "o"), ent("B", "t")]}
    assert related == {"relations": [rel("A", "B", "r")]}
    assert graph == {"entities": [ent("A", "t", "o"), ent("B", "t")], "relations": [rel("A", "B", "r")]}
    assert kg.ok("open_nodes", {"names": ["A"], "extra": [1, 2]})["entities"] == [ent("A", "t", "o")]


def test_an_unknown_tool(shared: Graph) -> None:
    assert shared.raw("nope", {}) == {
        "content": [{"type": "text", "text": "MCP error -32602: Tool nope not found"}],
        "isError": True,
    }


# -- several processes on one store ---------------------------------------------------------------------------------


def collect(server: RawServer, count: int, first_id: int) -> list[dict[str, Any]]:
    replies: dict[int, dict[str, Any]] = {}
    while len(replies) < count:
        reply = server.recv()
        replies[reply["id"]] = reply["result"]
    return [replies[first_id + i] for i in range(count)]


def send_all(server: RawServer, calls: Sequence[tuple[str, dict[str, Any]]], first_id: int) -> None:
    for offset, (tool, arguments) in enumerate(calls):
        message = {"name": tool, "arguments": arguments}
        server.send({"jsonrpc": "2.0", "id": first_id + offset, "method": "tools/call", "params": message})


def interleaved(
    one: RawServer,
    two: RawServer,
    calls_one: Sequence[tuple[str, dict[str, Any]]],
    calls_two: Sequence[tuple[str, dict[str, Any]]],
    first_id: int,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Both servers get all their calls before either is waited on, so they write at the same time."""
    for index in range(max(len(calls_one), len(calls_two))):
        if index < len(calls_one):
            send_all(one, [calls_one[index]], first_id + index)
        if index < len(calls_two):
            send_all(two, [calls_two[index]], first_id + index)
    return collect(one, len(calls_one), first_id), collect(two, len(calls_two), first_id)


WRITERS = 30


@pytest.mark.e2e
def test_two_servers_on_one_file_lose_no_writes(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    first = spawn(db)
    second = spawn(db)
    try:
        first.initialize()
        second.initialize()
        hub = first.call("create_entities", {"entities": [ent("Hub", "hub")]})
        assert hub["isError"] is False, hub

        def entities(prefix: str) -> list[tuple[str, dict[str, Any]]]:
            made = [("create_entities", {"entities": [ent(f"{prefix}{i}", prefix, "first")]}) for i in range(WRITERS)]
            # Both try to create the same entity, each with its own observation.
            made.insert(WRITERS // 2, ("create_entities", {"entities": [ent("Contested", "c", f"by {prefix}")]}))
            return made

        created_one, created_two = interleaved(first, second, entities("P"), entities("Q"), 10_000)

        def links(prefix: str) -> list[tuple[str, dict[str, Any]]]:
            calls: list[tuple[str, dict[str, Any]]] = []
            for i in range(WRITERS):
                ours = [rel(f"{prefix}{i}", "Hub", "points_to")]
                if i:
                    ours.append(rel(f"{prefix}{i}", f"{prefix}{i - 1}", "follows"))
                calls.append(("create_relations", {"relations": ours}))
                hub_fact = {"entityName": "Hub", "contents": [f"{prefix} says {i}"]}
                own_fact = {"entityName": f"{prefix}{i}", "contents": ["second"]}
                calls.append(("add_observations", {"observations": [hub_fact, own_fact]}))
            # Both relate the contested entity to the hub: one relation must result.
            calls.append(("create_relations", {"relations": [rel("Contested", "Hub", "contests")]}))
            return calls

        linked_one, linked_two = interleaved(first, second, links("P"), links("Q"), 20_000)
    finally:
        first.close()
        second.close()

    for result in [*created_one, *created_two, *linked_one, *linked_two]:
        assert result["isError"] is False, result
    contested = [
        e for r in [*created_one, *created_two] for e in r["structuredContent"]["entities"] if e["name"] == "Contested"
    ]
    assert len(contested) == 1  # exactly one of the two calls created it

    reader, schemas = start(db)
    try:
        graph = Graph(reader, schemas).graph()
    finally:
        reader.close()

    expected_names = {"Hub", "Contested"} | {f"{p}{i}" for p in "PQ" for i in range(WRITERS)}
    assert sorted(names(graph["entities"])) == sorted(expected_names)  # each exactly once
    by_name = {e["name"]: e for e in graph["entities"]}
    assert sorted(by_name["Hub"]["observations"]) == sorted(f"{p} says {i}" for p in "PQ" for i in range(WRITERS))
    for p in "PQ":
        for i in range(WRITERS):
            assert by_name[f"{p}{i}"]["observations"] == ["first", "second"]
    assert by_name["Contested"]["observations"] == contested[0]["observations"]
    expected_relations = (
        {(f"{p}{i}", "Hub", "points_to") for p in "PQ" for i in range(WRITERS)}
        | {(f"{p}{i}", f"{p}{i - 1}", "follows") for p in "PQ" for i in range(1, WRITERS)}
        | {("Contested", "Hub", "contests")}
    )
    assert sorted(triples(graph["relations"])) == sorted(expected_relations)
