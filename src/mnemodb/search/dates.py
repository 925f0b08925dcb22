"""The time a question names, as a window of creation times.

A question such as "what did Nate cook on 9 November, 2022?", "where did Joanna travel in
July 2022?" or "what did John do last week?" names a time, and the memories written at
that time are the ones it is about: a memory is written when its event is told, at the
event or soon after it ("I dyed my hair last week"). `time_window` reads the calendar
expressions of a query (a day, a month, a year, a season, and a few relative ones:
yesterday, last week/month/year, last <month>, N days/weeks/months ago) and gives the
window from the start of the earliest to the end of the latest, extended by
`TOLD_WITHIN` after its end: the span in which an event is usually still told as recent
("last Friday", "last week"). Expressions it does not know are left alone; the words of
the query still match the text as before. Times are UTC, as creation times are stored.
"""

from __future__ import annotations

import functools
import re
from datetime import UTC, date, datetime, timedelta

__all__ = ["TOLD_WITHIN", "asks_when", "named_span", "tells_time", "time_window", "told_within"]

TOLD_WITHIN = timedelta(days=7)
"""How long after the named time a memory may be written and still be about it."""

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_SEASONS = {"spring": (3, 3), "summer": (6, 3), "autumn": (9, 3), "fall": (9, 3), "winter": (12, 3)}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\b\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)\b"
_SEP = r"[\s,]*"


@functools.cache
def _patterns() -> list[tuple[str, re.Pattern[str]]]:
    """The expressions `time_window` reads, by kind, longest first: compiled on its first
    call rather than when a server starts, which may never be asked about a time."""
    return [
        ("day", re.compile(rf"\b{_DAY}(?:\s+of)?\s+{_MONTH}{_SEP}{_YEAR}", re.I)),
        ("day", re.compile(rf"\b{_MONTH}\s*{_DAY}\b{_SEP}{_YEAR}", re.I)),
        ("month", re.compile(rf"\b{_MONTH}{_SEP}{_YEAR}", re.I)),
        ("season", re.compile(r"\b(?P<season>" + "|".join(_SEASONS) + rf")(?:\s+of)?\s+{_YEAR}", re.I)),
        ("lastmonth", re.compile(rf"\b(?:last|in|during|this)\s+{_MONTH}(?!{_SEP}\d)", re.I)),
        ("year", re.compile(rf"\b(?:in|during|of|since|by)\s+{_YEAR}", re.I)),
        (
            "ago",
            re.compile(r"\b(?P<n>\d+|a|an|one|two|three|four|five|six)\s+(?P<unit>day|week|month)s?\s+ago\b", re.I),
        ),
        ("relative", re.compile(r"\b(?P<rel>yesterday|today|(?:last|this)\s+(?:week|weekend|month|year))\b", re.I)),
    ]


_ALSO_WORDS = frozenset({"may", "march", "mar"})
"""Month names that are also everyday words ("this may help", "in march order"): without a
year beside them they name a month only when capitalised."""
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


