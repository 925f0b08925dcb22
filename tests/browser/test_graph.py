"""The Graph page, in a real browser: words found are marked on the drawing, a real mouse
click on a node opens its panel, and the "as of" slider shows a relation open before it
ended. The page's contract: `window.mnemodbGraph` (the cytoscape instance),
`#graph[data-state=ready]` once drawn, `#node-panel`, the `#as-of` range, node classes
`hit` and `center`, edge class `ended`."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from playwright.sync_api import Page, expect

from browser.harness import Inspector, screenshot, seeded, serve_inspector
from native_support import now_ms, wait_past

# The relation that ends: open from its start for this long, then ended.
ENDS_AFTER_MS = 2_500


@dataclass(frozen=True)
class Seeded:
    inspector: Inspector
    grace: str
    navy: str
    cobol: str
    lighthouse: str
    """A memory that, with the Navy's observation, holds the word "lighthouse"."""
    ended: str
    """The id of a relation that ended ENDS_AFTER_MS after it began."""
    ended_at: int


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    db = tmp_path_factory.mktemp("graph") / "memory.db"
    with seeded(db) as seed:
        grace = seed.entity("Grace Hopper", "person", ["wrote the first compiler"])
        navy = seed.entity("US Navy", "organization", ["ran the lighthouse service"])
        cobol = seed.entity("COBOL", "language", ["a language for business"])
        seed.entity("Harvard Mark I", "computer")
        seed.relate("Grace Hopper", "US Navy", "served_in")
        seed.relate("Grace Hopper", "COBOL", "influenced")
        lighthouse = seed.memory("Grace Hopper visited the lighthouse on the cape", about=["Grace Hopper"])
        ended = seed.relate("Grace Hopper", "Harvard Mark I", "programmed")
        ended_at = now_ms() + ENDS_AFTER_MS
        seed.engine.items.relate((), [(ended, ended_at)])
    with serve_inspector(db) as running:
        yield Seeded(running, grace, navy, cobol, lighthouse, ended, ended_at)


def drawn(page: Page) -> None:
    page.wait_for_selector('#graph[data-state="ready"]')
    assert page.evaluate("typeof window.mnemodbGraph.nodes") == "function"


def ids(page: Page, selector: str) -> set[str]:
    found: list[str] = page.evaluate(f"window.mnemodbGraph.elements({selector!r}).map(e => e.id())")
    return set(found)


def test_words_found_are_marked_on_the_graph(page: Page, site: Seeded) -> None:
    page.goto(site.inspector.url(f"/graph?center={site.grace}"))
    drawn(page)
    assert ids(page, "node.center") == {site.grace}
    assert ids(page, "node.hit") == set()
    assert {site.navy, site.cobol, site.lighthouse} <= ids(page, "node")
    assert page.locator("#graph").get_attribute("data-layout-ms") is not None

    page.get_by_label("Find words").fill("lighthouse")
    page.get_by_label("Find words").press("Enter")
    expect(page).to_have_url(re.compile(r"[?&]q=lighthouse(&|$)"))
    drawn(page)
    assert ids(page, "node.hit") == {site.navy, site.lighthouse}
    assert site.grace in ids(page, "node.center")
    expect(page.locator("#graph-status")).to_contain_text("2 found by the words")
    screenshot(page, "graph-search")


def test_a_click_on_a_node_opens_its_panel(page: Page, site: Seeded) -> None:
    page.goto(site.inspector.url(f"/graph?center={site.grace}"))
    drawn(page)
    expect(page.locator("#node-panel .graph-panel")).to_have_count(0)
    # Where the node is drawn on the screen: its rendered position in the drawing, plus
    # where the drawing's container sits in the page.
    where = page.evaluate(
        """(id) => {
            const cy = window.mnemodbGraph;
            const at = cy.getElementById(id).renderedPosition();
            const box = cy.container().getBoundingClientRect();
            return {x: box.left + at.x, y: box.top + at.y};
        }""",
        site.cobol,
    )
    assert all(math.isfinite(v) for v in where.values()), where
    page.mouse.click(where["x"], where["y"])
    panel = page.locator("#node-panel")
    expect(panel).to_have_attribute("data-id", site.cobol)
    expect(panel.locator("h2")).to_have_text("COBOL")
    expect(panel).to_contain_text("influenced")
    expect(panel.locator("#panel-relations")).to_have_text("1 current, 0 ended")
    screenshot(page, "graph-panel")
    # Its link opens the item's own page.
    panel.locator("#panel-open").click()
    expect(page).to_have_url(site.inspector.url(f"/item/{site.cobol}"))


def test_the_as_of_slider_shows_a_relation_before_it_ended(page: Page, site: Seeded) -> None:
    wait_past(site.ended_at)  # ended by now
    page.goto(site.inspector.url(f"/graph?center={site.grace}"))
    drawn(page)
    has_ended = "(id) => window.mnemodbGraph.getElementById(id).hasClass('ended')"
    assert page.evaluate(has_ended, site.ended) is True
    assert ids(page, "edge.ended") == {site.ended}

    # Back, one step at a time with the keyboard, to a moment while it was still open.
    slider = page.locator("#as-of")
    top, step = (int(float(slider.get_attribute(name) or "nan")) for name in ("max", "step"))
    target = site.ended_at - ENDS_AFTER_MS // 2
    steps = math.ceil((top - target) / step)
    assert top - steps * step > site.ended_at - ENDS_AFTER_MS, "the slider's steps are too coarse for this test"
    slider.focus()
    for _ in range(steps):
        slider.press("ArrowLeft")
    page.wait_for_function(
        "(id) => { const e = window.mnemodbGraph.getElementById(id); return e.nonempty() && !e.hasClass('ended'); }",
        arg=site.ended,
    )
    drawn(page)
    assert ids(page, "edge.ended") == set()
    expect(page).to_have_url(re.compile(r"[?&]as_of=\d{4}-\d\d-\d\dT"))
    expect(page.locator("#as-of-label")).not_to_have_text("now")
    screenshot(page, "graph-as-of")

    # And forward to now: ended again.
    slider.press("End")
    page.wait_for_function(has_ended, arg=site.ended)
    expect(page.locator("#as-of-label")).to_have_text("now")
    expect(page).not_to_have_url(re.compile(r"as_of="))
