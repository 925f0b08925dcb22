"""Rules of the data model that more than one write path applies, kept here once.

The live write paths (the faces' tools, the engine API) and import (`mnemodb import` of an
export, and of a server-memory file) must refuse the same things: each calls the rule
here rather than keeping its own copy, so what one refuses the others refuse too.
"""

from __future__ import annotations

import json
import math
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mnemodb.model.checks import check_props, check_text
from mnemodb.model.errors import InvalidArgument
from mnemodb.model.ids import SHARED
from mnemodb.model.records import Scalar

__all__ = [
    "MAX_EXTRA_DEPTH",
    "MAX_IMPORTANCE",
    "MAX_TAGS",
    "MAX_TAG_LENGTH",
    "MEMORY_FIELDS",
    "WHITESPACE",
    "check_edge_ends",
    "check_extra",
    "check_importance",
    "check_model_dim",
    "check_new_entity",
    "check_window",
    "crosses_private_scopes",
    "fits_memory_field",
    "normalize_tag",
    "normalize_tags",
    "unstorable",
]

MAX_TAGS = 100
MAX_TAG_LENGTH = 50
MAX_IMPORTANCE = 10


# A memory's own fields that a property write may set (the property-graph face shows them
# as properties), with the value that means "not set".
MEMORY_FIELDS: dict[str, Any] = {"importance": 0, "memory_type": "general", "summary": None}


def fits_memory_field(key: str, value: object) -> bool:
    """Whether a property write's `value` can be kept in the memory field `key` (or an
    entity's type): anything else resets the field and stays a property."""
    if key == "importance":
        return type(value) is int and 0 <= value <= MAX_IMPORTANCE
    if key == "memory_type":
        return isinstance(value, str) and bool(value)
    return isinstance(value, str)  # summary, entityType


def check_importance(value: object) -> int:
    """A memory's importance: an integer from 0 to MAX_IMPORTANCE (a bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_IMPORTANCE:
        raise InvalidArgument(f"importance must be an integer from 0 to {MAX_IMPORTANCE}")
    return value


# What counts as white space in a tag: JavaScript's `\s` (Unicode space separators, the
# ASCII controls TAB to CR, line and paragraph separators, and U+FEFF). The servers
# mnemodb replaces validated tags with it, so a tag they accepted is accepted here.
WHITESPACE = frozenset(
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def normalize_tag(tag: str) -> str:
    return unicodedata.normalize("NFKC", tag).lower()


def normalize_tags(tags: Iterable[str]) -> tuple[str, ...]:
    """Tags in canonical form (NFKC, lower case), validated, deduplicated and sorted."""
    raw_tags = list(tags)
    if len(raw_tags) > MAX_TAGS:
        raise InvalidArgument(f"Too many tags (max {MAX_TAGS})")
    out: dict[str, None] = {}
    for raw in raw_tags:
        tag = normalize_tag(check_text(raw, "tag"))
        if not tag:
            raise InvalidArgument("Tag must be at least 1 character")
        if len(tag) > MAX_TAG_LENGTH:
            raise InvalidArgument(f"Tag exceeds {MAX_TAG_LENGTH} characters")
        if not WHITESPACE.isdisjoint(tag):
            raise InvalidArgument("Tag must not contain whitespace")
        out.setdefault(tag, None)
    return tuple(sorted(out))


TURN_CONTEXT_WINDOW_MS = 30 * 60 * 1000
"""A memory stored as a turn of a conversation follows the turn stored before it in its
scope when that one is at most this old (30 minutes): the two turns before it are its
context, which the native search matches at reduced weight. An answer often names little
of what it answers; the turns before it name the rest (docs/design.md)."""


MAX_EXTRA_DEPTH = 100
"""How deep the fields kept from other servers' files (an entity's or relation's `extra`)
may nest, counting from the line that holds them."""


def crosses_private_scopes(src_scope: str, dst_scope: str) -> bool:
    """Whether an edge between items of these two scopes would join two private scopes. An
    edge may cross scopes only to or from `shared`."""
    return src_scope != dst_scope and SHARED not in (src_scope, dst_scope)


def check_edge_ends(src_scope: str, dst_scope: str) -> None:
    """Refuse an edge between two private scopes (see `crosses_private_scopes`)."""
    if crosses_private_scopes(src_scope, dst_scope):
        raise InvalidArgument("cross-scope edge requires at least one shared endpoint")


def check_window(valid_from: int, valid_to: int | None) -> None:
    """Refuse a relation that would stop being valid before it became valid."""
    if valid_to is not None and valid_to < valid_from:
        raise InvalidArgument("valid_to is before the relation became valid")


def check_new_entity(
    name: str, entity_type: str, observations: Sequence[str], props: Mapping[str, Any] | None
) -> dict[str, Scalar]:
    """A new entity's fields, checked before anything is written: a non-empty name, text
    SQLite stores faithfully, scalar properties. Returns the clean properties."""
    check_text(name, "entity name")
    if not name:
        raise InvalidArgument("entity name must not be empty")
    check_text(entity_type, "entity type")
    for observation in observations:
        check_text(observation, "observation")
    return check_props(props)


def check_model_dim(model: str, size: int, stored: int | None) -> None:
    """Refuse a vector of `size` values for `model` when the store holds `model` vectors of
    another length (`stored`): a model's vectors all have one length."""
    if size < 1:
        raise InvalidArgument(f"embedding for model {_quoted(model)} must have at least one dimension")
    if stored is not None and stored != size:
        raise InvalidArgument(
            f"embedding dim {size} does not match existing slab dim {stored} for model {_quoted(model)}"
        )


def unstorable(value: Any) -> str | None:
    """Why a JSON value kept as it is (the `extra` fields of a server-memory line) cannot be
    stored faithfully, or None: text that is not valid Unicode, nesting deeper than
    MAX_EXTRA_DEPTH (`value` itself is at depth 0), or what JSON cannot write (a number
    that is not finite, a key that is not text, a value of another type). Walked with a
    stack of its own, so no depth of nesting exhausts Python's; the first problem in the
    order the value is written is the one told."""
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if depth > MAX_EXTRA_DEPTH:
            return f"values nested more than {MAX_EXTRA_DEPTH} deep"
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return "text that is not valid Unicode (a lone surrogate)"
        elif isinstance(item, list):
            pending.extend((child, depth + 1) for child in reversed(item))
        elif isinstance(item, dict):
            for key, child in reversed(list(item.items())):
                pending.append((child, depth + 1))
                pending.append((key, depth + 1))
            if not all(isinstance(key, str) for key in item):
                return "an object key that is not text"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return "a number that is not finite"
        elif item is not None and not isinstance(item, bool | int):
            return f"a value JSON cannot hold ({type(item).__name__})"
    return None


def check_extra(value: Any, what: str) -> dict[str, Any]:
    """The fields an entity or relation keeps from a server-memory line (`extra`): a JSON
    object that line could have held (see `unstorable`)."""
    if not isinstance(value, dict):
        raise InvalidArgument(f"{what} must be a JSON object")
    problem = unstorable(value)
    if problem:
        raise InvalidArgument(f"{what} holds {problem}")
    return value


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)
