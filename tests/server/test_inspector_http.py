"""The web inspector over HTTP, in process: every page and change, and every refusal.

The whole HTTP application is driven (`build_app`: Host and Origin checks, the MCP
endpoint's authentication beside the inspector's own sign-in), over a real database, with
Starlette's test client. What a browser does with the pages is in tests/browser.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx2 as httpx
import pytest
from starlette.testclient import TestClient

from mnemodb.engine import Engine
from mnemodb.engine.graph import NewEntity
from mnemodb.engine.items import Note
from mnemodb.model.records import Entity, Memory, NewMemory
from mnemodb.server import config
from mnemodb.server.app import build_server
from mnemodb.server.http import Metrics, build_app
from mnemodb.server.inspector.app import CONTENT_SECURITY_POLICY, CSRF_COOKIE, SESSION_COOKIE
from mnemodb.server.profiles import build_profile
from mnemodb.server.settings import HttpSettings

BASE = "http://127.0.0.1:8765"
TEAM_A = "01JA0000000000000000000000"
TEAM_B = "01JB0000000000000000000000"


@dataclass
class Site:
    engine: Engine
    client: TestClient

    def csrf(self) -> str:
        """The page's CSRF token: the cookie a first GET hands out."""
        if CSRF_COOKIE not in self.client.cookies:
            self.client.get("/ui/login")
        return str(self.client.cookies[CSRF_COOKIE])

    def post(
        self, path: str, data: Mapping[str, str | list[str]], headers: Mapping[str, str] | None = None
    ) -> httpx.Response:
        return self.client.post(path, data={"csrf": self.csrf(), **data}, headers=headers, follow_redirects=False)

    def sign_in(self, secret: str) -> None:
        response = self.client.post(
            "/ui/login", data={"csrf": self.csrf(), "token": secret, "next": "/ui/"}, follow_redirects=False
        )
        assert response.status_code == 303, response.text


def _site(engine: Engine, db: Path, settings: HttpSettings) -> Iterator[Site]:
    profile = build_profile("native", config.load(argparse.Namespace(profile="native", db=str(db)), {}))
    app = build_app(build_server(profile, engine), engine, settings, Metrics(engine))
    with TestClient(app, base_url=BASE) as client:
        yield Site(engine, client)


@pytest.fixture
def site(engine: Engine, db_path: Path) -> Iterator[Site]:
    yield from _site(engine, db_path, HttpSettings())


def remember(
    engine: Engine,
    content: str,
    *,
    scope: str | None = None,
    tags: tuple[str, ...] = (),
    importance: int = 0,
    memory_type: str = "general",
) -> Memory:
    outcomes, _ = engine.items.remember([Note(NewMemory(content, tags, importance, memory_type))], scope=scope)
    memory = outcomes[0].item
    assert isinstance(memory, Memory)
    return memory


# -- pages ------------------------------------------------------------------------------------------------


def test_every_page_renders_with_the_security_headers(site: Site) -> None:
    memory = remember(site.engine, "Ada wrote the first program", tags=("history",), importance=3)
    site.engine.graph.create_entities([NewEntity("Ada", "person", ("a mathematician",))])
    for path in (
        "/ui/",
        "/ui/memories",
        "/ui/memories?q=program",
        "/ui/memories?tag=history&min=1&max=5&from=2000-01-01&to=2999-12-31",
        "/ui/entities",
        "/ui/entities?q=Ada",
        "/ui/changes",
        f"/ui/item/{memory.id}",
        "/ui/item/Ada",
        "/ui/login",
        "/ui/static/inspector.css",
        "/ui/static/vendor/htmx-2.0.11.min.js",
    ):
        response = site.client.get(path)
        assert response.status_code == 200, (path, response.text)
        assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "same-origin"
    assert "default-src 'self'" in CONTENT_SECURITY_POLICY and "unsafe" not in CONTENT_SECURITY_POLICY


