"""`mnemodb.server.serde_params`: parameters declared and refused the way a Rust MCP server
(schemars and serde) does it, first problem only, in serde's words."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemodb.server.schema import Invalid
from mnemodb.server.serde_params import (
    I64_MIN,
    JSON_SCHEMA_2020_12,
    U64_MAX,
    Param,
    ParamError,
    Params,
    float_text,
    sorted_json,
    unexpected,
)

DIRECTION = ("out", "in", "both")


def traverse() -> Params:
    """A params struct shaped like topodb's traverse."""
    return Params(
        (
            Param("seed_id", "string", "The node to start from.", required=True),
            Param("max_hops", "u8", "How far to walk.", default=2, maximum=5),
            Param("direction", DIRECTION, "Which edges.", default="out", enum_name="Direction", enum_description="Way"),
            Param("edge_types", "strings", "Only these types.", optional=True, min_items=1),
            Param("as_of", "i64", "A moment.", optional=True),
            Param("props", "json", "Anything.", optional=True, schema={"type": "object"}),
        )
    )


def refusal(params: Params, arguments: dict[str, Any] | None) -> str:
    with pytest.raises(ParamError) as raised:
        params.parse(arguments)
    return str(raised.value)


# -- how serde names values ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "null"),
        (True, "boolean `true`"),
        (False, "boolean `false`"),
        (0, "integer `0`"),
        (-7, "integer `-7`"),
        (U64_MAX, f"integer `{U64_MAX}`"),
        (I64_MIN, f"integer `{I64_MIN}`"),
        (U64_MAX + 1, "floating point `1.8446744073709552e+19`"),
        (1.5, "floating point `1.5`"),
        (2.0, "floating point `2.0`"),
        ("x", 'string "x"'),
        ([1], "sequence"),
        ({"a": 1}, "map"),
    ],
)
def test_unexpected_names_values_as_serde_does(value: Any, text: str) -> None:
    assert unexpected(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0.0"),
        (1.0, "1.0"),
        (-3.0, "-3.0"),
        (0.1, "0.1"),
        (1e16, "1e+16"),
        (1.8446744073709552e19, "1.8446744073709552e+19"),
        (1.5e-7, "1.5e-7"),
        (-2.5e-10, "-2.5e-10"),
    ],
)
def test_float_text_is_rusts(value: float, text: str) -> None:
    assert float_text(value) == text


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_float_text_reads_back_as_the_same_float(value: float) -> None:
    assert float(float_text(value)) == value


def test_sorted_json_sorts_every_level_and_keeps_list_order() -> None:
    value = {"b": [{"z": 1, "a": 2}, 3], "a": {"d": None, "c": True}}
    ordered = sorted_json(value)
    assert json.dumps(ordered) == '{"a": {"c": true, "d": null}, "b": [{"a": 2, "z": 1}, 3]}'
    assert ordered == value


# -- the advertised schema ---------------------------------------------------------------------------------


def test_params_schema_is_shaped_like_schemars() -> None:
    schema = traverse().json_schema()
    assert schema == {
        "$defs": {"Direction": {"description": "Way", "enum": ["out", "in", "both"], "type": "string"}},
        "$schema": JSON_SCHEMA_2020_12,
        "additionalProperties": False,
        "properties": {
            "as_of": {"default": None, "description": "A moment.", "format": "int64", "type": ["integer", "null"]},
            "direction": {"$ref": "#/$defs/Direction", "description": "Which edges."},
            "edge_types": {
                "default": None,
                "description": "Only these types.",
                "items": {"type": "string"},
                "minItems": 1,
                "type": ["array", "null"],
            },
            "max_hops": {
                "default": 2,
                "description": "How far to walk.",
                "maximum": 5,
                "minimum": 0,
                "type": "integer",
            },
            "props": {"default": None, "description": "Anything.", "type": ["object", "null"]},
            "seed_id": {"description": "The node to start from.", "type": "string"},
        },
        "required": ["seed_id"],
        "type": "object",
    }
    # Keys sorted at every level, but `required` in declaration order.
    assert list(schema) == sorted(schema)
    assert list(schema["properties"]) == sorted(schema["properties"])


