"""Who made each change (`Change.actor`), and the change log read a page at a time,
newest first, filtered by op, item, actor and time, within the reader's scopes."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.helpers import open_engine_at
from mnemodb.engine import Engine, InvalidArgument, NewMemory, NotFound
from mnemodb.engine.graph import NewEntity
from mnemodb.engine.items import Note
from mnemodb.engine.tokens import Grant, granted
from mnemodb.model.errors import Forbidden
from mnemodb.model.records import Change
from support import SCOPE_A, Clock

ALICE = Grant("alice", ("shared", SCOPE_A), "shared", ("shared", SCOPE_A))
CAROL = Grant("jwt:carol@example.com", ("shared",), "shared", ("shared",))


def test_each_change_names_the_grant_it_was_made_under(eng: Engine, tmp_path: Path) -> None:
    eng.memories.store("Made without a grant")
    with granted(ALICE):
        eng.items.remember([Note(NewMemory("Made with alice's token", ("x",)))])
        eng.graph.create_entities([NewEntity("Ada", "person")])
    with granted(CAROL):
        eng.memories.store("Made with alice's token", ["y"])
    log = eng.changes()
    assert [(c.op, c.actor) for c in log] == [
        ("create_node", None),
        ("create_node", "alice"),
        ("create_node", "alice"),
        ("add_tags", "jwt:carol@example.com"),
    ]
    # Every reader of entries sees it: an item's history and the scoped log too.
    assert [c.actor for c in eng.items.history("Ada")] == ["alice"]
    assert [c.actor for c in eng.items.changes(1, 10)[0]] == [None, "alice", "alice", "jwt:carol@example.com"]
    # An import is logged under the grant it runs under, as any write is.
    records = list(eng.export())
    with open_engine_at(tmp_path / "copy" / "memory.db") as copy, granted(CAROL):
        copy.import_records(records)
        assert {c.actor for c in copy.change_log.page(scopes=["shared"]).changes} == {"jwt:carol@example.com"}


def test_forgetting_redacts_an_entry_but_keeps_who_made_it(eng: Engine) -> None:
    with granted(ALICE):
        memory = eng.memories.store("A secret", ["private"]).memory
    eng.items.forget([memory.id])
    created, removed = eng.changes()
    assert created.data.get("redacted") is True
    assert (created.actor, removed.actor) == ("alice", None)


def _fill(eng: Engine, clock: Clock) -> dict[str, str]:
    """A log with two actors and changes without one, in two scopes, a second apart."""
    ids: dict[str, str] = {}
    ids["plain"] = eng.memories.store("Plain note").memory.id
    clock.now += 1000
    with granted(ALICE):
        ids["team"] = eng.memories.store("Team note", scope=SCOPE_A).memory.id
        clock.now += 1000
        ids["ada"] = eng.graph.create_entities([NewEntity("Ada", "person")])[0].id
        clock.now += 1000
        eng.items.archive(ids["plain"])
    clock.now += 1000
    with granted(CAROL):
        eng.memories.store("Plain note", ["tagged"])
    clock.now += 1000
    eng.items.unarchive(ids["plain"])
    return ids


def _seqs(changes: tuple[Change, ...]) -> list[int]:
    return [c.seq for c in changes]


def test_a_page_is_the_log_newest_first_filtered(eng: Engine, clock: Clock) -> None:
    start = clock.now
    ids = _fill(eng, clock)
    log = eng.change_log
    every = log.page(every_scope=True)
    assert _seqs(every.changes) == [6, 5, 4, 3, 2, 1] and every.next_before is None
    # The default read scopes are the engine's (shared here): scope A's entry is not there.
    assert _seqs(log.page().changes) == [6, 5, 4, 3, 1]
    assert _seqs(log.page(scopes=[SCOPE_A]).changes) == [2]
    assert _seqs(log.page(ops=["archive_node", "unarchive_node"]).changes) == [6, 4]
    assert _seqs(log.page(target=ids["plain"]).changes) == [6, 5, 4, 1]
    assert _seqs(log.page(target="Ada").changes) == [3]
    assert _seqs(log.page(target=eng.memories.search("Plain")[0].memory.hash).changes) == [6, 5, 4, 1]
    assert _seqs(log.page(actors=["alice"], every_scope=True).changes) == [4, 3, 2]
    assert _seqs(log.page(actors=[None]).changes) == [6, 1]
    assert _seqs(log.page(actors=[None, "jwt:carol@example.com"]).changes) == [6, 5, 1]
    assert _seqs(log.page(at_from=start + 2000, at_to=start + 4000).changes) == [4, 3]
    assert _seqs(log.page(ops=["create_node"], actors=["alice"], every_scope=True, at_to=start + 2000).changes) == [2]
    # A target that is gone is still found by its id; a name nothing holds is refused.
    eng.items.forget([ids["ada"]])
    assert [c.op for c in log.page(target=ids["ada"]).changes] == ["remove_node", "create_node"]
    with pytest.raises(NotFound):
        log.page(target="Nobody")


def test_pages_follow_on_from_next_before_to_the_end(eng: Engine, clock: Clock) -> None:
    for i in range(23):
        eng.memories.store(f"note {i}")
        clock.now += 1 if i % 3 else 0  # several entries in one millisecond
    seen: list[int] = []
    before = None
    while True:
        page = eng.change_log.page(limit=5, before_seq=before)
        seen += _seqs(page.changes)
        assert len(page.changes) <= 5
        if page.next_before is None:
            break
        assert page.next_before == page.changes[-1].seq
        before = page.next_before
    assert seen == list(range(23, 0, -1))


def test_a_page_keeps_to_the_reader_s_scopes(eng: Engine) -> None:
    """Under a grant a page holds its read scopes' entries, less those about a relation that
    touches an item the grant may not read; the whole log is not for it."""
    secret = eng.memories.store("Team A's secret", scope=SCOPE_A).memory
    shared = eng.memories.store("Shared note").memory
    eng.items.relate([(secret.id, shared.id, "mentions", {}, None)], scope="shared", scopes=[SCOPE_A, "shared"])
    reader = Grant("reader", ("shared",), "shared", ())
    with granted(reader):
        page = eng.change_log.page()
        assert [(c.op, c.target) for c in page.changes] == [("create_node", shared.id)]
        assert eng.change_log.page(ops=["create_edge"]).changes == ()
        with pytest.raises(Forbidden):
            eng.change_log.page(scopes=[SCOPE_A])
        with pytest.raises(Forbidden, match="every scope"):
            eng.change_log.page(every_scope=True)
    with granted(ALICE):
        assert [c.op for c in eng.change_log.page().changes] == ["create_edge", "create_node", "create_node"]
    # Without a grant, every scope is there for the asking.
    assert len(eng.change_log.page(every_scope=True).changes) == 3


def test_a_page_skips_unreadable_entries_without_coming_up_short(eng: Engine) -> None:
    """Entries a reader may not see are skipped inside the store's pages: a page is still full."""
    secret = eng.memories.store("Team A's secret", scope=SCOPE_A).memory
    for i in range(6):
        note = eng.memories.store(f"Shared note {i}").memory
        eng.items.relate([(secret.id, note.id, "mentions", {}, None)], scope="shared", scopes=[SCOPE_A, "shared"])
    with granted(Grant("reader", ("shared",), "shared", ())):
        page = eng.change_log.page(limit=3)
        assert [c.op for c in page.changes] == ["create_node"] * 3
        assert page.next_before is not None
        rest = eng.change_log.page(limit=10, before_seq=page.next_before)
        assert [c.op for c in rest.changes] == ["create_node"] * 3 and rest.next_before is None


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"limit": 0}, "limit must be from 1 to 1000"),
        ({"limit": 1001}, "limit must be from 1 to 1000"),
        ({"before_seq": 0}, "before_seq must be at least 1"),
        ({"ops": [""]}, "an op to filter by"),
        ({"every_scope": True, "scopes": ["shared"]}, "not both"),
        ({"target": ""}, "target must be"),
    ],
)
def test_a_bad_page_request_is_refused(eng: Engine, options: dict[str, object], says: str) -> None:
    with pytest.raises(InvalidArgument, match=says):
        eng.change_log.page(**options)  # type: ignore[arg-type]
