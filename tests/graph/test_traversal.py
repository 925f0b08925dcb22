"""Breadth-first expansion (`mnemodb.graph.traversal.expand`) over a real SQLite store:
hop depths, direction, time, edge types and scopes, admission and the node limit, and,
on random graphs, agreement with a plain breadth-first search."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemodb.engine import Engine
from mnemodb.engine.properties import CloseEdge, CreateNode, Link
from mnemodb.graph.traversal import Expansion, expand
from mnemodb.model.records import Direction, Edge
from mnemodb.store.sqlite import SqliteStore
from support import SCOPE_A, Clock


@dataclass
class Graph:
    """Nodes n0, n1, ... (pks in creation order) and edges named by (src, dst, type)."""

    engine: Engine
    pks: list[int]
    edge_pks: list[int]
    """The edges' pks, in the order of the links they were made from."""

    def expand(
        self,
        seeds: Sequence[int],
        max_depth: int,
        *,
        direction: Direction = "both",
        valid_at: int | None = None,
        edge_scopes: Sequence[str] | None = None,
        edge_types: Sequence[str] | None = None,
        admit: Callable[[Iterable[int]], set[int]] | None = None,
        limit: int | None = None,
    ) -> Expansion:
        """`expand` from the nodes numbered `seeds`."""
        with self.engine.store.read() as tx:
            return expand(
                tx,
                [self.pks[s] for s in seeds],
                max_depth,
                direction=direction,
                valid_at=valid_at,
                edge_scopes=edge_scopes,
                edge_types=edge_types,
                admit=admit,
                limit=limit,
            )

    def depth(self, reached: Expansion) -> dict[int, int]:
        """Depth by node number, in the order reached."""
        number = {pk: n for n, pk in enumerate(self.pks)}
        return {number[pk]: d for pk, d in reached.depth.items()}

    def edges(self, reached: Expansion) -> list[tuple[int, int, str]]:
        """The edges followed, by (src, dst, type) node numbers, in the order followed."""
        number = {pk: n for n, pk in enumerate(self.pks)}
        return [(number[e.src_pk], number[e.dst_pk], e.type) for e in reached.edges]


def build(
    engine: Engine, nodes: int, links: Iterable[tuple[int, int, str]], *, scopes: dict[int, str] | None = None
) -> Graph:
    """`nodes` nodes and the edges `links` (edge i in scope `scopes[i]`, shared otherwise)."""
    links = list(links)
    commands: list[CreateNode | Link] = [CreateNode("Thing", {"name": f"n{n}"}) for n in range(nodes)]
    ids, _ = engine.nodes.submit(commands)
    node_ids = [i for i in ids if i is not None]
    edge_ids: list[str | None] = []
    if links:
        edge_ids, _ = engine.nodes.submit(
            [
                Link(node_ids[src], node_ids[dst], edge_type, scope=(scopes or {}).get(i))
                for i, (src, dst, edge_type) in enumerate(links)
            ]
        )
    with engine.store.read() as tx:
        pks = [node.pk for node in (tx.node_by_id(i) for i in node_ids) if node is not None]
        edges = tx.edges_of(pks, "both")
    by_id = {e.id: e.pk for e in edges}
    return Graph(engine, pks, [by_id[str(edge_id)] for edge_id in edge_ids])


@pytest.fixture
def clock() -> Clock:
    return Clock(tick=1)


@pytest.fixture
def eng(clock: Clock) -> Iterator[Engine]:
    with Engine(SqliteStore(":memory:"), clock=clock) as opened:
        yield opened


@pytest.fixture
def chain(eng: Engine) -> Graph:
    """n0 -next-> n1 -next-> n2 -next-> n3, n0 -other-> n4; n5 alone."""
    return build(eng, 6, [(0, 1, "next"), (1, 2, "next"), (2, 3, "next"), (0, 4, "other")])


def test_depth_counts_hops_from_the_seed(chain: Graph) -> None:
    reached = chain.expand([0], 2, direction="out")
    assert chain.depth(reached) == {0: 0, 4: 1, 1: 1, 2: 2}
    assert chain.edges(reached) == [(0, 4, "other"), (0, 1, "next"), (1, 2, "next")]


def test_within_one_hop_newer_nodes_come_first(chain: Graph) -> None:
    assert list(chain.depth(chain.expand([0], 1, direction="out"))) == [0, 4, 1]
    assert list(chain.depth(chain.expand([1], 1))) == [1, 2, 0]


