"""Checks every face applies to text and properties before anything is written."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from mnemodb.engine.errors import InvalidArgument
from mnemodb.engine.models import Scalar

__all__ = ["check_props", "check_text"]


def check_text(value: str, what: str) -> str:
    """Reject text SQLite cannot store faithfully (lone UTF-16 surrogates)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgument(f"{what} is not valid Unicode text (it contains a lone surrogate)") from None
    return value


def check_props(props: Mapping[str, Any] | None) -> dict[str, Scalar]:
    """Properties are JSON scalars: strings, finite numbers, booleans."""
    out: dict[str, Scalar] = {}
    for key, value in (props or {}).items():
        check_text(key, "property name")
        if isinstance(value, bool | int | str):
            if isinstance(value, str):
                check_text(value, f"property {key!r}")
            out[key] = value
        elif isinstance(value, float) and math.isfinite(value):
            out[key] = value
        else:
            raise InvalidArgument(f"property {key!r} must be a string, a finite number or a boolean")
    return out
