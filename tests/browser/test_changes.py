"""The change log shows new entries as they are made, by other processes too: a write over
the MCP endpoint and one by the command line appear on the open page, without a reload."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from browser.harness import Inspector, mnemodb_cli, screenshot, seeded, serve_inspector
from native_support import Native


@pytest.fixture(scope="module")
def inspector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Inspector]:
    db = tmp_path_factory.mktemp("changes") / "memory.db"
    with seeded(db) as seed:
        seed.memory("The first entry of the log", tags=["log"])
        seed.entity("Logbook", "thing", ["kept on the bridge"])
    with serve_inspector(db) as running:
        yield running


def test_new_entries_appear_live(page: Page, inspector: Inspector) -> None:
    page.goto(inspector.url("/changes"))
    rows = page.locator("#change-rows tr[data-seq]")
    expect(rows).to_have_count(2)
    before = int(rows.first.get_attribute("data-seq") or 0)
    page.evaluate("window.mnemodbTestSameDocument = true")
    screenshot(page, "changes")

    with Native.connect(inspector.mcp) as client:
        over_mcp = client.memory("Written over MCP while the log is open", tags=["live"])["id"]
    by_cli = json.loads(
        mnemodb_cli(inspector.db, "remember", "Written by the CLI while the log is open", "--tag", "live", "--json")
    )["id"]

    fresh = page.locator("#change-rows tr.fresh")
    expect(fresh).to_have_count(2)
    expect(fresh.nth(0).locator(f'a[href="/ui/item/{by_cli}"]')).to_have_count(1)
    expect(fresh.nth(1).locator(f'a[href="/ui/item/{over_mcp}"]')).to_have_count(1)
    for row in (fresh.nth(0), fresh.nth(1)):
        expect(row).to_contain_text("create node")
    seqs = [int(s) for s in rows.evaluate_all("rows => rows.map(r => r.dataset.seq)")]
    assert seqs == sorted(seqs, reverse=True) and seqs[0] > before and len(seqs) == len(set(seqs)) == 4
    assert page.evaluate("window.mnemodbTestSameDocument") is True
    screenshot(page, "changes-live")
    # A row leads to the item it is about.
    fresh.nth(1).get_by_role("link").click()
    expect(page.locator("#content")).to_have_text("Written over MCP while the log is open")
