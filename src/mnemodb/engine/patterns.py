"""Callers' regular expressions: JavaScript's syntax and meaning, at a cost known before
the compiler sees them.

Knowledge-graph clients send patterns written for JavaScript's `new RegExp(pattern, "i")`.
They run on the `regex` module, which can stop a match at a time limit, but whose syntax is
larger than JavaScript's: inline flags (`(?x)` turns on verbose mode, where white space and
`#` comments vanish, so `a{1 0 0}` becomes a hundred-step repeat), `{,n}` repeats, fuzzy
matching (`{e<=2}`), `\\p{...}`, recursion. A cost guard that reads the caller's text sees
one pattern while the compiler sees another. So a pattern is parsed once, the way
JavaScript parses it (refusing what JavaScript refuses, with its messages), and written
out again in a small subset of `regex` syntax with the same meaning; its cost is counted
on what is written out, which is all the compiler ever sees. Nothing the caller writes can
switch on a flag.

The cost that matters is the compiler's: `regex` writes a counted repeat's body out once
per count (`(a{1000}){1000}` is a million steps, and a compile holds the GIL, so one such
pattern stalls every request of the process for seconds and keeps gigabytes). Compiled
patterns are not cached either: each caller's pattern would stay in memory for good.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from mnemodb.model.errors import InvalidArgument
from mnemodb.model.value import Value

# `regex` is imported by `compile_js`, the one place that needs it: a server whose callers
# never give a pattern starts without it, 13 ms sooner.
if TYPE_CHECKING:
    import regex

__all__ = ["MAX_PATTERN_STEPS", "JsPattern", "compile_js", "translate_js"]

# A step is one character the compiler writes out: about 110 bytes of compiled pattern
# (case-insensitive) and half a microsecond; 100,000 steps compile in about 50 ms into 11 MB.
MAX_PATTERN_STEPS = 100_000
# What a step is taken to cost when fitting a compile into a call's time left: twice what
# was measured, for slower machines.
COMPILE_SECONDS_PER_STEP = 1e-6
# `regex` refuses a count past this; no text is that long, so a larger upper bound means none.
_LARGEST_COUNT = 4_294_967_294
# A count of more digits than this is past any budget, whatever its digits (and int()
# refuses 4,300 or more).
_MAX_COUNT_DIGITS = 10
_PAST_ANY_BUDGET = 10**11

# JavaScript's white space and line terminators (`\s`), as ranges: the compiler writes each
# range out once, so ten members, not 25 characters.
_JS_SPACE = (
    (0x09, 0x0D),
    (0x20, 0x20),
    (0xA0, 0xA0),
    (0x1680, 0x1680),
    (0x2000, 0x200A),
    (0x2028, 0x2029),
    (0x202F, 0x202F),
    (0x205F, 0x205F),
    (0x3000, 0x3000),
    (0xFEFF, 0xFEFF),
)
# The line terminators `.` stops at.
_LINE_TERMINATORS = ((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))
_HEX = frozenset("0123456789abcdefABCDEF")
_OCTAL = frozenset("01234567")
_DIGITS = frozenset("0123456789")
_ASCII_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_ASCII_ALNUM = _ASCII_LETTERS | _DIGITS


def _char(code: int) -> str:
    """One code point as `regex` reads it literally anywhere: letters and digits as they
    are, anything else by number (so no character is ever syntax)."""
    ch = chr(code)
    if ch in _ASCII_ALNUM:
        return ch
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _ranges(ranges: tuple[tuple[int, int], ...]) -> str:
    return "".join(_char(low) if low == high else f"{_char(low)}-{_char(high)}" for low, high in ranges)


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class _Set(Value):
    """Members of a character class: as written inside `[...]`, and how many they are."""

    text: str
    members: int


# The class escapes, as members of a set and as whole atoms (JavaScript's: ASCII digits and
# word characters, its own white space).
_SET_ESCAPES = {
    "d": _Set("0-9", 1),
    "w": _Set("A-Za-z0-9_", 4),
    "s": _Set(_ranges(_JS_SPACE), len(_JS_SPACE)),
}
# Inside a set, a negated class escape keeps `regex`'s meaning (Unicode digits, word
# characters and white space rather than JavaScript's): a set cannot hold the complement
# of another.
_NEGATED_SET_ESCAPES = {"D": _Set("\\D", 1), "W": _Set("\\W", 1), "S": _Set("\\S", 1)}
_ATOM_ESCAPES = {
    **{name: (f"[{member.text}]", member.members) for name, member in _SET_ESCAPES.items()},
    **{name.upper(): (f"[^{member.text}]", member.members) for name, member in _SET_ESCAPES.items()},
}
_CONTROL_ESCAPES = {"f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B}
_ANY_BUT_LINE_END = (f"[^{_ranges(_LINE_TERMINATORS)}]", len(_LINE_TERMINATORS))
_ANYTHING = "[\\u0000-\\U0010ffff]"
_NOTHING = "[^\\u0000-\\U0010ffff]"
# What the compiler writes for a capturing group and a back-reference, besides their text,
# in steps (measured: about 230 bytes each).
_CAPTURE_STEPS = 2
_REFERENCE_STEPS = 2


class PatternSyntaxError(ValueError):
    """A pattern JavaScript would refuse; the message is the one V8 gives."""


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class JsPattern(Value):
    """A JavaScript pattern written out for `regex`, and what compiling it costs."""

    source: str
    """What the caller wrote."""
    translated: str
    """The same pattern in the subset of `regex` syntax the compiler is given."""
    steps: int
    """About how many steps compiling `translated` writes out: a character one, a class
    one per member, a counted repeat multiplies what it repeats by its smallest count (plus
    one when more may follow; nesting multiplies again), sequences and alternatives add up."""


@dataclasses.dataclass(eq=False, repr=False)
class _Group:
    """An open group: what it writes out, its cost so far and how it may be repeated."""

    closing: str
    quantifiable: bool  # whether a quantifier may follow the closed group
    out: list[str] = dataclasses.field(default_factory=list)
    done: int = 0  # steps of everything before the last atom
    last: int = 0  # steps of the last atom (what a quantifier would repeat)
    repeatable: bool = False  # whether the last thing written is an atom a quantifier may follow
    number: int = 0  # a capturing group's number (0 for others)
    name: str = ""  # a named group's name

    def atom(self, text: str, steps: int = 1, *, repeatable: bool = True) -> None:
        self.done += self.last
        self.out.append(text)
        self.last = steps
        self.repeatable = repeatable

    @property
    def steps(self) -> int:
        return self.done + self.last


class _Translator:
    """One pass over a JavaScript pattern (non-Unicode mode, with the web-compatibility
    syntax of ECMAScript's Annex B that every browser and Node accept)."""

    def __init__(self, source: str) -> None:
        self.p = source
        self.i = 0
        self.groups, self.names = _count_groups(source)
        self.stack = [_Group(closing="", quantifiable=False)]
        self.opened = 0  # capturing groups opened so far
        self.named: set[str] = set()

    @staticmethod
    def fail(reason: str) -> PatternSyntaxError:
        return PatternSyntaxError(reason)

    def run(self) -> JsPattern:
        p = self.p
        while self.i < len(p):
            ch = p[self.i]
            top = self.stack[-1]
            if ch == "\\":
                self.escape(top)
            elif ch == "(":
                self.open_group()
            elif ch == ")":
                self.close_group()
            elif ch == "|":
                self.i += 1
                top.atom("|", repeatable=False)
            elif ch in "*+?":
                self.i += 1
                self.quantify(top, ch, 0, None if ch != "?" else 1)
            elif ch == "{":
                self.brace(top)
            elif ch == "[":
                top.atom(*self.char_class())
            elif ch == ".":
                self.i += 1
                top.atom(*_ANY_BUT_LINE_END)
            elif ch == "^":
                self.i += 1
                top.atom("^", repeatable=False)
            elif ch == "$":
                self.i += 1
                top.atom("\\Z", repeatable=False)
            else:
                self.i += 1
                top.atom(_char(ord(ch)))
        if len(self.stack) > 1:
            raise self.fail("Unterminated group")
        root = self.stack[0]
        return JsPattern(p, "".join(root.out), root.steps)

    # -- groups and quantifiers -----------------------------------------------------------

    def open_group(self) -> None:
        p, i = self.p, self.i
        if not p.startswith("(?", i):
            self.i += 1
            self.opened += 1
            self.stack.append(_Group(closing=")", quantifiable=True, out=["("], number=self.opened))
            return
        if p.startswith("(?:", i):
            self.i += 3
            self.stack.append(_Group(closing=")", quantifiable=True, out=["(?:"]))
            return
        if p.startswith(("(?=", "(?!"), i):
            self.i += 3
            # Annex B lets a lookahead be repeated (to no effect), as `regex` does.
            self.stack.append(_Group(closing=")", quantifiable=True, out=[p[i : i + 3]]))
            return
        if p.startswith(("(?<=", "(?<!"), i):
            self.i += 4
            self.stack.append(_Group(closing=")", quantifiable=False, out=[p[i : i + 4]]))
            return
        if p.startswith("(?<", i):
            end = p.find(">", i + 3)
            name = p[i + 3 : end] if end != -1 else ""
            if not _is_group_name(name):
                raise self.fail("Invalid capture group name")
            if name in self.named:
                raise self.fail("Duplicate capture group name")
            self.named.add(name)
            self.i = end + 1
            self.opened += 1
            group = _Group(closing=")", quantifiable=True, out=[f"(?P<{name}>"], number=self.opened, name=name)
            self.stack.append(group)
            return
        # Inline flags, comments, atomic groups, recursion, conditionals, branch resets:
        # `regex` syntax, none of it JavaScript's.
        raise self.fail("Invalid group")

    def close_group(self) -> None:
        if len(self.stack) == 1:
            raise self.fail("Unmatched ')'")
        self.i += 1
        group = self.stack.pop()
        parent = self.stack[-1]
        steps = group.steps + (_CAPTURE_STEPS if group.number else 0)
        parent.atom("".join(group.out) + group.closing, steps, repeatable=group.quantifiable)

    def brace(self, top: _Group) -> None:
        """`{m}`, `{m,}` or `{m,n}` is a quantifier; any other `{` is a literal brace."""
        p = self.p
        j = self.i + 1
        low_end = _digits_end(p, j)
        if low_end > j and p[low_end : low_end + 1] == "}":
            self.i = low_end + 1
            low = _count(p[j:low_end])
            self.quantify(top, "", low, low)
            return
        if low_end > j and p[low_end : low_end + 1] == ",":
            high_end = _digits_end(p, low_end + 1)
            if p[high_end : high_end + 1] == "}":
                self.i = high_end + 1
                low = _count(p[j:low_end])
                high = _count(p[low_end + 1 : high_end]) if high_end > low_end + 1 else None
                if high is not None and high < low:
                    raise self.fail("numbers out of order in {} quantifier")
                if high is not None and high > _LARGEST_COUNT:
                    high = None
                self.quantify(top, "", low, high)
                return
        self.i += 1
        top.atom(_char(ord("{")))

    def quantify(self, top: _Group, symbol: str, low: int, high: int | None) -> None:
        if not top.repeatable:
            raise self.fail("Nothing to repeat")
        lazy = self.p.startswith("?", self.i)
        if lazy:
            self.i += 1
        if symbol:
            written = symbol
        elif high == low:
            written = f"{{{low}}}"
        else:
            written = f"{{{low},{'' if high is None else high}}}"
        top.out.append(written + ("?" if lazy else ""))
        # `regex` writes the body out `low` times, and once more for a loop over the rest:
        # `a{0,100000}` is one step, `a{100000}` a hundred thousand.
        top.last *= max(1, low + (0 if high == low else 1))
        top.repeatable = False

    # -- escapes --------------------------------------------------------------------------

    def escape(self, top: _Group) -> None:
        p = self.p
        if self.i + 1 >= len(p):
            raise self.fail("\\ at end of pattern")
        ch = p[self.i + 1]
        if ch in "bB":
            self.i += 2
            top.atom("\\" + ch, repeatable=False)
        elif ch in _ATOM_ESCAPES:
            self.i += 2
            top.atom(*_ATOM_ESCAPES[ch])
        elif ch in "123456789" and self.groups:
            end = _digits_end(p, self.i + 1)
            number = _count(p[self.i + 1 : end])
            if number <= self.groups:
                self.i = end
                self.back_reference(top, str(number), f"\\g<{number}>", any(g.number == number for g in self.stack))
            else:
                top.atom(_char(self.character()))
        elif ch == "k" and self.names:
            end = p.find(">", self.i + 3) if p.startswith("<", self.i + 2) else -1
            name = p[self.i + 3 : end] if end != -1 else ""
            if name not in self.names:
                raise self.fail("Invalid named capture referenced")
            self.i = end + 1
            self.back_reference(top, name, f"(?P={name})", any(g.name == name for g in self.stack))
        else:
            top.atom(_char(self.character()))

    @staticmethod
    def reference(group: str, written: str, open_now: bool) -> str:
        """A back-reference with JavaScript's meaning: a group that has not matched (yet),
        or that is still open around the reference, matches as empty, where `regex` would
        fail or refuse the pattern."""
        return "(?:)" if open_now else f"(?({group}){written})"

    def back_reference(self, top: _Group, group: str, written: str, open_now: bool) -> None:
        top.atom(self.reference(group, written, open_now), 0 if open_now else _REFERENCE_STEPS)

    def character(self, *, in_class: bool = False) -> int:
        """The code point an escape at `self.i` (a backslash) stands for, past it. Annex B:
        an escape that means nothing else is the character itself (`\\p` is `p`), an
        incomplete `\\x` or `\\u` is the letter, `\\c` without a letter is a backslash."""
        p = self.p
        ch = p[self.i + 1]
        if ch in _CONTROL_ESCAPES:
            self.i += 2
            return _CONTROL_ESCAPES[ch]
        if ch == "c":
            letter = p[self.i + 2 : self.i + 3]
            if letter and (letter in _ASCII_LETTERS or (in_class and (letter in _DIGITS or letter == "_"))):
                self.i += 3
                return ord(letter) % 32
            self.i += 1  # the backslash alone; the `c` is read next, as itself
            return ord("\\")
        if ch == "x" and len(p) >= self.i + 4 and set(p[self.i + 2 : self.i + 4]) <= _HEX:
            self.i += 4
            return int(p[self.i - 2 : self.i], 16)
        if ch == "u" and len(p) >= self.i + 6 and set(p[self.i + 2 : self.i + 6]) <= _HEX:
            code = int(p[self.i + 2 : self.i + 6], 16)
            self.i += 6
            # A surrogate pair written as two escapes is one character of a Python string.
            if 0xD800 <= code <= 0xDBFF and p.startswith("\\u", self.i):
                low = p[self.i + 2 : self.i + 6]
                if len(low) == 4 and set(low) <= _HEX and 0xDC00 <= int(low, 16) <= 0xDFFF:
                    self.i += 6
                    return 0x10000 + ((code - 0xD800) << 10) + (int(low, 16) - 0xDC00)
            return code
        if ch in _OCTAL:
            # A legacy octal escape: up to three digits, at most 0o377 (`\0` is NUL).
            start = self.i + 1
            longest = 3 if ch in "0123" else 2
            end = start
            while end < len(p) and end - start < longest and p[end] in _OCTAL:
                end += 1
            self.i = end
            return int(p[start:end], 8)
        self.i += 2
        return ord(ch)

    # -- character classes ----------------------------------------------------------------

    def char_class(self) -> tuple[str, int]:
        """A class written out, with how many members the compiler writes for it."""
        p = self.p
        self.i += 1
        negated = p.startswith("^", self.i)
        if negated:
            self.i += 1
        # Each member: a code point, or a class escape's set.
        members: list[int | _Set] = []
        while True:
            if self.i >= len(p):
                raise self.fail("Unterminated character class")
            ch = p[self.i]
            if ch == "]":
                self.i += 1
                break
            if ch == "\\":
                if self.i + 1 >= len(p):
                    raise self.fail("\\ at end of pattern")
                escaped = p[self.i + 1]
                if escaped in _SET_ESCAPES:
                    members.append(_SET_ESCAPES[escaped])
                    self.i += 2
                elif escaped in _NEGATED_SET_ESCAPES:
                    members.append(_NEGATED_SET_ESCAPES[escaped])
                    self.i += 2
                elif escaped == "b":
                    members.append(0x08)
                    self.i += 2
                elif escaped == "-":
                    members.append(ord("-"))
                    self.i += 2
                else:
                    members.append(self.character(in_class=True))
            else:
                members.append(ord(ch))
                self.i += 1
        if not members:
            return (_ANYTHING if negated else _NOTHING), 1
        parts: list[str] = []
        written = 0
        k = 0
        while k < len(members):
            member = members[k]
            dash = k + 2 < len(members) and members[k + 1] == ord("-")
            if dash and isinstance(member, int) and isinstance(members[k + 2], int):
                high = members[k + 2]
                assert isinstance(high, int)
                if high < member:
                    raise self.fail("Range out of order in character class")
                parts.append(f"{_char(member)}-{_char(high)}")
                written += 1
                k += 3
                continue
            if isinstance(member, _Set):
                parts.append(member.text)
                written += member.members
            else:
                parts.append(_char(member))
                written += 1
            k += 1
        return "[" + ("^" if negated else "") + "".join(parts) + "]", written


def _digits_end(text: str, start: int) -> int:
    end = start
    while end < len(text) and text[end] in _DIGITS:
        end += 1
    return end


def _count(digits: str) -> int:
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= _MAX_COUNT_DIGITS else _PAST_ANY_BUDGET


def _is_group_name(name: str) -> bool:
    return bool(name) and (name[0].isalpha() or name[0] in "_$") and all(c.isalnum() or c in "_$" for c in name)


def _count_groups(pattern: str) -> tuple[int, frozenset[str]]:
    """How many capturing groups `pattern` has and their names, as JavaScript counts them
    before parsing (a back-reference may precede its group)."""
    count = 0
    names: set[str] = set()
    i = 0
    in_class = False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(":
            if not pattern.startswith("(?", i):
                count += 1
            elif pattern.startswith("(?<", i) and not pattern.startswith(("(?<=", "(?<!"), i):
                count += 1
                end = pattern.find(">", i + 3)
                if end != -1:
                    names.add(pattern[i + 3 : end])
        i += 1
    return count, frozenset(names)


def translate_js(pattern: str) -> JsPattern:
    """`pattern` (JavaScript syntax) written out for `regex`, with its cost.
    PatternSyntaxError for what JavaScript would refuse."""
    return _Translator(pattern).run()


def compile_js(pattern: str, *, shown: str | None = None, max_steps: int = MAX_PATTERN_STEPS) -> regex.Pattern[str]:
    """`pattern` compiled case-insensitively with JavaScript's meaning, never cached.
    InvalidArgument, in JavaScript's words, for a pattern it would refuse, and for one whose
    repeats would write out more than `max_steps` steps. `shown` is the pattern as the
    caller named it (a preset's name, say), for the messages."""
    named = f"/{pattern if shown is None else shown}/i"
    try:
        js = translate_js(pattern)
    except PatternSyntaxError as exc:
        raise InvalidArgument(f"Invalid regular expression: {named}: {exc}") from None
    if js.steps > max_steps:
        raise InvalidArgument(
            f"Invalid regular expression: {named}: its repeats write out about {js.steps:,} steps, "
            f"at most {max_steps:,}; use a smaller count or * and +"
        )
    import regex

    try:
        return regex.compile(js.translated, regex.IGNORECASE | regex.VERSION0, cache_pattern=False)
    except regex.error as exc:  # a duplicate group name, say
        raise InvalidArgument(f"Invalid regular expression: {named}: {exc}") from None