def test_pages_show_what_the_database_holds(site: Site) -> None:
    memory = remember(site.engine, "Grace built the first compiler", tags=("history",))
    remember(site.engine, "Tea is best at 80 degrees", memory_type="preference")
    page = site.client.get("/ui/memories?q=compiler").text
    assert "Grace built the first compiler" in page and "Tea is best" not in page
    assert "Tea is best" in site.client.get("/ui/memories?type=preference").text
    assert "Tea is best" not in site.client.get("/ui/memories?tag=history").text
    item_page = site.client.get(f"/ui/item/{memory.hash}").text
    assert memory.id in item_page and "history" in item_page
    assert '"count-memories">2<' in site.client.get("/ui/").text


def test_an_htmx_request_gets_the_results_alone(site: Site) -> None:
    remember(site.engine, "Grace built the first compiler")
    fragment = site.client.get("/ui/memories?q=compiler", headers={"HX-Request": "true"}).text
    assert "Grace built" in fragment and "<html" not in fragment


def test_the_csrf_cookie_is_private_to_the_inspector(site: Site) -> None:
    response = site.client.get("/ui/")
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{CSRF_COOKIE}=")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/ui" in cookie
    # Handed out once: a browser that has one keeps it.
    assert "set-cookie" not in site.client.get("/ui/").headers


# -- changes and their refusals -----------------------------------------------------------------------


def test_a_post_without_the_page_s_token_changes_nothing(site: Site) -> None:
    memory = remember(site.engine, "Keep me")
    for data, headers in (
        ({"content": "changed"}, {}),
        ({"content": "changed", "csrf": "x" * 43}, {}),
        ({"content": "changed"}, {"X-CSRF-Token": "wrong"}),
    ):
        response = site.client.post(f"/ui/item/{memory.id}/edit", data=data, headers=headers, follow_redirects=False)
        assert response.status_code == 403
        assert "security token" in response.text
    got = site.engine.memories.get(memory.hash)
    assert got is not None and got.content == "Keep me"


def test_the_token_may_come_in_the_header_htmx_sends(site: Site) -> None:
    memory = remember(site.engine, "Old text")
    response = site.client.post(
        f"/ui/item/{memory.id}/edit",
        data={"content": "New text"},
        headers={"X-CSRF-Token": site.csrf(), "HX-Request": "true"},
    )
    assert response.status_code == 204
    assert response.headers["HX-Location"].startswith(f"/ui/item/{memory.id}")
    after = site.engine.items.get([memory.id])[0]
    assert isinstance(after, Memory) and after.content == "New text"


def test_a_post_from_another_site_is_refused_even_with_the_token(engine: Engine, db_path: Path) -> None:
    # An origin the operator allowed for MCP clients is still not the inspector's own page.
    for site in _site(engine, db_path, HttpSettings(allowed_origins=("https://app.example.com",))):
        memory = remember(engine, "Keep me")
        response = site.post(
            f"/ui/item/{memory.id}/edit", {"content": "x"}, headers={"Origin": "https://app.example.com"}
        )
        assert response.status_code == 403
        assert "another site" in response.text
        response = site.post(f"/ui/item/{memory.id}/edit", {"content": "x"}, headers={"Sec-Fetch-Site": "cross-site"})
        assert response.status_code == 403
        fine = site.post(f"/ui/item/{memory.id}/edit", {"content": "x"}, headers={"Origin": BASE})
        assert fine.status_code == 303


def test_an_evil_host_or_origin_is_refused_before_the_inspector(site: Site) -> None:
    assert site.client.get("/ui/", headers={"Host": "evil.example"}).status_code == 421
    assert site.client.get("/ui/", headers={"Origin": "https://evil.example"}).status_code == 403


def test_other_methods_are_refused(site: Site) -> None:
    for method in ("PUT", "DELETE", "PATCH"):
        assert site.client.request(method, "/ui/memories").status_code == 405


def test_an_oversized_form_is_refused(site: Site) -> None:
    memory = remember(site.engine, "Keep me")
    response = site.post(f"/ui/item/{memory.id}/edit", {"content": "x" * (2 << 20)})
    assert response.status_code == 413


