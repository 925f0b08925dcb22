"""`mnemodb doctor`: the facts of a database and a set-up, what to fix, and exit status 1
only when something needs fixing. It never changes the database."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from mnemodb.engine import Engine
from mnemodb.store.sqlite.schema import SCHEMA_VERSION
from support import server_env


def doctor(tmp_path: Path, db: Path, *flags: str, env: dict[str, str] | None = None) -> tuple[int, Any]:
    result = subprocess.run(
        [sys.executable, "-m", "mnemodb", "doctor", "--db", str(db), "--json", *flags],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**server_env({"MNEMODB_EMBEDDER": "none"}), **(env or {})},
        timeout=60,
        check=False,
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result.returncode, json.loads(result.stdout)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_sound_database_has_nothing_to_fix(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with Engine.open(str(db)) as engine:
        engine.memories.store("kept")
        engine.tokens.create("ci")
    before = digest(db)
    status, report = doctor(tmp_path, db, "--thorough", env={"MEMORY_FILE_PATH": "/somewhere/memory.jsonl"})
    assert status == 0, report
    facts = report["facts"]
    assert (facts["memories"], facts["tokens"], facts["http_needs_a_token"]) == (1, 1, True)
    assert facts["schema"] == f"{SCHEMA_VERSION} (this mnemodb writes {SCHEMA_VERSION})"
    assert facts["journal_mode"] == "wal"
    assert facts["environment"]["MEMORY_FILE_PATH"] == "/somewhere/memory.jsonl"
    assert any("MEMORY_FILE_PATH is set" in note for note in report["notes"])
    assert report["fix"] == [] and report["ok"] is True
    assert digest(db) == before


def test_a_missing_database_is_reported_and_not_created(tmp_path: Path) -> None:
    db = tmp_path / "typo.db"
    status, report = doctor(tmp_path, db)
    assert status == 1
    assert report["fix"] == [f"there is no database at {db}: it is made by the first write (mnemodb serve, remember)"]
    assert not db.exists()


def test_a_damaged_database_says_what_is_wrong(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with Engine.open(str(db)) as engine:
        for n in range(300):
            engine.memories.store(f"memory {n} " + "words " * 40)
    data = bytearray(db.read_bytes())
    page = 4096
    for offset in range(len(data) // 2, len(data) // 2 + 8 * page):  # eight pages in the middle, noise
        data[offset] = (offset * 131) % 251
    db.write_bytes(bytes(data))
    status, report = doctor(tmp_path, db, "--thorough")
    assert status == 1, report
    assert report["fix"] and all(
        line.startswith(("the database is damaged", "the database cannot be", "the database could not be read"))
        for line in report["fix"]
    ), report["fix"]


def test_no_token_left_while_the_server_stays_closed_is_pointed_out(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with Engine.open(str(db)) as engine:
        engine.tokens.create("ci")
        engine.tokens.revoke("ci")
    status, report = doctor(tmp_path, db)
    assert status == 0
    assert any("mnemodb token reopen" in note for note in report["notes"])
