"""A word search reads its page's memories and entities by kind, without first reading
each node's label: the page must hold what a read of each item by reference gives, only
items of the scopes read, and (on SQLite) run no label statement, nor a memory statement
for a page of the entity ranking's entities alone."""

from __future__ import annotations

import pytest

from mnemodb.engine import Engine
from mnemodb.engine.graph import NewEntity
from mnemodb.engine.items import Item, ItemPage, Note
from mnemodb.model.ids import SHARED, new_ulid
from mnemodb.model.records import Entity, Memory, NewMemory
from mnemodb.store.sqlite import SqliteStore

NORTH = SHARED
SOUTH = new_ulid()


@pytest.fixture
def seeded(eng: Engine) -> None:
    """Beacon memories and entities in two scopes."""
    for scope, side in ((NORTH, "north"), (SOUTH, "south")):
        eng.items.remember(
            [Note(NewMemory(f"the beacon {side} {i} was lit at dusk"), (), None) for i in range(4)], scope=scope
        )
        eng.graph.create_entities(
            [NewEntity(f"Beacon {side.title()} {i}", "place", (f"a beacon on the {side} cliff",)) for i in range(3)],
            scope=scope,
        )


def _shown(item: Item) -> tuple[str, str, str, str]:
    text = item.content if isinstance(item, Memory) else item.name
    return (type(item).__name__, item.id, item.scope, text)


@pytest.mark.parametrize("kinds", [("memory", "entity"), ("memory",), ("entity",)])
@pytest.mark.parametrize("scopes", [[NORTH], [SOUTH], [NORTH, SOUTH]])
def test_a_page_holds_the_items_as_read_by_reference(
    eng: Engine, seeded: None, kinds: tuple[str, ...], scopes: list[str]
) -> None:
    page = eng.items.search("beacon dusk cliff", kinds=kinds, limit=20, scopes=scopes)
    assert page.found
    kinds_found = {type(f.item) for f in page.found}
    assert kinds_found <= {Memory if k == "memory" else Entity for k in kinds}
    if kinds == ("memory", "entity"):
        assert kinds_found == {Memory, Entity}
    for found in page.found:
        assert found.item.scope in scopes
        [by_ref] = eng.items.get([found.item.id], scopes=scopes, record_access=False)
        assert isinstance(by_ref, Memory | Entity)
        assert _shown(found.item) == _shown(by_ref)


def _statements(eng: Engine, query: str, kinds: tuple[str, ...]) -> tuple[ItemPage, list[str]]:
    store = eng.store
    if not isinstance(store, SqliteStore):
        pytest.skip("reads the SQLite store's statements")
    statements: list[str] = []
    # The read connection a search on this thread uses is the one this read opens.
    with store.read() as tx:
        tx.conn.set_trace_callback(statements.append)
    try:
        page = eng.items.search(query, kinds=kinds, limit=5, scopes=[NORTH])
    finally:
        with store.read() as tx:
            tx.conn.set_trace_callback(None)
    return page, statements


def test_a_page_is_read_without_its_labels(eng: Engine, seeded: None) -> None:
    page, statements = _statements(eng, "beacon dusk cliff", ("memory", "entity"))
    assert {type(f.item) for f in page.found} == {Memory, Entity}
    assert not [s for s in statements if s.startswith("SELECT pk, label, scope FROM node")]


def test_a_page_of_ranked_entities_reads_no_memory_rows(eng: Engine, seeded: None) -> None:
    def memory_reads(statements: list[str]) -> list[str]:
        return [s for s in statements if "memory m JOIN node n ON n.pk = m.node LEFT JOIN node_access" in s]

    # "cliff" is in the entities' observations alone: the page is theirs.
    page, statements = _statements(eng, "cliff", ("memory", "entity"))
    assert page.found and all(isinstance(f.item, Entity) for f in page.found)
    assert memory_reads(statements) == []
    # A page with memories on it reads them.
    page, statements = _statements(eng, "dusk", ("memory", "entity"))
    assert page.found and all(isinstance(f.item, Memory) for f in page.found)
    assert memory_reads(statements)
