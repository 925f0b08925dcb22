"""all-MiniLM-L6-v2 on ONNX Runtime, with its matrix products in 8-bit integers.

The numpy forward pass (`mnemodb.search.minilm`) spends nearly all its time in float32
matrix products, and two cores top out near 230 sentences a second on them. ONNX Runtime's
integer products (VNNI on current x86, dot-product instructions on ARM) do the same work
several times faster. The graph is built here, at load, from the same installed weights
(`onnx_proto` writes it; nothing is downloaded and no ONNX file is shipped):

- each of the six layers' linear maps (query, key, value, the attention output, the
  feed-forward's two) multiplies int8 weights, with one scale per output column, by its
  input quantized with one scale per token (symmetric, stored as uint8 around 128, which is
  the fast path): so a text's vector does not depend on the other texts of its batch, as
  one scale for the whole batch (`DynamicQuantizeLinear`) would make it, and the vectors are
  closer to the float model's (cosine 0.996 on average, against 0.992);
- attention, softmax, GELU, layer norms and the mean pooling stay in float32;
- the token embeddings are summed in numpy, as in `minilm.py`, straight from the
  memory-mapped weights, so the 47 MB word table is never copied into the graph.

The vectors are not those of the float model, so they are stored under their own model
name, `QUANTIZED_MODEL`. On the LoCoMo development split they retrieve as well (hybrid
R@10 / NDCG@10 75.8 / 58.8 against 75.8 / 58.7: bench/README.md, "embedders.py").
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from mnemodb.search.minilm import Layer, MiniLM
from mnemodb.search.onnx_proto import Graph, model_bytes

__all__ = ["QUANTIZED_MODEL", "QuantizedMiniLM"]

Array = np.ndarray[Any, Any]

QUANTIZED_MODEL = "all-MiniLM-L6-v2-int8"
_OPSET = 17  # LayerNormalization joined the default domain in 17
_IR_VERSION = 8  # the IR of opset 17; every ONNX Runtime since 1.13 reads it


def quantize_columns(weight: Array) -> tuple[Array, Array]:
    """int8 weights and one float32 scale per output column, symmetric (zero point 0):
    the column's largest magnitude maps to 127."""
    largest = np.abs(weight).max(axis=0)
    scale = np.where(largest > 0, largest / 127.0, 1.0).astype(np.float32)
    quantized = np.clip(np.rint(weight / scale), -127, 127).astype(np.int8)
    return quantized, scale


