"""BERT's WordPiece tokenizer, as a model's `tokenizer.json` describes it, in plain Python.

The `tokenizers` library does this in Rust, but it depends on huggingface-hub and what that
pulls in (about 45 MB with the library), for a job that is a page of code: the local model
needs only BERT's uncased tokenizer, which the file spells out as

- a normalizer (`BertNormalizer`): drop control characters and turn every whitespace
  character into a space; put spaces around CJK ideographs; strip accents (decompose, drop
  combining marks) and lower-case;
- a pre-tokenizer (`BertPreTokenizer`): split on whitespace, and make every punctuation
  character a word of its own;
- the model (`WordPiece`): each word becomes the longest vocabulary entries that spell it,
  left to right, the ones after the first written with the `##` prefix; a word that cannot
  be spelt, or is longer than 100 characters, is one unknown token;
- the template: `[CLS]` before, `[SEP]` after, with truncation to the model's length;
- the special tokens themselves (`[CLS]`, `[MASK]`…) are recognised in the raw text first.

The ids are those `tokenizers` gives (a test compares them on texts from every script and
on random Unicode); words repeat, so each word's pieces are kept in a cache.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["WordPiece"]

# The CJK ideograph blocks BERT puts spaces around (CJK Unified Ideographs and their
# extensions A to E, and the compatibility ideographs). Extension E starts at 0x2B820; BERT
# has always written 0x2B920, and the ids must be BERT's.
_CJK = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


def _is_cjk(code: int) -> bool:
    return any(low <= code <= high for low, high in _CJK)


@lru_cache(maxsize=65536)
def _normalized_char(char: str) -> str:
    """What the normalizer makes of one character (before accents and case): control
    characters go, whitespace (Unicode's White_Space) becomes a space, CJK gets spaces."""
    if char in "\t\n\r":
        return " "
    category = unicodedata.category(char)
    # Unassigned code points (Cn) stay, as the Rust library leaves them.
    if category in ("Cc", "Cf", "Co", "Cs") or char == "\ufffd":
        return ""
    if category in ("Zs", "Zl", "Zp"):
        return " "
    if _is_cjk(ord(char)):
        return f" {char} "
    return char


@lru_cache(maxsize=65536)
def _is_punctuation(char: str) -> bool:
    """BERT's punctuation: ASCII's symbols (so $ + < = > ^ ` | ~ too) and Unicode's P*."""
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _normalize(text: str) -> str:
    if not text.isascii():
        text = "".join(_normalized_char(c) for c in text)
        text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
    else:
        text = "".join(_normalized_char(c) for c in text) if not text.isprintable() else text
        return text.lower()
    # Python lowers a capital sigma (U+03A3) at a word's end to the final form (U+03C2); the
    # model's tokenizer lowers every one to the small sigma (U+03C3), character by character.
    return text.replace("\u03a3", "\u03c3").lower()


class WordPiece:
    """Text to token ids, with `[CLS]` and `[SEP]`, at most `max_tokens` of them."""

    def __init__(
        self,
        vocab: dict[str, int],
        *,
        specials: tuple[str, ...] = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"),
        unknown: str = "[UNK]",
        prefix: str = "##",
        max_word_chars: int = 100,
        max_tokens: int = 512,
    ) -> None:
        self.vocab = vocab
        self.unknown = vocab[unknown]
        self.first, self.last = vocab["[CLS]"], vocab["[SEP]"]
        self.prefix = prefix
        self.max_word_chars = max_word_chars
        self.max_tokens = max_tokens
        self._specials = {token: vocab[token] for token in specials if token in vocab}
        self._special_pattern = re.compile("(" + "|".join(map(re.escape, self._specials)) + ")")
        self._words: dict[str, tuple[int, ...]] = {}

    @classmethod
    def from_file(cls, path: Path, *, max_tokens: int = 512) -> WordPiece:
        """The tokenizer a `tokenizer.json` describes; anything but BERT's refused."""
        spec: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        model, normalizer = spec.get("model") or {}, spec.get("normalizer") or {}
        if (
            model.get("type") != "WordPiece"
            or normalizer.get("type") != "BertNormalizer"
            or (spec.get("pre_tokenizer") or {}).get("type") != "BertPreTokenizer"
            or not normalizer.get("lowercase", True)
            or normalizer.get("strip_accents") not in (None, True)
            or not normalizer.get("handle_chinese_chars", True)
            or not normalizer.get("clean_text", True)
        ):
            raise ValueError(f"{path} is not an uncased BERT WordPiece tokenizer")
        return cls(
            {str(k): int(v) for k, v in model["vocab"].items()},
            specials=tuple(str(t["content"]) for t in spec.get("added_tokens", ()) if t.get("special")),
            unknown=str(model.get("unk_token", "[UNK]")),
            prefix=str(model.get("continuing_subword_prefix", "##")),
            max_word_chars=int(model.get("max_input_chars_per_word", 100)),
            max_tokens=max_tokens,
        )

    def encode(self, text: str) -> list[int]:
        ids: list[int] = [self.first]
        room = self.max_tokens - 1
        pieces = self._special_pattern.split(text) if self._specials else [text]
        for i, piece in enumerate(pieces):
            if i % 2:
                ids.append(self._specials[piece])
            else:
                for word in self._words_of(piece):
                    ids.extend(self._pieces(word))
            if len(ids) >= room:
                break
        del ids[room:]
        ids.append(self.last)
        return ids

    def _words_of(self, text: str) -> list[str]:
        words: list[str] = []
        for chunk in _normalize(text).split():
            if chunk.isalnum():
                words.append(chunk)
                continue
            start = 0
            for end, char in enumerate(chunk):
                if _is_punctuation(char):
                    if start < end:
                        words.append(chunk[start:end])
                    words.append(char)
                    start = end + 1
            if start < len(chunk):
                words.append(chunk[start:])
        return words

    def _pieces(self, word: str) -> tuple[int, ...]:
        known = self._words.get(word)
        if known is None:
            known = self._spelt(word) if len(word) <= self.max_word_chars else (self.unknown,)
            if len(self._words) < 200_000:  # a bound for a server that sees endless new words
                self._words[word] = known
        return known

    def _spelt(self, word: str) -> tuple[int, ...]:
        """The longest vocabulary entries, left to right; unknown if they cannot spell it."""
        pieces: list[int] = []
        start = 0
        while start < len(word):
            for end in range(len(word), start, -1):
                found = self.vocab.get(word[start:end] if start == 0 else self.prefix + word[start:end])
                if found is not None:
                    pieces.append(found)
                    start = end
                    break
            else:
                return (self.unknown,)
        return tuple(pieces)
