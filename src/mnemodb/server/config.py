"""Settings from the parsed command line and the environment: the one reader of both, for
`serve` and every other command.

`load(args, env)` gives `serve` its settings: what every profile shares is read here, and
each profile's own part by its spec in `profiles.REGISTRY`. `load_database(args, env)`
gives the other commands the database and scope they open, by the same rules;
`load_embedding(args, env)` the embedder they use.

Precedence: an explicit flag, then the profile's upstream variable (so a client config
written for that server keeps working), then mnemodb's own variable, then the default.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, TextIO

from mnemodb.search.embedder_factory import EMBEDDERS, EmbedderChoiceError, EmbeddingSettings
from mnemodb.search.embedder_factory import make_embedder as make_search_embedder
from mnemodb.search.ranking import DEFAULT_FUSION, parse_fusion
from mnemodb.server.profiles import DEFAULT_PROFILE, REGISTRY, profile_spec
from mnemodb.server.settings import (
    DEFAULT_DB,
    DEFAULT_HEADER_TIMEOUT_S,
    DEFAULT_KEEP_ALIVE_TIMEOUT_S,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_PORT,
    ConfigError,
    DatabaseSettings,
    HttpSettings,
    JwtSettings,
    Settings,
    database,
    env_value,
    is_loopback,
    option,
    read_setting_file,
    resolve_db_path,
    write_scope,
)

if TYPE_CHECKING:
    from mnemodb.search.embedders import Embedder

__all__ = [
    "DEFAULT_DB",
    "EMBEDDERS",
    "ConfigError",
    "DatabaseSettings",
    "EmbeddingSettings",
    "HttpSettings",
    "JwtSettings",
    "Settings",
    "configure_logging",
    "is_loopback",
    "load",
    "load_database",
    "load_embedding",
    "load_http",
    "load_jwt",
    "log_tool_call",
    "make_embedder",
    "resolve_db_path",
]

LOG_LEVELS = {"error": logging.ERROR, "warn": logging.WARNING, "info": logging.INFO, "debug": logging.DEBUG}
_MAX_TIMEOUT_S = 3600.0
_JWT_FLAGS = (("--jwt-issuer", "jwt_issuer"), ("--jwt-audience", "jwt_audience"), ("--jwt-key", "jwt_key"))
# Flags of the HTTP transport, refused without --http (and --public-url with them).
_HTTP_FLAGS = (
    ("--host", "host"),
    ("--port", "port"),
    ("--insecure", "insecure"),
    ("--max-body-bytes", "max_body_bytes"),
    ("--rate-limit", "rate_limit"),
    ("--public-url", "public_url"),
    ("--header-timeout", "header_timeout"),
    ("--keep-alive-timeout", "keep_alive_timeout"),
    ("--max-connections", "max_connections"),
)


def load(args: argparse.Namespace, env: Mapping[str, str]) -> Settings:
    """`serve`'s settings from its parsed flags and the environment. A flag missing from
    `args` counts as not given."""
    profile = option(args, "profile")
    if profile is None:
        raw_profile = env_value(env, "MNEMODB_PROFILE")
        profile = DEFAULT_PROFILE if raw_profile is None else raw_profile
    try:
        spec = profile_spec(profile)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    http = bool(option(args, "http"))
    if not http:
        given = [flag for flag, name in _JWT_FLAGS if option(args, name)]
        if given:
            raise ConfigError(f"{given[0]} applies to the HTTP transport: add --http")
    embedding = load_embedding(args, env)
    for other in REGISTRY.values():
        for profile_option in other.options if other.name != spec.name else ():
            if profile_option.given(args):
                raise ConfigError(f"{profile_option.flag} applies to the {other.name} profile only")
    settings = spec.load_settings(spec.name, args, env)
    return replace(settings, embedding=embedding, http=load_http(args, env))


def load_database(args: argparse.Namespace, env: Mapping[str, str]) -> DatabaseSettings:
    """The database a command other than `serve` opens, and its write scope: --db, else
    MNEMODB_DB, else the default; --scope, else MNEMODB_SCOPE, else shared."""
    # An empty --db means no --db here, as it always has for these commands.
    db = database(option(args, "db") or None, env)
    return DatabaseSettings(resolve_db_path(db), write_scope(option(args, "scope"), env))


def load_jwt(args: argparse.Namespace, env: Mapping[str, str]) -> JwtSettings | None:
    """JWT settings from flags, else MNEMODB_JWT_ISSUER, MNEMODB_JWT_AUDIENCE, MNEMODB_JWT_KEY
    (the key, or @FILE), MNEMODB_JWT_ALGORITHMS and MNEMODB_JWT_SCOPE_CLAIM; None without
    any of issuer, audience and key."""
    issuer = option(args, "jwt_issuer") or env_value(env, "MNEMODB_JWT_ISSUER") or None
    audience = option(args, "jwt_audience") or env_value(env, "MNEMODB_JWT_AUDIENCE") or None
    key = option(args, "jwt_key") or env_value(env, "MNEMODB_JWT_KEY") or None
    if issuer is None and audience is None and key is None:
        return None
    if issuer is None or audience is None or key is None:
        missing = [n for n, v in (("--jwt-issuer", issuer), ("--jwt-audience", audience), ("--jwt-key", key)) if not v]
        raise ConfigError(f"JWT verification needs --jwt-issuer, --jwt-audience and --jwt-key: {missing[0]} is missing")
    if key.startswith("@"):
        key = read_setting_file(Path(key[1:]).expanduser(), f"Invalid --jwt-key {key}")
    pem = "-----BEGIN" in key
    names = (
        option(args, "jwt_algorithms")
        or env_value(env, "MNEMODB_JWT_ALGORITHMS")
        or ("RS256,ES256" if pem else "HS256")
    )
    chosen = tuple(a.strip() for a in names.split(",") if a.strip())
    if not chosen or any(a.lower() == "none" for a in chosen):
        raise ConfigError(f"Invalid --jwt-algorithms {names!r}: name signing algorithms, such as HS256 or RS256")
    if not pem and any(not a.startswith("HS") for a in chosen):
        raise ConfigError("a --jwt-key that is not a PEM public key is a shared secret: use HS256, HS384 or HS512")
    scope_claim = option(args, "jwt_scope_claim") or env_value(env, "MNEMODB_JWT_SCOPE_CLAIM") or "scope"
    return JwtSettings(issuer, audience, key, chosen, scope_claim.strip())


def load_http(args: argparse.Namespace, env: Mapping[str, str]) -> HttpSettings | None:
    """HTTP settings from flags, else MNEMODB_HOST, MNEMODB_PORT, MNEMODB_ALLOWED_HOSTS,
    MNEMODB_ALLOWED_ORIGINS, MNEMODB_MAX_BODY_BYTES, MNEMODB_RATE_LIMIT,
    MNEMODB_HEADER_TIMEOUT, MNEMODB_KEEP_ALIVE_TIMEOUT, MNEMODB_MAX_CONNECTIONS and
    MNEMODB_PUBLIC_URL, with JWT verification from `load_jwt`; None when serving stdio."""
    if not option(args, "http"):
        given = [
            flag for flag, name in _HTTP_FLAGS if option(args, name) is not None and option(args, name) is not False
        ]
        if given:
            raise ConfigError(f"{given[0]} applies to the HTTP transport: add --http")
        return None
    jwt = load_jwt(args, env)
    public_url: str | None = option(args, "public_url") or env_value(env, "MNEMODB_PUBLIC_URL") or None
    host = (option(args, "host") or env_value(env, "MNEMODB_HOST") or "127.0.0.1").strip()
    if not host:
        raise ConfigError("Invalid --host: empty")
    port: int | None = option(args, "port")
    if port is None:
        raw = env_value(env, "MNEMODB_PORT")
        try:
            port = int(raw) if raw else DEFAULT_PORT
        except ValueError:
            raise ConfigError(f"Invalid MNEMODB_PORT {raw!r}: expected a port number") from None
    if not 0 <= port <= 65535:
        raise ConfigError(f"Invalid --port {port}: expected 0 (any free port) to 65535")

    max_body_bytes: int | None = option(args, "max_body_bytes")
    if max_body_bytes is None:
        max_body_bytes = int(_number(env, "MNEMODB_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES))
    if max_body_bytes < 1024:
        raise ConfigError(f"Invalid --max-body-bytes {max_body_bytes}: expected at least 1024")
    rate_limit: float | None = option(args, "rate_limit")
    if rate_limit is None:
        rate_limit = _number(env, "MNEMODB_RATE_LIMIT", 0.0)
    if not (rate_limit >= 0 and rate_limit != float("inf")):
        raise ConfigError(f"Invalid --rate-limit {rate_limit}: expected requests per second, 0 for no limit")
    timeouts: dict[str, float] = {}
    for flag, variable, chosen, default in (
        ("--header-timeout", "MNEMODB_HEADER_TIMEOUT", option(args, "header_timeout"), DEFAULT_HEADER_TIMEOUT_S),
        (
            "--keep-alive-timeout",
            "MNEMODB_KEEP_ALIVE_TIMEOUT",
            option(args, "keep_alive_timeout"),
            DEFAULT_KEEP_ALIVE_TIMEOUT_S,
        ),
    ):
        seconds = _number(env, variable, default) if chosen is None else chosen
        if not 0 < seconds <= _MAX_TIMEOUT_S:
            raise ConfigError(f"Invalid {flag} {seconds:g}: expected seconds, more than 0 and at most 3600")
        timeouts[flag] = seconds
    max_connections: int | None = option(args, "max_connections")
    if max_connections is None:
        raw_cap = env_value(env, "MNEMODB_MAX_CONNECTIONS")
        if raw_cap:
            try:
                max_connections = int(raw_cap)
            except ValueError:
                raise ConfigError(f"Invalid MNEMODB_MAX_CONNECTIONS {raw_cap!r}: expected a whole number") from None
    if max_connections is not None and max_connections < 1:
        raise ConfigError(f"Invalid --max-connections {max_connections}: expected at least 1")

    def listed(name: str, variable: str) -> tuple[str, ...]:
        value = option(args, name) or env_value(env, variable) or ""
        return tuple(v.strip() for v in value.split(",") if v.strip())

    return HttpSettings(
        host=host,
        port=port,
        insecure=bool(option(args, "insecure")),
        allowed_hosts=listed("allowed_hosts", "MNEMODB_ALLOWED_HOSTS"),
        allowed_origins=listed("allowed_origins", "MNEMODB_ALLOWED_ORIGINS"),
        max_body_bytes=max_body_bytes,
        rate_limit=rate_limit,
        jwt=jwt,
        public_url=public_url.rstrip("/") if public_url else None,
        header_timeout=timeouts["--header-timeout"],
        keep_alive_timeout=timeouts["--keep-alive-timeout"],
        max_connections=max_connections,
        ui=not option(args, "no_ui"),
    )


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env_value(env, name)
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"Invalid {name} {raw!r}: expected a number") from None


def load_embedding(args: argparse.Namespace, env: Mapping[str, str]) -> EmbeddingSettings:
    """Embedding settings from flags, else MNEMODB_EMBEDDER, MNEMODB_EMBED_URL,
    MNEMODB_EMBED_MODEL, MNEMODB_EMBED_KEY and MNEMODB_SEARCH_WEIGHTS."""
    kind = (option(args, "embedder") or env_value(env, "MNEMODB_EMBEDDER") or "auto").strip().lower()
    if kind not in EMBEDDERS:
        raise ConfigError(f"Invalid embedder {kind!r}: expected one of {', '.join(EMBEDDERS)}")
    url = option(args, "embed_url") or env_value(env, "MNEMODB_EMBED_URL") or None
    model = option(args, "embed_model") or env_value(env, "MNEMODB_EMBED_MODEL") or None
    key = option(args, "embed_key") or env_value(env, "MNEMODB_EMBED_KEY") or None
    if kind == "http":
        if not url or not url.startswith(("http://", "https://")):
            raise ConfigError("the http embedder needs --embed-url (or MNEMODB_EMBED_URL) starting with http(s)://")
        if not model or not model.strip():
            raise ConfigError("the http embedder needs --embed-model (or MNEMODB_EMBED_MODEL)")
    weights: str | None = option(args, "search_weights")
    raw_weights = weights if weights is not None else env_value(env, "MNEMODB_SEARCH_WEIGHTS")
    try:
        fusion = parse_fusion(raw_weights) if raw_weights else DEFAULT_FUSION
    except ValueError as exc:
        raise ConfigError(f"Invalid --search-weights: {exc}") from None
    return EmbeddingSettings(kind, url, model, key, fusion)


def make_embedder(settings: EmbeddingSettings, *, by_default: bool = True, required: bool = False) -> Embedder | None:
    """`search.embedder_factory.make_embedder`, its refusals as `ConfigError`s."""
    try:
        return make_search_embedder(settings, by_default=by_default, required=required)
    except EmbedderChoiceError as exc:
        raise ConfigError(str(exc)) from None


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


def _own_handler(logger: logging.Logger) -> logging.StreamHandler[TextIO] | None:
    """The handler `configure_logging` installs, when it is the only one an INFO record of
    `logger` would reach and nothing would filter the record on its way; else None."""
    if logger.filters or logger.disabled:
        return None
    current = logger
    while not current.handlers:
        if not current.propagate or current.parent is None:
            return None
        current = current.parent
    handlers = current.handlers
    if current is not logging.root or len(handlers) != 1:
        return None
    handler = handlers[0]
    if (
        type(handler) is not logging.StreamHandler
        or type(handler.formatter) is not _Formatter
        or handler.filters
        or handler.level > logging.INFO
    ):
        return None
    return handler


def log_tool_call(logger: logging.Logger, name: str, outcome: str, elapsed_ms: float) -> None:
    """`logger.info("Tool <name> <outcome> in <ms>ms")` with the tool's name as `tool`, which
    every tool call logs. When the only handler the record would reach is the one
    `configure_logging` installs, its line is written as that handler writes it without
    making the record: 0.8 instead of 6.2 us a call, measured in process."""
    if not logger.isEnabledFor(logging.INFO):
        return
    handler = _own_handler(logger) if name else None
    if handler is not None:
        level = _Formatter.NAMES.get(logging.INFO) or logging.getLevelName(logging.INFO)
        line = "[%s] [tool:%s] Tool %s %s in %dms\n" % (level, name, name, outcome, elapsed_ms)  # noqa: UP031
        with handler.lock or contextlib.nullcontext():
            try:
                stream = handler.stream
                stream.write(line)
                # What `StreamHandler.flush` does, under the lock already held.
                if stream and hasattr(stream, "flush"):
                    stream.flush()
            except Exception:
                handler.handleError(logger.makeRecord(logger.name, logging.INFO, "", 0, line, (), None))
        return
    logger.info("Tool %s %s in %dms", name, outcome, elapsed_ms, extra={"tool": name})


def configure_logging(level: str) -> None:
    """Logs go to stderr only: stdout belongs to the protocol."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Formatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(LOG_LEVELS.get(level, logging.INFO))
    # The SDK logs every request at INFO; keep its chatter at warnings.
    logging.getLogger("mcp").setLevel(max(logging.WARNING, root.level))
    # Every tool call is logged at INFO: a record need not find its caller's frame nor ask
    # for the process and thread it came from, which no line here shows: about 10 µs of
    # the 0.1 ms a trivial read costs the stdio transport.
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    logging._srcfile = None
