"""Derived vectors (`engine.embeddings`, `BackgroundEmbedder`) and search by meaning.

Most tests use the HTTP embedder against a stub endpoint the test runs (fast, and its
vectors are known exactly); the ranking tests use the real all-MiniLM-L6-v2 model,
loaded once for the module. Every engine works on a real database of the chosen store
(`stores.py`: a SQLite file by default).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from embed_support import STUB_DIM, STUB_MODEL, StubEndpoint, stub_endpoint, stub_unit
from engine.helpers import store_at
from mnemodb.engine import Engine, InvalidArgument
from mnemodb.engine.embedding import BackgroundEmbedder, item_text
from mnemodb.engine.graph import NewEntity
from mnemodb.engine.items import Found, Note, Patch
from mnemodb.engine.properties import SetEmbedding
from mnemodb.model.records import Entity, Memory, NewMemory
from mnemodb.search.embedders import (
    Embedder,
    EmbedderUnavailable,
    HttpEmbedder,
    LocalEmbedder,
    local_available,
)
from mnemodb.search.ranking import ACCESS_SATURATION, FusionWeights, parse_fusion
from mnemodb.store.vectors import MatrixVectorIndex
from stores import chosen_backend
from support import Clock

WAIT_S = 10.0  # a hang guard for the background thread: a round takes milliseconds


# -- helpers ----------------------------------------------------------------------------------------


@pytest.fixture
def stub() -> Iterator[StubEndpoint]:
    with stub_endpoint() as endpoint:
        yield endpoint


def open_engine(path: Path, embedder: Any = None, *, clock: Clock | None = None, **options: Any) -> Engine:
    """An engine on the chosen store's database for `path`; a clock that ticks, so every
    write has a later time."""
    return Engine(store_at(path), clock=clock or Clock(tick=1), embedder=embedder, access_interval=3600, **options)


@pytest.fixture
def http_eng(db_path: Path, stub: StubEndpoint) -> Iterator[Engine]:
    with open_engine(db_path, HttpEmbedder(stub.url, STUB_MODEL)) as opened:
        yield opened


def mem(eng: Engine, content: str, **fields: Any) -> Memory:
    [done], _ = eng.items.remember([Note(NewMemory(content, **fields))])
    assert isinstance(done.item, Memory)
    return done.item


def ent(eng: Engine, name: str, entity_type: str = "", observations: Sequence[str] = ()) -> Entity:
    _, [done] = eng.items.remember(entities=[NewEntity(name, entity_type, tuple(observations))])
    assert isinstance(done.item, Entity)
    return done.item


def nearest_to(eng: Engine, text: str) -> tuple[str, float]:
    """(id, cosine) of the stored stub vector nearest to `text`'s."""
    [(node, score)] = eng.nodes.search_vectors(STUB_MODEL, stub_unit(text), k=1)
    return node.id, score


def wait_for(condition: Callable[[], bool], timeout: float = WAIT_S) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def contents(found: Sequence[Found]) -> list[str]:
    return [f.item.content if isinstance(f.item, Memory) else f.item.name for f in found]


