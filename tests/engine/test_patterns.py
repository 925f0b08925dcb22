"""Callers' regular expressions: JavaScript's syntax and meaning, and a compile cost known
from what the compiler is really given.

The cost guard once read the caller's text while the compiler read another pattern: in
`(?x)a{1 0 0 0 0 0 0}` verbose mode drops the spaces, so the compiler wrote out a million
steps the guard never counted. Here a pattern is translated from JavaScript first and its
cost counted on the translation; the property test holds the real compiled size (which
`regex` reports as the object's size) to the count, for patterns drawn from the syntax of
both languages.
"""

from __future__ import annotations

import sys

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemodb.engine import Engine, InvalidArgument
from mnemodb.engine.graph import NewEntity
from mnemodb.engine.patterns import MAX_PATTERN_STEPS, PatternSyntaxError, compile_js, translate_js
from mnemodb.model.records import Entity

# Bytes of compiled pattern per counted step, at most (about 110 for a letter, 165 for a
# class of ranges under case folding), and what an empty pattern takes.
BYTES_PER_STEP = 400
BASE_BYTES = 2000


def matches(pattern: str, text: str) -> bool:
    return compile_js(pattern).search(text) is not None


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        # Verbose mode cannot be switched on, so white space and braces mean themselves.
        ("a{1 0 0}", "a{1 0 0}", True),
        ("a{1 0 0}", "a" * 100, False),
        ("a #comment", "a #comment", True),
        # `regex` repeats and fuzzy matching are JavaScript literals.
        ("a{,3}", "a{,3}", True),
        ("a{,3}", "aaa", False),
        ("a{e<=1}", "b", False),
        ("a{e<=1}", "a{e<=1}", True),
        (r"\p{L}", "p{L}", True),
        (r"\p{L}", "x", False),
        # JavaScript's escapes.
        (r"\x41", "a", True),
        (r"\x4", "x4", True),
        (r"\u00e9", "É", True),
        (r"\ud83d\ude00", "😀", True),
        (r"\cJ", "\n", True),
        (r"\c1", "\\c1", True),
        (r"\0", "\x00", True),
        (r"\101", "A", True),
        (r"[\b]", "\x08", True),
        (r"\d", "٣", False),  # JavaScript's \d is ASCII digits
        (r"\w", "é", False),
        (r"\s", "\u3000", True),
        # Classes, `.` and `$` as JavaScript has them.
        ("[]", "a", False),
        ("[^]", "\n", True),
        (r"[\d-x]", "-", True),
        ("a.b", "a\u2028b", False),
        ("a.b", "a b", True),
        ("x$", "x\n", False),
        ("x$", "x", True),
        # Back-references: to a group not matched yet, or still open, they match as empty.
        (r"(a)\1", "aa", True),
        (r"\1(a)", "a", True),
        (r"(a\1)", "a", True),
        (r"(?<y>a)\k<y>", "aa", True),
        (r"(?<y>a\k<y>)", "a", True),
        (r"\k", "k", True),  # without named groups, \k is a k
        (r"\2(a)", "\x02a", True),  # more than the groups: an octal escape
        ("a{2}?", "aa", True),
        ("(?=a)*a", "a", True),
        ("", "anything", True),
    ],
)
def test_patterns_mean_what_they_mean_in_javascript(pattern: str, text: str, expected: bool) -> None:
    assert matches(pattern, text) is expected


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        # The review's pattern, and every other group syntax of `regex` that is not JavaScript's.
        ("(?x)a{1 0 0 0 0 0 0}", "Invalid group"),
        ("(?x:a{1 0 0})", "Invalid group"),
        ("(?i)a", "Invalid group"),
        ("(?-i:a)", "Invalid group"),
        ("(?#comment)", "Invalid group"),
        ("(?V1)a", "Invalid group"),
        ("(?r)a", "Invalid group"),
        ("(?>a)", "Invalid group"),
        ("(?|a|b)", "Invalid group"),
        ("(a)(?(1)b)", "Invalid group"),
        ("(a(?R)?)", "Invalid group"),
        ("(a)(?1)", "Invalid group"),
        ("(?P<n>a)", "Invalid group"),
        ("(?<n>a)(?&n)", "Invalid group"),
        # And what JavaScript refuses besides, in V8's words.
        ("*a", "Nothing to repeat"),
        ("a**", "Nothing to repeat"),
        ("^*", "Nothing to repeat"),
        (r"\b+", "Nothing to repeat"),
        ("(?<=a)*", "Nothing to repeat"),
        ("a|{2}", "Nothing to repeat"),
        ("(a", "Unterminated group"),
        ("a)", "Unmatched ')'"),
        ("[a", "Unterminated character class"),
        ("a\\", "\\ at end of pattern"),
        ("a{3,2}", "numbers out of order in {} quantifier"),
        ("[z-a]", "Range out of order in character class"),
        ("(?<1a>x)", "Invalid capture group name"),
        ("(?<n>a)(?<n>b)", "Duplicate capture group name"),
        (r"(?<a>x)\k<b>", "Invalid named capture referenced"),
    ],
)
def test_what_javascript_refuses_is_refused_in_its_words(pattern: str, reason: str) -> None:
    with pytest.raises(PatternSyntaxError) as refused:
        translate_js(pattern)
    assert str(refused.value) == reason
    with pytest.raises(InvalidArgument) as told:
        compile_js(pattern)
    assert str(told.value) == f"Invalid regular expression: /{pattern}/i: {reason}"


