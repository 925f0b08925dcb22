"""A static-embedding candidate for the local embedder, distilled from all-MiniLM-L6-v2.

The model2vec idea, in its simplest form: run every token of the model's vocabulary
through the transformer on its own (`[CLS] token [SEP]`, mean-pooled, as a sentence), keep
the 30,522 vectors as a table, and embed a text as the normalised mean of its tokens' rows.
Encoding is then a table lookup, thousands of texts a second; what it loses is whatever
the transformer learns from context. Built from the same installed weights (no download)
in well under a minute, and cached as a .npy file.

Used by `bench/embedders.py` and `bench/locomo.py --embedder static`, to measure it
against the transformer; it is not part of mnemodb.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mnemodb.search.embedders import local_model_path
from mnemodb.search.minilm import MiniLM

Array = np.ndarray[Any, Any]


class StaticMiniLM:
    """Token vectors of all-MiniLM-L6-v2, averaged per text."""

    model = "all-MiniLM-L6-v2-static"

    def __init__(self, cache: Path | None = None, *, batch: int = 512) -> None:
        folder = local_model_path()
        if folder is None:
            raise RuntimeError("the local all-MiniLM-L6-v2 model is not installed")
        self.encoder = MiniLM(folder)
        vocab = self.encoder.tokenizer.vocab
        self.special = {vocab[token] for token in ("[CLS]", "[SEP]", "[PAD]", "[UNK]")}
        self.build_s = 0.0
        if cache is not None and cache.is_file():
            self.table: Array = np.load(cache)
            return
        started = time.perf_counter()
        size = self.encoder.words.shape[0]
        cls, sep = vocab["[CLS]"], vocab["[SEP]"]
        table = np.zeros((size, self.encoder.width), dtype=np.float32)
        for start in range(0, size, batch):
            ids = np.arange(start, min(size, start + batch))
            rows = np.stack([np.full_like(ids, cls), ids, np.full_like(ids, sep)], axis=1)
            table[ids] = self.encoder._pooled(rows, np.ones(rows.shape, dtype=np.float32))
        table /= np.maximum(np.linalg.norm(table, axis=1, keepdims=True), 1e-9)
        self.table = table
        self.build_s = time.perf_counter() - started
        if cache is not None:
            np.save(cache, table)

    def embed(self, texts: Sequence[str]) -> Array:
        out = np.zeros((len(texts), self.table.shape[1]), dtype=np.float32)
        for row, text in enumerate(texts):
            ids = [i for i in self.encoder.tokenizer.encode(text) if i not in self.special]
            if ids:
                out[row] = self.table[ids].mean(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        unit: Array = np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
        return unit
