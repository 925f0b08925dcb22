"""The inspector's Graph page: the neighbourhood of one item, drawn in the browser.

What is drawn is an ego-subgraph, never the whole graph: the items within `hops` (1 to 3)
of a centre, at most `MAX_NODES` of them, found hop by hop through the engine's
`items.edges_of` under the request's grant, so another tenant's items and relations never
appear, not even as counts. A hub does not flood the page: each item shows at most
`FOLD_OVER` neighbours that are not already drawn, and the rest fold into one "+N more"
node (the engine's `explore` has no such fan-out limit: the first hub it meets would
spend the whole cap).

Time: relations that ended (their `valid_to` at or before the time shown, now or `as_of`)
are drawn as ended; with `as_of`, relations not yet valid then and items not yet created
are left out, and items are shown as they were then.

Filters: `types` keeps items of these entity or memory types, `relations` relations of
these types; what they leave out is neither drawn nor walked through, nor counted (the
centre is always drawn). `q` marks the drawn items its words find (`hit`), as the
engine's search finds them in the reader's scopes.

Node positions are computed here, a radial tree by hop distance from the centre: the
browser only places them (cytoscape's `preset` layout), which takes milliseconds at any
size the cap allows.

Routes: GET /graph (the page), /graph/data (JSON for cytoscape), /graph/panel/{ref} (the
side panel's HTML for one item).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from mnemodb.engine.items import Item
from mnemodb.model.errors import (
    EngineError,
    InvalidArgument,
    NotFound,
)
from mnemodb.model.records import Edge, Entity, Memory
from mnemodb.model.times import iso_utc
from mnemodb.model.value import Value
from mnemodb.server.inspector.web import (
    BASE,
    Page,
    call,
    engine_of,
    query_int,
    query_time,
    readable_scopes,
    status_of,
)

if TYPE_CHECKING:
    from mnemodb.engine import Engine

__all__ = ["FOLD_OVER", "MAX_NODES", "routes"]

MAX_NODES = 300
"""At most this many nodes are drawn, folded ones included."""
MAX_HOPS = 3
DEFAULT_HOPS = 2
FOLD_OVER = 25
"""An item shows at most this many neighbours not drawn yet; the rest fold into one node."""
LABEL_CHARS = 40
PANEL_RELATIONS = 8
PANEL_OBSERVATIONS = 6
PANEL_TEXT_CHARS = 700
# Start suggestions: the most connected items among this many newest relations.
SUGGEST_FROM = 500
SUGGESTIONS = 8
LAYOUTS = ("radial", "concentric")
# A filter names at most this many types, each at most this long.
MAX_FILTER_VALUES = 50
MAX_FILTER_CHARS = 200
# Radial layout: space between rings and between neighbours on a ring, in pixels.
RING_GAP = 160.0
NODE_GAP = 42.0


# -- parameters -------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False, repr=False)
class GraphQuery(Value):
    center: str | None
    hops: int
    text: str | None
    as_of: int | None
    types: tuple[str, ...]
    relations: tuple[str, ...]
    limit: int

    def params(self, center: str | None = None, **overrides: str | None) -> dict[str, str]:
        """The query as URL parameters (blanks left out), with another centre or values."""
        out = {
            "center": center or self.center or "",
            "hops": str(self.hops),
            "q": self.text or "",
            "as_of": iso_utc(self.as_of) if self.as_of is not None else "",
            "types": ",".join(self.types),
            "relations": ",".join(self.relations),
            "limit": str(self.limit) if self.limit != MAX_NODES else "",
        }
        for key, value in overrides.items():
            out[key] = value or ""
        return {k: v for k, v in out.items() if v}


def _names(request: Request, name: str) -> tuple[str, ...]:
    """A filter's values: the parameter repeated and/or comma-separated, blanks dropped."""
    values: list[str] = []
    for raw in request.query_params.getlist(name):
        values += [v.strip() for v in raw.split(",") if v.strip()]
    values = list(dict.fromkeys(values))
    if len(values) > MAX_FILTER_VALUES:
        raise InvalidArgument(f"{name} names at most {MAX_FILTER_VALUES} types, not {len(values)}")
    for value in values:
        if len(value) > MAX_FILTER_CHARS:
            raise InvalidArgument(f"{name}: a type is at most {MAX_FILTER_CHARS} characters")
    return tuple(values)


