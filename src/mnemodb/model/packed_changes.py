"""How a change-log entry's data is kept: without what its own row already says.

An entry's data repeats its row: the item's id is the row's target, a node's or an edge's
scope is the row's scope, a new edge's `valid_from` is the row's time, a memory's hash is
the sha256 of the content beside it. And every key is written out in every entry. Packed,
an entry keeps only the values nothing else gives, in a JSON array led by the number of its
shape: a new edge is `[7,"FROM","TO","type",{}]` instead of 180 bytes of object.

`unpack` gives back the very dict that was packed: the same keys in the same order, the
same values of the same types. Data of any other shape (an imported record with more
fields, a redacted entry, a value that differs from what its row says) is kept whole, as
a JSON object; the two are told apart by their first character.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from mnemodb.model.ids import content_hash

__all__ = ["SHAPES", "is_packed", "pack", "unpack"]


class _From:
    """Where a key's value comes from when it is not in the array."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


VALUE: Final = _From("value")
"""Kept in the array, in the shape's order."""
TARGET: Final = _From("target")
"""The row's target."""
SCOPE: Final = _From("scope")
"""The row's scope."""
AT: Final = _From("at")
"""The row's time."""
CONTENT_HASH: Final = _From("content hash")
"""The sha256 of the `content` beside it."""

Shape = tuple[tuple[str, "_From | Shape"], ...]

_MEMORY: Shape = (
    ("hash", CONTENT_HASH),
    ("content", VALUE),
    ("summary", VALUE),
    ("importance", VALUE),
    ("memory_type", VALUE),
    ("tags", VALUE),
)
_ENTITY: Shape = (("name", VALUE), ("entity_type", VALUE), ("observations", VALUE))
_NODE: Shape = (("id", TARGET), ("label", VALUE), ("scope", SCOPE), ("props", VALUE))

SHAPES: tuple[Shape, ...] = (
    # The number of a shape is stored in every entry packed with it: append only.
    (("id", TARGET),),  # remove_node, archive_node, unarchive_node, remove_edge
    (("id", TARGET), ("set", VALUE)),  # update_node
    (("id", TARGET), ("tags", VALUE)),  # add_tags
    (("id", TARGET), ("contents", VALUE)),  # add_observations, remove_observations
    (("id", TARGET), ("valid_to", VALUE)),  # close_edge
    (("id", TARGET), ("props", VALUE)),  # set_props
    (("id", TARGET), ("model", VALUE), ("f32", VALUE)),  # set_embedding
    (  # create_edge
        ("id", TARGET),
        ("from", VALUE),
        ("to", VALUE),
        ("type", VALUE),
        ("scope", SCOPE),
        ("props", VALUE),
        ("valid_from", AT),
    ),
    _NODE,  # create_node of a plain node
    (*_NODE, ("memory", _MEMORY)),  # create_node of a memory
    (*_NODE, ("entity", _ENTITY)),  # create_node of an entity
)

_BY_KEYS: dict[tuple[str, ...], int] = {tuple(key for key, _ in shape): number for number, shape in enumerate(SHAPES)}


def _with_nested(shapes: tuple[Shape, ...]) -> list[Shape]:
    found = list(shapes)
    for shape in shapes:
        found += _with_nested(tuple(source for _, source in shape if isinstance(source, tuple)))
    return found


_KEYS: dict[int, tuple[str, ...]] = {id(shape): tuple(key for key, _ in shape) for shape in _with_nested(SHAPES)}
"""Each shape's keys, by the shape's identity (nested shapes included): every write packs,
so they are not rebuilt per entry."""
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
# The standard library's own C encoder with `_ENCODER`'s settings, made once: `encode`
# makes a new one for every value, half the time of a new edge's entry (3.8 -> 1.6 us).
# No check for cycles, which data read from JSON cannot have. Used only where it is there
# and writes what `encode` writes.
_PROBE: Final = [7, "é\u2028\x00", {"a": [1.5e-05, -0.0, True, None]}]


