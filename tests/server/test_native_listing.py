"""What the native tools cost every conversation before its first call, and what their
descriptions must keep while costing little.

A client loads the whole `tools/list` reply, and hosts put each tool's name, description
and input schema (the "model view") into the model's context. The native profile's reply
stays smaller than the memdb profile's (12 tools to native's 9, and memdb's is the
smallest of the compatibility profiles), and its model view within 12,000 bytes, measured
on `mnemodb serve` over stdio as bench/bench_native.py measures them. Each description
still names the tool to use instead where two could be confused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from mnemodb.server.profiles import build_profile
from mnemodb.server.profiles.native.params import TEXT
from mnemodb.server.schema import Invalid, Obj
from support import RawServer, serve_command

MODEL_VIEW_LIMIT = 12_000
"""Bytes of native's model view: the issue's bound, about 2,600 tokens."""


def compact(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def model_view(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{"name": t["name"], "description": t["description"], "input_schema": t["inputSchema"]} for t in tools]


def listed_tools(db: Path, profile: str) -> list[dict[str, Any]]:
    """Every page of tools/list from `mnemodb serve --profile PROFILE` over stdio."""
    server = RawServer(serve_command(db, profile))
    try:
        server.initialize()
        tools: list[dict[str, Any]] = []
        params: dict[str, Any] = {}
        while True:
            result = server.request("tools/list", params)["result"]
            tools += result["tools"]
            if not result.get("nextCursor"):
                return tools
            params = {"cursor": result["nextCursor"]}
    finally:
        assert server.close() == 0


@pytest.fixture(scope="module")
def listings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, list[dict[str, Any]]]]:
    db = tmp_path_factory.mktemp("listing") / "memory.db"
    yield {profile: listed_tools(db, profile) for profile in ("native", "memdb")}


def test_native_listing_is_smaller_than_memdbs(listings: dict[str, list[dict[str, Any]]]) -> None:
    native = len(compact({"tools": listings["native"]}))
    memdb = len(compact({"tools": listings["memdb"]}))
    assert len(listings["native"]) == 9 and len(listings["memdb"]) == 12
    assert native < memdb, f"native's tools/list is {native:,} bytes, memdb's {memdb:,}"


def test_native_model_view_fits_its_budget(listings: dict[str, list[dict[str, Any]]]) -> None:
    view = len(compact(model_view(listings["native"])))
    assert view <= MODEL_VIEW_LIMIT, f"native's model view is {view:,} bytes, over {MODEL_VIEW_LIMIT:,}"


# Which tools each description sends the model to, where it might pick the wrong one.
INSTEAD = {
    "remember": {"update", "relate"},
    "recall": {"get", "explore"},
    "get": {"recall"},
    "update": {"remember", "relate"},
    "forget": {"remember", "relate", "update"},
    "relate": {"forget"},
    "explore": {"get"},
    "audit": {"recall", "get"},
}
# The habits each description teaches, as the words that teach them.
TEACHES = {
    "remember": ("supersedes", "about", "all_or_nothing"),
    "recall": ("start of a task", "before creating"),
    "update": ("supersedes",),
    "forget": ("Permanent", "supersedes"),
    "relate": ("in one call",),
    "survey": ("Cheap",),
}


def test_descriptions_say_which_tool_to_use_instead() -> None:
    descriptions = {t.name: t.description for t in build_profile("native").tools}
    words = {name: set(re.findall(r"[a-z_]+", text)) for name, text in descriptions.items()}
    missing = {name: sorted(others - words[name]) for name, others in INSTEAD.items() if others - words[name]}
    assert missing == {}
    untaught = {name: [w for w in words if w not in descriptions[name]] for name, words in TEACHES.items()}
    assert {name: words for name, words in untaught.items() if words} == {}


def _accepted_by_listing(schema: Mapping[str, Any], value: str) -> bool:
    return bool(jsonschema.Draft202012Validator(schema).is_valid(value))


def _accepted_by_server(value: str) -> bool:
    try:
        Obj(fields={"text": TEXT}, required=("text",)).validate({"text": value})
    except Invalid:
        return False
    return True


@pytest.mark.parametrize("value", ["", " ", "\t\n", "a", " a ", "é"])
def test_a_text_parameter_is_advertised_as_it_is_checked(value: str) -> None:
    advertised = TEXT.json_schema()
    assert "minLength" not in advertised  # the pattern already asks for a character
    assert _accepted_by_listing(advertised, value) == _accepted_by_server(value) == bool(value.strip())


def test_an_empty_text_is_still_reported_as_too_small() -> None:
    with pytest.raises(Invalid) as refused:
        Obj(fields={"text": TEXT}).validate({"text": ""})
    assert [issue["code"] for issue in refused.value.issues] == ["too_small", "invalid_format"]
