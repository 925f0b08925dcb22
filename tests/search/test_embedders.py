"""The embedders: an OpenAI-compatible HTTP endpoint (against a stub server the tests run)
and the local all-MiniLM-L6-v2 model (loaded once for the module; no network is used)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from embed_support import STUB_DIM, STUB_MODEL, StubEndpoint, free_port, stub_endpoint, stub_unit
from mnemodb.search.embedders import (
    LOCAL_MODEL,
    QUANTIZED_MODEL,
    EmbeddingFailed,
    HttpEmbedder,
    LocalEmbedder,
    default_local_model,
    local_available,
    onnx_runtime_available,
)


@pytest.fixture
def stub() -> Iterator[StubEndpoint]:
    with stub_endpoint() as endpoint:
        yield endpoint


def unit_rows(matrix: np.ndarray) -> bool:
    return bool(np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5))


# -- HttpEmbedder ---------------------------------------------------------------------------------

TEXTS = ["the cat sat on the mat", "a hound chased a pooch", "taxes are due in April", "hello"]


def test_http_vectors_are_unit_rows_one_per_text_in_order(stub: StubEndpoint) -> None:
    embedder = HttpEmbedder(stub.url, STUB_MODEL)
    vectors = embedder.embed(TEXTS)
    assert vectors.shape == (len(TEXTS), STUB_DIM)
    assert vectors.dtype == np.float32
    assert unit_rows(vectors)
    np.testing.assert_allclose(vectors, np.array([stub_unit(t) for t in TEXTS]), atol=1e-6)
    [request] = stub.requests
    assert request.path == "/v1/embeddings"
    assert request.body == {"model": STUB_MODEL, "input": TEXTS}
    assert request.headers["Content-Type"] == "application/json"


def test_http_rows_answered_out_of_order_are_put_back_in_input_order(stub: StubEndpoint) -> None:
    stub.mode = "shuffled"
    vectors = HttpEmbedder(stub.url, STUB_MODEL).embed(TEXTS)
    np.testing.assert_allclose(vectors, np.array([stub_unit(t) for t in TEXTS]), atol=1e-6)


def test_http_sends_a_bearer_key_only_when_given(stub: StubEndpoint) -> None:
    HttpEmbedder(stub.url, STUB_MODEL, key="sk-test-123").embed(["one"])
    HttpEmbedder(stub.url, STUB_MODEL).embed(["two"])
    HttpEmbedder(stub.url, STUB_MODEL, key="").embed(["three"])
    with_key, without, empty = stub.requests
    assert with_key.headers["Authorization"] == "Bearer sk-test-123"
    assert "Authorization" not in without.headers
    assert "Authorization" not in empty.headers


@pytest.mark.parametrize("suffix", ["", "/", "/embeddings", "/embeddings/"])
def test_http_url_with_or_without_the_embeddings_path(stub: StubEndpoint, suffix: str) -> None:
    embedder = HttpEmbedder(stub.url + suffix, STUB_MODEL)
    assert embedder.url == stub.url + "/embeddings"
    assert embedder.embed(["x y"]).shape == (1, STUB_DIM)
    assert [r.path for r in stub.requests] == ["/v1/embeddings"]


def test_http_batches_split_at_batch_size(stub: StubEndpoint) -> None:
    texts = [f"text number {i}" for i in range(7)]
    vectors = HttpEmbedder(stub.url, STUB_MODEL, batch_size=3).embed(texts)
    assert [r.body["input"] for r in stub.requests] == [texts[0:3], texts[3:6], texts[6:7]]
    np.testing.assert_allclose(vectors, np.array([stub_unit(t) for t in texts]), atol=1e-6)


def test_http_500_fails_with_the_status(stub: StubEndpoint) -> None:
    stub.fail_next = 1
    with pytest.raises(EmbeddingFailed, match=r"HTTP 500") as failure:
        HttpEmbedder(stub.url, STUB_MODEL).embed(["x"])
    assert "told to fail" in str(failure.value)
    # The next request works: the failure was one request's.
    assert HttpEmbedder(stub.url, STUB_MODEL).embed(["x"]).shape == (1, STUB_DIM)


def test_http_a_body_that_is_not_json_fails(stub: StubEndpoint) -> None:
    stub.mode = "not-json"
    with pytest.raises(EmbeddingFailed, match="JSON"):
        HttpEmbedder(stub.url, STUB_MODEL).embed(["x"])


def test_http_the_wrong_number_of_embeddings_fails(stub: StubEndpoint) -> None:
    stub.mode = "short"
    with pytest.raises(EmbeddingFailed, match=r"answered 2 embeddings for 3 texts"):
        HttpEmbedder(stub.url, STUB_MODEL).embed(["a", "b", "c"])


def test_http_a_later_batch_failing_fails_the_whole_call(stub: StubEndpoint) -> None:
    embedder = HttpEmbedder(stub.url, STUB_MODEL, batch_size=2)
    embedder.embed(["warm"])
    stub.requests.clear()
    stub.mode = "short"
    with pytest.raises(EmbeddingFailed):
        embedder.embed(["a", "b", "c", "d"])


def test_http_a_refused_connection_fails() -> None:
    embedder = HttpEmbedder(f"http://127.0.0.1:{free_port()}/v1", STUB_MODEL, timeout=5)
    with pytest.raises(EmbeddingFailed, match="could not be reached"):
        embedder.embed(["x"])


@pytest.mark.parametrize("url", ["ftp://example.org/v1", "localhost:11434/v1", "", "file:///etc/passwd"])
def test_http_a_url_that_is_not_http_is_refused(url: str) -> None:
    with pytest.raises(ValueError, match="http:// or https://"):
        HttpEmbedder(url, STUB_MODEL)


def test_http_needs_a_model_name() -> None:
    with pytest.raises(ValueError, match="model name"):
        HttpEmbedder("http://127.0.0.1:1/v1", "  ")


@pytest.mark.parametrize(
    "answer",
    [
        {"data": [1.0, 2.0]},
        {"data": ["not a row"]},
        {"data": None},
        {"result": []},
        [1, 2, 3],
        "just a string",
    ],
)
def test_http_an_answer_of_the_wrong_shape_fails_as_embedding_failed(
    stub: StubEndpoint, answer: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Any JSON that is not a list of embeddings is one failed request, never another error."""
    import json

    original = stub._answer

    def wrong(path: str, headers: dict[str, str], raw: bytes) -> tuple[int, bytes]:
        original(path, headers, raw)
        return 200, json.dumps(answer).encode()

    monkeypatch.setattr(stub, "_answer", wrong)
    with pytest.raises(EmbeddingFailed):
        HttpEmbedder(stub.url, STUB_MODEL).embed(["a", "b"])


