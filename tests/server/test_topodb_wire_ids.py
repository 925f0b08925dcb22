"""The topodb profile's reading of ids: the canonical text topodb-mcp's decoding gives."""

from __future__ import annotations

import random

import pytest

from mnemodb.server.profiles.topodb.wire import ToolError, parse_id, parse_scope, ulid_text, ulid_value

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def _spellings() -> list[str]:
    rng = random.Random(18)
    texts = ["0" * 26, "7" + "Z" * 25, "8" + "0" * 25, "Z" * 26]
    texts += ["".join(rng.choice(_CROCKFORD) for _ in range(26)) for _ in range(300)]
    return texts + [t.lower() for t in texts[:50]] + [t[:13] + t[13:].lower() for t in texts[:50]]


@pytest.mark.parametrize("text", _spellings())
def test_an_id_reads_as_decoded_and_spelled_again(text: str) -> None:
    assert parse_id(text) == ulid_text(ulid_value(text))
    assert parse_scope(text) == ulid_text(ulid_value(text))


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("0" * 25, "invalid length"),
        ("0" * 27, "invalid length"),
        ("0" * 25 + "U", "invalid character"),
        ("0" * 25 + "/", "invalid character"),
        (" " + "0" * 25, "invalid character"),
        ("0" * 12 + "-" + "0" * 13, "invalid character"),
    ],
)
def test_a_malformed_id_is_refused(text: str, reason: str) -> None:
    with pytest.raises(ToolError, match=reason):
        parse_id(text)