def parse_query(request: Request) -> GraphQuery:
    """The graph's parameters, or InvalidArgument saying which one is wrong and why."""
    center = request.query_params.get("center", "").strip() or None
    if center is not None and len(center) > 1000:
        raise InvalidArgument("center is at most 1000 characters: give an item id, a memory hash or an entity name")
    text = request.query_params.get("q", "").strip() or None
    if text is not None and len(text) > 1000:
        raise InvalidArgument("q is at most 1000 characters")
    hops = query_int(request, "hops", DEFAULT_HOPS, low=1, high=MAX_HOPS)
    limit = query_int(request, "limit", MAX_NODES, low=1, high=MAX_NODES)
    assert hops is not None and limit is not None
    return GraphQuery(
        center=center,
        hops=hops,
        text=text,
        as_of=query_time(request, "as_of"),
        types=_names(request, "types"),
        relations=_names(request, "relations"),
        limit=limit,
    )


# -- the ego-subgraph -------------------------------------------------------------------------


def _kind(item: Item) -> str:
    return "memory" if isinstance(item, Memory) else "entity"


def _type(item: Item) -> str:
    return item.memory_type if isinstance(item, Memory) else item.entity_type


def _short(text: str, chars: int = LABEL_CHARS) -> str:
    line = " ".join(text.split())
    return line if len(line) <= chars else line[: chars - 1].rstrip() + "…"


def label_of(item: Item) -> str:
    if isinstance(item, Entity):
        return _short(item.name)
    return _short(item.summary or item.content)


@dataclass
class _Walk:
    """What the walk found: the items drawn, in the order reached, with how each was
    reached, and every relation seen from them that the filters and the time keep."""

    items: dict[int, Item]
    depth: dict[int, int]
    parent: dict[int, int | None]
    edges: dict[int, Edge]
    neighbours: dict[int, set[int]]
    capped: bool = False


def _walk(engine: Engine, center: Item, query: GraphQuery, reads: Sequence[str], at: int) -> _Walk:
    """Breadth first from `center`, one `edges_of` call per hop, then one more for the
    last hop's relations among themselves and beyond. Per item, the neighbours not drawn
    yet are taken best first (by a relation true at `at`, then the newest relation, then
    the newest item), at most `FOLD_OVER` of them, while the cap leaves room."""
    wanted_types = set(query.types)
    wanted_relations = set(query.relations)
    walk = _Walk({center.pk: center}, {center.pk: 0}, {center.pk: None}, {}, {})
    frontier = [center]
    for hop in range(1, query.hops + 2):
        if not frontier:
            break
        edges, ends = engine.items.edges_of(frontier, scopes=reads, include_closed=True, as_of=query.as_of)
        on_frontier = {item.pk for item in frontier}
        # For each frontier item: its neighbours and the best relation to each.
        best: dict[int, dict[int, tuple[bool, int, int]]] = {pk: {} for pk in on_frontier}
        for edge in edges:
            if wanted_relations and edge.type not in wanted_relations:
                continue
            if edge.valid_from > at:
                continue  # not yet true at the time shown
            for here, there in ((edge.src_pk, edge.dst_pk), (edge.dst_pk, edge.src_pk)):
                if here not in on_frontier:
                    continue
                other = ends.get(there)
                if other is None:
                    continue
                if wanted_types and there != center.pk and _type(other) not in wanted_types:
                    continue
                walk.edges[edge.pk] = edge
                walk.neighbours.setdefault(here, set()).add(there)
                rank = (edge.valid_to is None or edge.valid_to > at, edge.valid_from, there)
                if there not in best[here] or rank > best[here][there]:
                    best[here][there] = rank
        if hop > query.hops:
            break  # the last hop's relations are known; nothing further is drawn
        added: list[Item] = []
        for item in frontier:
            ranks = best[item.pk]
            candidates = sorted((pk for pk in ranks if pk not in walk.items), key=ranks.__getitem__, reverse=True)
            for pk in candidates[:FOLD_OVER]:
                if len(walk.items) >= query.limit:
                    walk.capped = True
                    break
                walk.items[pk] = ends[pk]
                walk.depth[pk] = hop
                walk.parent[pk] = item.pk
                added.append(ends[pk])
        frontier = added
    return walk


