"""`mnemodb doctor`: what state the database and the set-up are in, and what to fix.

It reads and checks; it changes nothing (a database that does not exist is not created,
one that needs a schema upgrade is opened read-only). Each finding is a line; the ones
that need action say what to do, and make the exit status 1.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mnemodb.cli.main import CliError, print_json

if TYPE_CHECKING:
    from mnemodb.engine import Engine
    from mnemodb.search.embedders import Embedder

__all__ = ["add_command"]

# What each profile's upstream variables, and mnemodb's own, are read for.
_VARIABLES = {
    "MNEMODB_DB": "the database (every profile)",
    "MNEMODB_PROFILE": "the profile serve runs",
    "MNEMODB_SCOPE": "the scope writes go to",
    "MNEMODB_READ_SCOPES": "the scopes reads see",
    "MNEMODB_EMBEDDER": "the embedder",
    "MNEMODB_EMBED_URL": "the http embedder's endpoint",
    "MNEMODB_TOOL_TIMEOUT_MS": "the per-call time limit",
    "MEMDB_PATH": "the memdb profile's database",
    "MEMDB_TOOL_TIMEOUT_MS": "the memdb profile's time limit",
    "MEMORY_FILE_PATH": "the knowledge-graph profile's server-memory file",
    "TOPODB_DB": "the topodb profile's database",
    "TOPODB_SCOPE": "the topodb profile's scope",
}


@dataclass
class Report:
    facts: dict[str, Any] = field(default_factory=dict)
    fix: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def cmd_doctor(args: argparse.Namespace) -> int:
    from mnemodb.engine import Engine, EngineError
    from mnemodb.search.embedders import INSTALL_HINT, local_available, local_model_path, onnx_runtime_available
    from mnemodb.server import config
    from mnemodb.store import sqlite_path

    report = Report()
    try:
        location = config.load_database(args, os.environ).db_path
    except config.ConfigError as exc:
        raise CliError(str(exc)) from None
    db = Path(location).expanduser()
    report.facts["database"] = str(db)
    report.facts["environment"] = {name: os.environ[name] for name in _VARIABLES if os.environ.get(name)}
    for name in report.facts["environment"]:
        report.notes.append(f"{name} is set: {_VARIABLES[name]}")

    # The embedder, as `serve` would pick it for the native profile.
    try:
        settings = config.load_embedding(argparse.Namespace(), os.environ)
        embedder = config.make_embedder(settings, by_default=True)
        report.facts["embedder"] = embedder.model if embedder is not None else "none"
    except config.ConfigError as exc:
        embedder = None
        report.facts["embedder"] = "misconfigured"
        report.fix.append(f"the embedder settings are wrong: {exc}")
    report.facts["local_model"] = str(local_model_path()) if local_available() else None
    if not local_available():
        report.notes.append(f"search by meaning is off: the local model is not installed ({INSTALL_HINT})")
    elif not onnx_runtime_available():
        report.notes.append(
            "the local model runs in numpy, about 5x slower than on ONNX Runtime (pip install onnxruntime)"
        )

    if sqlite_path(location) is None:
        # A database server: it says itself whether the data is there and what may be done.
        report.facts["database"] = location
        try:
            engine = Engine.open(location, embedder=embedder)
        except EngineError as exc:
            report.fix.append(f"the database cannot be opened: {exc}")
            return _print(report, args)
        with engine:
            try:
                _examine(engine, embedder, report, thorough=args.thorough)
            except EngineError as exc:
                report.fix.append(f"the database could not be read through: {exc}")
        return _print(report, args)
    if not db.exists():
        report.fix.append(f"there is no database at {db}: it is made by the first write (mnemodb serve, remember)")
        return _print(report, args)
    writable = os.access(db, os.W_OK) and os.access(db.resolve().parent, os.W_OK)
    if not writable:
        report.notes.append(f"{db} is read-only here: it was checked without writing")
    try:
        engine = Engine.open(str(db), read_only=not writable, embedder=embedder)
    except EngineError as exc:
        report.fix.append(f"the database cannot be opened: {exc}")
        return _print(report, args)
    with engine:
        try:
            _examine(engine, embedder, report, thorough=args.thorough)
        except EngineError as exc:  # a read that crossed damaged pages, say
            report.fix.append(f"the database could not be read through: {exc}")
    return _print(report, args)


def _examine(engine: Engine, embedder: Embedder | None, report: Report, *, thorough: bool) -> None:
    """The database's checks, sizes, vectors and tokens, into `report`."""
    health = engine.store.check(thorough=thorough)
    report.facts["schema"] = f"{health.schema_version} (this mnemodb writes {health.latest_schema})"
    report.facts.update(health.details)
    per_scope = engine.memories_per_scope()
    report.facts["memories"] = sum(per_scope.values())
    report.facts["scopes"] = len(per_scope)
    report.facts["change_log_seq"] = engine.current_seq()
    for problem in health.problems:
        report.fix.append(f"the database is damaged: {problem} (restore a backup, or export what reads back)")
    if health.details.get("wal_bytes", 0) > 64 * 1024 * 1024:
        report.notes.append("the WAL is over 64 MB: a process holds a long read open, or writes never pause")
    free, total = health.details.get("free_bytes", 0), health.details.get("database_bytes", 0) or 1
    if free > 0.5 * total and total > 16 * 1024 * 1024:
        report.notes.append(f"{free * 100 // total}% of the file is free pages: VACUUM would shrink it")
    if embedder is not None:
        done, items = engine.embeddings.coverage()
        report.facts["vectors_current"] = f"{done} of {items}"
        if items - done > 0:
            waiting = items - done
            report.notes.append(
                f"{waiting} {'item has' if waiting == 1 else 'items have'} no current vector yet: a running "
                "server embeds them, or run mnemodb reindex"
            )
    live = engine.tokens.list()
    report.facts["tokens"] = len(live)
    report.facts["http_needs_a_token"] = engine.tokens.required()
    if not live and engine.tokens.required():
        report.notes.append(
            "no live token, but the HTTP server still requires one (tokens were made before): "
            "make one (mnemodb token create NAME), or reopen it (mnemodb token reopen)"
        )


def _print(report: Report, args: argparse.Namespace) -> int:
    status = 1 if report.fix else 0
    if args.json:
        print_json({"facts": report.facts, "fix": report.fix, "notes": report.notes, "ok": not report.fix})
        return status
    width = max(len(key) for key in report.facts)
    for key, value in report.facts.items():
        shown = (", ".join(value) or "-") if key == "environment" else value
        print(f"{key.replace('_', ' '):<{width}}  {'-' if shown is None else shown}")
    for note in report.notes:
        print(f"note: {note}")
    for line in report.fix:
        print(f"fix:  {line}")
    if not report.fix:
        print("ok: nothing to fix")
    sys.stdout.flush()
    return status


def add_command(commands: Any, store_options: Any) -> None:
    doctor = commands.add_parser("doctor", help="check the database and the set-up, and say what to fix")
    doctor.add_argument(
        "--thorough", action="store_true", help="check every page and index entry (reads the whole file)"
    )
    store_options(doctor, scope=False)
    doctor.set_defaults(run=cmd_doctor)
