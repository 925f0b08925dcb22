"""A word search whose first cut of memories cannot settle its first places widens the cut,
keeping what it scored and judged: its pages must still be slices of the whole ranking,
tagged memories included, and (on SQLite) no memory's row is judged twice in one search."""

from __future__ import annotations

import random
import re

import pytest

from mnemodb.engine import Engine
from mnemodb.engine.items import RANKED_POOL, ItemPage
from mnemodb.search.ranking import DAY_MS
from mnemodb.store.sqlite import SqliteStore
from support import Clock

WORDS = ("harbor", "lantern", "copper", "meadow", "signal")
MEMORIES = 280


def _placed(page: ItemPage) -> list[tuple[int, float | None]]:
    return [(f.item.pk, f.score) for f in page.found]


def _store_alike(eng: Engine, clock: Clock, *, tagged: bool) -> None:
    """Many memories of nearly equal text strength, of every importance and age; with
    `tagged`, some tagged with a query word while their text holds it once among many words."""
    rng = random.Random(7)
    for i in range(MEMORIES):
        words = [rng.choice(WORDS) for _ in range(rng.randint(3, 12))]
        tags = ("harbor",) if tagged and i % 9 == 0 else ()
        eng.memories.store(" ".join(words) + f" entry{i}", tags, rng.randint(0, 10))
        clock.now += rng.randint(0, DAY_MS // 12)


@pytest.fixture
def alike(eng: Engine, clock: Clock) -> Engine:
    """`_store_alike`'s memories, some tagged."""
    _store_alike(eng, clock, tagged=True)
    return eng


@pytest.mark.parametrize("query", ["harbor", "harbor lantern", "copper meadow signal"])
def test_pages_of_a_widened_cut_are_slices_of_the_whole_ranking(alike: Engine, query: str) -> None:
    whole = alike.items.search(query, kinds=["memory"], limit=RANKED_POOL - 1, explain=True)
    assert len(whole.found) > 200
    for offset, limit in ((0, 1), (0, 10), (0, 60), (20, 90), (100, 99)):
        page = alike.items.search(query, kinds=["memory"], offset=offset, limit=limit, explain=True)
        assert _placed(page) == _placed(whole)[offset : offset + limit], (offset, limit)
        assert [f.why for f in page.found] == [f.why for f in whole.found[offset : offset + limit]]
        assert page.more == (len(whole.found) > offset + limit)


def test_no_memory_row_is_judged_twice_in_one_search(alike: Engine) -> None:
    store = alike.store
    if not isinstance(store, SqliteStore):
        pytest.skip("reads the SQLite store's statements")
    statements: list[str] = []
    with store.read() as tx:  # the read connection a search on this thread uses
        tx.conn.set_trace_callback(statements.append)
    try:
        page = alike.items.search("harbor lantern", kinds=["memory"], offset=60, limit=40)
    finally:
        with store.read() as tx:
            tx.conn.set_trace_callback(None)
    # The first statement scores the best matches and judges each one's row as the search
    # reads on (its LIMIT the most its sort holds); past those, the rows are judged by pk.
    first = [s for s in statements if "LEFT JOIN memory m ON m.node = s.rowid" in s]
    judging = [s for s in statements if "FROM memory m CROSS JOIN node n ON n.pk = m.node WHERE m.node IN" in s]
    assert len(first) == 1 and judging and page.found  # the cut was widened past the first statement
    scored = re.search(r"FROM \((SELECT rowid, -bm25.*?LIMIT \d+)\) s", first[0]).group(1)  # type: ignore[union-attr]
    with store.read() as tx:
        judged_first = [pk for pk, _ in tx.conn.execute(scored)]
    judged = [int(pk) for s in judging for pk in re.search(r"m\.node IN \(([\d,]+)\)", s).group(1).split(",")]  # type: ignore[union-attr]
    assert len(judged) == len(set(judged))
    assert not set(judged) & set(judged_first)


@pytest.mark.parametrize("written_today", [False, True])
def test_a_store_written_long_ago_bounds_a_memory_left_out_by_its_newest(
    eng: Engine, clock: Clock, written_today: bool
) -> None:
    # The `alike` memories untagged, read a month after the last of them was written: no memory
    # of the store can have the recency one written now would, and the first cut settles
    # the first page. One memory written today (whatever it says) could be left out with
    # that recency, and the cut is widened.
    store = eng.store
    if not isinstance(store, SqliteStore):
        pytest.skip("reads the SQLite store's statements")
    _store_alike(eng, clock, tagged=False)
    clock.now += 30 * DAY_MS
    if written_today:
        eng.memories.store("an unrelated note")
    for query in ("harbor", "harbor lantern", "copper meadow signal"):
        statements: list[str] = []
        with store.read() as tx:
            tx.conn.set_trace_callback(statements.append)
        try:
            page = eng.items.search(query, kinds=["memory"], limit=10)
        finally:
            with store.read() as tx:
                tx.conn.set_trace_callback(None)
        widened = any("FROM memory m CROSS JOIN node n ON n.pk = m.node WHERE m.node IN" in s for s in statements)
        assert widened == written_today, query
        whole = eng.items.search(query, kinds=["memory"], limit=RANKED_POOL - 1)
        assert _placed(page) == _placed(whole)[:10]
