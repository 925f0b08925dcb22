"""Times as people read them: ISO 8601 in UTC, wherever mnemodb shows one to a person (CLI
text and JSON, the native tools). Milliseconds since the epoch stay where a format fixes
them (exports, upstream profiles' fields)."""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta

__all__ = ["epoch_ms", "iso_utc"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NAIVE_EPOCH = datetime(1970, 1, 1)
_MILLISECOND = timedelta(milliseconds=1)


def epoch_ms(moment: datetime) -> int:
    """`moment` (UTC when it carries no offset) as whole milliseconds since the epoch, exactly:
    `timestamp() * 1000` goes through a float and lands a millisecond early for some times."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MILLISECOND


@functools.lru_cache(maxsize=16384)
def iso_utc(ms: int) -> str:
    """`ms` since the epoch as an ISO 8601 UTC string, to the second (with the millisecond
    when it has one): `2026-12-04T03:57:02Z`, `2026-12-04T03:57:02.123Z`.

    Exact for any integer (no float division), and the year always has four digits. Kept
    by value: a reply shows the same few times again and again (the relations written
    together share theirs), and a kept one costs a sixth of one formatted again."""
    seconds, millis = divmod(ms, 1000)
    text = _second(seconds)
    return f"{text}.{millis:03d}Z" if millis else f"{text}Z"


@functools.lru_cache(maxsize=8192)
def _second(seconds: int) -> str:
    # Items written together share their second: a walk formats few distinct ones. Whole
    # seconds added to a naive epoch and `isoformat` cost half of `fromtimestamp` + `strftime`.
    return (_NAIVE_EPOCH + timedelta(seconds=seconds)).isoformat()
