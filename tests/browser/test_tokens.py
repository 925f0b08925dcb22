"""Signing in with a token, on `mnemodb ui` over a database that holds tokens; and tenancy:
a token sees nothing of another scope's items on any page, even while they are written."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import unquote

import pytest
from playwright.sync_api import Page, Response, expect

from browser.harness import (
    Inspector,
    Watch,
    create_token,
    screenshot,
    seeded,
    serve_inspector,
    signed_in,
)
from native_support import SCOPE_A, SCOPE_B, Native


@dataclass(frozen=True)
class Tenant:
    name: str
    scope: str
    token: str
    memory: str
    """The id of a memory of its own."""
    entity: str
    """The id of an entity of its own."""
    words: tuple[str, ...]
    """Words only its own items hold."""


@dataclass(frozen=True)
class Seeded:
    inspector: Inspector
    alpha: Tenant
    beta: Tenant


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    db = tmp_path_factory.mktemp("tokens") / "memory.db"
    tenants: dict[str, Tenant] = {}
    with seeded(db) as seed:
        for name, scope, animal, project in (
            ("alpha", SCOPE_A, "Aardvark", "Apollo"),
            ("beta", SCOPE_B, "Bison", "Borealis"),
        ):
            entity = seed.entity(f"{project} project", "project", [f"{animal} sponsors it"], scope=scope)
            seed.entity(f"{animal} team", "team", scope=scope)
            seed.relate(f"{animal} team", f"{project} project", "runs", scope=scope)
            memory = seed.memory(
                f"{animal} plans: the {project} launch slips a week",
                tags=[animal.lower(), "plans"],
                importance=5,
                about=[f"{project} project"],
                scope=scope,
            )
            tenants[name] = Tenant(name, scope, "", memory, entity, (animal, project, scope))
    for name, tenant in tenants.items():
        token = create_token(db, name, "--write-scope", tenant.scope)
        tenants[name] = Tenant(name, tenant.scope, token, tenant.memory, tenant.entity, tenant.words)
    with serve_inspector(db, launcher="ui") as running:
        yield Seeded(running, tenants["alpha"], tenants["beta"])


def signing_in(response: Response) -> bool:
    return response.request.method == "POST" and response.url.endswith("/ui/login")


def test_signing_in_with_a_token(page: Page, site: Seeded, watch: Watch) -> None:
    inspector = site.inspector
    page.goto(inspector.url("/memories?tag=plans"))
    expect(page).to_have_url(re.compile(r"/ui/login\?next=%2Fui%2Fmemories%3Ftag%3Dplans$"))
    expect(page.get_by_label("Token")).to_be_focused()
    screenshot(page, "login")

    watch.expect_error(r"status of 401")
    page.get_by_label("Token").fill("mnemodb_not-a-token")
    with page.expect_response(signing_in) as refused:
        page.get_by_role("button", name="Sign in").click()
    assert refused.value.status == 401, refused.value.status
    expect(page.get_by_role("alert")).to_be_visible()
    expect(page.locator(".who")).to_have_count(0)

    page.get_by_label("Token").fill(site.alpha.token)
    with page.expect_response(signing_in) as accepted:
        page.get_by_role("button", name="Sign in").click()
    assert accepted.value.status == 303, accepted.value.status
    # Back where it was going, as the token's holder.
    expect(page).to_have_url(inspector.url("/memories?tag=plans"))
    expect(page.locator(".who .token")).to_have_text("alpha")
    expect(page.locator("table.memories tbody tr.memory")).to_have_count(1)
    # The token is kept in a cookie the page's scripts cannot read.
    assert site.alpha.token not in page.evaluate("document.cookie")

    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(re.compile(r"/ui/login$"))
    page.goto(inspector.url("/"))
    expect(page).to_have_url(re.compile(r"/ui/login\?next="))


def pages_of(mine: Tenant, theirs: Tenant) -> list[tuple[str, str | None]]:
    """Every page a token may ask for, theirs named every way the pages take a name; with
    what of its own each page must show (None: nothing in particular)."""
    return [
        ("/", mine.words[0]),
        ("/memories", mine.words[0]),
        ("/memories?q=plans", mine.words[0]),
        (f"/memories?q={theirs.words[0]}", None),
        (f"/memories?tag={theirs.words[0].lower()}", None),
        ("/entities", mine.words[1]),
        (f"/entities?q={theirs.words[1]}", None),
        ("/changes", mine.memory),
        (f"/item/{mine.entity}", mine.words[0]),
        (f"/item/{theirs.memory}", None),
        (f"/item/{theirs.entity}", None),
        (f"/item/{theirs.words[1]}%20project", None),
        (f"/changes?item={theirs.entity}", None),
        (f"/memories?scope={theirs.scope}", None),
        (f"/entities?scope={theirs.scope}", None),
        (f"/changes?scope={theirs.scope}", None),
        ("/graph", mine.words[1]),
        (f"/graph?center={mine.entity}&hops=3", mine.words[0]),
        (f"/graph?q={theirs.words[1]}", None),
        (f"/graph?center={theirs.entity}", None),
        (f"/graph/panel/{theirs.entity}", None),
    ]


# What a page shows, read in one call: its markup (and a graph's drawn elements), the text
# of its main part, the token's name in its header, its heading.
SEEN = """() => ({
    html: document.documentElement.outerHTML
        + (window.mnemodbGraph ? JSON.stringify(window.mnemodbGraph.elements().jsons()) : ""),
    shown: document.querySelector("main") ? document.querySelector("main").innerText : "",
    who: (document.querySelector(".who .token") || {}).textContent || "",
    title: (document.querySelector("h1") || {}).textContent || "",
})"""


@pytest.mark.parametrize("reader", ["alpha", "beta"])
def test_a_tenant_sees_nothing_of_another(page: Page, site: Seeded, watch: Watch, reader: str) -> None:
    inspector = site.inspector
    mine, theirs = (site.alpha, site.beta) if reader == "alpha" else (site.beta, site.alpha)
    # Their items are answered as items nobody has, or their scope as one not granted.
    watch.expect_error(r"status of 40[34]")
    signed_in(page, mine.token)
    secrets = (*theirs.words, theirs.memory, theirs.entity)
    for path, own in pages_of(mine, theirs):
        response = page.goto(inspector.url(path))
        assert response is not None
        if page.locator("#graph").count():
            page.wait_for_selector('#graph[data-state="ready"]')
        seen = page.evaluate(SEEN)
        assert seen["who"] == mine.name, (path, seen["who"])
        # Nowhere in the page, but for what the address itself says...
        html, asked = seen["html"].lower(), unquote(path).lower()
        leaked = [w for w in secrets if w.lower() in html and w.lower() not in asked]
        # ...and not even that in what a page that answered shows (an error echoes the name asked).
        if response.ok:
            leaked += [w for w in secrets if w.lower() in seen["shown"].lower()]
        else:
            assert seen["title"] in ("Not found", "Not allowed"), (path, seen["title"])
        assert not leaked, f"{mine.name} sees {leaked} of {theirs.name} on {path}"
        if own is not None:  # the page does show the token's own
            assert own.lower() in html, f"{mine.name} does not see its own {own} on {path}"


def test_a_tenant_s_change_log_shows_only_its_own_new_entries(open_page: Callable[[], Page], site: Seeded) -> None:
    """Alpha watches its change log while beta, then alpha, write over MCP with their tokens."""
    inspector = site.inspector
    page = open_page()
    signed_in(page, site.alpha.token)
    page.goto(inspector.url("/changes"))
    with Native.connect(inspector.mcp, token=site.beta.token) as beta:
        theirs = beta.memory("Bison secret: the Borealis budget doubles", tags=["bison"])["id"]
    with Native.connect(inspector.mcp, token=site.alpha.token) as alpha:
        ours = alpha.memory("Aardvark note: the Apollo budget holds", tags=["aardvark"])["id"]
    expect(page.locator(f'#change-rows tr.fresh a[href="/ui/item/{ours}"]')).to_have_count(1)
    assert theirs not in page.content()
    expect(page.locator("#change-rows tr.fresh")).to_have_count(1)
    screenshot(page, "changes-tenant")
    # What each wrote is found by its writer, and by nobody else.
    for token, text in ((site.alpha.token, "Apollo budget holds"), (site.beta.token, "Borealis budget doubles")):
        reader = open_page()
        signed_in(reader, token)
        reader.goto(inspector.url("/memories?q=budget"))
        expect(reader.locator("table.memories tbody tr.memory")).to_have_count(1)
        expect(reader.locator("table.memories")).to_contain_text(text)