def test_required_keeps_declaration_order() -> None:
    params = Params((Param("zeta", "string", "z", required=True), Param("alpha", "u64", "a", required=True)))
    assert params.json_schema()["required"] == ["zeta", "alpha"]


def test_unsigned_kinds_advertise_no_unknown_format() -> None:
    for kind in ("u8", "u64", "usize"):
        assert Param("n", kind, "d").json_schema() == {"description": "d", "minimum": 0, "type": "integer"}
    assert Param("n", "i64", "d").json_schema() == {"description": "d", "format": "int64", "type": "integer"}


def test_a_struct_without_fields() -> None:
    assert Params(deny_unknown=False).json_schema() == {"properties": {}, "type": "object"}
    assert Params(deny_unknown=False).parse({"anything": [1, 2]}) == {}
    assert Params().json_schema() == {
        "$schema": JSON_SCHEMA_2020_12,
        "additionalProperties": False,
        "properties": {},
        "type": "object",
    }
    assert refusal(Params(), {"x": 1}) == "unknown field `x`, there are no fields"


# -- parsing --------------------------------------------------------------------------------------------------


def test_absent_fields_take_their_default_or_none() -> None:
    assert traverse().parse({"seed_id": "n1"}) == {
        "seed_id": "n1",
        "max_hops": 2,
        "direction": "out",
        "edge_types": None,
        "as_of": None,
        "props": None,
    }


def test_null_is_omitted_for_optional_fields_and_a_type_error_otherwise() -> None:
    parsed = traverse().parse({"seed_id": "n1", "edge_types": None, "as_of": None})
    assert parsed["edge_types"] is None and parsed["as_of"] is None
    assert refusal(traverse(), {"seed_id": None}) == "invalid type: null, expected a string"
    assert refusal(traverse(), {"seed_id": "n", "max_hops": None}) == "invalid type: null, expected u8"


def test_missing_required_field() -> None:
    assert refusal(traverse(), {}) == "missing field `seed_id`"
    assert refusal(traverse(), None) == "missing field `seed_id`"


def test_keys_are_checked_in_alphabetical_order() -> None:
    # Both are wrong; serde reads a sorted map, so `as_of` is reported before `max_hops`.
    assert refusal(traverse(), {"seed_id": "n", "max_hops": "far", "as_of": "now"}) == (
        'invalid type: string "now", expected i64'
    )
    # A bad present key is reported before a missing required one.
    assert refusal(traverse(), {"max_hops": -1}) == "invalid value: integer `-1`, expected u8"


def test_unknown_fields_list_the_known_ones() -> None:
    assert refusal(traverse(), {"seed_id": "n", "hops": 1}) == (
        "unknown field `hops`, expected one of `seed_id`, `max_hops`, `direction`, `edge_types`, `as_of`, `props`"
    )
    one = Params((Param("id", "string", "d", required=True),))
    assert refusal(one, {"id": "x", "ids": []}) == "unknown field `ids`, expected `id`"
    two = Params((Param("id", "string", "d"), Param("as_of", "i64", "d")))
    assert refusal(two, {"x": 1}) == "unknown field `x`, expected `id` or `as_of`"
    assert Params((Param("id", "string", "d"),), deny_unknown=False).parse({"id": "a", "x": 1}) == {"id": "a"}


