"""The `mnemodb` command line, run as a real subprocess against real database files."""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mnemodb.cli.main import build_parser
from mnemodb.engine import Engine, NewMemory
from mnemodb.engine.graph import NewEntity
from mnemodb.search.embedders import local_available
from support import sha256

TIMEOUT_S = 60  # a hang guard only


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("MEMDB_", "MNEMODB_"))}


def run(
    cwd: Path, *args: str | bytes, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mnemodb", *args],
        input=stdin,
        capture_output=True,
        text=True,
        errors="replace",
        cwd=cwd,
        env=env if env is not None else clean_env(),
        timeout=TIMEOUT_S,
        check=False,
    )


def ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result


def as_json(result: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(ok(result).stdout)


def assert_one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1, (result.returncode, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("mnemodb: "), result.stderr
    assert len(lines[0]) > len("mnemodb: ")
    return lines[0]


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "data" / "memory.db")


def subcommands() -> list[str]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    raise AssertionError("the parser has no subcommands")


# -- remember ------------------------------------------------------------------------------------------------


def test_remember_text_output(tmp_path: Path, db: str) -> None:
    first = ok(run(tmp_path, "remember", "The build uses uv", "--db", db))
    digest = sha256("The build uses uv")
    assert first.stdout.startswith(f"stored: {digest[:12]}  ")
    ulid = first.stdout.split()[-1]
    assert len(ulid) == 26
    again = ok(run(tmp_path, "remember", "The build uses uv", "--db", db))
    assert again.stdout == f"already stored: {digest[:12]}  {ulid}\n"


def test_remember_json_with_tags_importance_and_type(tmp_path: Path, db: str) -> None:
    out = as_json(
        run(
            tmp_path,
            "remember",
            "Deploys run on Fridays",
            "--tag",
            "Deploy",
            "-t",
            "schedule",
            "--tag",
            "deploy",
            "--importance",
            "8",
            "--type",
            "decision",
            "--json",
            "--db",
            db,
        )
    )
    assert out["hash"] == sha256("Deploys run on Fridays")
    assert out["new"] is True
    assert out["tags"] == ["deploy", "schedule"]
    assert len(out["id"]) == 26
    again = as_json(run(tmp_path, "remember", "Deploys run on Fridays", "-t", "ops", "--json", "--db", db))
    assert (again["id"], again["new"], again["tags"]) == (out["id"], False, ["deploy", "ops", "schedule"])
    with Engine.open(db) as engine:
        memory = engine.memories.get(out["hash"])
    assert memory is not None
    assert (memory.importance, memory.memory_type, memory.tags) == (8, "decision", ("deploy", "ops", "schedule"))


def test_remember_reads_stdin(tmp_path: Path, db: str) -> None:
    text = "from standard input\nwith two lines\n"
    out = as_json(run(tmp_path, "remember", "-", "--json", "--db", db, stdin=text))
    assert out["hash"] == sha256(text.removesuffix("\n"))  # the newline ending the input is not part of it


@pytest.mark.parametrize("piped", ["piped text\n", "piped text\r\n", "piped text"])
def test_remembering_from_stdin_and_as_an_argument_is_the_same_memory(tmp_path: Path, db: str, piped: str) -> None:
    first = as_json(run(tmp_path, "remember", "-", "--json", "--db", db, stdin=piped))
    again = as_json(run(tmp_path, "remember", "piped text", "--json", "--db", db))
    assert (first["new"], again["new"], again["hash"]) == (True, False, first["hash"])
    blank_last = as_json(run(tmp_path, "remember", "-", "--json", "--db", db, stdin="two endings\n\n"))
    assert blank_last["hash"] == sha256("two endings\n")  # only one is taken off


def test_remember_uses_the_database_from_the_environment(tmp_path: Path, db: str) -> None:
    env = {**clean_env(), "MNEMODB_DB": db}
    ok(run(tmp_path, "remember", "via the environment", env=env))
    with Engine.open(db) as engine:
        assert engine.memories.get(sha256("via the environment")) is not None


# -- search -----------------------------------------------------------------------------------------------------


@pytest.fixture
def filled(tmp_path: Path, db: str) -> str:
    with Engine.open(db) as engine:
        engine.memories.store("She runs every morning", ["health"], 5)
        engine.memories.store("He walks to work")
        engine.memories.store("Running shoes wear out   after 800 km", ["gear"])
        engine.graph.create_entities([NewEntity("Runner", "person", ("likes hills",))])
    return db


def test_search_text_output(tmp_path: Path, filled: str) -> None:
    out = ok(run(tmp_path, "search", "running", "--db", filled)).stdout
    lines = out.splitlines()
    assert len(lines) == 2
    assert any(sha256("She runs every morning")[:12] in line and "[health]" in line for line in lines)
    assert any("Running shoes wear out after 800 km  [gear]" in line for line in lines)  # whitespace collapsed
    for line in lines:
        float(line.split()[0])
    assert ok(run(tmp_path, "search", "bicycle", "--db", filled)).stdout == "no matches\n"


def test_search_json_output(tmp_path: Path, filled: str) -> None:
    hits = as_json(run(tmp_path, "search", "running", "--json", "--db", filled))
    assert {h["kind"] for h in hits} == {"memory"}
    assert {h["content"] for h in hits} == {"She runs every morning", "Running shoes wear out   after 800 km"}
    first = next(h for h in hits if h["content"] == "She runs every morning")
    assert first["hash"] == sha256("She runs every morning")
    assert first["tags"] == ["health"]
    assert first["importance"] == 5
    assert isinstance(first["score"], float)
    # ISO 8601 in UTC, as the text output and the native tools give times.
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z", first["created_at"]), first["created_at"]
    assert hits == sorted(hits, key=lambda h: -h["score"])
    assert len(as_json(run(tmp_path, "search", "running", "--json", "-n", "1", "--db", filled))) == 1
    assert as_json(run(tmp_path, "search", "bicycle", "--json", "--db", filled)) == []


def test_search_finds_entities_as_recall_does(tmp_path: Path, filled: str) -> None:
    hits = as_json(run(tmp_path, "search", "who likes hills", "--json", "--db", filled))
    assert [(h["kind"], h["name"], h["observations"]) for h in hits] == [("entity", "Runner", ["likes hills"])]
    assert as_json(run(tmp_path, "search", "hills", "--kinds", "memory", "--json", "--db", filled)) == []
    text = ok(run(tmp_path, "search", "hills", "--db", filled)).stdout
    assert "entity  Runner: likes hills" in text
    refused = run(tmp_path, "search", "hills", "--kinds", "people", "--db", filled)
    assert refused.returncode == 1 and "--kinds takes memory, entity or both" in refused.stderr


@pytest.mark.skipif(not local_available(), reason="the local embedding model is not installed")
def test_search_finds_by_meaning_with_the_local_model(tmp_path: Path, db: str) -> None:
    with Engine.open(db) as engine:
        engine.memories.store("We adopted a puppy named Rex")
        engine.memories.store("The quarterly report is due on Friday")
    ok(run(tmp_path, "reindex", "--db", db, "--embedder", "local"))
    by_meaning = as_json(run(tmp_path, "search", "our new dog", "--json", "--db", db, "--embedder", "local"))
    assert [h["content"] for h in by_meaning][:1] == ["We adopted a puppy named Rex"]
    assert as_json(run(tmp_path, "search", "our new dog", "--json", "--db", db, "--embedder", "none")) == []


def test_search_reads_only_its_scope(tmp_path: Path, filled: str) -> None:
    scope = "01HV7N8Q3Y2J6W5X4Z9A0B1C2D"
    ok(run(tmp_path, "remember", "a private run", "--scope", scope, "--db", filled))
    private = as_json(run(tmp_path, "search", "run", "--json", "--scope", scope, "--db", filled))
    assert [h["content"] for h in private] == ["a private run"]
    shared = as_json(run(tmp_path, "search", "run", "--json", "--db", filled))
    assert "a private run" not in [h.get("content") for h in shared]


# -- stats ------------------------------------------------------------------------------------------------------


def test_stats_json(tmp_path: Path, filled: str) -> None:
    stats = as_json(run(tmp_path, "stats", "--json", "--db", filled))
    assert stats["database"] == str(Path(filled).resolve())
    assert (stats["memories"], stats["tags"], stats["entities"], stats["observations"]) == (3, 2, 1, 1)
    assert (stats["relations"], stats["embeddings"]) == (0, 0)
    assert stats["change_log_seq"] == 4
    assert stats["size_bytes"] > 0
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z", stats["oldest_memory"]), stats


def test_an_export_into_a_pipe_its_reader_closed_ends_quietly(tmp_path: Path, filled: str) -> None:
    """`mnemodb export | head -1`: the reader goes away; no "Broken pipe" message, no traceback."""
    with Engine.open(filled) as engine:  # more than the pipe holds, so the export meets the closed end
        engine.memories.store_many([NewMemory(f"filler memory number {i} " + "words " * 50) for i in range(300)])
    export = f'"{sys.executable}" -m mnemodb export - --db "{filled}"'
    result = subprocess.run(
        f'{export} | head -c 10 > /dev/null; echo "status=${{PIPESTATUS[0]}}" >&2',
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=TIMEOUT_S,
        check=False,
    )
    assert result.stderr.strip() == "status=141", result.stderr


def test_stats_text(tmp_path: Path, filled: str) -> None:
    out = ok(run(tmp_path, "stats", "--db", filled)).stdout
    fields = {line.split("  ")[0].strip(): line.split("  ", 1)[1].strip() for line in out.splitlines()}
    assert fields["memories"] == "3"
    assert fields["tags"] == "2"
    assert fields["change log seq"] == "4"
    assert fields["database"] == str(Path(filled).resolve())


def test_stats_of_an_empty_database(tmp_path: Path, db: str) -> None:
    Engine.open(db).close()
    stats = as_json(run(tmp_path, "stats", "--json", "--db", db))
    assert (stats["memories"], stats["oldest_memory"], stats["newest_memory"], stats["change_log_seq"]) == (
        0,
        None,
        None,
        0,
    )


# -- export and import ------------------------------------------------------------------------------------------


def test_export_and_import_into_a_fresh_database(tmp_path: Path, filled: str) -> None:
    with Engine.open(filled) as engine:
        a = engine.memories.get(sha256("She runs every morning"))
        b = engine.memories.get(sha256("He walks to work"))
        assert a is not None
        assert b is not None
        engine.memories.relate(a.hash, b.hash, "contrasts")
    dump = tmp_path / "out" / "dump.jsonl"
    exported = ok(run(tmp_path, "export", str(dump), "--db", filled))
    assert exported.stdout == ""
    assert "exported 5 records" in exported.stderr
    lines = [json.loads(line) for line in dump.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["type"] == "header"
    assert len(lines) == 6

    fresh = str(tmp_path / "fresh.db")
    first = ok(run(tmp_path, "import", str(dump), "--db", fresh))
    assert first.stdout == "imported 5 records (0 already present)\n"
    second = ok(run(tmp_path, "import", str(dump), "--db", fresh))
    assert second.stdout == "imported 0 records (5 already present)\n"
    report = as_json(run(tmp_path, "import", str(dump), "--json", "--db", fresh))
    assert report == {"written": 0, "unchanged": 5, "errors": []}

    with Engine.open(fresh) as engine:
        copy = engine.memories.get(a.hash)
        assert copy is not None
        assert (copy.id, copy.tags, copy.importance) == (a.id, a.tags, a.importance)
        assert [lk.edge.type for lk in engine.memories.links(a.hash)] == ["contrasts"]
        [entity] = engine.graph.open(["Runner"]).entities
        assert entity.observations == ("likes hills",)
        assert engine.stats().memories == 3


def test_export_to_stdout_and_import_from_stdin(tmp_path: Path, filled: str) -> None:
    dump = ok(run(tmp_path, "export", "--db", filled)).stdout
    assert json.loads(dump.splitlines()[0])["format"] == "mnemodb"
    fresh = str(tmp_path / "fresh.db")
    report = as_json(run(tmp_path, "import", "-", "--json", "--db", fresh, stdin=dump))
    assert (report["written"], report["errors"]) == (4, [])


def test_import_reports_bad_lines_and_goes_on(tmp_path: Path, filled: str) -> None:
    dump = ok(run(tmp_path, "export", "--db", filled)).stdout.splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([dump[0], "{not json", '["no", "type"]', *dump[1:]]) + "\n", encoding="utf-8")
    result = run(tmp_path, "import", str(broken), "--db", str(tmp_path / "fresh.db"))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "imported 4 records" in result.stdout
    assert "line 2" in result.stderr
    assert "line 3" in result.stderr


# -- backup --------------------------------------------------------------------------------------------------------


def test_backup_makes_a_database_that_opens_with_all_data(tmp_path: Path, filled: str) -> None:
    target = tmp_path / "copies" / "backup.db"
    result = ok(run(tmp_path, "backup", str(target), "--db", filled))
    assert str(target) in result.stdout
    assert target.is_file()
    with Engine.open(str(target)) as copy, Engine.open(filled) as original:
        assert [r for r in copy.export() if r["type"] != "header"] == [
            r for r in original.export() if r["type"] != "header"
        ]
        assert copy.stats().memories == 3
        assert copy.graph.open(["Runner"]).entities
    with sqlite3.connect(target) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_backup_refuses_to_overwrite_without_force(tmp_path: Path, filled: str) -> None:
    target = tmp_path / "backup.db"
    target.write_text("precious")
    line = assert_one_line_error(run(tmp_path, "backup", str(target), "--db", filled))
    assert "--force" in line
    assert target.read_text() == "precious"
    out = as_json(run(tmp_path, "backup", str(target), "--force", "--json", "--db", filled))
    assert out["bytes"] == target.stat().st_size
    with Engine.open(str(target)) as copy:
        assert copy.stats().memories == 3


# -- help ----------------------------------------------------------------------------------------------------------


def test_top_level_help_lists_every_subcommand(tmp_path: Path) -> None:
    names = subcommands()
    assert {"serve", "remember", "search", "stats", "export", "import", "backup"} <= set(names)
    out = ok(run(tmp_path, "--help")).stdout
    assert out.startswith("usage: mnemodb")
    listed = out.split("positional arguments:")[1].split("options:")[0]
    for name in names:
        assert re.search(rf"^    {name}(\s|$)", listed, re.MULTILINE), name


def test_every_subcommand_has_help(tmp_path: Path) -> None:
    for name in subcommands():
        result = ok(run(tmp_path, name, "--help"))
        assert result.stdout.startswith(f"usage: mnemodb {name}"), name
        assert "--help" in result.stdout


def test_version(tmp_path: Path) -> None:
    assert ok(run(tmp_path, "--version")).stdout.startswith("mnemodb ")


def test_no_command_prints_usage(tmp_path: Path) -> None:
    result = run(tmp_path)
    assert result.returncode == 2
    assert "usage: mnemodb" in result.stderr
    assert "Traceback" not in result.stderr


# -- bad input ------------------------------------------------------------------------------------------------------


def write_foreign(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")


def write_newer(path: Path) -> None:
    with Engine.open(str(path)):
        pass
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA user_version = 999")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(["remember", "", "--db", "{db}"], "empty", id="empty-content"),
        pytest.param(["remember", "x", "--importance", "11", "--db", "{db}"], "importance", id="importance-11"),
        pytest.param(["remember", "x", "--importance", "-1", "--db", "{db}"], "importance", id="importance-negative"),
        pytest.param(["remember", "x", "--tag", "two words", "--db", "{db}"], "whitespace", id="tag-whitespace"),
        pytest.param(["remember", "x", "--tag", "", "--db", "{db}"], "Tag", id="tag-empty"),
        pytest.param(["remember", "x", "--type", "", "--db", "{db}"], "memory_type", id="type-empty"),
        pytest.param(["remember", "x", "--scope", "nope", "--db", "{db}"], "scope", id="remember-bad-scope"),
        pytest.param(["search", "x", "--scope", "nope", "--db", "{db}"], "scope", id="search-bad-scope"),
        pytest.param(["stats", "--scopes", "shared,nope", "--db", "{db}"], "scope", id="stats-bad-scopes"),
        pytest.param(["export", "--format", "csv", "--db", "{db}"], "csv", id="export-format"),
        pytest.param(["import", "{tmp}/missing.jsonl", "--db", "{db}"], "no such file", id="import-missing-file"),
        pytest.param(["import", "{tmp}/bad-header.jsonl", "--db", "{db}"], "version", id="import-bad-header"),
        pytest.param(["stats", "--db", "{tmp}/foreign.db"], "did not create", id="foreign-database"),
        pytest.param(["stats", "--db", "{tmp}/newer.db"], "upgrade mnemodb", id="newer-database"),
        pytest.param(["stats", "--db", "{tmp}"], "cannot open", id="directory"),
        pytest.param(["stats", "--db", "{tmp}/text.db"], "database", id="text-file"),
        pytest.param(["export", "{tmp}/a-directory", "--db", "{db}"], "a-directory", id="export-to-directory"),
        pytest.param(
            ["backup", "{tmp}/a-directory", "--force", "--db", "{db}"], "a-directory", id="backup-to-directory"
        ),
        pytest.param(["import", "{tmp}/latin1.jsonl", "--db", "{db}"], "", id="import-not-utf8"),
    ],
)
def test_bad_input_is_one_line_on_stderr(tmp_path: Path, db: str, args: list[str], expected: str) -> None:
    Engine.open(db).close()
    (tmp_path / "bad-header.jsonl").write_text('{"type": "header", "format": "mnemodb", "version": 99}\n')
    write_foreign(tmp_path / "foreign.db")
    write_newer(tmp_path / "newer.db")
    (tmp_path / "text.db").write_text("this is a text file, not a database\n" * 40)
    (tmp_path / "a-directory").mkdir()
    (tmp_path / "latin1.jsonl").write_bytes(b'{"type": "header", "format": "mnemodb", "version": 1}\n{"caf\xe9": 1}\n')
    argv = [a.format(db=db, tmp=tmp_path) for a in args]
    line = assert_one_line_error(run(tmp_path, *argv))
    assert expected in line