def test_direction(chain: Graph) -> None:
    assert chain.depth(chain.expand([3], 3, direction="in")) == {3: 0, 2: 1, 1: 2, 0: 3}
    assert chain.depth(chain.expand([3], 3, direction="out")) == {3: 0}
    assert chain.depth(chain.expand([1], 2, direction="both")) == {1: 0, 2: 1, 0: 1, 3: 2, 4: 2}


def test_no_hops_and_lone_nodes(chain: Graph) -> None:
    none = chain.expand([0, 5], 0)
    assert chain.depth(none) == {0: 0, 5: 0} and none.edges == []
    alone = chain.expand([5], 4)
    assert chain.depth(alone) == {5: 0} and alone.edges == []
    assert chain.expand([], 3) == Expansion({}, [])


def test_a_step_reads_each_hop_s_edges_in_place_of_edges_of(chain: Graph) -> None:
    """Given `step`, each hop's edges are what it returns for that hop's frontier."""
    frontiers: list[list[int]] = []
    number = {pk: n for n, pk in enumerate(chain.pks)}
    with chain.engine.store.read() as tx:

        def step(frontier: list[int]) -> list[Edge]:
            frontiers.append(sorted(number[pk] for pk in frontier))
            # Only the edges of type "next": as if the walk were asked for that type.
            return [e for e in tx.edges_of(frontier, "out") if e.type == "next"]

        reached = expand(tx, [chain.pks[0]], 3, direction="out", step=step)
    assert frontiers == [[0], [1], [2]]
    assert chain.depth(reached) == {0: 0, 1: 1, 2: 2, 3: 3}
    assert chain.edges(reached) == [(0, 1, "next"), (1, 2, "next"), (2, 3, "next")]
    assert [e.type for e in reached.read] == ["next", "next", "next"]  # what the step read, and nothing else


def test_seeds_are_counted_once_and_each_node_at_its_nearest_seed(chain: Graph) -> None:
    reached = chain.expand([0, 0, 3], 1)
    assert chain.depth(reached) == {0: 0, 3: 0, 4: 1, 2: 1, 1: 1}
    # n1 is next to both seeds' neighbours; each edge is listed once.
    assert sorted(chain.edges(reached)) == [(0, 1, "next"), (0, 4, "other"), (2, 3, "next")]


def test_cycles_and_self_loops_end(eng: Engine) -> None:
    graph = build(eng, 3, [(0, 1, "r"), (1, 2, "r"), (2, 0, "r"), (1, 1, "self")])
    reached = graph.expand([0], 10, direction="out")
    assert graph.depth(reached) == {0: 0, 1: 1, 2: 2}
    # Every edge out of a reached node is followed once, the loop and the one back to the seed too.
    assert sorted(graph.edges(reached)) == [(0, 1, "r"), (1, 1, "self"), (1, 2, "r"), (2, 0, "r")]


def test_edge_types(chain: Graph) -> None:
    reached = chain.expand([0], 3, direction="out", edge_types=["other"])
    assert chain.depth(reached) == {0: 0, 4: 1}
    assert chain.edges(reached) == [(0, 4, "other")]
    assert chain.depth(chain.expand([0], 3, edge_types=["missing"])) == {0: 0}


def test_edge_scopes(eng: Engine) -> None:
    graph = build(eng, 3, [(0, 1, "r"), (1, 2, "r")], scopes={1: SCOPE_A})
    assert graph.depth(graph.expand([0], 2, edge_scopes=["shared"])) == {0: 0, 1: 1}
    assert graph.depth(graph.expand([0], 2, edge_scopes=["shared", SCOPE_A])) == {0: 0, 1: 1, 2: 2}
    assert graph.depth(graph.expand([0], 2, edge_scopes=[SCOPE_A])) == {0: 0}


def test_valid_at_follows_only_edges_true_at_that_time(eng: Engine, clock: Clock) -> None:
    graph = build(eng, 3, [(0, 1, "r"), (1, 2, "r")])
    with eng.store.read() as tx:
        [edge] = tx.edges_of([graph.pks[1]], "out")
    opened = edge.valid_from
    closed_at = clock.now + 100
    eng.nodes.submit([CloseEdge(edge.id, valid_to=closed_at)])
    assert graph.depth(graph.expand([0], 2, valid_at=opened)) == {0: 0, 1: 1, 2: 2}  # from is inclusive
    assert graph.depth(graph.expand([0], 2, valid_at=closed_at - 1)) == {0: 0, 1: 1, 2: 2}
    assert graph.depth(graph.expand([0], 2, valid_at=closed_at)) == {0: 0, 1: 1}  # to is exclusive
    assert graph.depth(graph.expand([0], 2, valid_at=opened - 1)) == {0: 0}  # before either edge
    assert graph.depth(graph.expand([0], 2)) == {0: 0, 1: 1, 2: 2}  # no time: closed edges too


