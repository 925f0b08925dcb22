"""How the topodb profile reports failures, message for message as topodb-mcp 0.0.4.

- Arguments serde would refuse are a tool result with `isError` and the text
  `failed to deserialize parameters: <serde message>`: keys are checked in alphabetical
  order, unknown fields list the expected ones in declaration order, missing fields come
  last, and null means "omitted" for optional fields.
- Every other failure is a JSON-RPC error -32602 with upstream's text: id and scope
  parsing, the engine's refusals (`rejected: ` kept only by search_memories, find_by_prop
  and traverse), write failures naming ids as `NodeId(Ulid(<128-bit decimal>))`, and the
  JSON conversion of props and vectors.
- The server keeps serving after every one of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from topodb_support import MISSING, SCOPE_A, SCOPE_B, Topo, edge_debug, node_debug

pytestmark = pytest.mark.inprocess

UNSUPPORTED = "unsupported over MCP v0"
INT_RANGE = "integer out of supported range (max 9223372036854775807)"
NOT_AN_OBJECT = "expected a JSON object for props"
NOT_AN_ARRAY = "expected a JSON array of numbers"
EMPTY_QUERY_VECTOR = "vector search requires k > 0 and a non-empty query vector"
BAD_CHAR = "01ARZ3NDEKTSV4RRFFQ69G5FAI"  # I is not Crockford base32 (no aliasing)
TOO_LONG = MISSING + "0"


class Ids(dict[str, str]):
    """Names of the fixture's nodes and edges -> ids."""


class Prefix(str):
    """An expected message given by its start (the full text is checked elsewhere)."""

    __slots__ = ()


@pytest.fixture(scope="module")
def topo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Topo]:
    db = tmp_path_factory.mktemp("topodb-errors") / "agent.db"
    with Topo.in_process(db, "--allow-unscoped-changes") as server:
        yield server


@pytest.fixture(scope="module")
def ids(topo: Topo) -> Ids:
    out = Ids()
    out["entity"] = topo.entity("error fixture entity")
    out["memory"] = topo.memory("error fixture memory")
    out["in_a"] = topo.entity("error fixture in A", scope=SCOPE_A)
    out["in_b"] = topo.entity("error fixture in B", scope=SCOPE_B)
    out["edge"] = topo.link(out["memory"], out["entity"], "about")
    out["closed"] = topo.link(out["memory"], out["entity"], "was_about")
    topo.ok("close_edge", {"id": out["closed"], "valid_to": 1000})
    topo.ok("set_embedding", {"id": out["entity"], "model": "errs", "vector": [1, 0]})
    return out


def fill(value: Any, ids: Ids) -> Any:
    """`{name}` placeholders in string values replaced by fixture ids."""
    if isinstance(value, str) and value.startswith("{") and value.endswith("}") and value[1:-1] in ids:
        return ids[value[1:-1]]
    if isinstance(value, dict):
        return {k: fill(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, ids) for v in value]
    return value


# -- argument errors: isError results worded like serde ----------------------------------------

LINK = {"from_id": "{memory}", "to_id": "{entity}", "edge_type": "t"}
TRAVERSE = {"seed_id": "{entity}"}
VECTORS = {"model": "errs", "vector": [1, 0]}

