"""topodb-mcp's settings: its flags, its variables and its rules for them, which differ from
the other profiles' (a required --db, a scope checked as a ULID, no mnemodb variables)."""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Mapping
from pathlib import Path

from mnemodb.engine import Engine, EngineError
from mnemodb.engine.properties import IndexSpec
from mnemodb.server.settings import (
    DEFAULT_LOG_LEVEL,
    DEFAULT_TIMEOUT_MS,
    ConfigError,
    Settings,
    checked_timeout,
    env_value,
    option,
    read_setting_file,
    resolve_db_path,
)

log = logging.getLogger("mnemodb")

TOPODB_DEFAULT_DB = ".topodb/memory.redb"


def load_settings(profile: str, args: argparse.Namespace, env: Mapping[str, str]) -> Settings:
    """--db is required (TOPODB_DB stands in for it, an empty value meaning
    `.topodb/memory.redb` as in topodb's editor extension); --scope, else TOPODB_SCOPE, else
    shared; the read set defaults to the write scope; --spec and --allow-unscoped-changes."""
    from mnemodb.server.profiles.topodb.wire import ToolError, parse_scope

    db: str | None = option(args, "db")
    if db is None:
        raw = env_value(env, "TOPODB_DB")
        if raw is None:
            raise ConfigError("missing required --db <path> (or set TOPODB_DB)")
        db = raw or TOPODB_DEFAULT_DB
    if not db.strip():
        raise ConfigError("--db must name a file")
    scope: str | None = option(args, "scope")
    write = scope if scope is not None else (env_value(env, "TOPODB_SCOPE") or "shared")
    try:
        write = parse_scope(write)
    except ToolError as exc:
        raise ConfigError(str(exc).replace("invalid scope", "invalid --scope value", 1)) from None
    read_scopes: str | None = option(args, "read_scopes")
    reads: tuple[str, ...] | None = None
    if read_scopes is not None:
        parts = [part.strip() for part in read_scopes.split(",") if part.strip()]
        if not parts:
            raise ConfigError(
                f'--read-scopes value "{read_scopes}" is empty; expected a comma-separated list of "shared" or '
                "scope ULIDs"
            )
        try:
            reads = tuple(dict.fromkeys(parse_scope(part) for part in parts))
        except ToolError as exc:
            raise ConfigError(str(exc).replace("invalid scope", "invalid --read-scopes entry", 1)) from None
    spec_path: str | None = option(args, "spec")
    spec: IndexSpec | None = None
    if spec_path is not None:
        text = read_setting_file(Path(spec_path), f"reading --spec {spec_path}")
        try:
            spec = IndexSpec.from_json(json.loads(text))
        except (ValueError, EngineError) as exc:
            raise ConfigError(f"parsing --spec {spec_path} as IndexSpec JSON: {exc}") from None
    timeout: int | None = option(args, "tool_timeout_ms")
    return Settings(
        profile,
        resolve_db_path(db),
        write,
        reads,
        checked_timeout(DEFAULT_TIMEOUT_MS if timeout is None else timeout),
        option(args, "log_level") or DEFAULT_LOG_LEVEL,
        db_display=db,
        spec=spec,
        allow_unscoped_changes=bool(option(args, "allow_unscoped_changes")),
    )


def apply_index_spec(engine: Engine, settings: Settings) -> bool:
    """Before serving: index the graph as --spec says (None keeps the stored spec). False,
    logged, when the spec cannot be applied: the server must not start."""
    try:
        engine.nodes.use_spec(settings.spec)
    except EngineError as exc:
        log.error("Failed to apply the index spec: %s", exc)
        return False
    return True