def _fit(walk: _Walk, query: GraphQuery) -> tuple[dict[int, int], list[int]]:
    """Each drawn item's neighbours left out, and the items that get a "+N more" node,
    nearest and biggest first: one whose neighbours within the hops were not all drawn (a
    hub, or the cap), and a hub on the last hop. Items reached last are left out, one by
    one, until the drawn items and their "+N more" nodes fit the cap: they are on the
    outer ring and lead to nothing drawn."""
    hidden = {pk: len(walk.neighbours.get(pk, set()) - walk.items.keys()) for pk in walk.items}

    def wants(pk: int) -> bool:
        return hidden[pk] > 0 and (walk.depth[pk] < query.hops or hidden[pk] > FOLD_OVER)

    folded = sum(1 for pk in walk.items if wants(pk))
    reached = {pk: i for i, pk in enumerate(walk.items)}
    last_first = sorted(walk.items, key=lambda pk: (walk.depth[pk], reached[pk]), reverse=True)
    for pk in last_first:
        if len(walk.items) + folded <= query.limit or walk.depth[pk] == 0:
            break
        folded -= wants(pk)
        del walk.items[pk], walk.depth[pk], walk.parent[pk], hidden[pk]
        for other in walk.neighbours.get(pk, set()) & walk.items.keys():
            before = wants(other)
            hidden[other] += 1
            folded += wants(other) - before
        walk.capped = True
    wanted = [pk for pk in walk.items if wants(pk)]
    wanted.sort(key=lambda pk: (walk.depth[pk], -hidden[pk]))
    return hidden, wanted


def _radial(walk: _Walk, folds: Mapping[int, int]) -> dict[int | str, tuple[float, float]]:
    """Positions: the centre in the middle, each hop on a ring around it, every item
    inside the angle its parent was given, in proportion to the leaves below it (a
    folded node is a leaf of the item it folds)."""
    children: dict[int | str, list[int | str]] = {pk: [] for pk in walk.items}
    order: list[int | str] = list(walk.items)
    depth: dict[int | str, int] = {}
    for pk, hops in walk.depth.items():
        depth[pk] = hops
    for pk in walk.items:
        parent = walk.parent[pk]
        if parent is not None:
            children[parent].append(pk)
    for pk in folds:
        fold = f"fold:{pk}"
        children[pk].append(fold)
        children[fold] = []
        depth[fold] = walk.depth[pk] + 1
        order.append(fold)
    order.sort(key=lambda k: depth[k])  # stable: the walk's order within a hop
    leaves: dict[int | str, int] = {}
    for key in reversed(order):
        leaves[key] = sum(leaves[c] for c in children[key]) or 1
    per_ring = Counter(depth.values())
    radius = {0: 0.0}
    deepest = max(per_ring)
    outer = max(per_ring[deepest] * NODE_GAP / (2 * math.pi), RING_GAP * deepest)
    for ring in range(1, deepest + 1):
        needed = per_ring[ring] * NODE_GAP / (2 * math.pi)
        radius[ring] = max(needed, radius[ring - 1] + RING_GAP, outer * ring / deepest)
    wedge: dict[int | str, tuple[float, float]] = {order[0]: (0.0, 2 * math.pi)}
    where: dict[int | str, tuple[float, float]] = {}
    for key in order:
        low, high = wedge[key]
        angle = (low + high) / 2
        r = radius[depth[key]]
        where[key] = (round(r * math.cos(angle), 1), round(r * math.sin(angle), 1))
        start = low
        total = sum(leaves[c] for c in children[key]) or 1
        for child in children[key]:
            width = (high - low) * leaves[child] / total
            wedge[child] = (start, start + width)
            start += width
    return where


