"""submit_batch: topodb's batch language, atomic as upstream's.

Commands are objects whose `op` names a write; id fields take a ULID or `#N`, the id made
by the Nth earlier command (0-based). Field errors are worded `command #i: ...`; the
engine's own refusals come unprefixed; a failing command leaves nothing written.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from topodb_support import MISSING, SCOPE_A, Topo, edge_debug, is_ulid, node_debug

pytestmark = pytest.mark.inprocess


@pytest.fixture(scope="module")
def topo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Topo]:
    db = tmp_path_factory.mktemp("topodb-batch") / "agent.db"
    with Topo.in_process(db, "--allow-unscoped-changes") as server:
        yield server


@pytest.fixture(scope="module")
def existing(topo: Topo) -> dict[str, str]:
    entity = topo.entity("batch fixture entity")
    memory = topo.memory("batch fixture memory")
    return {"entity": entity, "memory": memory, "edge": topo.link(memory, entity, "about")}


def batch(topo: Topo, *commands: Any) -> list[str | None]:
    ids: list[str | None] = topo.ok("submit_batch", {"commands": list(commands)})["ids"]
    return ids


def test_every_op_with_back_references(topo: Topo, existing: dict[str, str]) -> None:
    before = topo.seq()
    ids = batch(
        topo,
        {"op": "create_memory", "content": "batch: Grace found the moth", "props": {"year": 1947}},
        {"op": "create_entity", "name": "batch Grace", "scope": SCOPE_A, "props": {"role": "admiral"}},
        {"op": "link", "from": "#0", "to": "#1", "type": "about", "props": {"w": 1}, "valid_from": 1_700_000_000_000},
        {"op": "set_node_props", "id": "#1", "props": {"role": None, "born": 1906}},
        {"op": "set_embedding", "id": "#0", "model": "batch", "vector": [0.5, 0.5]},
        {"op": "link", "from": "#0", "to": existing["entity"], "type": "also", "scope": "shared"},
        {"op": "close_edge", "id": "#5", "valid_to": 1_700_000_000_001},
        {"op": "close_edge", "id": existing["edge"]},
        {"op": "remove_node", "id": existing["memory"]},
    )
    assert [i is None for i in ids] == [False, False, False, True, True, False, True, True, True]
    memory, grace, about, _, _, also = ids[:6]
    assert all(is_ulid(i) for i in (memory, grace, about, also))
    assert grace is not None
    # One op per command, committed together.
    assert topo.seq() == before + 9

    node = topo.node(grace, scope=SCOPE_A)
    assert node is not None and node["props"] == {"born": 1906, "name": "batch Grace"}
    assert topo.found_ids("search_vectors", {"model": "batch", "vector": [1, 1]}) == [memory]
    graph = topo.ok("traverse", {"seed_id": memory, "max_hops": 1, "scopes": ["shared", SCOPE_A]})["subgraph"]
    assert [(e["id"], e["props"], e["valid_from"]) for e in graph["edges"]] == [(about, {"w": 1}, 1_700_000_000_000)]
    assert topo.ok("get_node", {"id": existing["memory"]}) == {"found": False}
    ops = topo.ok("get_changes", {"since_seq": before + 1})["ops"]
    assert [next(iter(o["op"])) for o in ops] == [
        "CreateNode",
        "CreateNode",
        "CreateEdge",
        "SetNodeProps",
        "SetEmbedding",
        "CreateEdge",
        "CloseEdge",
        "CloseEdge",
        "RemoveNode",
    ]
    assert ops[6]["op"] == {"CloseEdge": {"id": also, "valid_to": 1_700_000_000_001}}
    assert isinstance(ops[7]["op"]["CloseEdge"]["valid_to"], int)  # "now", resolved before logging


def test_back_reference_spellings(topo: Topo) -> None:
    ids = batch(
        topo,
        {"op": "create_entity", "name": "batch spelling a"},
        {"op": "create_entity", "name": "batch spelling b"},
        {"op": "link", "from": "#00", "to": "#+1", "type": "t"},
        {"op": "close_edge", "id": "#02"},
    )
    assert ids[3] is None
    assert topo.ok("traverse", {"seed_id": ids[0]})["subgraph"]["edges"] == []  # closed in the same batch
    assert topo.ok("traverse", {"seed_id": ids[0], "as_of": 0})["subgraph"] == {"edges": [], "nodes": []}


def test_unknown_keys_in_a_command_are_ignored(topo: Topo) -> None:
    [node] = batch(topo, {"op": "create_entity", "name": "batch extra keys", "bogus": 1, "from_id": "x"})
    assert node is not None and topo.node(node) is not None


def test_the_same_memory_twice_in_one_batch_is_one_node(topo: Topo) -> None:
    first, second = batch(
        topo,
        {"op": "create_memory", "content": "batch: said twice"},
        {"op": "create_memory", "content": "batch: said twice"},
    )
    assert first == second


def test_an_empty_batch(topo: Topo) -> None:
    before = topo.seq()
    assert topo.error("submit_batch", {"commands": []}) == "empty op batch"
    assert topo.seq() == before


NOT_A_BATCH = "batch must be a JSON array of command objects"
E = "{entity}"
M = "{memory}"
ED = "{edge}"

DSL_ERRORS: list[tuple[list[Any] | Any, str]] = [
    (None, NOT_A_BATCH),
    ({"op": "create_entity", "name": "x"}, NOT_A_BATCH),
    ("[]", NOT_A_BATCH),
    ([5], "command #0: expected a JSON object"),
    ([{"op": "create_entity", "name": "x"}, ["op"]], "command #1: expected a JSON object"),
    ([{}], 'command #0: missing string field "op"'),
    ([{"op": 5}], 'command #0: missing string field "op"'),
    ([{"op": "create_node", "label": "X"}], 'command #0: unknown op "create_node"'),
    ([{"op": "create-entity", "name": "x"}], 'command #0: unknown op "create-entity"'),
    ([{"op": "create_memory"}], 'command #0: missing string field "content"'),
    ([{"op": "create_memory", "content": 5}], 'command #0: missing string field "content"'),
    ([{"op": "create_entity", "name": None}], 'command #0: missing string field "name"'),
    (
        [{"op": "create_memory", "content": "x", "props": {"content": "y"}}],
        'command #0: props must not include "content": it is already set from the tool\'s own parameter',
    ),
    (
        [{"op": "create_entity", "name": "x", "props": {"name": "y"}}],
        'command #0: props must not include "name": it is already set from the tool\'s own parameter',
    ),
    ([{"op": "create_memory", "content": "x", "props": None}], "command #0: expected a JSON object for props"),
    ([{"op": "create_memory", "content": "x", "props": {"a": [1]}}], "command #0: unsupported over MCP v0"),
    (
        [{"op": "create_memory", "content": "x", "props": {"a": 2**63}}],
        "command #0: integer out of supported range (max 9223372036854775807)",
    ),
    ([{"op": "create_memory", "content": "x", "scope": 5}], 'command #0: "scope" must be a string'),
    (
        [{"op": "create_memory", "content": "x", "scope": "bad"}],
        'command #0: invalid scope "bad" (expected "shared" or a ULID): invalid length',
    ),
    ([{"op": "link", "to": E, "type": "t"}], 'command #0: missing string field "from"'),
    ([{"op": "link", "from": "bad", "type": "t"}], 'command #0: missing string field "to"'),
    ([{"op": "link", "from": E, "to": E}], 'command #0: missing string field "type"'),
    ([{"op": "link", "from": "bad", "to": "#9", "type": "t", "scope": 5}], 'command #0: "scope" must be a string'),
    ([{"op": "link", "from": "bad", "to": E, "type": "t"}], 'command #0: invalid from node id "bad": invalid length'),
    ([{"op": "link", "from": E, "to": "bad", "type": "t"}], 'command #0: invalid to node id "bad": invalid length'),
    ([{"op": "link", "from": E, "to": E, "type": "t", "props": {"a": None}}], "command #0: unsupported over MCP v0"),
    (
        [{"op": "link", "from": E, "to": E, "type": "t", "valid_from": 1.5}],
        'command #0: "valid_from" must be an integer',
    ),
    (
        [{"op": "link", "from": E, "to": E, "type": "t", "valid_from": "0"}],
        'command #0: "valid_from" must be an integer',
    ),
    (
        [{"op": "link", "from": E, "to": E, "type": "t", "valid_from": 2**63}],
        'command #0: "valid_from" must be an integer',
    ),
    ([{"op": "close_edge", "id": ED, "valid_to": "x"}], 'command #0: "valid_to" must be an integer'),
    ([{"op": "close_edge", "id": "bad"}], 'command #0: invalid id edge id "bad": invalid length'),
    ([{"op": "set_node_props", "id": "bad", "props": {}}], 'command #0: invalid id node id "bad": invalid length'),
    ([{"op": "remove_node", "id": 5}], 'command #0: missing string field "id"'),
    ([{"op": "set_node_props", "id": E}], 'command #0: set_node_props requires "props"'),
    ([{"op": "set_node_props", "id": E, "props": 1}], "command #0: expected a JSON object for props"),
    ([{"op": "set_embedding", "id": E, "vector": [1]}], 'command #0: missing string field "model"'),
    ([{"op": "set_embedding", "id": E, "model": "m"}], 'command #0: set_embedding requires "vector"'),
    ([{"op": "set_embedding", "id": E, "model": "m", "vector": "x"}], "command #0: expected a JSON array of numbers"),
    (
        [{"op": "set_embedding", "id": E, "model": "m", "vector": [1, "a"]}],
        'command #0: vector element 1 is not a number: "a"',
    ),
    ([{"op": "set_embedding", "id": E, "model": "m", "vector": [1e300]}], "command #0: vector element 0 is not finite"),
    # back-references
    (
        [{"op": "create_entity", "name": "x"}, {"op": "link", "from": "#x", "to": "#0", "type": "t"}],
        'command #1: from back-ref "#x" is not #<number>',
    ),
    (
        [{"op": "create_entity", "name": "x"}, {"op": "link", "from": "#0", "to": "#", "type": "t"}],
        'command #1: to back-ref "#" is not #<number>',
    ),
    (
        [{"op": "create_entity", "name": "x"}, {"op": "link", "from": "#-1", "to": "#0", "type": "t"}],
        'command #1: from back-ref "#-1" is not #<number>',
    ),
    (
        [{"op": "create_entity", "name": "x"}, {"op": "link", "from": "#0", "to": "#5", "type": "t"}],
        'command #1: to back-ref "#5" must point to an earlier command',
    ),
    (
        [{"op": "create_entity", "name": "x"}, {"op": "link", "from": "#1", "to": "#0", "type": "t"}],
        'command #1: from back-ref "#1" must point to an earlier command',
    ),
    (
        [{"op": "create_memory", "content": "x"}, {"op": "close_edge", "id": "#0"}],
        "command #1: id back-ref #0 refers to a node id but a edge id is required here",
    ),
    (
        [
            {"op": "create_memory", "content": "x"},
            {"op": "link", "from": "#0", "to": "#0", "type": "t"},
            {"op": "link", "from": "#1", "to": "#0", "type": "t"},
        ],
        "command #2: from back-ref #1 refers to a edge id but a node id is required here",
    ),
    (
        [
            {"op": "create_memory", "content": "x"},
            {"op": "link", "from": "#0", "to": "#0", "type": "t"},
            {"op": "set_embedding", "id": "#1", "model": "m", "vector": [1]},
        ],
        "command #2: id back-ref #1 refers to a edge id but a node id is required here",
    ),
    (
        [
            {"op": "create_memory", "content": "x"},
            {"op": "set_node_props", "id": "#0", "props": {}},
            {"op": "link", "from": "#1", "to": "#0", "type": "t"},
        ],
        "command #2: from back-ref #1 refers to a command that produces no id",
    ),
    (
        [{"op": "create_memory", "content": "x"}, {"op": "remove_node", "id": "#0"}, {"op": "remove_node", "id": "#1"}],
        "command #2: id back-ref #1 refers to a command that produces no id",
    ),
    # engine refusals: unprefixed
    (
        [{"op": "set_embedding", "id": E, "model": "m", "vector": []}],
        'embedding for model "m" must have at least one dimension',
    ),
    (
        [
            {"op": "set_embedding", "id": E, "model": "m", "vector": [1, 0]},
            {"op": "set_embedding", "id": M, "model": "m", "vector": [1, 0, 0]},
        ],
        'inconsistent embedding dim for model "m" within batch: 2 vs 3',
    ),
    ([{"op": "set_node_props", "id": MISSING, "props": {}}], f"SetNodeProps: node {node_debug(MISSING)} not found"),
    ([{"op": "remove_node", "id": MISSING}], f"RemoveNode: node {node_debug(MISSING)} not found"),
    ([{"op": "close_edge", "id": MISSING}], f"CloseEdge: edge {edge_debug(MISSING)} not found"),
    (
        [{"op": "create_entity", "name": "x"}, {"op": "remove_node", "id": "#0"}, {"op": "remove_node", "id": "#0"}],
        "RemoveNode: node NodeId(Ulid(",
    ),
    (
        [{"op": "close_edge", "id": ED}, {"op": "close_edge", "id": ED}],
        "CloseEdge: edge {edge_debug} already closed",
    ),
]


def _expand(value: Any, existing: dict[str, str]) -> Any:
    if isinstance(value, str):
        return {"{entity}": existing["entity"], "{memory}": existing["memory"], "{edge}": existing["edge"]}.get(
            value, value
        )
    if isinstance(value, dict):
        return {k: _expand(v, existing) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, existing) for v in value]
    return value


@pytest.mark.parametrize(("commands", "message"), DSL_ERRORS, ids=[m[:50] for _, m in DSL_ERRORS])
def test_batch_errors_and_atomicity(topo: Topo, fresh: dict[str, str], commands: list[Any] | Any, message: str) -> None:
    before = topo.seq()
    probe_name = "batch: must never be written"
    if isinstance(commands, list) and commands and isinstance(commands[0], dict) and "op" in commands[0]:
        # A successful command first: the failure must take it back too.
        commands = [{"op": "create_entity", "name": probe_name}, *_shift(commands)]
        message = re.sub(r"command #(\d+)", lambda m: f"command #{int(m.group(1)) + 1}", message)
        message = re.sub(r'"#(\d+)"', lambda m: f'"#{int(m.group(1)) + 1}"', message)
        message = re.sub(r"back-ref #(\d+)", lambda m: f"back-ref #{int(m.group(1)) + 1}", message)
    got = topo.error("submit_batch", {"commands": _expand(commands, fresh)})
    expected = message.replace("{edge_debug}", edge_debug(fresh["edge"]))
    if expected.endswith("NodeId(Ulid("):
        assert got.startswith(expected) and got.endswith(")) not found"), got
    else:
        assert got == expected
    assert topo.seq() == before
    assert topo.found_ids("find_by_prop", {"label": "Entity", "prop": "name", "value": probe_name}) == []
    assert topo.found_ids("find_by_prop", {"label": "Entity", "prop": "name", "value": "x"}) == []


def _shift(commands: list[Any]) -> list[Any]:
    """Commands moved one place later: every `#N` back-reference becomes `#N+1`."""

    def shift(value: Any) -> Any:
        if isinstance(value, str) and re.fullmatch(r"#\+?\d+", value):
            return f"#{int(value[1:]) + 1}"
        if isinstance(value, dict):
            return {k: shift(v) for k, v in value.items()}
        return value

    return [shift(c) for c in commands]


@pytest.fixture
def fresh(topo: Topo) -> dict[str, str]:
    """Nodes and an open edge of the test's own (earlier tests may have closed or removed others)."""
    entity = topo.entity(f"batch target {topo.seq()}")
    memory = topo.memory(f"batch target memory {topo.seq()}")
    return {"entity": entity, "memory": memory, "edge": topo.link(memory, entity, "about")}


