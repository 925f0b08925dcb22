"""A word search under a filter of current items only, or of scopes alone, leaves out the
reads such a filter makes pointless: the superseding memories of a page that can hold no
superseded memory, and the judging of entities that nothing but scopes narrows. Its pages
must be those of the search that does them, on a real database."""

from __future__ import annotations

import pytest

from mnemodb.engine import Engine
from mnemodb.engine.graph import NewEntity
from mnemodb.engine.items import ItemPage, Note
from mnemodb.model.records import ItemFilter, NewMemory
from mnemodb.store.sqlite import SqliteStore


def _remember(eng: Engine, content: str, supersedes: str | None = None) -> str:
    [done], _ = eng.items.remember([Note(NewMemory(content), (), supersedes)])
    assert done.item is not None
    return done.item.id


def _placed(page: ItemPage) -> list[tuple[str, float | None, tuple[str, ...]]]:
    return [(f.item.id, f.score, f.superseded_by) for f in page.found]


@pytest.fixture
def seeded(eng: Engine) -> dict[str, str]:
    """Lantern memories, one superseded by a newer one, and lantern entities."""
    old = _remember(eng, "the lantern room is on floor 3")
    new = _remember(eng, "the lantern room is on floor 4", supersedes=old)
    for i in range(6):
        _remember(eng, f"lantern note {i} about the harbor")
    eng.graph.create_entities([NewEntity(f"Lantern Keeper {i}", "person", (f"keeps lantern {i}",)) for i in range(4)])
    eng.graph.create_entities([NewEntity("Harbor Master", "person", ("watches the lantern",))])
    return {"old": old, "new": new}


def test_a_current_only_page_holds_no_superseded_memory(eng: Engine, seeded: dict[str, str]) -> None:
    current = eng.items.search("lantern room floor", where=ItemFilter(current_only=True), limit=20)
    ids = [f.item.id for f in current.found]
    assert seeded["new"] in ids and seeded["old"] not in ids
    assert all(f.superseded_by == () for f in current.found)
    # Without the filter the superseded memory is found, and says what replaced it.
    every = eng.items.search("lantern room floor", limit=20)
    by_id = {f.item.id: f.superseded_by for f in every.found}
    assert by_id[seeded["old"]] == (seeded["new"],)
    assert by_id[seeded["new"]] == ()


@pytest.mark.parametrize("current_only", [True, False])
@pytest.mark.parametrize("limit", [1, 3, 20])
def test_entities_under_a_filter_of_scopes_alone_are_those_a_judged_filter_passes(
    eng: Engine, seeded: dict[str, str], current_only: bool, limit: int
) -> None:
    # A creation time from the epoch on passes every item, but is judged row by row.
    plain = ItemFilter(current_only=current_only)
    judged = ItemFilter(current_only=current_only, created_from=0)
    for query in ("lantern", "lantern keeper harbor", "harbor master"):
        for kinds in (("entity",), ("memory", "entity")):
            first = eng.items.search(query, where=plain, kinds=kinds, limit=limit)
            second = eng.items.search(query, where=judged, kinds=kinds, limit=limit)
            assert _placed(first) == _placed(second), (query, kinds)
            assert first.more == second.more
            assert first.found


def test_a_plain_current_search_runs_no_superseding_or_entity_judging_statement(
    eng: Engine, seeded: dict[str, str]
) -> None:
    store = eng.store
    if not isinstance(store, SqliteStore):
        pytest.skip("reads the SQLite store's statements")
    statements: list[str] = []

    def search(where: ItemFilter) -> ItemPage:
        statements.clear()
        # The read connection a search on this thread uses is the one this read opens.
        with store.read() as tx:
            tx.conn.set_trace_callback(statements.append)
        try:
            return eng.items.search("lantern harbor floor", where=where, limit=10)
        finally:
            with store.read() as tx:
                tx.conn.set_trace_callback(None)

    def superseding() -> list[str]:
        return [s for s in statements if "JOIN node s ON s.pk = e.src" in s and "supersedes" in s]

    def judging() -> list[str]:
        return [s for s in statements if s.startswith("SELECT e.node FROM entity e JOIN node n")]

    page = search(ItemFilter(current_only=True))
    assert statements and page.found
    assert superseding() == [] and judging() == []
    # Both are still run where they can change the page.
    search(ItemFilter())
    assert superseding()
    search(ItemFilter(current_only=True, created_from=0))
    assert judging()
