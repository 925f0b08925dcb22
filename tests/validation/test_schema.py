"""The declarative tool parameters of `mnemodb.server.schema`: the JSON Schema each field
advertises, and the Zod-shaped issues its validator records (code, path, message and the
code's own keys), message for message."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemodb.server.schema import (
    Arr,
    Bool,
    Enum,
    Field,
    Int,
    Invalid,
    Issue,
    Map,
    Num,
    Obj,
    OneOrMany,
    Scalar,
    Str,
    Time,
    js_length,
    type_name,
)

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
TIME_MESSAGE = (
    "Invalid time: give an ISO 8601 date or date-time (e.g. 2026-03-01 or 2026-03-01T09:30:00Z) "
    "or milliseconds since 1970"
)


def check(spec: Field, value: Any, *path: str | int) -> tuple[Any, list[Issue]]:
    """What `spec` makes of `value` at `path`, and the issues it records."""
    issues: list[Issue] = []
    cleaned = spec.check(value, tuple(path), issues)
    return cleaned, issues


def accepted(spec: Field, value: Any) -> Any:
    cleaned, issues = check(spec, value)
    assert issues == [], issues
    return cleaned


def invalid_type(expected: str, received: str, path: list[str | int] | None = None) -> Issue:
    return {
        "expected": expected,
        "code": "invalid_type",
        "path": path or [],
        "message": f"Invalid input: expected {expected}, received {received}",
    }


# -- lengths and type names -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "length"),
    [("", 0), ("abc", 3), ("é", 1), ("e\u0301", 2), ("€", 1), ("😀", 2), ("a😀b", 4), ("\U0010ffff", 2)],
)
def test_js_length_counts_utf16_code_units(text: str, length: int) -> None:
    assert js_length(text) == length


@given(st.text())
def test_js_length_is_code_points_plus_one_per_astral_character(text: str) -> None:
    assert js_length(text) == len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (None, "null"),
        (True, "boolean"),
        (False, "boolean"),
        (0, "number"),
        (1.5, "number"),
        (math.inf, "number"),
        (math.nan, "NaN"),
        ("", "string"),
        ([], "array"),
        ({}, "object"),
    ],
)
def test_type_names_are_zods(value: Any, name: str) -> None:
    assert type_name(value) == name


def test_a_missing_field_is_received_as_undefined() -> None:
    _, issues = check(Obj(fields={"name": Str()}, required=("name",)), {})
    assert issues == [invalid_type("string", "undefined", ["name"])]


# -- Str -----------------------------------------------------------------------------------------------


def test_str_schema() -> None:
    assert Str().json_schema() == {"type": "string"}
    spec = Str(min_length=1, max_length=5, pattern="^[a-z]+$", description="a word", default="x")
    assert spec.json_schema() == {
        "type": "string",
        "minLength": 1,
        "maxLength": 5,
        "pattern": "^[a-z]+$",
        "description": "a word",
        "default": "x",
    }
    # JSON Schema has no flags: a case-insensitive pattern is advertised spelled out.
    insensitive = Str(pattern="^[a-f]+$", pattern_flags="i", schema_pattern="^[a-fA-F]+$")
    assert insensitive.json_schema()["pattern"] == "^[a-fA-F]+$"


def test_str_refuses_other_types_and_keeps_the_value() -> None:
    for value, received in ((1, "number"), (None, "null"), (["a"], "array"), ({"a": 1}, "object")):
        cleaned, issues = check(Str(), value, "content")
        assert cleaned == value
        assert issues == [invalid_type("string", received, ["content"])]


def test_str_length_bounds_count_utf16_units_by_default() -> None:
    spec = Str(min_length=2, max_length=3)
    assert accepted(spec, "😀") == "😀"  # two code units
    _, short = check(spec, "a", "tag")
    assert short == [
        {
            "origin": "string",
            "code": "too_small",
            "minimum": 2,
            "inclusive": True,
            "path": ["tag"],
            "message": "Too small: expected string to have >=2 characters",
        }
    ]
    _, long = check(spec, "a😀b")
    assert long == [
        {
            "origin": "string",
            "code": "too_big",
            "maximum": 3,
            "inclusive": True,
            "path": [],
            "message": "Too big: expected string to have <=3 characters",
        }
    ]
    # Counting code points instead, the same text fits.
    assert accepted(Str(max_length=3, utf16=False), "a😀b") == "a😀b"


def test_str_trim_cleans_before_measuring() -> None:
    spec = Str(min_length=1, trim=True)
    assert accepted(spec, "  word\n") == "word"
    cleaned, issues = check(spec, " \t ")
    assert cleaned == ""
    assert [i["code"] for i in issues] == ["too_small"]


def test_str_pattern_has_javascripts_meaning() -> None:
    anchored = Str(pattern="^[a-z]+$")
    assert accepted(anchored, "abc") == "abc"
    # Python's `$` also matches before a final newline; JavaScript's does not.
    _, issues = check(anchored, "abc\n", "name")
    assert issues == [
        {
            "origin": "string",
            "code": "invalid_format",
            "format": "regex",
            "pattern": "/^[a-z]+$/",
            "path": ["name"],
            "message": "Invalid string: must match pattern /^[a-z]+$/",
        }
    ]
    # An escaped dollar is a dollar sign, not an anchor.
    assert accepted(Str(pattern=r"^\$[0-9]+$"), "$12") == "$12"
    assert check(Str(pattern=r"^\$[0-9]+$"), "12")[1] != []


def test_str_pattern_white_space_is_javascripts() -> None:
    spaced = Str(pattern=r"^\S+$")
    # U+001C is white space to Python's \s, not to JavaScript's; U+FEFF is the other way round.
    assert accepted(spaced, "a\x1cb") == "a\x1cb"
    assert check(spaced, "a\ufeffb")[1] != []
    assert check(spaced, "a\u00a0b")[1] != []
    blank = Str(pattern=r"^\s*$")
    assert accepted(blank, "\u2028\u3000\ufeff") == "\u2028\u3000\ufeff"


def test_str_pattern_flags_and_message() -> None:
    spec = Str(pattern="^[a-f0-9]{4}$", pattern_flags="i", pattern_message="must be four hex digits")
    assert accepted(spec, "BEEF") == "BEEF"
    _, issues = check(spec, "BEEFY")
    assert issues[0]["pattern"] == "/^[a-f0-9]{4}$/i"
    assert issues[0]["message"] == "must be four hex digits"


def test_str_reports_every_problem_at_once() -> None:
    _, issues = check(Str(max_length=2, pattern="^[0-9]+$"), "abc")
    assert [i["code"] for i in issues] == ["too_big", "invalid_format"]


@given(st.text(max_size=12), st.integers(0, 8), st.integers(0, 8))
def test_str_accepts_exactly_the_lengths_within_bounds(text: str, low: int, high: int) -> None:
    _, issues = check(Str(min_length=low, max_length=high), text)
    codes = {i["code"] for i in issues}
    assert ("too_small" in codes) == (js_length(text) < low)
    assert ("too_big" in codes) == (js_length(text) > high)


# -- numbers -------------------------------------------------------------------------------------------


def test_num_schema() -> None:
    assert Num().json_schema() == {"type": "number"}
    assert Int(minimum=1, maximum=100, default=10).json_schema() == {
        "type": "integer",
        "minimum": 1,
        "maximum": 100,
        "default": 10,
    }


@pytest.mark.parametrize(
    ("value", "received"),
    [(True, "boolean"), ("1", "string"), (None, "null"), (math.nan, "NaN"), (math.inf, "number"), (10**400, "number")],
)
def test_num_refuses_what_is_not_a_finite_number(value: Any, received: str) -> None:
    # Zod reads an infinite number (or an integer too large for a float) as a number it refuses.
    _, issues = check(Num(), value, "importance")
    assert issues == [invalid_type("number", received, ["importance"])]


def test_int_refuses_a_fraction_and_cleans_whole_floats() -> None:
    _, issues = check(Int(), 1.5, "limit")
    assert issues == [
        {
            "expected": "int",
            "format": "safeint",
            "code": "invalid_type",
            "path": ["limit"],
            "message": "Invalid input: expected int, received number",
        }
    ]
    cleaned = accepted(Int(), 2.0)
    assert cleaned == 2 and isinstance(cleaned, int)
    assert accepted(Num(), 2.5) == 2.5


def test_num_bounds_are_inclusive_and_shown_as_given() -> None:
    spec = Int(minimum=1, maximum=10)
    assert accepted(spec, 1) == 1 and accepted(spec, 10) == 10
    _, low = check(spec, 0)
    _, high = check(spec, 11)
    assert low == [
        {
            "origin": "number",
            "code": "too_small",
            "minimum": 1,
            "inclusive": True,
            "path": [],
            "message": "Too small: expected number to be >=1",
        }
    ]
    assert high[0]["message"] == "Too big: expected number to be <=10" and high[0]["maximum"] == 10
    # A whole float bound is shown as an integer; a fractional one as it is.
    assert check(Num(minimum=1.0), 0.5)[1][0]["message"] == "Too small: expected number to be >=1"
    assert check(Num(maximum=0.5), 0.75)[1][0]["message"] == "Too big: expected number to be <=0.5"


@given(st.integers(-(2**53), 2**53), st.integers(-100, 100), st.integers(0, 200))
def test_int_accepts_exactly_the_integers_within_bounds(value: int, low: int, span: int) -> None:
    cleaned, issues = check(Int(minimum=low, maximum=low + span), value)
    assert cleaned == value
    assert (issues == []) == (low <= value <= low + span)


# -- booleans, enums, scalars --------------------------------------------------------------------------


def test_bool() -> None:
    assert Bool().json_schema() == {"type": "boolean"}
    assert accepted(Bool(), False) is False
    assert check(Bool(), 0)[1] == [invalid_type("boolean", "number")]
    assert check(Bool(), "true")[1] == [invalid_type("boolean", "string")]


def test_enum() -> None:
    spec = Enum(values=("asc", "desc"))
    assert spec.json_schema() == {"type": "string", "enum": ["asc", "desc"]}
    assert accepted(spec, "desc") == "desc"
    expected = {
        "code": "invalid_value",
        "values": ["asc", "desc"],
        "path": ["order"],
        "message": 'Invalid option: expected one of "asc"|"desc"',
    }
    for value in ("ASC", "", None, 1, ["asc"]):
        assert check(spec, value, "order")[1] == [expected], value


def test_scalar() -> None:
    assert Scalar().json_schema() == {"type": ["string", "number", "boolean"]}
    assert Scalar(nullable=True).json_schema() == {"type": ["string", "number", "boolean", "null"]}
    for value in ("x", 0, -1.5, True):
        assert accepted(Scalar(), value) == value
    assert check(Scalar(), None)[1] == [invalid_type("string, number or boolean", "null")]
    assert accepted(Scalar(nullable=True), None) is None
    assert check(Scalar(nullable=True), math.inf)[1] == [invalid_type("string, number or boolean or null", "number")]
    assert check(Scalar(), [1])[1] == [invalid_type("string, number or boolean", "array")]


# -- arrays, maps, one or many ---------------------------------------------------------------------------


def test_arr_checks_every_item_at_its_index() -> None:
    spec = Arr(items=Str(min_length=1), min_items=1, max_items=2)
    assert spec.json_schema() == {
        "type": "array",
        "items": {"type": "string", "minLength": 1},
        "minItems": 1,
        "maxItems": 2,
    }
    assert accepted(spec, ["a", "b"]) == ["a", "b"]
    _, issues = check(spec, ["a", 3, ""], "tags")
    assert [(i["code"], i["path"]) for i in issues] == [
        ("invalid_type", ["tags", 1]),
        ("too_small", ["tags", 2]),
        ("too_big", ["tags"]),
    ]
    assert issues[2]["message"] == "Too big: expected array to have <=2 items"
    _, empty = check(spec, [])
    assert empty[0]["message"] == "Too small: expected array to have >=1 items"
    assert check(spec, "a")[1] == [invalid_type("array", "string")]


def test_arr_returns_the_cleaned_items() -> None:
    assert accepted(Arr(items=Str(trim=True)), [" a ", "b "]) == ["a", "b"]
    assert accepted(Arr(items=Int()), [1.0, 2]) == [1, 2]


def test_map() -> None:
    spec = Map(values=Scalar(), max_keys=2)
    assert spec.json_schema() == {
        "type": "object",
        "additionalProperties": {"type": ["string", "number", "boolean"]},
        "maxProperties": 2,
    }
    assert accepted(spec, {"a": 1, "b": "x"}) == {"a": 1, "b": "x"}
    _, issues = check(spec, {"a": 1, "b": None, "c": True}, "props")
    assert issues == [
        {"code": "too_big", "maximum": 2, "path": ["props"], "message": "Too big: expected at most 2 keys"},
        invalid_type("string, number or boolean", "null", ["props", "b"]),
    ]
    assert check(spec, [], "props")[1] == [invalid_type("object", "array", ["props"])]


def test_one_or_many() -> None:
    spec = OneOrMany(items=Str(min_length=1), max_items=2)
    assert spec.json_schema() == {
        "anyOf": [
            {"type": "string", "minLength": 1},
            {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1, "maxItems": 2},
        ]
    }
    assert accepted(spec, "one") == ["one"]
    assert accepted(spec, ["one", "two"]) == ["one", "two"]
    assert check(spec, [], "refs")[1] == [
        {"code": "too_small", "minimum": 1, "path": ["refs"], "message": "Too small: expected at least 1 item"}
    ]
    assert check(spec, ["a", "b", "c"], "refs")[1] == [
        {"code": "too_big", "maximum": 2, "path": ["refs"], "message": "Too big: expected at most 2 items"}
    ]
    # A single value is checked at the field's own path, an item at its index.
    assert check(spec, 5, "refs")[1] == [invalid_type("string", "number", ["refs"])]
    assert check(spec, ["a", 5], "refs")[1] == [invalid_type("string", "number", ["refs", 1])]


# -- time ------------------------------------------------------------------------------------------------


def test_time_schema_and_milliseconds() -> None:
    assert Time().json_schema() == {"type": ["string", "integer"]}
    assert accepted(Time(), 0) == 0
    assert accepted(Time(), 2**53 - 1) == 2**53 - 1


@pytest.mark.parametrize(
    ("text", "moment"),
    [
        ("2026-03-01", datetime(2026, 3, 1, tzinfo=UTC)),
        ("2026-03-01T09:30", datetime(2026, 3, 1, 9, 30, tzinfo=UTC)),
        ("2026-03-01 09:30:15", datetime(2026, 3, 1, 9, 30, 15, tzinfo=UTC)),
        ("2026-03-01T09:30:15.250Z", datetime(2026, 3, 1, 9, 30, 15, 250_000, tzinfo=UTC)),
        ("2026-03-01T09:30:00+02:00", datetime(2026, 3, 1, 7, 30, tzinfo=UTC)),
        ("2026-03-01T09:30:00-0130", datetime(2026, 3, 1, 11, 0, tzinfo=UTC)),
        ("  2026-03-01T09:30:00Z \n", datetime(2026, 3, 1, 9, 30, tzinfo=UTC)),
    ],
)
def test_time_reads_iso_dates_and_date_times_as_utc_unless_offset(text: str, moment: datetime) -> None:
    assert accepted(Time(), text) == (moment - EPOCH) // timedelta(milliseconds=1)


@pytest.mark.parametrize(
    "value",
    [
        -1,
        2**53,
        True,
        1.5,
        None,
        "",
        "yesterday",
        "1969-12-31",
        "1969-12-31T23:59:59.999Z",
        "2026-3-1",
        "2026-02-30",
        "2026-03-01T25:00",
        "01/03/2026",
        [],
    ],
)
def test_time_refuses_anything_else(value: Any) -> None:
    cleaned, issues = check(Time(), value, "as_of")
    assert cleaned == value
    assert issues == [{"code": "invalid_format", "format": "time", "path": ["as_of"], "message": TIME_MESSAGE}]


@given(st.integers(0, (datetime(9999, 12, 31, tzinfo=UTC) - EPOCH) // timedelta(milliseconds=1)))
def test_time_reads_back_its_own_iso_text_within_a_millisecond(ms: int) -> None:
    text = (EPOCH + timedelta(milliseconds=ms)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert accepted(Time(), text) == ms


@pytest.mark.parametrize(
    ("text", "ms"), [("1970-01-01T00:00:32.071Z", 32_071), ("2519-11-05T10:08:50.537Z", 17_351_402_930_537)]
)
def test_time_milliseconds_are_exact(text: str, ms: int) -> None:
    assert accepted(Time(), text) == ms


# -- objects and validate ----------------------------------------------------------------------------------


def person() -> Obj:
    return Obj(
        fields={"name": Str(min_length=1), "age": Int(minimum=0), "tags": Arr(), "role": Str(default="member")},
        required=("name", "tags"),
    )


def test_obj_schema() -> None:
    assert person().json_schema() == {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "age": {"type": "integer", "minimum": 0},
            "tags": {"type": "array", "items": {"type": "string"}},
            "role": {"type": "string", "default": "member"},
        },
        "required": ["name", "tags"],
        "additionalProperties": False,
    }
    assert "additionalProperties" not in Obj(fields={"a": Str()}, strict=False).json_schema()
    assert "required" not in Obj(fields={"a": Str()}).json_schema()


def test_obj_fills_defaults_and_leaves_out_absent_optional_fields() -> None:
    assert person().validate({"name": "Ann", "tags": []}) == {"name": "Ann", "tags": [], "role": "member"}
    assert person().validate({"name": "Ann", "tags": ["x"], "age": 3.0, "role": "admin"}) == {
        "name": "Ann",
        "tags": ["x"],
        "age": 3,
        "role": "admin",
    }


def test_missing_required_fields_are_named_with_their_expected_type() -> None:
    with pytest.raises(Invalid) as raised:
        person().validate({})
    assert raised.value.issues == [
        invalid_type("string", "undefined", ["name"]),
        invalid_type("array", "undefined", ["tags"]),
    ]
    assert str(raised.value) == (
        "name: Invalid input: expected string, received undefined; "
        "tags: Invalid input: expected array, received undefined"
    )
    shapes = Obj(fields={"n": Int(), "b": Bool(), "o": Obj(), "e": Enum(values=("a",))}, required=("n", "b", "o", "e"))
    with pytest.raises(Invalid) as missing:
        shapes.validate({})
    assert [i["expected"] for i in missing.value.issues] == ["number", "boolean", "object", "string"]


def test_unknown_keys_are_refused_by_a_strict_object_and_dropped_otherwise() -> None:
    with pytest.raises(Invalid) as one:
        person().validate({"name": "Ann", "tags": [], "nick": "A"})
    assert one.value.issues == [
        {"code": "unrecognized_keys", "keys": ["nick"], "path": [], "message": 'Unrecognized key: "nick"'}
    ]
    with pytest.raises(Invalid) as two:
        person().validate({"name": "Ann", "tags": [], "nick": "A", "pet": "cat"})
    assert two.value.issues[0]["message"] == 'Unrecognized keys: "nick", "pet"'
    loose = Obj(fields={"a": Str()}, strict=False)
    assert loose.validate({"a": "x", "b": 1}) == {"a": "x"}


def test_an_unknown_key_is_refused_whatever_the_defaults_fill_in() -> None:
    # As many keys given as the cleaned object has (defaults fill the absent fields): the
    # unknown one is still found.
    spec = Obj(fields={"a": Str(), "b": Int(default=1), "c": Bool(default=False)}, required=("a",))
    with pytest.raises(Invalid) as caught:
        spec.validate({"a": "x", "zz": 2, "yy": 3})
    assert caught.value.issues == [
        {"code": "unrecognized_keys", "keys": ["zz", "yy"], "path": [], "message": 'Unrecognized keys: "zz", "yy"'}
    ]
    assert spec.validate({"a": "x"}) == {"a": "x", "b": 1, "c": False}


def test_a_pattern_field_checks_every_item_of_a_long_array() -> None:
    spec = Arr(items=Obj(fields={"name": Str(min_length=1, pattern=r"\S", pattern_message="blank")}))
    values = [{"name": "ok"} if i % 3 else {"name": " \t"} for i in range(60)]
    with pytest.raises(Invalid) as caught:
        Obj(fields={"items": spec}).validate({"items": values})
    assert [(i["path"], i["message"]) for i in caught.value.issues] == [
        (["items", i, "name"], "blank") for i in range(0, 60, 3)
    ]
    assert Obj(fields={"items": spec}).validate({"items": [{"name": "\U0001f600"}]}) == {
        "items": [{"name": "\U0001f600"}]
    }


def test_nested_issues_carry_the_whole_path() -> None:
    spec = Obj(fields={"items": Arr(items=Obj(fields={"id": Int(minimum=1)}, required=("id",)))})
    with pytest.raises(Invalid) as raised:
        spec.validate({"items": [{"id": 1}, {"id": 0}, {}]})
    assert [i["path"] for i in raised.value.issues] == [["items", 1, "id"], ["items", 2, "id"]]
    assert str(raised.value).startswith("items.1.id: Too small: expected number to be >=1; items.2.id: ")


def test_absent_arguments() -> None:
    # No arguments at all are `{}`, unless something is required.
    assert Obj(fields={"limit": Int(default=10)}).validate(None) == {"limit": 10}
    with pytest.raises(Invalid) as raised:
        person().validate(None)
    assert raised.value.issues == [invalid_type("object", "undefined")]
    assert str(raised.value) == "(root): Invalid input: expected object, received undefined"


def test_obj_refuses_what_is_not_an_object() -> None:
    spec = Obj(fields={"inner": Obj(fields={"a": Str()})})
    with pytest.raises(Invalid) as raised:
        spec.validate({"inner": [1]})
    assert raised.value.issues == [invalid_type("object", "array", ["inner"])]


def test_validate_does_not_change_its_arguments() -> None:
    arguments = {"name": " Ann ", "tags": ["x"]}
    spec = Obj(fields={"name": Str(trim=True), "tags": Arr()}, required=("name",))
    assert spec.validate(arguments) == {"name": "Ann", "tags": ["x"]}
    assert arguments == {"name": " Ann ", "tags": ["x"]}