def test_link_errors_name_the_endpoint_and_are_atomic(topo: Topo, fresh: dict[str, str]) -> None:
    before = topo.seq()
    message = topo.error(
        "submit_batch",
        {
            "commands": [
                {"op": "create_memory", "content": "batch: linked to nothing"},
                {"op": "link", "from": "#0", "to": MISSING, "type": "t"},
            ]
        },
    )
    assert re.fullmatch(
        rf"CreateEdge EdgeId\(Ulid\(\d+\)\): to node {re.escape(node_debug(MISSING))} not found", message
    )
    assert topo.seq() == before
    assert topo.found_ids("search_memories", {"query": "linked nothing"}) == []


def test_a_failure_late_in_the_batch_takes_back_everything(topo: Topo, fresh: dict[str, str]) -> None:
    before = topo.seq()
    old_props = topo.node(fresh["entity"])
    topo.error(
        "submit_batch",
        {
            "commands": [
                {"op": "create_entity", "name": "batch: rolled back"},
                {"op": "set_node_props", "id": fresh["entity"], "props": {"touched": True}},
                {"op": "close_edge", "id": fresh["edge"]},
                {"op": "remove_node", "id": fresh["memory"]},
                {"op": "set_embedding", "id": fresh["entity"], "model": "rollback", "vector": [1]},
                {"op": "set_node_props", "id": MISSING, "props": {}},
            ]
        },
    )
    assert topo.seq() == before
    assert topo.node(fresh["entity"]) == old_props
    assert topo.node(fresh["memory"]) is not None
    assert topo.subgraph(fresh["memory"], max_hops=1) == ({fresh["memory"], fresh["entity"]}, {fresh["edge"]})
    assert topo.found_ids("search_vectors", {"model": "rollback", "vector": [1]}) == []
    assert topo.found_ids("find_by_prop", {"label": "Entity", "prop": "name", "value": "batch: rolled back"}) == []
