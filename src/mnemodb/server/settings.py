"""What the server is set up with, and the pieces every profile's settings are read with.

`config.load` reads the settings; each profile's spec (`profiles.REGISTRY`) says how its
own part is read. Both build on this module, which knows no profile by name.

Precedence: an explicit flag, then the profile's upstream variable (so a client config
written for that server keeps working), then mnemodb's own variable, then the default.
"""

from __future__ import annotations

import argparse
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from mnemodb.model.value import Value, described
from mnemodb.search.embedder_factory import EmbeddingSettings
from mnemodb.store import sqlite_path
from mnemodb.store.files import not_a_regular_file

if TYPE_CHECKING:
    from mnemodb.engine.properties import IndexSpec

DEFAULT_DB = ".mnemodb/memory.db"
DEFAULT_WRITE_SCOPE = "shared"
DEFAULT_TIMEOUT_MS = 15_000
DEFAULT_LOG_LEVEL = "info"
DEFAULT_PORT = 8765
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
DEFAULT_HEADER_TIMEOUT_S = 10.0
DEFAULT_KEEP_ALIVE_TIMEOUT_S = 5.0
_LOOPBACK_NAMES = ("localhost",)


class ConfigError(Exception):
    """A setting that cannot be used; the message names it and says what is expected."""


@described
class JwtSettings(Value):
    """Bearer JWTs from an identity provider, checked by signature, issuer, audience and
    expiry. Their `scope_claim` (OAuth's space-separated `scope` by default) says what the
    holder may do: `read:SCOPE` and `write:SCOPE` entries; the first `write:` scope is where
    writes go by default, and a token with none is read-only."""

    issuer: str
    audience: str
    key: str
    """A shared secret (HS256) or a PEM public key (RS256, ES256...)."""
    algorithms: tuple[str, ...]
    scope_claim: str = "scope"


@described
class HttpSettings(Value):
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    """0 picks a free port (the log says which)."""
    insecure: bool = False
    """Serve a non-loopback address without authentication anyway."""
    allowed_hosts: tuple[str, ...] = ()
    """Host header values accepted besides the loopback names and the bound address."""
    allowed_origins: tuple[str, ...] = ()
    """Origin header values accepted besides the loopback origins (no Origin is accepted too)."""
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    rate_limit: float = 0.0
    """Requests per second each token (or, without tokens, each client address) may make,
    with bursts of as many; 0 is no limit."""
    jwt: JwtSettings | None = None
    public_url: str | None = None
    """The URL clients reach the server by (behind a proxy, say), for the OAuth
    protected-resource metadata; default http://HOST:PORT."""
    header_timeout: float = DEFAULT_HEADER_TIMEOUT_S
    """Seconds a client has to send a request's headers; its body then gets as long again,
    plus a second for every 64 KiB of it, and a response it stops reading as long again."""
    keep_alive_timeout: float = DEFAULT_KEEP_ALIVE_TIMEOUT_S
    """Seconds an idle connection is kept open between requests."""
    max_connections: int | None = None
    """Connections served at once; more are refused with 503. None: from the process's
    open-file limit, leaving room for the database (see `http.default_max_connections`)."""
    ui: bool = True
    """Serve the web inspector at /ui beside /mcp."""


def is_loopback(host: str) -> bool:
    """True for an address (or `localhost`) that only this machine can reach."""
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@described
class Settings(Value):
    profile: str
    db_path: str
    write_scope: str
    read_scopes: tuple[str, ...] | None
    tool_timeout_ms: int
    log_level: str
    memory_file: str | None = None
    """knowledge-graph profile: the server-memory JSONL file to import on start, if it exists."""
    db_display: str = ""
    """The database path as the user gave it (topodb's db_info reports it so)."""
    spec: IndexSpec | None = None
    """topodb profile: the index spec from --spec (None keeps the stored one)."""
    allow_unscoped_changes: bool = False
    """topodb profile: serve get_changes, the one read that crosses scopes."""
    embedding: EmbeddingSettings = field(default_factory=EmbeddingSettings)
    http: HttpSettings | None = None
    """Serve Streamable HTTP with these settings; None serves stdio."""


@described
class DatabaseSettings(Value):
    """The database a command opens, and the scope it writes to."""

    db_path: str
    write_scope: str


@dataclass(frozen=True, eq=False, repr=False)
class UpstreamVariables(Value):
    """An upstream server's own variables, read before mnemodb's own (`MNEMODB_DB`,
    `MNEMODB_TOOL_TIMEOUT_MS`, `MNEMODB_LOG_LEVEL`) so its users' configs keep working."""

    db: str | None = None
    tool_timeout_ms: str | None = None
    log_level: str | None = None


def option(args: argparse.Namespace, name: str) -> Any:
    """A parsed flag's value; None for a flag the command does not have (a command other
    than serve has no --tool-timeout-ms, and reads only what it has)."""
    return getattr(args, name, None)


