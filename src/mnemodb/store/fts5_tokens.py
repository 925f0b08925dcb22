"""The tokens SQLite FTS5 indexes for a text, computed in Python.

Memory text is indexed on SQLite with FTS5's `porter unicode61 remove_diacritics 2`
tokenizer. A store without FTS5 that must find and rank the same memories needs the very
same tokens, so this module reproduces that tokenizer exactly:

* unicode61 splits text into runs of token characters, folds each character (lower case
  by its own tables, diacritics off Latin letters, combining diacritics dropped). Which
  characters separate and how each folds is FTS5's own choice from Unicode 6.1 data, so
  the tables in `fts5_unicode_tables` were read off SQLite code point by code point.
* porter then stems each token. FTS5 stems the UTF-8 bytes of a token, not its
  characters: a token longer than 64 bytes or shorter than 3 is left as it is, every
  non-ASCII byte counts as a consonant, and the step that undoubles a final double
  consonant ("hopping" -> "hop") also undoubles two equal continuation bytes, which cuts
  a character in half. Such a term is no valid UTF-8; it is returned with the stray
  bytes as lone surrogates (Python's "surrogateescape"), so that
  `term.encode("utf-8", "surrogateescape")` is exactly FTS5's term.

The stemmer is Martin Porter's algorithm in the form FTS5 applies it: the revised step 2
("bli" -> "ble", "logi" -> "log"), and a suffix is only taken off a token that has more
than the suffix ("ies" stays "ie", not "i").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

from mnemodb.model.value import Value
from mnemodb.store.fts5_unicode_tables import DROPPED_RANGES, FOLD_RUNS, FOLD_SINGLES, SEPARATOR_RANGES

__all__ = ["index_tokens", "stem", "unstemmed_tokens"]

_SEPARATOR = " "


def _character_map() -> dict[int, str | None]:
    """str.translate table: separators become a space, dropped marks vanish, folded
    characters become their folded form; every other character is kept as it is."""
    mapping: dict[int, str | None] = {}
    for first, last in SEPARATOR_RANGES:
        for cp in range(first, last + 1):
            mapping[cp] = _SEPARATOR
    for first, last in DROPPED_RANGES:
        for cp in range(first, last + 1):
            mapping[cp] = None
    for first, last, step, offset in FOLD_RUNS:
        for cp in range(first, last + 1, step):
            mapping[cp] = chr(cp + offset)
    for cp, folded in FOLD_SINGLES:
        mapping[cp] = chr(folded)
    return mapping


_CHARACTER_MAP = _character_map()

# Porter works on bytes; a token is handled as its UTF-8 bytes decoded as Latin-1, one
# character per byte, so the ASCII letters are themselves and every other byte is a
# character above U+007F that the rules below see as a consonant.
_VOWELS = frozenset("aeiou")
_SHORTEST_STEMMED = 3
_LONGEST_STEMMED = 64


def index_tokens(text: str) -> list[str]:
    """FTS5's tokens for `text`, in order, duplicates kept."""
    folded = text.translate(_CHARACTER_MAP)
    return [_stem_folded(word) for word in folded.split(_SEPARATOR) if word]


def unstemmed_tokens(text: str) -> list[str]:
    """FTS5's tokens for `text` under `unicode61 remove_diacritics 2` alone (no porter), in
    order, duplicates kept."""
    return [word for word in text.translate(_CHARACTER_MAP).split(_SEPARATOR) if word]


def stem(term: str) -> str:
    """FTS5's form of one query term: folded as unicode61 folds it, then stemmed, which is
    what FTS5 itself does to a bareword of a MATCH query. A term unicode61 would split in
    several tokens is refused: `index_tokens` gives each of them."""
    folded = term.translate(_CHARACTER_MAP)
    if _SEPARATOR in folded or not folded:
        raise ValueError(f"not a single token to FTS5: {term!r}")
    return _stem_folded(folded)


@lru_cache(maxsize=1 << 16)
def _stem_folded(token: str) -> str:
    # Cached: a text repeats its words, and stemming is the costly part.
    raw = token.encode("utf-8", "surrogateescape")
    if not _SHORTEST_STEMMED <= len(raw) <= _LONGEST_STEMMED:
        return token
    stemmed = _porter(raw.decode("latin-1"))
    return stemmed.encode("latin-1").decode("utf-8", "surrogateescape")


def _is_consonant(word: str, i: int) -> bool:
    letter = word[i]
    if letter in _VOWELS:
        return False
    if letter == "y":
        # "y" is a vowel after a consonant ("happy"), a consonant first or after a vowel ("yes", "toy").
        return i == 0 or not _is_consonant(word, i - 1)
    return True


def _consonants(word: str) -> list[bool]:
    """Which letters of the word are consonants, in one pass (the "y" rule looks back)."""
    flags: list[bool] = []
    for letter in word:
        if letter in _VOWELS:
            flags.append(False)
        elif letter == "y":
            flags.append(not flags or not flags[-1])
        else:
            flags.append(True)
    return flags


def _measure(word: str) -> int:
    """Porter's m: how many vowel-consonant sequences the word has, in [C](VC)^m[V]."""
    flags = _consonants(word)
    return sum(1 for previous, current in pairwise(flags) if current and not previous)


def _has_vowel(word: str) -> bool:
    return not all(_consonants(word))


