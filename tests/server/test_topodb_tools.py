"""The topodb profile's 16 tools as topodb-mcp 0.0.4 serves them.

Most tests speak raw JSON-RPC to the server `mnemodb serve` builds, in this process;
upstream's long scenario (with a restart) and the SDK client's check of every tool run
against real `mnemodb serve` processes over stdio.

Covers upstream's black-box `smoke`, `e2e` and `plan6` tests, the result shapes (nodes,
edges, hits, alphabetical keys, float scores), the asynchronous access counters, and
mnemodb's deliberate extensions: one memory per text and one entity per name in a scope,
`as_of` on get_node, and a clear error for a query vector of the wrong length.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client import ClientSession
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp_types import TextContent

from inprocess import Wire
from mnemodb import __version__
from support import serve_params
from topodb_support import (
    DAY_MS,
    MISSING,
    SCOPE_A,
    SCOPE_B,
    TOOL_NAMES,
    Topo,
    check_edge,
    check_node,
    edge_debug,
    is_ulid,
    node_debug,
    now_ms,
    wait_past,
)

pytestmark = pytest.mark.inprocess


@pytest.fixture(scope="module")
def topo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Topo]:
    db = tmp_path_factory.mktemp("topodb-tools") / "agent.db"
    with Topo.in_process(db, "--allow-unscoped-changes") as server:
        yield server


# -- smoke -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def handshake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    db = tmp_path_factory.mktemp("topodb-smoke") / "agent.db"
    with Wire.start(db, "topodb") as server:
        init = server.initialize("2025-06-18")["result"]
        tools = server.request("tools/list")["result"]["tools"]
        yield init, tools


def test_sixteen_tools_sorted_by_name_with_descriptions(handshake: tuple[dict[str, Any], Any]) -> None:
    init, tools = handshake
    assert "tools" in init["capabilities"]
    assert init["serverInfo"]["name"] == "topodb-mcp"
    assert init["protocolVersion"] == "2025-06-18"
    names = [t["name"] for t in tools]
    assert names == TOOL_NAMES
    assert names == sorted(names)
    for tool in tools:
        assert isinstance(tool["description"], str) and tool["description"].strip(), tool["name"]
        assert tool["inputSchema"]["type"] == "object", tool["name"]
        # Every upstream tool returns structured JSON, so every tool has an output schema.
        assert tool["outputSchema"]["type"] == "object", tool["name"]


def test_server_info_names_topodb_mcp(handshake: tuple[dict[str, Any], Any]) -> None:
    # The name is upstream's, so clients that look for it find it; the version is mnemodb's own.
    init, _ = handshake
    assert init["serverInfo"]["name"] == "topodb-mcp"
    assert init["serverInfo"]["version"] == __version__


# -- e2e: upstream's one long scenario, then a restart on the same file -------------------------


@pytest.mark.e2e
def test_e2e_scenario_and_restart(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    first = Topo.start(db, "--allow-unscoped-changes")
    with first as topo:
        assert [t["name"] for t in topo.server.request("tools/list")["result"]["tools"]] == TOOL_NAMES

        ada = topo.entity("ada")
        assert topo.found_ids("find_by_prop", {"label": "Entity", "prop": "name", "value": "ada"}) == [ada]

        topo.memory("The second program ran later")
        memory = topo.memory("Ada wrote the first program")
        hits = topo.ok("search_memories", {"query": "first program"})["hits"]
        assert hits[0]["node"]["id"] == memory
        assert hits[0]["score"] > 0

        edge = topo.link(memory, ada, "mentions")
        nodes, edges = topo.subgraph(ada, max_hops=1)
        assert nodes == {ada, memory}
        assert edges == {edge}

        topo.wait_for_access(memory)

        ops = topo.ok("get_changes", {"since_seq": 1})["ops"]
        seqs = [op["seq"] for op in ops]
        assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
        created = {}
        for entry in ops:
            [(name, body)] = entry["op"].items()
            if name in ("CreateNode", "CreateEdge"):
                created[body["id"]] = entry["seq"]
        assert created[ada] < created[memory] < created[edge]

        # Errors leave the server up.
        assert (
            topo.error("find_by_prop", {"label": "Entity", "prop": "zzz", "value": "x"})
            == "rejected: (Entity, zzz) is not equality-indexed"
        )
        message = topo.error("link", {"from_id": memory, "to_id": MISSING, "edge_type": "mentions"})
        assert message.startswith("CreateEdge EdgeId(Ulid(")
        assert message.endswith(f")): to node {node_debug(MISSING)} not found")
        assert (
            topo.error("create_entity", {"name": "x", "scope": "nope"})
            == 'invalid scope "nope" (expected "shared" or a ULID): invalid length'
        )
        assert topo.ok("get_node", {"id": MISSING}) == {"found": False}
        seq = topo.seq()

    with Topo.start(db) as again:
        assert again.seq() == seq
        node = again.node(memory)
        assert node is not None and node["props"] == {"content": "Ada wrote the first program"}
        assert again.ok("search_memories", {"query": "first program"})["hits"][0]["node"]["id"] == memory
        assert again.found_ids("find_by_prop", {"label": "Entity", "prop": "name", "value": "ada"}) == [ada]
        assert again.subgraph(ada, max_hops=1) == ({ada, memory}, {edge})


# -- the official MCP client: every tool's result is validated against its outputSchema --------


@pytest.mark.anyio
@pytest.mark.e2e
async def test_mcp_client_session_calls_every_tool(tmp_path: Path) -> None:
    params = serve_params(tmp_path / "agent.db", "topodb", "--allow-unscoped-changes")
    with (tmp_path / "stderr.log").open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "topodb-mcp"
            tools = (await session.list_tools()).tools
            assert [t.name for t in tools] == TOOL_NAMES
            assert all(t.output_schema for t in tools)

            async def call(name: str, arguments: dict[str, Any]) -> Any:
                # ClientSession checks structuredContent against the tool's outputSchema.
                result = await session.call_tool(name, arguments)
                assert result.is_error is False, result
                [item] = result.content
                assert isinstance(item, TextContent)
                assert result.structured_content == json.loads(item.text)
                return result.structured_content

            info = await call("db_info", {})
            assert info["current_seq"] == 0
            ada = (await call("create_entity", {"name": "Ada", "props": {"born": 1815}}))["id"]
            babbage = (await call("create_entity", {"name": "Babbage"}))["id"]
            memory = (await call("create_memory", {"content": "Ada and Babbage built an engine"}))["id"]
            edge = (await call("link", {"from_id": memory, "to_id": ada, "edge_type": "mentions"}))["id"]
            found = await call("find_by_prop", {"label": "Entity", "prop": "name", "value": "Ada"})
            assert [n["id"] for n in found["nodes"]] == [ada]
            hits = await call("search_memories", {"query": "engine"})
            assert [h["node"]["id"] for h in hits["hits"]] == [memory]
            assert (await call("get_node", {"id": ada}))["node"]["props"] == {"born": 1815, "name": "Ada"}
            assert await call("get_node", {"id": MISSING}) == {"found": False}
            graph = await call("traverse", {"seed_id": memory, "max_hops": 1})
            assert {e["id"] for e in graph["subgraph"]["edges"]} == {edge}
            stats = await call("access_stats", {"id": babbage})
            assert stats == {"access_count": 0, "found": True, "last_accessed_at": 0}
            assert await call("access_stats", {"id": MISSING}) == {"found": False}
            assert "seq" in await call("set_embedding", {"id": ada, "model": "m", "vector": [1.0, 0.0]})
            await call("set_embedding", {"id": babbage, "model": "m", "vector": [0.0, 1.0]})
            vectors = await call("search_vectors", {"model": "m", "vector": [1.0, 0.1], "k": 1})
            assert [h["node"]["id"] for h in vectors["hits"]] == [ada]
            await call("set_node_props", {"id": ada, "props": {"born": None, "field": "maths"}})
            await call("close_edge", {"id": edge})
            batch = await call(
                "submit_batch",
                {
                    "commands": [
                        {"op": "create_entity", "name": "Lovelace"},
                        {"op": "link", "from": "#0", "to": ada, "type": "same_as"},
                        {"op": "set_node_props", "id": "#0", "props": {"title": "Countess"}},
                    ]
                },
            )
            assert [is_ulid(i) for i in batch["ids"][:2]] == [True, True] and batch["ids"][2] is None
            removed = await call("remove_node", {"id": babbage})
            changes = await call("get_changes", {"since_seq": 0})
            assert [c["seq"] for c in changes["ops"]] == list(range(1, removed["seq"] + 1))

            # A serde failure is a tool result with isError; a tool-body failure is a JSON-RPC error.
            bad = await session.call_tool("get_node", {"id": ada, "bogus": 1})
            assert bad.is_error is True
            with pytest.raises(MCPError) as raised:
                await session.call_tool("get_node", {"id": "x"})
            assert raised.value.error.code == -32602
            assert raised.value.error.message == 'invalid node id "x": invalid length'


# -- plan6: writes, vectors and batches -----------------------------------------------------------


def test_set_node_props_adds_and_removes_then_remove_node(topo: Topo) -> None:
    node = topo.entity("plan6 props", props={"keep": 1, "drop": "x"})
    before = topo.seq()
    assert topo.ok("set_node_props", {"id": node, "props": {"role": "admin", "drop": None}}) == {"seq": before + 1}
    got = topo.node(node)
    assert got is not None and got["props"] == {"keep": 1, "name": "plan6 props", "role": "admin"}
    # An empty change is allowed and still writes.
    assert topo.ok("set_node_props", {"id": node, "props": {}}) == {"seq": before + 2}
    assert topo.ok("remove_node", {"id": node}) == {"seq": before + 3}
    assert topo.ok("get_node", {"id": node}) == {"found": False}
    assert topo.error("remove_node", {"id": node}) == f"RemoveNode: node {node_debug(node)} not found"


def test_set_node_props_on_a_missing_node(topo: Topo) -> None:
    assert (
        topo.error("set_node_props", {"id": MISSING, "props": {"a": 1}})
        == f"SetNodeProps: node {node_debug(MISSING)} not found"
    )


def test_close_edge_with_valid_to_returns_the_seq(topo: Topo) -> None:
    a, b = topo.entity("plan6 close a"), topo.entity("plan6 close b")
    edge = topo.link(a, b, "knows")
    closed = topo.ok("close_edge", {"id": edge, "valid_to": 1000})
    assert closed == {"seq": topo.seq()}
    assert topo.error("close_edge", {"id": edge}) == f"CloseEdge: edge {edge_debug(edge)} already closed"


def test_close_edge_on_a_missing_edge(topo: Topo) -> None:
    assert topo.error("close_edge", {"id": MISSING}) == f"CloseEdge: edge {edge_debug(MISSING)} not found"


def test_set_embedding_and_cosine_ranking(topo: Topo) -> None:
    near = topo.memory("plan6 vector near")
    mid = topo.memory("plan6 vector mid")
    far = topo.memory("plan6 vector far")
    for node, vector in ((near, [1, 0]), (mid, [0.8, 0.6]), (far, [0, 1])):
        assert topo.ok("set_embedding", {"id": node, "model": "plan6", "vector": vector}) == {"seq": topo.seq()}
    hits = topo.ok("search_vectors", {"model": "plan6", "vector": [2.0, 0.0]})["hits"]
    assert [h["node"]["id"] for h in hits] == [near, mid, far]
    assert all(isinstance(h["score"], float) for h in hits)
    assert [round(h["score"], 5) for h in hits] == [1.0, 0.8, 0.0]
    assert [
        h["node"]["id"] for h in topo.ok("search_vectors", {"model": "plan6", "vector": [1, 0], "k": 2})["hits"]
    ] == [
        near,
        mid,
    ]
    # candidates restrict the scoring; an empty list scores nothing; a zero query matches nothing.
    only = topo.ok("search_vectors", {"model": "plan6", "vector": [1, 0], "candidates": [far, MISSING]})
    assert [h["node"]["id"] for h in only["hits"]] == [far]
    assert topo.ok("search_vectors", {"model": "plan6", "vector": [1, 0], "candidates": []}) == {"hits": []}
    assert topo.ok("search_vectors", {"model": "plan6", "vector": [0, 0]}) == {"hits": []}
    assert topo.ok("search_vectors", {"model": "no such model", "vector": [1, 0]}) == {"hits": []}


def test_one_embedding_per_node_a_new_model_replaces_the_old(topo: Topo) -> None:
    node = topo.memory("plan6 switching models")
    topo.ok("set_embedding", {"id": node, "model": "plan6-old", "vector": [1, 0, 0]})
    topo.ok("set_embedding", {"id": node, "model": "plan6-new", "vector": [1, 0, 0]})
    assert topo.found_ids("search_vectors", {"model": "plan6-old", "vector": [1, 0, 0]}) == []
    assert topo.found_ids("search_vectors", {"model": "plan6-new", "vector": [1, 0, 0]}) == [node]


def test_non_finite_and_empty_vectors_are_rejected(topo: Topo) -> None:
    node = topo.memory("plan6 bad vectors")
    before = topo.seq()
    huge = {"id": node, "model": "plan6-bad", "vector": [1, 1e300]}
    assert topo.error("set_embedding", huge) == "vector element 1 is not finite"
    assert topo.error("search_vectors", {"model": "plan6", "vector": [1e300, 1]}) == "vector element 0 is not finite"
    empty = "vector search requires k > 0 and a non-empty query vector"
    assert topo.error("search_vectors", {"model": "plan6", "vector": []}) == empty
    assert (
        topo.error("set_embedding", {"id": node, "model": "plan6-bad", "vector": []})
        == 'embedding for model "plan6-bad" must have at least one dimension'
    )
    assert topo.seq() == before


def test_batch_with_back_references(topo: Topo) -> None:
    ids = topo.ok(
        "submit_batch",
        {
            "commands": [
                {"op": "create_memory", "content": "plan6 batch memory"},
                {"op": "create_entity", "name": "plan6 batch entity"},
                {"op": "link", "from": "#0", "to": "#1", "type": "about"},
            ]
        },
    )["ids"]
    assert len(ids) == 3 and all(is_ulid(i) for i in ids)
    found = topo.found_ids("find_by_prop", {"label": "Entity", "prop": "name", "value": "plan6 batch entity"})
    assert found == [ids[1]]
    assert topo.subgraph(ids[0], max_hops=1) == ({ids[0], ids[1]}, {ids[2]})


def test_bad_back_reference_is_an_error_and_writes_nothing(topo: Topo) -> None:
    before = topo.seq()
    message = topo.error(
        "submit_batch",
        {
            "commands": [
                {"op": "create_entity", "name": "plan6 never written"},
                {"op": "link", "from": "#0", "to": "#5", "type": "x"},
            ]
        },
    )
    assert message == 'command #1: to back-ref "#5" must point to an earlier command'
    assert topo.seq() == before
    assert topo.found_ids("find_by_prop", {"label": "Entity", "prop": "name", "value": "plan6 never written"}) == []


def test_remove_node_cascades_to_incident_edges(topo: Topo) -> None:
    hub, left, right = topo.entity("cascade hub"), topo.entity("cascade left"), topo.entity("cascade right")
    memory = topo.memory("cascade memory text")
    topo.ok("set_embedding", {"id": memory, "model": "cascade", "vector": [1, 1]})
    topo.link(hub, left, "out")
    topo.link(right, hub, "in")
    topo.link(memory, hub, "about")
    topo.ok("remove_node", {"id": hub})
    assert topo.subgraph(left) == ({left}, set())
    assert topo.subgraph(right) == ({right}, set())
    topo.ok("remove_node", {"id": memory})
    assert topo.found_ids("search_memories", {"query": "cascade"}) == []
    assert topo.found_ids("search_vectors", {"model": "cascade", "vector": [1, 1]}) == []
    assert topo.ok("access_stats", {"id": memory}) == {"found": False}
    assert topo.found_ids("find_by_prop", {"label": "Entity", "prop": "name", "value": "cascade hub"}) == []


# -- result shapes ------------------------------------------------------------------------------


def test_node_edge_and_hit_shapes(topo: Topo) -> None:
    props = {"b": True, "f": 2.0, "half": 1.5, "i": 9223372036854775807, "neg": -5, "s": "Grüße ☕"}
    memory = topo.memory("shapes of things to come", props=props)
    entity = topo.entity("shapes entity", scope=SCOPE_A)
    edge = topo.link(memory, entity, "about", props={"w": 0.5, "n": 2}, valid_from=1_700_000_000_000)

    reply = topo.reply("get_node", {"id": memory})
    text = reply["result"]["content"][0]["text"]
    assert '"f":2.0' in text and '"half":1.5' in text and "Grüße ☕" in text  # floats stay floats, UTF-8 raw
    node = topo.node(memory)
    assert node is not None
    check_node(node)
    assert node == {
        "id": memory,
        "label": "Memory",
        "props": {"content": "shapes of things to come", **props},
        "scope": "shared",
    }
    assert isinstance(node["props"]["f"], float)

    hit = topo.ok("search_memories", {"query": "shapes"})["hits"][0]
    assert list(hit) == ["node", "score"] and hit["node"] == node and isinstance(hit["score"], float)

    graph = topo.ok("traverse", {"seed_id": memory, "max_hops": 1, "scopes": ["shared", SCOPE_A]})["subgraph"]
    assert list(graph) == ["edges", "nodes"]
    [got_edge] = graph["edges"]
    check_edge(got_edge)
    assert got_edge == {
        "from": memory,
        "id": edge,
        "props": {"n": 2, "w": 0.5},
        "scope": "shared",
        "to": entity,
        "type": "about",
        "valid_from": 1_700_000_000_000,
        "valid_to": None,
    }
    for n in graph["nodes"]:
        check_node(n)
    assert {n["id"]: n["scope"] for n in graph["nodes"]} == {memory: "shared", entity: SCOPE_A}

    # A lower-case id is read as the same ULID; replies always use upper case.
    lower = topo.node(memory.lower())
    assert lower is not None and lower["id"] == memory
    # A first character past 7 wraps around (as the Rust ulid crate does): not an error.
    assert topo.ok("get_node", {"id": "8" + "Z" * 25}) == {"found": False}


def test_get_node_not_found_has_no_node_key(topo: Topo) -> None:
    reply = topo.reply("get_node", {"id": MISSING})
    assert reply["result"]["content"][0]["text"] == '{"found":false}'
    assert reply["result"]["structuredContent"] == {"found": False}


def test_db_info_shape(topo: Topo) -> None:
    info = topo.ok("db_info")
    assert list(info) == ["current_seq", "default_read_scopes", "default_scope", "path"]
    assert info["default_scope"] == "shared" and info["default_read_scopes"] == ["shared"]
    assert info["path"].endswith("agent.db")
    # db_info has no params struct: any argument is accepted and ignored.
    assert topo.ok("db_info", {"bogus": 1}) == topo.ok("db_info")


# -- access statistics ---------------------------------------------------------------------------


def test_every_scoped_read_bumps_the_access_counter(topo: Topo) -> None:
    nodes = {tool: topo.memory(f"bump through {tool} zebra{i}") for i, tool in enumerate(["get_node", "search", "vec"])}
    entity = topo.entity("bump through find")
    seed = topo.entity("bump through traverse")
    neighbour = topo.entity("bump neighbour")
    topo.link(seed, neighbour, "knows")
    topo.ok("set_embedding", {"id": nodes["vec"], "model": "bump", "vector": [0.25, 0.5]})
    for node in [*nodes.values(), entity, seed, neighbour]:
        assert topo.ok("access_stats", {"id": node}) == {"access_count": 0, "found": True, "last_accessed_at": 0}

    before = now_ms()
    topo.ok("get_node", {"id": nodes["get_node"]})
    assert topo.found_ids("search_memories", {"query": "zebra1"}) == [nodes["search"]]
    assert topo.found_ids("search_vectors", {"model": "bump", "vector": [0.25, 0.5]}) == [nodes["vec"]]
    assert topo.found_ids("find_by_prop", {"label": "Entity", "prop": "name", "value": "bump through find"}) == [entity]
    topo.ok("traverse", {"seed_id": seed, "max_hops": 1})
    for node in [*nodes.values(), entity, seed, neighbour]:
        topo.wait_for_access(node)
        stats = topo.ok("access_stats", {"id": node})
        assert stats["last_accessed_at"] >= before
        assert isinstance(stats["access_count"], int)


def test_access_stats_itself_does_not_count(topo: Topo) -> None:
    quiet = topo.entity("never read, only inspected")
    for _ in range(5):
        assert topo.ok("access_stats", {"id": quiet})["access_count"] == 0
    # A read made after those calls is counted; once it shows, earlier bumps would have too.
    probe = topo.entity("read after the inspections")
    topo.ok("get_node", {"id": probe})
    topo.wait_for_access(probe)
    assert topo.ok("access_stats", {"id": quiet}) == {"access_count": 0, "found": True, "last_accessed_at": 0}


def test_access_stats_respects_scopes(topo: Topo) -> None:
    private = topo.entity("stats in a private scope", scope=SCOPE_B)
    assert topo.ok("access_stats", {"id": private}) == {"found": False}
    assert topo.ok("access_stats", {"id": private, "scope": SCOPE_B})["found"] is True
    assert topo.ok("access_stats", {"id": MISSING, "scopes": ["shared", SCOPE_B]}) == {"found": False}


# -- deliberate extensions -------------------------------------------------------------------------


def test_same_memory_text_in_one_scope_is_one_node(topo: Topo) -> None:
    first = topo.memory("dedup: the kettle is descaled monthly")
    again = topo.memory("dedup: the kettle is descaled monthly")
    elsewhere = topo.memory("dedup: the kettle is descaled monthly", scope=SCOPE_A)
    assert again == first
    assert elsewhere != first
    assert topo.found_ids("search_memories", {"query": "kettle descaled"}) == [first]


def test_same_entity_name_in_one_scope_is_one_node(topo: Topo) -> None:
    first = topo.entity("dedup entity")
    again = topo.entity("dedup entity")
    elsewhere = topo.entity("dedup entity", scope=SCOPE_A)
    assert again == first
    assert elsewhere != first
    assert topo.found_ids("find_by_prop", {"label": "Entity", "prop": "name", "value": "dedup entity"}) == [first]
    both = {"label": "Entity", "prop": "name", "value": "dedup entity", "scopes": ["shared", SCOPE_A]}
    assert topo.found_ids("find_by_prop", both) == sorted([first, elsewhere])


def test_query_vector_of_the_wrong_length_is_an_error(topo: Topo) -> None:
    node = topo.memory("wrong length vectors")
    topo.ok("set_embedding", {"id": node, "model": "dims", "vector": [1, 0]})
    message = topo.error("search_vectors", {"model": "dims", "vector": [1, 0, 0]})
    assert "3" in message and "2" in message, message
    other = topo.memory("wrong length, second node")
    assert (
        topo.error("set_embedding", {"id": other, "model": "dims", "vector": [1, 0, 0]})
        == 'embedding dim 3 does not match existing slab dim 2 for model "dims"'
    )


def test_changing_one_nodes_vector_length_cannot_break_the_model(topo: Topo) -> None:
    # Found accepted (after which every search_vectors on the model failed with -32603); fixed since.
    first, second = topo.memory("re-embed one"), topo.memory("re-embed two")
    topo.ok("set_embedding", {"id": first, "model": "reembed", "vector": [1, 0]})
    topo.ok("set_embedding", {"id": second, "model": "reembed", "vector": [0, 1]})
    assert (
        topo.error("set_embedding", {"id": first, "model": "reembed", "vector": [1, 0, 0]})
        == 'embedding dim 3 does not match existing slab dim 2 for model "reembed"'
    )
    assert topo.found_ids("search_vectors", {"model": "reembed", "vector": [0, 1]})[0] == second


def test_search_memories_accepts_any_usize_k(topo: Topo) -> None:
    node = topo.memory("huge k values are fine")
    assert topo.found_ids("search_memories", {"query": "huge", "k": 2**64 - 1}) == [node]


def test_get_node_as_of_shows_earlier_props(topo: Topo) -> None:
    node = topo.entity("as_of node", props={"v": 1})
    other = topo.entity("as_of other")
    topo.link(node, other, "marker")
    [marker] = topo.ok("traverse", {"seed_id": node, "max_hops": 1, "edge_types": ["marker"]})["subgraph"]["edges"]
    then = marker["valid_from"]  # the commit time of a write made after the node existed
    wait_past(then)
    topo.ok("set_node_props", {"id": node, "props": {"v": 2, "extra": "y"}})

    past = topo.node(node, as_of=then)
    assert past is not None and past["props"] == {"name": "as_of node", "v": 1}
    current = topo.node(node)
    assert current is not None and current["props"] == {"extra": "y", "name": "as_of node", "v": 2}
    assert topo.ok("get_node", {"id": node, "as_of": then - DAY_MS}) == {"found": False}  # before it existed
    assert topo.ok("get_node", {"id": node, "as_of": then, "scope": SCOPE_A}) == {"found": False}


# -- full-text search --------------------------------------------------------------------------------


def test_search_terms_are_ored_case_insensitive_and_split_on_punctuation(topo: Topo) -> None:
    both = topo.memory("Quillon and pommel of the sword")
    one = topo.memory("A pommel only")
    hits = topo.ok("search_memories", {"query": "QUILLON pommel"})["hits"]
    assert [h["node"]["id"] for h in hits] == [both, one]
    assert hits[0]["score"] > hits[1]["score"] > 0
    joined = topo.memory("snake_case_word and kebab-case-word")
    assert topo.found_ids("search_memories", {"query": "kebab"}) == [joined]
    assert topo.found_ids("search_memories", {"query": "snake"}) == [joined]
    greek = topo.memory("ΣΊΣΥΦΟΣ pushed the boulder")
    assert topo.found_ids("search_memories", {"query": "σίσυφος"}) == [greek]
    assert topo.found_ids("search_memories", {"query": "pommel", "k": 1}) == [one]  # shorter document first


def test_search_finds_words_with_sharp_s(topo: Topo) -> None:
    node = topo.memory("Viele Grüße aus Köln")
    assert topo.found_ids("search_memories", {"query": "Köln"}) == [node]
    assert topo.found_ids("search_memories", {"query": "Grüße"}) == [node]


# -- props whose names the other profiles also use ------------------------------------------------


def test_props_named_like_other_profiles_fields_are_kept_at_creation(topo: Topo) -> None:
    odd = {"importance": 50, "memory_type": 5, "summary": 3, "tags": "a,b", "hash": "x"}
    memory = topo.memory("props that look like memdb fields", props=odd)
    node = topo.node(memory)
    assert node is not None and node["props"] == {"content": "props that look like memdb fields", **odd}
    entity = topo.entity("props that look like kg fields", props={"entityType": "person", "observations": "x"})
    node = topo.node(entity)
    assert node is not None
    assert node["props"] == {"entityType": "person", "name": "props that look like kg fields", "observations": "x"}


def test_null_removes_any_prop_of_a_memory(topo: Topo) -> None:
    memory = topo.memory("memory whose props come and go")
    topo.ok("set_node_props", {"id": memory, "props": {"memory_type": "note", "importance": 7}})
    topo.ok("set_node_props", {"id": memory, "props": {"memory_type": None, "importance": None}})
    node = topo.node(memory)
    assert node is not None and node["props"] == {"content": "memory whose props come and go"}


def test_any_scalar_entity_type_is_kept(topo: Topo) -> None:
    numeric = topo.entity("entity created with a numeric type", props={"entityType": 5})
    node = topo.node(numeric)
    assert node is not None and node["props"] == {"entityType": 5, "name": "entity created with a numeric type"}
    entity = topo.entity("entity with a numeric type", props={"entityType": "person"})
    topo.ok("set_node_props", {"id": entity, "props": {"entityType": 7}})
    node = topo.node(entity)
    assert node is not None and node["props"] == {"entityType": 7, "name": "entity with a numeric type"}


def test_set_node_props_takes_any_scalar_for_importance(topo: Topo) -> None:
    memory = topo.memory("memory with a large importance")
    topo.ok("set_node_props", {"id": memory, "props": {"importance": 50}})
    node = topo.node(memory)
    assert node is not None and node["props"]["importance"] == 50


def test_an_entitys_name_cannot_be_removed(topo: Topo) -> None:
    # A deliberate difference (docs/compatibility.md): an Entity node is an entity for every profile, which
    # names it; upstream let set_node_props remove the name.
    entity = topo.entity("entity keeping its name", props={"kind": "x"})
    for name in (None, 5, ""):
        assert "name must be a non-empty string" in topo.error(
            "set_node_props", {"id": entity, "props": {"name": name}}
        )
    node = topo.node(entity)
    assert node is not None and node["props"] == {"kind": "x", "name": "entity keeping its name"}


def test_set_node_props_updates_the_indexes(topo: Topo) -> None:
    memory = topo.memory("the heron waits by the reed")
    topo.ok("set_node_props", {"id": memory, "props": {"content": "the egret flies over the lake"}})
    assert topo.found_ids("search_memories", {"query": "heron"}) == []
    assert topo.found_ids("search_memories", {"query": "egret"}) == [memory]
    entity = topo.entity("rename me")
    topo.ok("set_node_props", {"id": entity, "props": {"name": "renamed"}})
    assert topo.found_ids("find_by_prop", {"label": "Entity", "prop": "name", "value": "rename me"}) == []
    assert topo.found_ids("find_by_prop", {"label": "Entity", "prop": "name", "value": "renamed"}) == [entity]
    # mnemodb keeps a memory's text non-empty (a documented difference): removing it is refused.
    assert topo.error("set_node_props", {"id": memory, "props": {"content": None}})
    assert topo.found_ids("search_memories", {"query": "egret"}) == [memory]


def test_create_entity_refuses_an_empty_name(topo: Topo) -> None:
    # A deliberate difference (docs/compatibility.md): an entity has a name for every profile.
    before = topo.ok("db_info")["current_seq"]
    assert topo.error("create_entity", {"name": ""}) == "an Entity node needs a non-empty string `name` property"
    assert topo.ok("db_info")["current_seq"] == before