def _hits(engine: Engine, text: str, ids: Sequence[str], reads: Sequence[str]) -> set[str]:
    """The drawn items that the words of `text` find (by words only: by meaning, every
    item would be some match)."""
    if not ids:
        return set()
    page = engine.items.search(text, within=list(ids), limit=len(ids), semantic=False, scopes=reads)
    return {found.item.id for found in page.found}


def _edge_json(edge: Edge, ids: Mapping[int, str], at: int) -> dict[str, Any]:
    ended = edge.valid_to is not None and edge.valid_to <= at
    title = f"{edge.type} · since {iso_utc(edge.valid_from)}"
    if edge.valid_to is not None:
        title += f" · {'ended' if ended else 'ends'} {iso_utc(edge.valid_to)}"
    return {
        "data": {
            "id": edge.id,
            "source": ids[edge.src_pk],
            "target": ids[edge.dst_pk],
            "type": edge.type,
            "valid_from": iso_utc(edge.valid_from),
            "valid_to": None if edge.valid_to is None else iso_utc(edge.valid_to),
            "title": title,
        },
        "classes": ["ended"] if ended else [],
    }


def _resolve(engine: Engine, ref: str, reads: Sequence[str], as_of: int | None) -> Item | None:
    """The item `ref` names (as it was at `as_of`: None if it did not exist yet);
    NotFound when nothing readable is named so."""
    found = engine.items.get([ref], scopes=reads, record_access=False)[0]
    if found is None:
        raise NotFound(f"nothing readable is named {ref!r}: give an item id, a memory hash or an entity name")
    if isinstance(found, Edge):
        raise InvalidArgument(f"{ref!r} is a relation: centre the graph on a memory or an entity")
    if as_of is None:
        return found
    then = engine.items.get([found.id], scopes=reads, as_of=as_of, record_access=False)[0]
    return then if isinstance(then, Memory | Entity) else None


def ego_graph(engine: Engine, query: GraphQuery) -> dict[str, Any]:
    """The data for one drawing: cytoscape elements and what the page says about them."""
    if query.center is None:
        raise InvalidArgument("center is required: give an item id, a memory hash or an entity name")
    reads = readable_scopes(engine)
    now = engine.clock()
    at = now if query.as_of is None else query.as_of
    center = _resolve(engine, query.center, reads, query.as_of)
    out: dict[str, Any] = {
        "center": None,
        "as_of": None if query.as_of is None else iso_utc(query.as_of),
        "at": iso_utc(at),
        "now": now,
        "hops": query.hops,
        "limit": query.limit,
        "nodes": [],
        "edges": [],
        "truncated": False,
        "counts": {"items": 0, "edges": 0, "folded": 0, "hits": 0},
        "oldest": None,
        "message": None,
    }
    if center is None:
        out["message"] = f"{query.center} did not exist yet at {iso_utc(at)}."
        return out
    walk = _walk(engine, center, query, reads, at)
    hidden, wanted = _fit(walk, query)
    folds = {pk: hidden[pk] for pk in wanted[: max(0, query.limit - len(walk.items))]}
    where = _radial(walk, folds)
    ids = {pk: item.id for pk, item in walk.items.items()}
    hits = _hits(engine, query.text, list(ids.values()), reads) if query.text else set()
    nodes: list[dict[str, Any]] = []
    for pk, item in walk.items.items():
        classes = [_kind(item)]
        if pk == center.pk:
            classes.append("center")
        if item.id in hits:
            classes.append("hit")
        x, y = where[pk]
        nodes.append(
            {
                "data": {
                    "id": item.id,
                    "label": label_of(item),
                    "kind": _kind(item),
                    "type": _type(item),
                    "depth": walk.depth[pk],
                    "hidden": hidden[pk],
                    "created": iso_utc(item.created_at),
                    "title": f"{_kind(item)}{' · ' + _type(item) if _type(item) else ''} · {label_of(item)}",
                },
                "position": {"x": x, "y": y},
                "classes": classes,
            }
        )
    edges = [_edge_json(e, ids, at) for e in walk.edges.values() if e.src_pk in ids and e.dst_pk in ids]
    for pk, count in folds.items():
        x, y = where[f"fold:{pk}"]
        fold_id = f"fold:{ids[pk]}"
        nodes.append(
            {
                "data": {
                    "id": fold_id,
                    "label": f"+{count} more",
                    "kind": "folded",
                    "of": ids[pk],
                    "hidden": count,
                    "depth": walk.depth[pk] + 1,
                    "title": f"{count} more neighbour{'' if count == 1 else 's'} of {label_of(walk.items[pk])}",
                },
                "position": {"x": x, "y": y},
                "classes": ["folded"],
            }
        )
        fold_edge = {"id": f"fold-edge:{ids[pk]}", "source": ids[pk], "target": fold_id}
        edges.append({"data": fold_edge, "classes": ["folded"]})
    times = [item.created_at for item in walk.items.values()] + [
        e.valid_from for e in walk.edges.values() if e.src_pk in ids and e.dst_pk in ids
    ]
    out.update(
        center={"id": center.id, "label": label_of(center), "kind": _kind(center)},
        nodes=nodes,
        edges=edges,
        truncated=walk.capped or len(folds) < len(wanted),
        counts={
            "items": len(walk.items),
            "edges": len(edges) - len(folds),
            "folded": len(folds),
            "hits": len(hits),
        },
        oldest=min(times),
    )
    return out


