"""Memories stored as turns of a conversation: each is also found, at half weight, by the
words of the two turns before it in its scope (its context)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.helpers import memory_context, open_engine_at
from mnemodb.engine import Engine
from mnemodb.engine.items import Note, Patch
from mnemodb.model.records import Memory, NewMemory
from support import SCOPE_A, START_MS, Clock

QUESTION = "Where did you go hiking last weekend?"
ANSWER = "We went up to the glacier lake, it was beautiful"
OTHER = "Unrelated note about invoices"


@pytest.fixture
def clock() -> Clock:
    return Clock(START_MS)


@pytest.fixture
def eng(tmp_path: Path, clock: Clock) -> Iterator[Engine]:
    engine = open_engine_at(tmp_path / "turns.db", clock=clock)
    yield engine
    engine.close()


def found(eng: Engine, query: str) -> list[str]:
    return [f.item.content for f in eng.items.search(query, kinds=["memory"]).found if isinstance(f.item, Memory)]


def context_of(eng: Engine, content: str) -> str | None:
    return memory_context(eng.store, content)


def test_a_turn_is_found_by_the_words_of_the_turn_before_it_below_direct_matches(eng: Engine) -> None:
    eng.memories.store_many([NewMemory(QUESTION), NewMemory(ANSWER)], turns=True)
    # "hiking" is only in the question: the answer comes after it, found by its context.
    assert found(eng, "hiking weekend") == [QUESTION, ANSWER]
    scores = [f.score for f in eng.items.search("hiking weekend", kinds=["memory"]).found]
    assert scores[0] is not None and scores[1] is not None and scores[0] > scores[1]


def test_plain_memories_have_no_context(eng: Engine) -> None:
    eng.memories.store_many([NewMemory(QUESTION), NewMemory(ANSWER)])
    assert found(eng, "hiking weekend") == [QUESTION]


def test_the_other_faces_search_a_memorys_own_words_only(eng: Engine) -> None:
    eng.memories.store_many([NewMemory(QUESTION), NewMemory(ANSWER)], turns=True)
    assert [h.memory.content for h in eng.memories.search("hiking weekend")] == [QUESTION]


def test_only_a_recent_memory_of_the_same_scope_is_context(eng: Engine, clock: Clock) -> None:
    eng.memories.store_many([NewMemory(QUESTION)], turns=True)
    eng.memories.store_many([NewMemory(OTHER)], turns=True, scope=SCOPE_A)  # another scope
    clock.now += 31 * 60 * 1000  # past the half-hour window
    eng.memories.store_many([NewMemory(ANSWER)], turns=True)
    assert context_of(eng, ANSWER) is None
    assert context_of(eng, OTHER) is None


def test_remember_with_turns(eng: Engine) -> None:
    eng.items.remember([Note(NewMemory(QUESTION)), Note(NewMemory(ANSWER))], turns=True)
    assert found(eng, "hiking") == [QUESTION, ANSWER]


def test_the_context_follows_edits_and_goes_with_a_forgotten_memory(eng: Engine) -> None:
    eng.memories.store_many([NewMemory(QUESTION), NewMemory(ANSWER)], turns=True)
    question = eng.items.search("hiking", kinds=["memory"]).found[0].item
    eng.items.revise(question.id, Patch(content="Where did you go climbing last weekend?"))
    assert found(eng, "climbing") == ["Where did you go climbing last weekend?", ANSWER]
    assert found(eng, "hiking") == []
    eng.items.forget([question.id])
    # Forgotten means forgotten: its words no longer find its neighbour either.
    assert found(eng, "climbing") == []
    assert context_of(eng, ANSWER) is None


GREETING = "Good morning! Any plans for the holidays?"


def test_the_context_reaches_two_turns_back_and_no_further(eng: Engine) -> None:
    eng.memories.store_many([NewMemory(GREETING), NewMemory(QUESTION), NewMemory(ANSWER), NewMemory(OTHER)], turns=True)
    assert context_of(eng, ANSWER) == f"{GREETING} {QUESTION}"
    assert context_of(eng, OTHER) == f"{QUESTION} {ANSWER}"
    # Found by its own words, one turn back and two back (in an order the ranking's rules
    # decide: two of them end by asking), and no further.
    assert sorted(found(eng, "holidays")) == sorted([GREETING, QUESTION, ANSWER])


def test_forgetting_a_middle_turn_takes_its_words_out_of_both_contexts(eng: Engine) -> None:
    eng.memories.store_many([NewMemory(GREETING), NewMemory(QUESTION), NewMemory(ANSWER), NewMemory(OTHER)], turns=True)
    question = next(f.item for f in eng.items.search("hiking", kinds=["memory"]).found if isinstance(f.item, Memory))
    eng.items.forget([question.id])
    assert context_of(eng, ANSWER) is None
    assert context_of(eng, OTHER) == ANSWER
    assert found(eng, "hiking") == []


def test_editing_a_turn_two_back_updates_the_context(eng: Engine) -> None:
    eng.memories.store_many([NewMemory(GREETING), NewMemory(QUESTION), NewMemory(ANSWER)], turns=True)
    greeting = next(f.item for f in eng.items.search("holidays", kinds=["memory"]).found if isinstance(f.item, Memory))
    eng.items.revise(greeting.id, Patch(content="Good morning! Any plans for the summer?"))
    assert context_of(eng, ANSWER) == f"Good morning! Any plans for the summer? {QUESTION}"
    assert found(eng, "holidays") == []


def test_an_export_carries_the_turns_and_an_import_restores_their_context(eng: Engine, tmp_path: Path) -> None:
    eng.memories.store_many([NewMemory(QUESTION), NewMemory(ANSWER), NewMemory(OTHER)], turns=True)
    records = list(eng.export())
    turns = [r["memory"] for r in records if r["type"] == "node" and "memory" in r]
    ids = [r["id"] for r in records if r["type"] == "node" and "memory" in r]
    assert [t.get("context_from") for t in turns] == [None, ids[0], ids[1]]
    with open_engine_at(tmp_path / "copy.db") as copy:
        copy.import_records(records)
        assert context_of(copy, ANSWER) == QUESTION
        assert context_of(copy, OTHER) == f"{QUESTION} {ANSWER}"
        assert found(copy, "hiking weekend") == [QUESTION, ANSWER, OTHER]
        assert list(copy.export())[1:] == records[1:]  # after the header, the same records


def test_an_import_of_a_turn_whose_turn_before_is_missing_has_no_context(eng: Engine, tmp_path: Path) -> None:
    eng.memories.store_many([NewMemory(QUESTION), NewMemory(ANSWER)], turns=True)
    records = [r for r in eng.export() if r.get("memory", {}).get("content") != QUESTION]
    with open_engine_at(tmp_path / "copy.db") as copy:
        copy.import_records(records)
        assert context_of(copy, ANSWER) is None
