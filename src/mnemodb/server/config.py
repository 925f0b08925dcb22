"""Serve settings from flags and the environment, including each upstream's own variables.

Precedence: an explicit flag, then the profile's upstream variable (so a client config
written for that server keeps working), then mnemodb's own variable, then the default.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

DEFAULT_DB = ".mnemodb/memory.db"
MEMDB_DEFAULT_DB = ".memdb/memory.db"
DEFAULT_TIMEOUT_MS = 15_000
LOG_LEVELS = {"error": logging.ERROR, "warn": logging.WARNING, "info": logging.INFO, "debug": logging.DEBUG}


class ConfigError(Exception):
    """A setting that cannot be used; the message names it and says what is expected."""


@dataclass(frozen=True)
class Settings:
    profile: str
    db_path: str
    write_scope: str
    read_scopes: tuple[str, ...] | None
    tool_timeout_ms: int
    log_level: str


def _env(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name)
    if value is not None and "\x00" in value:
        raise ConfigError(f"Invalid {name}: null byte detected")
    return value


def resolve_db_path(value: str) -> str:
    """`:memory:` as is; otherwise an absolute path (relative to the working directory)."""
    value = value.strip()
    if value == ":memory:":
        return value
    return str(Path(value).expanduser().resolve())


def _timeout(raw: str, name: str) -> int:
    text = raw.strip()
    if not text.isdigit():
        raise ConfigError(f"Invalid {name}: expected a non-negative integer")
    return int(text)


def _log_level(raw: str, name: str) -> str:
    level = raw.strip().lower()
    if level not in ("error", "warn", "info"):
        raise ConfigError(f"Invalid {name}: {raw} (expected: error|warn|info)")
    return level


def load(
    *,
    profile: str,
    db: str | None = None,
    scope: str | None = None,
    read_scopes: str | None = None,
    tool_timeout_ms: int | None = None,
    log_level: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Settings:
    env = os.environ if env is None else env
    memdb = profile == "memdb"

    db_path = db
    if db_path is None and memdb:
        raw = _env(env, "MEMDB_PATH")
        if raw is not None and raw.strip():
            db_path = raw
    if db_path is None:
        raw = _env(env, "MNEMODB_DB")
        if raw is not None and raw.strip():
            db_path = raw
    if db_path is None:
        db_path = MEMDB_DEFAULT_DB if memdb else DEFAULT_DB

    timeout = tool_timeout_ms
    if timeout is None:
        for name in (["MEMDB_TOOL_TIMEOUT_MS"] if memdb else []) + ["MNEMODB_TOOL_TIMEOUT_MS"]:
            raw = _env(env, name)
            if raw is not None:
                timeout = _timeout(raw, name)
                break
    if timeout is None:
        timeout = DEFAULT_TIMEOUT_MS
    if timeout < 0:
        raise ConfigError("Invalid --tool-timeout-ms: expected a non-negative integer")

    level = log_level
    if level is None:
        for name in (["MEMDB_LOG_LEVEL"] if memdb else []) + ["MNEMODB_LOG_LEVEL"]:
            raw = _env(env, name)
            if raw is not None and raw != "":
                level = _log_level(raw, name)
                break
    level = level or "info"

    write_scope = scope or _env(env, "MNEMODB_SCOPE") or "shared"
    reads_raw = read_scopes if read_scopes is not None else _env(env, "MNEMODB_READ_SCOPES")
    reads: tuple[str, ...] | None = None
    if reads_raw is not None:
        reads = tuple(part.strip() for part in reads_raw.split(",") if part.strip())
        if not reads:
            raise ConfigError("--read-scopes must name at least one scope (there is no unscoped read)")
    return Settings(profile, resolve_db_path(db_path), write_scope, reads, timeout, level)


class _Formatter(logging.Formatter):
    """`[LEVEL] [tool:<name>] message`, the shape memdb logged in."""

    NAMES: ClassVar[dict[int, str]] = {logging.WARNING: "WARN"}

    def format(self, record: logging.LogRecord) -> str:
        level = self.NAMES.get(record.levelno, record.levelname)
        tool = getattr(record, "tool", None)
        prefix = f"[{level}] [tool:{tool}] " if tool else f"[{level}] "
        text = prefix + record.getMessage()
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


def configure_logging(level: str) -> None:
    """Logs go to stderr only: stdout belongs to the protocol."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Formatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(LOG_LEVELS.get(level, logging.INFO))
    # The SDK logs every request at INFO; keep its chatter at warnings.
    logging.getLogger("mcp").setLevel(max(logging.WARNING, root.level))
