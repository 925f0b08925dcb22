"""A change-log entry's data packed without what its row says, and given back exactly."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from mnemodb.model import ops
from mnemodb.model.ids import content_hash
from mnemodb.model.packed_changes import SHAPES, is_packed, pack, unpack
from mnemodb.model.records import Edge, Entity, Memory

AT = 1_700_000_000_000
SCOPE = "01HV7N8Q3Y2J6W5X4Z9A0B1C00"
NODE = "01HV7N8Q3Y2J6W5X4Z9A0B1C31"
OTHER = "01HV7N8Q3Y2J6W5X4Z9A0B1C32"
EDGE = "01HV7N8Q3Y2J6W5X4Z9A0B1C41"


def exact(data: dict[str, Any]) -> str:
    """The data as a reply writes it: key order and value types show."""
    return json.dumps(data, ensure_ascii=False)


def round_trip(op: ops.Op, at: int = AT) -> str:
    scope, _name, target, data = op
    text = pack(at, scope, target, data)
    assert exact(unpack(at, scope, target, text)) == exact(data)
    return text


MEMORY = Memory(
    pk=1,
    id=NODE,
    scope=SCOPE,
    hash=content_hash('Ünïcode, "quotes" and \\ back\nslash'),
    content='Ünïcode, "quotes" and \\ back\nslash',
    summary="a summary",
    importance=7,
    memory_type="fact",
    tags=("b", "a"),
    props={"float": 1.5, "whole": 2.0, "flag": True, "text": "x"},
    created_at=AT,
    updated_at=AT,
)
ENTITY = Entity(
    pk=1,
    id=NODE,
    scope=SCOPE,
    name="Ada",
    entity_type="person",
    observations=("writes code", "likes tea"),
    props={},
    created_at=AT,
    updated_at=AT,
)
EDGE_RECORD = Edge(
    pk=1,
    id=EDGE,
    src=NODE,
    dst=OTHER,
    type="knows",
    scope=SCOPE,
    props={"since": 2020},
    valid_from=AT,
    valid_to=None,
    created_at=AT,
    src_pk=1,
    dst_pk=2,
)


@pytest.mark.parametrize(
    "op",
    [
        ops.memory_created(MEMORY),
        ops.entity_created(ENTITY),
        ops.edge_created(EDGE_RECORD),
        ops.node_updated(SCOPE, NODE, {"content": "new", "tags": ["x"]}),
        ops.node_removed(SCOPE, NODE),
        ops.tags_added(SCOPE, NODE, ["t"]),
        ops.memory_archived(MEMORY),
        ops.memory_unarchived(MEMORY),
        ops.edge_closed(EDGE_RECORD, AT + 5),
        ops.edge_removed(EDGE_RECORD),
        ops.observations_added(ENTITY, ["more"]),
        ops.observations_removed(ENTITY, ["writes code"]),
        ops.embedding_set(SCOPE, NODE, "model", b"\x00\x00\x80?"),
        ops.props_set(SCOPE, NODE, {"content": "x", "gone": None}),
        (SCOPE, ops.CREATE_NODE, NODE, ops.node_record(NODE, SCOPE, "Person", {"age": 3})),
    ],
    ids=lambda op: op[1],
)
def test_every_entry_the_engine_writes_is_packed_and_given_back_exactly(op: ops.Op) -> None:
    text = round_trip(op)
    assert is_packed(text)
    assert len(text) < len(json.dumps(op[3], separators=(",", ":"), ensure_ascii=False))


def test_a_new_edge_keeps_only_its_ends_type_and_properties() -> None:
    text = round_trip(ops.edge_created(EDGE_RECORD))
    assert json.loads(text) == [7, NODE, OTHER, "knows", {"since": 2020}]


@pytest.mark.parametrize(
    ("what", "scope", "target", "data"),
    [
        ("an id that is not the row's target", SCOPE, NODE, {"id": OTHER}),
        ("no target", SCOPE, None, {"id": NODE}),
        ("a scope that is not the row's", "shared", EDGE, ops.edge_record(EDGE_RECORD)),
        (
            "a valid_from other than the entry's time",
            SCOPE,
            EDGE,
            {**ops.edge_record(EDGE_RECORD), "valid_from": AT - 1},
        ),
        ("a valid_from of another type", SCOPE, EDGE, {**ops.edge_record(EDGE_RECORD), "valid_from": float(AT)}),
        ("keys in another order", SCOPE, NODE, {"set": {}, "id": NODE}),
        ("a key more", SCOPE, NODE, {"id": NODE, "redacted": True}),
        ("a hash that is not the content's", SCOPE, NODE, ops.redacted(ops.CREATE_NODE, ops.memory_created(MEMORY)[3])),
        (
            "an imported memory's extra field",
            SCOPE,
            NODE,
            ops.record_created(
                {
                    "id": NODE,
                    "scope": SCOPE,
                    "label": "Memory",
                    "props": {},
                    "memory": {**ops.memory_fields(MEMORY), "archived_at": AT},
                }
            )[3],
        ),
        (
            "a nested object of another shape",
            SCOPE,
            NODE,
            {
                "id": NODE,
                "label": "Memory",
                "scope": SCOPE,
                "props": {},
                "memory": {"content": "x"},
            },
        ),
    ],
    ids=lambda value: value if isinstance(value, str) and " " in value else "",
)
def test_data_of_any_other_shape_is_kept_whole(what: str, scope: str, target: str | None, data: dict[str, Any]) -> None:
    text = pack(AT, scope, target, data)
    assert not is_packed(text), what
    assert json.loads(text) == data
    assert exact(unpack(AT, scope, target, text)) == exact(data)


def test_each_shape_has_its_own_keys() -> None:
    keys = [tuple(key for key, _ in shape) for shape in SHAPES]
    assert len(set(keys)) == len(keys)


@pytest.mark.parametrize(
    "props",
    [
        {},
        {"since": 2020, "weight": 0.1, "tiny": 1.5e-05, "big": 1e300, "negative zero": -0.0, "on": True},
        {"text": 'Ünïcode, "quotes", \\ back\nslash, \u2028, \x00 and 🙂'},
        {"lone surrogate": "\ud800", "a long integer": 2**70},
    ],
    ids=["none", "numbers", "text", "what orjson refuses"],
)
def test_packed_text_is_the_standard_librarys_json(props: dict[str, Any]) -> None:
    # The log's text is byte for byte what `json` writes compactly, non-ASCII as it is.
    op = ops.edge_created(replace(EDGE_RECORD, props=props))
    _scope, _name, target, data = op
    text = round_trip(op)
    expected = [7, NODE, OTHER, "knows", props]
    assert text == json.dumps(expected, separators=(",", ":"), ensure_ascii=False)
    whole = pack(AT, "another scope", target, data)
    assert whole == json.dumps(data, separators=(",", ":"), ensure_ascii=False)
