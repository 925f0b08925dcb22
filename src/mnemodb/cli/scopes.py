"""`mnemodb scope create | list`: names for scopes, so nobody has to make up a ULID.

A name stands for its scope wherever one is named: `--scope team-a`, `--read-scopes
team-a,shared`, `mnemodb token create ci --write-scope team-a`, a tool's `scope` argument.
Stored items keep the scope's ULID, so renaming is never needed and a name can be given to
a scope that already holds items.
"""

from __future__ import annotations

import argparse
from typing import Any

from mnemodb.cli.main import open_engine, print_json
from mnemodb.model.times import iso_utc

__all__ = ["add_command"]


def cmd_scope_create(args: argparse.Namespace) -> int:
    with open_engine(args) as engine:
        name, scope = engine.name_scope(args.name, args.ulid)
    if args.json:
        print_json({"name": name, "scope": scope})
    else:
        print(f"{name}  {scope}")
    return 0


def cmd_scope_list(args: argparse.Namespace) -> int:
    with open_engine(args, reading=True) as engine:
        named = engine.scope_names()
    if args.json:
        print_json([{"name": n, "scope": s, "created": iso_utc(at)} for n, s, at in named])
        return 0
    if not named:
        print("no scope has a name yet: mnemodb scope create NAME")
    for name, scope, at in named:
        print(f"{name}  {scope}  {iso_utc(at)}")
    return 0


def add_command(commands: Any, store_options: Any) -> None:
    scope = commands.add_parser("scope", help="names for scopes, usable wherever a scope ULID is")
    actions = scope.add_subparsers(dest="action", metavar="ACTION", required=True)
    create = actions.add_parser("create", help="name a new scope (or, with --ulid, an existing one)")
    create.add_argument("name", help="letters, digits, '.', '_' or '-', e.g. team-a")
    create.add_argument("--ulid", help="the scope to name, when it exists already (default: a new one)")
    store_options(create, scope=False)
    create.set_defaults(run=cmd_scope_create)
    listing = actions.add_parser("list", help="the named scopes")
    store_options(listing, scope=False)
    listing.set_defaults(run=cmd_scope_list)