class QuantizedMiniLM(MiniLM):
    """`MiniLM` whose encoder layers run as an int8 ONNX Runtime graph."""

    def __init__(self, folder: Path, *, max_tokens: int | None = None, threads: int | None = None) -> None:
        import onnxruntime

        super().__init__(folder, max_tokens=max_tokens)
        graph = self._graph(self.layers)
        # The float copies of the layers' weights are not needed once quantized.
        self.layers = []
        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads or min(os.cpu_count() or 1, 4)
        options.inter_op_num_threads = 1
        # Worker threads spin briefly between operators before they sleep: 13 % faster, and
        # an idle server's threads still sleep.
        options.add_session_config_entry("session.intra_op.allow_spinning", "1")
        options.log_severity_level = 3  # warnings and below are not the user's business
        try:
            self._session = onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # ONNX Runtime's exception classes are not part of its API
            raise RuntimeError(f"ONNX Runtime refused the model's graph: {exc}") from exc

    def _graph(self, layers: list[Layer]) -> bytes:
        g = Graph()
        heads, width = self.heads, self.width
        size = width // heads
        axis_last = g.weight("axis_last", [-1], np.int64)
        axis_1 = g.weight("axis_1", [1], np.int64)
        head_shape = g.weight("head_shape", [0, 0, heads, size], np.int64)
        merge_shape = g.weight("merge_shape", [0, 0, width], np.int64)
        scale = g.weight("score_scale", np.float32(1 / math.sqrt(size)))
        one, half = g.weight("one", 1.0), g.weight("half", 0.5)
        root_two = g.weight("root_two", np.float32(math.sqrt(2)))
        tiny = g.weight("tiny", 1e-9)
        int8_max = g.weight("int8_max", 127.0)
        zero_u8 = g.weight("zero_u8", 128, np.uint8)
        hidden_width = int(layers[0].up.shape[1]) if layers else width
        row_shapes = {n: g.weight(f"rows_of_{n}", [-1, n], np.int64) for n in {width, hidden_width}}

        def norm(x: str, name: str, bias: Array, weight: Array) -> str:
            gamma, beta = g.weight(f"{name}_w", weight), g.weight(f"{name}_b", bias)
            return str(g.op("LayerNormalization", x, gamma, beta, axis=-1, epsilon=self.eps))

        def quantized(x: str, columns: int = width) -> tuple[str, str]:
            """An input's values as uint8 around 128, with one scale per token (symmetric),
            as rows of a matrix: a text's vector never depends on the other texts of its
            batch."""
            rows = g.op("Reshape", x, row_shapes[columns])
            largest = g.op("ReduceMax", g.op("Abs", rows), axes=(1,), keepdims=0)
            row_scale = g.op("Max", g.op("Div", largest, int8_max), tiny)
            zeros = g.op("Expand", zero_u8, g.op("Shape", row_scale))
            values = g.op("QuantizeLinear", rows, row_scale, zeros, axis=0)
            return str(values), str(g.op("Unsqueeze", row_scale, axis_last))

        def linear(x: tuple[str, str], name: str, weight: Array, bias: Array) -> str:
            w_int8, column_scale = quantize_columns(np.asarray(weight, dtype=np.float32))
            w = g.weight(f"{name}_w", w_int8, np.int8)
            w_scale = g.weight(f"{name}_scale", column_scale)
            b = g.weight(f"{name}_b", bias)
            xq, x_scale = x
            product = g.op("Cast", g.op("MatMulInteger", xq, w, zero_u8), to=1)
            rows = g.op("Add", g.op("Mul", g.op("Mul", product, x_scale), w_scale), b)
            return str(g.op("Reshape", rows, g.op("Concat", batch_tokens, g.op("Shape", b), axis=0)))

        def split_heads(x: str, perm: tuple[int, ...]) -> str:
            return str(g.op("Transpose", g.op("Reshape", x, head_shape), perm=perm))

        batch_tokens = g.op(
            "Slice", g.op("Shape", "embedded"), g.weight("from", [0], np.int64), g.weight("to", [2], np.int64)
        )
        x = norm("embedded", "embedding_norm", *self.norm)
        for i, layer in enumerate(layers):
            # Query, key and value from one quantized input, split per head.
            xq = quantized(x)
            columns = [slice(j * width, (j + 1) * width) for j in range(3)]
            q, k, v = (
                linear(xq, f"l{i}_{name}", layer.qkv[:, part], layer.qkv_bias[part])
                for name, part in zip("qkv", columns, strict=True)
            )
            q, k, v = split_heads(q, (0, 2, 1, 3)), split_heads(k, (0, 2, 3, 1)), split_heads(v, (0, 2, 1, 3))
            scores = g.op("Mul", g.op("MatMul", q, k), scale)
            weights = g.op("Softmax", g.op("Add", scores, "blocked"), axis=-1)
            context = g.op("Reshape", g.op("Transpose", g.op("MatMul", weights, v), perm=(0, 2, 1, 3)), merge_shape)
            attended = g.op("Add", linear(quantized(context), f"l{i}_out", layer.out, layer.out_bias), x)
            x = norm(attended, f"l{i}_norm1", *layer.norm1)
            hidden = linear(quantized(x), f"l{i}_up", layer.up, layer.up_bias)
            # GELU as x * (1 + erf(x / sqrt 2)) / 2, in the form ONNX Runtime fuses into one
            # kernel (a Div: it does not recognise a Mul by 1 / sqrt 2).
            erf = g.op("Add", g.op("Erf", g.op("Div", hidden, root_two)), one)
            gelu = g.op("Mul", g.op("Mul", hidden, erf), half)
            down = linear(quantized(gelu, hidden_width), f"l{i}_down", layer.down, layer.down_bias)
            x = norm(g.op("Add", down, x), f"l{i}_norm2", *layer.norm2)
        mask = g.op("Unsqueeze", "mask", axis_last)
        summed = g.op("ReduceSum", g.op("Mul", x, mask), axis_1, keepdims=0)
        counts = g.op("Max", g.op("ReduceSum", mask, axis_1, keepdims=0), tiny)
        g.op("Div", summed, counts, name="pooled")
        # The token vectors before pooling, for `encode_tokens`; a run that asks for
        # "pooled" alone does not copy them out.
        g.op("Identity", x, name="tokens")
        f32 = np.dtype(np.float32)
        return model_bytes(
            g,
            name=QUANTIZED_MODEL,
            inputs=[
                ("embedded", f32, ("batch", "tokens", width)),
                ("blocked", f32, ("batch", 1, 1, "tokens")),
                ("mask", f32, ("batch", "tokens")),
            ],
            outputs=[("pooled", f32, ("batch", width)), ("tokens", f32, ("batch", "tokens", width))],
            opset=_OPSET,
            ir_version=_IR_VERSION,
        )

    def _feeds(self, ids: Array, mask: Array) -> dict[str, Array]:
        blocked = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        return {"embedded": self._embedded(ids).astype(np.float32, copy=False), "blocked": blocked, "mask": mask}

    def _pooled(self, ids: Array, mask: Array) -> Array:
        pooled: Array = self._session.run(["pooled"], self._feeds(ids, mask))[0]
        return pooled

    def _token_states(self, ids: Array, mask: Array) -> Array:
        tokens: Array = self._session.run(["tokens"], self._feeds(ids, mask))[0]
        return tokens
