"""The one shortest-path search, against a plain breadth-first search on random graphs:
the same length (or both none), and a chain of real links from start to goal."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemodb.graph.paths import shortest_path

_graphs = st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11)), max_size=30)


def _distance(links: list[tuple[int, int, int]], start: int, goal: int) -> int | None:
    near: dict[int, set[int]] = {}
    for _, a, b in links:
        near.setdefault(a, set()).add(b)
        near.setdefault(b, set()).add(a)
    seen, queue = {start: 0}, deque([start])
    while queue:
        node = queue.popleft()
        for other in near.get(node, ()):
            if other not in seen:
                seen[other] = seen[node] + 1
                queue.append(other)
    return seen.get(goal)


@settings(max_examples=400, deadline=None)
@given(pairs=_graphs, start=st.integers(0, 11), goal=st.integers(0, 11), max_hops=st.integers(1, 6))
def test_a_shortest_chain_of_real_links_or_none(
    pairs: list[tuple[int, int]], start: int, goal: int, max_hops: int
) -> None:
    links = [(100 + i, a, b) for i, (a, b) in enumerate(pairs)]

    def touching(frontier: Sequence[int]) -> list[tuple[int, int, int]]:
        here = set(frontier)
        return [link for link in links if link[1] in here or link[2] in here]

    found = shortest_path(start, goal, touching, max_hops=max_hops)
    distance = _distance(links, start, goal)
    if distance is None or distance > max_hops:
        assert found is None
        return
    assert found is not None
    nodes, used = found
    assert nodes[0] == start and nodes[-1] == goal
    assert len(used) == distance == len(nodes) - 1
    by_id = {link_id: {a, b} for link_id, a, b in links}
    for (here, there), link_id in zip(pairwise(nodes), used, strict=True):
        assert by_id[link_id] == {here, there}
