"""`mnemodb serve --profile memdb` reads memdb's environment variables as memdb did.

MEMDB_PATH chooses the database (absolute, relative to the working directory,
`:memory:`, or empty for `.memdb/memory.db`), `--db` overrides it, and
MEMDB_LOG_LEVEL / MEMDB_TOOL_TIMEOUT_MS are validated with memdb's messages.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import logging
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import stdio_client

from mnemodb.engine import Engine
from mnemodb.search.embedders import local_available
from mnemodb.server import config
from support import RawServer, serve_params, server_env

SERVE = [sys.executable, "-m", "mnemodb", "serve", "--profile", "memdb"]


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def remember(env: dict[str, str], cwd: Path, content: str, *extra: str) -> None:
    """Start a server without --db (unless given), store `content`, read it back, stop."""
    server = RawServer([*SERVE, *extra], env=env, cwd=cwd)
    try:
        server.initialize()
        stored = server.call("store_memory", {"content": content, "tags": ["cfg"]})
        assert stored["isError"] is False, stored
        fetched = server.call("get_memory", {"hash": sha(content)})
        assert fetched["structuredContent"]["result"]["content"] == content
    finally:
        assert server.close() == 0


def holds(path: Path, content: str) -> bool:
    with Engine.open(str(path)) as engine:
        return engine.memories.get(sha(content)) is not None


def test_memdb_path_absolute(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "nested" / "absolute.db"
    workdir = tmp_path / "work"
    workdir.mkdir()
    remember({"MEMDB_PATH": str(target)}, workdir, "absolute path memory")
    assert holds(target, "absolute path memory")  # parent directories were created
    assert list(workdir.iterdir()) == []


def test_memdb_path_relative_to_the_working_directory(tmp_path: Path) -> None:
    remember({"MEMDB_PATH": "  data/sub/relative.db  "}, tmp_path, "relative path memory")  # trimmed
    assert holds(tmp_path / "data" / "sub" / "relative.db", "relative path memory")
    assert not (tmp_path / ".memdb").exists()


@pytest.mark.parametrize("value", [None, "", "   "], ids=["unset", "empty", "blank"])
def test_memdb_path_default(tmp_path: Path, value: str | None) -> None:
    env = {} if value is None else {"MEMDB_PATH": value}
    remember(env, tmp_path, "default path memory")
    assert holds(tmp_path / ".memdb" / "memory.db", "default path memory")


def test_memdb_path_in_memory(tmp_path: Path) -> None:
    remember({"MEMDB_PATH": ":memory:"}, tmp_path, "ephemeral memory")
    assert list(tmp_path.iterdir()) == []  # nothing written to disk, no ":memory:" file


def test_db_flag_overrides_memdb_path(tmp_path: Path) -> None:
    remember({"MEMDB_PATH": "from-env.db"}, tmp_path, "flag wins", "--db", "from-flag.db")
    assert holds(tmp_path / "from-flag.db", "flag wins")
    assert not (tmp_path / "from-env.db").exists()


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("MEMDB_LOG_LEVEL", "debug", "Invalid MEMDB_LOG_LEVEL: debug (expected: error|warn|info)"),
        ("MEMDB_LOG_LEVEL", "verbose", "Invalid MEMDB_LOG_LEVEL: verbose (expected: error|warn|info)"),
        ("MEMDB_TOOL_TIMEOUT_MS", "abc", "Invalid MEMDB_TOOL_TIMEOUT_MS: expected a non-negative integer"),
        ("MEMDB_TOOL_TIMEOUT_MS", "-1", "Invalid MEMDB_TOOL_TIMEOUT_MS: expected a non-negative integer"),
        ("MEMDB_TOOL_TIMEOUT_MS", "1.5", "Invalid MEMDB_TOOL_TIMEOUT_MS: expected a non-negative integer"),
    ],
)
def test_invalid_settings_exit_1_with_the_message(tmp_path: Path, name: str, value: str, message: str) -> None:
    done = subprocess.run(
        SERVE,
        env=server_env({name: value}),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 1
    assert message in done.stderr.decode()
    assert done.stdout == b""
    assert not (tmp_path / ".memdb").exists()  # refused before opening anything


@pytest.mark.parametrize("name", ["MEMDB_PATH", "MEMDB_LOG_LEVEL", "MEMDB_TOOL_TIMEOUT_MS"])
def test_null_byte_is_rejected(name: str) -> None:
    # A real environment cannot carry a NUL byte, so the loader is called directly.
    with pytest.raises(config.ConfigError, match=re.escape(f"Invalid {name}: null byte detected")):
        config.load(argparse.Namespace(profile="memdb"), {name: "a\x00b"})


def test_settings_from_memdb_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    defaults = config.load(argparse.Namespace(profile="memdb"), {})
    assert defaults.db_path == str(tmp_path / ".memdb" / "memory.db")
    assert (defaults.log_level, defaults.tool_timeout_ms) == ("info", 15000)

    chosen = config.load(
        argparse.Namespace(profile="memdb"),
        {"MEMDB_PATH": ":memory:", "MEMDB_LOG_LEVEL": "warn", "MEMDB_TOOL_TIMEOUT_MS": "0"},
    )
    assert (chosen.db_path, chosen.log_level, chosen.tool_timeout_ms) == (":memory:", "warn", 0)
    assert config.load(argparse.Namespace(profile="memdb", db="x.db"), {"MEMDB_PATH": "y.db"}).db_path == str(
        tmp_path / "x.db"
    )


async def logged_session(tmp_path: Path, level: str) -> str:
    """stderr of a server at `level` after a handful of tool calls."""
    log = tmp_path / f"stderr-{level}.log"
    with log.open("w") as errlog:
        params = serve_params(tmp_path / "memory.db", env={"MEMDB_LOG_LEVEL": level})
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            calls: list[tuple[str, dict[str, Any]]] = [
                ("store_memory", {"content": "logged memory", "tags": ["log"]}),
                ("search_memories", {"query": "logged"}),
                ("get_memory", {"hash": "0" * 64}),
                ("memory_stats", {}),
            ]
            for name, arguments in calls:
                await client.call_tool(name, arguments)
    return log.read_text()


@pytest.mark.anyio
async def test_info_level_logs_each_tool_call(tmp_path: Path) -> None:
    stderr = await logged_session(tmp_path, "info")
    for name in ("store_memory", "search_memories", "memory_stats"):
        assert re.search(rf"^\[INFO\] \[tool:{name}\] Tool {name} ok in \d+ms$", stderr, re.M), stderr
    # A call that fails (here: not found) is logged as an error outcome.
    assert re.search(r"^\[INFO\] \[tool:get_memory\] Tool get_memory error in \d+ms$", stderr, re.M), stderr


@pytest.mark.anyio
async def test_error_level_keeps_stderr_quiet(tmp_path: Path) -> None:
    assert await logged_session(tmp_path, "error") == ""


@pytest.fixture
def root_logging() -> Iterator[None]:
    """The root logger's handlers and level as they were, after a test configures them."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.mark.parametrize("outcome", ["ok", "error", "invalid"])
