"""`mnemodb completion bash|zsh`: a shell completion script, made from the command line's
own parser, so it knows every command, subcommand, option and choice this mnemodb has.

    eval "$(mnemodb completion bash)"     # in ~/.bashrc
    eval "$(mnemodb completion zsh)"      # in ~/.zshrc (through bash completion's compatibility)

Options that take a file (`--db`, `--file`, ...) complete file names; choices complete
their values.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

__all__ = ["add_command", "bash_script"]

_FILE_OPTIONS = {"--db", "--file", "--spec", "--out", "--jwt-key"}


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> tuple[list[str], dict[str, list[str]]]:
    """A parser's option strings, and the choices of those that have some."""
    options: list[str] = []
    choices: dict[str, list[str]] = {}
    for action in parser._actions:
        for option in action.option_strings:
            if option.startswith("--"):
                options.append(option)
                if action.choices is not None:
                    choices[option] = [str(c) for c in action.choices]
    return options, choices


def bash_script(parser: argparse.ArgumentParser) -> str:
    """A bash completion function for `parser`'s program, and its registration."""
    program = parser.prog
    lines = [f"# bash completion for {program}, made by `{program} completion bash`", f"_{program}_complete() {{"]
    lines += [
        '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"',
        '    local path="" key i',
        "    # The commands typed so far (options and their values are skipped over).",
        "    for ((i = 1; i < COMP_CWORD; i++)); do",
        '        [[ "${COMP_WORDS[i]}" == -* ]] && continue',
        '        key="${path:+$path }${COMP_WORDS[i]}"',
        '        case "$key" in',
    ]
    words: dict[str, list[str]] = {}
    options: dict[str, list[str]] = {}
    positionals: dict[str, list[str]] = {}
    values: dict[tuple[str, str], list[str]] = {}

    def walk(node: argparse.ArgumentParser, path: str) -> None:
        subcommands = _subparsers(node)
        own, choices = _options(node)
        words[path] = sorted(subcommands)
        options[path] = own
        positionals[path] = [
            str(choice)
            for action in node._actions
            if not action.option_strings and action.choices is not None and not subcommands
            for choice in action.choices
        ]
        for option, allowed in choices.items():
            values[(path, option)] = allowed
        for name, child in subcommands.items():
            walk(child, f"{path} {name}".strip())

    walk(parser, "")
    commands = [f"{path} {name}".strip() for path, names in words.items() for name in names]
    lines.append(f'            {"|".join(shlex.quote(c) for c in commands)}) path="$key" ;;')
    lines += ["        esac", "    done"]
    lines.append('    case "$prev" in')
    for option in sorted(_FILE_OPTIONS):
        lines.append(f'        {option}) COMPREPLY=($(compgen -f -- "$cur")); return ;;')
    lines.append("    esac")
    lines.append('    case "$path|$prev" in')
    for (path, option), allowed in sorted(values.items()):
        offered = shlex.quote(" ".join(allowed))
        lines.append(
            f'        {shlex.quote(f"{path}|{option}")}) COMPREPLY=($(compgen -W {offered} -- "$cur")); return ;;'
        )
    lines.append("    esac")
    lines.append('    case "$path" in')
    for path in sorted(words):
        offered = shlex.quote(" ".join([*words[path], *positionals[path], *options[path]]))
        lines.append(f'        {shlex.quote(path)}) COMPREPLY=($(compgen -W {offered} -- "$cur")) ;;')
    lines += ["    esac", "}", f"complete -o default -F _{program}_complete {program}", ""]
    return "\n".join(lines)


def cmd_completion(args: argparse.Namespace) -> int:
    from mnemodb.cli.main import build_parser

    script = bash_script(build_parser())
    if args.shell == "zsh":
        script = "autoload -U +X bashcompinit && bashcompinit\n" + script
    print(script, end="")
    return 0


def add_command(commands: Any) -> None:
    completion = commands.add_parser("completion", help="print a shell completion script: eval it in your shell's rc")
    completion.add_argument("shell", choices=("bash", "zsh"))
    completion.set_defaults(run=cmd_completion)
