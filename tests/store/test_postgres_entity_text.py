"""Entity text search on PostgreSQL against SQLite's: the same candidates for the same
substrings, case folded as SQLite's trigram tokenizer folds it (not as Python lower-cases),
and the same entities in the same order, with the same scores, for the same words."""

# ruff: noqa: RUF001, RUF003

from __future__ import annotations

import itertools
import math
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from mnemodb.store import open_store
from mnemodb.store.base import EntityFieldWeights, Store, TextClause
from mnemodb.store.postgresql.entities import trigram_fold
from postgres_server import PostgresServer
from store.contract.rows import T0, A, B, add_entity
from stores import BACKENDS

# Text whose case folding differs between SQLite's trigram tokenizer, str.lower() and
# str.casefold(), or that LIKE would read as a wildcard or an escape.
TRICKY = (
    "Straße STRASSE ẞtraße",  # U+1E9E folds to ß; casefold makes both "ss"
    "İstanbul ISTANBUL ıstanbul",  # lower() makes U+0130 two code points
    "ΣΊΣΥΦΟΣ σίσυφος Σίσυφος",  # final sigma folds to σ
    "Ꭰꭰ ᏣᎳᎩ ꮳꮃꭹ",  # Cherokee: Python lower-cases it, SQLite does not
    "Kelvin K kelvin",  # U+212A KELVIN SIGN folds to k
    "µ micro μ MICRO",
    "ſtreet long ſ",
    "ϐeta ϑeta ϕi ϖi ϰappa ϱho ϵpsilon",
    "ǅungla ǄUNGLA ǆungla",
    "ﬁnancial FINANCIAL ﬃ",
    "Ⓐⓑⓒ ⒶⒷⒸ",
    "𐐀𐐁𐐂 𐐨𐐩𐐪 deseret",
    "𞤀𞤁𞤂 𞤢𞤣𞤤 adlam",
    "ᲐᲑᲒ აბგ mtavruli",
    "\ufffe\uffff\ufffd specials",
    "100% sure_thing back\\slash a%b_c\\d",
    "ΐΰ ᾈᾉ ᾼ ῌ ῼ iota",
    "😀😀😀 emoji 🙂🙃",
)


def _variants(text: str) -> Iterator[str]:
    yield text
    yield text.lower()
    yield text.upper()
    yield text.casefold()
    yield text.swapcase()
    yield trigram_fold(text)


def _substrings(text: str) -> list[str]:
    """Some substrings of `text`, three and five characters long, in each case variant."""
    out: dict[str, None] = {}
    for variant in _variants(text):
        for size in (3, 5):
            for start in range(0, max(len(variant) - size + 1, 1), 4):
                out.setdefault(variant[start : start + size], None)
    return [s for s in out if len(s) >= 3]


@pytest.fixture
def stores(tmp_path: Path, postgres: PostgresServer) -> Iterator[tuple[Store, Store]]:
    lite = open_store(BACKENDS["sqlite"](tmp_path / "lite.db"))
    pg = open_store(BACKENDS["postgresql"](tmp_path / "pg"))
    try:
        yield lite, pg
    finally:
        lite.close()
        pg.close()


def _fill(store: Store, rows: Sequence[tuple[str, str, Sequence[str], str]]) -> list[int]:
    with store.write() as tx:
        return [add_entity(tx, name, kind, obs, scope=scope) for name, kind, obs, scope in rows]


def _candidates(store: Store, clauses: Sequence[TextClause], scopes: Sequence[str]) -> list[int] | None:
    with store.read() as tx:
        return tx.entity_text_search(clauses, scopes)


def test_the_fold_is_sqlite_trigram_tokenizer_s_on_every_code_point() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5 (x, tokenize = 'trigram')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab (t, 'instance')")
    # Every code point of the planes with letters that have case, a sample of the others.
    points = [p for p in range(1, 0x20000) if not 0xD800 <= p <= 0xDFFF] + list(range(0x20000, 0x110000, 61))
    conn.executemany("INSERT INTO t (rowid, x) VALUES (?, ?)", ((p, chr(p) + "qz") for p in points))
    folded = {doc: term for term, doc in conn.execute("SELECT term, doc FROM v")}
    assert len(folded) == len(points)
    wrong = [hex(p) for p in points if folded[p] != trigram_fold(chr(p)) + "qz"]
    assert wrong == []


