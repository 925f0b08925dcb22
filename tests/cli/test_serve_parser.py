"""`mnemodb serve` is parsed by a parser holding the serve command alone (every client start
runs it; the other commands' parsers are not built): it reads every serve flag as the whole
command line's parser does, and says the same in its help."""

from __future__ import annotations

import argparse

import pytest

from mnemodb.cli.main import build_parser

SERVE_FLAGS = [
    ["serve"],
    ["serve", "--profile", "memdb", "--db", "m.db", "--scope", "shared", "--read-scopes", "shared,other"],
    ["serve", "--profile", "topodb", "--db", "t.db", "--embedder", "none", "--tool-timeout-ms", "0"],
    ["serve", "--http", "--host", "0.0.0.0", "--port", "0", "--insecure", "--no-ui", "--jwt-issuer", "https://id"],
    ["serve", "--embedder", "http", "--embed-url", "http://localhost:11434/v1", "--embed-model", "m"],
    ["serve", "--search-weights", "words=1,vector=0.5", "--log-level", "warn", "--max-body-bytes", "1024"],
]


def serve_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen: argparse.ArgumentParser = action.choices["serve"]
            return chosen
    raise AssertionError("the parser has no subcommands")


@pytest.mark.parametrize("argv", SERVE_FLAGS, ids=lambda argv: " ".join(argv[1:3]) or "bare")
def test_the_serve_parser_reads_serve_flags_as_the_whole_parser_does(argv: list[str]) -> None:
    alone = build_parser(serve_only=True).parse_args(argv)
    whole = build_parser().parse_args(argv)
    assert vars(alone) == vars(whole)


def test_the_serve_parser_gives_the_same_help() -> None:
    assert serve_parser(build_parser(serve_only=True)).format_help() == serve_parser(build_parser()).format_help()


def test_the_serve_parser_knows_no_other_command() -> None:
    with pytest.raises(SystemExit):
        build_parser(serve_only=True).parse_args(["export"])
    assert build_parser().parse_args(["export"]).command == "export"
