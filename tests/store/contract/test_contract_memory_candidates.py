"""TextSearch.memory_candidates: a memory search's candidates by pk and score, with the
bounds of their importance and creation time."""

from __future__ import annotations

import pytest

from mnemodb.store.base import MemoryCandidates, ReadTx, Store
from store.contract.rows import T0, A, B, C, add_entity, add_memory

WORDS = ("river", "stone", "river stone", "river river", "a long sentence about a river and more")


def _seed(store: Store) -> dict[str, list[int]]:
    """Memories in A and B (a few in C) matching "river" or tagged "wet", at various
    importances and times; two of A's archived; an entity that matches nothing."""
    made: dict[str, list[int]] = {A: [], B: [], C: []}
    with store.write() as tx:
        for i in range(24):
            scope = (A, A, B)[i % 3]
            made[scope].append(
                add_memory(
                    tx,
                    f"{WORDS[i % len(WORDS)]} number {i}",
                    scope=scope,
                    at=T0 + 1000 * (i * 7 % 24),
                    tags=["wet"] if i % 4 == 0 else ["dry"],
                    importance=(3 * i) % 9,
                )
            )
        made[A].append(add_memory(tx, "only tagged", tags=["wet"], importance=1, at=T0 + 99_000))
        made[C].append(add_memory(tx, "river in c", scope=C, importance=10, at=T0 - 5000))
        add_entity(tx, "River Stone")
        tx.set_archived(made[A][0], T0 + 500)
        tx.set_archived(made[A][3], T0 + 500)
    return made


def _same_as_the_separate_reads(
    tx: ReadTx, found: MemoryCandidates, scopes: list[str], limit: int, *, include_archived: bool = False
) -> None:
    text = tx.search_text(["river"], scopes, limit, include_archived=include_archived)
    tagged = tx.memories_with_tags(["wet"], scopes, limit, include_archived=include_archived)
    assert list(found.text.items()) == [(hit.pk, hit.score) for hit in text]
    assert found.tagged == [hit.pk for hit in tagged]
    for hit in (*text, *tagged):
        assert hit.importance <= found.most_important
        assert found.oldest is not None and found.newest is not None
        assert found.oldest <= hit.created_at <= found.newest


@pytest.mark.parametrize("limit", [1, 5, 40])
@pytest.mark.parametrize("include_archived", [False, True])
def test_candidates_are_the_text_and_tag_searches_by_pk_within_their_bounds(
    store: Store, limit: int, include_archived: bool
) -> None:
    _seed(store)
    with store.read() as tx:
        # A alone (others hold memories too), A and B, every scope holding memories.
        for scopes in ([A], [A, B], [A, B, C], [B]):
            found = tx.memory_candidates(["river"], ["wet"], scopes, limit, include_archived=include_archived)
            _same_as_the_separate_reads(tx, found, scopes, limit, include_archived=include_archived)


def test_the_bounds_are_those_of_the_memories_read(store: Store) -> None:
    made = _seed(store)
    with store.read() as tx:
        every = tx.memory_candidates(["river"], ["wet"], [A, B, C], 100)
        in_b = tx.memory_candidates(["river"], ["wet"], [B], 100)
        memories = tx.memories_by_pk([pk for pks in made.values() for pk in pks])
    # The highest importance not archived: C's 10, or B's own highest.
    assert every.most_important == 10
    assert in_b.most_important == max(memories[pk].importance for pk in made[B])
    assert (every.oldest, every.newest) == (T0 - 5000, T0 + 99_000)
    assert (in_b.oldest, in_b.newest) == (
        min(memories[pk].created_at for pk in made[B]),
        max(memories[pk].created_at for pk in made[B]),
    )


def test_archived_memories_are_left_out_unless_asked(store: Store) -> None:
    made = _seed(store)
    archived = {made[A][0], made[A][3]}
    with store.read() as tx:
        kept = tx.memory_candidates(["river"], ["wet"], [A], 100)
        every = tx.memory_candidates(["river"], ["wet"], [A], 100, include_archived=True)
    assert not archived & (set(kept.text) | set(kept.tagged))
    assert archived <= set(every.text) | set(every.tagged)


def test_no_words_or_no_tags_read_no_candidates_of_that_kind(store: Store) -> None:
    _seed(store)
    with store.read() as tx:
        no_words = tx.memory_candidates([], ["wet"], [A], 10)
        no_tags = tx.memory_candidates(["river"], [], [A], 10)
        nothing = tx.memory_candidates(["river"], ["wet"], [A], 0)
        elsewhere = tx.memory_candidates(["zebra"], ["nope"], [A], 10)
    assert no_words.text == {} and no_words.tagged
    assert no_tags.tagged == [] and no_tags.text
    assert (nothing.text, nothing.tagged) == ({}, [])
    assert (elsewhere.text, elsewhere.tagged) == ({}, [])


def test_an_empty_store_has_no_candidates_and_no_times(store: Store) -> None:
    with store.read() as tx:
        found = tx.memory_candidates(["river"], ["wet"], [A], 10)
    assert (found.text, found.tagged, found.oldest, found.newest) == ({}, [], None, None)
