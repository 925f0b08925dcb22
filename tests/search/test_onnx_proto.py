"""The ONNX writer's models load in ONNX Runtime and compute what numpy computes: weights
of each type (a scalar among them), integer, negative, float and list attributes, named
and symbolic dimensions, several outputs."""

from __future__ import annotations

import numpy as np
import pytest

from mnemodb.search.onnx_proto import Graph, model_bytes

onnxruntime = pytest.importorskip("onnxruntime")
F32 = np.dtype(np.float32)


def run(graph: Graph, feeds: dict[str, np.ndarray], outputs: list[tuple[str, int]]) -> list[np.ndarray]:
    inputs = [(name, value.dtype, ("n", *value.shape[1:])) for name, value in feeds.items()]
    model = model_bytes(
        graph,
        name="test",
        inputs=inputs,
        outputs=[(name, F32, ("n", width)) for name, width in outputs],
        opset=17,
        ir_version=8,
    )
    session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    return list(session.run([name for name, _ in outputs], feeds))


def test_a_small_network_computes_what_numpy_computes() -> None:
    rng = np.random.default_rng(7)
    weight = rng.normal(size=(5, 3)).astype(np.float32)
    bias = rng.normal(size=3).astype(np.float32)
    x = rng.normal(size=(4, 5)).astype(np.float32)
    g = Graph()
    w, b = g.weight("w", weight), g.weight("b", bias)
    two = g.weight("two", 2.0)  # a scalar
    scaled = g.op("Mul", g.op("Add", g.op("MatMul", "x", w), b), two)
    g.op("Softmax", scaled, axis=-1, name="probabilities")
    flipped = g.op("Transpose", g.op("Transpose", scaled, perm=(1, 0)), perm=(1, 0))
    g.op("LayerNormalization", flipped, g.weight("gamma", np.ones(3)), g.weight("beta", np.zeros(3)), axis=-1,
         epsilon=1e-5, name="normalised")  # fmt: skip
    probabilities, normalised = run(g, {"x": x}, [("probabilities", 3), ("normalised", 3)])
    logits = (x @ weight + bias) * 2
    expected = np.exp(logits - logits.max(axis=1, keepdims=True))
    np.testing.assert_allclose(probabilities, expected / expected.sum(axis=1, keepdims=True), rtol=1e-5)
    centred = logits - logits.mean(axis=1, keepdims=True)
    np.testing.assert_allclose(
        normalised, centred / np.sqrt((centred**2).mean(axis=1, keepdims=True) + 1e-5), atol=1e-5
    )


def test_integer_products_and_several_outputs() -> None:
    g = Graph()
    codes = g.weight("codes", [[1, -2], [3, 4], [-5, 6]], np.int8)
    values, scale, zero = g.op("DynamicQuantizeLinear", "x", outputs=3)
    product = g.op("Cast", g.op("MatMulInteger", values, codes, zero), to=1)
    g.op("Mul", product, scale, name="approximate")
    x = np.array([[0.5, -1.0, 2.0], [0.0, 1.0, 1.5]], dtype=np.float32)
    [approximate] = run(g, {"x": x}, [("approximate", 2)])
    exact = x @ np.array([[1, -2], [3, 4], [-5, 6]], dtype=np.float32)
    np.testing.assert_allclose(approximate, exact, atol=0.1)


def test_two_weights_of_one_name_are_refused() -> None:
    g = Graph()
    g.weight("w", 1.0)
    with pytest.raises(ValueError, match="two weights named 'w'"):
        g.weight("w", 2.0)
