"""The change log's op builders (`mnemodb.model.ops`): each entry's shape, the node view of
a create entry, vectors as base64 float32, and redaction, which keeps every shape."""

from __future__ import annotations

import base64
import struct
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemodb.model import ops
from mnemodb.model.ids import content_hash
from mnemodb.model.records import Edge, Entity, Memory

SCOPE = "01HV7N8Q3Y2J6W5X4Z9A0B1C2D"
MEMORY = Memory(7, "01HV7N8Q3Y2J6W5X4Z9A0B1C2F", SCOPE, "the text", content_hash("the text"), ("a", "b"), 4,
                "plan", "short", {"p": 1}, 100, 200)  # fmt: skip
PLAIN = Memory(9, "01HV7N8Q3Y2J6W5X4Z9A0B1C2G", "shared", "plain", content_hash("plain"), (), 0, "general", None,
               {}, 100, 100)  # fmt: skip
ENTITY = Entity(8, "01HV7N8Q3Y2J6W5X4Z9A0B1C2E", "shared", "Ada", "person", ("writes code",), {"born": 1815}, 1, 2)
EDGE = Edge(3, "01HV7N8Q3Y2J6W5X4Z9A0B1C2H", MEMORY.id, ENTITY.id, "mentions", SCOPE, {"w": 0.5}, 150, None, 150, 7, 8)


def test_memory_created() -> None:
    assert ops.memory_created(MEMORY) == (
        SCOPE,
        "create_node",
        MEMORY.id,
        {
            "id": MEMORY.id,
            "label": "Memory",
            "scope": SCOPE,
            "props": {"p": 1},
            "memory": {
                "hash": MEMORY.hash,
                "content": "the text",
                "summary": "short",
                "importance": 4,
                "memory_type": "plan",
                "tags": ["a", "b"],
            },
        },
    )


def test_entity_created() -> None:
    assert ops.entity_created(ENTITY) == (
        "shared",
        "create_node",
        ENTITY.id,
        {
            "id": ENTITY.id,
            "label": "Entity",
            "scope": "shared",
            "props": {"born": 1815},
            "entity": {"name": "Ada", "entity_type": "person", "observations": ["writes code"]},
        },
    )


def test_record_created_from_a_dump_record() -> None:
    record: dict[str, Any] = {
        "id": ENTITY.id,
        "scope": "shared",
        "label": "Entity",
        "props": None,
        "entity": {"name": "Ada", "entity_type": "", "observations": [{"content": "one"}, {"content": "two"}]},
    }
    scope, op, target, data = ops.record_created(record)
    assert (scope, op, target) == ("shared", "create_node", ENTITY.id)
    assert data == {
        "id": ENTITY.id,
        "label": "Entity",
        "scope": "shared",
        "props": {},
        "entity": {"name": "Ada", "entity_type": "", "observations": ["one", "two"]},
    }
    # The record itself is left as it was.
    assert record["entity"]["observations"] == [{"content": "one"}, {"content": "two"}]
    # A plain node: no memory or entity part.
    plain = ops.record_created({"id": "x", "scope": "shared", "label": "Doc", "props": {"title": "t"}})
    assert plain[3] == {"id": "x", "label": "Doc", "scope": "shared", "props": {"title": "t"}}


def test_node_props_show_what_is_not_a_default_then_the_nodes_own() -> None:
    assert ops.node_props(ops.memory_created(MEMORY)[3]) == {
        "content": "the text",
        "importance": 4,
        "memory_type": "plan",
        "summary": "short",
        "p": 1,
    }
    assert ops.node_props(ops.memory_created(PLAIN)[3]) == {"content": "plain"}
    assert ops.node_props(ops.entity_created(ENTITY)[3]) == {"name": "Ada", "entityType": "person", "born": 1815}
    untyped = ops.node_record("n", "shared", "Entity", {}, entity={"name": "Bo", "entity_type": "", "observations": []})
    assert ops.node_props(untyped) == {"name": "Bo"}
    # A property named like a field does not hide the field.
    shadow = ops.node_record("n", "shared", "Memory", {"content": "prop", "x": 1}, memory={"content": "field"})
    assert ops.node_props(shadow) == {"content": "field", "x": 1}
    assert ops.node_props({"props": None}) == {}


def test_updates_tags_and_props() -> None:
    assert ops.node_updated(SCOPE, "n", {"content": "new"}) == (
        SCOPE,
        "update_node",
        "n",
        {"id": "n", "set": {"content": "new"}},
    )
    assert ops.node_removed(SCOPE, "n") == (SCOPE, "remove_node", "n", {"id": "n"})
    assert ops.tags_added(SCOPE, "n", ("x", "y")) == (SCOPE, "add_tags", "n", {"id": "n", "tags": ["x", "y"]})
    assert ops.props_set(SCOPE, "n", {"gone": None}) == (SCOPE, "set_props", "n", {"id": "n", "props": {"gone": None}})
    assert ops.observations_added(ENTITY, ("o",)) == (
        "shared",
        "add_observations",
        ENTITY.id,
        {"id": ENTITY.id, "contents": ["o"]},
    )
    assert ops.observations_removed(ENTITY, ["o"])[1:] == (
        "remove_observations",
        ENTITY.id,
        {"id": ENTITY.id, "contents": ["o"]},
    )