SERDE: list[tuple[str, Any, str]] = [
    # required fields, wrong types
    ("get_node", {}, "missing field `id`"),
    ("get_node", {"id": None}, "invalid type: null, expected a string"),
    ("get_node", {"id": 5}, "invalid type: integer `5`, expected a string"),
    ("get_node", {"id": 1.5}, "invalid type: floating point `1.5`, expected a string"),
    ("get_node", {"id": True}, "invalid type: boolean `true`, expected a string"),
    ("get_node", {"id": []}, "invalid type: sequence, expected a string"),
    ("get_node", {"id": {}}, "invalid type: map, expected a string"),
    ("get_node", {"id": "{entity}", "scopes": "shared"}, 'invalid type: string "shared", expected a sequence'),
    ("get_node", {"id": "{entity}", "scopes": ["shared", 1]}, "invalid type: integer `1`, expected a string"),
    ("get_node", {"id": "{entity}", "scope": False}, "invalid type: boolean `false`, expected a string"),
    ("search_memories", {}, "missing field `query`"),
    ("search_memories", {"query": "a", "k": "x"}, 'invalid type: string "x", expected usize'),
    ("search_memories", {"query": "a", "k": -1}, "invalid value: integer `-1`, expected usize"),
    ("search_memories", {"query": "a", "k": 1.5}, "invalid type: floating point `1.5`, expected usize"),
    ("search_memories", {"query": "a", "k": 1.0}, "invalid type: floating point `1.0`, expected usize"),
    ("search_memories", {"query": "a", "k": 1e3}, "invalid type: floating point `1000.0`, expected usize"),
    ("search_memories", {"query": "a", "k": None}, "invalid type: null, expected usize"),
    ("search_memories", {"query": "a", "k": True}, "invalid type: boolean `true`, expected usize"),
    ("search_memories", {"query": "a", "k": [1]}, "invalid type: sequence, expected usize"),
    ("search_memories", {"query": "a", "k": {}}, "invalid type: map, expected usize"),
    (
        "search_memories",
        {"query": "a", "k": 2**64},
        "invalid type: floating point `1.8446744073709552e+19`, expected usize",
    ),
    ("search_vectors", {**VECTORS, "k": "3"}, 'invalid type: string "3", expected usize'),
    ("search_vectors", {**VECTORS, "candidates": "x"}, 'invalid type: string "x", expected a sequence'),
    ("search_vectors", {"vector": [1]}, "missing field `model`"),
    ("search_vectors", {"model": "errs"}, "missing field `vector`"),
    ("get_changes", {}, "missing field `since_seq`"),
    ("get_changes", {"since_seq": -1}, "invalid value: integer `-1`, expected u64"),
    ("get_changes", {"since_seq": "1"}, 'invalid type: string "1", expected u64'),
    ("get_changes", {"since_seq": None}, "invalid type: null, expected u64"),
    ("traverse", {}, "missing field `seed_id`"),
    ("traverse", {**TRAVERSE, "max_hops": 300}, "invalid value: integer `300`, expected u8"),
    ("traverse", {**TRAVERSE, "max_hops": -1}, "invalid value: integer `-1`, expected u8"),
    ("traverse", {**TRAVERSE, "max_hops": 2.0}, "invalid type: floating point `2.0`, expected u8"),
    ("traverse", {**TRAVERSE, "direction": "up"}, "unknown variant `up`, expected one of `out`, `in`, `both`"),
    ("traverse", {**TRAVERSE, "direction": "OUT"}, "unknown variant `OUT`, expected one of `out`, `in`, `both`"),
    ("traverse", {**TRAVERSE, "direction": 5}, "invalid type: integer `5`, expected string or map"),
    ("traverse", {**TRAVERSE, "direction": None}, "invalid type: null, expected string or map"),
    ("traverse", {**TRAVERSE, "edge_types": "about"}, 'invalid type: string "about", expected a sequence'),
    ("traverse", {**TRAVERSE, "edge_types": [None]}, "invalid type: null, expected a string"),
    ("link", {**LINK, "valid_from": "x"}, 'invalid type: string "x", expected i64'),
    ("link", {**LINK, "valid_from": 1.5}, "invalid type: floating point `1.5`, expected i64"),
    ("link", {**LINK, "valid_from": 2**63}, "invalid value: integer `9223372036854775808`, expected i64"),
    ("link", {"from_id": "{memory}", "to_id": "{entity}"}, "missing field `edge_type`"),
    ("close_edge", {"id": "{edge}", "valid_to": "x"}, 'invalid type: string "x", expected i64'),
    ("set_node_props", {"id": "{entity}"}, "missing field `props`"),
    ("set_embedding", {"id": "{entity}", "model": "m"}, "missing field `vector`"),
    ("find_by_prop", {"label": "Entity", "prop": "name"}, "missing field `value`"),
    ("submit_batch", {}, "missing field `commands`"),
    ("create_memory", {"props": {}}, "missing field `content`"),
    ("create_entity", {"name": 7}, "invalid type: integer `7`, expected a string"),
    # unknown fields: the expected ones in declaration order
    ("access_stats", {"id": "{entity}", "bogus": 1}, "unknown field `bogus`, expected one of `id`, `scope`, `scopes`"),
    ("close_edge", {"id": "{edge}", "x": 1}, "unknown field `x`, expected `id` or `valid_to`"),
    ("set_node_props", {"id": "{entity}", "props": {}, "x": 1}, "unknown field `x`, expected `id` or `props`"),
    ("remove_node", {"id": "{entity}", "x": 1}, "unknown field `x`, expected `id`"),
    ("submit_batch", {"commands": [], "x": 1}, "unknown field `x`, expected `commands`"),
    (
        "create_memory",
        {"content": "x", "scopes": ["shared"]},
        "unknown field `scopes`, expected one of `content`, `props`, `scope`",
    ),
    ("create_entity", {"name": "x", "tags": []}, "unknown field `tags`, expected one of `name`, `props`, `scope`"),
    (
        "link",
        {**LINK, "type": "t"},
        "unknown field `type`, expected one of `from_id`, `to_id`, `edge_type`, `scope`, `props`, `valid_from`",
    ),
    (
        "find_by_prop",
        {"label": "Entity", "prop": "name", "value": "x", "values": []},
        "unknown field `values`, expected one of `label`, `prop`, `value`, `scope`, `scopes`",
    ),
    (
        "search_memories",
        {"query": "x", "limit": 3},
        "unknown field `limit`, expected one of `query`, `k`, `scope`, `scopes`",
    ),
    (
        "search_vectors",
        {**VECTORS, "top_k": 3},
        "unknown field `top_k`, expected one of `model`, `vector`, `k`, `scope`, `scopes`, `candidates`",
    ),
    (
        "set_embedding",
        {"id": "{entity}", "model": "m", "vector": [1], "dim": 1},
        "unknown field `dim`, expected one of `id`, `model`, `vector`",
    ),
    # the extensions add their own field to the list
    (
        "get_node",
        {"id": "{entity}", "bogus": 1},
        "unknown field `bogus`, expected one of `id`, `scope`, `scopes`, `as_of`",
    ),
    (
        "traverse",
        {**TRAVERSE, "hops": 1},
        "unknown field `hops`, expected one of `seed_id`, `max_hops`, `direction`, `edge_types`, `scope`, `scopes`, "
        "`as_of`",
    ),
    ("get_changes", {"since_seq": 1, "extra": 1}, "unknown field `extra`, expected `since_seq` or `limit`"),
    # keys are checked alphabetically; a missing field only after every present key passed
    ("access_stats", {"id": 5, "bogus": 1}, "unknown field `bogus`, expected one of `id`, `scope`, `scopes`"),
    ("access_stats", {"id": 5, "zzz": 1}, "invalid type: integer `5`, expected a string"),
    (
        "access_stats",
        {"id": "x", "id2": 1, "zzz": 2},
        "unknown field `id2`, expected one of `id`, `scope`, `scopes`",
    ),
    ("access_stats", {"scope": 5}, "invalid type: integer `5`, expected a string"),
    ("access_stats", {"scope": "shared", "scopes": ["shared"]}, "missing field `id`"),
    (
        "traverse",
        {"seed_id": 1, "direction": "sideways"},
        "unknown variant `sideways`, expected one of `out`, `in`, `both`",
    ),
    ("traverse", {"seed_id": 1, "max_hops": 9}, "invalid type: integer `1`, expected a string"),
    ("search_memories", {"k": "x"}, 'invalid type: string "x", expected usize'),
]


