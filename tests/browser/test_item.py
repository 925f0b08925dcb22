"""One memory's page: editing it through its form shows in its history as a word diff;
forgetting it asks first, and nothing happens unless the person agrees."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from playwright.sync_api import Dialog, Page, Request, expect

from browser.harness import Inspector, Watch, screenshot, seeded, serve_inspector


@dataclass(frozen=True)
class Seeded:
    inspector: Inspector
    to_edit: str
    to_forget: str


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    db = tmp_path_factory.mktemp("item") / "memory.db"
    with seeded(db) as seed:
        seed.entity("Release train", "process")
        to_edit = seed.memory(
            "The release train leaves every second Tuesday at noon",
            tags=["release"],
            importance=6,
            kind="procedure",
            about=["Release train"],
        )
        to_forget = seed.memory("The old wiki password hint was a cat's name", tags=["obsolete"])
        seed.memory("Nothing else happens here", tags=["filler"])
    with serve_inspector(db) as running:
        yield Seeded(running, to_edit, to_forget)


def test_an_edit_shows_in_the_history_as_a_word_diff(page: Page, site: Seeded) -> None:
    page.goto(site.inspector.url(f"/item/{site.to_edit}"))
    expect(page.locator("#content")).to_have_text("The release train leaves every second Tuesday at noon")
    expect(page.locator("#history li.change")).to_have_count(1)
    expect(page.locator("#relations")).to_contain_text("Release train")
    screenshot(page, "item")

    page.locator("#edit-panel summary").click()
    form = page.locator("#edit-form")
    form.get_by_label("Content").fill("The release train leaves every third Tuesday at noon")
    form.get_by_label("Importance").fill("8")
    form.get_by_role("button", name="Save").click()

    expect(page.locator("p.done")).to_have_text("Saved.")
    expect(page).to_have_url(re.compile(rf"/ui/item/{site.to_edit}\?done=Saved\.$"))
    expect(page.locator("#content")).to_have_text("The release train leaves every third Tuesday at noon")
    history = page.locator("#history li.change")
    expect(history).to_have_count(2)
    newest = history.first
    expect(newest.locator(".head")).not_to_contain_text("create node")
    expect(newest.locator(".head")).to_contain_text("by no token (local)")
    # The text as a word diff: what went and what came, amid what stayed.
    content = newest.locator("dl.diff dt", has_text="content").locator("xpath=following-sibling::dd[1]")
    expect(content.locator(".removed")).to_have_text("second")
    expect(content.locator(".added")).to_have_text("third")
    expect(content.locator(".equal").first).to_have_text("The release train leaves every")
    importance = newest.locator("dl.diff dt", has_text="importance").locator("xpath=following-sibling::dd[1]")
    expect(importance.locator("del")).to_have_text("6")
    expect(importance.locator("ins")).to_have_text("8")
    expect(history.last.locator(".head")).to_contain_text("create node")
    screenshot(page, "item-history")


def test_forget_asks_first_and_forgets_only_when_the_person_agrees(page: Page, site: Seeded, watch: Watch) -> None:
    page.goto(site.inspector.url(f"/item/{site.to_forget}"))
    posts: list[str] = []

    def record(request: Request) -> None:
        if request.method == "POST":
            posts.append(request.url)

    page.on("request", record)
    asked: list[str] = []

    def refuse(dialog: Dialog) -> None:
        asked.append(dialog.message)
        dialog.dismiss()

    page.once("dialog", refuse)
    page.locator("#forget-button").click()
    assert asked == ["Forget this memory? It is deleted, and its text leaves the change log. This cannot be undone."]
    page.reload()
    expect(page.locator("#content")).to_have_text("The old wiki password hint was a cat's name")
    assert posts == []

    def agree(dialog: Dialog) -> None:
        asked.append(dialog.message)
        dialog.accept()

    page.once("dialog", agree)
    page.locator("#forget-button").click()
    expect(page).to_have_url(re.compile(r"/ui/memories\?done=Forgotten\.$"))
    assert len(asked) == 2
    assert posts == [site.inspector.url(f"/item/{site.to_forget}/forget")]
    expect(page.locator("table.memories")).not_to_contain_text("wiki password")
    expect(page.locator("table.memories tbody tr.memory")).to_have_count(2)

    watch.expect_error(r"status of 404")
    page.goto(site.inspector.url(f"/item/{site.to_forget}"))
    expect(page.locator("h1")).to_have_text("Not found")
