"""Scopes in the topodb profile: reads look through a set of scopes, writes land in one.

Upstream's `multi_scope` tests, and a sweep over every read tool and many read sets
showing that no node or edge outside the caller's scope set is ever returned.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from topodb_support import MISSING, READ_TOOLS, SCOPE_A, SCOPE_B, Topo, scopes_of

pytestmark = pytest.mark.inprocess

SHARED = "shared"
SCOPES_EMPTY = (
    "`scopes` must not be empty (an empty scope set admits nothing); omit it to use the server's default read scopes"
)
CHANGES_DISABLED = (
    "get_changes is disabled: it is the one unscoped read (the op log spans every scope in the db), "
    "so it is off by default. Restart topodb-mcp with --allow-unscoped-changes to enable it."
)


@dataclass
class World:
    """Nodes and edges in three scopes, written through one server."""

    topo: Topo
    scope_of: dict[str, str] = field(default_factory=dict)
    memories: set[str] = field(default_factory=set)
    named: set[str] = field(default_factory=set)
    embedded: set[str] = field(default_factory=set)
    edges: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    """edge id -> (from, to, edge scope)"""

    def expected_walk(self, seed: str, reads: set[str], max_hops: int = 4) -> tuple[set[str], set[str]]:
        """What traverse must return: BFS over edges in the set whose far end is in the set."""
        if seed not in self.scope_of or self.scope_of[seed] not in reads:
            return set(), set()
        visited, followed, frontier = {seed}, set(), [seed]
        for _ in range(max_hops):
            reached = []
            for edge, (src, dst, scope) in self.edges.items():
                if scope not in reads:
                    continue
                for near, far in ((src, dst), (dst, src)):
                    if near in frontier and self.scope_of[far] in reads:
                        followed.add(edge)
                        if far not in visited:
                            visited.add(far)
                            reached.append(far)
            frontier = reached
        return visited, followed


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    db = tmp_path_factory.mktemp("topodb-scopes") / "agent.db"
    with Topo.in_process(db, "--scope", SCOPE_A, "--read-scopes", f"{SCOPE_A},shared") as topo:
        w = World(topo)
        entity: dict[str, str] = {}
        memory: dict[str, str] = {}
        for scope in (SHARED, SCOPE_A, SCOPE_B):
            memory[scope] = topo.memory(f"quokka sighting filed under {scope}", scope=scope)
            entity[scope] = topo.entity("leak", scope=scope)
            extra = topo.entity(f"leak extra {scope}", scope=scope)
            for node in (memory[scope], entity[scope], extra):
                w.scope_of[node] = scope
            w.memories.add(memory[scope])
            w.named.add(entity[scope])
            for node in (memory[scope], entity[scope]):
                topo.ok("set_embedding", {"id": node, "model": "leak", "vector": [1, 0.5]})
                w.embedded.add(node)
            w.edges[topo.link(memory[scope], entity[scope], "about", scope=scope)] = (
                memory[scope],
                entity[scope],
                scope,
            )
            w.edges[topo.link(entity[scope], extra, "has", scope=scope)] = (entity[scope], extra, scope)
        # Edges whose own scope differs from their endpoints' (allowed: one endpoint is shared).
        for src, dst, scope in (
            (entity[SCOPE_A], entity[SHARED], SCOPE_A),
            (entity[SCOPE_A], entity[SHARED], SHARED),
            (entity[SCOPE_B], entity[SHARED], SCOPE_B),
            (entity[SCOPE_B], entity[SHARED], SHARED),
            (entity[SHARED], memory[SCOPE_A], SCOPE_B),
            (memory[SHARED], entity[SHARED], SCOPE_A),
        ):
            w.edges[topo.link(src, dst, "cross", scope=scope)] = (src, dst, scope)
        yield w


READ_SETS: list[tuple[str, dict[str, Any], set[str]]] = [
    ("default", {}, {SCOPE_A, SHARED}),
    ("scope shared", {"scope": "shared"}, {SHARED}),
    ("scope A", {"scope": SCOPE_A}, {SCOPE_A}),
    ("scope B lower-case", {"scope": SCOPE_B.lower()}, {SCOPE_B}),
    ("scopes shared", {"scopes": ["SHARED"]}, {SHARED}),
    ("scopes A", {"scopes": [SCOPE_A]}, {SCOPE_A}),
    ("scopes B", {"scopes": [SCOPE_B]}, {SCOPE_B}),
    ("scopes A+shared", {"scopes": [SCOPE_A, "shared"]}, {SCOPE_A, SHARED}),
    ("scopes B+shared", {"scopes": ["shared", SCOPE_B]}, {SCOPE_B, SHARED}),
    ("scopes A+B", {"scopes": [SCOPE_A, SCOPE_B]}, {SCOPE_A, SCOPE_B}),
    ("scopes all", {"scopes": [SCOPE_B, SCOPE_A, "shared"]}, {SCOPE_A, SCOPE_B, SHARED}),
    ("scopes beat scope", {"scope": SCOPE_A, "scopes": [SCOPE_B]}, {SCOPE_B}),
]


@pytest.mark.parametrize(("reading", "reads"), [(r[1], r[2]) for r in READ_SETS], ids=[r[0] for r in READ_SETS])
def test_no_read_tool_returns_anything_outside_the_scope_set(
    world: World, reading: dict[str, Any], reads: set[str]
) -> None:
    topo = world.topo
    visible = {node for node, scope in world.scope_of.items() if scope in reads}

    for node, scope in world.scope_of.items():
        got = topo.node(node, **reading)
        if scope in reads:
            assert got is not None and got["scope"] == scope
        else:
            assert got is None
        stats = topo.ok("access_stats", {"id": node, **reading})
        assert stats["found"] is (scope in reads)

        walked = topo.ok("traverse", {"seed_id": node, "max_hops": 4, **reading})["subgraph"]
        assert scopes_of(walked["nodes"]) <= reads
        assert scopes_of(walked["edges"]) <= reads
        got_nodes = {n["id"] for n in walked["nodes"]}
        got_edges = {e["id"] for e in walked["edges"]}
        assert (got_nodes, got_edges) == world.expected_walk(node, reads), node
        # Every node has an edge in its own scope, so a visible seed always reaches something.
        assert bool(got_edges) is (scope in reads)
        for edge in walked["edges"]:
            assert {edge["from"], edge["to"]} <= got_nodes

    found = topo.ok("find_by_prop", {"label": "Entity", "prop": "name", "value": "leak", **reading})["nodes"]
    assert scopes_of(found) <= reads
    assert [n["id"] for n in found] == sorted(world.named & visible)

    hits = topo.ok("search_memories", {"query": "quokka sighting", "k": 50, **reading})["hits"]
    assert scopes_of(h["node"] for h in hits) <= reads
    assert {h["node"]["id"] for h in hits} == world.memories & visible

    for extra in ({}, {"candidates": sorted(world.scope_of)}):
        hits = topo.ok("search_vectors", {"model": "leak", "vector": [1, 0.5], "k": 50, **reading, **extra})["hits"]
        assert scopes_of(h["node"] for h in hits) <= reads
        assert {h["node"]["id"] for h in hits} == world.embedded & visible


def test_a_missing_seed_or_one_out_of_scope_gives_an_empty_subgraph(world: World) -> None:
    topo = world.topo
    assert topo.ok("traverse", {"seed_id": MISSING}) == {"subgraph": {"edges": [], "nodes": []}}
    [b_node] = [n for n, s in world.scope_of.items() if s == SCOPE_B and n in world.named]
    assert topo.ok("traverse", {"seed_id": b_node}) == {"subgraph": {"edges": [], "nodes": []}}


@pytest.mark.parametrize("tool", READ_TOOLS)
def test_empty_scopes_is_rejected_by_every_read_tool(world: World, tool: str) -> None:
    node = next(iter(world.embedded))
    by_tool: dict[str, dict[str, Any]] = {
        "get_node": {"id": node},
        "access_stats": {"id": node},
        "traverse": {"seed_id": node},
        "find_by_prop": {"label": "Entity", "prop": "name", "value": "leak"},
        "search_memories": {"query": "quokka"},
        "search_vectors": {"model": "leak", "vector": [1, 0.5]},
    }
    arguments = by_tool[tool]
    message = world.topo.error(tool, {**arguments, "scopes": []})
    assert "scopes" in message and "empty" in message
    assert message == SCOPES_EMPTY
    # Even with `scope` given, an empty `scopes` is refused rather than ignored.
    assert world.topo.error(tool, {**arguments, "scope": "shared", "scopes": []}) == SCOPES_EMPTY
    assert world.topo.ok("db_info")["current_seq"] > 0  # still serving


def test_db_info_reports_both_defaults(world: World) -> None:
    info = world.topo.ok("db_info")
    assert info["default_scope"] == SCOPE_A
    assert info["default_read_scopes"] == [SCOPE_A, "shared"]


def test_an_unscoped_write_lands_in_the_write_scope(world: World) -> None:
    topo = world.topo
    node = topo.memory("unscoped write lands in the project scope")
    got = topo.node(node)
    assert got is not None and got["scope"] == SCOPE_A
    assert topo.node(node, scope="shared") is None
    assert topo.node(node, scopes=["shared"]) is None
    # Write scopes are read case-insensitively and come back upper-case / lower-case "shared".
    assert topo.node(topo.entity("written to SHARED", scope="SHARED"), scope="shared") is not None
    lower = topo.node(topo.entity("written to a lower-case ULID", scope=SCOPE_B.lower()), scope=SCOPE_B)
    assert lower is not None and lower["scope"] == SCOPE_B


def test_scopes_beats_scope_beats_the_default(world: World) -> None:
    topo = world.topo
    node = topo.entity("precedence probe", scope=SCOPE_B)
    assert topo.node(node) is None  # default: A + shared
    assert topo.node(node, scope=SCOPE_B) is not None
    assert topo.node(node, scope=SCOPE_B, scopes=[SCOPE_A]) is None
    assert topo.node(node, scope=SCOPE_A, scopes=[SCOPE_B]) is not None
    assert topo.node(node, scope=None, scopes=None) is None  # null means omitted


def test_an_edge_written_to_shared_is_traversed_by_a_reader_of_shared(world: World) -> None:
    topo = world.topo
    left = topo.entity("shared edge left", scope="shared")
    right = topo.entity("shared edge right", scope="shared")
    in_shared = topo.link(left, right, "knows", scope="shared")
    in_default = topo.link(left, right, "likes")  # lands in the write scope, A
    assert topo.subgraph(left, scopes=["shared"]) == ({left, right}, {in_shared})
    assert topo.subgraph(left) == ({left, right}, {in_shared, in_default})
    assert topo.subgraph(left, scope=SCOPE_A) == (set(), set())


def test_create_memory_with_scopes_is_refused_and_writes_nothing(world: World) -> None:
    topo = world.topo
    before = topo.seq()
    message = topo.arg_error("create_memory", {"content": "never stored wombat", "scopes": ["shared"]})
    assert message == "unknown field `scopes`, expected one of `content`, `props`, `scope`"
    assert topo.seq() == before
    assert topo.found_ids("search_memories", {"query": "wombat", "scopes": ["shared", SCOPE_A, SCOPE_B]}) == []


def test_get_changes_is_off_by_default(world: World) -> None:
    message = world.topo.error("get_changes", {"since_seq": 0})
    assert message == CHANGES_DISABLED
    assert "--allow-unscoped-changes" in message


# -- a project-only default read set -----------------------------------------------------------


@pytest.fixture(scope="module")
def project_only(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Topo, dict[str, str]]]:
    db = tmp_path_factory.mktemp("topodb-project") / "agent.db"
    with Topo.in_process(db, "--scope", SCOPE_A) as topo:
        memory = topo.memory("platypus notes kept in shared", scope="shared")
        entity = topo.entity("platypus", scope="shared")
        topo.link(memory, entity, "about", scope="shared")
        topo.ok("set_embedding", {"id": memory, "model": "p", "vector": [0.5, 0.5]})
        yield topo, {"memory": memory, "entity": entity}


def _reads(ids: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("get_node", {"id": ids["memory"]}),
        ("access_stats", {"id": ids["memory"]}),
        ("find_by_prop", {"label": "Entity", "prop": "name", "value": "platypus"}),
        ("search_memories", {"query": "platypus"}),
        ("traverse", {"seed_id": ids["memory"]}),
        ("search_vectors", {"model": "p", "vector": [0.5, 0.5]}),
    ]


EMPTY_RESULT = {
    "get_node": {"found": False},
    "access_stats": {"found": False},
    "find_by_prop": {"nodes": []},
    "search_memories": {"hits": []},
    "traverse": {"subgraph": {"edges": [], "nodes": []}},
    "search_vectors": {"hits": []},
}


def test_with_a_project_only_default_reads_see_shared_only_when_asked(
    project_only: tuple[Topo, dict[str, str]],
) -> None:
    topo, ids = project_only
    info = topo.ok("db_info")
    assert (info["default_scope"], info["default_read_scopes"]) == (SCOPE_A, [SCOPE_A])
    for tool, arguments in _reads(ids):
        assert topo.ok(tool, arguments) == EMPTY_RESULT[tool], tool
    for tool, arguments in _reads(ids):
        value = topo.ok(tool, {**arguments, "scopes": ["shared"]})
        assert value != EMPTY_RESULT[tool], tool
    graph = topo.ok("traverse", {"seed_id": ids["memory"], "scopes": ["shared"]})["subgraph"]
    assert {n["id"] for n in graph["nodes"]} == {ids["memory"], ids["entity"]} and len(graph["edges"]) == 1