@pytest.mark.parametrize(("tool", "arguments", "message"), SERDE, ids=[f"{t}-{m[:40]}" for t, _, m in SERDE])
def test_argument_errors_are_is_error_results(topo: Topo, ids: Ids, tool: str, arguments: Any, message: str) -> None:
    before = topo.seq()
    assert topo.arg_error(tool, fill(arguments, ids)) == message
    assert topo.seq() == before  # nothing written, still serving


def test_absent_or_null_arguments_mean_an_empty_object(topo: Topo) -> None:
    assert topo.arg_error("get_node") == "missing field `id`"
    reply = topo.server.request("tools/call", {"name": "get_node", "arguments": None})
    assert reply["result"]["isError"] is True
    assert reply["result"]["content"][0]["text"] == "failed to deserialize parameters: missing field `id`"
    assert topo.ok("db_info", None)["current_seq"] >= 0


def test_null_means_omitted_for_every_optional_field(topo: Topo, ids: Ids) -> None:
    node = topo.ok("create_memory", {"content": "null options memory", "props": None, "scope": None})["id"]
    assert topo.ok("create_entity", {"name": "null options entity", "props": None, "scope": None})["id"]
    found = topo.ok("get_node", {"id": node, "scope": None, "scopes": None, "as_of": None})
    assert found["node"]["scope"] == "shared"
    edge = topo.ok(
        "link",
        {"from_id": node, "to_id": ids["entity"], "edge_type": "t", "props": None, "valid_from": None, "scope": None},
    )["id"]
    graph = topo.ok("traverse", {"seed_id": node, "edge_types": None, "scope": None, "scopes": None, "as_of": None})
    assert edge in {e["id"] for e in graph["subgraph"]["edges"]}
    assert "seq" in topo.ok("close_edge", {"id": edge, "valid_to": None})
    hits = topo.ok("search_vectors", {**VECTORS, "candidates": None, "scope": None, "scopes": None})["hits"]
    assert [h["node"]["id"] for h in hits] == [ids["entity"]]
    assert topo.ok("access_stats", {"id": node, "scope": None, "scopes": None})["found"] is True
    assert topo.ok("get_changes", {"since_seq": 1, "limit": None})["ops"]


