"""ULIDs as text: the encoding every write uses, checked against the definition."""

from __future__ import annotations

import random
import time

import pytest

from mnemodb.model import ids
from mnemodb.model.ids import InvalidId, _encode, is_ulid, new_ulid, new_ulids, parse_ulid, ulid_at

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def _by_definition(value: int) -> str:
    """26 Crockford base32 digits, most significant first, five bits each."""
    return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


def test_ids_spell_their_time_and_are_canonical() -> None:
    rng = random.Random(18)
    for ms in (0, 1, 1_700_000_000_000, (1 << 48) - 1, *(rng.randrange(1 << 48) for _ in range(200))):
        text = ulid_at(ms)
        assert is_ulid(text) and parse_ulid(text) == text
        assert text[:10] == _by_definition(ms << 80)[:10]


def test_new_ids_increase() -> None:
    made = [new_ulid() for _ in range(2_000)]
    assert made == sorted(made) and len(set(made)) == len(made)
    assert all(parse_ulid(text) == text for text in made)


def test_encoding_is_the_definition() -> None:
    rng = random.Random(18)
    values = [0, 1, 31, 32, (1 << 128) - 1, (1 << 130) - 1, *(rng.getrandbits(128) for _ in range(500))]
    assert [_encode(v) for v in values] == [_by_definition(v) for v in values]


def test_a_canonical_id_parses_as_itself_and_any_other_spelling_to_it() -> None:
    rng = random.Random(18)
    for value in (0, (1 << 128) - 1, *(rng.getrandbits(128) for _ in range(300))):
        text = _by_definition(value)
        assert parse_ulid(text) == text
        assert parse_ulid(text.lower()) == text
        assert parse_ulid(text.replace("0", "O").replace("1", "I")) == text
    for wrong in ("8" + "0" * 25, "0" * 25, "0" * 27, "0" * 25 + "U", "0" * 25 + "!", "0" * 25 + "\u0661"):
        with pytest.raises(InvalidId):
            parse_ulid(wrong)


def test_ids_made_together_are_those_made_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """In order, after every id made before and before every id made after; across the
    1,024 values their last two characters take, and past the largest random part."""
    before = new_ulid()
    made = new_ulids(3_000)
    after = new_ulid()
    assert [before, *made, after] == sorted({before, *made, after})
    assert new_ulids(0) == []
    rng = random.Random(18)
    generator = ids._Generator()
    monkeypatch.setattr(ids, "_generator", generator)
    later = time.time_ns() // 1_000_000 + 10**9  # a millisecond the clock has not reached
    for start in (0, 1020, (1 << 79) + 5, *(rng.getrandbits(79) for _ in range(20))):
        generator._last_ms, generator._last_random = later, start
        assert new_ulids(2_100) == [_by_definition((later << 80) | (start + 1 + i)) for i in range(2_100)]
    generator._last_ms, generator._last_random = later, (1 << 80) - 3
    near_the_end = new_ulids(5)
    assert near_the_end == sorted(near_the_end) and all(t > _by_definition((later + 1) << 80) for t in near_the_end)
