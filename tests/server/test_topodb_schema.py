"""What the topodb profile's tools advertise, and the index spec.

Upstream's `schema` tests: props are objects, vectors arrays of at least one number,
find_by_prop's value a string, integer or boolean, max_hops 1..4, k at least 1, scopes
at least one item, and every parameter typed (traverse's direction through `$ref`). Then
`spec_persistence`: a custom --spec is kept when the file is reopened without one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from topodb_support import READ_TOOLS, TOOL_NAMES, Topo

pytestmark = pytest.mark.inprocess

REQUIRED = {
    "access_stats": ["id"],
    "close_edge": ["id"],
    "create_entity": ["name"],
    "create_memory": ["content"],
    "db_info": [],
    "find_by_prop": ["label", "prop", "value"],
    "get_changes": ["since_seq"],
    "get_node": ["id"],
    "link": ["from_id", "to_id", "edge_type"],
    "remove_node": ["id"],
    "search_memories": ["query"],
    "search_vectors": ["model", "vector"],
    "set_embedding": ["id", "model", "vector"],
    "set_node_props": ["id", "props"],
    "submit_batch": ["commands"],
    "traverse": ["seed_id"],
}
PROPERTIES = {
    "access_stats": {"id", "scope", "scopes"},
    "close_edge": {"id", "valid_to"},
    "create_entity": {"name", "props", "scope"},
    "create_memory": {"content", "props", "scope"},
    "db_info": set(),
    "find_by_prop": {"label", "prop", "value", "scope", "scopes"},
    "get_changes": {"since_seq", "limit"},  # + mnemodb's limit
    "get_node": {"id", "scope", "scopes", "as_of"},  # + mnemodb's as_of
    "link": {"from_id", "to_id", "edge_type", "scope", "props", "valid_from"},
    "remove_node": {"id"},
    "search_memories": {"query", "k", "scope", "scopes"},
    "search_vectors": {"model", "vector", "k", "scope", "scopes", "candidates"},
    "set_embedding": {"id", "model", "vector"},
    "set_node_props": {"id", "props"},
    "submit_batch": {"commands"},
    "traverse": {"seed_id", "max_hops", "direction", "edge_types", "scope", "scopes", "as_of"},  # + as_of
}
OUTPUT_REQUIRED = {
    "access_stats": ["found"],
    "close_edge": ["seq"],
    "create_entity": ["id"],
    "create_memory": ["id"],
    "db_info": ["path", "current_seq", "default_scope", "default_read_scopes"],
    "find_by_prop": ["nodes"],
    "get_changes": ["ops"],
    "get_node": ["found"],
    "link": ["id"],
    "remove_node": ["seq"],
    "search_memories": ["hits"],
    "search_vectors": ["hits"],
    "set_embedding": ["seq"],
    "set_node_props": ["seq"],
    "submit_batch": ["ids"],
    "traverse": ["subgraph"],
}


@pytest.fixture(scope="module")
def topo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Topo]:
    db = tmp_path_factory.mktemp("topodb-schema") / "agent.db"
    with Topo.in_process(db) as server:
        yield server


@pytest.fixture(scope="module")
def schemas(topo: Topo) -> dict[str, dict[str, Any]]:
    tools = topo.server.request("tools/list")["result"]["tools"]
    assert [t["name"] for t in tools] == TOOL_NAMES
    return {t["name"]: t for t in tools}


def props_of(schemas: dict[str, dict[str, Any]], tool: str) -> dict[str, Any]:
    properties: dict[str, Any] = schemas[tool]["inputSchema"]["properties"]
    return properties


def types_of(param: dict[str, Any]) -> set[str]:
    kind = param["type"]
    return {kind} if isinstance(kind, str) else set(kind)


def test_parameters_and_required_fields(schemas: dict[str, dict[str, Any]]) -> None:
    for name, tool in schemas.items():
        schema = tool["inputSchema"]
        assert schema["type"] == "object", name
        assert set(schema["properties"]) == PROPERTIES[name], name
        assert schema.get("required", []) == REQUIRED[name], name
        if name == "db_info":
            assert schema == {"properties": {}, "type": "object"}
        else:
            assert schema["additionalProperties"] is False, name
        output = tool["outputSchema"]
        assert output["required"] == OUTPUT_REQUIRED[name], name
        assert "additionalProperties" not in output, name


def test_props_advertise_objects(schemas: dict[str, dict[str, Any]]) -> None:
    for tool in ("create_memory", "create_entity", "link"):
        param = props_of(schemas, tool)["props"]
        assert types_of(param) == {"object", "null"}, tool
        assert param["additionalProperties"] is True
    required = props_of(schemas, "set_node_props")["props"]
    assert required["type"] == "object" and required["additionalProperties"] is True


def test_vectors_advertise_arrays_of_at_least_one_number(schemas: dict[str, dict[str, Any]]) -> None:
    for tool in ("set_embedding", "search_vectors"):
        vector = props_of(schemas, tool)["vector"]
        assert vector["type"] == "array", tool
        assert vector["items"] == {"type": "number"}
        assert vector["minItems"] == 1


def test_find_by_prop_value_is_a_string_integer_or_boolean(schemas: dict[str, dict[str, Any]], topo: Topo) -> None:
    assert props_of(schemas, "find_by_prop")["value"]["type"] == ["string", "integer", "boolean"]
    entity = topo.entity("1815")
    flag = topo.entity("true")
    find = {"label": "Entity", "prop": "name"}
    assert topo.found_ids("find_by_prop", {**find, "value": "1815"}) == [entity]
    assert topo.found_ids("find_by_prop", {**find, "value": 1815}) == []  # a silent miss, not an error
    assert topo.found_ids("find_by_prop", {**find, "value": "true"}) == [flag]
    assert topo.found_ids("find_by_prop", {**find, "value": True}) == []
    assert topo.found_ids("find_by_prop", {**find, "value": "TRUE"}) == []  # exact and case-sensitive


def test_max_hops_and_k_bounds(schemas: dict[str, dict[str, Any]], topo: Topo) -> None:
    hops = props_of(schemas, "traverse")["max_hops"]
    assert (hops["type"], hops["minimum"], hops["maximum"], hops["default"]) == ("integer", 1, 4, 2)
    for tool in ("search_memories", "search_vectors"):
        k = props_of(schemas, tool)["k"]
        assert (k["type"], k["minimum"], k["default"]) == ("integer", 1, 10), tool

    seed = topo.entity("bounds seed")
    # Rejected, not clamped.
    assert topo.error("traverse", {"seed_id": seed, "max_hops": 0}) == "rejected: max_hops must be in 1..=4, got 0"
    assert topo.error("traverse", {"seed_id": seed, "max_hops": 5}) == "rejected: max_hops must be in 1..=4, got 5"
    for hops_ok in (1, 4):
        assert topo.subgraph(seed, max_hops=hops_ok) == ({seed}, set())
    topo.memory("bounds memory for k")
    assert topo.error("search_memories", {"query": "bounds", "k": 0}) == "rejected: text search requires k > 0"
    assert len(topo.ok("search_memories", {"query": "bounds", "k": 1})["hits"]) == 1
    topo.ok("set_embedding", {"id": seed, "model": "bounds", "vector": [1]})
    assert (
        topo.error("search_vectors", {"model": "bounds", "vector": [1], "k": 0})
        == "vector search requires k > 0 and a non-empty query vector"
    )
    assert topo.found_ids("search_vectors", {"model": "bounds", "vector": [1], "k": 1}) == [seed]


def test_empty_embedding_is_rejected_then_a_real_one_works(topo: Topo) -> None:
    node = topo.memory("embedding after a refusal")
    assert (
        topo.error("set_embedding", {"id": node, "model": "after", "vector": []})
        == 'embedding for model "after" must have at least one dimension'
    )
    assert "seq" in topo.ok("set_embedding", {"id": node, "model": "after", "vector": [0.1, 0.2, 0.3]})
    assert topo.found_ids("search_vectors", {"model": "after", "vector": [0.1, 0.2, 0.3]}) == [node]


def test_scopes_advertise_at_least_one_item(schemas: dict[str, dict[str, Any]]) -> None:
    for tool in READ_TOOLS:
        scopes = props_of(schemas, tool)["scopes"]
        assert types_of(scopes) == {"array", "null"}, tool
        assert scopes["items"] == {"type": "string"}
        assert scopes["minItems"] == 1, tool
        assert types_of(props_of(schemas, tool)["scope"]) == {"string", "null"}


def test_no_parameter_lacks_a_type(schemas: dict[str, dict[str, Any]]) -> None:
    for name, tool in schemas.items():
        schema = tool["inputSchema"]
        for param, spec in schema["properties"].items():
            assert spec.get("description"), (name, param)
            if (name, param) == ("traverse", "direction"):
                # An enum by reference, as schemars writes it; the definition is typed.
                assert spec["$ref"] == "#/$defs/DirectionParam" and "type" not in spec
                definition = schema["$defs"]["DirectionParam"]
                assert definition["type"] == "string" and definition["enum"] == ["out", "in", "both"]
                continue
            assert "type" in spec, (name, param)
    commands = props_of(schemas, "submit_batch")["commands"]
    assert commands["type"] == "array" and commands["items"] == {}  # any command: checked when run
    for tool_name, field in (("get_changes", "since_seq"), ("close_edge", "valid_to"), ("link", "valid_from")):
        assert "integer" in types_of(props_of(schemas, tool_name)[field]), (tool_name, field)


# -- the index spec --------------------------------------------------------------------------


def write_spec(path: Path, equality: list[tuple[str, str]], text: list[tuple[str, str]]) -> Path:
    path.write_text(
        json.dumps(
            {
                "equality": [{"label": label, "prop": prop} for label, prop in equality],
                "text": [{"label": label, "prop": prop} for label, prop in text],
            }
        )
    )
    return path


def test_a_custom_spec_survives_a_reopen_without_spec(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    custom = write_spec(tmp_path / "spec.json", [("Entity", "born"), ("Entity", "alive")], [("Memory", "content")])
    with Topo.in_process(db, "--spec", str(custom)) as topo:
        ada = topo.entity("Ada", props={"born": 1815, "alive": False})
        memory = topo.memory("Ada annotated the engine")
        find = {"label": "Entity", "prop": "born"}
        assert topo.found_ids("find_by_prop", {**find, "value": 1815}) == [ada]
        assert topo.found_ids("find_by_prop", {**find, "value": "1815"}) == []
        assert topo.found_ids("find_by_prop", {"label": "Entity", "prop": "alive", "value": False}) == [ada]
        assert (
            topo.error("find_by_prop", {"label": "Entity", "prop": "name", "value": "Ada"})
            == "rejected: (Entity, name) is not equality-indexed"
        )
        # Matching is type-exact: a boolean is not the integer 1, nor 0.
        typed = topo.entity("Typed", props={"born": True, "alive": 0})
        assert topo.found_ids("find_by_prop", {**find, "value": True}) == [typed]
        assert topo.found_ids("find_by_prop", {**find, "value": 1}) == []
        assert topo.found_ids("find_by_prop", {"label": "Entity", "prop": "alive", "value": 0}) == [typed]
        assert topo.found_ids("find_by_prop", {"label": "Entity", "prop": "alive", "value": False}) == [ada]

    with Topo.in_process(db) as topo:
        assert topo.found_ids("find_by_prop", {"label": "Entity", "prop": "born", "value": 1815}) == [ada]
        assert topo.found_ids("find_by_prop", {"label": "Entity", "prop": "alive", "value": False}) == [ada]
        assert (
            topo.error("find_by_prop", {"label": "Entity", "prop": "name", "value": "Ada"})
            == "rejected: (Entity, name) is not equality-indexed"
        )
        assert topo.found_ids("search_memories", {"query": "annotated"}) == [memory]

    # An explicit --spec replaces the stored one, and text indexing follows it.
    by_name = write_spec(tmp_path / "names.json", [("Entity", "name")], [("Entity", "name")])
    with Topo.in_process(db, "--spec", str(by_name)) as topo:
        assert topo.found_ids("find_by_prop", {"label": "Entity", "prop": "name", "value": "Ada"}) == [ada]
        assert (
            topo.error("find_by_prop", {"label": "Entity", "prop": "born", "value": 1815})
            == "rejected: (Entity, born) is not equality-indexed"
        )
        assert topo.found_ids("search_memories", {"query": "Ada"}) == [ada]  # entities by name, memories no more
        assert topo.found_ids("search_memories", {"query": "annotated"}) == []
        grace = topo.entity("Grace Hopper")
        assert topo.found_ids("search_memories", {"query": "hopper"}) == [grace]