def test_edit_shows_in_the_history_with_a_diff(site: Site) -> None:
    memory = remember(site.engine, "The meeting is on Monday", tags=("work",))
    response = site.post(
        f"/ui/item/{memory.id}/edit",
        {"content": "The meeting is on Tuesday", "tags": "work, urgent", "importance": "4", "type": "event"},
    )
    assert response.status_code == 303
    page = site.client.get(f"/ui/item/{memory.id}").text
    assert '<span class="removed">Monday</span>' in page and '<span class="added">Tuesday</span>' in page
    after = site.engine.items.get([memory.id])[0]
    assert isinstance(after, Memory)
    assert (after.content, set(after.tags), after.importance, after.memory_type) == (
        "The meeting is on Tuesday",
        {"work", "urgent"},
        4,
        "event",
    )


def test_bad_input_gets_a_clear_message(site: Site) -> None:
    memory = remember(site.engine, "Keep me")
    cases = {
        "/ui/memories?min=lots": "min must be a whole number",
        "/ui/memories?min=5&max=1": "the importance range is empty",
        "/ui/memories?from=yesterday": "from must be a date",
        "/ui/memories?offset=-1": "offset must be from 0",
        "/ui/item/nothing-here": "nothing readable is named",
    }
    for path, message in cases.items():
        response = site.client.get(path)
        assert response.status_code in (400, 404), path
        assert message in response.text, (path, response.text)
    response = site.post(f"/ui/item/{memory.id}/edit", {"importance": "very"})
    assert response.status_code == 400 and "importance must be a whole number" in response.text
    response = site.post("/ui/memories/bulk", {"action": "forget"})
    assert response.status_code == 400 and "tick at least one" in response.text


def test_supersede_keeps_the_old_memory_marked_as_replaced(site: Site) -> None:
    old = remember(site.engine, "Bob lives in Paris")
    response = site.post(f"/ui/item/{old.id}/supersede", {"content": "Bob lives in Lyon"})
    assert response.status_code == 303
    new_id = re.search(r"/ui/item/([0-9A-Z]{26})", response.headers["location"])
    assert new_id is not None and new_id.group(1) != old.id
    assert "Replaced by" in site.client.get(f"/ui/item/{old.id}").text
    assert "Replaces" in site.client.get(f"/ui/item/{new_id.group(1)}").text


def test_forget_and_bulk_forget(site: Site) -> None:
    one, two, three = (remember(site.engine, f"memory number {n}") for n in ("one", "two", "three"))
    assert site.post(f"/ui/item/{one.id}/forget", {}).status_code == 303
    response = site.post("/ui/memories/bulk", {"action": "forget", "ref": [two.id, three.id]})
    assert response.status_code == 303 and "Forgot+2" in response.headers["location"]
    assert site.engine.items.get([one.id, two.id, three.id]) == [None, None, None]


def test_observations_and_relations_of_an_entity(site: Site) -> None:
    site.engine.graph.create_entities([NewEntity("Ada", "person", ("likes tea",)), NewEntity("Babbage", "person")])
    assert site.post("/ui/item/Ada/observation", {"action": "add", "new": "wrote notes"}).status_code == 303
    edit = {"action": "edit", "old": "likes tea", "new": "likes green tea"}
    assert site.post("/ui/item/Ada/observation", edit).status_code == 303
    assert site.post("/ui/item/Ada/observation", {"action": "remove", "old": "wrote notes"}).status_code == 303
    found = site.engine.items.get(["Ada"])[0]
    assert isinstance(found, Entity) and found.observations == ("likes green tea",)
    opened = site.post("/ui/item/Ada/relation", {"type": "worked_with", "other": "Babbage", "direction": "out"})
    assert opened.status_code == 303
    page = site.client.get("/ui/item/Ada").text
    assert "worked_with" in page and 'class="open"' in page
    edge_id = re.search(r'name="edge" value="([0-9A-Z]{26})"', page)
    assert edge_id is not None
    assert site.post("/ui/item/Ada/relation/close", {"edge": edge_id.group(1)}).status_code == 303
    assert 'class="ended"' in site.client.get("/ui/item/Ada").text


