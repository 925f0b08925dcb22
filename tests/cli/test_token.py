"""`mnemodb token create | list | revoke`, run as a user would, on a real file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mnemodb.engine import Engine
from mnemodb.engine.tokens import TOKEN_PREFIX
from support import server_env

TEAM_A = "01HV7N8Q3Y2J6W5X4Z9A0B1C2D"


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
