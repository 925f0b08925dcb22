"""Small pieces of SQL text the store's modules share."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R", bound=tuple[Any, ...])


def props_of(text: str) -> dict[str, Any]:
    """Stored JSON properties as a dict."""
    return {} if text == "{}" else dict(json.loads(text))


def dumps(value: Any) -> str:
    """JSON as the store writes it: compact, characters as they are."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def rows_as(kind: type[R], rows: Iterable[Sequence[Any]]) -> list[R]:
    """Rows as the named tuple `kind`, whose fields are the rows' columns in order: built as
    a named tuple's own `_make` builds one, without its per-row Python call (searches read
    hundreds of rows a query)."""
    return [tuple.__new__(kind, row) for row in rows]


def chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """`items` in slices of at most `size`: SQLite takes a bounded number of parameters."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def marks(n: int) -> str:
    """`n` comma-separated parameter marks, for an IN list."""
    return ",".join("?" * n)


def fts_phrase(term: str) -> str:
    """`term` as an FTS5 string: always a plain phrase, no operator inside it is live."""
    return '"' + term.replace('"', '""') + '"'


def fts_any(terms: Sequence[str]) -> str:
    """An FTS5 query matching any of `terms`."""
    return " OR ".join(fts_phrase(t) for t in terms)


def edge_visible(alias: str, count: int) -> str:
    """SQL: the edge `alias` is in one of `count` scopes, and so are both its ends, whose
    scopes may differ from the edge's (topodb lets an edge of one scope touch an item of
    another). Its parameters: the scopes, three times (see `edge_visible_params`)."""
    listed = marks(count)
    return (
        f"{alias}.scope IN ({listed}) AND (SELECT scope FROM node WHERE pk = {alias}.src) IN ({listed}) "
        f"AND (SELECT scope FROM node WHERE pk = {alias}.dst) IN ({listed})"
    )


def edge_visible_params(scopes: Sequence[str]) -> list[str]:
    return [*scopes, *scopes, *scopes]
