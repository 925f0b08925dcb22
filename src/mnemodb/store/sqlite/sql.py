"""Small pieces of SQL text the store's modules share."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

import orjson

from mnemodb.store.rows import chunks, dumps, props_of, rows_as

T = TypeVar("T")

__all__ = [
    "KEYS_FIRST",
    "chunks",
    "dumps",
    "edge_visible",
    "edge_visible_params",
    "fts_any",
    "fts_phrase",
    "json_arrays",
    "json_keys",
    "keys_text",
    "marks",
    "padded",
    "props_of",
    "rows_as",
]


def marks(n: int) -> str:
    """`n` comma-separated parameter marks, for an IN list."""
    return ",".join("?" * n)


KEYS_FIRST = "json_each(?) j CROSS JOIN "
"""The start of a statement that walks the keys of one JSON array (`json_keys`), each then
looked up by `j.value` (the cross join keeps the keys the outer loop). A list of keys on
the right of `IN` instead makes SQLite build a b-tree of them on every run, which costs a
short read more than its look-ups."""


def json_keys(keys: Iterable[int]) -> str:
    """Row keys as one JSON array, for `json_each(?)`: orjson writes it in a tenth of the
    standard library's time (a walk passes a few a call)."""
    return orjson.dumps(list(keys)).decode()


def keys_text(keys: Iterable[int]) -> str:
    """Row keys as one text, each between commas, for `instr(?, ',' || column || ',')`: a
    few keys tested that way cost a statement less than a list on the right of `IN`, of
    which SQLite builds a b-tree on every run."""
    return f",{','.join(map(str, keys))},"


def json_arrays(texts: Iterable[str]) -> list[Any]:
    """Several JSON arrays of strings (each row's observations or tags, as SQLite or the
    store wrote them) decoded in one call. orjson reads strings as the standard library
    does, faster (not so an integer past 64 bits, which it reads as a float: these arrays
    hold none); whatever it refuses (a lone surrogate's escape) is read by the standard
    library, which decides."""
    joined = "[" + ",".join(texts) + "]"
    try:
        decoded: list[Any] = orjson.loads(joined)
    except orjson.JSONDecodeError:
        decoded = json.loads(joined)
    return decoded


def padded(values: Sequence[T]) -> list[T]:
    """`values` (not empty) with its last repeated up to a power-of-two length, for an IN
    list: a lookup of a different number of keys each call then runs one of a handful of
    statement texts, each prepared once and kept by the connection, rather than preparing
    a new one (0.15 ms for 200 keys)."""
    size = 1 << (len(values) - 1).bit_length()
    return [*values, *[values[-1]] * (size - len(values))]


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