def test_edge_entries() -> None:
    record = {
        "id": EDGE.id,
        "from": MEMORY.id,
        "to": ENTITY.id,
        "type": "mentions",
        "scope": SCOPE,
        "props": {"w": 0.5},
        "valid_from": 150,
    }
    assert ops.edge_record(EDGE) == record
    assert ops.edge_created(EDGE) == (SCOPE, "create_edge", EDGE.id, record)
    assert ops.edge_closed(EDGE, 300) == (SCOPE, "close_edge", EDGE.id, {"id": EDGE.id, "valid_to": 300})
    assert ops.edge_removed(EDGE) == (SCOPE, "remove_edge", EDGE.id, {"id": EDGE.id})


def test_builders_copy_what_they_are_given() -> None:
    props: dict[str, Any] = {"p": 1}
    data = ops.node_record("n", "shared", "Doc", props)
    props["p"] = 2
    assert data["props"] == {"p": 1}
    tags = ["x"]
    entry = ops.tags_added("shared", "n", tags)
    tags.append("y")
    assert entry[3]["tags"] == ["x"]


_float32 = st.floats(width=32, allow_nan=False)


@given(st.lists(_float32, max_size=64))
def test_a_vector_is_logged_as_exact_base64_float32(values: list[float]) -> None:
    blob = struct.pack(f"<{len(values)}f", *values)
    scope, op, target, data = ops.embedding_set(SCOPE, "n", "model-x", blob)
    assert (scope, op, target) == (SCOPE, "set_embedding", "n")
    assert data == {"id": "n", "model": "model-x", "f32": base64.b64encode(blob).decode()}
    assert ops.embedding_vector(data) == values


def test_a_vector_logged_as_a_list_still_reads() -> None:
    assert ops.embedding_vector({"id": "n", "model": "m", "vector": [1, 0.5, -2]}) == [1.0, 0.5, -2.0]


# -- redaction ----------------------------------------------------------------------------------------------

SECRET = "secret"


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        (
            ops.memory_created(MEMORY),
            {
                "id": MEMORY.id,
                "label": "Memory",
                "scope": SCOPE,
                "props": {},
                "memory": {
                    "hash": "",
                    "content": "",
                    "summary": None,
                    "importance": 4,
                    "memory_type": "plan",
                    "tags": [],
                },
                "redacted": True,
            },
        ),
        (
            ops.entity_created(ENTITY),
            {
                "id": ENTITY.id,
                "label": "Entity",
                "scope": "shared",
                "props": {},
                "entity": {"name": "", "entity_type": "person", "observations": []},
                "redacted": True,
            },
        ),
        (ops.node_updated(SCOPE, "n", {"content": SECRET}), {"id": "n", "set": {}, "redacted": True}),
        (ops.props_set(SCOPE, "n", {"k": SECRET}), {"id": "n", "props": {}, "redacted": True}),
        (ops.tags_added(SCOPE, "n", [SECRET]), {"id": "n", "tags": [], "redacted": True}),
        (ops.observations_added(ENTITY, [SECRET]), {"id": ENTITY.id, "contents": [], "redacted": True}),
        (ops.observations_removed(ENTITY, [SECRET]), {"id": ENTITY.id, "contents": [], "redacted": True}),
        (ops.embedding_set(SCOPE, "n", "m", b"\x00\x00\x80?"), {"id": "n", "model": "m", "f32": "", "redacted": True}),
    ],
    ids=["memory", "entity", "update", "props", "tags", "observations-added", "observations-removed", "vector"],
)
def test_redaction_takes_out_the_text_and_keeps_the_shape(op: ops.Op, expected: dict[str, Any]) -> None:
    _, name, _, data = op
    cleaned = ops.redacted(name, data)
    assert cleaned == expected
    assert set(cleaned) == {*data, "redacted"}
    assert ops.redacted(name, cleaned) == cleaned  # redacting twice changes nothing more


def test_redaction_of_a_vector_logged_as_a_list() -> None:
    assert ops.redacted("set_embedding", {"id": "n", "model": "m", "vector": [0.5]}) == {
        "id": "n",
        "model": "m",
        "f32": "",
        "redacted": True,
    }


@pytest.mark.parametrize("op", [ops.node_removed(SCOPE, "n"), ops.edge_closed(EDGE, 9), ops.edge_removed(EDGE)])
def test_entries_without_text_are_left_as_they_are(op: ops.Op) -> None:
    _, name, _, data = op
    assert ops.redacted(name, data) == data
    assert "redacted" not in ops.redacted(name, data)


def test_redaction_leaves_the_entry_it_was_given_alone() -> None:
    _, name, _, data = ops.memory_created(MEMORY)
    ops.redacted(name, data)
    assert data["memory"]["content"] == "the text" and data["props"] == {"p": 1}