def test_the_change_log_pages_and_polls(site: Site) -> None:
    memories = [remember(site.engine, f"note {n}") for n in range(30)]
    page = site.client.get("/ui/changes").text
    seqs = [int(s) for s in re.findall(r'data-seq="(\d+)"', page)]
    assert seqs == sorted(seqs, reverse=True) and len(seqs) == 25
    older = re.search(r'href="(/ui/changes\?[^"]*before=\d+)"', page)
    assert older is not None
    rest = [int(s) for s in re.findall(r'data-seq="(\d+)"', site.client.get(older.group(1).replace("&amp;", "&")).text)]
    assert rest and max(rest) < min(seqs)
    last = max(seqs)
    assert re.findall(r'data-seq="(\d+)"', site.client.get(f"/ui/changes?after={last}").text) == []
    remember(site.engine, "a new one")
    assert len(re.findall(r'data-seq="(\d+)"', site.client.get(f"/ui/changes?after={last}").text)) == 1
    only = site.client.get(f"/ui/changes?item={memories[0].id}").text
    assert re.findall(r'data-seq="(\d+)"', only) and memories[0].id in only


# -- who may see and change what ------------------------------------------------------------------------


def test_with_tokens_every_page_needs_a_signed_in_browser(site: Site) -> None:
    _, secret = site.engine.tokens.create("alice")
    response = site.client.get("/ui/memories?q=x", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"].startswith("/ui/login?next=%2Fui%2Fmemories%3Fq%3Dx")
    htmx = site.client.get("/ui/memories", headers={"HX-Request": "true"}, follow_redirects=False)
    assert htmx.status_code == 401 and htmx.headers["HX-Redirect"].startswith("/ui/login")
    # The assets and the login form need nothing.
    assert site.client.get("/ui/static/inspector.css").status_code == 200
    assert site.client.get("/ui/login").status_code == 200
    wrong = site.client.post("/ui/login", data={"csrf": site.csrf(), "token": "mnemodb_nope"}, follow_redirects=False)
    assert wrong.status_code == 401 and "not valid" in wrong.text
    assert SESSION_COOKIE not in wrong.cookies
    response = site.client.post(
        "/ui/login", data={"csrf": site.csrf(), "token": secret, "next": "/ui/memories"}, follow_redirects=False
    )
    assert response.status_code == 303 and response.headers["location"] == "/ui/memories"
    cookie = response.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/ui" in cookie
    assert site.client.get("/ui/memories").status_code == 200
    assert "alice" in site.client.get("/ui/").text


def test_signing_in_never_sends_the_browser_elsewhere(site: Site) -> None:
    _, secret = site.engine.tokens.create("alice")
    for target in ("//evil.example/ui/", "https://evil.example/", "/ui/\\evil", "/elsewhere"):
        response = site.client.post(
            "/ui/login", data={"csrf": site.csrf(), "token": secret, "next": target}, follow_redirects=False
        )
        assert response.headers["location"] == "/ui/", target


def test_a_revoked_token_stops_working_at_once(site: Site) -> None:
    token, secret = site.engine.tokens.create("alice")
    site.sign_in(secret)
    assert site.client.get("/ui/memories").status_code == 200
    site.engine.tokens.revoke(token.id)
    response = site.client.get("/ui/memories", follow_redirects=False)
    assert response.status_code == 303 and "Sign+in+again" in response.headers["location"].replace("%20", "+")
    assert f"{SESSION_COOKIE}=;" in response.headers["set-cookie"]


def test_signing_out_forgets_the_token(site: Site) -> None:
    _, secret = site.engine.tokens.create("alice")
    site.sign_in(secret)
    response = site.post("/ui/logout", {})
    assert response.status_code == 303
    site.client.cookies.delete(SESSION_COOKIE, path="/ui")
    assert site.client.get("/ui/memories", follow_redirects=False).status_code == 303


def test_beyond_loopback_a_token_is_always_needed(engine: Engine, db_path: Path) -> None:
    for site in _site(engine, db_path, HttpSettings(host="0.0.0.0", insecure=False)):
        assert site.client.get("/ui/", follow_redirects=False).status_code == 303


def test_a_tenant_sees_and_changes_nothing_of_another(site: Site) -> None:
    engine = site.engine
    _, alice = engine.tokens.create("alice", write_scope=TEAM_A)
    _, bob = engine.tokens.create("bob", write_scope=TEAM_B)
    _, reader = engine.tokens.create("reader", read_scopes=[TEAM_A], read_only=True)
    secret = remember(engine, "Alice's secret plan", scope=TEAM_A, tags=("plan",))
    engine.graph.create_entities([NewEntity("Hidden", "project", ("only team A knows",))], scope=TEAM_A)
    remember(engine, "Bob's note", scope=TEAM_B)
    site.sign_in(bob)
    for path in (
        "/ui/",
        "/ui/memories",
        "/ui/memories?q=secret+plan",
        "/ui/entities",
        "/ui/changes",
        "/ui/memories?tag=plan",
    ):
        page = site.client.get(path).text
        assert "Alice" not in page and "Hidden" not in page and TEAM_A not in page, path
    assert "Bob&#39;s note" in site.client.get("/ui/memories").text
    for path in (f"/ui/item/{secret.id}", f"/ui/item/{secret.hash}", "/ui/item/Hidden"):
        assert site.client.get(path).status_code == 404, path
    # The log about it reads as the log about nothing: no entry, and no word that it exists.
    assert re.findall(r'data-seq="(\d+)"', site.client.get(f"/ui/changes?item={secret.id}").text) == []
    assert site.client.get(f"/ui/memories?scope={TEAM_A}").status_code == 403
    for path, data in (
        (f"/ui/item/{secret.id}/edit", {"content": "stolen"}),
        (f"/ui/item/{secret.id}/forget", {}),
        (f"/ui/item/{secret.id}/supersede", {"content": "stolen"}),
        ("/ui/item/Hidden/observation", {"action": "add", "new": "stolen"}),
        ("/ui/memories/bulk", {"action": "forget", "ref": secret.id}),
    ):
        response = site.post(path, data)
        assert response.status_code in (303, 404), (path, response)
    kept = engine.memories.get(secret.hash, scopes=[TEAM_A])
    assert kept is not None and kept.content == "Alice's secret plan"
    hidden = engine.items.get(["Hidden"], scopes=[TEAM_A])[0]
    assert hidden is not None and getattr(hidden, "observations", None) == ("only team A knows",)
    # A token that only reads team A sees it, and may change none of it.
    site.client.cookies.clear()
    site.sign_in(reader)
    assert "secret plan" in site.client.get("/ui/memories").text
    page = site.client.get(f"/ui/item/{secret.id}").text
    assert 'id="edit-form"' not in page
    response = site.post(f"/ui/item/{secret.id}/edit", {"content": "stolen"})
    assert response.status_code == 403 and "read-only" in response.text
    kept = engine.memories.get(secret.hash, scopes=[TEAM_A])
    assert kept is not None and kept.content == "Alice's secret plan"
    assert alice


VENDORED = {
    "htmx-2.0.11.min.js": "d6fdc75f204e6bdefa99b69bf1e6d4ac69b8a364f77929f45c13476b4000f717",
    "cytoscape-3.35.0.min.js": "71fa9ebec21a7ca2c40cff6aacc30d1f6464e363662ad4b2c197e1adc770cd94",
}


def test_vendored_scripts_are_the_pinned_releases_with_their_licences() -> None:
    """The files are the npm releases their names say (checked against the sums recorded
    when they were added), each beside its licence."""
    import hashlib

    from mnemodb.server import inspector

    vendor = Path(inspector.__file__).parent / "static" / "vendor"
    for name, digest in VENDORED.items():
        assert hashlib.sha256((vendor / name).read_bytes()).hexdigest() == digest, name
        licence = vendor / name.replace(".min.js", ".LICENSE")
        assert licence.read_text(encoding="utf-8").strip(), licence
    assert sorted(p.name for p in vendor.glob("*.js")) == sorted(VENDORED)


def test_archive_hides_a_memory_from_recall_and_the_list_and_restore_brings_it_back(site: Site) -> None:
    kept = remember(site.engine, "The office wifi password is hunter2")
    other = remember(site.engine, "The office coffee machine is on floor 2")
    assert site.post(f"/ui/item/{kept.id}/archive", {}).status_code == 303
    assert "hunter2" not in site.client.get("/ui/memories?q=office").text
    assert [m.memory.id for m in site.engine.memories.recall("office wifi password").memories] == [other.id]
    shown = site.client.get("/ui/memories?q=office&archived=show").text
    assert "hunter2" in shown and '<span class="badge">archived</span>' in shown
    page = site.client.get(f"/ui/item/{kept.id}").text
    assert 'id="archived-badge"' in page and "archive node" in page
    assert site.post(f"/ui/item/{kept.id}/unarchive", {}).status_code == 303
    assert "hunter2" in site.client.get("/ui/memories?q=office").text
    response = site.post("/ui/memories/bulk", {"action": "archive", "ref": [kept.id, other.id]})
    assert response.status_code == 303 and "Archived+2" in response.headers["location"]
    assert "office" not in site.client.get("/ui/memories").text.split("<tbody>")[-1]
    assert site.client.get("/ui/memories?archived=maybe").status_code == 400


def test_importance_range_and_the_history_s_author(site: Site) -> None:
    for n in range(6):
        remember(site.engine, f"rated memory {n}", importance=n)
    page = site.client.get("/ui/memories?min=2&max=3").text
    assert re.findall(r"rated memory (\d)", page) == ["3", "2"]
    token, secret = site.engine.tokens.create("carol")
    site.sign_in(secret)
    memory = remember(site.engine, "written without a token")
    assert site.post(f"/ui/item/{memory.id}/edit", {"content": "edited by carol"}).status_code == 303
    history = site.client.get(f"/ui/item/{memory.id}").text
    assert "by carol" in history and "by no token (local)" in history
    only_carol = site.client.get("/ui/changes?token=carol").text
    assert len(re.findall(r'data-seq="(\d+)"', only_carol)) == 1 and token.name == "carol"
    assert re.findall(r'data-seq="(\d+)"', site.client.get("/ui/changes?token=nobody").text) == []


def test_the_overview_shows_growth_and_the_largest_entities(site: Site) -> None:
    for n in range(3):
        remember(site.engine, f"memory {n}")
    site.engine.graph.create_entities([NewEntity("Ada", "person", ("a", "b")), NewEntity("Bob", "person", ("a",))])
    page = site.client.get("/ui/").text
    bars = re.findall(r"<title>(\d{4}-\d\d-\d\d): (\d+) memor", page)
    assert bars and sum(int(n) for _, n in bars) == 3
    largest = page.split('id="largest"')[1]
    assert largest.index("Ada") < largest.index("Bob") and "2 obs." in largest


def test_change_rows_say_what_they_are_about_and_a_done_message_shows(site: Site) -> None:
    memory = remember(site.engine, "The boiler is serviced in March")
    site.engine.graph.create_entities([NewEntity("Ada", "person")])
    gone = remember(site.engine, "A note soon forgotten")
    response = site.post(f"/ui/item/{gone.id}/forget", {})
    page = site.client.get("/ui/changes").text
    assert f'href="/ui/item/{memory.id}">The boiler is serviced in March</a>' in page
    assert ">Ada</a>" in page
    # What a forgotten memory said left the log with it: its entries show its id, and lead
    # to its entries rather than to a page it no longer has.
    assert f'href="/ui/changes?item={gone.id}" class="gone" title="no longer there: its entries">{gone.id}</a>' in page
    assert "Forgotten." in site.client.get(response.headers["location"]).text


def test_the_log_s_position_is_the_operator_s_figure_only(site: Site) -> None:
    assert "changes logged" in site.client.get("/ui/").text
    _, secret = site.engine.tokens.create("alice")
    site.sign_in(secret)
    assert "changes logged" not in site.client.get("/ui/").text


def test_no_ui_serves_no_inspector(engine: Engine, db_path: Path) -> None:
    for site in _site(engine, db_path, HttpSettings(ui=False)):
        assert site.client.get("/ui/").status_code == 404
        assert site.client.get("/ui/static/inspector.css").status_code == 404
        assert site.client.get("/healthz").status_code == 200