@pytest.mark.parametrize(
    ("pattern", "steps"),
    [
        ("abc", 3),
        (r"\d{4}-\d{2}-\d{2}", 10),
        ("[a-z]{5}", 5),
        ("[]a]{3}", 5),  # an empty class, a, then ] three times
        (r"\p{L}{10}", 13),  # p, {, L, then } ten times
        ("a{1 0 0 0 0 0 0}", 16),  # literal braces and spaces: no repeat at all
        ("a{,1000000}", 11),
        ("a{1000000000}", 10**9),
        ("(?:a{1000}){1000}", 10**6),
        ("(?:(?:a{100}){100}){100}", 10**6),
        ("(a{1000}){1000}", 1_002_000),  # a capturing group writes out two steps more
        ("a{0,1000000}", 1),  # the body once, for the loop over the optional rest
        ("a{5,99999999999}", 6),
        ("(?:a|b{50000}){3}", 150_006),
        ("(?=a{1000}){1000}", 10**6),
        ("a{100}b{100}c{100}", 300),
        ("x{2,}", 3),
        ("x{2,7}", 3),
        (r"\w{10}", 40),  # a class is a step per member it writes out
        (r"\s", 10),
        (".", 3),
        ("a{" + "9" * 5000 + "}", 10**11),  # past int()'s 4,300 digits
    ],
)
def test_steps_multiply_nested_repeats_and_add_sequences(pattern: str, steps: int) -> None:
    assert translate_js(pattern).steps == steps


def test_a_pattern_past_the_budget_is_refused_before_it_is_compiled() -> None:
    with pytest.raises(InvalidArgument, match=f"about 1,000,000 steps, at most {MAX_PATTERN_STEPS:,}"):
        compile_js("(?:(?:a{100}){100}){100}")
    with pytest.raises(InvalidArgument, match="about 11 steps, at most 10;"):
        compile_js("a{11}", max_steps=10)
    assert compile_js("a{10}", max_steps=10).search("a" * 10)


def test_callers_patterns_are_not_kept_in_the_module_cache() -> None:
    cache = sys.modules[regex.compile.__module__]._cache
    before = len(cache)
    for n in range(50):
        compile_js(f"never seen before {n}")
    assert len(cache) == before


_PIECES = (
    st.sampled_from(
        [
            *"ak.|*+?^$()[]{}-,0123456789\\dwsbBxuc# ?:=!<>é\n",
            *("(?:", "(?=", "(?!", "(?<=", "(?<!", "(?<n>", "(?<é>", "\\k<n>", "\\1", "\\2", "[^"),
            *("{2}", "{3,5}", "{10}", "{1 0}", "{,9}", "{e<=1}", "(?x)", "(?#", "\\p{L}", "\\u00e9", "\\ud83d\\ude00"),
            *("\\ud83d", "\\c", "\\x4", "\\0", "\\8", "{99999}", "{0,99999}"),
        ]
    )
    | st.characters()
)


@settings(max_examples=3000, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(st.lists(_PIECES, max_size=30).map("".join))
def test_the_compiled_size_follows_the_counted_steps(pattern: str) -> None:
    """Whatever is written, either it is refused as JavaScript would refuse it, or it
    compiles (a translation is always valid `regex` syntax) to at most a fixed size per
    counted step: nothing the count misses can grow the compiled pattern."""
    try:
        translated = translate_js(pattern)
    except PatternSyntaxError:
        return
    if translated.steps > 20_000:
        with pytest.raises(InvalidArgument):
            compile_js(pattern, max_steps=20_000)
        return
    compiled = compile_js(pattern)
    assert compiled.__sizeof__() <= BASE_BYTES + BYTES_PER_STEP * translated.steps, translated
    compiled.search("aé\n😀 a{1 0}" * 3, timeout=0.5)


def test_the_engine_refuses_a_verbose_mode_pattern_and_reads_its_text_literally(eng: Engine) -> None:
    eng.graph.create_entities([NewEntity("Ada", "person", ("a{1 0 0} in braces",)), NewEntity("Bob", "person", ("a",))])
    with pytest.raises(
        InvalidArgument, match=r"^Invalid regular expression: /\(\?x\)a\{1 0 0 0 0 0 0\}/i: Invalid group$"
    ):
        eng.graph.with_observations_matching("(?x)a{1 0 0 0 0 0 0}")
    assert [e.name for e in eng.graph.with_observations_matching("a{1 0 0}")] == ["Ada"]
    found = eng.items.search(pattern="A{1 0 0} IN", kinds=("entity",)).found
    assert [f.item.name for f in found if isinstance(f.item, Entity)] == ["Ada"]


def test_a_compile_must_fit_in_what_is_left_of_the_calls_time(eng: Engine) -> None:
    """A compile cannot be stopped once begun: under a time limit, a pattern whose compile
    would outlast what is left is refused before it starts, with the budget that was left."""
    eng.graph.create_entities([NewEntity("Ada", "person", ("a" * 3000,))])
    assert [e.name for e in eng.graph.with_observations_matching("a{3000}")] == ["Ada"]
    # 2 ms: about 2,000 steps of compiling.
    with eng.time_limit(0.002), pytest.raises(InvalidArgument, match=r"about 3,000 steps, at most [0-9,]+;"):
        eng.graph.with_observations_matching("a{3000}")
    with eng.time_limit(30):
        assert [e.name for e in eng.graph.with_observations_matching("a{3000}")] == ["Ada"]
    assert eng.time_left() is None
