"""ULIDs as text: the encoding every write uses, checked against the definition."""

from __future__ import annotations

import random

from mnemodb.model.ids import _encode, is_ulid, new_ulid, parse_ulid, ulid_at

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