def given(args: argparse.Namespace, name: str) -> bool:
    """Whether the flag was given: it has a value, or is a switch that was set."""
    value = option(args, name)
    return value is not None and value is not False


def env_value(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name)
    if value is not None and "\x00" in value:
        raise ConfigError(f"Invalid {name}: null byte detected")
    return value


def read_setting_file(path: Path, context: str) -> str:
    """A setting's file, as UTF-8 text. A FIFO or a device is refused before it is opened:
    reading a FIFO would block the start for good."""
    kind = not_a_regular_file(path)
    if kind is not None:
        raise ConfigError(f"{context}: it is {kind}, not a file")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise ConfigError(f"{context}: {reason}") from None


def resolve_db_path(value: str) -> str:
    """Where the database is: a file path or `sqlite://` URL as an absolute path (relative
    to the working directory), `:memory:` as is, and any other store's URL as given (the
    store says whether it knows it: `store.open_store`)."""
    value = value.strip()
    path = sqlite_path(value)
    if path is None:
        return value
    if path == ":memory:":
        return path
    return str(Path(path).expanduser().resolve())


def _named(env: Mapping[str, str], name: str | None) -> str | None:
    """A variable naming a path, when it is set and not blank."""
    raw = env_value(env, name) if name is not None else None
    return raw if raw is not None and raw.strip() else None


def database(
    flag: str | None,
    env: Mapping[str, str],
    *,
    upstream: str | None = None,
    derived: str | None = None,
    default: str = DEFAULT_DB,
) -> str:
    """The database as the user gave it: the flag, else the upstream's variable, else a
    path `derived` from the upstream's other settings, else MNEMODB_DB, else `default`
    (a blank variable counts as unset)."""
    if flag is not None:
        return flag
    return _named(env, upstream) or derived or _named(env, "MNEMODB_DB") or default


def write_scope(flag: str | None, env: Mapping[str, str]) -> str:
    return flag or env_value(env, "MNEMODB_SCOPE") or DEFAULT_WRITE_SCOPE


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


def checked_timeout(timeout_ms: int) -> int:
    if timeout_ms < 0:
        raise ConfigError("Invalid --tool-timeout-ms: expected a non-negative integer")
    return timeout_ms


def load_standard_settings(
    profile: str,
    args: argparse.Namespace,
    env: Mapping[str, str],
    *,
    upstream: UpstreamVariables = UpstreamVariables(),
    derived_db: str | None = None,
    default_db: str = DEFAULT_DB,
) -> Settings:
    """A profile's settings read the usual way: --db, --scope, --read-scopes,
    --tool-timeout-ms and --log-level, else the upstream's variables, else mnemodb's own
    (MNEMODB_DB, MNEMODB_SCOPE, MNEMODB_READ_SCOPES, MNEMODB_TOOL_TIMEOUT_MS,
    MNEMODB_LOG_LEVEL), else the defaults."""
    db = database(option(args, "db"), env, upstream=upstream.db, derived=derived_db, default=default_db)

    timeout: int | None = option(args, "tool_timeout_ms")
    if timeout is None:
        for name in (upstream.tool_timeout_ms, "MNEMODB_TOOL_TIMEOUT_MS"):
            raw = env_value(env, name) if name is not None else None
            if raw is not None and name is not None:
                timeout = _timeout(raw, name)
                break
    timeout = checked_timeout(DEFAULT_TIMEOUT_MS if timeout is None else timeout)

    level: str | None = option(args, "log_level")
    if level is None:
        for name in (upstream.log_level, "MNEMODB_LOG_LEVEL"):
            raw = env_value(env, name) if name is not None else None
            if raw is not None and raw != "" and name is not None:
                level = _log_level(raw, name)
                break

    scope = write_scope(option(args, "scope"), env)
    read_scopes: str | None = option(args, "read_scopes")
    reads_raw = read_scopes if read_scopes is not None else env_value(env, "MNEMODB_READ_SCOPES")
    reads: tuple[str, ...] | None = None
    if reads_raw is not None:
        reads = tuple(part.strip() for part in reads_raw.split(",") if part.strip())
        if not reads:
            raise ConfigError("--read-scopes must name at least one scope (there is no unscoped read)")
    return Settings(
        profile,
        resolve_db_path(db),
        scope,
        reads,
        timeout,
        level or DEFAULT_LOG_LEVEL,
        db_display=without_password(db),
    )


def without_password(location: str) -> str:
    """`location` as it may be shown to a client or written to a log: a database URL's
    password left out."""
    if sqlite_path(location) is not None:
        return location
    parts = urlsplit(location)
    if parts.password is None:
        return location
    user, _, host = parts.netloc.rpartition("@")
    return urlunsplit(parts._replace(netloc=f"{user.partition(':')[0]}@{host}"))
