"""Records the stores build in bulk by a faster path than their dataclass's own `__init__`:
the same objects either way."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from mnemodb.model.records import (
    Edge,
    Entity,
    ItemFilter,
    Memory,
    Node,
    Relation,
    edge_of,
    entity_of,
    memory_of,
    node_of,
    relation_of,
)


@pytest.mark.parametrize(
    "fields",
    [
        (1, "01HV7N8Q3Y2J6W5X4Z9A0B1C2D", "src", "dst", "knows", "shared", {}, 10, None, 11, 2, 3),
        (7, "e", "s", "d", "t\x00", "scope", {"since": 1999, "w": 0.5}, -5, 20, 0, 9, 9),
    ],
)
def test_edge_of_makes_the_edge_its_fields_make(fields: tuple[object, ...]) -> None:
    made = edge_of(*fields)  # type: ignore[arg-type]
    expected = Edge(*fields)  # type: ignore[arg-type]
    assert type(made) is Edge
    assert made == expected
    assert dataclasses.astuple(made) == dataclasses.astuple(expected)
    assert made.is_valid_at(made.valid_from) == expected.is_valid_at(expected.valid_from)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.pk = 8  # type: ignore[misc]


def test_edge_of_takes_every_field_of_an_edge_in_order() -> None:
    # A field added to `Edge` must be added to `edge_of` too, which writes each one.
    names = [f.name for f in dataclasses.fields(Edge)]
    made = edge_of(*range(len(names)))
    assert [getattr(made, name) for name in names] == list(range(len(names)))


@pytest.mark.parametrize(
    "fields",
    [
        (1, "01HV7N8Q3Y2J6W5X4Z9A0B1C2D", "shared", "Entity", {}, 10, 10),
        (5, "n", "s", "Thing\x00", {"content": "x", "w": 0.5}, 10, 20),
    ],
)
def test_node_of_makes_the_node_its_fields_make(fields: tuple[object, ...]) -> None:
    made = node_of(*fields)  # type: ignore[arg-type]
    expected = Node(*fields)  # type: ignore[arg-type]
    assert type(made) is Node
    assert made == expected
    assert dataclasses.astuple(made) == dataclasses.astuple(expected)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.label = "Other"  # type: ignore[misc]
    # A field added to `Node` must be added to `node_of` too, which writes each one.
    names = [f.name for f in dataclasses.fields(Node)]
    numbered = node_of(*range(len(names)))
    assert [getattr(numbered, name) for name in names] == list(range(len(names)))


@pytest.mark.parametrize(
    "fields",
    [
        (1, "m", "shared", "text", "ab" * 32, (), 0, "general", None, {}, 10, 10, 0, None, None),
        (9, "m2", "s", "t\x00", "cd" * 32, ("a", "b"), 5, "fact", "sum", {"k": 1}, 10, 20, 3, 15, 30),
    ],
)
def test_memory_of_makes_the_memory_its_fields_make(fields: tuple[object, ...]) -> None:
    made = memory_of(*fields)  # type: ignore[arg-type]
    expected = Memory(*fields)  # type: ignore[arg-type]
    assert type(made) is Memory
    assert made == expected
    assert dataclasses.astuple(made) == dataclasses.astuple(expected)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.content = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    "fields",
    [
        (1, "e", "shared", "Ada", "", (), {}, 10, 10, {}),
        (4, "e2", "s", "Bob\x00", "person", ("likes tea", "x"), {"born": 1815}, 10, 20, {"upstream": [1]}),
    ],
)
def test_entity_of_makes_the_entity_its_fields_make(fields: tuple[object, ...]) -> None:
    made = entity_of(*fields)  # type: ignore[arg-type]
    expected = Entity(*fields)  # type: ignore[arg-type]
    assert type(made) is Entity
    assert made == expected
    assert dataclasses.astuple(made) == dataclasses.astuple(expected)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize(("record", "make"), [(Memory, memory_of), (Entity, entity_of)])
def test_memory_of_and_entity_of_take_every_field_in_order(record: type, make: Callable[..., object]) -> None:
    # A field added to the record must be added to its maker too, which writes each one.
    names = [f.name for f in dataclasses.fields(record)]
    made = make(*range(len(names)))
    assert [getattr(made, name) for name in names] == list(range(len(names)))


@pytest.mark.parametrize(
    "where",
    [
        ItemFilter(),
        ItemFilter(include_archived=True, current_only=True),
        ItemFilter(types=("note",)),
        ItemFilter(created_from=0),
        ItemFilter(created_to=5),
        ItemFilter(props=(("k", 1),)),
        ItemFilter(tags=("t",)),
        ItemFilter(min_importance=0),
        ItemFilter(max_importance=10),
        ItemFilter(linked_to=(3,)),
        ItemFilter(pks=()),
        ItemFilter(pks=(1, 2), current_only=True),
    ],
)
def test_a_filter_narrows_when_it_judges_more_than_scopes_archiving_and_superseding(where: ItemFilter) -> None:
    passing = ItemFilter(include_archived=True)
    assert where.narrowing == (dataclasses.replace(where, include_archived=True, current_only=False) != passing)


@pytest.mark.parametrize(
    "fields",
    [
        ("Ada", "Babbage", "knows", 1, 2, 3, {}),
        ("a\x00", "", "é", 9, 4, 4, {"since": 1999, "w": [0.5, None]}),
    ],
)
def test_relation_of_makes_the_relation_its_fields_make(fields: tuple[object, ...]) -> None:
    made = relation_of(*fields)  # type: ignore[arg-type]
    expected = Relation(*fields)  # type: ignore[arg-type]
    assert type(made) is Relation
    assert made == expected and repr(made) == repr(expected)
    assert dataclasses.astuple(made) == dataclasses.astuple(expected)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.pk = 8  # type: ignore[misc]


def test_relation_of_takes_every_field_of_a_relation_in_order() -> None:
    names = [f.name for f in dataclasses.fields(Relation)]
    made = relation_of(*range(len(names)))
    assert [getattr(made, name) for name in names] == list(range(len(names)))
