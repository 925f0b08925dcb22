"""The command line on a database this process may not write: the commands that only read
open it read-only, say so, and work; the ones that write say why they cannot.

The file and its directory are made read-only and the commands are run without root's
power to write through permission bits (`support.LAUNCHER`), with no WAL files beside the
database, as a checkpointed database is left: SQLite then cannot even create the WAL's
index, which made every command fail with "attempt to write a readonly database".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemodb.engine import Engine
from support import LAUNCHER, server_env

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the read-only launcher uses Linux capabilities")


def run_read_only(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", LAUNCHER, "", "1", "-m", "mnemodb", *args],
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=60,
        check=False,
    )


@pytest.fixture
def locked(tmp_path: Path) -> Iterator[Path]:
    """A database with one memory, the file and its directory read-only."""
    folder = tmp_path / "data"
    db = folder / "memory.db"
    with Engine.open(str(db)) as engine:
        engine.memories.store("the archive is read only", ["archive"])
    assert sorted(p.name for p in folder.iterdir()) == ["memory.db"]
    db.chmod(0o444)
    folder.chmod(0o555)
    probe = subprocess.run(
        [sys.executable, "-c", LAUNCHER, "", "1", "-c", "import sys; open(sys.argv[1], 'ab')", str(folder / "x")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if "PermissionError" not in probe.stderr:
        folder.chmod(0o755)
        pytest.skip("cannot take the power to write through permissions away here")
    yield db
    folder.chmod(0o755)
    db.chmod(0o644)


def test_reading_commands_read_a_read_only_database_and_say_so(locked: Path) -> None:
    before = sorted(p.name for p in locked.parent.iterdir())
    stats = run_read_only("stats", "--db", str(locked), "--json")
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["memories"] == 1
    assert "is read-only here: reading it without changing anything" in stats.stderr
    found = run_read_only("search", "archive", "--db", str(locked), "--json")
    assert found.returncode == 0, found.stderr
    assert [hit["content"] for hit in json.loads(found.stdout)] == ["the archive is read only"]
    exported = run_read_only("export", "-", "--db", str(locked))
    assert exported.returncode == 0, exported.stderr
    assert '"content":"the archive is read only"' in exported.stdout
    for result in (stats, found, exported):
        assert "Traceback" not in result.stderr
    # Nothing was written beside it: no WAL, no index, no journal.
    assert sorted(p.name for p in locked.parent.iterdir()) == before


def test_a_writing_command_says_the_database_is_read_only(locked: Path) -> None:
    result = run_read_only("remember", "not stored", "--db", str(locked))
    assert result.returncode == 1
    assert "is read-only here (the file or its directory): this command writes to it" in result.stderr
    assert "Traceback" not in result.stderr
    with Engine.open(str(locked), read_only=True) as engine:
        assert engine.stats().memories == 1


def test_reading_commands_refuse_a_missing_database_instead_of_creating_one(tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"
    for command in (["stats"], ["search", "x"], ["export", "-"]):
        result = subprocess.run(
            [sys.executable, "-m", "mnemodb", *command, "--db", str(missing)],
            capture_output=True,
            text=True,
            env=server_env(),
            timeout=60,
            check=False,
        )
        assert result.returncode == 1, command
        assert f"no database at {missing}" in result.stderr
    assert not os.path.exists(missing)


def test_a_read_only_engine_reads_and_refuses_writes(tmp_path: Path) -> None:
    from mnemodb.model.errors import StoreFailed

    db = tmp_path / "memory.db"
    with Engine.open(str(db)) as engine:
        engine.memories.store("kept")
    with Engine.open(str(db), read_only=True) as engine:
        assert [h.memory.content for h in engine.memories.search("kept")] == ["kept"]
        with pytest.raises(StoreFailed, match="opened read-only: nothing was changed"):
            engine.memories.store("refused")
    with Engine.open(str(db)) as engine:
        assert engine.stats().memories == 1
