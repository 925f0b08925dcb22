"""Rows as the store contract's records, for every backend: JSON properties, named tuples,
slices of parameters."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TypeVar

__all__ = ["chunks", "dumps", "props_of", "rows_as"]

T = TypeVar("T")
R = TypeVar("R", bound=tuple[Any, ...])


def props_of(text: str) -> dict[str, Any]:
    """Stored JSON properties as a dict."""
    return {} if text == "{}" else dict(json.loads(text))


# One encoder for every write: json.dumps builds a new one per call when given options.
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def dumps(value: Any) -> str:
    """JSON as the store writes it: compact, characters as they are."""
    return _ENCODER.encode(value)


def rows_as(kind: type[R], rows: Iterable[Sequence[Any]]) -> list[R]:
    """Rows as the named tuple `kind`, whose fields are the rows' columns in order: built as
    a named tuple's own `_make` builds one, without its per-row Python call (searches read
    hundreds of rows a query)."""
    return [tuple.__new__(kind, row) for row in rows]


def chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """`items` in slices of at most `size`: SQLite takes a bounded number of parameters."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
