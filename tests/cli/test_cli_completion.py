"""`mnemodb completion bash|zsh`: the script, sourced in a real bash, completes commands,
subcommands, options, choices and file names as a person at a prompt would see them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import server_env

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def completions(tmp_path: Path, *words: str) -> list[str]:
    """What bash offers after `words` (the last one is the word being completed)."""
    script = subprocess.run(
        [sys.executable, "-m", "mnemodb", "completion", "bash"], capture_output=True, text=True, check=True,
        env=server_env(),
    ).stdout  # fmt: skip
    (tmp_path / "mnemodb.bash").write_text(script)
    quoted = " ".join(f"'{w}'" for w in ("mnemodb", *words))
    probe = (
        f"source {tmp_path / 'mnemodb.bash'}\n"
        f"COMP_WORDS=({quoted}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); COMPREPLY=()\n"
        "_mnemodb_complete; printf '%s\\n' \"${COMPREPLY[@]}\"\n"
    )
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, cwd=tmp_path, check=True)
    return [line for line in done.stdout.splitlines() if line]


def test_commands_subcommands_options_and_choices(tmp_path: Path) -> None:
    top = completions(tmp_path, "")
    for command in ("serve", "search", "list", "show", "doctor", "config", "token", "completion"):
        assert command in top
    assert completions(tmp_path, "to") == ["token"]
    assert completions(tmp_path, "token", "") == ["create", "list", "reopen", "revoke", "--help"]
    assert completions(tmp_path, "serve", "--prof") == ["--profile"]
    assert completions(tmp_path, "serve", "--profile", "k") == ["knowledge-graph"]
    assert "--write" in completions(tmp_path, "config", "")
    assert completions(tmp_path, "config", "cl") == ["claude-code", "claude-desktop"]
    assert completions(tmp_path, "token", "create", "--read") == ["--read-scopes", "--read-only"]


def test_file_options_complete_file_names(tmp_path: Path) -> None:
    (tmp_path / "memory.db").write_text("")
    assert completions(tmp_path, "stats", "--db", "mem") == ["memory.db"]


def test_zsh_gets_the_same_through_bash_completion() -> None:
    script = subprocess.run(
        [sys.executable, "-m", "mnemodb", "completion", "zsh"], capture_output=True, text=True, check=True,
        env=server_env(),
    ).stdout  # fmt: skip
    assert script.startswith("autoload -U +X bashcompinit && bashcompinit\n")
    assert "complete -o default -F _mnemodb_complete mnemodb" in script