def test_both_stores_give_the_same_substring_candidates(stores: tuple[Store, Store]) -> None:
    lite, pg = stores
    rows = [(text, text.split()[-1], [f"seen {text}", "plain words"], A) for text in TRICKY]
    rows += [("Other", f"kind {text.upper()}", [text.swapcase()], A) for text in TRICKY]
    rows += [("Elsewhere", "", [text], B) for text in TRICKY[:5]]
    assert _fill(lite, rows) == _fill(pg, rows)
    checked = 0
    for text in TRICKY:
        for piece in _substrings(text):
            for column, scopes in ((None, [A, B]), ("name", [A]), ("type", [A]), ("obs", [A, B])):
                clauses: list[TextClause] = [(column, [piece], [])]
                assert _candidates(lite, clauses, scopes) == _candidates(pg, clauses, scopes), (clauses, scopes)
                checked += 1
    assert checked > 1000
    pieces = [_substrings(text) for text in TRICKY]
    for first, second in itertools.pairwise(pieces):
        combined: tuple[list[TextClause], ...] = (
            [(None, [first[0]], [second[1], "xyzzy"])],
            [("obs", [], [first[2], second[-1]]), ("name", [first[-1]], [])],
            [(None, [first[1], second[0]], [])],
        )
        for clauses in combined:
            assert _candidates(lite, clauses, [A, B]) == _candidates(pg, clauses, [A, B]), clauses


def test_text_around_nul_is_found_on_postgresql(stores: tuple[Store, Store]) -> None:
    """SQLite's tokenizer ends a text at U+0000 and its store looks a substring holding one
    up by the pieces around it; PostgreSQL looks the whole substring up, in the whole text."""
    lite, pg = stores
    rows = [
        ("Ada\x00LOVELACE", "per\x00son", ["wrote\x00notes", "\x00"], A),
        ("Lovelace", "person", ["wrote notes"], A),
        ("\x00\ufffe0", "x\ufffe\x00", ["0\ufffe\ufffe"], A),
    ]
    assert _fill(lite, rows) == _fill(pg, rows)
    with pg.read() as tx:
        texts = list(tx.entity_texts([A]))
    for piece in (
        "lovelace",
        "a\x00lov",
        "\x00lo",
        "per\x00",
        "te\x00n",
        "\x00\ufffe0",
        "x\ufffe\x00",
        "0\ufffe\ufffe",
    ):
        wanted = trigram_fold(piece)
        holding = {
            t.pk for t in texts if any(wanted in trigram_fold(f) for f in (t.name, t.entity_type, t.observations))
        }
        clauses: list[TextClause] = [(None, [piece], [])]
        found = _candidates(pg, clauses, [A])
        assert found is not None and holding <= set(found), piece
        assert set(_candidates(lite, clauses, [A]) or ()) & holding <= set(found), piece


def test_both_stores_rank_entity_words_alike(stores: tuple[Store, Store]) -> None:
    lite, pg = stores
    rows = [
        ("Falcon", "bird", ["lives near rivers", "hunts pigeons in the city"], A),
        ("River Falcon", "place", ["a falcon nests by its banks", "falcons falcon"], A),
        ("Peregrine", "falcon", ["fastest bird", "dives"], A),
        ("City", "place", ["pigeons everywhere", "rivers and bridges"], A),
        ("Falcon", "bird", ["second of the name"], A),
        ("Hidden Falcon", "bird", ["not readable"], B),
        ("Straße", "STRASSE", ["İstanbul", "Ꭰꭰ", "naïve café"], A),
    ]
    for store in stores:
        pks = _fill(store, rows)
        with store.write() as tx:
            tx.add_observations(pks[2], ["hunts other birds", "dives"], T0 + 1)
            tx.delete_observations(pks[0], ["lives near rivers"])
            tx.rename_entity(pks[3], name="Big City", entity_type="town")
    queries = (
        ["falcon"],
        ["falcon", "river"],
        ["pigeons", "bird"],
        ["city"],
        ["strasse", "istanbul", "naive"],
        ["nothing"],
    )
    weightings = (EntityFieldWeights(), EntityFieldWeights(10.0, 1.0, 0.5), EntityFieldWeights(0.1, 2.0, 5.0))
    for terms in queries:
        for weights in weightings:
            for scopes, limit in (([A], 10), ([A, B], 10), ([A], 2)):
                with lite.read() as tx:
                    expected = tx.entity_word_search(terms, scopes, limit, weights)
                with pg.read() as tx:
                    found = tx.entity_word_search(terms, scopes, limit, weights)
                assert [hit.pk for hit in found] == [hit.pk for hit in expected], (terms, weights, scopes)
                for got_hit, want in zip(found, expected, strict=True):
                    assert math.isclose(got_hit.score, want.score, rel_tol=1e-9), (terms, weights, got_hit, want)
