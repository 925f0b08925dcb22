"""`mnemodb config CLIENT`: a configuration with absolute paths that really starts this
mnemodb, printed or merged into the client's file without losing what was there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support import server_env

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


def run(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in server_env().items() if k != "XDG_CONFIG_HOME"}
    return subprocess.run(
        [sys.executable, "-m", "mnemodb", "config", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**env, "HOME": str(home)},
        timeout=60,
        check=False,
    )


def starts(entry: dict[str, Any], cwd: Path) -> bool:
    """Whether the entry's command, run as a client runs it (elsewhere, no PATH), answers
    `initialize`."""
    proc = subprocess.run(
        [entry["command"], *entry["args"]],
        input=json.dumps(INIT) + "\n",
        capture_output=True,
        text=True,
        cwd=cwd,
        env={"HOME": str(cwd), "MNEMODB_EMBEDDER": "none"},
        timeout=60,
        check=False,
    )
    return '"serverInfo"' in proc.stdout


def test_printed_entries_name_absolute_paths_that_start_the_server(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    result = run(tmp_path, home, "vscode", "--profile", "memdb", "--db", "relative/memory.db")
    assert result.returncode == 0, result.stderr
    entry = json.loads(result.stdout)["servers"]["mnemodb"]
    assert entry["type"] == "stdio" and Path(entry["command"]).is_absolute()
    db = Path(entry["args"][entry["args"].index("--db") + 1])
    assert db == (tmp_path / "relative" / "memory.db").resolve()
    assert entry["args"][entry["args"].index("--profile") + 1] == "memdb"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert starts(entry, elsewhere)
    assert db.exists()


def test_claude_code_gets_the_command_line_and_a_per_user_database(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    line = run(tmp_path, home, "claude-code").stdout.strip()
    assert line.startswith("claude mcp add mnemodb -- /")
    assert line.endswith(f"serve --profile native --db {home / '.mnemodb' / 'memory.db'}")


@pytest.mark.parametrize(
    ("client", "where", "key"),
    [
        ("claude-desktop", ".config/Claude/claude_desktop_config.json", "mcpServers"),
        ("cursor", ".cursor/mcp.json", "mcpServers"),
    ],
)
def test_write_merges_into_the_clients_file_and_keeps_a_copy(tmp_path: Path, client: str, where: str, key: str) -> None:
    home = tmp_path / "home"
    target = home / where
    target.parent.mkdir(parents=True)
    before = {key: {"other": {"command": "other-server"}}, "theme": "dark"}
    target.write_text(json.dumps(before))
    result = run(tmp_path, home, client, "--write")
    assert result.returncode == 0, result.stderr
    after = json.loads(target.read_text())
    assert after["theme"] == "dark" and after[key]["other"] == {"command": "other-server"}
    assert Path(after[key]["mnemodb"]["command"]).is_absolute()
    assert json.loads(target.with_name(target.name + ".bak").read_text()) == before
    again = run(tmp_path, home, client, "--write", "--profile", "knowledge-graph")
    assert again.stdout.startswith("replaced 'mnemodb'")
    assert "knowledge-graph" in json.loads(target.read_text())[key]["mnemodb"]["args"]


def test_write_makes_a_missing_file_and_refuses_one_that_is_not_an_object(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert run(tmp_path, home, "claude-code", "--write").returncode == 0
    made = json.loads((tmp_path / ".mcp.json").read_text())
    assert list(made["mcpServers"]) == ["mnemodb"]
    broken = tmp_path / "broken.json"
    for text in ("[1, 2]", "{not json"):
        broken.write_text(text)
        refused = run(tmp_path, home, "cursor", "--write", "--file", str(broken))
        assert refused.returncode == 1 and "left as it is" in refused.stderr
        assert broken.read_text() == text
