"""Search by meaning through the native profile, spoken to by the MCP SDK's client,
embedding in the background with an HTTP stub endpoint the test runs (and once with the
real local model). The shared server is the one `mnemodb serve` builds, run in this
process; starting, failing endpoints, settings and the local model use real `mnemodb
serve` processes over stdio."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from embed_support import STUB_MODEL, StubEndpoint, free_port, stub_endpoint
from mnemodb.search.embedders import local_available
from native_support import Native, serve_fails

WAIT_S = 20.0  # a hang guard: the background thread polls the store twice a second
LOCAL_WAIT_S = 60.0  # loading the model in a fresh process and embedding, under load


def http_env(url: str) -> dict[str, str]:
    return {"MNEMODB_EMBEDDER": "http", "MNEMODB_EMBED_URL": url, "MNEMODB_EMBED_MODEL": STUB_MODEL}


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(0.1)


def embeddings(srv: Native) -> int:
    count: int = srv.call("survey")["embeddings"]
    return count


def recall(srv: Native, query: str, **arguments: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = srv.call("recall", {"query": query, **arguments})["items"]
    return items


@pytest.fixture(scope="module")
def stub() -> Iterator[StubEndpoint]:
    with stub_endpoint() as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory, stub: StubEndpoint) -> Iterator[Native]:
    db = tmp_path_factory.mktemp("native-embedding") / "memory.db"
    with Native.in_process(db, env=http_env(stub.url)) as server:
        yield server
    assert "Traceback" not in server.stderr, server.stderr


@pytest.fixture(scope="module")
def pets(srv: Native) -> dict[str, str]:
    ids = {
        "puppy": srv.memory("We adopted a puppy named Rex")["id"],
        "sister": srv.memory("My sister lives in Lisbon")["id"],
        "taxes": srv.memory("Quarterly taxes are due in April")["id"],
    }
    wait_until(lambda: embeddings(srv) == 3, WAIT_S, "the three memories embedded")
    return ids


@pytest.mark.inprocess
def test_memories_are_embedded_in_the_background(srv: Native, stub: StubEndpoint, pets: dict[str, str]) -> None:
    assert embeddings(srv) == 3
    assert set(stub.texts()) >= {"We adopted a puppy named Rex", "My sister lives in Lisbon"}
    assert all(r.body["model"] == STUB_MODEL for r in stub.requests)


@pytest.mark.inprocess
def test_recall_finds_by_meaning_a_memory_sharing_no_word(srv: Native, pets: dict[str, str]) -> None:
    items = recall(srv, "hound", why=True)
    assert items[0]["id"] == pets["puppy"]
    why = items[0]["why"]
    assert set(why) == {"vector"}  # no word matched: the vector ranking alone
    assert why["vector"]["rank"] == 1
    assert 0.3 < why["vector"]["cosine"] <= 1.0
    assert items[0]["score"] == pytest.approx(why["vector"]["cosine"], abs=1e-3)


@pytest.mark.inprocess
def test_recall_why_shows_words_and_vector_when_both_match(srv: Native, pets: dict[str, str]) -> None:
    items = recall(srv, "puppy Lisbon", why=True)
    assert {i["id"] for i in items[:2]} == {pets["puppy"], pets["sister"]}
    for item in items[:2]:
        why = item["why"]
        assert set(why) == {"words", "vector", "fused"}
        # The default weights (FusionWeights): words 1, vector 0.15, k 20.
        assert why["words"]["weight"] == 1.0 and why["vector"]["weight"] == 0.15
        expected = 1 / (20 + why["words"]["rank"]) + 0.15 / (20 + why["vector"]["rank"])
        assert why["fused"] == pytest.approx(expected, abs=1e-6)
        assert item["score"] == why["fused"]
    # Without why, no explanation.
    assert all("why" not in i for i in recall(srv, "puppy Lisbon"))


@pytest.mark.inprocess
def test_an_updated_memory_is_embedded_again(srv: Native, stub: StubEndpoint, pets: dict[str, str]) -> None:
    memory = srv.memory("The garden shed needs a new roof")
    wait_until(lambda: "The garden shed needs a new roof" in stub.texts(), WAIT_S, "the new memory embedded")
    srv.call("update", {"ref": memory["id"], "content": "The capital has a new mayor"})
    wait_until(lambda: "The capital has a new mayor" in stub.texts(), WAIT_S, "the edited memory embedded")
    # "town" shares no word with it, but the same stub concept as "capital" (and "Lisbon").
    found = [i["id"] for i in recall(srv, "town")[:2]]
    assert memory["id"] in found
    srv.call("forget", {"refs": [memory["id"]]})
    assert embeddings(srv) == 3


def test_a_server_started_while_the_endpoint_is_down_answers_by_words_then_embeds(tmp_path: Path) -> None:
    port = free_port()
    db = tmp_path / "memory.db"
    with Native.start(db, env=http_env(f"http://127.0.0.1:{port}/v1")) as srv:
        puppy = srv.memory("We adopted a puppy named Rex")["id"]
        started = time.monotonic()
        assert [i["id"] for i in recall(srv, "puppy")] == [puppy]
        assert recall(srv, "hound") == []
        assert time.monotonic() - started < 5.0
        assert embeddings(srv) == 0

        with stub_endpoint(port) as stub:
            wait_until(lambda: embeddings(srv) == 1, WAIT_S, "embedded once the endpoint is up")
            assert "We adopted a puppy named Rex" in stub.texts()
            assert [i["id"] for i in recall(srv, "hound")] == [puppy]
    assert "Traceback" not in srv.stderr, srv.stderr


def test_a_failing_endpoint_is_retried_and_recall_keeps_working(tmp_path: Path) -> None:
    with stub_endpoint() as stub:
        stub.fail_next = 1
        with Native.start(tmp_path / "memory.db", env=http_env(stub.url)) as srv:
            puppy = srv.memory("We adopted a puppy named Rex")["id"]
            assert [i["id"] for i in recall(srv, "puppy")] == [puppy]
            wait_until(lambda: embeddings(srv) == 1, WAIT_S, "embedded after the failures")
            assert stub.fail_next == 0
            assert [i["id"] for i in recall(srv, "hound")] == [puppy]


def test_a_hanging_endpoint_does_not_make_recall_fail(tmp_path: Path) -> None:
    """Once vectors exist, every query is embedded too. An endpoint that stops answering must
    leave recall to words, not make it time out."""
    with (
        stub_endpoint() as stub,
        Native.start(tmp_path / "memory.db", "--tool-timeout-ms", "5000", env=http_env(stub.url)) as srv,
    ):
        puppy = srv.memory("We adopted a puppy named Rex")["id"]
        wait_until(lambda: embeddings(srv) == 1, WAIT_S, "embedded")
        stub.mode = "hang"
        try:
            result = srv.result("recall", {"query": "puppy"})
        finally:
            stub.release()
        assert result.is_error is False, result.content
        assert [i["id"] for i in (result.structured_content or {}).get("items", [])] == [puppy]


# -- configuration errors -----------------------------------------------------------------------------


def test_serve_http_embedder_without_a_url_is_refused(tmp_path: Path) -> None:
    message = serve_fails(tmp_path, "--embedder", "http", "--embed-model", STUB_MODEL)
    assert message == ("mnemodb: the http embedder needs --embed-url (or MNEMODB_EMBED_URL) starting with http(s)://")
    from_env = serve_fails(tmp_path, env={"MNEMODB_EMBEDDER": "http", "MNEMODB_EMBED_MODEL": STUB_MODEL})
    assert from_env == message


def test_serve_http_embedder_without_a_model_is_refused(tmp_path: Path) -> None:
    message = serve_fails(tmp_path, "--embedder", "http", "--embed-url", "http://127.0.0.1:9/v1")
    assert message == "mnemodb: the http embedder needs --embed-model (or MNEMODB_EMBED_MODEL)"


def test_serve_http_embedder_with_a_url_that_is_not_http_is_refused(tmp_path: Path) -> None:
    message = serve_fails(
        tmp_path, "--embedder", "http", "--embed-url", "localhost:11434/v1", "--embed-model", STUB_MODEL
    )
    assert "--embed-url" in message and "http(s)://" in message


def test_serve_unknown_embedder_is_refused(tmp_path: Path) -> None:
    message = serve_fails(tmp_path, "--embedder", "magic")
    assert message == "mnemodb: Invalid embedder 'magic': expected one of auto, local, http, none"


@pytest.mark.parametrize(
    ("weights", "detail"),
    [
        ("words=x", "'words=x': 'x' is not a number"),
        ("meaning=1", "'meaning=1': give name=value with a name among words, vector, k, access"),
        ("k=0", "'k=0': weights must be finite and not negative (k above 0)"),
    ],
)
def test_serve_bad_search_weights_are_refused(tmp_path: Path, weights: str, detail: str) -> None:
    assert serve_fails(tmp_path, "--search-weights", weights) == f"mnemodb: Invalid --search-weights: {detail}"


def test_serve_bad_search_weights_from_the_environment_are_refused(tmp_path: Path) -> None:
    message = serve_fails(tmp_path, env={"MNEMODB_SEARCH_WEIGHTS": "vector=-1"})
    assert message.startswith("mnemodb: Invalid ")
    assert "'vector=-1'" in message


def test_serve_search_weights_change_the_ranking(tmp_path: Path) -> None:
    """vector=0 switches meaning off: the word ranking decides, whatever the vectors say."""
    with stub_endpoint() as stub:
        env = http_env(stub.url)
        with Native.start(tmp_path / "memory.db", "--search-weights", "vector=0,k=10", env=env) as srv:
            srv.memory("We adopted a puppy named Rex")
            srv.memory("The hound puppy howls")
            wait_until(lambda: embeddings(srv) == 2, WAIT_S, "embedded")
            asked = len(stub.requests)
            items = recall(srv, "puppy hound", why=True)
            assert [item["why"]["words"]["rank"] for item in items] == [1, 2]
            assert all(set(item["why"]) == {"words"} for item in items)
            assert len(stub.requests) == asked, "the query was embedded though its vector counts for nothing"


# -- the local model ----------------------------------------------------------------------------------


@pytest.mark.skipif(not local_available(), reason="the local embedding model is not installed")
def test_local_model_recall_by_meaning_end_to_end(tmp_path: Path) -> None:
    with Native.start(tmp_path / "memory.db", env={"MNEMODB_EMBEDDER": "local"}) as srv:
        puppy = srv.memory("We adopted a puppy named Rex")["id"]
        srv.memory("My sister lives in Lisbon")
        srv.memory("Quarterly taxes are due in April")
        # While the model loads, recall answers by words.
        assert [i["id"] for i in recall(srv, "puppy")] == [puppy]
        wait_until(lambda: embeddings(srv) == 3, LOCAL_WAIT_S, "the local model embedded the memories")
        items = recall(srv, "a new pet", why=True)
        assert items[0]["id"] == puppy
        assert set(items[0]["why"]) == {"vector"}
        assert items[0]["why"]["vector"]["cosine"] > 0.3
    assert "Traceback" not in srv.stderr, srv.stderr
