"""The inspector's Graph page over HTTP, in process: the page, its JSON data and the side
panel, over a real database through the whole HTTP application (`build_app`).

The data is an ego-subgraph: its shape, the hops and the node cap, hubs folded into "+N
more" nodes, the time shown (`as_of`: ended relations marked, what came later left out),
the type and relation filters, search hits, clear refusals of bad parameters, and a
token's grant: another tenant's items never appear, not even in a folded count. How the
browser draws it is measured by bench/inspector_graph.py.
"""

from __future__ import annotations

import argparse
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from mnemodb.engine import Engine
from mnemodb.engine.graph import NewEntity, NewRelation
from mnemodb.engine.items import Note, Patch
from mnemodb.model.ids import SHARED
from mnemodb.model.records import Entity, Memory, NewMemory
from mnemodb.model.times import iso_utc
from mnemodb.server import config
from mnemodb.server.app import build_server
from mnemodb.server.http import Metrics, build_app
from mnemodb.server.inspector.app import CONTENT_SECURITY_POLICY, CSRF_COOKIE
from mnemodb.server.inspector.graph import FOLD_OVER, MAX_NODES
from mnemodb.server.profiles import build_profile
from mnemodb.server.settings import HttpSettings
from stores import store_location

BASE = "http://127.0.0.1:8765"
TEAM_A = "01JA0000000000000000000000"
TEAM_B = "01JB0000000000000000000000"
# 2026-01-01T00:00:00Z: the tests' clock starts here and moves only when told.
T0 = 1_767_225_600_000
MINUTE = 60_000


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now


@dataclass
class Site:
    engine: Engine
    client: TestClient
    clock: Clock

    def csrf(self) -> str:
        if CSRF_COOKIE not in self.client.cookies:
            self.client.get("/ui/login")
        return str(self.client.cookies[CSRF_COOKIE])

    def sign_in(self, secret: str) -> None:
        self.client.cookies.clear()
        response = self.client.post(
            "/ui/login", data={"csrf": self.csrf(), "token": secret, "next": "/ui/graph"}, follow_redirects=False
        )
        assert response.status_code == 303, response.text

    def data(self, **params: str | int) -> dict[str, Any]:
        response = self.client.get("/ui/graph/data", params={k: str(v) for k, v in params.items()})
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body


@pytest.fixture
def site(db_path: Path) -> Iterator[Site]:
    clock = Clock()
    with Engine.open(store_location(db_path), clock=clock) as engine:
        profile = build_profile("native", config.load(argparse.Namespace(profile="native", db=str(db_path)), {}))
        app = build_app(build_server(profile, engine), engine, HttpSettings(), Metrics(engine))
        with TestClient(app, base_url=BASE) as client:
            yield Site(engine, client, clock)


def entities(engine: Engine, *names: str, kind: str = "thing", scope: str | None = None) -> None:
    engine.graph.create_entities([NewEntity(n, kind, (f"about {n}",)) for n in names], scope=scope)


def relate(engine: Engine, pairs: list[tuple[str, str]], kind: str = "knows", scope: str | None = None) -> None:
    engine.graph.create_relations([NewRelation(a, b, kind) for a, b in pairs], scope=scope)


def remember(engine: Engine, text: str, *, about: tuple[str, ...] = (), memory_type: str = "general") -> Memory:
    outcomes, _ = engine.items.remember([Note(NewMemory(text, (), 0, memory_type), about=about)])
    memory = outcomes[0].item
    assert isinstance(memory, Memory)
    return memory


def item_id(engine: Engine, ref: str, scopes: list[str] | None = None) -> str:
    found = engine.items.get([ref], scopes=scopes, record_access=False)[0]
    assert isinstance(found, Memory | Entity)
    return found.id


def labels(body: dict[str, Any]) -> set[str]:
    return {n["data"]["label"] for n in body["nodes"] if "folded" not in n["classes"]}