# -- tool-body errors: JSON-RPC -32602 with upstream's text -----------------------------------

BODY: list[tuple[str, Any, str]] = [
    # ids
    ("get_node", {"id": "x"}, 'invalid node id "x": invalid length'),
    ("get_node", {"id": BAD_CHAR}, f'invalid node id "{BAD_CHAR}": invalid character'),
    ("get_node", {"id": TOO_LONG}, f'invalid node id "{TOO_LONG}": invalid length'),
    ("get_node", {"id": 'a"b'}, 'invalid node id "a\\"b": invalid length'),
    ("get_node", {"id": " " + MISSING[1:]}, f'invalid node id " {MISSING[1:]}": invalid character'),
    ("access_stats", {"id": "nope"}, 'invalid node id "nope": invalid length'),
    ("traverse", {"seed_id": "nope"}, 'invalid node id "nope": invalid length'),
    ("set_node_props", {"id": "nope", "props": {}}, 'invalid node id "nope": invalid length'),
    ("remove_node", {"id": BAD_CHAR}, f'invalid node id "{BAD_CHAR}": invalid character'),
    ("set_embedding", {"id": "nope", "model": "m", "vector": [1]}, 'invalid node id "nope": invalid length'),
    ("link", {**LINK, "from_id": "nope"}, 'invalid node id "nope": invalid length'),
    ("link", {**LINK, "to_id": "nope"}, 'invalid node id "nope": invalid length'),
    ("search_vectors", {**VECTORS, "candidates": ["{entity}", "nope"]}, 'invalid node id "nope": invalid length'),
    ("close_edge", {"id": "nope"}, 'invalid edge id "nope": invalid length'),
    ("close_edge", {"id": BAD_CHAR}, f'invalid edge id "{BAD_CHAR}": invalid character'),
    # scopes
    (
        "get_node",
        {"id": "{entity}", "scope": "bad"},
        'invalid scope "bad" (expected "shared" or a ULID): invalid length',
    ),
    (
        "find_by_prop",
        {"label": "Entity", "prop": "name", "value": "x", "scopes": ["shared", BAD_CHAR]},
        f'invalid scope "{BAD_CHAR}" (expected "shared" or a ULID): invalid character',
    ),
    (
        "search_memories",
        {"query": "x", "scope": "Shared!"},
        'invalid scope "Shared!" (expected "shared" or a ULID): invalid length',
    ),
    ("create_memory", {"content": "x", "scope": ""}, 'invalid scope "" (expected "shared" or a ULID): invalid length'),
    ("link", {**LINK, "scope": "global"}, 'invalid scope "global" (expected "shared" or a ULID): invalid length'),
    # the order of the checks: the first failure wins
    ("get_node", {"id": "nope", "scope": "bad"}, 'invalid node id "nope": invalid length'),
    ("traverse", {"seed_id": "nope", "scopes": []}, 'invalid node id "nope": invalid length'),
    ("traverse", {**TRAVERSE, "scopes": [], "max_hops": 5}, Prefix("`scopes` must not be empty")),
    ("search_memories", {"query": "x", "k": 0, "scopes": []}, Prefix("`scopes` must not be empty")),
    ("search_vectors", {"model": "m", "vector": "x", "scopes": []}, Prefix("`scopes` must not be empty")),
    ("search_vectors", {"model": "m", "vector": "x", "candidates": ["nope"]}, NOT_AN_ARRAY),
    ("search_vectors", {"model": "m", "vector": [], "candidates": ["nope"]}, 'invalid node id "nope": invalid length'),
    ("find_by_prop", {"label": "Entity", "prop": "zzz", "value": None, "scopes": []}, UNSUPPORTED),
    (
        "find_by_prop",
        {"label": "Entity", "prop": "zzz", "value": 1.5, "scopes": []},
        Prefix("`scopes` must not be empty"),
    ),
    ("link", {**LINK, "to_id": "nope", "props": []}, 'invalid node id "nope": invalid length'),
    ("link", {**LINK, "props": {"a": []}, "scope": "bad"}, UNSUPPORTED),
    (
        "create_memory",
        {"content": "x", "props": {"content": "y"}, "scope": "bad"},
        'props must not include "content": it is already set from the tool\'s own parameter',
    ),
    ("set_embedding", {"id": "nope", "model": "m", "vector": "x"}, 'invalid node id "nope": invalid length'),
    # engine refusals that keep the `rejected: ` prefix
    ("search_memories", {"query": "first program", "k": 0}, "rejected: text search requires k > 0"),
    ("search_memories", {"query": "?! -- ..."}, "rejected: query has no searchable terms"),
    ("search_memories", {"query": ""}, "rejected: query has no searchable terms"),
    ("traverse", {**TRAVERSE, "max_hops": 0}, "rejected: max_hops must be in 1..=4, got 0"),
    ("traverse", {**TRAVERSE, "max_hops": 5}, "rejected: max_hops must be in 1..=4, got 5"),
    ("traverse", {**TRAVERSE, "max_hops": 255}, "rejected: max_hops must be in 1..=4, got 255"),
    (
        "find_by_prop",
        {"label": "Entity", "prop": "zzz", "value": "a"},
        "rejected: (Entity, zzz) is not equality-indexed",
    ),
    (
        "find_by_prop",
        {"label": "Memory", "prop": "content", "value": "a"},
        "rejected: (Memory, content) is not equality-indexed",
    ),
    (
        "find_by_prop",
        {"label": "Entity", "prop": "name", "value": 1.5},
        "rejected: Float values are not equality-indexable",
    ),
    # value and props conversion
    ("find_by_prop", {"label": "Entity", "prop": "name", "value": None}, UNSUPPORTED),
    ("find_by_prop", {"label": "Entity", "prop": "name", "value": ["a"]}, UNSUPPORTED),
    ("find_by_prop", {"label": "Entity", "prop": "name", "value": {"a": 1}}, UNSUPPORTED),
    ("find_by_prop", {"label": "Entity", "prop": "name", "value": 2**63}, INT_RANGE),
    ("create_memory", {"content": "x", "props": {"a": [1]}}, UNSUPPORTED),
    ("create_memory", {"content": "x", "props": {"a": {"b": 1}}}, UNSUPPORTED),
    ("create_memory", {"content": "x", "props": {"a": None}}, UNSUPPORTED),
    ("create_memory", {"content": "x", "props": {"a": 2**63}}, INT_RANGE),
    ("create_memory", {"content": "x", "props": "a=1"}, NOT_AN_OBJECT),
    ("create_memory", {"content": "x", "props": [["a", 1]]}, NOT_AN_OBJECT),
    ("create_entity", {"name": "x", "props": {"tags": ["a"]}}, UNSUPPORTED),
    ("link", {**LINK, "props": {"w": None}}, UNSUPPORTED),
    ("link", {**LINK, "props": {"w": 2**63}}, INT_RANGE),
    ("link", {**LINK, "props": 3}, NOT_AN_OBJECT),
    ("set_node_props", {"id": "{entity}", "props": None}, NOT_AN_OBJECT),
    ("set_node_props", {"id": "{entity}", "props": [1]}, NOT_AN_OBJECT),
    ("set_node_props", {"id": "{entity}", "props": {"a": [1]}}, UNSUPPORTED),
    ("set_node_props", {"id": "{entity}", "props": {"a": 2**63}}, INT_RANGE),
    (
        "create_memory",
        {"content": "x", "props": {"content": "y"}},
        'props must not include "content": it is already set from the tool\'s own parameter',
    ),
    (
        "create_entity",
        {"name": "x", "props": {"name": "y"}},
        'props must not include "name": it is already set from the tool\'s own parameter',
    ),
    # vectors
    ("set_embedding", {"id": "{entity}", "model": "errs", "vector": "1,0"}, NOT_AN_ARRAY),
    ("set_embedding", {"id": "{entity}", "model": "errs", "vector": None}, NOT_AN_ARRAY),
    ("set_embedding", {"id": "{entity}", "model": "errs", "vector": {"0": 1}}, NOT_AN_ARRAY),
    ("set_embedding", {"id": "{entity}", "model": "errs", "vector": [1, "a"]}, 'vector element 1 is not a number: "a"'),
    ("set_embedding", {"id": "{entity}", "model": "errs", "vector": [None]}, "vector element 0 is not a number: null"),
    (
        "set_embedding",
        {"id": "{entity}", "model": "errs", "vector": [1, True]},
        "vector element 1 is not a number: true",
    ),
    ("set_embedding", {"id": "{entity}", "model": "errs", "vector": [[1], 0]}, "vector element 0 is not a number: [1]"),
    (
        "set_embedding",
        {"id": "{entity}", "model": "errs", "vector": [0, {"a": 1}]},
        'vector element 1 is not a number: {"a":1}',
    ),
    ("set_embedding", {"id": "{entity}", "model": "errs", "vector": [1e300, 0]}, "vector element 0 is not finite"),
    ("set_embedding", {"id": "{entity}", "model": "errs", "vector": [0, -1e39]}, "vector element 1 is not finite"),
    ("search_vectors", {"model": "errs", "vector": "x"}, NOT_AN_ARRAY),
    ("search_vectors", {"model": "errs", "vector": [0, "1"]}, 'vector element 1 is not a number: "1"'),
    ("search_vectors", {"model": "errs", "vector": [1e300, 0]}, "vector element 0 is not finite"),
    ("search_vectors", {"model": "errs", "vector": []}, EMPTY_QUERY_VECTOR),
    ("search_vectors", {"model": "errs", "vector": [1, 0], "k": 0}, EMPTY_QUERY_VECTOR),
    (
        "set_embedding",
        {"id": "{entity}", "model": "errs", "vector": []},
        'embedding for model "errs" must have at least one dimension',
    ),
    # the emptiness check runs before the node is looked up
    (
        "set_embedding",
        {"id": MISSING, "model": "m", "vector": []},
        'embedding for model "m" must have at least one dimension',
    ),
    (
        "set_embedding",
        {"id": "{memory}", "model": "errs", "vector": [1, 0, 0]},
        'embedding dim 3 does not match existing slab dim 2 for model "errs"',
    ),
]


