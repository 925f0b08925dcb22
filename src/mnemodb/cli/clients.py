"""`mnemodb config CLIENT`: the MCP client configuration that runs this mnemodb, with
absolute paths, printed, or merged into the client's own file with `--write`.

Clients start servers from their own working directory, often without the user's PATH,
so the command is the absolute path of the `mnemodb` this runs as (or this interpreter
with `-m mnemodb`), and the database is an absolute path too: by default one per user,
`~/.mnemodb/memory.db`, which every project then shares (scopes keep agents apart).

`--write` reads the client's file (keeping every other server and setting), adds or
replaces the one entry, saves a copy of the old file beside it (`.bak`), and replaces the
file in one step; a file that is not a JSON object is refused, untouched.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemodb.cli.main import PROFILES, CliError
from mnemodb.model.value import Value
from mnemodb.server.profiles import DEFAULT_PROFILE
from mnemodb.store.files import replaced_atomically

__all__ = ["CLIENTS", "add_command"]


@dataclass(frozen=True, eq=False, repr=False)
class Client(Value):
    name: str
    key: str
    """The JSON object the servers sit in: `mcpServers`, or VS Code's `servers`."""
    stdio_type: bool
    """Whether an entry says `"type": "stdio"` (VS Code)."""

    def path(self) -> Path:
        """The file this client reads its servers from."""
        home = Path.home()
        if self.name == "claude-desktop":
            if sys.platform == "darwin":
                return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
            if sys.platform == "win32":
                return Path(os.environ.get("APPDATA", home)) / "Claude" / "claude_desktop_config.json"
            return Path(os.environ.get("XDG_CONFIG_HOME", home / ".config")) / "Claude" / "claude_desktop_config.json"
        if self.name == "cursor":
            return home / ".cursor" / "mcp.json"
        if self.name == "vscode":
            return Path.cwd() / ".vscode" / "mcp.json"
        return Path.cwd() / ".mcp.json"  # claude-code: the project's shared file


CLIENTS = {
    "claude-code": Client("claude-code", "mcpServers", stdio_type=False),
    "claude-desktop": Client("claude-desktop", "mcpServers", stdio_type=False),
    "cursor": Client("cursor", "mcpServers", stdio_type=False),
    "vscode": Client("vscode", "servers", stdio_type=True),
}


def _command() -> list[str]:
    """How a client runs this mnemodb: the console script, when this runs as one, else
    this interpreter. Absolute, and not resolved through links: a virtual environment's
    python is a link to an interpreter that does not have mnemodb."""
    script = Path(sys.argv[0])
    if script.name in ("mnemodb", "mnemodb.exe") and script.exists():
        return [str(script.absolute())]
    here = Path(sys.executable).absolute()
    beside = here.parent / ("mnemodb.exe" if sys.platform == "win32" else "mnemodb")
    if beside.is_file():
        return [str(beside)]
    return [str(here), "-m", "mnemodb"]


def server_entry(client: Client, profile: str, db: Path) -> dict[str, Any]:
    command, *prefix = _command()
    entry: dict[str, Any] = {"type": "stdio"} if client.stdio_type else {}
    entry["command"] = command
    entry["args"] = [*prefix, "serve", "--profile", profile, "--db", str(db)]
    return entry


def cmd_config(args: argparse.Namespace) -> int:
    client = CLIENTS[args.client]
    db = Path(args.db).expanduser().resolve() if args.db else Path.home() / ".mnemodb" / "memory.db"
    entry = server_entry(client, args.profile, db)
    if client.name == "claude-code" and not args.write:
        line = ["claude", "mcp", "add", args.name, "--", entry["command"], *entry["args"]]
        print(" ".join(_quoted(part) for part in line))
        return 0
    if not args.write:
        print(json.dumps({client.key: {args.name: entry}}, indent=2, ensure_ascii=False))
        return 0
    path = Path(args.file).expanduser() if args.file else client.path()
    settings = _read(path)
    servers = settings.setdefault(client.key, {})
    if not isinstance(servers, dict):
        raise CliError(f"{path}: {client.key!r} is not an object; fix it by hand first")
    replaced = args.name in servers
    servers[args.name] = entry
    if path.exists():
        backup = path.with_name(path.name + ".bak")
        shutil.copy2(path, backup)
    with replaced_atomically(path, keep_mode=True) as temporary:
        temporary.write_text(json.dumps(settings, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    kept = f" (the old file is {path.name}.bak)" if path.with_name(path.name + ".bak").exists() else ""
    print(f"{'replaced' if replaced else 'added'} {args.name!r} in {path}{kept}")
    return 0


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        value = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (ValueError, UnicodeDecodeError) as exc:
        raise CliError(f"{path} is not JSON ({exc}); left as it is") from None
    if not isinstance(value, dict):
        raise CliError(f"{path} does not hold a JSON object; left as it is")
    return value


def _quoted(part: str) -> str:
    import shlex

    return shlex.quote(part)


def add_command(commands: Any, profiles: Sequence[str] = PROFILES) -> None:
    config = commands.add_parser(
        "config",
        help="print (or --write) an MCP client's configuration for this mnemodb, with absolute paths",
    )
    config.add_argument("client", choices=sorted(CLIENTS), help="the client to configure")
    config.add_argument(
        "--profile", choices=profiles, default=DEFAULT_PROFILE, help=f"the tool set (default {DEFAULT_PROFILE})"
    )
    config.add_argument("--db", help="the database (default ~/.mnemodb/memory.db, one per user)")
    config.add_argument("--name", default="mnemodb", help="the server's name in the client (default mnemodb)")
    config.add_argument("--write", action="store_true", help="merge it into the client's file, keeping a .bak copy")
    config.add_argument("--file", help="the client's file, when not where the client keeps it")
    config.set_defaults(run=cmd_config)