def node(body: dict[str, Any], label: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [n for n in body["nodes"] if n["data"]["label"] == label]
    assert len(found) == 1, (label, labels(body))
    return found[0]


def folds(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Folded nodes by the id of the item they fold."""
    return {n["data"]["of"]: n for n in body["nodes"] if "folded" in n["classes"]}


def real_edges(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in body["edges"] if "folded" not in e["classes"]]


# -- the data -------------------------------------------------------------------------------------


def test_the_data_is_cytoscape_elements_with_positions_and_classes(site: Site) -> None:
    engine = site.engine
    entities(engine, "Ada", "Babbage", kind="person")
    entities(engine, "Engine", kind="machine")
    relate(engine, [("Ada", "Engine"), ("Babbage", "Engine")], "worked_on")
    memory = remember(engine, "Ada wrote the first program", about=("Ada",))
    response = site.client.get("/ui/graph/data", params={"center": "Ada"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    body = response.json()
    assert body["center"] == {"id": item_id(engine, "Ada"), "label": "Ada", "kind": "entity"}
    assert body["hops"] == 2 and body["limit"] == MAX_NODES and body["as_of"] is None and not body["truncated"]
    assert labels(body) == {"Ada", "Babbage", "Engine", "Ada wrote the first program"}
    ada = node(body, "Ada")
    assert ada["classes"] == ["entity", "center"]
    assert ada["position"] == {"x": 0.0, "y": 0.0}
    assert ada["data"]["depth"] == 0 and ada["data"]["type"] == "person" and ada["data"]["hidden"] == 0
    mem = node(body, memory.content)
    assert mem["classes"] == ["memory"] and mem["data"]["kind"] == "memory" and mem["data"]["type"] == "general"
    assert mem["data"]["id"] == memory.id and mem["data"]["depth"] == 1
    assert node(body, "Babbage")["data"]["depth"] == 2
    for n in body["nodes"]:
        assert set(n["position"]) == {"x", "y"}
    ids = {n["data"]["id"] for n in body["nodes"]}
    kinds = sorted(e["data"]["type"] for e in body["edges"])
    assert kinds == ["about", "worked_on", "worked_on"]
    for edge in body["edges"]:
        assert edge["data"]["source"] in ids and edge["data"]["target"] in ids
        assert edge["data"]["valid_to"] is None and edge["classes"] == []
        assert edge["data"]["valid_from"].endswith("Z") and edge["data"]["title"].startswith(edge["data"]["type"])
    assert body["counts"] == {"items": 4, "edges": 3, "folded": 0, "hits": 0}
    assert body["oldest"] == T0


def test_hops_reach_as_far_as_asked(site: Site) -> None:
    engine = site.engine
    chain = ["N0", "N1", "N2", "N3", "N4"]
    entities(engine, *chain)
    relate(engine, list(itertools.pairwise(chain)))
    for hops, reached in ((1, 2), (2, 3), (3, 4)):
        body = site.data(center="N0", hops=hops)
        assert labels(body) == set(chain[:reached]), hops
        assert {n["data"]["label"]: n["data"]["depth"] for n in body["nodes"]} == {
            name: i for i, name in enumerate(chain[:reached])
        }
        # The last hop's item has a neighbour further on: counted, not folded (one is no hub).
        assert node(body, chain[reached - 1])["data"]["hidden"] == 1 and not folds(body)
    # Relations between items of the last hop are drawn too.
    relate(engine, [("N1", "N4")], "shortcut")
    body = site.data(center="N0", hops=2)
    assert labels(body) == {"N0", "N1", "N2", "N4"}
    entities(engine, "M1", "M2")
    relate(engine, [("N0", "M1"), ("N0", "M2"), ("M1", "M2")], "near")
    body = site.data(center="N0", hops=1)
    assert {e["data"]["type"] for e in body["edges"]} == {"knows", "near"}
    assert len(body["edges"]) == 4


def test_the_node_cap_holds_and_says_so(site: Site) -> None:
    engine = site.engine
    entities(engine, "Root")
    spokes = [f"S{i:02d}" for i in range(20)]
    entities(engine, *spokes)
    relate(engine, [("Root", s) for s in spokes])
    leaves = [(s, f"{s}-L{j:02d}") for s in spokes for j in range(20)]
    entities(engine, *(leaf for _, leaf in leaves))
    relate(engine, leaves, "has")
    body = site.data(center="Root", hops=2)
    # Filled to the cap: the items reached last make way for the "+N more" nodes.
    assert len(body["nodes"]) == MAX_NODES and body["truncated"]
    assert body["counts"]["items"] + body["counts"]["folded"] == len(body["nodes"])
    # Nearest first: every spoke is drawn before any leaf is left out.
    assert set(spokes) <= labels(body)
    # The spokes whose leaves did not all fit say how many are left out.
    drawn = labels(body)
    for spoke in spokes:
        missing = sum(1 for s, leaf in leaves if s == spoke and leaf not in drawn)
        assert node(body, spoke)["data"]["hidden"] == missing
        fold = folds(body).get(item_id(engine, spoke))
        assert fold is None or fold["data"]["hidden"] == missing
    assert any(folds(body).values())
    small = site.data(center="Root", hops=2, limit=30)
    assert len(small["nodes"]) == 30 and small["truncated"] and small["limit"] == 30
    everything = site.data(center="S00", hops=1)
    assert not everything["truncated"] and len(everything["nodes"]) == 22


def test_a_hub_is_folded_into_one_node(site: Site) -> None:
    engine = site.engine
    entities(engine, "Hub", "Start")
    fans = [f"F{i:02d}" for i in range(60)]
    entities(engine, *fans)
    relate(engine, [("Hub", f) for f in fans], "has")
    site.clock.now = T0 + MINUTE
    relate(engine, [("Start", "Hub")], "uses")
    hub = item_id(engine, "Hub")
    # The hub in the middle: FOLD_OVER of its neighbours, by the newest relation first, and
    # "+36 more".
    body = site.data(center="Hub", hops=1)
    drawn = labels(body) - {"Hub"}
    assert len(drawn) == FOLD_OVER and "Start" in drawn
    fold = folds(body)[hub]
    hidden = 61 - FOLD_OVER
    assert fold["data"]["label"] == f"+{hidden} more" and fold["data"]["hidden"] == hidden
    assert fold["data"]["id"] == f"fold:{hub}" and fold["classes"] == ["folded"] and fold["data"]["kind"] == "folded"
    assert node(body, "Hub")["data"]["hidden"] == hidden
    assert [e for e in body["edges"] if "folded" in e["classes"]] == [
        {"data": {"id": f"fold-edge:{hub}", "source": hub, "target": f"fold:{hub}"}, "classes": ["folded"]}
    ]
    assert body["counts"]["folded"] == 1 and not body["truncated"]
    # The hub on the last hop: not opened, but folded all the same, so it shows as a hub.
    body = site.data(center="Start", hops=1)
    assert labels(body) == {"Start", "Hub"}
    assert folds(body)[hub]["data"]["hidden"] == 60
    # Two hops from Start: the hub's neighbours fold under it.
    body = site.data(center="Start", hops=2)
    assert len(labels(body)) == 2 + FOLD_OVER
    assert folds(body)[hub]["data"]["hidden"] == 60 - FOLD_OVER


def test_as_of_shows_the_graph_as_it_was(site: Site) -> None:
    engine, clock = site.engine, site.clock
    entities(engine, "Alice", "Acme", "Bolt")
    memory = remember(engine, "Alice joined Acme", about=("Alice",))
    clock.now = T0 + 10 * MINUTE
    relate(engine, [("Alice", "Acme")], "works_at")
    clock.now = T0 + 20 * MINUTE
    closed = engine.items.relate((), [(("Alice", "works_at", "Acme"), None)])[1][0]
    assert closed.valid_to == T0 + 20 * MINUTE
    clock.now = T0 + 30 * MINUTE
    entities(engine, "Later")
    relate(engine, [("Alice", "Later")], "met")
    engine.items.revise(memory.id, Patch(content="Alice left Acme"))
    clock.now = T0 + 40 * MINUTE

    def works_at(body: dict[str, Any]) -> dict[str, Any] | None:
        found = [e for e in body["edges"] if e["data"]["type"] == "works_at"]
        return found[0] if found else None

    # Before the relation began: neither it nor the item it leads to.
    before = site.data(center="Alice", as_of=iso_utc(T0 + 5 * MINUTE))
    assert works_at(before) is None and labels(before) == {"Alice", "Alice joined Acme"}
    assert before["as_of"] == iso_utc(T0 + 5 * MINUTE)
    # While it held: drawn open; the item created later is not there yet.
    during = site.data(center="Alice", as_of=iso_utc(T0 + 15 * MINUTE))
    edge = works_at(during)
    assert edge is not None and edge["classes"] == [] and edge["data"]["valid_to"] == iso_utc(T0 + 20 * MINUTE)
    assert "ends" in edge["data"]["title"]
    assert labels(during) == {"Alice", "Acme", "Alice joined Acme"}
    # From its end on: drawn as ended, with its end date.
    after = site.data(center="Alice", as_of=iso_utc(T0 + 25 * MINUTE))
    edge = works_at(after)
    assert edge is not None and edge["classes"] == ["ended"]
    assert f"ended {iso_utc(T0 + 20 * MINUTE)}" in edge["data"]["title"]
    assert "Later" not in labels(after)
    # The item at the very end of the relation's time: ended (valid_to is exclusive).
    at_end = site.data(center="Alice", as_of=iso_utc(T0 + 20 * MINUTE))
    edge = works_at(at_end)
    assert edge is not None and edge["classes"] == ["ended"]
    # Now: ended too; the later item and its relation are there, the memory as revised.
    now = site.data(center="Alice")
    edge = works_at(now)
    assert edge is not None and edge["classes"] == ["ended"]
    assert {"Later", "Alice left Acme"} <= labels(now)
    assert [e["classes"] for e in now["edges"] if e["data"]["type"] == "met"] == [[]]
    # The memory as it read then.
    assert "Alice joined Acme" in labels(site.data(center="Alice", as_of=iso_utc(T0 + 25 * MINUTE)))
    # A centre that did not exist yet: an empty drawing that says so.
    empty = site.data(center="Later", as_of=iso_utc(T0 + 25 * MINUTE))
    assert empty["nodes"] == [] and empty["edges"] == [] and "did not exist yet" in empty["message"]
    # A bare date is that day's start, UTC.
    assert site.data(center="Alice", as_of="2026-01-01")["at"] == iso_utc(T0)


def test_type_and_relation_filters(site: Site) -> None:
    engine = site.engine
    entities(engine, "Centre", kind="project")
    entities(engine, "P1", "P2", kind="person")
    entities(engine, "T1", kind="tool")
    relate(engine, [("Centre", "P1"), ("Centre", "T1")], "uses")
    relate(engine, [("P1", "P2")], "knows")
    remember(engine, "A note on the centre", about=("Centre",), memory_type="decision")
    remember(engine, "Another note", about=("Centre",), memory_type="general")
    assert labels(site.data(center="Centre", types="person")) == {"Centre", "P1", "P2"}
    assert labels(site.data(center="Centre", types="tool,decision")) == {"Centre", "T1", "A note on the centre"}
    response = site.client.get("/ui/graph/data", params=[("center", "Centre"), ("types", "tool"), ("types", "person")])
    assert labels(response.json()) == {"Centre", "P1", "P2", "T1"}
    body = site.data(center="Centre", relations="uses")
    assert labels(body) == {"Centre", "P1", "T1"}
    assert {e["data"]["type"] for e in body["edges"]} == {"uses"}
    body = site.data(center="Centre", relations="uses,knows", types="person")
    assert labels(body) == {"Centre", "P1", "P2"}
    # A filter that keeps nothing around the centre still draws the centre.
    assert labels(site.data(center="Centre", relations="nothing-like-this")) == {"Centre"}


def test_search_hits_are_marked(site: Site) -> None:
    engine = site.engine
    entities(engine, "Paris", "Lyon", "Berlin", kind="city")
    relate(engine, [("Paris", "Lyon"), ("Paris", "Berlin")], "train")
    remember(engine, "The croissants of Lyon", about=("Lyon",))
    entities(engine, "Lyonnais elsewhere")  # matches, but is not in the drawing
    body = site.data(center="Paris", q="Lyon")
    hits = {n["data"]["label"] for n in body["nodes"] if "hit" in n["classes"]}
    assert hits == {"Lyon", "The croissants of Lyon"}
    assert body["counts"]["hits"] == 2
    assert not any("hit" in n["classes"] for n in site.data(center="Paris")["nodes"])


# -- refusals -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "status", "message"),
    [
        ({"center": "X", "hops": "4"}, 400, "hops must be from 1 to 3, not 4"),
        ({"center": "X", "hops": "0"}, 400, "hops must be from 1 to 3, not 0"),
        ({"center": "X", "hops": "two"}, 400, "hops must be a whole number"),
        ({"center": "X", "limit": "301"}, 400, "limit must be from 1 to 300"),
        ({"center": "X", "as_of": "last tuesday"}, 400, "as_of must be a date like"),
        ({"center": "X", "types": ",".join(f"t{i}" for i in range(51))}, 400, "types names at most 50"),
        ({}, 400, "center is required"),
        ({"center": "Nobody"}, 404, "nothing readable is named 'Nobody'"),
    ],
)
def test_bad_parameters_get_a_clear_message(site: Site, params: dict[str, str], status: int, message: str) -> None:
    entities(site.engine, "X")
    response = site.client.get("/ui/graph/data", params=params)
    assert response.status_code == status, response.text
    assert message in response.json()["error"]


def test_a_relation_is_no_centre_and_bad_page_parameters_are_refused(site: Site) -> None:
    entities(site.engine, "X", "Y")
    relate(site.engine, [("X", "Y")])
    edge = site.engine.items.relations(None).edges[0]
    response = site.client.get("/ui/graph/data", params={"center": edge.id})
    assert response.status_code == 400 and "is a relation" in response.json()["error"]
    page = site.client.get("/ui/graph", params={"center": "X", "hops": "9"})
    assert page.status_code == 400 and "hops must be from 1 to 3, not 9" in page.text
    page = site.client.get("/ui/graph", params={"center": "X", "layout": "cose"})
    assert page.status_code == 400 and "layout must be one of radial, concentric" in page.text
    assert site.client.get("/ui/graph", params={"center": "Nobody"}).status_code == 404
    panel = site.client.get("/ui/graph/panel/Nobody", headers={"HX-Request": "true"})
    assert panel.status_code == 404 and "<html" not in panel.text and "Nobody" in panel.text


# -- the page and the panel -------------------------------------------------------------------------


def test_the_page_holds_the_drawing_s_parts(site: Site) -> None:
    entities(site.engine, "Ada", "Engine")
    relate(site.engine, [("Ada", "Engine")], "built")
    ada = item_id(site.engine, "Ada")
    response = site.client.get("/ui/graph", params={"center": "Ada", "hops": "3", "q": "engine"})
    assert response.status_code == 200
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    page = response.text
    graph = re.search(r'<div id="graph"[^>]*>', page)
    assert graph is not None
    assert 'data-state="loading"' in graph.group(0) and f'data-center="{ada}"' in graph.group(0)
    assert f"center={ada}&amp;hops=3&amp;q=engine" in graph.group(0)
    for part in ('id="as-of"', 'type="range"', 'id="as-of-label"', 'id="as-of-now"', 'id="node-panel"'):
        assert part in page, part
    assert '<script src="/ui/static/vendor/cytoscape-3.35.0.min.js" defer></script>' in page
    assert '<script src="/ui/static/graph.js" defer></script>' in page
    # With this id, cytoscape finds its stylesheet there and adds no inline <style> of its own.
    assert '<link rel="stylesheet" href="/ui/static/graph.css" id="__________cytoscape_stylesheet">' in page
    # Nothing inline: the policy would refuse it.
    assert not re.search(r"<script(?![^>]*\bsrc=)", page) and " style=" not in page and "<style" not in page
    slider = re.search(r'id="as-of" min="(\d+)" max="(\d+)" step="1000" value="(\d+)"', page)
    assert slider is not None
    low, high, value = (int(v) for v in slider.groups())
    assert low <= T0 <= high == value == site.clock.now
    for path in ("/ui/static/graph.js", "/ui/static/graph.css"):
        assert site.client.get(path).status_code == 200
    assert ".__________cytoscape_container { position: relative; }" in site.client.get("/ui/static/graph.css").text


def test_without_a_centre_the_page_offers_where_to_start(site: Site) -> None:
    empty = site.client.get("/ui/graph").text
    assert 'id="graph-empty"' in empty and 'id="graph"' not in empty
    entities(site.engine, "Hub", "A", "B", "C", "Lone")
    relate(site.engine, [("Hub", "A"), ("Hub", "B"), ("Hub", "C")])
    hub = item_id(site.engine, "Hub")
    page = site.client.get("/ui/graph").text
    assert "most connected" in page and f'data-center="{hub}"' in page
    starts = re.search(r'<p class="graph-starts".*?</p>', page, re.S)
    assert starts is not None and f'data-id="{hub}"' in starts.group(0)
    page = site.client.get("/ui/graph", params={"q": "Lone"}).text
    assert "best matches" in page and f'data-center="{item_id(site.engine, "Lone")}"' in page
    page = site.client.get("/ui/graph", params={"q": "zzzzqqq"}).text
    assert "Nothing matches these words" in page


def test_the_panel_shows_one_item(site: Site) -> None:
    engine, clock = site.engine, site.clock
    entities(engine, "Ada", "Engine", "Paper")
    relate(engine, [("Ada", "Engine")], "built")
    clock.now = T0 + MINUTE
    relate(engine, [("Ada", "Paper")], "wrote")
    clock.now = T0 + 2 * MINUTE
    engine.items.relate((), [(("Ada", "wrote", "Paper"), None)])
    memory = remember(engine, "Ada's notes on the Engine", about=("Ada",))
    clock.now = T0 + 3 * MINUTE
    engine.items.revise(memory.id, Patch(content="Ada's revised notes"))
    ada = item_id(engine, "Ada")
    panel = site.client.get(f"/ui/graph/panel/{ada}", params={"hops": "3"}, headers={"HX-Request": "true"}).text
    assert "<html" not in panel and f'data-id="{ada}"' in panel
    assert "about Ada" in panel and "entity · thing" in panel
    assert 'id="panel-relations">2 current, 1 ended<' in panel
    assert f'href="/ui/item/{ada}"' in panel and f'href="/ui/graph?center={ada}&amp;hops=3"' in panel
    text = site.client.get(f"/ui/graph/panel/{memory.id}").text
    assert "Ada&#39;s revised notes" in text and "memory · general" in text
    then = site.client.get(f"/ui/graph/panel/{memory.id}", params={"as_of": iso_utc(T0 + 2 * MINUTE)}).text
    assert "Ada&#39;s notes on the Engine" in then and f"as of {iso_utc(T0 + 2 * MINUTE)}" in then
    at_first = site.client.get(f"/ui/graph/panel/{ada}", params={"as_of": iso_utc(T0 + MINUTE)}).text
    assert 'id="panel-relations">2 current, 0 ended<' in at_first
    folded = site.client.get(f"/ui/graph/panel/{ada}", params={"folded": "12"}).text
    assert "12 more neighbours not drawn" in folded
    assert site.client.get("/ui/graph/panel/Ada").status_code == 200


# -- tenancy --------------------------------------------------------------------------------------


def test_another_tenant_s_items_never_appear(site: Site) -> None:
    """Alice (team A) and Bob (team B) both read the shared scope, where "Commons" is linked
    to items of both teams; neither sees the other's items, relations or their number."""
    engine = site.engine
    _, alice = engine.tokens.create("alice", write_scope=TEAM_A, read_scopes=[SHARED])
    _, bob = engine.tokens.create("bob", write_scope=TEAM_B, read_scopes=[SHARED])
    entities(engine, "Commons", scope=SHARED)
    entities(engine, "BobHub", "B1", "B2", "B3", scope=TEAM_B)
    relate(engine, [("BobHub", "B1"), ("BobHub", "B2"), ("B2", "B3")], scope=TEAM_B)
    engine.graph.create_relations([NewRelation("BobHub", "Commons", "uses")], scope=TEAM_B, scopes=[TEAM_B, SHARED])
    spies = [f"AliceSpy{i:02d}" for i in range(40)]
    entities(engine, *spies, "AliceSecret", scope=TEAM_A)
    relate(engine, [(s, "AliceSecret") for s in spies], scope=TEAM_A)
    # Alice's relations to the shared item, kept in her scope, and one kept in the shared scope.
    engine.graph.create_relations(
        [NewRelation(s, "Commons", "watches") for s in spies], scope=TEAM_A, scopes=[TEAM_A, SHARED]
    )
    engine.graph.create_relations(
        [NewRelation("Commons", "AliceSecret", "hides")], scope=SHARED, scopes=[SHARED, TEAM_A]
    )
    bob_hub = item_id(engine, "BobHub", scopes=[TEAM_B])
    commons = item_id(engine, "Commons", scopes=[SHARED])

    site.sign_in(bob)
    for params in (
        {"center": "BobHub", "hops": "3"},
        {"center": "B3", "hops": "3"},
        {"center": "Commons", "hops": "3"},
        {"center": "BobHub", "hops": "3", "q": "AliceSpy00 AliceSecret watches"},
    ):
        response = site.client.get("/ui/graph/data", params=params)
        assert response.status_code == 200
        text = response.text
        assert "Alice" not in text and TEAM_A not in text and "watches" not in text and "hides" not in text, params
        body = response.json()
        assert labels(body) == {"BobHub", "B1", "B2", "B3", "Commons"} and body["counts"]["hits"] == 0, params
        assert not folds(body) and all(n["data"]["hidden"] == 0 for n in body["nodes"]), params
    for ref in ("AliceSecret", "AliceSpy00"):
        response = site.client.get("/ui/graph/data", params={"center": ref})
        assert response.status_code == 404, ref
        assert site.client.get("/ui/graph", params={"center": ref}).status_code == 404
        assert site.client.get(f"/ui/graph/panel/{ref}").status_code == 404
    panel = site.client.get(f"/ui/graph/panel/{commons}").text
    assert 'id="panel-relations">1 current, 0 ended<' in panel and "Alice" not in panel
    # The start suggestions count only what Bob reads: the shared item, linked to 40 of
    # Alice's, is not the most connected for him.
    page = site.client.get("/ui/graph").text
    assert "Alice" not in page and TEAM_A not in page and f'data-center="{bob_hub}"' in page
    page = site.client.get("/ui/graph", params={"q": "AliceSecret"}).text
    assert "Nothing matches these words" in page and page.count("Alice") == 1  # the words asked, in the box

    site.sign_in(alice)
    body = site.data(center="Commons", hops=1)
    assert "BobHub" not in labels(body) and len(labels(body)) == 1 + FOLD_OVER
    assert folds(body)[commons]["data"]["hidden"] == 41 - FOLD_OVER
    assert "Bob" not in site.client.get("/ui/graph/data", params={"center": "AliceSpy03", "hops": "3"}).text


def test_a_browser_without_a_token_is_sent_to_sign_in(site: Site) -> None:
    site.engine.tokens.create("alice")
    response = site.client.get("/ui/graph/data", params={"center": "X"}, headers={"HX-Request": "true"})
    assert response.status_code == 401 and response.headers["HX-Redirect"].startswith("/ui/login?next=")
    page = site.client.get("/ui/graph", follow_redirects=False)
    assert page.status_code == 303 and page.headers["location"].startswith("/ui/login")
