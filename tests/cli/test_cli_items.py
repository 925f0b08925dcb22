"""`mnemodb list | show | forget | edit | relate`, run as a person runs them, on a real file.

`edit` runs $EDITOR on a temporary file: here the editor is a small script that rewrites
the file as a person would, so the whole round trip (file written, editor run, file read
back, change applied) is real.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mnemodb.engine import Engine, Memory
from mnemodb.engine.graph import NewEntity
from support import server_env

TIMEOUT_S = 60


def run(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mnemodb", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        env={**server_env(), **(env or {})},
        timeout=TIMEOUT_S,
        check=False,
    )


def ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result


def as_json(result: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(ok(result).stdout)


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = str(tmp_path / "memory.db")
    with Engine.open(path) as engine:
        engine.memories.store("The deploy runs on Fridays", ["deploy"], 7)
        engine.memories.store("Tom prefers phone calls")
        engine.graph.create_entities([NewEntity("Tom Becker", "person", ("prefers phone calls", "lives in Leipzig"))])
    return path


def editor(tmp_path: Path, script: str) -> dict[str, str]:
    """An $EDITOR that runs `script` (sh) on the file it is given, as $1."""
    path = tmp_path / "editor.sh"
    path.write_text(f"#!/bin/sh\nset -e\n{script}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return {"EDITOR": str(path)}


def test_list_shows_newest_first_and_filters(tmp_path: Path, db: str) -> None:
    lines = ok(run(tmp_path, "list", "--db", db)).stdout.splitlines()
    assert [line.split("  ")[1] for line in lines] == ["entity", "memory", "memory"]
    assert "Tom Becker (person): prefers phone calls; lives in Leipzig" in lines[0]
    assert lines[0][:24].endswith("Z")  # ISO 8601 UTC
    tagged = as_json(run(tmp_path, "list", "--tags", "deploy", "--json", "--db", db))
    assert [item["text"] for item in tagged["items"]] == ["The deploy runs on Fridays"]
    important = as_json(run(tmp_path, "list", "--min-importance", "5", "--json", "--db", db))
    assert [item["text"] for item in important["items"]] == ["The deploy runs on Fridays"]
    people = as_json(run(tmp_path, "list", "--kinds", "entity", "--types", "person", "--json", "--db", db))
    assert [item["name"] for item in people["items"]] == ["Tom Becker"]
    page = as_json(run(tmp_path, "list", "--limit", "2", "--json", "--db", db))
    assert (len(page["items"]), page["more"]) == (2, True)
    rest = as_json(run(tmp_path, "list", "--limit", "2", "--offset", "2", "--json", "--db", db))
    assert (len(rest["items"]), rest["more"]) == (1, False)


def test_relate_show_and_forget(tmp_path: Path, db: str) -> None:
    with Engine.open(db) as engine:
        memory_id = engine.memories.search("phone")[0].memory.id
    related = as_json(run(tmp_path, "relate", "Tom Becker", "said", memory_id, "--json", "--db", db))
    assert related["status"] == "created"
    assert (related["relation"]["from"], related["relation"]["type"]) == ("Tom Becker", "said")
    again = ok(run(tmp_path, "relate", "Tom Becker", "said", memory_id, "--db", db)).stdout
    assert again.startswith("already related: Tom Becker -said->")

    shown = as_json(run(tmp_path, "show", "Tom Becker", "--json", "--db", db))
    assert shown["item"]["observations"] == ["prefers phone calls", "lives in Leipzig"]
    assert [r["type"] for r in shown["relations"]] == ["said"]
    assert [c["op"] for c in shown["history"]] == ["create_node"]
    text = ok(run(tmp_path, "show", "Tom Becker", "--db", db)).stdout
    assert "  - lives in Leipzig" in text and "Tom Becker -said->" in text and "create_node" in text

    forgotten = run(tmp_path, "forget", "Tom Becker", "no-such-thing", "--json", "--db", db)
    assert forgotten.returncode == 1  # one reference named nothing
    statuses = [row["status"] for row in json.loads(forgotten.stdout)["results"]]
    assert statuses == ["forgotten", "not_found"]
    missing = run(tmp_path, "show", "Tom Becker", "--db", db)
    assert missing.returncode == 1 and "nothing is called 'Tom Becker'" in missing.stderr


def test_edit_changes_a_memory_through_the_editor(tmp_path: Path, db: str) -> None:
    with Engine.open(db) as engine:
        memory = engine.memories.search("deploy")[0].memory
    env = editor(tmp_path, "sed -i 's/Fridays/Thursdays/' \"$1\"")
    ok(run(tmp_path, "edit", memory.hash, "--db", db, env=env))
    with Engine.open(db) as engine:
        [after] = engine.items.get([memory.id])
        assert isinstance(after, Memory) and after.content == "The deploy runs on Thursdays"
        assert engine.memories.get(memory.hash) is None  # the hash follows the text
    unchanged = ok(run(tmp_path, "edit", memory.id, "--db", db, env=editor(tmp_path, "true"))).stdout
    assert unchanged == "unchanged\n"


def test_edit_rewrites_an_entitys_observations(tmp_path: Path, db: str) -> None:
    env = editor(
        tmp_path, "sed -i 's/phone calls/email/' \"$1\"\nsed -i '/Leipzig/d' \"$1\"\necho 'works at Acme' >> \"$1\""
    )
    edited = as_json(run(tmp_path, "edit", "Tom Becker", "--json", "--db", db, env=env))
    assert edited["item"]["observations"] == ["prefers email", "works at Acme"]


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        ("exit 3", "the editor exited with status 3: nothing was changed"),
        (': > "$1"', "the text is empty: nothing was changed"),
    ],
)
def test_edit_that_fails_changes_nothing(tmp_path: Path, db: str, script: str, reason: str) -> None:
    with Engine.open(db) as engine:
        memory = engine.memories.search("deploy")[0].memory
        seq = engine.current_seq()
    result = run(tmp_path, "edit", memory.id, "--db", db, env=editor(tmp_path, script))
    assert result.returncode == 1 and reason in result.stderr, result.stderr
    with Engine.open(db) as engine:
        assert engine.current_seq() == seq


def test_edit_needs_an_editor(tmp_path: Path, db: str) -> None:
    env = {k: v for k, v in server_env().items() if k not in ("EDITOR", "VISUAL")}
    result = subprocess.run(
        [sys.executable, "-m", "mnemodb", "edit", "Tom Becker", "--db", db],
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 1 and "set EDITOR (or VISUAL)" in result.stderr


def test_the_edit_file_is_private_and_removed(tmp_path: Path, db: str) -> None:
    seen = tmp_path / "seen.txt"
    env = editor(tmp_path, f"stat -c '%a %n' \"$1\" > {seen}")
    ok(run(tmp_path, "edit", "Tom Becker", "--db", db, env=env))
    mode, name = seen.read_text().split()
    assert mode == "600"
    assert not os.path.exists(name)
