"""The memdb profile's reply text: compact JSON with non-ASCII characters as they are,
whichever encoder writes it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mnemodb.server.profile import compact_json


def standard(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize(
    "value",
    [
        {"ok": True, "result": [{"id": 1, "content": "Größe — 大きさ 🙂", "tags": ["ünï"], "relevance": 0.6180339887}]},
        {"ok": True, "result": {"content": 'quote " backslash \\ tab \t newline \n nul \x00 unit \x1f del \x7f'}},
        {"ok": True, "result": {"separators": "\u2028\u2029", "small": 0.125, "whole": 1.0, "none": None}},
        {"ok": False, "error": {"code": "E_SEARCH_MEMORIES", "message": "Query cannot be empty"}},
    ],
)
def test_same_text_as_the_standard_library(value: Any) -> None:
    assert compact_json(value) == standard(value)


@pytest.mark.parametrize("value", [{"id": 2**70}, {"content": "lone \ud800 surrogate"}, {1: "integer key"}])
def test_what_orjson_refuses_is_written_by_the_standard_library(value: Any) -> None:
    assert compact_json(value) == standard(value)
