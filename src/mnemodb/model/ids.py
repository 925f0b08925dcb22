"""ULIDs: the stable identifiers of nodes, edges and scopes.

A ULID is 48 bits of millisecond time and 80 random bits, written as 26 Crockford
base32 characters. Ids made by one process are strictly increasing (the random part
is incremented within one millisecond), so sorting by id sorts by creation order.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time

__all__ = [
    "SHARED",
    "InvalidId",
    "is_ulid",
    "new_ulid",
    "new_ulids",
    "normalize_scope",
    "parse_ulid",
    "ulid_at",
    "ulid_time_ms",
]

SHARED = "shared"
"""The scope every reader may include: memory shared by all agents on one store."""

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_DECODE = {c: i for i, c in enumerate(_ALPHABET)}
# Crockford's aliases: lower case, and I/L/O read as 1/1/0.
_DECODE.update({c.lower(): i for c, i in list(_DECODE.items())})
_DECODE.update({"I": 1, "i": 1, "L": 1, "l": 1, "O": 0, "o": 0})

_MAX_RANDOM = (1 << 80) - 1


class InvalidId(ValueError):
    """A string that is not a ULID."""


class _Generator:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_ms = -1
        self._last_random = 0

    def next(self) -> int:
        with self._lock:
            now = time.time_ns() // 1_000_000
            if now <= self._last_ms:
                # Same (or earlier, if the clock stepped back) millisecond: stay monotonic.
                now = self._last_ms
                rand = self._last_random + 1
                if rand > _MAX_RANDOM:
                    now += 1
                    rand = int.from_bytes(os.urandom(10), "big") >> 1
            else:
                # Top bit clear leaves room to increment many times in one millisecond.
                rand = int.from_bytes(os.urandom(10), "big") >> 1
            self._last_ms, self._last_random = now, rand
            return (now << 80) | rand

    def take(self, count: int) -> tuple[int, int]:
        """`count` (at least 1) values at once, of one millisecond: (its time, the random
        part of the first); the others' follow on by one, as `next` of each would give."""
        with self._lock:
            now = time.time_ns() // 1_000_000
            if now <= self._last_ms:
                now = self._last_ms
                rand = self._last_random + 1
            else:
                rand = int.from_bytes(os.urandom(10), "big") >> 1
            if rand + count - 1 > _MAX_RANDOM:
                now += 1
                rand = int.from_bytes(os.urandom(10), "big") >> 1
            self._last_ms, self._last_random = now, rand + count - 1
            return now, rand


_generator = _Generator()


# Two characters at a time from a table of all 1,024 pairs: an id is made for every write.
_PAIRS = [a + b for a in _ALPHABET for b in _ALPHABET]
_PAIR_SHIFTS = tuple(range(120, -1, -10))


def _encode(value: int) -> str:
    return "".join([_PAIRS[(value >> shift) & 1023] for shift in _PAIR_SHIFTS])


def new_ulid() -> str:
    """A new ULID, greater than every ULID this process made before."""
    return _encode(_generator.next())


# The pairs of characters of a ULID's random part (its last 80 bits) but the last.
_RANDOM_HEAD_SHIFTS = _PAIR_SHIFTS[5:-1]


def new_ulids(count: int) -> list[str]:
    """`count` new ULIDs, in increasing order: what `new_ulid` of each in turn gives, for a
    write of many rows. One lock is taken, and as the ids follow on by one, only their last
    two characters change from one to the next but every 1,024th: the rest is written once
    (a third of the time `new_ulid` takes for each)."""
    ms, first = _generator.take(count) if count > 0 else (0, 0)
    prefix = _encode(ms << 80)[:10]
    out: list[str] = []
    head, high = "", -1
    for rand in range(first, first + max(count, 0)):
        if rand >> 10 != high:
            high = rand >> 10
            head = prefix + "".join([_PAIRS[(rand >> shift) & 1023] for shift in _RANDOM_HEAD_SHIFTS])
        out.append(head + _PAIRS[rand & 1023])
    return out


def ulid_at(ms: int) -> str:
    """A ULID for a past instant (used when importing records that carry their own time)."""
    rand = int.from_bytes(os.urandom(10), "big")
    return _encode((max(0, ms) << 80) | rand)


def parse_ulid(text: str) -> str:
    """Return the canonical (upper-case) form of `text`, or raise `InvalidId`."""
    # Already canonical (upper case, no alias, under 2**128: the first character at most
    # 7), told in C by stripping the alphabet: most ids a call names are ids this server gave.
    if len(text) == 26 and text[0] <= "7" and not text.strip(_ALPHABET):
        return text
    if len(text) != 26:
        raise InvalidId(f"invalid length {len(text)} (a ULID has 26 characters)")
    value = 0
    for ch in text:
        digit = _DECODE.get(ch)
        if digit is None:
            raise InvalidId(f"invalid character {ch!r}")
        value = (value << 5) | digit
    if value >> 128:
        raise InvalidId("value overflows 128 bits")
    return _encode(value)


def is_ulid(text: str) -> bool:
    try:
        parse_ulid(text)
    except InvalidId:
        return False
    return True


def ulid_time_ms(ulid: str) -> int:
    """The millisecond timestamp in a ULID."""
    value = 0
    for ch in parse_ulid(ulid)[:10]:
        value = (value << 5) | _DECODE[ch]
    return value


def normalize_scope(text: str) -> str:
    """`shared` (any case) or a ULID in canonical form; raise `InvalidId` otherwise."""
    if text.strip().lower() == SHARED:
        return SHARED
    return parse_ulid(text.strip())


def content_hash(content: str) -> str:
    """A memory's identity within its scope: sha256 of the raw UTF-8 content, lower-case
    hex (no trimming, no case folding)."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()
