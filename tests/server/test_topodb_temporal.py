"""traverse over time-aware edges, as topodb-mcp 0.0.4 walks them.

An edge is followed when `valid_from <= t < valid_to` (valid_to open when the edge was
never closed), its type passes the filter and its scope is read. `t` is now, or
mnemodb's `as_of`. Times here are explicit milliseconds far from now, so no result
depends on how long the test takes.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from topodb_support import DAY_MS, Topo, now_ms, wait_past

pytestmark = pytest.mark.inprocess


@pytest.fixture(scope="module")
def topo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Topo]:
    db = tmp_path_factory.mktemp("topodb-temporal") / "agent.db"
    with Topo.in_process(db) as server:
        yield server


def test_edges_valid_now_are_followed_others_not(topo: Topo) -> None:
    seed = topo.entity("temporal seed")
    ends = {name: topo.entity(f"temporal {name}") for name in ("open", "future", "closed", "closing", "now")}
    now = now_ms()
    past, future = now - 30 * DAY_MS, now + 30 * DAY_MS
    open_edge = topo.link(seed, ends["open"], "r", valid_from=past)
    topo.link(seed, ends["future"], "r", valid_from=future)
    closed = topo.link(seed, ends["closed"], "r", valid_from=past)
    closing = topo.link(seed, ends["closing"], "r", valid_from=past)
    default = topo.link(seed, ends["now"], "r")  # valid from its commit time
    topo.ok("close_edge", {"id": closed, "valid_to": past + DAY_MS})
    topo.ok("close_edge", {"id": closing, "valid_to": future})  # closed, but only from a future time

    nodes, edges = topo.subgraph(seed, max_hops=1)
    assert edges == {open_edge, closing, default}
    assert nodes == {seed, ends["open"], ends["closing"], ends["now"]}


def test_valid_from_is_inclusive_and_valid_to_exclusive(topo: Topo) -> None:
    seed, other = topo.entity("boundary seed"), topo.entity("boundary other")
    start = now_ms() + 10 * DAY_MS
    end = start + DAY_MS
    edge = topo.link(seed, other, "window", valid_from=start)
    topo.ok("close_edge", {"id": edge, "valid_to": end})
    followed = {
        at: topo.subgraph(seed, max_hops=1, as_of=at)[1] == {edge} for at in (start - 1, start, end - 1, end, end + 1)
    }
    assert followed == {start - 1: False, start: True, end - 1: True, end: False, end + 1: False}


def test_closing_with_a_time_before_valid_from_is_accepted(topo: Topo) -> None:
    seed, other = topo.entity("odd close seed"), topo.entity("odd close other")
    edge = topo.link(seed, other, "odd", valid_from=now_ms() - DAY_MS)
    assert "seq" in topo.ok("close_edge", {"id": edge, "valid_to": 1000})
    assert topo.subgraph(seed) == ({seed}, set())


def test_traverse_as_of_before_closing_still_follows_the_edge(topo: Topo) -> None:
    seed, other = topo.entity("as_of walk seed"), topo.entity("as_of walk other")
    edge = topo.link(seed, other, "was")
    [opened] = topo.ok("traverse", {"seed_id": seed, "max_hops": 1})["subgraph"]["edges"]
    assert opened["valid_to"] is None
    wait_past(opened["valid_from"])
    topo.ok("close_edge", {"id": edge})  # closes at its commit time, after valid_from

    assert topo.subgraph(seed) == ({seed}, set())
    graph = topo.ok("traverse", {"seed_id": seed, "as_of": opened["valid_from"]})["subgraph"]
    assert {n["id"] for n in graph["nodes"]} == {seed, other}
    [then] = graph["edges"]
    assert then["id"] == edge and then["valid_from"] == opened["valid_from"]
    assert isinstance(then["valid_to"], int) and then["valid_to"] > opened["valid_from"]
    # Before the nodes existed there was nothing to walk from.
    assert topo.ok("traverse", {"seed_id": seed, "as_of": opened["valid_from"] - DAY_MS}) == {
        "subgraph": {"edges": [], "nodes": []}
    }


@pytest.fixture(scope="module")
def chain(topo: Topo) -> dict[str, str]:
    """d -r-> a -r-> b -s-> c -r-> e, plus a <-loop-> b both ways."""
    names = {n: topo.entity(f"chain {n}") for n in "abcde"}
    a, b, c, d, e = (names[n] for n in "abcde")
    edges = {
        "ab": topo.link(a, b, "r"),
        "bc": topo.link(b, c, "s"),
        "da": topo.link(d, a, "r"),
        "ce": topo.link(c, e, "r"),
        "ba": topo.link(b, a, "loop"),
    }
    return {**names, **edges}


def test_direction(topo: Topo, chain: dict[str, str]) -> None:
    a, b, d = chain["a"], chain["b"], chain["d"]
    assert topo.subgraph(a, max_hops=1, direction="out") == ({a, b}, {chain["ab"]})
    assert topo.subgraph(a, max_hops=1, direction="in") == ({a, b, d}, {chain["da"], chain["ba"]})
    assert topo.subgraph(a, max_hops=1, direction="both") == ({a, b, d}, {chain["ab"], chain["da"], chain["ba"]})
    assert topo.subgraph(a, max_hops=1) == topo.subgraph(a, max_hops=1, direction="both")  # the default
    assert topo.subgraph(d, max_hops=1, direction="in") == ({d}, set())


def test_max_hops_defaults_to_two_and_caps_the_walk(topo: Topo, chain: dict[str, str]) -> None:
    a, b, c, d, e = (chain[n] for n in "abcde")
    assert topo.subgraph(d, direction="out")[0] == {d, a, b}
    assert topo.subgraph(d, direction="out", max_hops=3)[0] == {d, a, b, c}
    assert topo.subgraph(d, direction="out", max_hops=4)[0] == {d, a, b, c, e}
    nodes, edges = topo.subgraph(d, max_hops=4)
    assert nodes == {a, b, c, d, e}
    assert edges == {chain[k] for k in ("ab", "bc", "da", "ce", "ba")}  # each edge once


def test_edge_type_filter(topo: Topo, chain: dict[str, str]) -> None:
    a, b, c, d = (chain[n] for n in "abcd")
    assert topo.subgraph(a, max_hops=4, edge_types=["r"]) == ({a, b, d}, {chain["ab"], chain["da"]})
    assert topo.subgraph(b, max_hops=1, edge_types=["s"]) == ({b, c}, {chain["bc"]})
    assert topo.subgraph(a, max_hops=1, edge_types=["s", "loop"]) == ({a, b}, {chain["ba"]})
    assert topo.subgraph(a, max_hops=1, edge_types=["R"]) == ({a}, set())  # exact, case-sensitive
    # An empty filter admits no edge: the seed alone.
    graph = topo.ok("traverse", {"seed_id": a, "edge_types": []})["subgraph"]
    assert graph["edges"] == [] and [n["id"] for n in graph["nodes"]] == [a]


def test_the_seed_comes_first(topo: Topo, chain: dict[str, str]) -> None:
    # mnemodb returns nodes breadth-first, seed first (upstream's order was unspecified).
    nodes = topo.ok("traverse", {"seed_id": chain["c"], "max_hops": 4})["subgraph"]["nodes"]
    assert nodes[0]["id"] == chain["c"]