class CountingEmbedder:
    """Wraps an embedder, counting its calls."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model = inner.model
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray[Any, Any]:
        self.calls += 1
        return self.inner.embed(texts)


class MissingEmbedder:
    """An embedder that cannot run here, as a missing model or library makes it."""

    model = "missing-model"

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray[Any, Any]:
        self.calls += 1
        raise EmbedderUnavailable("the test's model is not installed")


# -- keeping vectors current ------------------------------------------------------------------------


def test_item_text_of_memories_and_entities(http_eng: Engine) -> None:
    plain = mem(http_eng, "We adopted a puppy named Rex")
    summed = mem(http_eng, "Long notes about the garden", summary="roses and tulips")
    rex = ent(http_eng, "Rex", "pet", ["a golden retriever", "likes tennis balls"])
    bare = ent(http_eng, "Lisbon")
    assert item_text(plain) == "We adopted a puppy named Rex"
    assert item_text(summed) == "Long notes about the garden\nroses and tulips"
    assert item_text(rex) == "Rex (pet): a golden retriever; likes tennis balls"
    assert item_text(bare) == "Lisbon"


def test_reindex_gives_every_memory_and_entity_a_vector(http_eng: Engine, stub: StubEndpoint) -> None:
    memories = [mem(http_eng, text) for text in ("alpha beta", "gamma delta", "epsilon zeta")]
    rex = ent(http_eng, "Rex", "pet", ["a golden retriever"])
    assert http_eng.embeddings.coverage() == (0, 4)
    assert http_eng.stats().embeddings == 0
    progress: list[tuple[int, int]] = []

    assert http_eng.embeddings.reindex(batch=3, progress=lambda done, total: progress.append((done, total))) == 4

    assert http_eng.embeddings.coverage() == (4, 4)
    assert http_eng.stats().embeddings == 4
    assert progress == [(0, 4), (3, 4), (4, 4)]
    assert sorted(stub.texts()) == sorted(["alpha beta", "gamma delta", "epsilon zeta", item_text(rex)])
    assert [len(r.body["input"]) for r in stub.requests] == [3, 1]
    items: list[Memory | Entity] = [*memories, rex]
    for item in items:
        found_id, score = nearest_to(http_eng, item_text(item))
        assert found_id == item.id
        assert score == pytest.approx(1.0, abs=1e-5)
    # Nothing is left: a second run asks the endpoint for nothing.
    stub.requests.clear()
    assert http_eng.embeddings.reindex() == 0
    assert http_eng.embeddings.embed_pending() == (0, 0)
    assert stub.requests == []


def test_embed_pending_works_in_pk_order_from_after(http_eng: Engine) -> None:
    first, second, third = (mem(http_eng, text) for text in ("one fish", "two fish", "red fish"))
    assert http_eng.embeddings.embed_pending(2) == (2, second.pk)
    assert http_eng.embeddings.coverage() == (2, 3)
    assert http_eng.embeddings.embed_pending(2, after=second.pk) == (1, third.pk)
    assert http_eng.embeddings.embed_pending(2, after=third.pk) == (0, 0)
    assert http_eng.embeddings.coverage() == (3, 3)
    assert first.pk < second.pk < third.pk


def test_without_an_embedder_nothing_is_embedded(db_path: Path) -> None:
    with open_engine(db_path) as eng:
        mem(eng, "no vectors here")
        assert eng.embeddings.embed_pending() == (0, 0)
        assert eng.embeddings.reindex() == 0
        assert eng.embeddings.coverage() == (0, 1)
        assert eng.embeddings.model is None
        assert eng.embeddings.query_vector("anything") is None


def test_an_edited_memory_is_embedded_again_with_its_new_text(http_eng: Engine, stub: StubEndpoint) -> None:
    pet = mem(http_eng, "We adopted a puppy named Rex")
    other = mem(http_eng, "My sister lives in Lisbon")
    http_eng.embeddings.reindex()
    assert http_eng.embeddings.coverage() == (2, 2)

    http_eng.items.revise(pet.id, Patch(content="The neighbours keep chickens"))
    assert http_eng.embeddings.coverage() == (1, 2)
    stub.requests.clear()
    assert http_eng.embeddings.reindex() == 1
    assert stub.texts() == ["The neighbours keep chickens"]
    assert http_eng.embeddings.coverage() == (2, 2)
    assert nearest_to(http_eng, "The neighbours keep chickens") == pytest.approx((pet.id, 1.0), abs=1e-5)
    assert nearest_to(http_eng, "My sister lives in Lisbon")[0] == other.id


def test_an_entity_given_observations_is_embedded_again(http_eng: Engine, stub: StubEndpoint) -> None:
    rex = ent(http_eng, "Rex", "pet", ["a golden retriever"])
    http_eng.embeddings.reindex()
    http_eng.items.revise("Rex", Patch(add_observations=("afraid of thunder",)))
    assert http_eng.embeddings.coverage() == (0, 1)
    stub.requests.clear()
    assert http_eng.embeddings.reindex() == 1
    assert stub.texts() == ["Rex (pet): a golden retriever; afraid of thunder"]
    assert nearest_to(http_eng, "Rex (pet): a golden retriever; afraid of thunder")[0] == rex.id


def test_an_edit_in_the_same_millisecond_as_the_vector_still_makes_it_stale(db_path: Path, stub: StubEndpoint) -> None:
    """Staleness is told by comparing times in ms, so an edit within the millisecond the item
    was written (and embedded) must still count as a change of its text."""
    with open_engine(db_path, HttpEmbedder(stub.url, STUB_MODEL), clock=Clock()) as eng:
        pet = mem(eng, "We adopted a puppy named Rex")
        eng.embeddings.reindex()
        eng.items.revise(pet.id, Patch(content="The neighbours keep chickens"))
        assert eng.embeddings.coverage() == (0, 1), "the vector of the old text still counts as current"
        eng.embeddings.reindex()
        assert nearest_to(eng, "The neighbours keep chickens") == pytest.approx((pet.id, 1.0), abs=1e-5)


def test_forgetting_removes_the_vector(http_eng: Engine) -> None:
    pet = mem(http_eng, "We adopted a puppy named Rex")
    mem(http_eng, "My sister lives in Lisbon")
    ent(http_eng, "Rex", "pet")
    http_eng.embeddings.reindex()
    assert http_eng.stats().embeddings == 3

    http_eng.items.forget([pet.id, "Rex"])

    assert http_eng.stats().embeddings == 1
    assert http_eng.embeddings.coverage() == (1, 1)
    hits = http_eng.nodes.search_vectors(STUB_MODEL, stub_unit("We adopted a puppy named Rex"), k=10)
    assert [node.id for node, _ in hits] != [pet.id]
    assert pet.id not in {node.id for node, _ in hits}
    assert len(hits) == 1


def test_an_item_changed_while_its_vector_was_computed_gets_the_new_text(db_path: Path, stub: StubEndpoint) -> None:
    """The embedder edits the memory on its first call, after its text was read: the vector
    of the old text must not be written, and the next round embeds the new text."""
    http = HttpEmbedder(stub.url, STUB_MODEL)
    holder: dict[str, Any] = {}

    class EditsOnFirstCall:
        model = STUB_MODEL
        calls = 0

        def embed(self, texts: Sequence[str]) -> np.ndarray:
            self.calls += 1
            if self.calls == 1:
                eng = holder["engine"]
                eng.items.revise(holder["pet"], Patch(content="The neighbours keep chickens"))
            return http.embed(texts)

    embedder = EditsOnFirstCall()
    with open_engine(db_path, embedder) as eng:
        holder["engine"] = eng
        pet = mem(eng, "We adopted a puppy named Rex")
        other = mem(eng, "My sister lives in Lisbon")
        holder["pet"] = pet.id

        assert eng.embeddings.embed_pending() == (1, other.pk)
        assert eng.embeddings.coverage() == (1, 2)
        # The edited memory has no vector at all, so the old text cannot be found by meaning.
        assert nearest_to(eng, "We adopted a puppy named Rex")[0] == other.id

        assert eng.embeddings.embed_pending() == (1, pet.pk)
        assert eng.embeddings.coverage() == (2, 2)
        assert stub.texts()[-1] == "The neighbours keep chickens"
        assert nearest_to(eng, "The neighbours keep chickens") == pytest.approx((pet.id, 1.0), abs=1e-5)


# -- the background thread --------------------------------------------------------------------------


def write_some(eng: Engine) -> list[str]:
    ids = [mem(eng, text).id for text in ("alpha beta", "gamma delta", "epsilon zeta", "eta theta")]
    ids.append(ent(eng, "Rex", "pet", ["a golden retriever"]).id)
    return ids


def test_restart_embeds_what_was_written_without_an_embedder(db_path: Path, stub: StubEndpoint) -> None:
    with open_engine(db_path) as eng:
        write_some(eng)
        assert eng.embeddings.coverage() == (0, 5)

    with open_engine(db_path, HttpEmbedder(stub.url, STUB_MODEL)) as eng:
        background = BackgroundEmbedder(eng.embeddings, poll=0.05).start()
        try:
            assert background.wait_idle(WAIT_S)
            assert eng.embeddings.coverage() == (5, 5)
            assert background.embedded == 5
            assert background.last_error is None
        finally:
            background.stop()


def test_restart_embeds_what_a_failing_endpoint_left(db_path: Path, stub: StubEndpoint) -> None:
    stub.fail_next = 1_000_000
    with open_engine(db_path, HttpEmbedder(stub.url, STUB_MODEL)) as eng:
        background = BackgroundEmbedder(eng.embeddings, poll=0.05, max_pause=0.05).start()
        try:
            ids = write_some(eng)
            assert wait_for(lambda: background.last_error is not None)
            assert "HTTP 500" in (background.last_error or "")
            assert eng.embeddings.coverage() == (0, 5)
        finally:
            background.stop()

    stub.fail_next = 0
    with open_engine(db_path, HttpEmbedder(stub.url, STUB_MODEL)) as eng:
        background = BackgroundEmbedder(eng.embeddings, poll=0.05).start()
        try:
            assert background.wait_idle(WAIT_S)
            assert eng.embeddings.coverage() == (5, 5)
            assert nearest_to(eng, "gamma delta")[0] == ids[1]
        finally:
            background.stop()


def test_the_thread_outlives_failed_requests_and_finishes_later(db_path: Path, stub: StubEndpoint) -> None:
    stub.fail_next = 3
    with open_engine(db_path, HttpEmbedder(stub.url, STUB_MODEL)) as eng:
        write_some(eng)
        background = BackgroundEmbedder(eng.embeddings, poll=0.05, max_pause=0.05).start()
        try:
            assert background.wait_idle(WAIT_S)
            assert eng.embeddings.coverage() == (5, 5)
            assert background.last_error is None
            assert stub.fail_next == 0
            assert len(stub.requests) == 4  # three refused, then one batch of all five
            # It keeps working: a new memory is embedded too.
            later = mem(eng, "iota kappa")
            assert background.wait_idle(WAIT_S)
            assert eng.embeddings.coverage() == (6, 6)
            assert nearest_to(eng, "iota kappa")[0] == later.id
        finally:
            background.stop()


def test_an_embedder_that_cannot_run_stops_the_thread_and_search_uses_words(db_path: Path) -> None:
    embedder = MissingEmbedder()
    with open_engine(db_path, embedder) as eng:
        pet = mem(eng, "We adopted a puppy named Rex")
        background = BackgroundEmbedder(eng.embeddings, poll=0.05).start()
        try:
            assert wait_for(lambda: eng.embeddings.unavailable is not None)
            assert eng.embeddings.unavailable == "the test's model is not installed"
            background._thread.join(WAIT_S)
            assert not background._thread.is_alive()
            assert eng.embeddings.model is None
            assert eng.embeddings.ready() is False

            calls = embedder.calls
            page = eng.items.search("puppy")
            assert [f.item.id for f in page.found] == [pet.id]
            assert eng.items.search("dog").found == ()
            assert embedder.calls == calls  # the query was not sent to it
        finally:
            background.stop()


def test_a_model_that_fails_to_load_stops_the_thread(db_path: Path) -> None:
    class Unloadable:
        model = "unloadable"
        loaded = False

        def load(self) -> None:
            raise EmbedderUnavailable("tokenizers is not installed")

        def embed(self, texts: Sequence[str]) -> np.ndarray:
            raise AssertionError("embed() before load()")

    with open_engine(db_path, Unloadable()) as eng:
        pet = mem(eng, "We adopted a puppy named Rex")
        background = BackgroundEmbedder(eng.embeddings, poll=0.05).start()
        try:
            assert wait_for(lambda: eng.embeddings.unavailable is not None)
            assert "tokenizers" in (eng.embeddings.unavailable or "")
            assert [f.item.id for f in eng.items.search("puppy").found] == [pet.id]
        finally:
            background.stop()


def test_wait_idle_does_not_report_idle_while_an_item_changed_during_the_round_is_pending(
    db_path: Path, stub: StubEndpoint
) -> None:
    """wait_idle promises that nothing is left to embed. An edit made while the thread was
    embedding the item's old text leaves it pending; wait_idle must not return before it
    is embedded."""
    http = HttpEmbedder(stub.url, STUB_MODEL)
    entered = threading.Event()
    holder: dict[str, Any] = {}

    class EditsDuringTheRound:
        model = STUB_MODEL
        calls = 0

        def embed(self, texts: Sequence[str]) -> np.ndarray:
            self.calls += 1
            if self.calls == 1:
                holder["engine"].items.revise(holder["pet"], Patch(content="The neighbours keep chickens"))
                entered.set()
                # Go on only once the test is waiting (wait_idle sets the wake flag).
                assert wait_for(holder["background"]._wake.is_set)
            return http.embed(texts)

    with open_engine(db_path, EditsDuringTheRound()) as eng:
        holder["engine"] = eng
        holder["pet"] = mem(eng, "We adopted a puppy named Rex").id
        background = BackgroundEmbedder(eng.embeddings, poll=60)
        holder["background"] = background
        background.start()
        try:
            assert entered.wait(WAIT_S)
            assert background.wait_idle(WAIT_S)
            assert eng.embeddings.coverage() == (1, 1), "wait_idle returned with an item still pending"
        finally:
            background.stop()


def test_stop_ends_the_thread_promptly(db_path: Path, stub: StubEndpoint) -> None:
    with open_engine(db_path, HttpEmbedder(stub.url, STUB_MODEL)) as eng:
        background = BackgroundEmbedder(eng.embeddings, poll=60).start()
        assert background.wait_idle(WAIT_S)
        started = time.monotonic()
        background.stop(timeout=WAIT_S)
        assert not background._thread.is_alive()
        assert time.monotonic() - started < WAIT_S


# -- queries by meaning with the stub ---------------------------------------------------------------


def test_a_query_is_searched_by_meaning_once_vectors_exist(http_eng: Engine, stub: StubEndpoint) -> None:
    pet = mem(http_eng, "We adopted a puppy named Rex")
    mem(http_eng, "My sister lives in Lisbon")
    # No vectors yet: the query is not even sent to the endpoint.
    assert http_eng.items.search("hound").found == ()
    assert stub.requests == []

    http_eng.embeddings.reindex()
    found = http_eng.items.search("hound").found
    assert found[0].item.id == pet.id
    assert http_eng.items.search("hound", semantic=False).found == ()


def test_a_failing_endpoint_leaves_the_query_to_words(http_eng: Engine, stub: StubEndpoint) -> None:
    pet = mem(http_eng, "We adopted a puppy named Rex")
    http_eng.embeddings.reindex()
    stub.fail_next = 1
    assert http_eng.items.search("hound").found == ()
    assert stub.fail_next == 0
    asked = len(stub.requests)
    # After a failure, queries go by words for a while without asking the endpoint again.
    assert [f.item.id for f in http_eng.items.search("puppy").found] == [pet.id]
    assert http_eng.items.search("hound").found == ()
    assert len(stub.requests) == asked


@pytest.mark.parametrize("mode", ["not-json", "short", "bad-rows"])
def test_an_endpoint_answering_garbage_leaves_the_query_to_words(
    http_eng: Engine, stub: StubEndpoint, mode: str
) -> None:
    pet = mem(http_eng, "We adopted a puppy named Rex")
    http_eng.embeddings.reindex()
    stub.mode = mode
    assert [f.item.id for f in http_eng.items.search("puppy").found] == [pet.id]


# -- dimensions ---------------------------------------------------------------------------------------


def test_stored_vectors_of_another_length_make_the_embedder_unavailable(http_eng: Engine) -> None:
    pet = mem(http_eng, "We adopted a puppy named Rex")
    mem(http_eng, "My sister lives in Lisbon")
    http_eng.items.revise(pet.id, Patch(embedding=(STUB_MODEL, [0.1, 0.2, 0.3])))

    with pytest.raises(EmbedderUnavailable) as failure:
        http_eng.embeddings.embed_pending()
    message = str(failure.value)
    assert f"{STUB_DIM}-dimensional" in message
    assert "3-dimensional" in message
    assert STUB_MODEL in message


def test_a_vector_set_through_the_property_graph_counts_too(http_eng: Engine) -> None:
    pet = mem(http_eng, "We adopted a puppy named Rex")
    http_eng.nodes.submit([SetEmbedding(pet.id, STUB_MODEL, (1.0, 0.0, 0.0, 0.0))])
    mem(http_eng, "My sister lives in Lisbon")
    with pytest.raises(EmbedderUnavailable, match=rf"{STUB_DIM}-dimensional.*\b4-dimensional"):
        http_eng.embeddings.reindex()


def test_the_cached_matrix_follows_every_change_as_a_fresh_one_would(db_path: Path) -> None:
    """A search keeps the matrix of vectors between calls and brings it up to date from what
    was written since (new and changed vectors, removals, and rows in other scopes). After
    every step, its answers must be exactly those of an engine that reads everything anew."""
    rng = np.random.default_rng(7)
    model = "client-4"

    def vector() -> tuple[float, ...]:
        return tuple(float(x) for x in rng.normal(size=4))

    def answers(eng: Engine, queries: Sequence[tuple[float, ...]], scopes: list[str]) -> list[list[tuple[str, float]]]:
        return [
            [(node.id, round(score, 5)) for node, score in eng.nodes.search_vectors(model, q, k=6, scopes=scopes)]
            for q in queries
        ]

    queries = [vector() for _ in range(5)]
    with open_engine(db_path) as eng:
        ids: list[str] = []
        for step in range(40):
            action = step % 5
            if action in (0, 1) or len(ids) < 4:  # a new memory with a vector, in one of two scopes
                scope = "shared" if step % 3 == 0 else None
                [done], _ = eng.items.remember([Note(NewMemory(f"memory {step}"))], scope=scope)
                assert done.item is not None
                ids.append(done.item.id)
                eng.nodes.submit([SetEmbedding(ids[-1], model, vector())])
            elif action == 2:  # a changed vector
                eng.nodes.submit([SetEmbedding(ids[int(rng.integers(len(ids)))], model, vector())])
            elif action == 3:  # a removed one
                eng.items.forget([ids.pop(int(rng.integers(len(ids))))])
            else:  # a zero vector matches nothing
                eng.nodes.submit([SetEmbedding(ids[int(rng.integers(len(ids)))], model, (0.0, 0.0, 0.0, 0.0))])
            for scopes in ([eng.write_scope], [eng.write_scope, "shared"]):
                with open_engine(db_path) as fresh:
                    assert answers(eng, queries, scopes) == answers(fresh, queries, scopes), (step, scopes)
        index = eng.store.vectors
        if chosen_backend() == "sqlite":  # SQLite's index is the exact one; a server store may have its own
            assert isinstance(index, MatrixVectorIndex)
        if isinstance(index, MatrixVectorIndex):
            assert index.switched_off(model) > 0, "the test never exercised switched-off rows"


def test_a_query_vector_of_the_wrong_length_is_refused(http_eng: Engine) -> None:
    mem(http_eng, "We adopted a puppy named Rex")
    http_eng.embeddings.reindex()
    with pytest.raises(InvalidArgument) as failure:
        http_eng.items.search("puppy", vector=(STUB_MODEL, [0.5, 0.5, 0.5]))
    message = str(failure.value)
    assert "3 dimensions" in message
    assert f"{STUB_DIM}-dimensional" in message


def test_a_word_query_still_works_when_stored_vectors_have_another_length(http_eng: Engine) -> None:
    """Client vectors of another length under the embedder's model name: the embedder cannot
    add to them, but a query in words must still be answered (by words)."""
    pet = mem(http_eng, "We adopted a puppy named Rex")
    http_eng.items.revise(pet.id, Patch(embedding=(STUB_MODEL, [0.1, 0.2, 0.3])))
    assert http_eng.embeddings.coverage() == (1, 1)  # nothing pending: the mismatch is never met
    page = http_eng.items.search("puppy")
    assert [f.item.id for f in page.found] == [pet.id]


# -- parse_fusion -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", FusionWeights()),
        ("words=1,vector=0.7,k=60,access=0", FusionWeights(1.0, 0.7, 60.0, 0.0)),
        ("vector=0", FusionWeights(vector=0.0)),
        (" k = 10 , access=0.5 ,", FusionWeights(k=10.0, access=0.5)),
        ("words=2e-1", FusionWeights(words=0.2)),
        ("vector=1,vector=3", FusionWeights(vector=3.0)),
    ],
)
def test_parse_fusion_reads_weights(text: str, expected: FusionWeights) -> None:
    assert parse_fusion(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("meaning=1", r"'meaning=1': give name=value with a name among words, vector, k, access"),
        ("words", r"'words': give name=value"),
        ("=1", r"give name=value"),
        ("words=x", r"'words=x': 'x' is not a number"),
        ("words=", r"'words=': '' is not a number"),
        ("vector=-0.5", r"'vector=-0.5': weights must be finite and not negative \(k above 0\)"),
        ("k=0", r"'k=0': .*k above 0"),
        ("k=-1", r"k above 0"),
        ("access=nan", r"'access=nan': weights must be finite"),
        ("words=inf", r"'words=inf': weights must be finite"),
        ("vector=-inf", r"weights must be finite"),
        ("words=1;vector=2", r"is not a number"),
    ],
)
def test_parse_fusion_refuses_bad_settings(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_fusion(text)


# -- ranking by words and meaning with the real model -----------------------------------------------

CORPUS = {
    "puppy": "We adopted a puppy named Rex",
    "sister": "My sister lives in Lisbon",
    "pipeline": "The deploy pipeline runs on Fridays",
    "taxes": "Quarterly taxes are due in April",
    "bot": "Our deploy bot is called Rex",
    "hound": "The hound next door howls all night",
    "lunch": "Friday lunch is pizza with the team",
}


@pytest.fixture(scope="module")
def local(local_embedder: LocalEmbedder) -> LocalEmbedder:
    return local_embedder


@pytest.fixture(scope="module")
def corpus_engine(
    tmp_path_factory: pytest.TempPathFactory, local: LocalEmbedder
) -> Iterator[tuple[Engine, dict[str, str]]]:
    """The corpus, embedded; a frozen clock, so recency never orders it."""
    path = tmp_path_factory.mktemp("ranking") / "memory.db"
    with open_engine(path, local, clock=Clock()) as eng:
        ids = {key: mem(eng, text).id for key, text in CORPUS.items()}
        assert eng.embeddings.reindex() == len(CORPUS)
        yield eng, ids


@pytest.fixture
def ranked(
    corpus_engine: tuple[Engine, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., list[str]]]:
    eng, ids = corpus_engine
    names = {v: k for k, v in ids.items()}
    monkeypatch.setattr(eng, "fusion", FusionWeights())

    def search(query: str, **options: Any) -> list[str]:
        return [names[f.item.id] for f in eng.items.search(query, **options).found]

    yield search


def test_a_query_sharing_no_word_finds_by_meaning(ranked: Callable[..., list[str]]) -> None:
    for query, first in (
        ("a new pet", "puppy"),
        ("internal revenue service", "taxes"),
        ("someone in my family abroad", "sister"),
    ):
        assert ranked(query, semantic=False) == [], query
        assert ranked(query)[0] == first, query
    # Both dogs are nearer to "dog" than anything else.
    assert ranked("dog", semantic=False) == []
    assert set(ranked("dog")[:2]) == {"puppy", "hound"}


def test_the_item_matching_words_and_meaning_ranks_first(ranked: Callable[..., list[str]]) -> None:
    # Words find the puppy and the bot (both say "named/called Rex"); meaning prefers the puppy.
    assert ranked("dog named Rex", semantic=False) == ["puppy", "bot"]
    hybrid = ranked("dog named Rex")
    assert hybrid[:2] == ["puppy", "bot"]
    # What only meaning finds comes after what both find.
    assert hybrid.index("hound") > hybrid.index("bot")


def test_equal_word_matches_are_told_apart_by_meaning(ranked: Callable[..., list[str]]) -> None:
    """ "Rex" matches the puppy and the bot equally well by words; by meaning, "Rex dog" is
    the puppy. Fused, the puppy must come first: a tie in one ranking must not count as
    much as a real difference in the other."""
    assert sorted(ranked("Rex dog", semantic=False)) == ["bot", "puppy"]
    assert ranked("Rex dog")[0] == "puppy"


def test_a_zero_vector_weight_gives_the_word_order(
    corpus_engine: tuple[Engine, dict[str, str]], ranked: Callable[..., list[str]]
) -> None:
    eng, _ = corpus_engine
    eng.fusion = FusionWeights(vector=0.0)
    for query in ("dog named Rex", "pipeline on Friday", "deploy pipeline dog"):
        words = ranked(query, semantic=False)
        assert words
        assert ranked(query)[: len(words)] == words


def test_a_zero_vector_weight_adds_nothing_the_words_did_not_find(
    corpus_engine: tuple[Engine, dict[str, str]], ranked: Callable[..., list[str]]
) -> None:
    """vector=0 turns meaning off: items only the vectors found (fused score 0) stay out."""
    eng, _ = corpus_engine
    eng.fusion = FusionWeights(vector=0.0)
    assert ranked("dog named Rex") == ranked("dog named Rex", semantic=False)


def test_explain_tells_each_ranking_and_the_fused_score(
    corpus_engine: tuple[Engine, dict[str, str]], local: LocalEmbedder
) -> None:
    eng, ids = corpus_engine
    page = eng.items.search("dog named Rex", explain=True)
    weights = eng.fusion
    query, *own = local.embed(["dog named Rex", *(item_text(f.item) for f in page.found)])
    assert [f.item.id for f in page.found[:2]] == [ids["puppy"], ids["bot"]]
    for found, vector_of_item in zip(page.found, own, strict=True):
        why = found.why
        assert why is not None
        assert set(why) <= {"words", "vector", "fused"}
        assert "vector" in why and "fused" in why
        vector = why["vector"]
        assert vector["weight"] == weights.vector
        assert vector["cosine"] == pytest.approx(float(query @ vector_of_item), abs=2e-3)
        expected = vector["weight"] / (weights.k + vector["rank"])
        if "words" in why:
            words = why["words"]
            assert words["weight"] == weights.words
            assert set(words) >= {"rank", "score", "text", "tag", "importance", "recency"}
            expected += words["weight"] / (weights.k + words["rank"])
        assert why["fused"] == pytest.approx(expected, abs=1e-6)
        assert found.score == why["fused"]
    ranks = [f.why["vector"]["rank"] for f in page.found if f.why]
    assert sorted(ranks) == list(range(1, len(ranks) + 1))
    # Only the puppy and the bot say "Rex".
    assert [f.item.id for f in page.found if f.why and "words" in f.why] == [ids["puppy"], ids["bot"]]
    # Without explain, no why.
    assert all(f.why is None for f in eng.items.search("dog named Rex").found)


def test_often_read_items_are_raised_by_the_access_weight(tmp_path: Path, local: LocalEmbedder) -> None:
    with open_engine(tmp_path / "access.db", local, clock=Clock()) as eng:
        nine = mem(eng, "The team standup moved to nine")
        ten = mem(eng, "The team standup moved to ten")
        mem(eng, "My sister lives in Lisbon")
        eng.embeddings.reindex()

        plain = [f.item.id for f in eng.items.search("standup").found]
        assert set(plain[:2]) == {nine.id, ten.id}
        lower = plain[1]
        higher = plain[0]
        for _ in range(5):
            eng.items.get([lower])
        eng.access.flush()

        weight = 0.5
        eng.fusion = FusionWeights(access=weight)
        page = eng.items.search("standup", explain=True)
        assert [f.item.id for f in page.found[:2]] == [lower, higher]
        by_id = {f.item.id: f for f in page.found}
        lower_why, higher_why = by_id[lower].why, by_id[higher].why
        assert lower_why is not None and higher_why is not None
        # The search above read both once; the five gets read only `lower`.
        assert lower_why["access"]["reads"] == higher_why["access"]["reads"] + 5
        reads = lower_why["access"]["reads"]
        boost = 1 + weight * min(1.0, math.log1p(reads) / math.log1p(ACCESS_SATURATION))
        assert lower_why["access"]["boost"] == pytest.approx(boost, abs=1e-4)
        assert by_id[lower].score == pytest.approx(lower_why["fused"] * boost, abs=1e-5)


# -- loading the local model only when it is needed -------------------------------------------------


@pytest.mark.skipif(not local_available(), reason="the local embedding model is not installed")
def test_the_local_model_is_loaded_only_once_something_needs_it(db_path: Path) -> None:
    """Loading the model costs seconds of CPU and hundreds of MB: a server on an empty
    database, or on one whose vectors are all current, must not pay it at start. It loads
    once an item needs a vector, or once a search would have used one."""
    fresh = LocalEmbedder()
    with open_engine(db_path, fresh) as eng:
        background = BackgroundEmbedder(eng.embeddings, poll=0.05).start()
        try:
            assert background.wait_idle(WAIT_S)
            loaded_before = fresh.loaded
            assert loaded_before is False  # nothing to embed, nothing to search
            memory = mem(eng, "The deploy pipeline runs on Fridays")
            assert background.wait_idle(60)
            assert fresh.loaded is True
            assert eng.embeddings.coverage() == (1, 1)
        finally:
            background.stop()

    again = LocalEmbedder()
    with open_engine(db_path, again) as eng:
        background = BackgroundEmbedder(eng.embeddings, poll=0.05).start()
        try:
            assert background.wait_idle(WAIT_S)
            loaded_before = again.loaded
            assert loaded_before is False  # every vector is current
            # The first search that would have used the model goes by words, and asks for it.
            first = eng.items.search("when does the build ship", explain=True).found
            assert first == ()
            assert background.wait_idle(60)
            assert again.loaded is True
            [hit] = eng.items.search("when does the build ship", explain=True).found
            assert hit.item.id == memory.id and hit.why is not None and "vector" in hit.why
        finally:
            background.stop()
