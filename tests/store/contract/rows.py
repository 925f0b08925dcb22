"""Rows built through the contract's write methods only, the way the engine builds them,
so a second backend runs the same tests unchanged. Times are fixed milliseconds: nothing
here reads a clock."""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Mapping, Sequence
from typing import Protocol

from mnemodb.model.ids import SHARED, new_ulid
from mnemodb.model.records import ENTITY, MEMORY, Scalar
from mnemodb.store.base import ReadTx, WriteTx

A = SHARED
"""The scope most rows live in."""
B = new_ulid()
"""A second scope."""
C = new_ulid()
"""A third scope, read by nobody unless a test says so."""

T0 = 1_700_000_000_000
"""A fixed instant (ms); tests count from it."""


def digest(content: str) -> str:
    """A memory's content hash, as the data model defines it."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def add_node(
    tx: WriteTx,
    label: str = "Thing",
    *,
    scope: str = A,
    props: Mapping[str, Scalar] | None = None,
    at: int = T0,
    node_id: str | None = None,
) -> int:
    return tx.insert_node(node_id or new_ulid(), scope, label, dict(props or {}), at)


def add_memory(
    tx: WriteTx,
    content: str,
    *,
    scope: str = A,
    at: int = T0,
    tags: Sequence[str] = (),
    summary: str | None = None,
    importance: int = 0,
    memory_type: str = "general",
    props: Mapping[str, Scalar] | None = None,
    context_from: int | None = None,
) -> int:
    """A memory node with its memory row and tags; its pk."""
    pk = add_node(tx, MEMORY, scope=scope, props=props, at=at)
    tx.insert_memory(pk, scope, digest(content), content, summary, importance, memory_type, context_from=context_from)
    if tags:
        tx.add_tags(pk, tags)
    return pk


def add_entity(
    tx: WriteTx,
    name: str,
    entity_type: str = "",
    observations: Sequence[str] = (),
    *,
    scope: str = A,
    at: int = T0,
    props: Mapping[str, Scalar] | None = None,
) -> int:
    """An entity node with its entity row and first observations; its pk."""
    pk = add_node(tx, ENTITY, scope=scope, props=props, at=at)
    tx.insert_entity(pk, scope, name, entity_type, None, observations, at)
    return pk


def add_edge(
    tx: WriteTx,
    src: int,
    dst: int,
    edge_type: str = "related_to",
    *,
    scope: str = A,
    props: Mapping[str, Scalar] | None = None,
    valid_from: int = T0,
    at: int = T0,
) -> int:
    """An open edge; its pk."""
    return tx.insert_edge(new_ulid(), src, dst, edge_type, scope, dict(props or {}), valid_from, at)


def node_id(tx: ReadTx, pk: int) -> str:
    """The public id of node `pk`."""
    return tx.node_views([pk])[pk].id


def vector(*values: float) -> bytes:
    """Little-endian float32 values, as vectors are stored."""
    return struct.pack(f"<{len(values)}f", *values)


class _Hit(Protocol):
    @property
    def pk(self) -> int: ...


def pks_of(hits: Sequence[_Hit]) -> list[int]:
    """The pks of hits, in their order."""
    return [hit.pk for hit in hits]


class _Scored(_Hit, Protocol):
    @property
    def score(self) -> float: ...


def assert_best_first(hits: Sequence[_Scored]) -> None:
    """Text scores are positive for a match, descending, ties in ascending pk."""
    for hit in hits:
        assert hit.score > 0, hits
    keys = [(-hit.score, hit.pk) for hit in hits]
    assert keys == sorted(keys), hits
