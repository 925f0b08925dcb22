"""The settings loader, in process: `config.load(args, env)` for serve and
`config.load_database` / `config.load_embedding` for the other commands.

Precedence everywhere: an explicit flag, then the profile's upstream variable, then
mnemodb's own variable, then the default. A flag the namespace lacks (a command that has
no such flag) counts as not given.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from mnemodb.cli.main import build_parser
from mnemodb.search.ranking import DEFAULT_FUSION
from mnemodb.server import config

ULID = "01HV7N8Q3Y2J6W5X4Z9A0B1C2D"


@pytest.fixture(autouse=True)
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def serve(*flags: str, env: dict[str, str] | None = None) -> config.Settings:
    """Settings as `mnemodb serve FLAGS` would load them, through the real parser."""
    return config.load(build_parser().parse_args(["serve", *flags]), env or {})


def load(env: dict[str, str] | None = None, **flags: object) -> config.Settings:
    return config.load(argparse.Namespace(**flags), env or {})


# -- the database ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "env", "expected"),
    [
        ((), {}, ".memdb/memory.db"),
        ((), {"MNEMODB_DB": "mnemodb.db"}, "mnemodb.db"),
        ((), {"MNEMODB_DB": "mnemodb.db", "MEMDB_PATH": "memdb.db"}, "memdb.db"),
        (("--db", "flag.db"), {"MNEMODB_DB": "mnemodb.db", "MEMDB_PATH": "memdb.db"}, "flag.db"),
        ((), {"MNEMODB_DB": "  ", "MEMDB_PATH": ""}, ".memdb/memory.db"),
    ],
    ids=["default", "mnemodb-variable", "upstream-variable", "flag", "blank-variables"],
)
def test_memdb_database_flag_then_upstream_then_mnemodb_then_default(
    in_tmp: Path, flags: tuple[str, ...], env: dict[str, str], expected: str
) -> None:
    settings = serve("--profile", "memdb", *flags, env=env)
    assert settings.db_path == str(in_tmp / expected)
    assert settings.db_display == expected


def test_native_reads_no_upstream_variable(in_tmp: Path) -> None:
    env = {"MEMDB_PATH": "memdb.db", "MEMDB_TOOL_TIMEOUT_MS": "5", "MEMDB_LOG_LEVEL": "error"}
    settings = serve(env=env)
    assert (settings.profile, settings.db_path) == ("native", str(in_tmp / ".mnemodb" / "memory.db"))
    assert (settings.tool_timeout_ms, settings.log_level) == (15_000, "info")
    assert serve(env={**env, "MNEMODB_DB": "mine.db"}).db_path == str(in_tmp / "mine.db")


def test_knowledge_graph_keeps_its_database_beside_the_named_memory_file(in_tmp: Path) -> None:
    env = {"MEMORY_FILE_PATH": "graphs/team.jsonl", "MNEMODB_DB": "mine.db"}
    settings = serve("--profile", "knowledge-graph", env=env)
    assert settings.memory_file == str(in_tmp / "graphs" / "team.jsonl")
    assert settings.db_path == str(in_tmp / "graphs" / "team.mnemodb.db")
    flagged = serve("--profile", "knowledge-graph", "--db", "flag.db", env=env)
    assert (flagged.db_path, flagged.memory_file) == (str(in_tmp / "flag.db"), str(in_tmp / "graphs" / "team.jsonl"))


def test_topodb_reads_its_own_variables_only(in_tmp: Path) -> None:
    with pytest.raises(config.ConfigError, match=r"missing required --db <path> \(or set TOPODB_DB\)"):
        serve("--profile", "topodb", env={"MNEMODB_DB": "mine.db"})
    empty = serve("--profile", "topodb", env={"TOPODB_DB": "", "MNEMODB_SCOPE": ULID, "MNEMODB_TOOL_TIMEOUT_MS": "5"})
    assert empty.db_path == str(in_tmp / ".topodb" / "memory.redb")
    assert (empty.write_scope, empty.tool_timeout_ms) == ("shared", 15_000)
    chosen = serve("--profile", "topodb", "--db", "x.redb", "--allow-unscoped-changes", env={"TOPODB_SCOPE": ULID})
    assert (chosen.db_path, chosen.write_scope, chosen.allow_unscoped_changes) == (str(in_tmp / "x.redb"), ULID, True)
    assert serve(
        "--profile", "topodb", "--db", "x.redb", "--scope", "shared", env={"TOPODB_SCOPE": ULID}
    ).write_scope == ("shared")
    with pytest.raises(config.ConfigError, match="invalid --scope value"):
        serve("--profile", "topodb", "--db", "x.redb", "--scope", "nope")


# -- scopes, time limit and log level ----------------------------------------------------------------------


def test_scopes_flag_then_variable_then_shared() -> None:
    assert (serve().write_scope, serve().read_scopes) == ("shared", None)
    env = {"MNEMODB_SCOPE": ULID, "MNEMODB_READ_SCOPES": f"{ULID}, shared"}
    assert (serve(env=env).write_scope, serve(env=env).read_scopes) == (ULID, (ULID, "shared"))
    flagged = serve("--scope", "team", "--read-scopes", "team", env=env)
    assert (flagged.write_scope, flagged.read_scopes) == ("team", ("team",))
    with pytest.raises(config.ConfigError, match="--read-scopes must name at least one scope"):
        serve("--read-scopes", " , ")


@pytest.mark.parametrize(
    ("flags", "env", "expected"),
    [
        ((), {}, (15_000, "info")),
        ((), {"MNEMODB_TOOL_TIMEOUT_MS": "7", "MNEMODB_LOG_LEVEL": "warn"}, (7, "warn")),
        (
            (),
            {
                "MNEMODB_TOOL_TIMEOUT_MS": "7",
                "MEMDB_TOOL_TIMEOUT_MS": "8",
                "MNEMODB_LOG_LEVEL": "warn",
                "MEMDB_LOG_LEVEL": "error",
            },
            (8, "error"),
        ),
        (
            ("--tool-timeout-ms", "9", "--log-level", "info"),
            {"MEMDB_TOOL_TIMEOUT_MS": "8", "MEMDB_LOG_LEVEL": "error"},
            (9, "info"),
        ),
    ],
    ids=["default", "mnemodb-variables", "upstream-variables", "flags"],
)
def test_time_limit_and_log_level(flags: tuple[str, ...], env: dict[str, str], expected: tuple[int, str]) -> None:
    settings = serve("--profile", "memdb", *flags, env=env)
    assert (settings.tool_timeout_ms, settings.log_level) == expected


def test_a_negative_time_limit_is_refused() -> None:
    with pytest.raises(config.ConfigError, match="Invalid --tool-timeout-ms"):
        serve("--tool-timeout-ms", "-1")


# -- the profile and its own flags -------------------------------------------------------------------------


def test_profile_flag_then_variable_then_native() -> None:
    assert serve().profile == "native"
    assert serve(env={"MNEMODB_PROFILE": "memdb"}).profile == "memdb"
    assert serve("--profile", "knowledge-graph", env={"MNEMODB_PROFILE": "memdb"}).profile == "knowledge-graph"
    with pytest.raises(config.ConfigError, match=r"unknown profile 'nope' \(available: native, memdb, "):
        serve(env={"MNEMODB_PROFILE": "nope"})


@pytest.mark.parametrize("flags", [("--spec", "spec.json"), ("--allow-unscoped-changes",)])
@pytest.mark.parametrize("profile", ["native", "memdb", "knowledge-graph"])
def test_a_profile_s_own_flag_is_refused_with_another_profile(profile: str, flags: tuple[str, ...]) -> None:
    with pytest.raises(config.ConfigError, match=f"^{flags[0]} applies to the topodb profile only$"):
        serve("--profile", profile, *flags)


# -- HTTP and the embedder ----------------------------------------------------------------------------------


def test_http_settings_flag_then_variable_then_default() -> None:
    assert serve().http is None
    defaults = serve("--http")
    assert defaults.http == config.HttpSettings()
    env = {"MNEMODB_HOST": "0.0.0.0", "MNEMODB_PORT": "9000", "MNEMODB_RATE_LIMIT": "2.5"}
    from_env = serve("--http", env=env).http
    assert from_env is not None
    assert (from_env.host, from_env.port, from_env.rate_limit) == ("0.0.0.0", 9000, 2.5)
    flagged = serve("--http", "--host", "::1", "--port", "0", env=env).http
    assert flagged is not None
    assert (flagged.host, flagged.port, flagged.rate_limit) == ("::1", 0, 2.5)


@pytest.mark.parametrize("flag", ["--port=1", "--insecure", "--jwt-issuer=x", "--public-url=http://x"])
def test_http_flags_need_http(flag: str) -> None:
    with pytest.raises(
        config.ConfigError, match=f"^{flag.split('=', maxsplit=1)[0]} applies to the HTTP transport: add --http$"
    ):
        serve(flag)


def test_embedding_settings_flag_then_variable_then_default() -> None:
    assert serve().embedding == config.EmbeddingSettings()
    env = {"MNEMODB_EMBEDDER": "none", "MNEMODB_SEARCH_WEIGHTS": "vector=0.5"}
    from_env = serve(env=env).embedding
    assert from_env.embedder == "none"
    assert from_env.fusion != DEFAULT_FUSION
    flagged = serve("--embedder", "auto", "--search-weights", "vector=0.15", env=env).embedding
    assert (flagged.embedder, flagged.fusion) == ("auto", DEFAULT_FUSION)
    with pytest.raises(config.ConfigError, match="the http embedder needs --embed-url"):
        serve("--embedder", "http")


def test_embedding_settings_for_a_command_without_embedding_flags() -> None:
    settings = config.load_embedding(argparse.Namespace(), {"MNEMODB_EMBEDDER": "local", "MNEMODB_EMBED_MODEL": "m"})
    assert (settings.embedder, settings.model) == ("local", "m")


# -- the other commands' database -----------------------------------------------------------------------------


def test_commands_open_the_database_native_serve_would(in_tmp: Path) -> None:
    parser = build_parser()
    for env in ({}, {"MNEMODB_DB": "mine.db", "MNEMODB_SCOPE": ULID}, {"MNEMODB_DB": " "}):
        chosen = config.load_database(parser.parse_args(["stats"]), env)
        served = serve(env=env)
        assert (chosen.db_path, chosen.write_scope) == (served.db_path, served.write_scope)
    flagged = config.load_database(parser.parse_args(["stats", "--db", "flag.db", "--scope", "team"]), {})
    assert (flagged.db_path, flagged.write_scope) == (str(in_tmp / "flag.db"), "team")


def test_a_command_s_empty_db_flag_means_the_default(in_tmp: Path) -> None:
    chosen = config.load_database(argparse.Namespace(db=""), {"MNEMODB_DB": "mine.db"})
    assert chosen.db_path == str(in_tmp / "mine.db")


def test_a_command_without_a_scope_flag_reads_the_variable() -> None:
    # `token create` has --db but no --scope.
    assert config.load_database(argparse.Namespace(db="x.db"), {"MNEMODB_SCOPE": ULID}).write_scope == ULID


def test_a_null_byte_in_a_variable_is_refused() -> None:
    with pytest.raises(config.ConfigError, match="Invalid MNEMODB_DB: null byte detected"):
        config.load_database(argparse.Namespace(), {"MNEMODB_DB": "a\x00b"})
    with pytest.raises(config.ConfigError, match="Invalid MNEMODB_PORT: null byte detected"):
        load({"MNEMODB_PORT": "1\x00"}, http=True)


def test_no_module_reads_a_setting_s_variable_itself() -> None:
    """Settings come from the environment only through the loader, which is handed it: no
    module looks a setting's variable up in `os.environ` on its own."""
    source = Path(config.__file__).resolve().parents[1]
    lookup = re.compile(r"""(environ(\.get)?|getenv)\s*[\[(]\s*["'](MNEMODB|MEMDB|TOPODB|MEMORY_FILE)""")
    readers = [str(p.relative_to(source)) for p in source.rglob("*.py") if lookup.search(p.read_text("utf-8"))]
    assert readers == []
