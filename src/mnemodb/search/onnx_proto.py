"""Writes ONNX models: the few protobuf messages a graph of tensors and operators needs.

ONNX Runtime loads a model from the bytes of a `ModelProto` message. The `onnx` package
that usually builds them is 30 MB with its own protobuf stack; a model made of nodes,
weights and typed inputs needs only a handful of fields, written here in protobuf's wire
format (varints, and length-prefixed bytes for strings, messages and packed arrays). Field
numbers are those of `onnx.proto` (https://github.com/onnx/onnx/blob/main/onnx/onnx.proto).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mnemodb.model.value import Value

__all__ = ["DTYPES", "Graph", "Node", "model_bytes"]

# TensorProto.DataType of the numpy types a graph may hold.
DTYPES: dict[np.dtype[Any], int] = {
    np.dtype(np.float32): 1,
    np.dtype(np.uint8): 2,
    np.dtype(np.int8): 3,
    np.dtype(np.int32): 6,
    np.dtype(np.int64): 7,
}
# AttributeProto.AttributeType.
_FLOAT, _INT, _INTS = 1, 2, 7
_VARINT, _FIXED32, _BYTES = 0, 5, 2


def _varint(value: int) -> bytes:
    """An unsigned varint; a negative int64 is written as its 64-bit two's complement."""
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _key(number: int, wire_type: int) -> bytes:
    return _varint(number << 3 | wire_type)


def _int(number: int, value: int) -> bytes:
    return _key(number, _VARINT) + _varint(value)


def _bytes(number: int, value: bytes) -> bytes:
    return _key(number, _BYTES) + _varint(len(value)) + value


def _text(number: int, value: str) -> bytes:
    return _bytes(number, value.encode())


def _tensor(name: str, array: np.ndarray[Any, Any]) -> bytes:
    """TensorProto: dims (1), data_type (2), name (8), raw_data (9, little-endian)."""
    # (not np.ascontiguousarray, which makes a scalar a one-element vector)
    array = np.asarray(array, order="C")
    data_type = DTYPES[array.dtype]
    dims = b"".join(_int(1, d) for d in array.shape)
    raw = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
    return dims + _int(2, data_type) + _text(8, name) + _bytes(9, raw)


def _attribute(name: str, value: float | int | Sequence[int]) -> bytes:
    """AttributeProto: name (1), f (2), i (3), ints (8), type (20)."""
    if isinstance(value, bool):
        raise TypeError(f"attribute {name!r}: a bool is not an ONNX attribute")
    if isinstance(value, float):
        return _text(1, name) + _key(2, _FIXED32) + struct.pack("<f", value) + _int(20, _FLOAT)
    if isinstance(value, int):
        return _text(1, name) + _int(3, value) + _int(20, _INT)
    return _text(1, name) + b"".join(_int(8, v) for v in value) + _int(20, _INTS)


def _value_info(name: str, data_type: int, shape: Sequence[int | str]) -> bytes:
    """ValueInfoProto: name (1), type (2) = TypeProto{tensor_type (1) = {elem_type (1),
    shape (2) = {dim (1) = {dim_value (1) | dim_param (2)}}}}."""
    dims = b"".join(_bytes(1, _text(2, d) if isinstance(d, str) else _int(1, d)) for d in shape)
    tensor_type = _int(1, data_type) + _bytes(2, dims)
    return _text(1, name) + _bytes(2, _bytes(1, tensor_type))


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Node(Value):
    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attributes: dict[str, float | int | tuple[int, ...]] = field(default_factory=dict)
    domain: str = ""

    def encode(self, name: str) -> bytes:
        """NodeProto: input (1), output (2), name (3), op_type (4), attribute (5), domain (7)."""
        parts = [_text(1, i) for i in self.inputs]
        parts += [_text(2, o) for o in self.outputs]
        parts += [_text(3, name), _text(4, self.op_type)]
        parts += [_bytes(5, _attribute(k, v)) for k, v in self.attributes.items()]
        if self.domain:
            parts.append(_text(7, self.domain))
        return b"".join(parts)


class Graph:
    """Nodes and weights, added in order; each node's output gets a fresh name."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.weights: dict[str, np.ndarray[Any, Any]] = {}

    def weight(self, name: str, value: Any, dtype: Any = np.float32) -> str:
        if name in self.weights:
            raise ValueError(f"two weights named {name!r}")
        self.weights[name] = np.asarray(value, dtype=dtype)
        return name

    def op(self, op_type: str, *inputs: str, outputs: int = 1, name: str | None = None, **attributes: Any) -> Any:
        """Add a node; its output's name (or a tuple of names when `outputs` > 1). `name`
        names a single output, for a graph's own outputs."""
        if name is not None and outputs == 1:
            names: tuple[str, ...] = (name,)
        else:
            names = tuple(f"{op_type.lower()}{len(self.nodes)}_{i}" for i in range(outputs))
        self.nodes.append(Node(op_type, inputs, names, attributes))
        return names[0] if outputs == 1 else names


def model_bytes(
    graph: Graph,
    *,
    name: str,
    inputs: Iterable[tuple[str, np.dtype[Any], Sequence[int | str]]],
    outputs: Iterable[tuple[str, np.dtype[Any], Sequence[int | str]]],
    opset: int,
    ir_version: int,
) -> bytes:
    """The ModelProto of `graph`: ir_version (1), producer_name (2), graph (7) =
    GraphProto{node (1), name (2), initializer (5), input (11), output (12)},
    opset_import (8) = {domain (1), version (2)}."""
    body = [_bytes(1, node.encode(f"n{i}")) for i, node in enumerate(graph.nodes)]
    body.append(_text(2, name))
    body += [_bytes(5, _tensor(key, array)) for key, array in graph.weights.items()]
    body += [_bytes(11, _value_info(n, DTYPES[np.dtype(t)], s)) for n, t, s in inputs]
    body += [_bytes(12, _value_info(n, DTYPES[np.dtype(t)], s)) for n, t, s in outputs]
    return b"".join(
        [
            _int(1, ir_version),
            _text(2, "mnemodb"),
            _bytes(7, b"".join(body)),
            _bytes(8, _text(1, "") + _int(2, opset)),
        ]
    )
