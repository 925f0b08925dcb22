"""FilteredTextSearch with many matches, some of which the filter leaves out: whatever the
limit, the hits are the first ones of the whole list of matches that pass, in its order, so
a ranking that asks for a few and then for more sees one list."""

from __future__ import annotations

import random

import pytest

from mnemodb.model.records import SUPERSEDES, ItemFilter
from mnemodb.store.base import MemoryFieldWeights, Store
from store.contract.rows import T0, A, B, add_edge, add_memory, assert_best_first, pks_of

WEIGHTS = MemoryFieldWeights(content=1.0, summary=1.0, context=0.5)
CURRENT = ItemFilter(current_only=True)


@pytest.fixture
def crowded(store: Store) -> dict[str, set[int]]:
    """240 memories about a river in A, in every mix of words; every fifth archived, every
    seventh superseded by a memory of B; a few more in B."""
    rng = random.Random(18)
    archived: set[int] = set()
    superseded: set[int] = set()
    in_b: set[int] = set()
    with store.write() as tx:
        for i in range(240):
            words = " ".join(rng.choice(("river", "stone", "reed", "river bank")) for _ in range(rng.randint(1, 9)))
            pk = add_memory(tx, f"{words} {i}", importance=rng.randint(0, 10), at=T0 + i)
            if i % 5 == 0:
                tx.set_archived(pk, T0 + 1_000)
                archived.add(pk)
            elif i % 7 == 0:
                newer = add_memory(tx, f"a newer word on item {i}", scope=B, at=T0 + 2_000)
                add_edge(tx, newer, pk, SUPERSEDES, scope=B)
                superseded.add(pk)
        for i in range(5):
            in_b.add(add_memory(tx, f"river in b {i}", scope=B))
    return {"archived": archived, "superseded": superseded, "in_b": in_b}


def test_every_limit_gives_the_head_of_one_list(store: Store, crowded: dict[str, set[int]]) -> None:
    at = T0 + 5_000
    with store.read() as tx:
        whole = tx.filtered_text_search(["river", "reed"], [A, B], 1_000, CURRENT, at, WEIGHTS)
        heads = {
            limit: tx.filtered_text_search(["river", "reed"], [A, B], limit, CURRENT, at, WEIGHTS)
            for limit in (1, 2, 9, 40, 150)
        }
        # A filter that narrows (a floor every memory passes) is judged another way: the
        # same hits.
        floor = tx.filtered_text_search(
            ["river", "reed"], [A, B], 1_000, ItemFilter(current_only=True, min_importance=0), at, WEIGHTS
        )
    assert_best_first(whole)
    found = set(pks_of(whole))
    assert not found & (crowded["archived"] | crowded["superseded"])
    assert crowded["in_b"] <= found
    assert len(whole) > 150
    for limit, head in heads.items():
        assert head == whole[:limit], limit
    assert floor == whole


def test_a_scope_left_out_is_left_out_at_every_limit(store: Store, crowded: dict[str, set[int]]) -> None:
    with store.read() as tx:
        whole = tx.filtered_text_search(["river"], [A], 1_000, CURRENT, T0 + 5_000, WEIGHTS)
        head = tx.filtered_text_search(["river"], [A], 3, CURRENT, T0 + 5_000, WEIGHTS)
    found = set(pks_of(whole))
    assert not found & (crowded["in_b"] | crowded["archived"])
    # Superseded by a memory of B: an edge a reader of A cannot see decides nothing.
    assert crowded["superseded"] & found
    assert head == whole[:3]


@pytest.fixture
def buried(store: Store) -> set[int]:
    """700 memories holding "river": the 420 best matches (the shortest texts) archived, so
    a search that passes only live memories finds its first hit past the first few hundred
    best matches."""
    archived: set[int] = set()
    with store.write() as tx:
        for i in range(700):
            filler = " ".join(["stone"] * (i // 20))
            pk = add_memory(tx, f"river {filler} {i}", at=T0 + i)
            if i < 420:
                tx.set_archived(pk, T0 + 1_000)
                archived.add(pk)
    return archived


def test_hits_past_the_best_matches_scored_first_are_found(store: Store, buried: set[int]) -> None:
    at = T0 + 5_000
    with store.read() as tx:
        # Asked for more and more in one read, as a ranking widening its pool asks.
        heads = {
            limit: tx.filtered_text_search(["river"], [A], limit, ItemFilter(), at, WEIGHTS) for limit in (1, 64, 300)
        }
        whole = tx.filtered_text_search(["river"], [A], 1_000, ItemFilter(), at, WEIGHTS)
        # The same filter judged in one statement (a floor every memory passes).
        floor = tx.filtered_text_search(["river"], [A], 1_000, ItemFilter(min_importance=0), at, WEIGHTS)
    assert_best_first(whole)
    assert len(whole) == 280 and not set(pks_of(whole)) & buried
    assert floor == whole
    for limit, head in heads.items():
        assert head == whole[:limit], limit
    with store.read() as tx:
        # And in a read of its own, asked for a few first.
        assert tx.filtered_text_search(["river"], [A], 5, ItemFilter(), at, WEIGHTS) == whole[:5]


def test_contents_after_a_search_are_those_the_rows_hold(store: Store, crowded: dict[str, set[int]]) -> None:
    at = T0 + 5_000
    with store.read() as tx:
        hits = pks_of(tx.filtered_text_search(["river", "reed"], [A, B], 40, CURRENT, at, WEIGHTS))
        asked = [*hits, *sorted(crowded["archived"])[:5], 10**9]
        after_search = {holding: tx.memory_contents(asked, holding) for holding in ("", "river", "reed 1", "zzz")}
    with store.read() as tx:
        alone = {holding: tx.memory_contents(asked, holding) for holding in ("", "river", "reed 1", "zzz")}
    assert after_search == alone
    assert set(alone[""]) == set(asked) - {10**9} and alone["zzz"] == {}
    assert all("river" in text for text in alone["river"].values()) and alone["river"]
    # A change in the same transaction is read, not what the search saw.
    with store.write() as tx:
        hits = pks_of(tx.filtered_text_search(["river"], [A, B], 10, CURRENT, at, WEIGHTS))
        tx.update_memory(hits[0], {"content": "a rewritten text"})
        assert tx.memory_contents(hits[:3], "")[hits[0]] == "a rewritten text"
        assert tx.memory_contents(hits[:3], "river").keys() == set(hits[1:3])
