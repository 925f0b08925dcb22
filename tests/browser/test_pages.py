"""The overview, the memories list and its search, as a person sees them; and the guard every
page runs under: no request leaves 127.0.0.1, no script breaks the page's policy."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page, expect

from browser.harness import Inspector, Watch, screenshot, seeded, serve_inspector, wait_for

MEMORIES = [
    ("The deploy script lives in ops/deploy.sh and needs the vault token", ("ops", "deploy"), 7, "fact"),
    ("Coffee beans are ordered on Mondays from the roastery", ("office",), 2, "general"),
    ("The staging database restarts nightly at 02:00 UTC", ("ops",), 5, "fact"),
    ("Ada prefers code reviews in the morning", ("team",), 4, "preference"),
    ("Release notes go out on the first Tuesday of the month", ("release",), 6, "procedure"),
]


@pytest.fixture(scope="module")
def inspector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Inspector]:
    db = tmp_path_factory.mktemp("pages") / "memory.db"
    with seeded(db) as seed:
        for content, tags, importance, kind in MEMORIES:
            seed.memory(
                content, tags=tags, importance=importance, kind=kind, about=("Ada",) if "Ada" in content else ()
            )
        seed.entity("Ada", "person", ["reviews pull requests"])
        seed.entity("Acme", "company")
        seed.relate("Ada", "Acme", "works_at")
    with serve_inspector(db) as running:
        yield running


def test_overview_counts_what_is_remembered(page: Page, inspector: Inspector) -> None:
    page.goto(inspector.url("/"))
    expect(page).to_have_title("Overview · mnemodb")
    expect(page.locator("#count-memories")).to_have_text(str(len(MEMORIES)))
    expect(page.locator("header nav a[aria-current=page]")).to_have_text("Overview")
    # No token needed on loopback with none in the database: the operator, unnamed.
    expect(page.locator(".who .token")).to_have_text("local")
    expect(page.locator("main")).to_contain_text("works_at")
    expect(page.get_by_role("link", name="shared", exact=True)).to_be_visible()
    screenshot(page, "overview")


def test_memories_lists_every_memory_newest_first(page: Page, inspector: Inspector) -> None:
    page.goto(inspector.url("/memories"))
    rows = page.locator("table.memories tbody tr.memory")
    expect(rows).to_have_count(len(MEMORIES))
    expect(rows.first).to_contain_text(MEMORIES[-1][0])
    expect(rows.last).to_contain_text(MEMORIES[0][0])
    screenshot(page, "memories")
    # A tag leads to the memories that carry it.
    rows.first.get_by_role("link", name="release", exact=True).click()
    expect(page).to_have_url(re.compile(r"/ui/memories\?tag=release$"))
    expect(rows).to_have_count(1)


def test_typing_in_the_search_box_updates_the_results_and_the_url(page: Page, inspector: Inspector) -> None:
    page.goto(inspector.url("/memories"))
    rows = page.locator("#results table.memories tbody tr.memory")
    expect(rows).to_have_count(len(MEMORIES))
    # Set on this document: a full page load would lose it; an htmx swap keeps it.
    page.evaluate("window.mnemodbTestSameDocument = true")
    page.get_by_role("searchbox", name="Search").press_sequentially("staging database")
    expect(page).to_have_url(re.compile(r"/ui/memories\?q=staging(%20|\+)database(&|$)"))
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("restarts nightly")
    expect(page.locator("#results th", has_text="Score")).to_be_visible()
    screenshot(page, "memories-search")
    # Clearing the box shows them all again, newest first, without the score.
    page.get_by_role("searchbox", name="Search").fill("")
    expect(rows).to_have_count(len(MEMORIES))
    expect(page).not_to_have_url(re.compile(r"q=staging"))
    expect(page.locator("#results th", has_text="Score")).to_have_count(0)
    assert page.evaluate("window.mnemodbTestSameDocument") is True


@pytest.mark.parametrize(
    ("path", "words", "result"), [("memories", "staging", "The staging"), ("entities", "Acme", "Acme")]
)
def test_a_result_clicked_straight_after_typing_gets_its_own_url(
    page: Page, inspector: Inspector, path: str, words: str, result: str
) -> None:
    page.goto(inspector.url(f"/{path}"))
    page.get_by_role("searchbox", name="Search").press_sequentially(words)
    link = page.locator("#results tbody tr").get_by_role("link", name=result)
    expect(link).to_have_count(1)
    expect(page).to_have_url(re.compile(rf"[?&]q={words}(&|$)"))
    target = link.get_attribute("href")
    link.click()
    expect(page.locator("h1")).not_to_have_text(path.capitalize())
    page.wait_for_load_state("networkidle")
    assert page.url == f"{inspector.base}{target}"


def test_every_page_loads_only_from_this_server(page: Page, inspector: Inspector) -> None:
    """Every page in the header, and everything each loads, comes from the server itself."""
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto(inspector.url("/"))
    for name in ("Memories", "Entities", "Changes", "Overview"):
        page.locator("header nav").get_by_role("link", name=name).click()
        expect(page.locator("header nav a[aria-current=page]")).to_have_text(name)
    assert requested
    assert {re.sub(r"^(https?://[^/]+)/.*", r"\1", url) for url in requested} == {inspector.base}
    loaded = {url.removeprefix(inspector.base) for url in requested}
    assert {"/ui/static/vendor/htmx-2.0.11.min.js", "/ui/static/inspector.js", "/ui/static/inspector.css"} <= loaded


def test_the_page_fixture_refuses_other_hosts_and_reports_policy_violations(
    page: Page, inspector: Inspector, watch: Watch
) -> None:
    """The guard itself: a request for another host never leaves, and is recorded; a script
    the page's Content-Security-Policy refuses is recorded too (both would fail a test)."""
    page.goto(inspector.url("/"))
    page.evaluate("""() => {
        const script = document.createElement("script");
        script.textContent = "window.mnemodbTestInline = true";
        document.head.appendChild(script);
    }""")
    wait_for(page, lambda: bool(watch.violations), "the violation's report")
    assert page.evaluate("window.mnemodbTestInline === undefined")
    assert "script-src" in watch.violations[0], watch.violations
    assert any("Content Security Policy" in e for e in watch.errors), watch.errors
    with pytest.raises(PlaywrightError, match="ERR_BLOCKED_BY_CLIENT"):
        page.goto("http://example.com/")
    assert watch.foreign == ["GET http://example.com/"]
    watch.foreign.clear()
    watch.violations.clear()
    watch.errors.clear()
