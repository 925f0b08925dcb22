"""Checks every face applies to text and properties before anything is written."""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from typing import Any

from mnemodb.model.errors import InvalidArgument
from mnemodb.model.records import Scalar

__all__ = ["MAX_QUERY_CHARS", "check_props", "check_query", "check_text", "is_finite_number", "json_kind"]


def json_kind(value: Any) -> str:
    """What a JSON value is, as an error message names it ("a string", "an array", ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, Mapping) else f"a {type(value).__name__}"


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def is_finite_number(value: int | float) -> bool:
    """Whether a JSON number is one a float can hold. JSON integers have no size limit and
    Python reads them exactly, so `math.isfinite(10**400)` would raise OverflowError;
    such an integer is treated like the infinity a JavaScript or Rust reader makes of it."""
    if isinstance(value, int):
        return -sys.float_info.max <= value <= sys.float_info.max
    return math.isfinite(value)


def check_text(value: str, what: str) -> str:
    """Reject text SQLite cannot store faithfully (lone UTF-16 surrogates)."""
    # ASCII text has none, and telling so copies nothing (a bulk of relations checks
    # three texts a relation).
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgument(f"{what} is not valid Unicode text (it contains a lone surrogate)") from None
    return value


# A search's text is a question or a pattern, not a document. The bound keeps the work a
# query can ask for (FTS5 expressions, regex compilation, per-entity substring checks,
# none of which a time limit interrupts mid-step) to tens of milliseconds.
MAX_QUERY_CHARS = 32_768


def check_query(value: str, what: str = "query") -> str:
    """Search text: valid Unicode and at most MAX_QUERY_CHARS characters."""
    if len(value) > MAX_QUERY_CHARS:
        raise InvalidArgument(f"{what} is too long: {len(value):,} characters, at most {MAX_QUERY_CHARS:,}")
    return check_text(value, what)


def check_props(props: Mapping[str, Any] | None) -> dict[str, Scalar]:
    """Properties are JSON scalars: strings, finite numbers, booleans."""
    out: dict[str, Scalar] = {}
    for key, value in (props or {}).items():
        check_text(key, "property name")
        if isinstance(value, bool | str):
            if isinstance(value, str):
                check_text(value, f"property {key!r}")
            out[key] = value
        elif isinstance(value, int) and _INT64_MIN <= value <= _INT64_MAX:
            out[key] = value
        elif isinstance(value, int) and is_finite_number(value):
            out[key] = float(value)  # as JSON readers other than Python's hold it
        elif isinstance(value, float) and math.isfinite(value):
            out[key] = value
        else:
            raise InvalidArgument(f"property {key!r} must be a string, a finite number or a boolean")
    return out
