"""The native profile's errors, and its scopes, over the SDK's client of an in-process server.

Every refused call is a tool result with `isError`, one text naming the tool and the
problem (the argument's path for invalid arguments), never a traceback; a refused
write leaves the change log where it was. A server started with a write scope and
read scopes shows nothing outside a call's scopes, and writes where it is told to.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from native_support import SCOPE_A, SCOPE_B, SCOPE_C, TOOL_NAMES, Native, text_of
from support import sha256

pytestmark = pytest.mark.inprocess

UNKNOWN_ULID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Native]:
    db = tmp_path_factory.mktemp("native-errors") / "memory.db"
    with Native.in_process(db) as server:
        yield server
    assert "Traceback" not in server.stderr, server.stderr


@pytest.fixture(scope="module")
def seeded(srv: Native) -> dict[str, Any]:
    """A memory, two entities and a relation to aim the calls at."""
    made = srv.call(
        "remember",
        {
            "memories": [{"content": "Errors test: the seed memory", "tags": ["seed"]}],
            "entities": [
                {"name": "Err Alice", "type": "person", "observations": ["likes maps"]},
                {"name": "Err Bob", "type": "person"},
            ],
        },
    )
    relation = srv.relate("Err Alice", "Err Bob", "knows")
    return {"memory": made["memories"][0], "relation": relation}


@contextmanager
def unchanged(srv: Native) -> Iterator[None]:
    """Assert that the calls inside wrote nothing to the change log."""
    before = srv.seq()
    yield
    assert srv.seq() == before, "a refused call changed the database"


def invalid(srv: Native, tool: str, arguments: dict[str, Any], *fragments: str) -> str:
    with unchanged(srv):
        text = srv.error(tool, arguments)
    assert text.startswith(f"{tool}: invalid arguments: "), text
    for fragment in fragments:
        assert fragment in text, (fragment, text)
    return text


# -- invalid arguments --------------------------------------------------------------------------------------

UNKNOWN_FIELDS = [
    ("recall", {"qurey": "maps"}, ['arguments: Unrecognized key: "qurey"']),
    ("remember", {"memories": [{"content": "x", "tag": ["a"]}]}, ['memories.0: Unrecognized key: "tag"']),
    ("remember", {"entities": [{"name": "x", "kind": "person"}]}, ['entities.0: Unrecognized key: "kind"']),
    ("relate", {"add": [{"from": "a", "to": "b", "type": "c", "weight": 1}]}, ['add.0: Unrecognized key: "weight"']),
    ("relate", {"close": [{"id": UNKNOWN_ULID, "reason": "x"}]}, ['close.0: Unrecognized key: "reason"']),
    ("update", {"ref": "Err Alice", "observations": ["x"]}, ['Unrecognized key: "observations"']),
    ("get", {"refs": "Err Alice", "full": True}, ['Unrecognized key: "full"']),
    ("forget", {"refs": "x", "force": True}, ['Unrecognized key: "force"']),
    ("forget", {"relations": [{"from": "a", "type": "b", "to": "c", "id": "d"}]}, ["relations.0: Unrecognized key"]),
    ("explore", {"from": "Err Alice", "depth": 2}, ['Unrecognized key: "depth"']),
    ("audit", {"after": 3}, ['Unrecognized key: "after"']),
    ("survey", {"verbose": True}, ['Unrecognized key: "verbose"']),
]

WRONG_TYPES = [
    ("recall", {"limit": "5"}, ["limit: Invalid input: expected number, received string"]),
    ("recall", {"tags": "seed"}, ["tags: Invalid input: expected array"]),
    ("recall", {"full": "yes"}, ["full: Invalid input: expected boolean"]),
    ("recall", {"query": 42}, ["query: Invalid input: expected string"]),
    ("recall", {"props": {"a": [1]}}, ["props.a: Invalid input: expected string, number or boolean"]),
    ("recall", {"props": {"a": None}}, ["props.a:"]),
    ("recall", {"vector": {"model": "m", "values": ["a"]}}, ["vector.values.0:"]),
    ("recall", {"vector": {"values": [1.0]}}, ["vector.model:"]),
    ("get", {"refs": 5}, ["refs: Invalid input: expected string, received number"]),
    ("get", {"refs": ["Err Alice", 5]}, ["refs.1:"]),
    ("remember", {"memories": {"content": "x"}}, ["memories: Invalid input: expected array"]),
    ("remember", {"memories": [{"content": "x", "importance": "high"}]}, ["memories.0.importance:"]),
    ("remember", {"memories": [{"content": "x", "importance": 2.5}]}, ["memories.0.importance:"]),
    ("remember", {"memories": [{"content": "x", "props": {"nested": {"a": 1}}}]}, ["memories.0.props.nested:"]),
    ("remember", {"memories": [{"tags": ["x"]}]}, ["memories.0.content:"]),
    ("update", {"content": "x"}, ["ref:"]),
    ("update", {"ref": "Err Alice", "props": {"a": [1]}}, ["props.a:"]),
    ("update", {"ref": "Err Alice", "embedding": {"model": "m", "values": "1,2"}}, ["embedding.values:"]),
    ("explore", {"from": 5}, ["from:"]),
    ("explore", {"from": "Err Alice", "include_closed": "yes"}, ["include_closed:"]),
    ("audit", {"since": "3"}, ["since:"]),
    ("survey", {"top": 1.5}, ["top: Invalid input: expected int"]),
    ("relate", {"add": {"from": "a", "to": "b", "type": "c"}}, ["add: Invalid input: expected array"]),
    ("relate", {"add": [{"from": "a", "to": "b"}]}, ["add.0.type:"]),
]

EMPTY = [
    ("remember", {"memories": [{"content": ""}]}, ["memories.0.content: Too small"]),
    ("remember", {"entities": [{"name": ""}]}, ["entities.0.name: Too small"]),
    ("remember", {"memories": [{"content": "x", "about": [""]}]}, ["memories.0.about.0: Too small"]),
    ("remember", {"memories": [{"content": "x", "tags": [""]}]}, ["memories.0.tags.0: Too small"]),
    ("remember", {"memories": [{"content": "x", "supersedes": ""}]}, ["memories.0.supersedes: Too small"]),
    ("remember", {"entities": [{"name": "x", "observations": [""]}]}, ["entities.0.observations.0: Too small"]),
    ("remember", {"scope": "", "memories": [{"content": "x"}]}, ["scope: Too small"]),
    ("get", {"refs": ""}, ["refs: Too small"]),
    ("get", {"refs": []}, ["refs: Too small"]),
    ("forget", {"refs": ["", "x"]}, ["refs.0: Too small"]),
    ("forget", {"refs": []}, ["refs: Too small"]),
    ("forget", {"relations": [{"from": "a", "type": "", "to": "c"}]}, ["relations.0.type: Too small"]),
    ("forget", {"relations": [{"from": "a", "to": "c"}]}, ["relations.0.type:"]),
    ("update", {"ref": "", "importance": 1}, ["ref: Too small"]),
    ("update", {"ref": "Err Alice", "name": ""}, ["name: Too small"]),
    ("update", {"ref": "Err Alice", "content": ""}, ["content: Too small"]),
    ("update", {"ref": "Err Alice", "add_observations": [""]}, ["add_observations.0: Too small"]),
    ("relate", {"add": [{"from": "Err Alice", "to": "Err Bob", "type": ""}]}, ["add.0.type: Too small"]),
    ("relate", {"add": [{"from": "", "to": "Err Bob", "type": "x"}]}, ["add.0.from: Too small"]),
    ("recall", {"tags": [""]}, ["tags.0: Too small"]),
    ("recall", {"about": [""]}, ["about.0: Too small"]),
    ("recall", {"kinds": []}, ["kinds: Too small"]),
    ("recall", {"vector": {"model": "", "values": [1.0]}}, ["vector.model: Too small"]),
    ("recall", {"vector": {"model": "m", "values": []}}, ["vector.values: Too small"]),
    ("explore", {"from": []}, ["from: Too small"]),
    ("explore", {"from": "Err Alice", "to": ""}, ["to: Too small"]),
    ("audit", {"ref": ""}, ["ref: Too small"]),
    ("recall", {"pattern": ""}, ["pattern: Too small"]),
]

OUT_OF_RANGE = [
    ("recall", {"limit": 0}, ["limit: Too small"]),
    ("recall", {"limit": 101}, ["limit: Too big"]),
    ("recall", {"min_importance": 11}, ["min_importance: Too big"]),
    ("recall", {"min_importance": -1}, ["min_importance: Too small"]),
    ("recall", {"expand": 4}, ["expand: Too big"]),
    ("recall", {"expand": -1}, ["expand: Too small"]),
    ("recall", {"max_chars": 499}, ["max_chars: Too small"]),
    ("remember", {"memories": [{"content": "x", "importance": 11}]}, ["memories.0.importance: Too big"]),
    ("remember", {"memories": [{"content": "x", "importance": -1}]}, ["memories.0.importance: Too small"]),
    ("remember", {"memories": [{"content": f"x{n}"} for n in range(101)]}, ["memories: Too big"]),
    ("update", {"ref": "Err Alice", "importance": 11}, ["importance: Too big"]),
    ("explore", {"from": "Err Alice", "hops": 0}, ["hops: Too small"]),
    ("explore", {"from": "Err Alice", "hops": 99}, ["hops: Too big"]),
    ("explore", {"from": "Err Alice", "limit": 0}, ["limit: Too small"]),
    ("explore", {"from": "Err Alice", "limit": 201}, ["limit: Too big"]),
    ("explore", {"from": ["Err Alice"] * 21}, ["from: Too big"]),
    ("audit", {"limit": 0}, ["limit: Too small"]),
    ("audit", {"limit": 501}, ["limit: Too big"]),
    ("audit", {"since": -1}, ["since: Too small"]),
    ("survey", {"top": 0}, ["top: Too small"]),
    ("survey", {"top": 101}, ["top: Too big"]),
]

BAD_TIMES = [
    ("recall", {"since": "yesterday"}, ["since: Invalid time"]),
    ("recall", {"until": "2026-13-45"}, ["until: Invalid time"]),
    ("recall", {"since": "2026-02-30"}, ["since: Invalid time"]),
    ("recall", {"since": "12:00"}, ["since: Invalid time"]),
    ("recall", {"since": -5}, ["since: Invalid time"]),
    ("recall", {"since": 1.5}, ["since: Invalid time"]),
    ("recall", {"since": True}, ["since: Invalid time"]),
    ("explore", {"from": "Err Alice", "as_of": "noon"}, ["as_of: Invalid time"]),
    ("get", {"refs": "Err Alice", "as_of": "last week"}, ["as_of: Invalid time"]),
    ("relate", {"add": [{"from": "Err Alice", "to": "Err Bob", "type": "t", "valid_from": "soon"}]}, ["valid_from"]),
    ("relate", {"close": [{"id": UNKNOWN_ULID, "valid_to": "2026-02-30T10:00:00Z"}]}, ["close.0.valid_to"]),
]

ENUMS = [
    ("recall", {"kinds": ["relation"]}, ['kinds.0: Invalid option: expected one of "memory"|"entity"']),
    ("explore", {"from": "Err Alice", "direction": "up"}, ['direction: Invalid option: expected one of "out"']),
]


INVALID = UNKNOWN_FIELDS + WRONG_TYPES + EMPTY + OUT_OF_RANGE + BAD_TIMES + ENUMS


@pytest.mark.parametrize(
    ("tool", "arguments", "fragments"),
    INVALID,
    ids=[f"{tool}:{fragments[0].split(':')[0]}" for tool, _, fragments in INVALID],
)
def test_invalid_arguments(
    srv: Native, seeded: dict[str, Any], tool: str, arguments: dict[str, Any], fragments: list[str]
) -> None:
    text = invalid(srv, tool, arguments, *fragments)
    assert text.endswith("The tool's input schema lists every field."), text


def test_every_problem_is_named(srv: Native) -> None:
    text = invalid(srv, "recall", {"limit": 0, "since": "yesterday", "zzz": 1}, "limit:", "since:", '"zzz"')
    assert text.count("; ") == 2, text


def test_invalid_scope_names(srv: Native) -> None:
    for tool, arguments in (
        ("remember", {"scope": "team-a", "memories": [{"content": "Scope name test"}]}),
        ("recall", {"scopes": ["team-a"]}),
        ("survey", {"scopes": ["shared", "01HV7N8Q3Y2J6W5X4Z9A0B1C2"]}),
    ):
        with unchanged(srv):
            assert "invalid scope" in srv.error(tool, arguments)


# -- refusals that depend on what is stored --------------------------------------------------------------


def test_bad_cursor(srv: Native, seeded: dict[str, Any]) -> None:
    for cursor in ("garbage", "", "eyJ4IjoxfQ", "%%%"):
        text = srv.error("recall", {"cursor": cursor})
        assert "cursor" in text and "repeat the call without it" in text, text


def test_cursor_from_another_query(srv: Native, seeded: dict[str, Any]) -> None:
    srv.call("remember", {"memories": [{"content": f"Cursor test {n}", "tags": ["cursor-test"]} for n in range(3)]})
    cursor = srv.call("recall", {"tags": ["cursor-test"], "limit": 1})["next_cursor"]
    assert cursor
    for other in ({"tags": ["seed"]}, {"tags": ["cursor-test"], "kinds": ["memory"]}, {"query": "cursor"}):
        text = srv.error("recall", {**other, "limit": 1, "cursor": cursor})
        assert "cursor belongs to a different query" in text, text
    # The same query may change its page size, cap and detail.
    page = srv.call("recall", {"tags": ["cursor-test"], "limit": 2, "full": True, "cursor": cursor})
    assert len(page["items"]) == 2


def test_update_with_nothing_to_change(srv: Native, seeded: dict[str, Any]) -> None:
    for arguments in ({"ref": "Err Alice"}, {"ref": seeded["memory"]["id"], "scopes": ["shared"]}):
        with unchanged(srv):
            assert "nothing to change" in srv.error("update", arguments)


def test_update_fields_of_the_other_kind(srv: Native, seeded: dict[str, Any]) -> None:
    memory = seeded["memory"]["id"]
    for field, value in (
        ("content", "x"),
        ("summary", "x"),
        ("importance", 3),
        ("tags", ["x"]),
        ("add_tags", ["x"]),
        ("remove_tags", ["x"]),
    ):
        with unchanged(srv):
            text = srv.error("update", {"ref": "Err Alice", field: value})
        assert "'Err Alice' is an entity" in text, (field, text)
    for field, value in (("name", "x"), ("add_observations", ["x"]), ("remove_observations", ["x"])):
        with unchanged(srv):
            text = srv.error("update", {"ref": memory, field: value})
        assert f"{memory!r} is a memory" in text, (field, text)
    with unchanged(srv):
        assert "is a relation" in srv.error("update", {"ref": seeded["relation"]["id"], "importance": 1})


def test_update_rename_to_an_existing_name(srv: Native, seeded: dict[str, Any]) -> None:
    with unchanged(srv):
        text = srv.error("update", {"ref": "Err Alice", "name": "Err Bob", "add_observations": ["renamed"]})
    assert "an entity named 'Err Bob' already exists" in text
    assert srv.get("Err Alice")["observations"] == ["likes maps"]
    assert srv.get("Err Bob")["kind"] == "entity"


def test_update_remove_a_missing_observation(srv: Native, seeded: dict[str, Any]) -> None:
    with unchanged(srv):
        text = srv.error(
            "update", {"ref": "Err Alice", "add_observations": ["new one"], "remove_observations": ["never said"]}
        )
    assert "'Err Alice' has no observation 'never said'" in text
    assert srv.get("Err Alice")["observations"] == ["likes maps"]


def test_update_reserved_props_and_bad_tags(srv: Native, seeded: dict[str, Any]) -> None:
    memory = seeded["memory"]["id"]
    with unchanged(srv):
        assert "content is a field of its own" in srv.error("update", {"ref": memory, "props": {"content": "x"}})
        assert "name is a field of its own" in srv.error("update", {"ref": "Err Alice", "props": {"name": "x"}})
        assert "whitespace" in srv.error("update", {"ref": memory, "add_tags": ["two words"]})


def test_update_embedding_of_another_size(srv: Native, seeded: dict[str, Any]) -> None:
    srv.call("update", {"ref": "Err Alice", "embedding": {"model": "err-model", "values": [1.0, 0.0, 0.0]}})
    with unchanged(srv):
        text = srv.error("update", {"ref": "Err Bob", "embedding": {"model": "err-model", "values": [1.0, 0.0]}})
    assert "dim" in text
    text = srv.error("recall", {"vector": {"model": "err-model", "values": [1.0, 0.0]}})
    assert "2 dimensions" in text and "3-dimensional" in text


def test_unknown_references(srv: Native, seeded: dict[str, Any]) -> None:
    for tool, arguments in (
        ("update", {"ref": "Err Nobody", "importance": 1}),
        ("explore", {"from": "Err Nobody"}),
        ("explore", {"from": ["Err Alice", "Err Nobody"]}),
        ("explore", {"from": "Err Alice", "to": "Err Nobody"}),
        ("audit", {"ref": "Err Nobody"}),
    ):
        with unchanged(srv):
            text = srv.error(tool, arguments)
        assert "nothing found for 'Err Nobody'" in text, text
    assert "no entity named 'Err Nobody'" in srv.error("recall", {"about": ["Err Nobody"]})


def test_relate_to_an_unknown_item(srv: Native, seeded: dict[str, Any]) -> None:
    with unchanged(srv):
        text = srv.error(
            "relate",
            {
                "add": [
                    {"from": "Err Alice", "to": "Err Bob", "type": "likes"},
                    {"from": "Err Alice", "to": "Err Nobody", "type": "likes"},
                ]
            },
        )
    assert "add[1]" in text and "nothing found for 'Err Nobody'" in text and "nothing was written" in text
    assert [r["type"] for r in srv.get("Err Alice")["relations"]] == ["knows"]


def test_relate_refusals(srv: Native, seeded: dict[str, Any]) -> None:
    relation = seeded["relation"]["id"]
    memory = seeded["memory"]["id"]
    cases: list[tuple[dict[str, Any], str]] = [
        ({}, "nothing to do"),
        ({"add": [], "close": []}, "nothing to do"),
        ({"add": [{"from": "Err Alice", "to": "Err Alice", "type": "is"}]}, "cannot be related to itself"),
        ({"close": [{"id": relation, "from": "Err Alice", "type": "knows", "to": "Err Bob"}]}, "close[0]: name"),
        ({"close": [{"from": "Err Alice", "type": "knows"}]}, "close[0]: name the relation by `id`"),
        ({"close": [{}]}, "close[0]: name the relation by `id`"),
        ({"close": [{"id": memory}]}, "is not a relation"),
        ({"close": [{"id": UNKNOWN_ULID}]}, "nothing found"),
        ({"close": [{"from": "Err Bob", "type": "knows", "to": "Err Alice"}]}, "no open relation 'knows'"),
        ({"close": [{"id": relation, "valid_to": "2001-01-01"}]}, "before the relation became valid"),
    ]
    for arguments, fragment in cases:
        with unchanged(srv):
            text = srv.error("relate", arguments)
        assert fragment in text, (arguments, text)


def test_close_an_already_closed_relation(srv: Native, seeded: dict[str, Any]) -> None:
    srv.entity("Err Carol")
    edge = srv.relate("Err Alice", "Err Carol", "met")
    srv.call("relate", {"close": [{"id": edge["id"]}]})
    with unchanged(srv):
        text = srv.error("relate", {"close": [{"id": edge["id"]}]})
    assert f"relation {edge['id']} is already closed" in text
    with unchanged(srv):
        text = srv.error("relate", {"close": [{"from": "Err Alice", "type": "met", "to": "Err Carol"}]})
    assert "no open relation 'met'" in text


def test_relate_close_then_failed_add_writes_nothing(srv: Native, seeded: dict[str, Any]) -> None:
    relation = seeded["relation"]["id"]
    with unchanged(srv):
        srv.error(
            "relate",
            {"close": [{"id": relation}], "add": [{"from": "Err Alice", "to": "Err Nobody", "type": "likes"}]},
        )
    assert "valid_to" not in srv.get(relation)


def test_path_refusals(srv: Native, seeded: dict[str, Any]) -> None:
    assert "a path starts from one item" in srv.error("explore", {"from": ["Err Alice", "Err Bob"], "to": "Err Bob"})
    assert "a path starts from one item" in srv.error("explore", {"types": ["knows"], "to": "Err Bob"})
    for extra in ({"as_of": "2020-01-01"}, {"include_closed": True}, {"cursor": "anything"}):
        text = srv.error("explore", {"from": "Err Alice", "to": "Err Bob", **extra})
        assert "current relations" in text and next(iter(extra)) in text, text


def test_explore_walks_need_a_start(srv: Native, seeded: dict[str, Any]) -> None:
    for arguments in (
        {"hops": 2},
        {"direction": "in"},
        {"as_of": "2020-01-01"},
        {"types": ["knows"], "as_of": "2020-01-01"},
    ):
        text = srv.error("explore", arguments)
        assert "give `from` with them" in text, (arguments, text)


def test_forget_needs_something(srv: Native, seeded: dict[str, Any]) -> None:
    with unchanged(srv):
        assert "nothing to forget" in srv.error("forget", {})
        assert "nothing to forget" in srv.error("forget", {"relations": []})


def test_bad_pattern(srv: Native, seeded: dict[str, Any]) -> None:
    text = srv.error("recall", {"pattern": "["})
    assert "Invalid regular expression" in text and "/[/" in text


def test_audit_with_both_since_and_ref(srv: Native, seeded: dict[str, Any]) -> None:
    text = srv.error("audit", {"since": 1, "ref": "Err Alice"})
    assert "give `since` (the feed) or `ref` (one item's history), not both" in text


def test_supersedes_must_name_a_memory(srv: Native, seeded: dict[str, Any]) -> None:
    first = "Supersede error test: this one is fine"
    for supersedes, fragment in (
        ("Err Alice", "supersedes must name a memory; 'Err Alice' is an entity"),
        ("Err Nobody", "nothing found for 'Err Nobody'"),
        (seeded["relation"]["id"], "is a relation"),
    ):
        with unchanged(srv):
            text = srv.error(
                "remember",
                {"memories": [{"content": first}, {"content": "Supersede error test: bad", "supersedes": supersedes}]},
            )
        assert text.startswith("remember: memories[1]: ") and fragment in text, text
        assert "nothing was written" in text
    assert srv.get(sha256(first)) == {"ref": sha256(first), "error": "not found"}


def test_a_memory_cannot_supersede_itself(srv: Native, seeded: dict[str, Any]) -> None:
    memory = seeded["memory"]
    with unchanged(srv):
        text = srv.error(
            "remember", {"memories": [{"content": "Errors test: the seed memory", "supersedes": memory["id"]}]}
        )
    assert "cannot supersede itself" in text


def test_remember_refusals_write_nothing(srv: Native, seeded: dict[str, Any]) -> None:
    with unchanged(srv):
        assert "nothing to remember" in srv.error("remember", {})
        assert "nothing to remember" in srv.error("remember", {"memories": [], "entities": []})
        text = srv.error(
            "remember",
            {
                "memories": [{"content": "Remember refusal test: fine"}, {"content": "bad", "tags": ["two words"]}],
                "entities": [{"name": "Err Refused Entity"}],
            },
        )
    assert "memories[1]" in text and "whitespace" in text and "nothing was written" in text
    found = srv.call("get", {"refs": ["Err Refused Entity"]})["items"]
    assert found == [{"ref": "Err Refused Entity", "error": "not found"}]


def test_unknown_tool(srv: Native) -> None:
    result = srv.result("memorize", {"content": "x"})
    assert result.is_error is True
    text = text_of(result)
    assert "unknown tool 'memorize'" in text
    for name in TOOL_NAMES:
        assert name in text


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("remember", {"memories": [{"content": "   "}]}),
        ("remember", {"entities": [{"name": "  "}]}),
        ("remember", {"memories": [{"content": "Blank about test", "about": [" "]}]}),
        ("remember", {"entities": [{"name": "Blank Observation Test", "observations": ["  "]}]}),
        ("relate", {"add": [{"from": "Err Alice", "to": "Err Bob", "type": "  "}]}),
    ],
    ids=["content", "entity-name", "about", "observation", "relation-type"],
)
def test_blank_text_is_refused(srv: Native, seeded: dict[str, Any], tool: str, arguments: dict[str, Any]) -> None:
    with unchanged(srv):
        srv.error(tool, arguments)


def test_server_survives_and_logs_no_crash(srv: Native, seeded: dict[str, Any]) -> None:
    assert srv.get("Err Alice")["kind"] == "entity"
    assert "Traceback" not in srv.stderr


# -- scopes ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scoped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Native]:
    db = tmp_path_factory.mktemp("native-scopes") / "memory.db"
    with Native.in_process(db, "--scope", SCOPE_A, "--read-scopes", f"{SCOPE_A},shared") as server:
        yield server
    assert "Traceback" not in server.stderr, server.stderr


@pytest.fixture(scope="module")
def items(scoped: Native) -> dict[str, str]:
    a = scoped.call(
        "remember",
        {
            "memories": [{"content": "Scoped note alpha in the default scope", "tags": ["scoped"]}],
            "entities": [{"name": "Alpha Thing", "observations": ["scoped alpha observation"]}],
        },
    )
    shared = scoped.call(
        "remember",
        {
            "scope": "shared",
            "memories": [{"content": "Scoped note shared by everyone", "tags": ["scoped"]}],
            "entities": [{"name": "Shared Hub", "type": "hub"}],
        },
    )
    b = scoped.call(
        "remember",
        {
            "scope": SCOPE_B,
            "memories": [{"content": "Scoped note beta kept apart", "tags": ["scoped"], "about": ["Shared Hub"]}],
            "entities": [{"name": "Beta Thing", "type": "hub", "observations": ["scoped beta observation"]}],
        },
    )
    scoped.call("relate", {"scope": SCOPE_B, "add": [{"from": "Beta Thing", "to": "Shared Hub", "type": "uses"}]})
    scoped.call("relate", {"add": [{"from": "Alpha Thing", "to": "Shared Hub", "type": "uses"}]})
    scoped.call(
        "update",
        {"ref": "Beta Thing", "scopes": [SCOPE_B], "embedding": {"model": "scoped", "values": [1.0, 0.0]}},
    )
    return {
        "a_memory": a["memories"][0]["id"],
        "a_entity": a["entities"][0]["id"],
        "shared_memory": shared["memories"][0]["id"],
        "shared_entity": shared["entities"][0]["id"],
        "b_memory": b["memories"][0]["id"],
        "b_entity": b["entities"][0]["id"],
    }


class TestScopes:
    """A server whose writes go to SCOPE_A and whose reads cover SCOPE_A and shared; SCOPE_B
    holds items the default reads must never show."""

    @staticmethod
    def b_ids(items: dict[str, str]) -> set[str]:
        return {items["b_memory"], items["b_entity"]}

    def test_writes_land_in_their_scope(self, scoped: Native, items: dict[str, str]) -> None:
        every = scoped.call("get", {"refs": list(items.values()), "scopes": [SCOPE_A, SCOPE_B, "shared"]})["items"]
        where = {i["id"]: i.get("scope", "shared") for i in every}
        assert where == {
            items["a_memory"]: SCOPE_A,
            items["a_entity"]: SCOPE_A,
            items["shared_memory"]: "shared",
            items["shared_entity"]: "shared",
            items["b_memory"]: SCOPE_B,
            items["b_entity"]: SCOPE_B,
        }
        scoped_changes = scoped.call("audit", {"scopes": [SCOPE_B]})["changes"]
        assert scoped_changes and all(c["scope"] == SCOPE_B for c in scoped_changes)

    def test_recall_sees_only_the_calls_scopes(self, scoped: Native, items: dict[str, str]) -> None:
        default = set(scoped.ids("recall", {"limit": 100}))
        assert default == {items["a_memory"], items["a_entity"], items["shared_memory"], items["shared_entity"]}
        assert not set(scoped.ids("recall", {"query": "scoped beta", "limit": 100})) & self.b_ids(items)
        assert not set(scoped.ids("recall", {"types": ["hub"]})) & self.b_ids(items)
        assert not set(scoped.ids("recall", {"about": ["Shared Hub"]})) & self.b_ids(items)
        assert not set(scoped.ids("recall", {"vector": {"model": "scoped", "values": [1.0, 0.0]}}))
        found = scoped.call("recall", {"query": "scoped", "expand": 2, "limit": 100})
        assert not {i["id"] for i in found["items"] + found["related"]} & self.b_ids(items)
        assert set(scoped.ids("recall", {"scopes": [SCOPE_B], "limit": 100})) == self.b_ids(items)
        assert set(scoped.ids("recall", {"scopes": ["shared"], "limit": 100})) == {
            items["shared_memory"],
            items["shared_entity"],
        }
        assert scoped.ids("recall", {"scopes": [SCOPE_C]}) == []

    def test_get_sees_only_the_calls_scopes(self, scoped: Native, items: dict[str, str]) -> None:
        found = scoped.call("get", {"refs": [items["b_memory"], "Beta Thing", items["b_entity"]]})["items"]
        assert all(i.get("error") == "not found" for i in found), found
        hub = scoped.get("Shared Hub", include_closed=True)
        assert [r["from"] for r in hub["relations"]] == ["Alpha Thing"]
        assert scoped.get("Beta Thing", scopes=[SCOPE_B])["id"] == items["b_entity"]
        assert scoped.get(items["a_memory"], scopes=[SCOPE_B]) == {"ref": items["a_memory"], "error": "not found"}

    def test_explore_sees_only_the_calls_scopes(self, scoped: Native, items: dict[str, str]) -> None:
        default = scoped.call("explore", {"from": "Shared Hub", "hops": 2, "include_closed": True})
        assert {i["id"] for i in default["items"]} == {items["shared_entity"], items["a_entity"]}
        assert [(r["from"], r["to"]) for r in default["relations"]] == [("Alpha Thing", "Shared Hub")]
        wider = scoped.call("explore", {"from": "Shared Hub", "scopes": [SCOPE_B, "shared"]})
        assert {i["id"] for i in wider["items"]} == {items["shared_entity"], *self.b_ids(items)}
        assert "nothing found" in scoped.error("explore", {"from": "Beta Thing"})
        path = scoped.call("explore", {"from": "Alpha Thing", "to": "Shared Hub"})
        assert path["path_found"] is True

    def test_audit_sees_only_the_calls_scopes(self, scoped: Native, items: dict[str, str]) -> None:
        feed = scoped.call("audit", {"limit": 500})["changes"]
        assert feed
        assert all(c.get("scope", "shared") in (SCOPE_A, "shared") for c in feed)
        assert not {c["target"] for c in feed} & self.b_ids(items)
        assert "nothing found" in scoped.error("audit", {"ref": items["b_memory"]})
        history = scoped.call("audit", {"ref": items["b_memory"], "scopes": [SCOPE_B]})["changes"]
        assert [c["op"] for c in history] == ["create_node"]

    def test_survey_counts_only_the_calls_scopes(self, scoped: Native, items: dict[str, str]) -> None:
        default = scoped.call("survey", {})
        assert default["scopes"] == [SCOPE_A, "shared"]
        assert (default["memories"], default["entities"], default["relations"]) == (2, 2, 1)
        assert default["observations"] == 1
        assert {t["name"] for t in default["top_relation_types"]} == {"uses"}
        b = scoped.call("survey", {"scopes": [SCOPE_B]})
        assert (b["memories"], b["entities"], b["relations"], b["observations"]) == (1, 1, 2, 1)
        assert b["scopes"] == [SCOPE_B]
        nothing = scoped.call("survey", {"scopes": [SCOPE_C]})
        assert (nothing["memories"], nothing["entities"], nothing["relations"]) == (0, 0, 0)

    def test_survey_counts_embeddings_of_the_calls_scopes(self, scoped: Native, items: dict[str, str]) -> None:
        assert scoped.call("survey", {})["embeddings"] == 0
        assert scoped.call("survey", {"scopes": [SCOPE_C]})["embeddings"] == 0

    def test_writes_cannot_reach_outside_the_calls_scopes(self, scoped: Native, items: dict[str, str]) -> None:
        with unchanged(scoped):
            assert "nothing found" in scoped.error("update", {"ref": items["b_memory"], "importance": 3})
            [result] = scoped.call("forget", {"refs": [items["b_memory"]]})["results"]
            assert result["forgotten"] is False
            assert "nothing found" in scoped.error(
                "relate", {"add": [{"from": "Alpha Thing", "to": "Beta Thing", "type": "x"}]}
            )
        assert scoped.get(items["b_memory"], scopes=[SCOPE_B])["id"] == items["b_memory"]

    def test_relate_names_the_entities_it_relates(self, scoped: Native, items: dict[str, str]) -> None:
        with unchanged(scoped):
            result = scoped.call(
                "relate", {"scope": SCOPE_B, "add": [{"from": "Beta Thing", "to": "Shared Hub", "type": "uses"}]}
            )
        [added] = result["added"]
        assert added["new"] is False
        assert (added["from"], added["to"]) == ("Beta Thing", "Shared Hub")

    @pytest.mark.parametrize(
        ("tool", "arguments"),
        [
            ("recall", {}),
            ("get", {"refs": "Shared Hub"}),
            ("explore", {"from": "Shared Hub"}),
            ("audit", {}),
            ("survey", {}),
            ("update", {"ref": "Shared Hub", "type": "x"}),
            ("forget", {"refs": "Shared Hub"}),
        ],
    )
    def test_empty_scopes_are_refused(
        self, scoped: Native, items: dict[str, str], tool: str, arguments: dict[str, Any]
    ) -> None:
        with unchanged(scoped):
            text = scoped.error(tool, {**arguments, "scopes": []})
        assert "scopes: Too small" in text, text
