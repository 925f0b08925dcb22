"""The files mnemodb makes and opens, through the real command line: a backup never
replaces the database it copies, backups and exports replace their target in one step,
everything created is private, and a FIFO is refused instead of blocking for good."""

from __future__ import annotations

import json
import os
import resource
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemodb.engine import Engine
from support import server_env

TIMEOUT_S = 60  # a hang guard only: a FIFO opened for reading would block for ever
SERVE_TIMEOUT_S = 30


def mnemodb(
    cwd: Path, *args: str, file_size: int | None = None, env: dict[str, str] | None = None, timeout: float = TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    """Run `mnemodb ARGS` with the usual umask (022), and optionally a file size limit."""

    def limits() -> None:
        os.umask(0o022)
        if file_size is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))

    return subprocess.run(
        [sys.executable, "-m", "mnemodb", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=server_env(env),
        timeout=timeout,
        check=False,
        preexec_fn=limits,
    )


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("mnemodb: ")
    return line


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "data" / "memory.db"
    with Engine.open(str(path)) as engine:
        for n in range(20):
            engine.memories.store(f"Memory number {n} about the launch " + "padding " * 200)
    return path


def memories(path: Path) -> int:
    with Engine.open(str(path), create_parent=False) as engine:
        return engine.stats().memories


# -- a backup never destroys what it copies --------------------------------------------------------------


def test_backing_up_the_database_onto_itself_is_refused(tmp_path: Path, db: Path) -> None:
    os.link(db, tmp_path / "hard-link.db")
    (tmp_path / "sym-link.db").symlink_to(db)
    with Engine.open(str(db)):  # in use: its -wal and -shm exist
        for target in (db, Path(f"{db}-wal"), Path(f"{db}-shm"), tmp_path / "hard-link.db", tmp_path / "sym-link.db"):
            line = one_line_error(mnemodb(tmp_path, "backup", str(target), "--force", "--db", str(db)))
            assert "is the database itself" in line, line
        relative = one_line_error(mnemodb(db.parent, "backup", "memory.db", "--force", "--db", str(db)))
        assert "is the database itself" in relative
    assert memories(db) == 20
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_server_keeps_every_write_it_acknowledged_when_someone_backs_up_onto_its_file(
    tmp_path: Path, db: Path
) -> None:
    """The reproduction: a backup onto the live file, then writes the server acknowledged."""
    from native_support import Native

    with Native.start(db) as native:
        refused = mnemodb(tmp_path, "backup", str(db), "--force", "--db", str(db))
        assert refused.returncode == 1
        for n in range(3):
            native.call("remember", {"memories": [{"content": f"written after the backup attempt {n}"}]})
    assert memories(db) == 23


def test_a_failed_backup_leaves_the_old_backup_whole(tmp_path: Path, db: Path) -> None:
    """A backup that cannot finish (here: a file size limit below the database's size)
    leaves the target it would have replaced exactly as it was, and no temporary file."""
    target = tmp_path / "backups" / "memory.db"
    assert mnemodb(tmp_path, "backup", str(target), "--db", str(db)).returncode == 0
    before = target.read_bytes()
    with Engine.open(str(db)) as engine:
        engine.memories.store("one more " * 5000)
    failed = mnemodb(tmp_path, "backup", str(target), "--force", "--db", str(db), file_size=len(before))
    one_line_error(failed)
    assert target.read_bytes() == before
    assert sorted(p.name for p in target.parent.iterdir()) == ["memory.db"]


def test_a_failed_export_leaves_the_old_export_whole(tmp_path: Path, db: Path) -> None:
    target = tmp_path / "exports" / "memory.jsonl"
    assert mnemodb(tmp_path, "export", str(target), "--db", str(db)).returncode == 0
    before = target.read_bytes()
    with Engine.open(str(db)) as engine:
        engine.memories.store("one more " * 5000)
    failed = mnemodb(tmp_path, "export", str(target), "--db", str(db), file_size=len(before))
    assert failed.returncode != 0 and "Traceback" not in failed.stderr, failed.stderr
    assert target.read_bytes() == before
    assert sorted(p.name for p in target.parent.iterdir()) == ["memory.jsonl"]


def test_exporting_over_the_database_is_refused(tmp_path: Path, db: Path) -> None:
    for fmt in ("mnemodb", "server-memory"):
        line = one_line_error(mnemodb(tmp_path, "export", str(db), "--format", fmt, "--db", str(db)))
        assert "is the database itself" in line
    assert memories(db) == 20


def test_a_backup_over_a_database_in_use_is_refused(tmp_path: Path, db: Path) -> None:
    other = tmp_path / "other.db"
    with Engine.open(str(other)):
        line = one_line_error(mnemodb(tmp_path, "backup", str(other), "--force", "--db", str(db)))
        assert "looks like a database in use" in line
    assert memories(other) == 0


def test_backing_up_a_missing_database_is_refused_without_creating_it(tmp_path: Path) -> None:
    line = one_line_error(mnemodb(tmp_path, "backup", str(tmp_path / "b.db"), "--db", str(tmp_path / "typo.db")))
    assert "no database at" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# -- what mnemodb creates is private -----------------------------------------------------------------------


def test_new_databases_backups_and_exports_are_private(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    db = home / ".mnemodb" / "memory.db"
    assert mnemodb(home, "remember", "a secret", "--db", str(db)).returncode == 0
    assert mode(db.parent) == 0o700
    assert mode(db) == 0o600
    with Engine.open(str(db)):  # while open, SQLite's own files exist: they follow the database
        for side in ("-wal", "-shm"):
            assert mode(Path(f"{db}{side}")) == 0o600, side
        nested = tmp_path / "deep" / "er" / "backup.db"
        assert mnemodb(home, "backup", str(nested), "--db", str(db)).returncode == 0
    assert mode(nested) == 0o600
    assert mode(nested.parent) == mode(nested.parent.parent) == 0o700
    for fmt in ("mnemodb", "server-memory"):
        export = tmp_path / "exports" / f"{fmt}.jsonl"
        assert mnemodb(home, "export", str(export), "--format", fmt, "--db", str(db)).returncode == 0
        assert mode(export) == 0o600, fmt
    # The database made beside a knowledge-graph memory file, and its token table, too.
    jsonl = tmp_path / "kg" / "memory.jsonl"
    jsonl.parent.mkdir()
    jsonl.write_text('{"type":"entity","name":"Ada","entityType":"person","observations":[]}\n')
    jsonl.chmod(0o644)
    assert mnemodb(tmp_path, "import", str(jsonl), "--db", str(tmp_path / "kg" / "memory.db")).returncode == 0
    assert mode(tmp_path / "kg" / "memory.db") == 0o600


def test_a_replaced_export_keeps_its_permissions(tmp_path: Path, db: Path) -> None:
    export = tmp_path / "shared.jsonl"
    export.write_text("old\n")
    export.chmod(0o640)
    assert mnemodb(tmp_path, "export", str(export), "--db", str(db)).returncode == 0
    assert mode(export) == 0o640
    assert export.read_text().startswith('{"type":"header"')


# -- a FIFO is refused, never opened -------------------------------------------------------------------------


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    yield path
    path.unlink()


@pytest.mark.parametrize("command", [["stats"], ["search", "x"], ["remember", "x"], ["token", "list"]])
def test_a_fifo_as_the_database_is_a_one_line_error(tmp_path: Path, fifo: Path, command: list[str]) -> None:
    line = one_line_error(mnemodb(tmp_path, *command, "--db", str(fifo)))
    assert "it is a FIFO (named pipe), not a database file" in line


def test_a_fifo_in_mnemodb_db_is_refused_too(tmp_path: Path, fifo: Path) -> None:
    line = one_line_error(mnemodb(tmp_path, "stats", env={"MNEMODB_DB": str(fifo)}))
    assert "FIFO" in line


def test_devices_are_refused_as_databases(tmp_path: Path) -> None:
    line = one_line_error(mnemodb(tmp_path, "stats", "--db", os.devnull))
    assert "a character device" in line


@pytest.mark.parametrize(
    "flags",
    [
        ["--db", "{fifo}"],
        ["--profile", "topodb", "--db", "{db}", "--spec", "{fifo}"],
        ["--http", "--port", "0", "--db", "{db}", "--jwt-issuer", "i", "--jwt-audience", "a", "--jwt-key", "@{fifo}"],
    ],
    ids=["database", "topodb-spec", "jwt-key"],
)
def test_serve_refuses_a_fifo_at_once(tmp_path: Path, fifo: Path, flags: list[str]) -> None:
    args = [f.format(fifo=fifo, db=tmp_path / "memory.db") for f in flags]
    result = mnemodb(tmp_path, "serve", *args, timeout=SERVE_TIMEOUT_S)
    assert result.returncode != 0
    assert "FIFO" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_a_backup_to_a_fifo_is_refused(tmp_path: Path, fifo: Path, db: Path) -> None:
    line = one_line_error(mnemodb(tmp_path, "backup", str(fifo), "--force", "--db", str(db)))
    assert "FIFO" in line
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_an_export_to_a_device_is_written_to_it(tmp_path: Path, db: Path) -> None:
    """A device (or a FIFO someone reads) cannot be replaced: the export streams into it."""
    result = mnemodb(tmp_path, "export", "/dev/stdout", "--db", str(db))
    assert result.returncode == 0, result.stderr
    header = json.loads(result.stdout.splitlines()[0])
    assert header["type"] == "header"
