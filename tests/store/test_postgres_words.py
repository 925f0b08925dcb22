"""Word search on PostgreSQL against SQLite's FTS5: the same memories (and declared node
texts) in the same order with the same scores, for the same words, in every column mode,
through edits and removals that move document frequencies and turn contexts."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from mnemodb.model.records import ItemFilter
from mnemodb.store import open_store
from mnemodb.store.base import MemoryFieldWeights, Store
from postgres_server import PostgresServer
from store.contract.rows import T0, A, B, C, add_memory, add_node, digest
from stores import BACKENDS

_VOCABULARY = (
    "run running runs runner ran connect connection connected connecting relational relate "
    "happy happiness generalization general café cafe naïve naive Ünïcödé unicode the a of "
    "hopping hop hope hoped e-mail email mail x y zz résumé resume 42 3.14 über uber "
    "ﬁnancial financial ΣΊΣΥΦΟΣ σίσυφος yying bye ies ponies caresses agreed feed"
)
WORDS = tuple(_VOCABULARY.split(" "))

QUERIES: tuple[tuple[str, ...], ...] = (
    ("run",),
    ("running", "connection"),
    ("happy",),
    ("cafe",),
    ("café", "naive"),
    ("unicode",),
    ("e-mail",),
    ("mail", "e-mail"),
    ("hope", "hope"),
    ("3.14",),
    ("the",),
    ("!!!", "feed"),
    ("generalization", "relational", "financial"),
    ("σίσυφος",),
    ("ponies", "caresses", "agreed"),
    ("hopping hop",),
    ("run runs",),
    ("nothing-here",),
    ("über", "uber", "resume"),
    ("y", "zz", "x"),
)


def _text(rng: random.Random, size: int) -> str:
    words = [rng.choice(WORDS) for _ in range(size)]
    # Punctuation between some words, and now and then U+0000.
    seps = [rng.choice((" ", " ", " ", ", ", ". ", "-", " \x00 ")) for _ in words]
    return "".join(w + s for w, s in zip(words, seps, strict=True)).strip()


@pytest.fixture
def stores(tmp_path: Path, postgres: PostgresServer) -> Iterator[tuple[Store, Store]]:
    lite = open_store(BACKENDS["sqlite"](tmp_path / "lite.db"))
    pg = open_store(BACKENDS["postgresql"](tmp_path / "pg"))
    try:
        yield lite, pg
    finally:
        lite.close()
        pg.close()


def _fill(store: Store, seed: int) -> list[int]:
    rng = random.Random(seed)
    pks: list[int] = []
    with store.write() as tx:
        for i in range(240):
            scope = (A, A, B, C)[i % 4]
            content = _text(rng, rng.randint(1, 30)) + f" n{i}"
            summary = _text(rng, rng.randint(1, 8)) if rng.random() < 0.3 else None
            follows = pks[-1] if pks and rng.random() < 0.5 else None
            pks.append(add_memory(tx, content, scope=scope, at=T0 + i, summary=summary, context_from=follows))
    return pks


def _change(store: Store, pks: Sequence[int], seed: int) -> None:
    rng = random.Random(seed)
    with store.write() as tx:
        for pk in rng.sample(list(pks), 30):
            content = _text(rng, rng.randint(1, 20))
            tx.update_memory(pk, {"content": content, "hash": digest(content)})
        for pk in rng.sample(list(pks), 10):
            tx.update_memory(pk, {"summary": _text(rng, 4)})
        for pk in rng.sample(list(pks), 25):
            tx.delete_node(pk)


def _same(lite: Sequence[tuple[int, float]], pg: Sequence[tuple[int, float]], what: object) -> None:
    assert [pk for pk, _ in lite] == [pk for pk, _ in pg], what
    for (_, x), (_, y) in zip(lite, pg, strict=True):
        assert math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-12), (what, x, y)


def _compare(lite: Store, pg: Store) -> int:
    weights = MemoryFieldWeights(1.0, 0.75, 0.35)
    checked = 0
    for terms in QUERIES:
        for scopes in ([A, B, C], [A], [B, C]):
            for limit in (5, 500):
                results = []
                for store in (lite, pg):
                    with store.read() as tx:
                        results.append(
                            (
                                [(h.pk, h.score) for h in tx.search_text(terms, scopes, limit)],
                                [(h.pk, h.score) for h in tx.search_text(terms, scopes, limit, content_only=True)],
                                [
                                    (h.pk, h.score)
                                    for h in tx.filtered_text_search(terms, scopes, limit, ItemFilter(), T0, weights)
                                ],
                                [
                                    (h.pk, h.score)
                                    for h in tx.filtered_text_search(
                                        terms, scopes, limit, ItemFilter(created_from=T0 + 50), T0, weights
                                    )
                                ],
                            )
                        )
                for mode, (one, two) in enumerate(zip(*results, strict=True)):
                    _same(one, two, (terms, scopes, limit, mode))
                    checked += bool(one)
    return checked


def test_memory_search_ranks_as_fts5(stores: tuple[Store, Store]) -> None:
    lite, pg = stores
    pks = _fill(pg, 7)
    assert _fill(lite, 7) == pks
    assert _compare(lite, pg) > 100
    _change(lite, pks, 8)
    _change(pg, pks, 8)
    assert _compare(lite, pg) > 100


def test_node_text_ranks_as_fts5(stores: tuple[Store, Store]) -> None:
    lite, pg = stores
    for store in (lite, pg):
        rng = random.Random(3)
        with store.write() as tx:
            for i in range(120):
                pk = add_node(tx, scope=(A, B)[i % 2], at=T0 + i)
                tx.set_node_text(pk, _text(rng, rng.randint(0, 12)) if i % 7 else "")
            for pk in range(1, 120, 5):
                tx.set_node_text(pk, _text(rng, 3))
    for terms in QUERIES:
        for scopes in ([A, B], [B]):
            found = []
            for store in (lite, pg):
                with store.read() as tx:
                    found.append([(h.pk, h.score) for h in tx.node_text_search(terms, scopes, 50)])
            _same(found[0], found[1], (terms, scopes))
