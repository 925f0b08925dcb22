"""mnemodb's WordPiece tokenizer gives the ids the `tokenizers` library gives for the local
model's `tokenizer.json`: on written text of many scripts, on the edge cases of BERT's
normalizer and pre-tokenizer, and on random text (Hypothesis)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemodb.search.embedders import local_model_path
from mnemodb.search.wordpiece import WordPiece

FOLDER = local_model_path()
pytestmark = pytest.mark.skipif(FOLDER is None, reason="the local embedding model is not installed")
tokenizers = pytest.importorskip("tokenizers")

TEXTS = [
    "",
    " ",
    "a",
    "Hello, World!",
    "When did Caroline go to the LGBTQ support group?",
    "I'm thinking of adopting a puppy -- maybe a golden retriever :)",
    "naïve café résumé Ünïcödé straße İstanbul ﬁne",
    "東京に住んでいます。北京欢迎你 서울에 삽니다",
    "emoji 🎉🐶 and symbols $5 + 3 = <8> ^ ` | ~ #tag @user",
    "tabs\tand\nnew lines\r\nand\u00a0no-break\u2028line\u2029paragraph\u3000ideographic space",
    "control\x00chars\x07here\x1b[0m and \ufffd replacement \u200b zero width \ue000 private",
    "special [CLS] tokens [SEP] in [MASK] the [PAD] text [UNK] and [mask] lower-case",
    "hello[MASK]world [SEP][SEP]",
    "x" * 99 + " " + "y" * 100 + " " + "z" * 101,
    "antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
    "Ελληνικά русский עברית العربية हिन्दी ไทย",
    "ǅungla ǈubljana ﬀ ﬃ Å Å",
    "word " * 400,
]

CJK = "".join(chr(c) for c in range(0x4E00, 0x4E40)) + "".join(chr(c) for c in range(0xAC00, 0xAC20))
SPECIALS = ["[CLS]", "[SEP]", "[MASK]", "[PAD]", "[UNK]"]


@pytest.fixture(scope="module")
def pair() -> tuple[WordPiece, object]:
    assert FOLDER is not None
    reference = tokenizers.Tokenizer.from_file(str(FOLDER / "tokenizer.json"))
    reference.no_padding()
    reference.enable_truncation(max_length=256)
    return WordPiece.from_file(FOLDER / "tokenizer.json", max_tokens=256), reference


@pytest.mark.parametrize("text", TEXTS)
def test_the_ids_are_those_of_the_tokenizers_library(pair: tuple[WordPiece, object], text: str) -> None:
    ours, reference = pair
    assert ours.encode(text) == reference.encode(text).ids  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "text", ["A\u03a3", "\u039f\u0394\u039f\u03a3 \u03a3\u039f\u03a6\u0399\u0391\u03a3.", "a\u03c2 \u03c3 \u03a3"]
)
def test_a_capital_sigma_lowers_as_the_model_s_tokenizer_lowers_it(pair: tuple[WordPiece, object], text: str) -> None:
    """Python writes a capital sigma at a word's end as the final form; the reference does not."""
    ours, reference = pair
    assert ours.encode(text) == reference.encode(text).ids  # type: ignore[attr-defined]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.one_of(
            # Below U+0600 the Unicode versions of Python and of the Rust library agree on
            # every character's category; above, newly assigned characters differ.
            st.text(st.characters(max_codepoint=0x5FF, exclude_categories=["Cs"]), max_size=12),
            st.text(st.sampled_from(CJK), max_size=4),
            st.sampled_from(SPECIALS),
            st.sampled_from([" ", "  ", "\t", "\n", ".", "##", "ing", "un", "'s"]),
        ),
        max_size=30,
    ).map("".join)
)
def test_random_text_gives_the_same_ids(pair: tuple[WordPiece, object], text: str) -> None:
    ours, reference = pair
    assert ours.encode(text) == reference.encode(text).ids  # type: ignore[attr-defined]


def test_a_text_is_cut_to_the_model_length_with_its_end_marker() -> None:
    assert FOLDER is not None
    short = WordPiece.from_file(FOLDER / "tokenizer.json", max_tokens=8)
    ids = short.encode("one two three four five six seven eight nine ten")
    assert len(ids) == 8
    assert ids[0] == short.first and ids[-1] == short.last
    assert short.encode("") == [short.first, short.last]


def test_a_word_past_the_longest_spelling_is_one_unknown_token() -> None:
    assert FOLDER is not None
    tokens = WordPiece.from_file(FOLDER / "tokenizer.json")
    assert tokens.encode("a" * 101) == [tokens.first, tokens.unknown, tokens.last]
    assert tokens.unknown not in tokens.encode("a" * 100)


def test_a_tokenizer_that_is_not_uncased_bert_is_refused(tmp_path: Path) -> None:
    assert FOLDER is not None
    spec = json.loads((FOLDER / "tokenizer.json").read_text())
    spec["normalizer"]["lowercase"] = False
    cased = tmp_path / "tokenizer.json"
    cased.write_text(json.dumps(spec))
    with pytest.raises(ValueError, match="not an uncased BERT WordPiece tokenizer"):
        WordPiece.from_file(cased)
    spec["model"] = {"type": "BPE"}
    cased.write_text(json.dumps(spec))
    with pytest.raises(ValueError, match="not an uncased BERT WordPiece tokenizer"):
        WordPiece.from_file(cased)
