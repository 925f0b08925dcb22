"""The inspector's Graph page in a real browser: layout time at 100 and 300 nodes, and the
latency of the data behind it.

One database: a background graph (`--background` entities, two relations each, memories
about some of them, and a hub with `--hub` neighbours) and, inside it, for each size, an
ego-subgraph of exactly that many items within two hops of its centre (a centre,
children, grandchildren in a chain each, every grandchild also related to one background
entity a hop further; no item has more than FOLD_OVER neighbours, so nothing folds). The
page must never lay out the whole graph: only the neighbourhood, at most 300 nodes.

It starts `mnemodb ui` on the database as a user would, opens /ui/graph?center=... in the
system's Chromium (headless, through Playwright: never a downloaded browser) and reads
what the page measured itself:

- layout: `data-layout-ms`, the cytoscape layout run (the server's radial positions,
  `preset`; and cytoscape's `concentric` by hop, for comparison);
- draw: `data-draw-ms`, from the data's arrival to the first frame painted (adding the
  elements, styling, layout, rendering);
- a redraw: the "as of" slider moved to the middle of its range (fetch and draw again);

and times GET /ui/graph/data directly over one kept-alive HTTP connection (p50/p95, now
and as of a past time). Console errors and Content-Security-Policy violations are
reported: there must be none.

    python bench/inspector_graph.py
    python bench/inspector_graph.py --background 5000 --reps 3    # a quick look
    python bench/inspector_graph.py --screenshots /tmp/graph-shots
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

from playwright.sync_api import ConsoleMessage, Error, Page, sync_playwright

from measure import p50, p95
from mnemodb.engine import Engine
from mnemodb.engine.graph import NewEntity, NewRelation
from mnemodb.engine.items import Note
from mnemodb.model.records import Entity, NewMemory
from mnemodb.model.times import iso_utc
from mnemodb.server.inspector.graph import FOLD_OVER

CHROMIUM = os.environ.get("MNEMODB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# graph.js waits this long after the slider last moved before it fetches.
DEBOUNCE_MS = 250
# Ego-subgraphs: size -> (children of the centre, grandchildren of each child).
SHAPES = {100: (9, 10), 300: (13, 22)}
KINDS = ("person", "project", "place", "tool")
WORDS = [
    "deploy",
    "server",
    "database",
    "backup",
    "release",
    "meeting",
    "budget",
    "design",
    "review",
    "customer",
    "travel",
    "recipe",
]


def seed(path: Path, background: int, hub: int, rng: random.Random) -> tuple[dict[str, str], int]:
    """The database; the centres to open, by case name, and a time between the
    neighbourhoods' making and the end of a third of their "next" relations."""
    with Engine.open(str(path)) as engine:
        names = [f"bg {i}" for i in range(background)]
        for start in range(0, background, 1000):
            engine.graph.create_entities(
                [
                    NewEntity(n, rng.choice(KINDS), (" ".join(rng.sample(WORDS, 4)),))
                    for n in names[start : start + 1000]
                ]
            )
        links = [NewRelation(n, rng.choice(names), rng.choice(("knows", "uses"))) for n in names for _ in range(2)]
        links = [r for r in links if r.from_name != r.to_name]
        for start in range(0, len(links), 2000):
            engine.graph.create_relations(links[start : start + 2000])
        notes = [
            Note(NewMemory(" ".join(rng.sample(WORDS, 8)) + f" #{i}", (), 0, "general"), about=(rng.choice(names),))
            for i in range(background // 4)
        ]
        for start in range(0, len(notes), 500):
            engine.items.remember(notes[start : start + 500])
        engine.graph.create_entities([NewEntity("the hub", "project", ("everyone uses it",))])
        spokes = [NewRelation(n, "the hub", "uses") for n in rng.sample(names, min(hub, background))]
        for start in range(0, len(spokes), 2000):
            engine.graph.create_relations(spokes[start : start + 2000])
        centres: dict[str, str] = {}
        ending: list[tuple[str, str, str]] = []
        for size, (children, grandchildren) in SHAPES.items():
            assert 1 + children * (1 + grandchildren) == size and max(children, grandchildren + 2) <= FOLD_OVER
            centre = f"ego{size} centre"
            kids = [f"ego{size} c{i}" for i in range(children)]
            grand = {kid: [f"{kid} g{j}" for j in range(grandchildren)] for kid in kids}
            engine.graph.create_entities(
                [NewEntity(n, rng.choice(KINDS), ("in the bench's neighbourhood",)) for n in [centre, *kids]]
                + [NewEntity(g, rng.choice(KINDS)) for gs in grand.values() for g in gs]
            )
            relations = [NewRelation(centre, kid, "leads") for kid in kids]
            for kid, gs in grand.items():
                relations += [NewRelation(kid, g, "has") for g in gs]
                relations += [NewRelation(a, b, "next") for a, b in itertools.pairwise(gs)]
                ending += [(a, "next", b) for a, b in list(itertools.pairwise(gs))[::3]]
                relations += [NewRelation(g, rng.choice(names), "touches") for g in gs]
            engine.graph.create_relations(relations)
            found = engine.items.get([centre], record_access=False)[0]
            assert isinstance(found, Entity)
            centres[f"{size}"] = found.id
        hub_item = engine.items.get(["the hub"], record_access=False)[0]
        assert isinstance(hub_item, Entity)
        centres["hub"] = hub_item.id
        time.sleep(1.5)  # the slider moves by whole seconds
        middle = engine.clock()
        time.sleep(1.5)
        engine.items.relate((), [(ref, None) for ref in ending])
        return centres, middle


class Ui:
    """`mnemodb ui` on a database, and one HTTP connection to it."""

    def __init__(self, db: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mnemodb", "ui", "--db", str(db), "--port", "0", "--embedder", "none"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.proc.stdout is not None
        url = self.proc.stdout.readline().strip()
        if not url.startswith("http://"):
            self.proc.kill()
            raise SystemExit(f"mnemodb ui did not say where it listens: {url!r}")
        self.base = url.rstrip("/").removesuffix("/ui")
        parts = urlsplit(url)
        self.conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=60)

    def get_json(self, path: str) -> tuple[float, dict[str, Any]]:
        started = time.perf_counter()
        self.conn.request("GET", path)
        response = self.conn.getresponse()
        body = response.read()
        elapsed = (time.perf_counter() - started) * 1000
        if response.status != 200:
            raise SystemExit(f"GET {path}: {response.status} {body[:300]!r}")
        data: dict[str, Any] = json.loads(body)
        return elapsed, data

    def close(self) -> None:
        self.conn.close()
        self.proc.terminate()
        self.proc.wait(timeout=30)


@dataclass
class Case:
    name: str
    center: str
    nodes: int = 0
    edges: int = 0
    data_now: list[float] = field(default_factory=list)
    data_past: list[float] = field(default_factory=list)
    layout: dict[str, list[float]] = field(default_factory=dict)
    draw: dict[str, list[float]] = field(default_factory=dict)
    redraw: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def time_data(ui: Ui, case: Case, reps: int, past: int) -> None:
    path = "/ui/graph/data?" + urlencode({"center": case.center, "hops": 2})
    _, body = ui.get_json(path)  # warm
    case.nodes, case.edges = len(body["nodes"]), len(body["edges"])
    case.data_now = [ui.get_json(path)[0] for _ in range(reps)]
    past_path = path + "&" + urlencode({"as_of": iso_utc(past)})
    ui.get_json(past_path)
    case.data_past = [ui.get_json(past_path)[0] for _ in range(reps)]


def time_browser(ui: Ui, cases: list[Case], reps: int, layouts: list[str], shots: Path | None, past: int) -> None:
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for case in cases:
                for layout in layouts:
                    context = browser.new_context(viewport={"width": 1400, "height": 900})
                    page = context.new_page()
                    watch(page, case.problems)
                    url = f"{ui.base}/ui/graph?" + urlencode({"center": case.center, "hops": 2, "layout": layout})
                    for i in range(reps + 1):
                        page.goto(url)
                        page.wait_for_selector('#graph[data-state="ready"]', timeout=60_000)
                        drawn = page.evaluate("window.mnemodbGraph.nodes().length")
                        if drawn != case.nodes:
                            case.problems.append(f"{layout}: drew {drawn} nodes, the data has {case.nodes}")
                        if i == 0:
                            continue  # warm: the first load compiles the scripts
                        graph = page.locator("#graph")
                        case.layout.setdefault(layout, []).append(float(graph.get_attribute("data-layout-ms") or "nan"))
                        case.draw.setdefault(layout, []).append(float(graph.get_attribute("data-draw-ms") or "nan"))
                    if shots is not None:
                        page.screenshot(path=str(shots / f"graph-{case.name}-{layout}.png"))
                    if layout == layouts[0]:
                        for _ in range(reps):
                            case.redraw.append(slide(page, past))
                    context.close()
        finally:
            browser.close()


def watch(page: Page, problems: list[str]) -> None:
    """Console errors (a refused inline style or script is one) and uncaught exceptions."""

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            problems.append(message.text)

    def on_error(error: Error) -> None:
        problems.append(str(error))

    page.on("console", on_console)
    page.on("pageerror", on_error)


def slide(page: Page, past: int) -> float:
    """Move the slider to `past`, or back to now from there, as a person drags it: ms, in
    the page, until the new drawing is painted, less the slider's debounce."""
    elapsed: float = page.evaluate(
        """(past) => new Promise((resolve) => {
        const graph = document.getElementById("graph");
        const slider = document.getElementById("as-of");
        graph.setAttribute("data-state", "moved");
        const started = performance.now();
        const observer = new MutationObserver(() => {
            if (graph.getAttribute("data-state") !== "ready") return;
            observer.disconnect();
            resolve(performance.now() - started);
        });
        observer.observe(graph, { attributes: true, attributeFilter: ["data-state"] });
        slider.value = String(slider.value === slider.max ? past + Number(slider.step) : slider.max);
        slider.dispatchEvent(new Event("input", { bubbles: true }));
    })""",
        past,
    )
    return elapsed - DEBOUNCE_MS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--background", type=int, default=20_000, help="background entities (default 20,000)")
    parser.add_argument("--hub", type=int, default=5_000, help="neighbours of the background's hub (default 5,000)")
    parser.add_argument("--reps", type=int, default=5, help="page loads per case and layout (default 5)")
    parser.add_argument("--data-reps", type=int, default=20, help="data requests per case (default 20)")
    parser.add_argument("--layouts", default="radial,concentric", help="radial (the server's positions), concentric")
    parser.add_argument("--screenshots", type=Path, help="save a screenshot of each case here")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if not Path(CHROMIUM).is_file():
        raise SystemExit(f"no Chromium at {CHROMIUM}: install the system's, or name one with $MNEMODB_CHROMIUM")
    if args.screenshots is not None:
        args.screenshots.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "graph.db"
        started = time.perf_counter()
        centres, past = seed(db, args.background, args.hub, rng)
        print(f"seeded in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        cases = [
            Case("100", centres["100"]),
            Case("300", centres["300"]),
            Case(f"hub-{args.hub}", centres["hub"]),
        ]
        ui = Ui(db)
        try:
            for case in cases:
                time_data(ui, case, args.data_reps, past)
            time_browser(ui, cases, args.reps, args.layouts.split(","), args.screenshots, past)
        finally:
            ui.close()
    layouts = args.layouts.split(",")
    print(
        f"background: {args.background:,} entities, {2 * args.background:,} relations, "
        f"{args.background // 4:,} memories; hub with {args.hub:,} neighbours; hops 2"
    )
    print()
    header = "| case | nodes | edges | data p50 / p95 ms | data as of, p50 ms |"
    header += "".join(f" {name} layout p50 / max ms | {name} draw p50 ms |" for name in layouts)
    header += " slider redraw p50 ms |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for case in cases:
        row = f"| {case.name} | {case.nodes} | {case.edges} | {p50(case.data_now):.1f} / {p95(case.data_now):.1f} "
        row += f"| {p50(case.data_past):.1f} |"
        for name in layouts:
            row += f" {p50(case.layout[name]):.1f} / {max(case.layout[name]):.1f} | {p50(case.draw[name]):.1f} |"
        row += f" {statistics.median(case.redraw):.1f} |"
        print(row)
    problems = [f"{c.name}: {p}" for c in cases for p in dict.fromkeys(c.problems)]
    print()
    print("console errors and policy violations: " + ("none" if not problems else ""))
    for problem in problems:
        print(f"  {problem}")


if __name__ == "__main__":
    main()
