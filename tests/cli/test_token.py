"""`mnemodb token create | list | revoke`, run as a user would, on a real file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mnemodb.engine import Engine
from mnemodb.engine.tokens import TOKEN_PREFIX, Grant, granted
from mnemodb.model.errors import Forbidden
from support import server_env

TEAM_A = "01HV7N8Q3Y2J6W5X4Z9A0B1C2D"
TEAM_B = "01HV7N8Q3Y2J6W5X4Z9A0B1C2E"


def mnemodb(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mnemodb", "token", *args, "--db", str(db)],
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=60,
        check=False,
    )


def test_create_prints_the_token_alone_on_stdout(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    made = mnemodb(db, "create", "ci-agent", "--read-scopes", TEAM_A, "--write-scope", TEAM_A)
    assert made.returncode == 0, made.stderr
    secret = made.stdout.strip()
    assert made.stdout.count("\n") == 1 and secret.startswith(TOKEN_PREFIX)
    assert "shown this once" in made.stderr and "ci-agent" in made.stderr
    with Engine.open(str(db)) as engine:
        token = engine.tokens.verify(secret)
    assert token is not None
    assert (token.name, token.read_scopes, token.write_scope, token.read_only) == ("ci-agent", (TEAM_A,), TEAM_A, False)


def test_list_and_revoke(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    made = json.loads(mnemodb(db, "create", "reader", "--read-only", "--json").stdout)
    assert made["read_only"] is True and made["token"].startswith(TOKEN_PREFIX)
    listed = mnemodb(db, "list", "--json")
    assert [t["name"] for t in json.loads(listed.stdout)] == ["reader"]
    assert made["token"] not in listed.stdout
    revoked = mnemodb(db, "revoke", "reader")
    assert revoked.returncode == 0 and revoked.stdout.startswith("revoked token 'reader'")
    assert json.loads(mnemodb(db, "list", "--json").stdout) == []
    [gone] = json.loads(mnemodb(db, "list", "--revoked", "--json").stdout)
    assert gone["revoked"] is not None


def test_mistakes_are_one_line_errors(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    assert mnemodb(db, "create", "agent").returncode == 0
    for args, expected in (
        (("create", "agent"), "mnemodb: a token named 'agent' exists"),
        (("create", "x", "--read-scopes", "team-a"), 'mnemodb: invalid scope "team-a"'),
        (("revoke", "nobody"), "mnemodb: no live token named or with id 'nobody'"),
    ):
        result = mnemodb(db, *args)
        assert result.returncode == 1, result
        assert result.stdout == ""
        assert result.stderr.startswith(expected), result.stderr
        assert result.stderr.count("\n") == 1


def test_read_scopes_are_not_write_scopes(tmp_path: Path) -> None:
    """`--read-scopes A --write-scope B` reads A and writes only B; `--write-scopes` adds more
    scopes it may write."""
    db = tmp_path / "memory.db"
    with Engine.open(str(db)) as engine:
        kept = engine.memories.store("Team A keeps this", scope=TEAM_A).memory
    made = json.loads(
        mnemodb(db, "create", "visitor", "--read-scopes", TEAM_A, "--write-scope", TEAM_B, "--json").stdout
    )
    assert (made["read_scopes"], made["write_scopes"]) == ([TEAM_B, TEAM_A], [TEAM_B])
    wide = json.loads(mnemodb(db, "create", "wide", "--write-scope", TEAM_B, "--write-scopes", TEAM_A, "--json").stdout)
    assert (wide["read_scopes"], wide["write_scopes"]) == ([TEAM_B, TEAM_A], [TEAM_B, TEAM_A])
    with Engine.open(str(db)) as engine:
        visitor = engine.tokens.verify(made["token"])
        assert visitor is not None
        with granted(Grant.of(visitor)):
            assert engine.memories.get(kept.hash) is not None
            with pytest.raises(Forbidden, match=f'scope "{TEAM_A}" is not writable with token "visitor"'):
                engine.memories.delete(kept.hash)
        assert engine.memories.get(kept.hash, scopes=[TEAM_A]) is not None
    listed = mnemodb(db, "list").stdout
    assert f"writes {TEAM_B} (by default {TEAM_B})" in listed
    assert f"writes {TEAM_B}, {TEAM_A} (by default {TEAM_B})" in listed
    help_text = subprocess.run(
        [sys.executable, "-m", "mnemodb", "token", "create", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "scopes it may only read" in help_text and "--write-scopes" in help_text


def test_revoking_the_last_token_keeps_the_server_closed_until_reopened(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    assert mnemodb(db, "create", "laptop").returncode == 0
    refused = mnemodb(db, "reopen")
    assert refused.returncode == 1 and "1 live token remains: revoke it first" in refused.stderr
    revoked = mnemodb(db, "revoke", "laptop")
    assert revoked.returncode == 0
    assert "the HTTP server refuses every request until one is made" in revoked.stderr
    assert "`mnemodb token reopen`" in mnemodb(db, "list").stderr
    with Engine.open(str(db)) as engine:
        assert engine.tokens.required() is True
    reopened = mnemodb(db, "reopen")
    assert reopened.returncode == 0, reopened.stderr
    assert "takes requests without a token again" in reopened.stderr
    with Engine.open(str(db)) as engine:
        assert engine.tokens.required() is False
    assert "takes requests without one" in mnemodb(db, "list").stderr
