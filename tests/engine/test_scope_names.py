"""Names for scopes: a person's `team-a` stands for its ULID wherever a scope is named, and
under a token a name says nothing about scopes the token does not read."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mnemodb.engine import Engine, InvalidArgument
from mnemodb.engine.tokens import Grant, granted
from mnemodb.model.errors import Conflict, Forbidden
from mnemodb.model.ids import is_ulid
from stores import store_location
from support import server_env


def test_a_name_stands_for_its_scope_everywhere(eng: Engine) -> None:
    name, scope = eng.name_scope("team-a")
    assert name == "team-a" and is_ulid(scope)
    assert eng.scope("team-a") == eng.scope("Team-A") == scope  # names ignore case
    stored = eng.memories.store("kept in team a", scope="team-a").memory
    assert stored.scope == scope
    assert [h.memory.content for h in eng.memories.search("kept", scopes=["team-a"])] == ["kept in team a"]
    assert eng.memories.search("kept", scopes=["shared"]) == []
    token, _ = eng.tokens.create("ci", write_scope="team-a", read_scopes=["shared"])
    assert (token.write_scope, token.read_scopes) == (scope, (scope, "shared"))
    assert eng.scope_names()[0][:2] == ("team-a", scope)


def test_an_existing_scope_can_be_named_and_names_are_checked(eng: Engine) -> None:
    existing = "01HV7N8Q3Y2J6W5X4Z9A0B1C2D"
    eng.memories.store("already there", scope=existing)
    assert eng.name_scope("ops", existing) == ("ops", existing)
    assert [h.memory.content for h in eng.memories.search("already", scopes=["ops"])] == ["already there"]
    with pytest.raises(Conflict, match='the name "OPS" is taken'):
        eng.name_scope("OPS")
    with pytest.raises(Conflict, match='is named "ops" already'):
        eng.name_scope("ops-2", existing)
    for bad in ("shared", "SHARED", existing, "-x", "a b", "", "x" * 65, "café"):
        with pytest.raises(InvalidArgument, match="invalid scope name"):
            eng.name_scope(bad)
    with pytest.raises(InvalidArgument, match='invalid scope "nobody": no scope has that name'):
        eng.scope("nobody")


def test_under_a_token_another_teams_name_is_an_unknown_name(eng: Engine) -> None:
    _, mine = eng.name_scope("team-a")
    _, theirs = eng.name_scope("team-b")
    token, _ = eng.tokens.create("a", write_scope=mine)
    with granted(Grant.of(token)):
        assert eng.scope("team-a") == mine
        with pytest.raises(InvalidArgument) as hidden:
            eng.scope("team-b")
        with pytest.raises(InvalidArgument) as missing:
            eng.scope("team-z")
        assert str(hidden.value).replace("team-b", "X") == str(missing.value).replace("team-z", "X")
        assert theirs not in str(hidden.value)
        with pytest.raises(Forbidden):  # the ULID itself is refused as any unreadable scope is
            eng.memories.search("x", scopes=[theirs])


def test_the_command_line_creates_and_lists_names_and_takes_them_as_scopes(tmp_path: Path) -> None:
    db = store_location(tmp_path / "memory.db")

    def mnemodb(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mnemodb", *args, "--db", db],
            capture_output=True,
            text=True,
            env=server_env(),
            timeout=60,
            check=False,
        )

    created = mnemodb("scope", "create", "team-a")
    assert created.returncode == 0, created.stderr
    name, scope = created.stdout.split()
    assert name == "team-a" and is_ulid(scope)
    assert mnemodb("remember", "a team note", "--scope", "team-a").returncode == 0
    listed = mnemodb("scope", "list").stdout
    assert listed.startswith(f"team-a  {scope}  ")
    with Engine.open(db) as engine:
        [hit] = engine.memories.search("team note", scopes=[scope])
        assert hit.memory.scope == scope
    refused = mnemodb("remember", "lost", "--scope", "team-z")
    assert refused.returncode == 1 and "no scope has that name" in refused.stderr
