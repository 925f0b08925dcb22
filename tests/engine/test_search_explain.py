"""A memory search without its explanation: the same hits and scores, no parts."""

from __future__ import annotations

from mnemodb.engine import Engine
from support import Clock

DAY_MS = 86_400_000


def test_unexplained_search_has_the_same_hits_and_scores(eng: Engine, clock: Clock) -> None:
    eng.memories.store("the parser reads the config file", ["config"], importance=2)
    clock.now += 3 * DAY_MS
    eng.memories.store("config values are cached by the parser", importance=9)
    eng.memories.store("a note tagged only", ["parser"])
    eng.memories.store("nothing relevant here")
    explained = eng.memories.search("parser config", record_access=False)
    plain = eng.memories.search("parser config", record_access=False, explain=False)
    assert len(explained) == 3
    assert [(h.memory.pk, h.score) for h in plain] == [(h.memory.pk, h.score) for h in explained]
    assert all(h.components == {} for h in plain)
    for hit in explained:
        assert set(hit.components) == {"text", "tag", "importance", "recency"}
        parts = hit.components
        match = parts["text"] + (1.0 - parts["text"]) * 0.5 if parts["tag"] else parts["text"]
        assert hit.score == match * parts["importance"] + parts["recency"]


def test_recall_scores_seeds_as_before(eng: Engine) -> None:
    first = eng.memories.store("deploy pipeline runs nightly").memory
    second = eng.memories.store("the pipeline needs a token").memory
    eng.memories.relate(first.hash, second.hash, "related_to")
    found = eng.memories.recall("nightly", depth=1)
    assert [(r.memory.pk, r.depth, r.score) for r in found.memories] == [(first.pk, 0, 1.0), (second.pk, 1, 0.5)]