@pytest.mark.parametrize(
    ("kind", "value", "message"),
    [
        ("u8", 256, "invalid value: integer `256`, expected u8"),
        ("u8", -1, "invalid value: integer `-1`, expected u8"),
        ("u8", 1.0, "invalid type: floating point `1.0`, expected u8"),
        ("u8", True, "invalid type: boolean `true`, expected u8"),
        ("u64", -1, "invalid value: integer `-1`, expected u64"),
        ("usize", "3", 'invalid type: string "3", expected usize'),
        ("i64", 2**63, f"invalid value: integer `{2**63}`, expected i64"),
        ("i64", [1], "invalid type: sequence, expected i64"),
        ("string", 5, "invalid type: integer `5`, expected a string"),
        ("string", {"a": 1}, "invalid type: map, expected a string"),
        ("strings", "a", 'invalid type: string "a", expected a sequence'),
        ("strings", ["a", 2], "invalid type: integer `2`, expected a string"),
        (DIRECTION, "up", "unknown variant `up`, expected one of `out`, `in`, `both`"),
        (DIRECTION, 1, "invalid type: integer `1`, expected string or map"),
    ],
)
def test_refused_values_in_serdes_words(kind: str | tuple[str, ...], value: Any, message: str) -> None:
    with pytest.raises(ParamError) as raised:
        Param("p", kind, "d").parse(value)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("kind", "value"),
    [("u8", 0), ("u8", 255), ("u64", U64_MAX), ("usize", 0), ("i64", I64_MIN), ("i64", 2**63 - 1), (DIRECTION, "in")],
)
def test_the_limits_of_each_kind_are_accepted(kind: str | tuple[str, ...], value: Any) -> None:
    assert Param("p", kind, "d").parse(value) == value


def test_json_fields_accept_anything() -> None:
    spec = Param("props", "json", "d")
    for value in (None, 1, "x", [1, {"a": None}], {"nested": {"deep": [True]}}, math.pi):
        assert spec.parse(value) == value


def test_an_integer_no_float_can_hold_fails_the_whole_message() -> None:
    # serde_json fails on reading such a number, wherever it is, before any field is looked at.
    assert refusal(traverse(), {"seed_id": "n", "props": {"deep": [1, 10**400]}}) == "number out of range"
    assert refusal(traverse(), {"zzz": 10**400}) == "number out of range"
    # A large integer a float can hold is read (as a float, out of range for a u8).
    assert (
        refusal(traverse(), {"seed_id": "n", "max_hops": 10**30}) == "invalid type: floating point `1e+30`, expected u8"
    )


def test_deeply_nested_arguments_do_not_overflow_the_stack() -> None:
    nested: Any = 1
    for _ in range(5000):
        nested = [nested]
    assert traverse().parse({"seed_id": "n", "props": nested})["props"] is nested


def test_validate_raises_the_servers_invalid_with_one_serde_issue() -> None:
    with pytest.raises(Invalid) as raised:
        traverse().validate({"seed_id": 1})
    assert raised.value.issues == [
        {"code": "serde", "path": [], "message": "invalid type: integer `1`, expected a string"}
    ]
    assert traverse().validate({"seed_id": "n"})["max_hops"] == 2


@given(st.integers(-(2**70), 2**70))
def test_u8_accepts_exactly_0_to_255(value: int) -> None:
    spec = Param("n", "u8", "d")
    if 0 <= value <= 255:
        assert spec.parse(value) == value
    else:
        with pytest.raises(ParamError):
            spec.parse(value)


@given(st.dictionaries(st.sampled_from(["seed_id", "max_hops", "as_of", "nope", "props"]), st.integers(0, 300)))
def test_the_first_complaint_is_about_the_first_bad_key_in_sorted_order(arguments: dict[str, int]) -> None:
    params = traverse()
    problems = []
    for key in sorted(arguments):
        try:
            params.parse({"seed_id": "n", key: arguments[key]} if key != "seed_id" else {key: arguments[key]})
        except ParamError as exc:
            problems.append(str(exc))
    if problems:
        assert refusal(params, arguments) == problems[0]
    elif "seed_id" not in arguments:
        assert refusal(params, arguments) == "missing field `seed_id`"
    else:
        assert params.parse(arguments)["seed_id"] == arguments["seed_id"]