def test_undecodable_bytes_in_arguments_are_one_line_errors(tmp_path: Path, db: str) -> None:
    for args in (
        [b"remember", b"caf\xe9", b"--db", db.encode()],
        [b"remember", b"ok", b"--tag", b"\xff", b"--db", db.encode()],
        [b"remember", b"ok", b"--type", b"\xff", b"--db", db.encode()],
        [b"search", b"\xff", b"--db", db.encode()],
    ):
        assert_one_line_error(run(tmp_path, *args))


def test_usage_errors_never_show_a_traceback(tmp_path: Path, db: str) -> None:
    for args in (["remember"], ["remember", "x", "--importance", "high"], ["frobnicate"], ["search", "x", "-n", "y"]):
        result = run(tmp_path, *args, "--db", db)
        assert result.returncode == 2, args
        assert "Traceback" not in result.stderr
        assert "error:" in result.stderr.splitlines()[-1]


def test_db_takes_a_sqlite_url_and_says_when_a_database_server_is_unreachable(tmp_path: Path) -> None:
    stored = run(tmp_path, "remember", "--db", "sqlite:///notes.db", "the build uses ninja")
    assert stored.returncode == 0, stored.stderr
    assert (tmp_path / "notes.db").is_file()
    found = run(tmp_path, "search", "--db", str(tmp_path / "notes.db"), "ninja")
    assert "the build uses ninja" in found.stdout
    # Nothing listens on port 1: one line that names the server (without the password).
    refused = run(tmp_path, "stats", "--db", "postgresql://team:secret@127.0.0.1:1/memory")
    assert refused.returncode == 1
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith("mnemodb: cannot reach PostgreSQL at postgresql://team@127.0.0.1:1/memory: ")
    assert "secret" not in refused.stderr
    unknown = run(tmp_path, "stats", "--db", "mysql://h/db")
    assert unknown.returncode == 1
    assert "unknown kind of database 'mysql'" in unknown.stderr
    assert list(tmp_path.iterdir()) == [tmp_path / "notes.db"]
