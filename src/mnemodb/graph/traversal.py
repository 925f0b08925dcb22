"""Breadth-first expansion over edges, one indexed lookup per hop.

Traversal runs hop by hop from Python rather than as a recursive SQL query: each hop is
two index range scans (edges by source, edges by target), which keeps it fast and
predictable on any backend (a recursive CTE on SQLite 3.40 turned into a full edge-table
scan per step once statistics existed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from mnemodb.model.records import Direction, Edge
from mnemodb.model.value import Value
from mnemodb.store.base import ReadTx


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Expansion(Value):
    depth: dict[int, int]
    """Node pk -> hops from the nearest seed, in the order nodes were reached."""
    edges: list[Edge]
    """Every edge followed, in the order it was first followed: each joins two reached nodes."""
    expanded: set[int] = field(default_factory=set)
    """The nodes whose edges (in the direction walked) were read: every edge of these
    within the walk's filters is in `read`."""
    read: list[Edge] = field(default_factory=list)
    """Every edge read, followed or not (an edge to a node not admitted, say)."""


def expand(
    tx: ReadTx,
    seeds: Sequence[int],
    max_depth: int,
    *,
    direction: Direction = "both",
    valid_at: int | None = None,
    edge_scopes: Sequence[str] | None = None,
    edge_types: Sequence[str] | None = None,
    admit: Callable[[Iterable[int]], set[int]] | None = None,
    limit: int | None = None,
    step: Callable[[list[int]], list[Edge]] | None = None,
) -> Expansion:
    """Nodes within `max_depth` hops of `seeds`.

    `admit` filters which reached nodes may be entered (scope, label); `limit` caps the
    number of nodes, nearer nodes first and newer before older within one hop. `step`, when
    given, reads a hop's edges instead of `edges_of` (the same edges, under the same
    filters): a caller that reads what `admit` needs with them.
    """
    depth: dict[int, int] = {}
    for pk in seeds:
        if limit is not None and len(depth) >= limit:
            break
        depth.setdefault(pk, 0)
    followed: dict[int, Edge] = {}
    expanded: set[int] = set()
    read: list[Edge] = []
    frontier = list(depth)
    out, into = direction != "in", direction != "out"
    for hop in range(1, max_depth + 1):
        if not frontier or (limit is not None and len(depth) >= limit):
            break
        if step is not None:
            edges = step(frontier)
        else:
            edges = tx.edges_of(frontier, direction, valid_at=valid_at, scopes=edge_scopes, edge_types=edge_types)
        expanded.update(frontier)
        read += edges
        frontier_set = set(frontier)
        reached: dict[int, list[Edge]] = {}
        for edge in edges:
            if out and edge.src_pk in frontier_set:
                reached.setdefault(edge.dst_pk, []).append(edge)
            if into and edge.dst_pk in frontier_set:
                reached.setdefault(edge.src_pk, []).append(edge)
        allowed = admit(reached) if admit is not None else reached
        next_frontier = []
        for pk in sorted(allowed, reverse=True):
            if pk not in depth:
                if limit is not None and len(depth) >= limit:
                    continue  # left out: so are the edges that lead to it
                depth[pk] = hop
                next_frontier.append(pk)
            for edge in reached[pk]:
                followed.setdefault(edge.pk, edge)
        frontier = next_frontier
    return Expansion(depth, list(followed.values()), expanded, read)