# -- choosing a centre --------------------------------------------------------------------------


@dataclass(frozen=True, eq=False, repr=False)
class Start(Value):
    item: Item
    relations: int | None = None


def _suggestions(engine: Engine, text: str | None, reads: Sequence[str]) -> tuple[list[Start], str]:
    """Items to start from: the best matches of `text`, or the most connected items among
    the newest relations; and how they were chosen."""
    if text:
        page = engine.items.search(text, limit=SUGGESTIONS, scopes=reads)
        return [Start(f.item) for f in page.found], "best matches"
    recent = engine.items.relations(None, limit=SUGGEST_FROM, scopes=reads)
    counts = Counter(pk for e in recent.edges for pk in (e.src_pk, e.dst_pk))
    by_pk = {item.pk: item for item in recent.items}
    ranked = sorted(
        counts, key=lambda pk: (-counts[pk], not isinstance(by_pk.get(pk), Entity), label_of(by_pk[pk]).lower())
    )
    return [Start(by_pk[pk], counts[pk]) for pk in ranked[:SUGGESTIONS] if pk in by_pk], "most connected"


def _page_view(engine: Engine, query: GraphQuery) -> dict[str, Any]:
    reads = readable_scopes(engine)
    now = engine.clock()
    center: Item | None = None
    suggestions: list[Start] = []
    chosen_by = ""
    if query.center is not None:
        center = _resolve(engine, query.center, reads, None)
    else:
        suggestions, chosen_by = _suggestions(engine, query.text, reads)
        if suggestions:
            center = suggestions[0].item
    oldest = engine.memory_stats(scopes=reads).oldest_at
    starts = [t for t in (oldest, center.created_at if center else None, query.as_of) if t is not None]
    low = min(starts) if starts else now - 86_400_000
    facets = engine.items.facets(top=30, scopes=reads)
    return {
        "center": center,
        "suggestions": suggestions,
        "chosen_by": chosen_by,
        "slider_min": min(low, now - 60_000),
        "slider_max": now,
        "slider_value": now if query.as_of is None else min(max(query.as_of, low), now),
        "item_types": sorted({t for key in ("entity_types", "memory_types") for t, _ in facets.get(key, [])}),
        "relation_types": [t for t, _ in facets.get("relation_types", [])],
    }


