"""Query analysis: words split where SQLite's unicode61 tokenizer splits (so a query's
terms are the index's), stop words dropped unless nothing else is left, tag candidates."""

from __future__ import annotations

import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemodb.search.analyzer import STOPWORDS, asks, author, query_terms, tag_candidates, words

ALPHABET = st.sampled_from([*"abcXYZ019 .,;:'-_/\t\néüßçÅñ東京日本", "don't", "e-mail", "v2.0"])


def unicode61_terms(text: str) -> list[str]:
    """The terms SQLite's unicode61 tokenizer (diacritics kept) makes of `text`, in order."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize = 'unicode61 remove_diacritics 0')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    conn.execute("INSERT INTO t (x) VALUES (?)", (text,))
    return [term for (term,) in conn.execute("SELECT term FROM v ORDER BY offset")]


@settings(max_examples=300, deadline=None)
@given(st.lists(ALPHABET, max_size=40).map("".join))
def test_words_are_the_terms_sqlite_indexes(text: str) -> None:
    assert words(text) == unicode61_terms(text)


def test_stop_words_go_unless_nothing_else_is_left() -> None:
    assert query_terms("what is the capital of France") == ["capital", "france"]
    assert query_terms("who is it") == ["who", "is", "it"]
    assert query_terms("who is it", drop_stopwords=False) == ["who", "is", "it"]
    assert "won" not in STOPWORDS  # "won't" is "won" + "t" to the tokenizer; "won" is a word
    assert query_terms("I won") == ["won"]


def test_terms_are_distinct_in_first_order_and_capped() -> None:
    assert query_terms("Tea tea TEA coffee tea") == ["tea", "coffee"]
    assert query_terms("alpha beta gamma delta", max_terms=2) == ["alpha", "beta"]


def test_words_are_lower_cased_not_case_folded() -> None:
    """unicode61 keeps ß: a query folded to "ss" would miss it."""
    assert words("STRASSE Straße") == ["strasse", "straße"]
    full_width = "".join(chr(0xFF21 + i) for i in range(3)) + chr(0xFF11)  # "ABC1", full width
    assert words(full_width) == ["abc1"]  # NFKC first


def test_tag_candidates_include_words_pieces_and_dotted_names() -> None:
    found = tag_candidates("Deploy v2.0 of node.js for O'Brien's team-a")
    for expected in ("deploy", "v2.0", "node.js", "o'brien's", "team-a", "team", "a", "js"):
        assert expected in found, expected
    assert len(found) == len(set(found))


# -- the author a text's opening label names -----------------------------------------------------


def test_an_opening_label_names_the_author() -> None:
    assert author("Melanie: I painted a sunset") == ("melanie",)
    assert author("  Dr Ana Ruiz: the scan is clear") == ("dr", "ana", "ruiz")
    assert author("Anna-Lena: hi") == ("anna", "lena")
    assert author("[10:32] Melanie: on my way") == ("melanie",)  # a time first is passed over
    assert author("(8 May 2023) Melanie: on my way") == ("melanie",)


def test_text_without_an_opening_label_names_no_author() -> None:
    assert author("Wow, Melanie: what a painting") == ()  # a comma: a sentence, not a label
    assert author("note: buy milk") == ()  # not capitalised
    assert author("Melanie:no space after the colon") == ()
    assert author("One Two Three Four: more than three words") == ()
    assert author("I painted a sunset") == ()
    assert author("The: only stop words") == ()
    assert author("[10:32] (Mon) Melanie: two brackets") == ()


# -- a text that ends by asking --------------------------------------------------------------------


def test_a_text_ending_on_a_question_asks() -> None:
    assert asks("Caroline: Wow! Did you see that band?")
    assert asks('He said: "is it?"  ')  # closing quotes and spaces after the mark
    assert asks("(what did you paint?)")


def test_a_text_ending_otherwise_does_not_ask() -> None:
    assert not asks("Melanie: What? No, it was Matt Patterson.")  # a question inside, then an answer
    assert not asks("I painted a sunset")
    assert not asks("")
