"""Times shown to people: `iso_utc` checked against the calendar definition and `epoch_ms`."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from mnemodb.model.times import epoch_ms, iso_utc


def _by_calendar(ms: int) -> str:
    """The reading by way of `fromtimestamp` and `strftime` with the year padded to four
    digits: a second, independent route to the same text."""
    moment = datetime.fromtimestamp(ms // 1000, tz=UTC)
    text = f"{moment.year:04d}-" + moment.strftime("%m-%dT%H:%M:%S")
    return f"{text}.{ms % 1000:03d}Z" if ms % 1000 else f"{text}Z"


_FIRST = epoch_ms(datetime(1, 1, 1, tzinfo=UTC))
_LAST = epoch_ms(datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC))


def test_iso_utc_spells_known_moments() -> None:
    assert iso_utc(0) == "1970-01-01T00:00:00Z"
    assert iso_utc(1) == "1970-01-01T00:00:00.001Z"
    assert iso_utc(-1) == "1969-12-31T23:59:59.999Z"
    assert iso_utc(-1000) == "1969-12-31T23:59:59Z"
    assert iso_utc(1_764_820_622_123) == "2025-12-04T03:57:02.123Z"
    assert iso_utc(951_782_400_000) == "2000-02-29T00:00:00Z"
    assert iso_utc(_LAST) == "9999-12-31T23:59:59.999Z"
    assert iso_utc(_FIRST) == "0001-01-01T00:00:00Z"
    assert iso_utc(_FIRST + 999) == "0001-01-01T00:00:00.999Z"


def test_iso_utc_matches_the_calendar_on_many_values() -> None:
    rng = random.Random(18)
    edges = [0, 1, -1, 999, -999, 1000, -1000, 86_399_999, 86_400_000, _FIRST, _LAST]
    for year in (1000, 1900, 2000, 2038, 2100):
        edges += [epoch_ms(datetime(year, 1, 1, tzinfo=UTC)) + delta for delta in (-1, 0, 1)]
    values = edges + [rng.randrange(_FIRST, _LAST + 1) for _ in range(50_000)]
    values += [rng.randrange(1_600_000_000_000, 1_900_000_000_000) for _ in range(50_000)]
    for ms in values:
        assert iso_utc(ms) == _by_calendar(ms), ms


def test_iso_utc_reads_back_to_the_same_millisecond() -> None:
    rng = random.Random(7)
    for ms in [_FIRST, _LAST, *(rng.randrange(_FIRST, _LAST + 1) for _ in range(5_000))]:
        text = iso_utc(ms)
        assert epoch_ms(datetime.fromisoformat(text)) == ms


def test_iso_utc_keeps_what_it_spelled() -> None:
    # A reply spells the same times again and again: the second time is the text kept.
    ms = 1_764_820_622_123
    first = iso_utc(ms)
    assert iso_utc(ms) is first
    assert iso_utc(ms + 1) == "2025-12-04T03:57:02.124Z"
