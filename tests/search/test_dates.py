"""The time a question names, as a window of creation times (`search.dates`)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from mnemodb.search.dates import TOLD_WITHIN, asks_when, named_span, tells_time, time_window


def ms(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000)


NOW = ms(date(2023, 3, 15))
TOLD = int(TOLD_WITHIN.total_seconds() * 1000)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("What did Nate cook on 9 November, 2022?", date(2022, 11, 9), date(2022, 11, 10)),
        ("What did she paint on October 13, 2023?", date(2023, 10, 13), date(2023, 10, 14)),
        ("Which book did Tim finish on 8th December, 2023?", date(2023, 12, 8), date(2023, 12, 9)),
        ("Where was the picture shared on December 1,2023 taken?", date(2023, 12, 1), date(2023, 12, 2)),
        ("Where did Joanna travel to in July 2022?", date(2022, 7, 1), date(2022, 8, 1)),
        ("What happened in Dec 2022?", date(2022, 12, 1), date(2023, 1, 1)),
        ("What state did she visit in summer 2021?", date(2021, 6, 1), date(2021, 9, 1)),
        ("How many times did he go to the beach in 2022?", date(2022, 1, 1), date(2023, 1, 1)),
        # A month without a year is the latest one that has begun by the time of asking.
        ("Which spot did Joanna visit in May?", date(2022, 5, 1), date(2022, 6, 1)),
        ("What did we plan last March?", date(2023, 3, 1), date(2023, 4, 1)),
        ("What did I eat yesterday?", date(2023, 3, 14), date(2023, 3, 15)),
        ("What did we talk about two weeks ago?", date(2023, 2, 25), date(2023, 3, 5)),
        # A day that does not exist still names its month.
        ("What happened on 31 February, 2023?", date(2023, 2, 1), date(2023, 3, 1)),
        # Several times: from the earliest to the latest.
        ("Was it between 1 May, 2022 and 3 June, 2022?", date(2022, 5, 1), date(2022, 6, 4)),
    ],
)
def test_a_named_time_is_its_days_and_the_week_after(query: str, start: date, end: date) -> None:
    assert time_window(query, NOW) == (ms(start), ms(end) + TOLD)


@pytest.mark.parametrize(
    "query",
    [
        "What did Melanie paint?",
        "May I ask what the plan was?",  # "May" begins a question: no "in/last" before it
        "How many 2022 tickets are left?",
        "Will this may be the answer?",  # the verb, not the month
        "Did they march in step?",  # a bare number is no year without "in", "of", ...
    ],
)
def test_no_time_named(query: str) -> None:
    assert time_window(query, NOW) is None


# -- a question asking when, a text saying when ----------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "When did Melanie paint a sunrise?",
        "how long has Nate had his turtles?",
        "Which year did Jon move?",
        "since when?",
    ],
)
def test_a_question_asking_for_a_time(query: str) -> None:
    assert asks_when(query)


@pytest.mark.parametrize("query", ["What did Melanie paint?", "Where was John in July 2023?", "whenever"])
def test_a_question_asking_for_no_time(query: str) -> None:
    assert not asks_when(query)


@pytest.mark.parametrize(
    "text",
    [
        "I got mentored yesterday",
        "we went camping last week",
        "my game there next month",
        "two weeks ago I moved",
        "on Friday we met",
        "in May we met",
        "it was back in 2019",
        "I met them on the 15th",
    ],
)
def test_a_text_saying_when(text: str) -> None:
    assert tells_time(text)


@pytest.mark.parametrize("text", ["this may help", "I love painting", "a 500-piece puzzle", "number 15"])
def test_a_text_saying_no_time(text: str) -> None:
    assert not tells_time(text)


@pytest.mark.parametrize(
    ("text", "written", "start", "end"),
    [
        # Read at the time the text was written, not at the time of the question.
        ("We went to a convention together last month", date(2023, 4, 18), date(2023, 2, 16), date(2023, 4, 18)),
        ("Yesterday was crazy cool", date(2022, 6, 5), date(2022, 6, 4), date(2022, 6, 5)),
        ("I started on 9 November, 2022 and loved it", date(2023, 1, 2), date(2022, 11, 9), date(2022, 11, 10)),
    ],
)
def test_the_time_a_text_names_read_when_it_was_written(text: str, written: date, start: date, end: date) -> None:
    assert named_span(text, ms(written)) == (ms(start), ms(end))
    # The window of creation times a question names is that span and the week after it.
    assert time_window(text, ms(written)) == (ms(start), ms(end) + TOLD)


def test_a_text_naming_no_time_names_no_span() -> None:
    assert named_span("We went to a convention together", NOW) is None
