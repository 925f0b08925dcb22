"""`mnemodb list | show | forget | edit | relate`: looking at and fixing memory without an
AI client, through the engine calls the native tools make (the same references, shapes
and rules: a memory's id or hash, an entity's name or id, a relation's id).

Text output is for people (one line per item, ISO 8601 UTC times); `--json` prints the
shapes the native tools return.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mnemodb.cli.main import CliError, open_engine, print_json, store_options
from mnemodb.model.times import iso_utc

__all__ = ["add_commands"]

# A memory's text in the editor, then what `edit` takes out of the file: everything but
# the lines that start with this.
_COMMENT = "#"


def _one_line(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


def _line(item: Any) -> str:
    from mnemodb.model.records import Memory

    if isinstance(item, Memory):
        tags = f"  [{', '.join(item.tags)}]" if item.tags else ""
        return f"{iso_utc(item.created_at)}  memory  {item.id}  {_one_line(item.content)}{tags}"
    observations = f": {'; '.join(item.observations)}" if item.observations else ""
    kind = f" ({item.entity_type})" if item.entity_type else ""
    return f"{iso_utc(item.created_at)}  entity  {item.id}  {_one_line(item.name + kind + observations)}"


def cmd_list(args: argparse.Namespace) -> int:
    from mnemodb.model.records import ItemFilter
    from mnemodb.server.profiles.native import item_shape

    kinds = _kinds(args.kinds)
    where = ItemFilter(
        types=tuple(_split(args.types)),
        tags=tuple(_split(args.tags)),
        min_importance=args.min_importance,
    )
    with open_engine(args, reading=True) as engine:
        page = engine.items.search(None, where=where, kinds=kinds, limit=args.limit, offset=args.offset)
    if args.json:
        print_json({"items": [item_shape(f.item) for f in page.found], "more": page.more})
        return 0
    if not page.found:
        print("nothing stored matches")
        return 0
    for found in page.found:
        print(_line(found.item))
    if page.more:
        print(f"... more: --offset {args.offset + args.limit}", file=sys.stderr)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from mnemodb.model.records import Edge, Memory
    from mnemodb.server.profiles.native import change_shape, item_shape, relation_shape

    with open_engine(args, reading=True) as engine:
        [found] = engine.items.get([args.ref])
        if found is None:
            raise CliError(f"nothing is called {args.ref!r} (a memory's id or hash, an entity's name or id)")
        if isinstance(found, Edge):
            raise CliError(f"{args.ref!r} is a relation: show one of its ends")
        edges, ends = engine.items.edges_of([found], include_closed=True)
        history = engine.items.history(args.ref)
    shape = item_shape(found, full=True)
    relations = [relation_shape(edge, ends) for edge in edges]
    changes = [change_shape(change) for change in history]
    if args.json:
        print_json({"item": shape, "relations": relations, "history": changes})
        return 0
    if isinstance(found, Memory):
        print(f"memory {found.id}  hash {found.hash}")
        print(found.content)
        for label, value in (
            ("summary", found.summary),
            ("tags", ", ".join(found.tags)),
            ("type", found.memory_type),
            ("importance", found.importance),
        ):
            if value:
                print(f"  {label}: {value}")
    else:
        print(f"entity {found.id}  {found.name}" + (f" ({found.entity_type})" if found.entity_type else ""))
        for observation in found.observations:
            print(f"  - {observation}")
    if found.scope != "shared":
        print(f"  scope: {found.scope}")
    print(f"  created {iso_utc(found.created_at)}, updated {iso_utc(found.updated_at)}")
    if relations:
        print("relations:")
        for relation in relations:
            until = f" until {relation['valid_to']}" if "valid_to" in relation else ""
            print(f"  {relation['from']} -{relation['type']}-> {relation['to']}  since {relation['valid_from']}{until}")
    print("history:")
    for change in changes:
        print(f"  #{change['seq']}  {change['at']}  {change['op']}")
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    from mnemodb.model.records import Edge, Memory

    with open_engine(args) as engine:
        gone = engine.items.forget(list(args.refs))
    rows = []
    for ref, found in zip(args.refs, gone, strict=True):
        if found is None:
            rows.append({"ref": ref, "status": "not_found"})
        else:
            kind = "relation" if isinstance(found, Edge) else "memory" if isinstance(found, Memory) else "entity"
            rows.append({"ref": ref, "status": "forgotten", "kind": kind, "id": found.id})
    if args.json:
        print_json({"results": rows})
    else:
        for row in rows:
            print(f"{row['ref']}: {'forgotten' if row['status'] == 'forgotten' else 'nothing by that reference'}")
    return 0 if all(row["status"] == "forgotten" for row in rows) else 1


def _editor() -> list[str]:
    command = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not command:
        raise CliError("set EDITOR (or VISUAL) to the editor to use, e.g. EDITOR=nano")
    return shlex.split(command)


def _edited(text: str, header: str, edit: Callable[[Path], None]) -> str:
    """`text` after the person has edited it in a private temporary file."""
    handle, name = tempfile.mkstemp(prefix="mnemodb-edit-", suffix=".txt")
    path = Path(name)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(f"{header}\n{text}\n")
        edit(path)
        lines = path.read_text(encoding="utf-8").splitlines()
    finally:
        path.unlink(missing_ok=True)
    return "\n".join(line for line in lines if not line.startswith(_COMMENT)).strip("\n")


def _run_editor(path: Path) -> None:
    done = subprocess.run([*_editor(), str(path)], check=False)
    if done.returncode != 0:
        raise CliError(f"the editor exited with status {done.returncode}: nothing was changed")


def cmd_edit(args: argparse.Namespace) -> int:
    from mnemodb.engine.items import Patch
    from mnemodb.model.records import Edge, Memory

    with open_engine(args) as engine:
        [found] = engine.items.get([args.ref], record_access=False)
        if found is None:
            raise CliError(f"nothing is called {args.ref!r} (a memory's id or hash, an entity's name or id)")
        if isinstance(found, Edge):
            raise CliError(f"{args.ref!r} is a relation: relations are opened and closed, not edited")
        if isinstance(found, Memory):
            header = f"{_COMMENT} memory {found.id}: change the text; lines starting with {_COMMENT} are ignored"
            text = _edited(found.content, header, _run_editor)
            if not text.strip():
                raise CliError("the text is empty: nothing was changed (use mnemodb forget to delete it)")
            if text == found.content:
                print("unchanged")
                return 0
            _, after = engine.items.revise(found.id, Patch(content=text))
        else:
            header = (
                f"{_COMMENT} entity {found.name}: one observation a line; lines starting with {_COMMENT} are ignored"
            )
            lines = [line.strip() for line in _edited("\n".join(found.observations), header, _run_editor).splitlines()]
            wanted = list(dict.fromkeys(line for line in lines if line))
            removed = tuple(o for o in found.observations if o not in wanted)
            added = tuple(o for o in wanted if o not in found.observations)
            if not removed and not added:
                print("unchanged")
                return 0
            _, after = engine.items.revise(found.id, Patch(add_observations=added, remove_observations=removed))
    if args.json:
        from mnemodb.server.profiles.native import item_shape

        print_json({"item": item_shape(after, full=True)})
    else:
        print(f"updated {after.id}")
    return 0


def cmd_relate(args: argparse.Namespace) -> int:
    from mnemodb.server.profiles.native import relation_shape

    with open_engine(args) as engine:
        [(edge, new)], _ = engine.items.relate([(args.source, args.target, args.type, {}, None)])
        ends = {item.pk: item for item in engine.items.get([edge.src, edge.dst], record_access=False) if item}
    shape = relation_shape(edge, ends)  # type: ignore[arg-type]
    if args.json:
        print_json({"relation": shape, "status": "created" if new else "exists"})
    else:
        print(f"{'related' if new else 'already related'}: {shape['from']} -{shape['type']}-> {shape['to']}  {edge.id}")
    return 0


def _split(text: str | None) -> list[str]:
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def _kinds(text: str) -> tuple[str, ...]:
    kinds = tuple(_split(text))
    if not kinds or not set(kinds) <= {"memory", "entity"}:
        raise CliError(f"--kinds takes memory, entity or both, comma-separated, not {text!r}")
    return kinds


def add_commands(commands: Any) -> None:
    """The item commands, on the `mnemodb` parser's subcommands."""
    listing = commands.add_parser("list", help="memories and entities, newest first, with filters")
    listing.add_argument("--kinds", default="memory,entity", help="memory, entity or both (default both)")
    listing.add_argument("--tags", help="only memories with every one of these tags, comma-separated")
    listing.add_argument("--types", help="only items of one of these types, comma-separated")
    listing.add_argument("--min-importance", type=int, help="only memories at least this important (0-10)")
    listing.add_argument("--limit", "-n", type=int, default=20, help="how many (default 20)")
    listing.add_argument("--offset", type=int, default=0, help="skip this many first (for the next page)")
    store_options(listing)
    listing.set_defaults(run=cmd_list)

    show = commands.add_parser("show", help="one memory or entity in full, with its relations and history")
    show.add_argument("ref", help="a memory's id or content hash, or an entity's name or id")
    store_options(show)
    show.set_defaults(run=cmd_show)

    forget = commands.add_parser("forget", help="delete memories, entities or relations (and their text from the log)")
    forget.add_argument(
        "refs", nargs="+", metavar="REF", help="a memory's id or hash, an entity's name or id, a relation's id"
    )
    store_options(forget)
    forget.set_defaults(run=cmd_forget)

    edit = commands.add_parser("edit", help="change a memory's text or an entity's observations in $EDITOR")
    edit.add_argument("ref", help="a memory's id or content hash, or an entity's name or id")
    store_options(edit)
    edit.set_defaults(run=cmd_edit)

    relate = commands.add_parser("relate", help="relate two items: mnemodb relate FROM TYPE TO")
    relate.add_argument("source", metavar="FROM", help="a memory's id or hash, or an entity's name or id")
    relate.add_argument("type", metavar="TYPE", help="what the relation says, e.g. works_at")
    relate.add_argument("target", metavar="TO", help="a memory's id or hash, or an entity's name or id")
    store_options(relate)
    relate.set_defaults(run=cmd_relate)
