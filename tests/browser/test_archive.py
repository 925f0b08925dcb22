"""Archiving a memory from its page: it asks first, the page says so, and recall (over the
MCP endpoint, and the memories search) skips it until it is restored."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from playwright.sync_api import Dialog, Page, expect

from browser.harness import Inspector, archive_in_tree, screenshot, seeded, serve_inspector
from native_support import Native

pytestmark = pytest.mark.skipif(not archive_in_tree(), reason="a memory's page cannot archive it yet")


@dataclass(frozen=True)
class Seeded:
    inspector: Inspector
    archived: str
    kept: str


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    db = tmp_path_factory.mktemp("archive") / "memory.db"
    with seeded(db) as seed:
        archived = seed.memory("The VPN endpoint is vpn1.example.org", tags=["vpn"])
        kept = seed.memory("The VPN needs the hardware key plugged in", tags=["vpn"])
    with serve_inspector(db) as running:
        yield Seeded(running, archived, kept)


def recalled(inspector: Inspector, words: str) -> list[str]:
    """The ids `recall` finds for these words, asked over the MCP endpoint."""
    with Native.connect(inspector.mcp) as client:
        return client.ids("recall", {"query": words})


def listed(page: Page, inspector: Inspector, words: str) -> list[str]:
    """The ids the memories page finds for these words."""
    page.goto(inspector.url(f"/memories?q={words}"))
    expect(page.locator("#results")).to_be_visible()
    found: list[str] = page.locator("table.memories tbody tr.memory").evaluate_all(
        "rows => rows.map(r => r.dataset.id)"
    )
    return found


def test_an_archived_memory_is_skipped_by_recall_until_restored(page: Page, site: Seeded) -> None:
    inspector = site.inspector
    assert set(recalled(inspector, "VPN")) == {site.archived, site.kept}

    page.goto(inspector.url(f"/item/{site.archived}"))
    expect(page.locator("#archived-badge")).to_have_count(0)
    asked: list[str] = []

    def agree(dialog: Dialog) -> None:
        asked.append(dialog.message)
        dialog.accept()

    page.once("dialog", agree)
    page.locator("#archive-button").click()
    expect(page.locator("#archived-badge")).to_be_visible()
    expect(page.locator("#archive-button")).to_have_text("Restore from the archive")
    assert asked == ["Archive this memory? Recall will skip it; it stays here and can be restored."]
    screenshot(page, "item-archived")

    assert recalled(inspector, "VPN") == [site.kept]
    assert listed(page, inspector, "VPN") == [site.kept]

    page.goto(inspector.url(f"/item/{site.archived}"))
    page.locator("#archive-button").click()  # restoring asks nothing
    expect(page.locator("#archived-badge")).to_have_count(0)
    expect(page.locator("#archive-button")).to_have_text("Archive")
    assert set(recalled(inspector, "VPN")) == {site.archived, site.kept}
    assert set(listed(page, inspector, "VPN")) == {site.archived, site.kept}