# -- LocalEmbedder ----------------------------------------------------------------------------------

needs_local = pytest.mark.skipif(not local_available(), reason="the local embedding model is not installed")


@needs_local
def test_local_loads_quietly_on_first_use(capfd: pytest.CaptureFixture[str]) -> None:
    """Loading prints nothing to stdout (stdout is the MCP channel) and happens on first use."""
    local = LocalEmbedder()
    assert local.model == default_local_model()
    loaded_before = local.loaded
    assert loaded_before is False
    capfd.readouterr()
    vectors = local.embed(["warming up"])
    out, _ = capfd.readouterr()
    assert local.loaded is True
    assert out == ""
    assert vectors.shape == (1, 384)
    # load() again is a no-op.
    local.load()
    assert local.loaded is True


def test_local_gives_unit_384_dimensional_rows(
    local_embedder: LocalEmbedder, capfd: pytest.CaptureFixture[str]
) -> None:
    texts = ["the dog barked at the mailman", "a puppy was barking at the postman", "quarterly tax filing deadline"]
    vectors = local_embedder.embed(texts)
    assert capfd.readouterr().out == ""
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    assert unit_rows(vectors)
    dog, puppy, tax = vectors
    assert float(dog @ puppy) > 0.5
    assert float(dog @ puppy) > float(dog @ tax) + 0.3
    assert float(dog @ puppy) > float(puppy @ tax) + 0.3
    # The same text always gives the same vector.
    np.testing.assert_allclose(local_embedder.embed([texts[0]])[0], dog, atol=1e-5)


@needs_local
def test_local_gives_the_vectors_sentence_transformers_gives(local_embedder: LocalEmbedder) -> None:
    """The numpy forward pass against vectors sentence-transformers computed with torch
    (kept in data/minilm_reference.json): the same to float32 rounding, for an empty text,
    one character, accents and CJK and emoji, and a text past the 256-token limit."""
    reference = json.loads((Path(__file__).parent / "data" / "minilm_reference.json").read_text())
    texts: list[str] = reference["texts"]
    expected = np.array(reference["vectors"], dtype=np.float32)
    for batch in (1, 3, 64):  # padding must not change a text's vector
        local = LocalEmbedder(LOCAL_MODEL, batch_size=batch)
        got = local.embed(texts)
        cosines = (got * expected).sum(axis=1)
        assert cosines.min() > 0.99999, (batch, cosines)
        np.testing.assert_allclose(got, expected, atol=2e-5)


needs_onnx_runtime = pytest.mark.skipif(
    not (local_available() and onnx_runtime_available()), reason="the local model or ONNX Runtime is not installed"
)


def test_the_local_embedder_runs_the_int8_model_where_onnx_runtime_is_installed() -> None:
    assert default_local_model() == (QUANTIZED_MODEL if onnx_runtime_available() else LOCAL_MODEL)
    with pytest.raises(ValueError, match="all-MiniLM-L6-v2-int8 or all-MiniLM-L6-v2, not 'nomic-embed-text'"):
        LocalEmbedder("nomic-embed-text")