def test_a_tool_calls_line_reads_the_same_whichever_way_it_is_written(
    root_logging: None, monkeypatch: pytest.MonkeyPatch, outcome: str
) -> None:
    own = io.StringIO()
    monkeypatch.setattr(sys, "stderr", own)
    config.configure_logging("info")
    log = logging.getLogger("mnemodb.server")
    made: list[logging.LogRecord] = []
    factory = logging.getLogRecordFactory()

    def counted(*args: Any, **kwargs: Any) -> logging.LogRecord:
        made.append(factory(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(logging, "_logRecordFactory", counted)
    config.log_tool_call(log, "get_node", outcome, 12.9)  # straight to the stream: no record
    expected = f"[INFO] [tool:get_node] Tool get_node {outcome} in 12ms\n"
    assert own.getvalue() == expected and made == []
    # A second handler: the line goes through a record, which both write the same.
    other = io.StringIO()
    second = logging.StreamHandler(other)
    second.setFormatter(logging.getLogger().handlers[0].formatter)
    logging.getLogger().addHandler(second)
    config.log_tool_call(log, "get_node", outcome, 12.9)
    assert own.getvalue() == expected * 2 and other.getvalue() == expected
    assert [(r.levelno, r.name, getattr(r, "tool", None)) for r in made] == [(logging.INFO, log.name, "get_node")]


def test_a_tool_calls_line_follows_the_log_level(root_logging: None, monkeypatch: pytest.MonkeyPatch) -> None:
    own = io.StringIO()
    monkeypatch.setattr(sys, "stderr", own)
    config.configure_logging("warn")
    config.log_tool_call(logging.getLogger("mnemodb.server"), "get_node", "ok", 1.0)
    assert own.getvalue() == ""
    config.configure_logging("debug")
    config.log_tool_call(logging.getLogger("mnemodb.server"), "get_node", "ok", 1.0)
    assert own.getvalue() == "[INFO] [tool:get_node] Tool get_node ok in 1ms\n"


# -- the local embedder's model --------------------------------------------------------------------


def _local(kind: str, model: str | None, env: dict[str, str] | None = None) -> Any:
    settings = config.load_embedding(argparse.Namespace(embedder=kind, embed_model=model), env or {})
    return config.make_embedder(settings)


@pytest.mark.skipif(not local_available(), reason="the local embedding model is not installed")
def test_the_local_embedder_takes_either_form_of_its_model_and_nothing_else() -> None:
    from mnemodb.search.embedders import LOCAL_MODEL, QUANTIZED_MODEL, default_local_model, onnx_runtime_available

    assert _local("local", None).model == default_local_model()
    assert _local("local", LOCAL_MODEL).model == LOCAL_MODEL
    if onnx_runtime_available():
        assert _local("local", QUANTIZED_MODEL).model == QUANTIZED_MODEL
    with pytest.raises(config.ConfigError, match="Invalid --embed-model 'nomic-embed-text' for the local embedder"):
        _local("local", "nomic-embed-text")
    # A model named for an HTTP endpoint does not stop `auto` from taking the local model.
    assert _local("auto", None, {"MNEMODB_EMBED_MODEL": "nomic-embed-text"}).model == default_local_model()