def _ends_double_consonant(word: str) -> bool:
    # FTS5 counts a final "yy" as a double consonant whatever precedes it ("yying" -> "y"),
    # where Porter's definition would make the second "y" a vowel after a consonant "y".
    return len(word) >= 2 and word[-1] == word[-2] and word[-1] not in _VOWELS


def _ends_cvc(word: str) -> bool:
    """Consonant-vowel-consonant at the end, the last not w, x or y ("hop", not "bow")."""
    n = len(word)
    return (
        n >= 3
        and _is_consonant(word, n - 1)
        and not _is_consonant(word, n - 2)
        and _is_consonant(word, n - 3)
        and word[-1] not in "wxy"
    )


@dataclass(frozen=True, eq=False, repr=False)
class _Suffixes(Value):
    """The suffixes one porter rule chooses from, as a set and their lengths longest first:
    looking up a word's last n letters per length beats trying each suffix in turn."""

    names: frozenset[str]
    lengths: tuple[int, ...]


def _suffixes(names: Iterable[str]) -> _Suffixes:
    # Porter takes the longest suffix that matches, and only that one, within a step.
    name_set = frozenset(names)
    return _Suffixes(name_set, tuple(sorted({len(name) for name in name_set}, reverse=True)))


def _split_suffix(word: str, suffixes: _Suffixes) -> tuple[str, str] | None:
    """(stem, suffix) for the longest of `suffixes` the word ends with, leaving a non-empty stem."""
    size = len(word)
    for length in suffixes.lengths:
        if size > length and (ending := word[-length:]) in suffixes.names:
            return word[:-length], ending
    return None


_STEP2 = {
    "ational": "ate",
    "tional": "tion",
    "enci": "ence",
    "anci": "ance",
    "izer": "ize",
    "bli": "ble",
    "alli": "al",
    "entli": "ent",
    "eli": "e",
    "ousli": "ous",
    "ization": "ize",
    "ation": "ate",
    "ator": "ate",
    "alism": "al",
    "iveness": "ive",
    "fulness": "ful",
    "ousness": "ous",
    "aliti": "al",
    "iviti": "ive",
    "biliti": "ble",
    "logi": "log",
}
_STEP3 = {"icate": "ic", "ative": "", "alize": "al", "iciti": "ic", "ical": "ic", "ful": "", "ness": ""}
_STEP4 = (
    "al",
    "ance",
    "ence",
    "er",
    "ic",
    "able",
    "ible",
    "ant",
    "ement",
    "ment",
    "ent",
    "ion",
    "ou",
    "ism",
    "ate",
    "iti",
    "ous",
    "ive",
    "ize",
)


_STEP1A = _suffixes(("sses", "ies", "ss", "s"))
_STEP1A_REPLACEMENTS = {"sses": "ss", "ies": "i", "ss": "ss", "s": ""}
_EED = _suffixes(("eed",))
_ING_ED = _suffixes(("ing", "ed"))
_Y = _suffixes(("y",))
_E = _suffixes(("e",))
_STEP2_SUFFIXES = _suffixes(_STEP2)
_STEP3_SUFFIXES = _suffixes(_STEP3)
_STEP4_SUFFIXES = _suffixes(_STEP4)


def _porter(word: str) -> str:
    word = _step1a(word)
    word = _step1b(word)
    word = _step1c(word)
    word = _replace_if_measured(word, _STEP2_SUFFIXES, _STEP2, 0)
    word = _replace_if_measured(word, _STEP3_SUFFIXES, _STEP3, 0)
    word = _step4(word)
    return _step5(word)


def _step1a(word: str) -> str:
    found = _split_suffix(word, _STEP1A)
    if found is None:
        return word
    stem_, suffix = found
    return stem_ + _STEP1A_REPLACEMENTS[suffix]


def _step1b(word: str) -> str:
    found = _split_suffix(word, _EED)
    if found is not None:
        return found[0] + "ee" if _measure(found[0]) > 0 else word
    found = _split_suffix(word, _ING_ED)
    if found is None or not _has_vowel(found[0]):
        return word
    word = found[0]
    if word.endswith(("at", "bl", "iz")):
        return word + "e"
    if _ends_double_consonant(word) and word[-1] not in "lsz":
        return word[:-1]
    if _measure(word) == 1 and _ends_cvc(word):
        return word + "e"
    return word


def _step1c(word: str) -> str:
    found = _split_suffix(word, _Y)
    if found is not None and _has_vowel(found[0]):
        return found[0] + "i"
    return word


def _replace_if_measured(word: str, suffixes: _Suffixes, replacements: dict[str, str], above: int) -> str:
    found = _split_suffix(word, suffixes)
    if found is None:
        return word
    stem_, suffix = found
    return stem_ + replacements[suffix] if _measure(stem_) > above else word


def _step4(word: str) -> str:
    found = _split_suffix(word, _STEP4_SUFFIXES)
    if found is None:
        return word
    stem_, suffix = found
    if _measure(stem_) <= 1:
        return word
    if suffix == "ion" and not stem_.endswith(("s", "t")):
        return word
    return stem_


def _step5(word: str) -> str:
    found = _split_suffix(word, _E)
    if found is not None:
        measure = _measure(found[0])
        if measure > 1 or (measure == 1 and not _ends_cvc(found[0])):
            word = found[0]
    if word.endswith("ll") and _measure(word) > 1:
        word = word[:-1]
    return word
