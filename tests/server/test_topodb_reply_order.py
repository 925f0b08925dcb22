"""The topodb profile's read replies are built with their keys in order, and encoded without
sorting them again: the text must still be what sorting every object's keys gives."""

from __future__ import annotations

import json
from typing import Any

from mnemodb.engine import Engine
from mnemodb.model.records import Edge, Node
from mnemodb.server.profiles.topodb.handlers import TopodbTools
from mnemodb.server.profiles.topodb.profile import TopodbProfile
from mnemodb.server.profiles.topodb.wire import SortedReply, edge_json, node_json
from mnemodb.server.serde_params import sorted_json


def _keys_in_order(value: Any) -> bool:
    if isinstance(value, dict):
        return list(value) == sorted(value) and all(_keys_in_order(v) for v in value.values())
    if isinstance(value, list):
        return all(_keys_in_order(v) for v in value)
    return True


def test_node_and_edge_shapes_have_their_keys_in_order_at_every_level() -> None:
    # A nested value is no property the topodb tools write, but a view must not trip on one.
    props: dict[str, Any] = {"zeta": 1, "alpha": {"y": [{"b": 1, "a": 2}], "x": None}, "mid": "text"}
    node = Node(1, "01HV7N8Q3Y2J6W5X4Z9A0B1C2D", "shared", "Entity", props, 5, 6)
    edge = Edge(
        pk=1,
        id="01HV7N8Q3Y2J6W5X4Z9A0B1C2E",
        src="01HV7N8Q3Y2J6W5X4Z9A0B1C2D",
        dst="01HV7N8Q3Y2J6W5X4Z9A0B1C2F",
        type="knows",
        scope="shared",
        props={"b": True, "a": 1.5},
        valid_from=1,
        valid_to=None,
        created_at=1,
        src_pk=1,
        dst_pk=2,
    )
    for shape in (node_json(node), edge_json(edge)):
        assert _keys_in_order(shape)
        assert shape == sorted_json(shape)


def _text(result: dict[str, Any]) -> str:
    text = result["content"][0]["text"]
    assert isinstance(text, str)
    return text


def test_read_replies_encode_as_sorting_every_key_would(engine: Engine) -> None:
    tools = TopodbTools(db_path="graph.db", allow_unscoped_changes=False)
    profile = TopodbProfile(db_path="graph.db")
    tool = profile.tools[0]
    entity = tools.create_entity(engine, {"name": "Ada", "props": {"zz": 1, "aa": "x", "mm": True}, "scope": None})
    memory = tools.create_memory(engine, {"content": "Ada wrote notes", "props": {"q": 2, "b": 1}, "scope": None})
    tools.link(
        engine,
        {
            "from_id": memory["id"],
            "to_id": entity["id"],
            "edge_type": "about",
            "props": {"w": 1, "c": "k"},
            "scope": None,
            "valid_from": None,
        },
    )
    no_scopes = {"scope": None, "scopes": None}
    replies = [
        tools.get_node(engine, {"id": entity["id"], "as_of": None, **no_scopes}),
        tools.find_by_prop(engine, {"label": "Entity", "prop": "name", "value": "Ada", **no_scopes}),
        tools.search_memories(engine, {"query": "notes", "k": 10, **no_scopes}),
        tools.traverse(
            engine,
            {
                "seed_id": entity["id"],
                "max_hops": 2,
                "direction": "both",
                "edge_types": None,
                "as_of": None,
                **no_scopes,
            },
        ),
    ]
    for reply in replies:
        assert isinstance(reply, SortedReply)
        assert _keys_in_order(reply.value)
        result = profile.success(tool, reply)
        expected = json.dumps(reply.value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
        assert _text(result) == expected
        assert result["structuredContent"] == json.loads(expected)
    traversed = replies[3]
    assert isinstance(traversed, SortedReply)
    assert len(traversed.value["subgraph"]["edges"]) == 1
    assert len(traversed.value["subgraph"]["nodes"]) == 2


def test_replies_with_float_properties_spell_them_as_the_standard_library(engine: Engine) -> None:
    # orjson writes 1e-05 as 0.00001: a reply holding a float is encoded by the standard
    # library, one without by orjson, and both give the text sorting every key would.
    tools = TopodbTools(db_path="graph.db", allow_unscoped_changes=False)
    profile = TopodbProfile(db_path="graph.db")
    tool = profile.tools[0]
    ada = tools.create_entity(engine, {"name": "Ada", "props": {"n": 2**62, "t": "é\u2028\x01"}, "scope": None})["id"]
    bob = tools.create_entity(engine, {"name": "Bob", "props": {"w": 1e-05}, "scope": None})["id"]
    cy = tools.create_entity(engine, {"name": "Cy", "props": None, "scope": None})["id"]
    dee = tools.create_entity(engine, {"name": "Dee", "props": None, "scope": None})["id"]
    link = {"scope": None, "valid_from": None, "edge_type": "knows"}
    tools.link(engine, {"from_id": ada, "to_id": cy, "props": None, **link})
    tools.link(engine, {"from_id": bob, "to_id": ada, "props": {"p": 2.5e-07}, **link})
    tools.link(engine, {"from_id": dee, "to_id": cy, "props": {"p": 0.5}, **link})
    no_scopes = {"scope": None, "scopes": None}

    def traverse(seed: str, direction: str) -> Any:
        arguments = {"seed_id": seed, "max_hops": 1, "direction": direction, "edge_types": None, "as_of": None}
        return tools.traverse(engine, {**arguments, **no_scopes})

    cases = [
        (traverse(ada, "out"), True),  # Ada, Cy and the edge between them
        (traverse(cy, "in"), False),  # Dee's edge holds a float
        (traverse(ada, "both"), False),  # Bob and his edge hold floats
        (traverse(bob, "in"), False),  # Bob alone
        (tools.get_node(engine, {"id": ada, "as_of": None, **no_scopes}), True),
        (tools.get_node(engine, {"id": bob, "as_of": None, **no_scopes}), False),
        (tools.find_by_prop(engine, {"label": "Entity", "prop": "name", "value": "Bob", **no_scopes}), False),
    ]
    texts = []
    for reply, floatless in cases:
        assert isinstance(reply, SortedReply)
        assert reply.floatless is floatless
        texts.append(_text(profile.success(tool, reply)))
        assert texts[-1] == json.dumps(reply.value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    assert '"p":2.5e-07' in texts[2] and '"w":1e-05' in texts[3]
    assert "é\u2028\\u0001" in texts[0]
