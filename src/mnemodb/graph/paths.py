"""Shortest paths, one search for every face that asks for one.

The search grows from both ends, one hop at a time, always on the side whose frontier is
smaller, and stops when the two sides meet: on a graph where a node has d links, a path
of length L costs about 2·d^(L/2) reads instead of d^L. The caller says what a hop is
(`links`): which links touch a set of nodes, already filtered to what it may follow (its
scopes, validity, types) and to ends it may see. Links are followed either way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

__all__ = ["shortest_path"]

# (link id, one end, the other end)
Link = tuple[int, int, int]


def shortest_path(
    start: int, goal: int, links: Callable[[Sequence[int]], Iterable[Link]], *, max_hops: int
) -> tuple[list[int], list[int]] | None:
    """A shortest chain from `start` to `goal` at most `max_hops` links long: its nodes
    (`start` first) and its links in order, or None when there is none."""
    if start == goal:
        return [start], []
    # node -> (the node before it on its side, the link between them), per side.
    sides: tuple[dict[int, tuple[int, int] | None], dict[int, tuple[int, int] | None]] = (
        {start: None},
        {goal: None},
    )
    frontiers: list[list[int]] = [[start], [goal]]
    meeting: int | None = None
    hops = 0
    while hops < max_hops and frontiers[0] and frontiers[1] and meeting is None:
        side = 0 if len(frontiers[0]) <= len(frontiers[1]) else 1
        seen, other = sides[side], sides[1 - side]
        edge_of = set(frontiers[side])
        grown: list[int] = []
        for link, one, two in links(frontiers[side]):
            for here, there in ((one, two), (two, one)):
                if here not in edge_of or there in seen:
                    continue
                seen[there] = (here, link)
                grown.append(there)
                if there in other and meeting is None:
                    meeting = there
        frontiers[side] = grown
        hops += 1
    if meeting is None:
        return None
    chain, chain_links = _walk_back(sides[0], meeting)
    back_chain, back_links = _walk_back(sides[1], meeting)
    return [*reversed(chain), *back_chain[1:]], [*reversed(chain_links), *back_links]


def _walk_back(parents: Mapping[int, tuple[int, int] | None], node: int) -> tuple[list[int], list[int]]:
    """From `node` back to its side's root: the nodes (`node` first) and the links."""
    chain, links = [node], []
    step = parents[node]
    while step is not None:
        previous, link = step
        links.append(link)
        chain.append(previous)
        step = parents[previous]
    return chain, links
