"""Records the stores build in bulk by a faster path than their dataclass's own `__init__`:
the same objects either way."""

from __future__ import annotations

import dataclasses

import pytest

from mnemodb.model.records import Edge, Relation, edge_of, relation_of


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