@pytest.mark.parametrize(("tool", "arguments", "message"), BODY, ids=[f"{t}-{m[:40]}" for t, _, m in BODY])
def test_tool_body_errors_are_json_rpc_errors(topo: Topo, ids: Ids, tool: str, arguments: Any, message: str) -> None:
    before = topo.seq()
    got = topo.error(tool, fill(arguments, ids))
    assert got.startswith(message) if isinstance(message, Prefix) else got == message, got
    assert topo.seq() == before


def test_write_errors_name_ids_as_the_engine_prints_them(topo: Topo, ids: Ids) -> None:
    missing = node_debug(MISSING)
    assert missing == "NodeId(Ulid(1777027686520646174104517696511196507))"
    before = topo.seq()
    assert topo.error("set_node_props", {"id": MISSING, "props": {}}) == f"SetNodeProps: node {missing} not found"
    assert topo.error("remove_node", {"id": MISSING}) == f"RemoveNode: node {missing} not found"
    assert (
        topo.error("set_embedding", {"id": MISSING, "model": "errs", "vector": [1, 0]})
        == f"SetEmbedding: node {missing} not found"
    )
    assert topo.error("close_edge", {"id": MISSING}) == f"CloseEdge: edge {edge_debug(MISSING)} not found"
    assert (
        topo.error("close_edge", {"id": ids["closed"], "valid_to": 5})
        == f"CloseEdge: edge {edge_debug(ids['closed'])} already closed"
    )
    # A lower-case id is printed from its value, not its spelling.
    assert topo.error("remove_node", {"id": MISSING.lower()}) == f"RemoveNode: node {missing} not found"

    new_edge = r"CreateEdge EdgeId\(Ulid\((\d+)\)\): "
    for arguments, tail in (
        ({"from_id": MISSING, "to_id": ids["entity"]}, f"from node {missing} not found"),
        ({"from_id": ids["entity"], "to_id": MISSING}, f"to node {missing} not found"),
        ({"from_id": MISSING, "to_id": MISSING}, f"from node {missing} not found"),
        ({"from_id": ids["in_a"], "to_id": ids["in_b"]}, "cross-scope edge requires at least one Shared endpoint"),
        ({"from_id": ids["in_b"], "to_id": ids["in_a"], "scope": "shared"}, "cross-scope edge requires at least one"),
    ):
        message = topo.error("link", {**arguments, "edge_type": "t"})
        match = re.fullmatch(new_edge + re.escape(tail) + ".*", message)
        assert match, message
        # The id the refused edge would have had: a fresh ULID's value.
        assert 0 < int(match.group(1)) < 2**128
    assert topo.seq() == before
    # One endpoint in shared makes the cross-scope edge fine, whatever the edge's own scope.
    assert topo.link(ids["in_a"], ids["entity"], "t", scope=SCOPE_B)
    assert topo.link(ids["in_a"], ids["in_a"], "self")


def test_unknown_tool_is_a_json_rpc_error(topo: Topo) -> None:
    assert topo.error("no_such_tool", {}) == "tool not found"
    assert topo.error("store_memory", {"content": "x"}) == "tool not found"  # another profile's tool
    assert topo.ok("db_info")["current_seq"] > 0


def test_arguments_that_are_not_an_object(topo: Topo) -> None:
    # Upstream answered -32601 with the method name; JSON-RPC's code for bad params is -32602.
    reply = topo.server.request("tools/call", {"name": "get_node", "arguments": "str"})
    assert reply["error"]["code"] == -32602
    assert topo.ok("db_info")["current_seq"] >= 0


def test_the_server_survives_a_burst_of_failures(topo: Topo, ids: Ids) -> None:
    for tool, arguments, _ in SERDE + BODY:
        topo.reply(tool, fill(arguments, ids))
    node = topo.node(ids["entity"])
    assert node is not None and node["props"] == {"name": "error fixture entity"}
    assert topo.ok("db_info")["current_seq"] > 0  # and it goes on answering