# -- the panel --------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False, repr=False)
class PanelRelation(Value):
    edge: Edge
    outgoing: bool
    other: Item
    ended: bool


def _panel_view(engine: Engine, ref: str, as_of: int | None) -> dict[str, Any]:
    reads = readable_scopes(engine)
    at = engine.clock() if as_of is None else as_of
    item = _resolve(engine, ref, reads, as_of)
    if item is None:
        raise NotFound(f"{ref} did not exist yet at {iso_utc(at)}")
    edges, ends = engine.items.edges_of([item], scopes=reads, include_closed=True, as_of=as_of)
    relations = [
        PanelRelation(
            e,
            e.src_pk == item.pk,
            ends[e.dst_pk if e.src_pk == item.pk else e.src_pk],
            e.valid_to is not None and e.valid_to <= at,
        )
        for e in edges
        if e.valid_from <= at
    ]
    relations.sort(key=lambda r: (r.ended, -r.edge.valid_from))
    text = item.content if isinstance(item, Memory) else ""
    return {
        "item": item,
        "kind": _kind(item),
        "item_type": _type(item),
        "label": label_of(item),
        "text": text if len(text) <= PANEL_TEXT_CHARS else text[: PANEL_TEXT_CHARS - 1] + "…",
        "observations": list(item.observations[:PANEL_OBSERVATIONS]) if isinstance(item, Entity) else [],
        "more_observations": max(0, len(item.observations) - PANEL_OBSERVATIONS) if isinstance(item, Entity) else 0,
        "relations": relations[:PANEL_RELATIONS],
        "open_count": sum(1 for r in relations if not r.ended),
        "ended_count": sum(1 for r in relations if r.ended),
        "as_of": None if as_of is None else iso_utc(as_of),
    }


# -- handlers ---------------------------------------------------------------------------------


def _json_error(exc: EngineError) -> JSONResponse:
    status = status_of(exc)
    text = "The database cannot be reached right now. Retry shortly." if status == 503 else str(exc)
    response = JSONResponse({"error": text}, status_code=status)
    if status == 503:
        response.headers["Retry-After"] = "1"
    return response


async def page(request: Request) -> Response:
    query = parse_query(request)
    layout = request.query_params.get("layout", "").strip() or LAYOUTS[0]
    if layout not in LAYOUTS:
        raise InvalidArgument(f"layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
    view = await call(_page_view, engine_of(request), query)
    center = view["center"]
    data_query = ""
    if center is not None:
        data_query = urlencode({**query.params(center.id), **({"layout": layout} if layout != LAYOUTS[0] else {})})
    return Page(request, "graph.html").render(
        graph=query,
        layout=layout,
        data_url=f"{BASE}/graph/data",
        panel_url=f"{BASE}/graph/panel/",
        page_url=f"{BASE}/graph",
        data_query=data_query,
        as_of_text="" if query.as_of is None else iso_utc(query.as_of),
        label_of=label_of,
        kind_of=_kind,
        centre_url=lambda item: f"{BASE}/graph?{urlencode(query.params(item.id))}",
        **view,
    )


async def data(request: Request) -> Response:
    try:
        query = parse_query(request)
        body = await call(ego_graph, engine_of(request), query)
    except EngineError as exc:
        return _json_error(exc)
    return JSONResponse(body, headers={"Cache-Control": "no-store"})


async def panel(request: Request) -> Response:
    query = parse_query(request)
    ref = request.path_params["ref"]
    view = await call(_panel_view, engine_of(request), ref, query.as_of)
    return Page(request, "_graph_panel.html").render(
        centre_url=f"{BASE}/graph?{urlencode(query.params(view['item'].id))}",
        folded=query_int(request, "folded", None, low=0, high=10**9),
        label_of=label_of,
        **view,
    )


def routes() -> list[BaseRoute]:
    return [
        Route("/graph", page, methods=["GET"]),
        Route("/graph/data", data, methods=["GET"]),
        Route("/graph/panel/{ref:path}", panel, methods=["GET"]),
    ]
