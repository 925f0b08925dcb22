"""Files that are not mnemodb databases are refused, named, and left as they were."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from mnemodb.engine import Engine, EngineError


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_topodb_redb_file_is_refused_with_a_hint_and_left_untouched(tmp_path: Path) -> None:
    # A redb file starts with the bytes "redb"; what follows does not matter here.
    path = tmp_path / "agent.redb"
    path.write_bytes(b"redb\x1a\x0a\xa9\x0d" + bytes(range(256)) * 64)
    before = _digest(path)
    with pytest.raises(EngineError) as caught:
        Engine.open(str(path))
    message = str(caught.value)
    assert "topodb-mcp redb file" in message and "--db" in message
    assert _digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agent.redb"]


def test_another_file_is_refused_without_the_hint(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"plain text, not a database " * 200)
    before = _digest(path)
    with pytest.raises(EngineError) as caught:
        Engine.open(str(path))
    assert "redb" not in str(caught.value)
    assert _digest(path) == before
