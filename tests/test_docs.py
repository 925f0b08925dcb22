"""The documentation names everything a user can call: every command and option of the
CLI, every profile, and every tool of every profile. A command, flag or tool added
without a word in README.md or docs/ fails here."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemodb.cli.main import PROFILES, build_parser
from mnemodb.server import config
from mnemodb.server.profiles import build_profile

ROOT = Path(__file__).resolve().parents[1]
# Options every command has, documented once rather than per command.
GENERAL = {"--help", "-h"}


def documentation() -> str:
    parts = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return "\n".join(path.read_text(encoding="utf-8") for path in parts)


def commands(parser: argparse.ArgumentParser, prefix: str = "") -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """(`mnemodb command subcommand`, its parser) for every command, nested ones too."""
    for action in parser._actions:  # argparse keeps its sub-commands only here
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield f"{prefix} {name}".strip(), sub
                yield from commands(sub, f"{prefix} {name}")


def options(parser: argparse.ArgumentParser) -> set[str]:
    return {s for action in parser._actions for s in action.option_strings if s.startswith("--")} - GENERAL


@pytest.fixture(scope="module")
def docs() -> str:
    return documentation()


def test_every_command_is_documented(docs: str) -> None:
    missing = [name for name, _ in commands(build_parser()) if f"mnemodb {name}" not in docs]
    assert not missing, f"commands the docs never show as `mnemodb COMMAND`: {missing}"


def test_every_option_is_documented(docs: str) -> None:
    written = set(re.findall(r"--[a-z][a-z0-9-]*", docs))
    missing = sorted(
        f"mnemodb {name} {flag}" for name, sub in commands(build_parser()) for flag in options(sub) - written
    )
    assert not missing, "options the docs never mention:\n" + "\n".join(missing)


@pytest.mark.parametrize("profile", PROFILES)
def test_every_profile_and_its_tools_are_documented(docs: str, profile: str, tmp_path: Path) -> None:
    assert f"`{profile}`" in docs
    settings = config.load(argparse.Namespace(profile=profile, db=str(tmp_path / "memory.db")), {})
    missing = [tool.name for tool in build_profile(profile, settings).tools if f"`{tool.name}`" not in docs]
    assert not missing, f"{profile} tools the docs never name: {missing}"
