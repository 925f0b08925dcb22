"""Helpers shared by test modules (fixtures live in the conftest files)."""

from __future__ import annotations

import hashlib

START_MS = 1_700_000_000_000
SCOPE_A = "01HV7N8Q3Y2J6W5X4Z9A0B1C2D"


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Clock:
    """A settable clock, so recency and edge validity never depend on the wall clock.

    With `tick`, every reading advances by that many milliseconds.
    """

    def __init__(self, now: int = START_MS, tick: int = 0) -> None:
        self.now = now
        self.tick = tick

    def __call__(self) -> int:
        self.now += self.tick
        return self.now