def _c_encoder() -> Any:
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return None
    try:
        encode = make(None, _ENCODER.default, json.encoder.encode_basestring, None, ":", ",", False, False, True)
        return encode if "".join(encode(_PROBE, 0)) == _ENCODER.encode(_PROBE) else None
    except (TypeError, ValueError):
        return None


_C_ENCODE = _c_encoder()
_quote: Final = json.encoder.encode_basestring
"""A string as JSON text, as `_ENCODER` (no ASCII escaping) writes it."""


def _dumps(value: Any) -> str:
    if _C_ENCODE is None:
        return _ENCODER.encode(value)
    return "".join(_C_ENCODE(value, 0))


def _same(value: Any, expected: Any) -> bool:
    """`value` is `expected`, type included (True is not 1, 1.0 is not 1)."""
    return type(value) is type(expected) and value == expected


def _values(shape: Shape, data: Mapping[str, Any], row: Mapping[_From, Any], out: list[Any]) -> bool:
    """Append to `out` the values of `data` that `shape` keeps; False if `data` is not of
    `shape` or holds a value its row does not give back exactly."""
    if not isinstance(data, dict) or tuple(data) != _KEYS[id(shape)]:
        return False
    for key, source in shape:
        value = data[key]
        if source is VALUE:
            out.append(value)
        elif source is CONTENT_HASH:
            content = data.get("content")
            if not isinstance(content, str) or not _same(value, content_hash(content)):
                return False
        elif isinstance(source, _From):
            if not _same(value, row[source]):
                return False
        elif not _values(source, value, row, out):
            return False
    return True


_NEW_EDGE: Final = 7
_NEW_EDGE_KEYS: Final = _KEYS[id(SHAPES[_NEW_EDGE])]


def pack(at: int, scope: str | None, target: str | None, data: Mapping[str, Any]) -> str:
    """The text an entry's data is stored as, given its row's time, scope and target."""
    whole = data if type(data) is dict else dict(data)
    keys = tuple(whole)
    if keys == _NEW_EDGE_KEYS:
        # A new edge, the entry a bulk of relations logs one of per relation: its shape's
        # checks spelled out, which `_values` makes generically (1.9 -> 1.0 us an entry).
        if _same(whole["id"], target) and _same(whole["scope"], scope) and _same(whole["valid_from"], at):
            src, dst, edge_type, props = whole["from"], whole["to"], whole["type"], whole["props"]
            if type(src) is str and type(dst) is str and type(edge_type) is str and type(props) is dict and not props:
                # What `_dumps` writes of this array, spelled out (1.1 -> 0.8 us an entry).
                return f"[{_NEW_EDGE},{_quote(src)},{_quote(dst)},{_quote(edge_type)},{{}}]"
            return _dumps([_NEW_EDGE, src, dst, edge_type, props])
        return _dumps(whole)
    number = _BY_KEYS.get(keys)
    if number is not None:
        kept: list[Any] = [number]
        if _values(SHAPES[number], whole, {TARGET: target, SCOPE: scope, AT: at}, kept):
            return _dumps(kept)
    return _dumps(whole)


def is_packed(text: str) -> bool:
    """True for data stored packed (a JSON array), False for a whole JSON object."""
    return text[:1] == "["


def _filled(shape: Shape, values: list[Any], position: int, row: Mapping[_From, Any]) -> tuple[dict[str, Any], int]:
    out: dict[str, Any] = {}
    hashed: str | None = None
    for key, source in shape:
        if source is VALUE:
            out[key] = values[position]
            position += 1
        elif source is CONTENT_HASH:
            out[key] = hashed = key  # its place in the order; the value once `content` is read
        elif isinstance(source, _From):
            out[key] = row[source]
        else:
            out[key], position = _filled(source, values, position, row)
    if hashed is not None:
        out[hashed] = content_hash(out["content"])
    return out, position


def unpack(at: int, scope: str | None, target: str | None, text: str) -> dict[str, Any]:
    """The data `pack` was given, from the text it made and the same row."""
    value = json.loads(text)
    if isinstance(value, dict):
        return value
    data, _ = _filled(SHAPES[value[0]], value, 1, {TARGET: target, SCOPE: scope, AT: at})
    return data
