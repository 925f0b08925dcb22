"""The native profile's reply text: compact JSON with non-ASCII characters as they are,
the same text as the standard library's but for how a float is spelt."""

from __future__ import annotations

import base64
import hashlib
import json
import random
from typing import Any

import pytest

from mnemodb.server.profile import compact_json as _json
from mnemodb.server.profiles.native.shapes import _fingerprint, make_cursor, read_cursor


def standard(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@pytest.mark.parametrize(
    "value",
    [
        {"items": [{"name": "Größe — 大きさ 🙂", "observations": ["ünï"], "hops": 1, "score": 0.6180339887}]},
        {"items": [{"content": 'quote " backslash \\ tab \t newline \n nul \x00 unit \x1f del \x7f'}]},
        {"items": [], "separators": "\u2028\u2029", "small": 0.125, "whole": 1.0, "none": None, "next_cursor": None},
        {"items": [{"ref": "missing", "error": "not found"}], "big": 2**63 - 1, "low": -(2**63)},
    ],
)
def test_same_text_as_the_standard_library(value: Any) -> None:
    assert _json(value) == standard(value)


@pytest.mark.parametrize("value", [{"id": 2**70}, {"content": "lone \ud800 surrogate"}, {1: "integer key"}])
def test_what_orjson_refuses_is_written_by_the_standard_library(value: Any) -> None:
    assert _json(value) == standard(value)


def test_floats_read_back_as_the_same_numbers() -> None:
    rng = random.Random(18)
    values = [1e-05, 2.5e-07, 1e16, 1e22, -0.0, *(rng.random() * 10 ** rng.randint(-9, 20) for _ in range(20_000))]
    assert json.loads(_json(values)) == values
    assert _json([1e-05, 2.5e-07]) == "[0.00001,2.5e-7]"  # where the spelling differs from json.dumps


@pytest.mark.parametrize("offset", [0, 10, 2**40 - 1])
def test_a_cursor_is_the_text_the_standard_library_wrote(offset: int) -> None:
    # A cursor given out before must still be read, and one given out now the same text.
    arguments = {"query": 'Größe "quoted"', "limit": 10, "tags": ["a"], "cursor": "x"}
    cursor = make_cursor(arguments, offset)
    raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    assert raw == json.dumps({"q": _fingerprint(arguments), "o": offset}, separators=(",", ":"))
    assert read_cursor({**arguments, "cursor": cursor}) == offset


@pytest.mark.parametrize(
    "arguments",
    [
        {"query": "plain words", "limit": 10},
        {"query": 'Größe "quoted" \\ tab \t nul \x00 🙂 lone \ud800', "cursor": "x", "full": True},
        {"query": "b", "pattern": "^a.*$", "about": "x"},
        {"limit": 5},
        {"query": "words", "kinds": ["memory"], "since": 5, "props": {"b": 1, "a": None}},
        {"query": "words", "why": True, "scopes": ["work", "home"]},
    ],
)
def test_a_fingerprint_is_that_of_the_standard_library_text(arguments: dict[str, Any]) -> None:
    # Cursors given out before must still be accepted: the text hashed must not change.
    fixed = {k: v for k, v in arguments.items() if k not in ("cursor", "limit", "max_chars", "full")}
    text = json.dumps(fixed, sort_keys=True, default=str)
    assert _fingerprint(arguments) == hashlib.sha256(text.encode()).hexdigest()[:12]
