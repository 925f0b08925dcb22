"""MEMORY_FILE_PATH for `mnemodb serve --profile knowledge-graph`.

The variable names the server-memory JSONL file. Without --db the database lives beside
it (`<dir>/<stem>.mnemodb.db`); the file is imported on start when it exists and changed
since the last import, and it is never written. Settings come from `config.load` with an
explicit environment; the start-up import is called directly, and through real
`mnemodb serve` processes.
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemodb.engine import Engine
from mnemodb.engine.graph import NewEntity
from mnemodb.interop.server_memory import (
    Fingerprint,
    MemoryFileError,
    prepare_knowledge_graph_store,
    sync_memory_file,
)
from mnemodb.interop.state import get_meta
from mnemodb.server import config
from support import RawServer, server_env

PROFILE = "knowledge-graph"
SERVE = [sys.executable, "-m", "mnemodb", "serve", "--profile", PROFILE]
LINES = [
    '{"type":"entity","name":"Ada","entityType":"person","observations":["writes code"],"since":2019}',
    '{"type":"entity","name":"Acme","entityType":"company","observations":[]}',
    '{"type":"relation","from":"Ada","to":"Acme","relationType":"works_at"}',
]
MEMORY = "\n".join(LINES)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))
    return path


def load(env: dict[str, str], db: str | None = None) -> config.Settings:
    return config.load(argparse.Namespace(profile=PROFILE, db=db), env)


def names(engine: Engine) -> list[str]:
    return [e.name for e in engine.graph.read().entities]


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- where the file and the database are ------------------------------------------------------------------


def test_absolute_path_puts_the_database_beside_the_file(in_tmp: Path) -> None:
    target = in_tmp / "elsewhere" / "memory.jsonl"
    settings = load({"MEMORY_FILE_PATH": str(target)})
    assert settings.memory_file == str(target)
    assert settings.db_path == str(in_tmp / "elsewhere" / "memory.mnemodb.db")


def test_relative_path_is_taken_from_the_working_directory_and_trimmed(in_tmp: Path) -> None:
    settings = load({"MEMORY_FILE_PATH": "  notes/team.v2.jsonl \n"})
    assert settings.memory_file == str(in_tmp / "notes" / "team.v2.jsonl")
    assert settings.db_path == str(in_tmp / "notes" / "team.v2.mnemodb.db")


def test_a_legacy_json_name_gets_its_database_beside_it(in_tmp: Path) -> None:
    settings = load({"MEMORY_FILE_PATH": "old/memory.json"})
    assert settings.memory_file == str(in_tmp / "old" / "memory.json")
    assert settings.db_path == str(in_tmp / "old" / "memory.mnemodb.db")


def test_a_null_byte_is_refused() -> None:
    with pytest.raises(config.ConfigError) as caught:
        load({"MEMORY_FILE_PATH": "/tmp/mem\x00ory.jsonl"})
    assert str(caught.value) == "Invalid MEMORY_FILE_PATH: null byte detected"


def test_db_flag_wins_but_the_file_is_still_the_source(in_tmp: Path) -> None:
    settings = load({"MEMORY_FILE_PATH": "memory.jsonl"}, db="chosen.db")
    assert settings.db_path == str(in_tmp / "chosen.db")
    assert settings.memory_file == str(in_tmp / "memory.jsonl")


def test_memory_file_path_wins_over_mnemodb_db(in_tmp: Path) -> None:
    settings = load({"MEMORY_FILE_PATH": "memory.jsonl", "MNEMODB_DB": "other.db"})
    assert settings.db_path == str(in_tmp / "memory.mnemodb.db")
    assert load({"MNEMODB_DB": "other.db"}).db_path == str(in_tmp / "other.db")


@pytest.mark.parametrize("value", [None, "", "   "], ids=["unset", "empty", "blank"])
def test_unset_uses_the_default_database_and_no_file(in_tmp: Path, value: str | None) -> None:
    settings = load({} if value is None else {"MEMORY_FILE_PATH": value})
    assert settings.memory_file is None
    assert settings.db_path == str(in_tmp / ".mnemodb" / "memory.db")


def test_unset_finds_memory_jsonl_then_legacy_memory_json(in_tmp: Path) -> None:
    write(in_tmp / "memory.json", MEMORY)
    assert load({}).memory_file == str(in_tmp / "memory.json")
    write(in_tmp / "memory.jsonl", MEMORY)
    assert load({}).memory_file == str(in_tmp / "memory.jsonl")
    assert load({}).db_path == str(in_tmp / ".mnemodb" / "memory.db")


def test_other_profiles_ignore_memory_file_path(in_tmp: Path) -> None:
    settings = config.load(argparse.Namespace(profile="memdb"), {"MEMORY_FILE_PATH": "memory.jsonl"})
    assert settings.memory_file is None
    assert settings.db_path == str(in_tmp / ".memdb" / "memory.db")


# -- the start-up import --------------------------------------------------------------------------------------


@pytest.fixture
def kg(tmp_path: Path) -> Iterator[tuple[config.Settings, Engine]]:
    """Settings for MEMORY_FILE_PATH=<tmp>/memory.jsonl, and an engine on their database."""
    settings = load({"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")})
    with Engine.open(settings.db_path) as engine:
        yield settings, engine


def test_the_file_is_imported_once_and_left_untouched(
    tmp_path: Path, kg: tuple[config.Settings, Engine], caplog: pytest.LogCaptureFixture
) -> None:
    settings, engine = kg
    source = write(tmp_path / "memory.jsonl", MEMORY)
    before = (source.read_bytes(), source.stat().st_mtime_ns)
    with caplog.at_level(logging.INFO, logger="mnemodb"):
        assert prepare_knowledge_graph_store(settings, engine)
    assert [r.getMessage() for r in caplog.records] == [f"Memory file {source}: imported 2 entities and 1 relation"]
    assert names(engine) == ["Ada", "Acme"]
    assert (source.read_bytes(), source.stat().st_mtime_ns) == before
    recorded = Fingerprint.loads(get_meta(engine, f"server-memory file:{source}"))
    assert recorded is not None
    assert (recorded.size, recorded.mtime_ns) == (len(MEMORY.encode()), before[1])
    files = {p.name for p in tmp_path.iterdir() if not p.name.endswith(("-wal", "-shm"))}
    assert files == {"memory.jsonl", "memory.mnemodb.db"}


def test_an_unchanged_file_is_not_imported_again(tmp_path: Path, kg: tuple[config.Settings, Engine]) -> None:
    _settings, engine = kg
    source = write(tmp_path / "memory.jsonl", MEMORY)
    assert sync_memory_file(engine, source) is not None
    engine.graph.delete_entities(["Acme"])  # a change made through mnemodb since
    assert sync_memory_file(engine, source) is None
    assert names(engine) == ["Ada"]  # not brought back: the file was not read again


def test_a_touched_file_with_the_same_content_is_not_imported_again(
    tmp_path: Path, kg: tuple[config.Settings, Engine]
) -> None:
    _settings, engine = kg
    source = write(tmp_path / "memory.jsonl", MEMORY)
    sync_memory_file(engine, source)
    engine.graph.delete_entities(["Acme"])
    stamp = source.stat().st_mtime_ns + 5_000_000_000
    os.utime(source, ns=(stamp, stamp))
    assert sync_memory_file(engine, source) is None
    assert names(engine) == ["Ada"]
    recorded = Fingerprint.loads(get_meta(engine, f"server-memory file:{source}"))
    assert recorded is not None
    assert recorded.mtime_ns == stamp


def test_a_changed_file_is_imported_again_idempotently(tmp_path: Path, kg: tuple[config.Settings, Engine]) -> None:
    _settings, engine = kg
    source = write(tmp_path / "memory.jsonl", MEMORY)
    sync_memory_file(engine, source)
    engine.graph.create_entities([NewEntity("Made here", "note")])
    write(
        source,
        MEMORY.replace('"observations":[]', '"observations":["founded 1999"]')
        + '\n{"type":"entity","name":"Bob","entityType":"person","observations":[]}',
    )
    result = sync_memory_file(engine, source)
    assert result is not None
    assert (result.entities_created, result.observations_added, result.relations_unchanged) == (1, 1, 1)
    assert names(engine) == ["Ada", "Acme", "Made here", "Bob"]
    assert engine.graph.open(["Acme"]).entities[0].observations == ("founded 1999",)


def test_a_missing_file_means_nothing_to_import(
    tmp_path: Path, kg: tuple[config.Settings, Engine], caplog: pytest.LogCaptureFixture
) -> None:
    settings, engine = kg
    with caplog.at_level(logging.INFO, logger="mnemodb"):
        assert prepare_knowledge_graph_store(settings, engine)
    assert [r.getMessage() for r in caplog.records] == [
        f"Memory file {tmp_path / 'memory.jsonl'} does not exist; nothing to import"
    ]
    assert names(engine) == []
    assert not (tmp_path / "memory.jsonl").exists()


def test_an_unreadable_memory_file_stops_the_start(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "memory.jsonl").mkdir()
    settings = load({"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")})
    with Engine.open(settings.db_path) as engine:
        with pytest.raises(MemoryFileError):
            sync_memory_file(engine, tmp_path / "memory.jsonl")
        with caplog.at_level(logging.INFO, logger="mnemodb"):
            assert not prepare_knowledge_graph_store(settings, engine)
    assert [r.levelno for r in caplog.records] == [logging.ERROR]
    assert "is not a regular file" in caplog.records[0].getMessage()


def test_skipped_lines_are_summed_up_in_the_one_log_line(
    tmp_path: Path, kg: tuple[config.Settings, Engine], caplog: pytest.LogCaptureFixture
) -> None:
    settings, engine = kg
    write(tmp_path / "memory.jsonl", MEMORY + "\n{broken\n" + '{"type":"relation","from":"A","to":"B"}')
    with caplog.at_level(logging.INFO, logger="mnemodb"):
        assert prepare_knowledge_graph_store(settings, engine)
    [record] = caplog.records
    message = record.getMessage()
    assert message.startswith(f"Memory file {tmp_path / 'memory.jsonl'}: imported 2 entities and 1 relation")
    assert "skipped 2 lines (first: line 4: not JSON" in message
    assert "\n" not in message


# -- through `mnemodb serve` ------------------------------------------------------------------------------------


def read_graph_names(server: RawServer) -> list[str]:
    server.initialize()
    result = server.call("read_graph", {})
    assert result.get("isError") is not True, result
    return [e["name"] for e in result["structuredContent"]["entities"]]


def test_serve_imports_the_file_and_keeps_the_database_beside_it(tmp_path: Path) -> None:
    source = write(tmp_path / "notes" / "memory.jsonl", MEMORY)
    original = source.read_bytes()
    env = {"MEMORY_FILE_PATH": "notes/memory.jsonl"}
    server = RawServer(SERVE, env=env, cwd=tmp_path)
    try:
        assert read_graph_names(server) == ["Ada", "Acme"]
        created = server.call(
            "create_entities", {"entities": [{"name": "Bob", "entityType": "person", "observations": []}]}
        )
        assert created.get("isError") is not True, created
    finally:
        assert server.close() == 0
    assert f"Memory file {source}: imported 2 entities and 1 relation" in server.stderr
    assert source.read_bytes() == original  # the file is only read
    db = tmp_path / "notes" / "memory.mnemodb.db"
    with Engine.open(str(db)) as engine:
        assert names(engine) == ["Ada", "Acme", "Bob"]
    assert not (tmp_path / ".mnemodb").exists()

    again = RawServer(SERVE, env=env, cwd=tmp_path)
    try:
        assert read_graph_names(again) == ["Ada", "Acme", "Bob"]
    finally:
        assert again.close() == 0
    assert "unchanged since its last import" in again.stderr


def test_serve_reads_a_legacy_memory_json_and_leaves_it(tmp_path: Path) -> None:
    legacy = write(tmp_path / "memory.json", MEMORY)
    server = RawServer(SERVE, cwd=tmp_path)
    try:
        assert read_graph_names(server) == ["Ada", "Acme"]
    finally:
        assert server.close() == 0
    assert "legacy memory.json" in server.stderr
    assert legacy.read_text(encoding="utf-8") == MEMORY
    assert not (tmp_path / "memory.jsonl").exists()
    assert (tmp_path / ".mnemodb" / "memory.db").is_file()


def test_serve_refuses_to_start_when_the_file_cannot_be_read(tmp_path: Path) -> None:
    (tmp_path / "memory.jsonl").mkdir()
    result = subprocess.run(
        SERVE,
        input=b"",
        capture_output=True,
        cwd=tmp_path,
        env=server_env({"MEMORY_FILE_PATH": "memory.jsonl"}),
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    stderr = result.stderr.decode()
    assert "Traceback" not in stderr
    assert "Failed to import the memory file" in stderr
    assert "is not a regular file" in stderr
