"""The knowledge-graph query language: words, `+required`, `-excluded`, `"phrases"`,
`name:` / `type:` / `obs:` fields, and typo-tolerant (fuzzy) matching.

Matching follows the knowledge-graph servers mnemodb replaces: case-insensitive
substring tests on an entity's name, type and observations (joined by spaces), so
`auth` finds `AuthService`. Where they were wrong this module is right on purpose:

- with `fuzzy`, exclusions and field filters still apply, and a term only counts when
  it is present or a word is within the edit distance (an entity without observations
  no longer matches every query);
- scores read terms without their `+`, `-` and quote marks.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from mnemodb.model.value import Value

__all__ = [
    "EntityText",
    "FieldQuery",
    "ParsedQuery",
    "ScoreTerms",
    "entity_matches",
    "fuzzy_matches",
    "parse",
    "parse_terms",
    "score_entity",
    "score_observation",
]

_PHRASE = re.compile(r'"([^"]+)"')
_FIELD = re.compile(r'(name|type|obs):(?:"([^"]+)"|(\S+))', re.IGNORECASE)
_FIELD_STRIP = re.compile(r"(name|type|obs):\S+", re.IGNORECASE)
_WORDS = re.compile(r"\s+")


@dataclass(frozen=True, eq=False, repr=False)
class ParsedQuery(Value):
    """One clause: every required term and phrase present, no excluded term, and (when
    there is neither a required term nor a phrase) at least one optional term."""

    required: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    phrases: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.required or self.excluded or self.optional or self.phrases)

    @property
    def positive(self) -> tuple[str, ...]:
        """The terms that can make a text match (everything but exclusions)."""
        return (*self.required, *self.phrases, *self.optional)


@dataclass(frozen=True, eq=False, repr=False)
class FieldQuery(Value):
    """A whole query: a clause per field (`name:`, `type:`, `obs:`) and one for all text."""

    fields: dict[str, ParsedQuery] = field(default_factory=dict)
    all: ParsedQuery | None = None

    @property
    def empty(self) -> bool:
        return not self.fields and (self.all is None or self.all.empty)


def parse_terms(text: str) -> ParsedQuery:
    """Words of one clause: `"phrases"`, `+required`, `-excluded` and plain words, lower-cased."""
    lowered = text.lower()
    phrases = tuple(p for p in _PHRASE.findall(lowered))
    rest = _PHRASE.sub(" ", lowered)
    required: list[str] = []
    excluded: list[str] = []
    optional: list[str] = []
    for word in _WORDS.split(rest.strip()):
        if not word:
            continue
        if word.startswith("+"):
            if len(word) > 1:
                required.append(word[1:])
        elif word.startswith("-"):
            if len(word) > 1:
                excluded.append(word[1:])
        else:
            optional.append(word)
    # A word repeated means no more than the word once; dropping repeats keeps a long
    # query's work proportional to its distinct words.
    unique = dict.fromkeys
    return ParsedQuery(
        tuple(unique(required)), tuple(unique(excluded)), tuple(unique(optional)), tuple(unique(phrases))
    )


def parse(query: str) -> FieldQuery:
    """Split `name:`, `type:` and `obs:` clauses (the last of each wins) from the rest."""
    fields: dict[str, ParsedQuery] = {}
    for match in _FIELD.finditer(query):
        value = match.group(2) if match.group(2) is not None else match.group(3)
        fields[match.group(1).lower()] = parse_terms(value)
    remainder = _FIELD.sub(" ", query).strip()
    return FieldQuery(fields, parse_terms(remainder) if remainder else None)


@dataclass(frozen=True, eq=False, repr=False)
class EntityText(Value):
    """What a query looks at in one entity, lower-cased: name, type, the observations
    joined by spaces (`obs`), and (for scoring) each observation."""

    name: str
    type: str
    obs: str
    observations: tuple[str, ...] = ()

    @classmethod
    def of(cls, name: str, entity_type: str, observations: Iterable[str]) -> EntityText:
        lowered = tuple(o.lower() for o in observations)
        return cls(name.lower(), entity_type.lower(), " ".join(lowered), lowered)

    @property
    def all(self) -> str:
        return f"{self.name} {self.type} {self.obs}"

    def field(self, name: str) -> str:
        return {"name": self.name, "type": self.type, "obs": self.obs}[name]


@functools.cache
def _edit_distance() -> Callable[..., int]:
    """rapidfuzz's optimal string alignment distance, imported on the first fuzzy match
    rather than at start-up (10 ms that most servers never need)."""
    from rapidfuzz.distance import OSA

    distance: Callable[..., int] = OSA.distance
    return distance


def fuzzy_matches(text: str, term: str) -> bool:
    """A word of `text` contains `term`, or is within `max(1, len(term) // 4)` edits of it.
    Edits are optimal string alignment's: a swap of two neighbouring letters, the commonest
    typo (`atals`), is one, as an insertion, a deletion or a substitution is."""
    distance = max(1, len(term) // 4)
    for word in text.split():
        if term in word:
            return True
        if abs(len(word) - len(term)) <= distance and _edit_distance()(word, term, score_cutoff=distance) <= distance:
            return True
    return False


def _present(text: str, term: str, fuzzy: bool) -> bool:
    return term in text or (fuzzy and fuzzy_matches(text, term))


def clause_matches(text: str, clause: ParsedQuery, *, fuzzy: bool = False) -> bool:
    """Whether `text` (lower-cased) satisfies one clause. Exclusions are always exact."""
    for term in clause.excluded:
        if term in text:
            return False
    for term in clause.required:
        if not _present(text, term, fuzzy):
            return False
    for phrase in clause.phrases:
        if not _present(text, phrase, fuzzy):
            return False
    if clause.optional and not clause.required and not clause.phrases:
        # Loops rather than any(): this runs for every candidate, and a generator costs more.
        for term in clause.optional:  # noqa: SIM110
            if _present(text, term, fuzzy):
                return True
        return False
    return True


def entity_matches(entity: EntityText, query: FieldQuery, *, fuzzy: bool = False) -> bool:
    """Every field clause holds on its field and the rest of the query holds on all the text.

    A query of exclusions alone matches nothing (there is nothing to look for).
    """
    if query.empty:
        return False
    for name, clause in query.fields.items():
        if not clause_matches(entity.field(name), clause, fuzzy=fuzzy):
            return False
    rest = query.all
    if rest is None or rest.empty:
        return True
    if not rest.positive and not query.fields:
        return False
    return clause_matches(entity.all, rest, fuzzy=fuzzy)


@dataclass(frozen=True, eq=False, repr=False)
class ScoreTerms(Value):
    """The query as scores read it: operators and quotes dropped, and field prefixes too
    (a query of field clauses alone is scored on their values). Made once per search."""

    whole: str
    tokens: tuple[str, ...]

    @classmethod
    def of(cls, query: str) -> ScoreTerms:
        raw = _FIELD_STRIP.sub("", query).strip()
        if not raw:
            raw = " ".join(m.group(2) or m.group(3) for m in _FIELD.finditer(query)) or query
        text = raw.lower().replace('"', " ")
        tokens = tuple(t for t in (w.lstrip("+-") for w in _WORDS.split(text.strip())) if t)
        return cls(" ".join(tokens), tokens)


def _any_in(tokens: tuple[str, ...], text: str) -> bool:
    for token in tokens:  # noqa: SIM110 - runs per observation of every match; a generator costs more
        if token in text:
            return True
    return False


def score_entity(entity: EntityText, terms: ScoreTerms, *, fuzzy: bool = False) -> int:
    """How well an entity matches: name hits count most, then type, then observations."""
    whole, tokens = terms.whole, terms.tokens
    if not whole:
        return 0
    score = 0
    name = entity.name
    if name == whole:
        score += 100
    elif whole in name:
        score += 50
    if _any_in(tokens, name):
        score += 30
    elif fuzzy and any(fuzzy_matches(name, t) for t in tokens):
        score += 15
    if entity.type == whole:
        score += 40
    elif _any_in(tokens, entity.type):
        score += 20
    for observation in entity.observations:
        if whole in observation:
            score += 15
        if _any_in(tokens, observation):
            score += 10
        elif fuzzy and any(fuzzy_matches(observation, t) for t in tokens):
            score += 5
    return score


def score_observation(observation: str, terms: ScoreTerms, *, fuzzy: bool = False) -> int:
    """How well one observation (lower-cased) matches: the whole query, then each term."""
    whole, tokens = terms.whole, terms.tokens
    if not whole:
        return 0
    score = 0
    if whole in observation:
        score += 100
    for token in tokens:
        if token in observation:
            score += 20
        elif fuzzy and fuzzy_matches(observation, token):
            score += 10
    if observation.startswith(whole) or any(observation.startswith(t) for t in tokens):
        score += 15
    return score


def indexable(terms: Sequence[str], minimum: int = 3) -> bool:
    """Whether every term is long enough for a trigram index to look it up."""
    return all(len(t) >= minimum for t in terms)
