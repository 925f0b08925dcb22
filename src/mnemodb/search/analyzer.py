"""Turning query text into search terms.

Memory text is indexed by FTS5 with `porter unicode61` (stemming, case and diacritics
folded). Queries are split into words the same way unicode61 does (letters and digits;
everything else separates), and English stop words are dropped: on the conversational
memory benchmark that took BM25 recall@10 from 53.5 to 60.8. A query made only of stop
words keeps them, so "who is it" still finds something.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["STOPWORDS", "asks", "author", "query_terms", "tag_candidates", "words"]

# Letters, digits and marks are word characters for unicode61; so is nothing else.
_WORD = re.compile(r"[^\W_]+", re.UNICODE)

_STOPWORD_LIST = """
    a about above after again against all am an and any are aren't as at be because been before being
    below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down
    during each few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here
    here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its
    itself let's me more most mustn't my myself no nor not of off on once only or other ought our ours
    ourselves out over own same shan't she she'd she'll she's should shouldn't so some such than that
    that's the their theirs them themselves then there there's these they they'd they'll they're they've
    this those through to too under until up very was wasn't we we'd we'll we're we've were weren't what
    what's when when's where where's which while who who's whom why why's with won't would wouldn't you
    you'd you'll you're you've your yours yourself yourselves
    """
# Stored as the pieces unicode61 makes of them ("don't" -> "don", "t"); "won" stays a word.
STOPWORDS = frozenset(w for entry in _STOPWORD_LIST.split() for w in _WORD.findall(entry)) - {"won"}


def words(text: str) -> list[str]:
    """Lower-cased words of `text`, split where unicode61 splits. Lower case, not case
    folding: unicode61 keeps "ß" as it is, and a query folded to "ss" would miss it."""
    folded = unicodedata.normalize("NFKC", text).lower()
    return _WORD.findall(folded)


_SEGMENT = re.compile(r"\w+(?:[.'\u2019]\w+)*", re.UNICODE)


def tag_candidates(text: str) -> list[str]:
    """Every token of a query that could equal a tag, NFKC + lower-cased: its words, its
    whitespace-separated pieces, and words joined by inner periods or apostrophes."""
    folded = unicodedata.normalize("NFKC", text).lower()
    found = [*_WORD.findall(folded), *folded.split(), *_SEGMENT.findall(folded)]
    return list(dict.fromkeys(found))


def query_terms(text: str, *, drop_stopwords: bool = True, max_terms: int | None = None) -> list[str]:
    """The distinct search terms of a query, in order of first appearance."""
    seen: dict[str, None] = {}
    for word in words(text):
        seen.setdefault(word, None)
    terms = list(seen)
    if drop_stopwords:
        content = [t for t in terms if t not in STOPWORDS]
        if content:
            terms = content
    if max_terms is not None:
        terms = terms[:max_terms]
    return terms


# A label that opens a text and names who wrote it, as a transcript does: "Melanie: ...",
# "Dr Ana Ruiz: ...". One to three words, each capitalised, then a colon and a space;
# transcripts often put a time in brackets first ("[10:32] Ana: ...", "(8 May 2023) Ana:
# ..."), which is passed over.
_LABEL_WORD = r"[^\W\d_][\w.'\u2019-]*"
_AUTHOR = re.compile(rf"\s*(?:[\[(][^\[\]()]{{1,40}}[\])]\s*)?({_LABEL_WORD}(?: {_LABEL_WORD}){{0,2}}):\s")


def author(text: str) -> tuple[str, ...]:
    """The lower-cased words of the label naming who wrote `text` ("Melanie: I painted
    a sunset" -> ("melanie",)), or () when it opens with none. A label made only of stop
    words ("I: ...") names nobody a query could name."""
    found = _AUTHOR.match(text)
    if found is None:
        return ()
    label = found.group(1)
    if not all(part[0].isupper() for part in label.split(" ")):
        return ()
    named = tuple(words(label))
    return named if any(w not in STOPWORDS for w in named) else ()


# What may close a question after its mark: quotes, brackets and spaces.
_CLOSERS = " \t\r\n\"'\u201d\u2019)]"


def asks(text: str) -> bool:
    """Whether `text` ends by asking ("... Did you see that band?"): a turn that closes on
    a question hands the conversation over, and its words are those of what it wants to
    know, not of what is known."""
    return text.rstrip(_CLOSERS).endswith("?")