@needs_onnx_runtime
def test_the_int8_model_stays_close_to_the_float_one_whatever_the_batch() -> None:
    """The int8 form against the torch reference: close (it is stored under a name of its
    own), and a text's vector is the same whatever else is in its batch (one scale per
    token, not per batch), to float32 rounding."""
    reference = json.loads((Path(__file__).parent / "data" / "minilm_reference.json").read_text())
    texts: list[str] = reference["texts"]
    expected = np.array(reference["vectors"], dtype=np.float32)
    alone = np.vstack([LocalEmbedder(QUANTIZED_MODEL).embed([text]) for text in texts])
    assert unit_rows(alone)
    cosines = (alone * expected).sum(axis=1)
    assert cosines.min() > 0.95, cosines
    assert cosines.mean() > 0.99, cosines
    for batch in (3, 64):
        together = LocalEmbedder(QUANTIZED_MODEL, batch_size=batch).embed(texts)
        np.testing.assert_allclose(together, alone, atol=1e-6)


@needs_onnx_runtime
def test_the_int8_model_ranks_by_meaning() -> None:
    local = LocalEmbedder(QUANTIZED_MODEL)
    dog, puppy, tax = local.embed(["the dog barked at the mailman", "a puppy was barking at the postman", "taxes"])
    assert float(dog @ puppy) > float(dog @ tax) + 0.3
    assert float(dog @ puppy) > float(puppy @ tax) + 0.3


# -- token vectors (late interaction) --------------------------------------------------------------

TOKEN_TEXTS = ["the dog barked at the mailman", "a puppy was barking at the postman", "taxes", ""]


def max_sim(query: np.ndarray, text: np.ndarray) -> float:
    """Each query token's best cosine over the text's tokens, summed."""
    return float((query @ text.T).max(axis=1).sum())


@pytest.mark.parametrize("model", [LOCAL_MODEL, QUANTIZED_MODEL])
def test_token_vectors_are_the_tokens_the_text_is_made_of_unit_length(model: str) -> None:
    if not local_available() or (model == QUANTIZED_MODEL and not onnx_runtime_available()):
        pytest.skip("the local model or ONNX Runtime is not installed")
    local = LocalEmbedder(model)
    tokens = local.embed_tokens(TOKEN_TEXTS)
    pooled = local.embed(TOKEN_TEXTS)
    assert len(tokens) == len(TOKEN_TEXTS)
    tokenizer = local._encoder.tokenizer
    for text, (ids, vectors), vector in zip(TOKEN_TEXTS, tokens, pooled, strict=True):
        assert ids.tolist() == tokenizer.encode(text)  # [CLS] ... [SEP], in order
        assert vectors.shape == (len(ids), 384)
        assert vectors.dtype == np.float32
        assert unit_rows(vectors)
        # They are the vectors `embed` averages: the last layer's, whose lengths differ
        # little, so the mean of the unit rows points where the text's vector does (0.96
        # for the two tokens of an empty text, above 0.99 otherwise; the word embeddings'
        # mean gives 0.1 to 0.3).
        mean = vectors.mean(axis=0)
        assert float(mean @ vector) / float(np.linalg.norm(mean)) > 0.95
    assert tokens[3].ids.tolist() == [tokenizer.first, tokenizer.last]


@needs_onnx_runtime
def test_int8_token_vectors_do_not_depend_on_the_batch_and_stay_close_to_the_float_ones() -> None:
    alone = [LocalEmbedder(QUANTIZED_MODEL).embed_tokens([text])[0] for text in TOKEN_TEXTS]
    together = LocalEmbedder(QUANTIZED_MODEL, batch_size=64).embed_tokens(TOKEN_TEXTS)
    floats = LocalEmbedder(LOCAL_MODEL).embed_tokens(TOKEN_TEXTS)
    for one, many, exact in zip(alone, together, floats, strict=True):
        np.testing.assert_array_equal(one.ids, many.ids)
        np.testing.assert_allclose(one.vectors, many.vectors, atol=1e-5)
        cosines = (one.vectors * exact.vectors).sum(axis=1)
        assert cosines.mean() > 0.98, cosines


@needs_local
def test_max_sim_over_token_vectors_ranks_by_meaning(local_embedder: LocalEmbedder) -> None:
    (_, query), (_, dog), (_, puppy), (_, tax) = local_embedder.embed_tokens(
        ["which pet barked at the postman?", *TOKEN_TEXTS[:3]]
    )
    assert max_sim(query, puppy) > max_sim(query, tax) + 1.0
    assert max_sim(query, dog) > max_sim(query, tax) + 1.0