def _month_span(year: int, month: int, months: int = 1) -> tuple[date, date]:
    start = date(year, month, 1)
    end_month = month - 1 + months
    return start, date(year + end_month // 12, end_month % 12 + 1, 1)


def _span(kind: str, match: re.Match[str], today: date) -> tuple[date, date] | None:
    """The days [start, end) one expression names, or None when it names no real date."""
    groups = match.groupdict()
    try:
        if kind == "day":
            day = date(int(groups["year"]), _MONTHS[groups["month"].lower()], int(groups["day"]))
            return day, day + timedelta(days=1)
        if kind == "month":
            return _month_span(int(groups["year"]), _MONTHS[groups["month"].lower()])
        if kind == "season":
            first, months = _SEASONS[groups["season"].lower()]
            return _month_span(int(groups["year"]), first, months)
        if kind == "year":
            year = int(groups["year"])
            return date(year, 1, 1), date(year + 1, 1, 1)
    except ValueError:
        return None
    if kind == "lastmonth":
        if groups["month"].lower() in _ALSO_WORDS and not groups["month"][0].isupper():
            return None
        # The latest such month that has begun: "in May", asked in March, is last May.
        month = _MONTHS[groups["month"].lower()]
        year = today.year if month <= today.month else today.year - 1
        return _month_span(year, month)
    if kind == "ago":
        count = _NUMBERS.get(groups["n"].lower()) or int(groups["n"])
        unit = groups["unit"].lower()
        days = count * {"day": 1, "week": 7, "month": 30}[unit]
        around = today - timedelta(days=days)
        half = timedelta(days={"day": 1, "week": 4, "month": 15}[unit])
        return around - half, around + half
    rel = " ".join(groups["rel"].lower().split())
    if rel == "yesterday":
        return today - timedelta(days=1), today
    if rel == "today":
        return today, today + timedelta(days=1)
    if rel in ("last week", "last weekend"):
        return today - timedelta(days=14), today
    if rel in ("this week", "this weekend"):
        return today - timedelta(days=7), today + timedelta(days=1)
    if rel == "last month":
        return today - timedelta(days=61), today
    if rel == "this month":
        return today - timedelta(days=31), today + timedelta(days=1)
    if rel == "this year":
        return date(today.year, 1, 1), today + timedelta(days=1)
    return date(today.year - 1, 1, 1), date(today.year, 1, 1)  # last year


def time_window(query: str, now: int) -> tuple[int, int] | None:
    """The creation times [from, to) in ms of the memories that the calendar expressions
    in `query` point at, asked at `now` (ms), or None when it names no time."""
    return told_within(named_span(query, now))


def told_within(span: tuple[int, int] | None) -> tuple[int, int] | None:
    """The creation times [from, to) in ms of the memories that may tell of the times
    `span` (`named_span`'s): `time_window` of a query whose span is already read."""
    return None if span is None else (span[0], span[1] + int(TOLD_WITHIN.total_seconds() * 1000))


def named_span(text: str, now: int) -> tuple[int, int] | None:
    """The times [from, to) in ms that the calendar expressions of `text` name, read at
    `now` (ms): "last month" in a text written on 18 April 2023 is March 2023. None when
    it names no time."""
    today = datetime.fromtimestamp(now / 1000, UTC).date()
    spans: list[tuple[date, date]] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _patterns():
        for match in pattern.finditer(text):
            # A longer expression found first ("9 November, 2022") owns its words.
            if any(match.start() < end and start < match.end() for start, end in taken):
                continue
            span = _span(kind, match, today)
            if span is not None:
                spans.append(span)
                taken.append(match.span())
    if not spans:
        return None
    start = min(s for s, _ in spans)
    end = max(e for _, e in spans)

    def ms(day: date) -> int:
        return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000)

    return ms(start), ms(end)


_WEEKDAYS = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday"


@functools.cache
def _asks_when() -> re.Pattern[str]:
    # Compiled on first use, as `_patterns` is: a start need not pay for it.
    return re.compile(r"\b(?:when|since when|how long|(?:what|which) (?:year|month|week|day|date|time|season))\b", re.I)


@functools.cache
def _time_told() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """What `tells_time` looks for: any case, then "May" and "March" only capitalised."""
    return (
        re.compile(
            r"\b(?:yesterday|today|tonight|tomorrow|recently|ago|weekend|"
            rf"(?:last|next|this|past)\s+(?:week|month|year|night|time|spring|summer|fall|autumn|winter|{_WEEKDAYS})|"
            rf"{_WEEKDAYS}|january|february|april|june|july|august|september|october|november|december|"
            r"(?:19|20)\d\d|\d{1,2}(?:st|nd|rd|th))\b",
            re.I,
        ),
        re.compile(r"\b(?:May|March)\b"),
    )


def asks_when(query: str) -> bool:
    """Whether `query` asks for a time ("When did Jon ...?", "How long has ...?", "Which
    year ...?"), rather than naming one (see `time_window`)."""
    return _asks_when().search(query) is not None


def tells_time(text: str) -> bool:
    """Whether `text` says when something happened or will: a relative time ("yesterday",
    "last week", "next month", "two weeks ago"), a weekday, a month, a year or a day of
    the month ("the 15th"). "May" and "March" count only capitalised ("this may help")."""
    any_case, capitalised = _time_told()
    return any_case.search(text) is not None or capitalised.search(text) is not None