def test_admit_keeps_nodes_out_and_walks_no_further_through_them(chain: Graph) -> None:
    refused = chain.pks[1]
    asked: list[set[int]] = []

    def admit(pks: Iterable[int]) -> set[int]:
        candidates = set(pks)
        asked.append(candidates)
        return candidates - {refused}

    reached = chain.expand([0], 3, direction="out", admit=admit)
    assert chain.depth(reached) == {0: 0, 4: 1}
    assert chain.edges(reached) == [(0, 4, "other")]  # the edge to the refused node is not followed
    # One question per hop while there is a frontier: n4 has no edges out, so the second is empty.
    assert asked == [{chain.pks[1], chain.pks[4]}, set()]


def test_limit_keeps_the_nearest_and_then_the_newest(eng: Engine) -> None:
    # A hub with five spokes, one of which leads further.
    graph = build(eng, 7, [(0, 1, "s"), (0, 2, "s"), (0, 3, "s"), (0, 4, "s"), (0, 5, "s"), (1, 6, "s")])
    assert graph.depth(graph.expand([0], 2, limit=3)) == {0: 0, 5: 1, 4: 1}
    assert graph.depth(graph.expand([0], 2, limit=6)) == {0: 0, 5: 1, 4: 1, 3: 1, 2: 1, 1: 1}
    assert graph.depth(graph.expand([0], 2, limit=7)) == {0: 0, 5: 1, 4: 1, 3: 1, 2: 1, 1: 1, 6: 2}
    assert graph.depth(graph.expand([0, 1, 2], 2, limit=2)) == {0: 0, 1: 0}  # seeds too


def test_with_a_limit_every_followed_edge_joins_two_reached_nodes(eng: Engine) -> None:
    graph = build(eng, 4, [(0, 1, "s"), (0, 2, "s"), (0, 3, "s")])
    reached = graph.expand([0], 1, limit=2)
    assert graph.depth(reached) == {0: 0, 3: 1}
    assert graph.edges(reached) == [(0, 3, "s")]


# -- against a plain breadth-first search ---------------------------------------------------------------------

_links = st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7), st.sampled_from(["a", "b"])), max_size=16)


def _reference(
    links: Sequence[tuple[int, int, str]], seeds: Sequence[int], max_depth: int, direction: Direction
) -> tuple[dict[int, int], set[int]]:
    """Depth of every node within reach, and the indexes of the edges leaving a node closer
    than `max_depth` (in `direction`)."""
    near: dict[int, set[int]] = {}
    for src, dst, _ in links:
        if direction in ("out", "both"):
            near.setdefault(src, set()).add(dst)
        if direction in ("in", "both"):
            near.setdefault(dst, set()).add(src)
    depth = dict.fromkeys(seeds, 0)
    queue = deque(depth)
    while queue:
        node = queue.popleft()
        if depth[node] == max_depth:
            continue
        for other in near.get(node, ()):
            if other not in depth:
                depth[other] = depth[node] + 1
                queue.append(other)
    inner = {n for n, d in depth.items() if d < max_depth}
    followed = {
        i
        for i, (src, dst, _) in enumerate(links)
        if (direction in ("out", "both") and src in inner) or (direction in ("in", "both") and dst in inner)
    }
    return depth, followed


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    links=_links,
    seeds=st.lists(st.integers(0, 7), min_size=1, max_size=3, unique=True),
    max_depth=st.integers(0, 4),
    direction=st.sampled_from(["out", "in", "both"]),
)
def test_agrees_with_a_plain_breadth_first_search(
    links: list[tuple[int, int, str]], seeds: list[int], max_depth: int, direction: Direction
) -> None:
    with Engine(SqliteStore(":memory:"), clock=Clock(tick=1)) as engine:
        graph = build(engine, 8, links)
        reached = graph.expand(seeds, max_depth, direction=direction)
        depth, followed = _reference(links, seeds, max_depth, direction)
        assert graph.depth(reached) == depth
        assert list(graph.depth(reached).values()) == sorted(depth.values())  # nearer first
        assert {e.pk for e in reached.edges} == {graph.edge_pks[i] for i in followed}
        assert len(reached.edges) == len({e.pk for e in reached.edges})
