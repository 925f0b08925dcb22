"""Small pieces of SQL text the store's modules share."""

from __future__ import annotations

from collections.abc import Sequence


def marks(n: int) -> str:
    """`n` comma-separated parameter marks, for an IN list."""
    return ",".join("?" * n)


def fts_phrase(term: str) -> str:
    """`term` as an FTS5 string: always a plain phrase, no operator inside it is live."""
    return '"' + term.replace('"', '""') + '"'


def fts_any(terms: Sequence[str]) -> str:
    """An FTS5 query matching any of `terms`."""
    return " OR ".join(fts_phrase(t) for t in terms)
