"""Serve settings from flags and the environment, including each upstream's own variables.

Precedence: an explicit flag, then the profile's upstream variable (so a client config
written for that server keeps working), then mnemodb's own variable, then the default.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from mnemodb.search.ranking import DEFAULT_FUSION, FusionWeights, parse_fusion
from mnemodb.store.files import not_a_regular_file

if TYPE_CHECKING:
    from mnemodb.search.embedders import Embedder

from mnemodb.engine.properties import IndexSpec
from mnemodb.model.errors import EngineError

DEFAULT_DB = ".mnemodb/memory.db"
MEMDB_DEFAULT_DB = ".memdb/memory.db"
TOPODB_DEFAULT_DB = ".topodb/memory.redb"
KNOWLEDGE_GRAPH = "knowledge-graph"
TOPODB = "topodb"
MEMORY_FILE = "memory.jsonl"
LEGACY_MEMORY_FILE = "memory.json"
MEMORY_DB_SUFFIX = ".mnemodb.db"
DEFAULT_TIMEOUT_MS = 15_000
LOG_LEVELS = {"error": logging.ERROR, "warn": logging.WARNING, "info": logging.INFO, "debug": logging.DEBUG}


EMBEDDERS = ("auto", "local", "http", "none")


class ConfigError(Exception):
    """A setting that cannot be used; the message names it and says what is expected."""


@dataclass(frozen=True)
class EmbeddingSettings:
    """Which embedder gives items and queries vectors, and how a search weighs them."""

    embedder: str = "auto"
    """auto (the local model when it is installed, for the native profile), local, http or none."""
    url: str | None = None
    model: str | None = None
    key: str | None = None
    fusion: FusionWeights = DEFAULT_FUSION


DEFAULT_PORT = 8765
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
DEFAULT_HEADER_TIMEOUT_S = 10.0
DEFAULT_KEEP_ALIVE_TIMEOUT_S = 5.0
_MAX_TIMEOUT_S = 3600.0
_LOOPBACK_NAMES = ("localhost",)


@dataclass(frozen=True)
class JwtSettings:
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


@dataclass(frozen=True)
class HttpSettings:
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


def is_loopback(host: str) -> bool:
    """True for an address (or `localhost`) that only this machine can reach."""
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Settings:
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


def _read_file(path: Path, context: str) -> str:
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


def memory_file_db(memory_file: str) -> str:
    """The database kept beside a server-memory file: `/x/memory.jsonl` -> `/x/memory.mnemodb.db`."""
    path = Path(memory_file)
    return str(path.with_name(path.stem + MEMORY_DB_SUFFIX))


def memory_file_path(env: Mapping[str, str]) -> tuple[str | None, bool]:
    """The knowledge-graph profile's server-memory file, absolute, and whether MEMORY_FILE_PATH named it.

    MEMORY_FILE_PATH (trimmed; empty means unset) names it; a relative path is taken
    from the working directory (upstream took it from its own install directory, which
    has no counterpart here). Unset, it is `memory.jsonl` in the working directory, or,
    when only the legacy `memory.json` is there, that file (upstream renamed it; mnemodb
    reads it and leaves it in place). None when unset and neither file exists.
    """
    raw = _env(env, "MEMORY_FILE_PATH")
    if raw is not None and raw.strip():
        return os.path.abspath(os.path.expanduser(raw.strip())), True
    current = Path(os.getcwd())
    for name in (MEMORY_FILE, LEGACY_MEMORY_FILE):
        candidate = current / name
        if candidate.exists():
            return str(candidate), False
    return None, False


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
    spec: str | None = None,
    allow_unscoped_changes: bool = False,
    embedder: str | None = None,
    embed_url: str | None = None,
    embed_model: str | None = None,
    embed_key: str | None = None,
    search_weights: str | None = None,
    http: bool = False,
    host: str | None = None,
    port: int | None = None,
    insecure: bool = False,
    allowed_hosts: str | None = None,
    allowed_origins: str | None = None,
    max_body_bytes: int | None = None,
    rate_limit: float | None = None,
    jwt_issuer: str | None = None,
    jwt_audience: str | None = None,
    jwt_key: str | None = None,
    jwt_algorithms: str | None = None,
    jwt_scope_claim: str | None = None,
    public_url: str | None = None,
    header_timeout: float | None = None,
    keep_alive_timeout: float | None = None,
    max_connections: int | None = None,
    env: Mapping[str, str] | None = None,
) -> Settings:
    env = os.environ if env is None else env
    if not http:
        jwt_flags = (("--jwt-issuer", jwt_issuer), ("--jwt-audience", jwt_audience), ("--jwt-key", jwt_key))
        given = [flag for flag, value in jwt_flags if value]
        if given:
            raise ConfigError(f"{given[0]} applies to the HTTP transport: add --http")
    embedding = load_embedding(embedder, embed_url, embed_model, embed_key, search_weights, env)
    return replace(
        _load(profile, db, scope, read_scopes, tool_timeout_ms, log_level, spec, allow_unscoped_changes, env),
        embedding=embedding,
        http=load_http(
            http,
            host,
            port,
            insecure,
            allowed_hosts,
            allowed_origins,
            max_body_bytes,
            rate_limit,
            env,
            jwt=load_jwt(jwt_issuer, jwt_audience, jwt_key, jwt_algorithms, jwt_scope_claim, env) if http else None,
            public_url=public_url or (_env(env, "MNEMODB_PUBLIC_URL") if http else None) or None,
            header_timeout=header_timeout,
            keep_alive_timeout=keep_alive_timeout,
            max_connections=max_connections,
        ),
    )


def load_jwt(
    issuer: str | None,
    audience: str | None,
    key: str | None,
    algorithms: str | None,
    scope_claim: str | None,
    env: Mapping[str, str],
) -> JwtSettings | None:
    """JWT settings from flags, else MNEMODB_JWT_ISSUER, MNEMODB_JWT_AUDIENCE, MNEMODB_JWT_KEY
    (the key, or @FILE), MNEMODB_JWT_ALGORITHMS and MNEMODB_JWT_SCOPE_CLAIM; None without
    any of issuer, audience and key."""
    issuer = issuer or _env(env, "MNEMODB_JWT_ISSUER") or None
    audience = audience or _env(env, "MNEMODB_JWT_AUDIENCE") or None
    key = key or _env(env, "MNEMODB_JWT_KEY") or None
    if issuer is None and audience is None and key is None:
        return None
    if issuer is None or audience is None or key is None:
        missing = [n for n, v in (("--jwt-issuer", issuer), ("--jwt-audience", audience), ("--jwt-key", key)) if not v]
        raise ConfigError(f"JWT verification needs --jwt-issuer, --jwt-audience and --jwt-key: {missing[0]} is missing")
    if key.startswith("@"):
        key = _read_file(Path(key[1:]).expanduser(), f"Invalid --jwt-key {key}")
    pem = "-----BEGIN" in key
    names = algorithms or _env(env, "MNEMODB_JWT_ALGORITHMS") or ("RS256,ES256" if pem else "HS256")
    chosen = tuple(a.strip() for a in names.split(",") if a.strip())
    if not chosen or any(a.lower() == "none" for a in chosen):
        raise ConfigError(f"Invalid --jwt-algorithms {names!r}: name signing algorithms, such as HS256 or RS256")
    if not pem and any(not a.startswith("HS") for a in chosen):
        raise ConfigError("a --jwt-key that is not a PEM public key is a shared secret: use HS256, HS384 or HS512")
    return JwtSettings(
        issuer, audience, key, chosen, (scope_claim or _env(env, "MNEMODB_JWT_SCOPE_CLAIM") or "scope").strip()
    )


def load_http(
    http: bool,
    host: str | None,
    port: int | None,
    insecure: bool,
    allowed_hosts: str | None,
    allowed_origins: str | None,
    max_body_bytes: int | None,
    rate_limit: float | None,
    env: Mapping[str, str],
    *,
    jwt: JwtSettings | None = None,
    public_url: str | None = None,
    header_timeout: float | None = None,
    keep_alive_timeout: float | None = None,
    max_connections: int | None = None,
) -> HttpSettings | None:
    """HTTP settings from flags, else MNEMODB_HOST, MNEMODB_PORT, MNEMODB_ALLOWED_HOSTS,
    MNEMODB_ALLOWED_ORIGINS, MNEMODB_MAX_BODY_BYTES, MNEMODB_RATE_LIMIT,
    MNEMODB_HEADER_TIMEOUT, MNEMODB_KEEP_ALIVE_TIMEOUT and MNEMODB_MAX_CONNECTIONS; None
    when serving stdio."""
    if not http:
        flags = (
            ("--host", host),
            ("--port", port),
            ("--insecure", insecure),
            ("--max-body-bytes", max_body_bytes),
            ("--rate-limit", rate_limit),
            ("--public-url", public_url),
            ("--header-timeout", header_timeout),
            ("--keep-alive-timeout", keep_alive_timeout),
            ("--max-connections", max_connections),
        )
        given = [flag for flag, value in flags if value is not None and value is not False]
        if given:
            raise ConfigError(f"{given[0]} applies to the HTTP transport: add --http")
        return None
    host = (host or _env(env, "MNEMODB_HOST") or "127.0.0.1").strip()
    if not host:
        raise ConfigError("Invalid --host: empty")
    if port is None:
        raw = _env(env, "MNEMODB_PORT")
        try:
            port = int(raw) if raw else DEFAULT_PORT
        except ValueError:
            raise ConfigError(f"Invalid MNEMODB_PORT {raw!r}: expected a port number") from None
    if not 0 <= port <= 65535:
        raise ConfigError(f"Invalid --port {port}: expected 0 (any free port) to 65535")

    if max_body_bytes is None:
        max_body_bytes = int(_number(env, "MNEMODB_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES))
    if max_body_bytes < 1024:
        raise ConfigError(f"Invalid --max-body-bytes {max_body_bytes}: expected at least 1024")
    if rate_limit is None:
        rate_limit = _number(env, "MNEMODB_RATE_LIMIT", 0.0)
    if not (rate_limit >= 0 and rate_limit != float("inf")):
        raise ConfigError(f"Invalid --rate-limit {rate_limit}: expected requests per second, 0 for no limit")
    timeouts: dict[str, float] = {}
    for option, variable, chosen, default in (
        ("--header-timeout", "MNEMODB_HEADER_TIMEOUT", header_timeout, DEFAULT_HEADER_TIMEOUT_S),
        ("--keep-alive-timeout", "MNEMODB_KEEP_ALIVE_TIMEOUT", keep_alive_timeout, DEFAULT_KEEP_ALIVE_TIMEOUT_S),
    ):
        seconds = _number(env, variable, default) if chosen is None else chosen
        if not 0 < seconds <= _MAX_TIMEOUT_S:
            raise ConfigError(f"Invalid {option} {seconds:g}: expected seconds, more than 0 and at most 3600")
        timeouts[option] = seconds
    if max_connections is None:
        raw_cap = _env(env, "MNEMODB_MAX_CONNECTIONS")
        if raw_cap:
            try:
                max_connections = int(raw_cap)
            except ValueError:
                raise ConfigError(f"Invalid MNEMODB_MAX_CONNECTIONS {raw_cap!r}: expected a whole number") from None
    if max_connections is not None and max_connections < 1:
        raise ConfigError(f"Invalid --max-connections {max_connections}: expected at least 1")

    def listed(value: str | None, name: str) -> tuple[str, ...]:
        return tuple(v.strip() for v in (value or _env(env, name) or "").split(",") if v.strip())

    return HttpSettings(
        host=host,
        port=port,
        insecure=insecure,
        allowed_hosts=listed(allowed_hosts, "MNEMODB_ALLOWED_HOSTS"),
        allowed_origins=listed(allowed_origins, "MNEMODB_ALLOWED_ORIGINS"),
        max_body_bytes=max_body_bytes,
        rate_limit=rate_limit,
        jwt=jwt,
        public_url=public_url.rstrip("/") if public_url else None,
        header_timeout=timeouts["--header-timeout"],
        keep_alive_timeout=timeouts["--keep-alive-timeout"],
        max_connections=max_connections,
    )


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    raw = _env(env, name)
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"Invalid {name} {raw!r}: expected a number") from None


def load_embedding(
    embedder: str | None,
    url: str | None,
    model: str | None,
    key: str | None,
    weights: str | None,
    env: Mapping[str, str],
) -> EmbeddingSettings:
    """Embedding settings from flags, else MNEMODB_EMBEDDER, MNEMODB_EMBED_URL,
    MNEMODB_EMBED_MODEL, MNEMODB_EMBED_KEY and MNEMODB_SEARCH_WEIGHTS."""
    kind = (embedder or _env(env, "MNEMODB_EMBEDDER") or "auto").strip().lower()
    if kind not in EMBEDDERS:
        raise ConfigError(f"Invalid embedder {kind!r}: expected one of {', '.join(EMBEDDERS)}")
    url = url or _env(env, "MNEMODB_EMBED_URL") or None
    model = model or _env(env, "MNEMODB_EMBED_MODEL") or None
    key = key or _env(env, "MNEMODB_EMBED_KEY") or None
    if kind == "http":
        if not url or not url.startswith(("http://", "https://")):
            raise ConfigError("the http embedder needs --embed-url (or MNEMODB_EMBED_URL) starting with http(s)://")
        if not model or not model.strip():
            raise ConfigError("the http embedder needs --embed-model (or MNEMODB_EMBED_MODEL)")
    raw_weights = weights if weights is not None else _env(env, "MNEMODB_SEARCH_WEIGHTS")
    try:
        fusion = parse_fusion(raw_weights) if raw_weights else DEFAULT_FUSION
    except ValueError as exc:
        raise ConfigError(f"Invalid --search-weights: {exc}") from None
    return EmbeddingSettings(kind, url, model, key, fusion)


def make_embedder(settings: EmbeddingSettings, *, profile: str = "native", required: bool = False) -> Embedder | None:
    """The embedder the settings name, or None. `auto` takes the local model when it is
    installed and the native profile (whose search uses it) is served; `required` (for
    `mnemodb reindex`) makes a missing embedder an error rather than None."""
    from mnemodb.search.embedders import (
        INSTALL_HINT,
        LOCAL_MODELS,
        QUANTIZED_MODEL,
        HttpEmbedder,
        LocalEmbedder,
        local_available,
        onnx_runtime_available,
    )

    kind = settings.embedder
    if kind == "auto":
        kind = "local" if local_available() and (profile == "native" or required) else "none"
        if kind == "none" and required:
            raise ConfigError(f"no embedder: install the local model ({INSTALL_HINT}) or use --embedder http")
    if kind == "none":
        if required:
            raise ConfigError("--embedder none gives no vectors to write")
        return None
    if kind == "local":
        if required and not local_available():
            raise ConfigError(f"the local embedding model is not installed: {INSTALL_HINT}")
        # A model name set for another embedder does not stop `auto` from taking the local one.
        model = settings.model if settings.embedder == "local" or settings.model in LOCAL_MODELS else None
        if model == QUANTIZED_MODEL and not onnx_runtime_available():
            raise ConfigError(
                f"{QUANTIZED_MODEL} runs on ONNX Runtime, which is not installed: pip install onnxruntime"
            )
        try:
            return LocalEmbedder(model)
        except ValueError as exc:  # a model the local embedder does not run
            raise ConfigError(f"Invalid --embed-model {model!r} for the local embedder: {exc}") from None
    assert settings.url is not None and settings.model is not None
    return HttpEmbedder(settings.url, settings.model, key=settings.key)


def _load(
    profile: str,
    db: str | None,
    scope: str | None,
    read_scopes: str | None,
    tool_timeout_ms: int | None,
    log_level: str | None,
    spec: str | None,
    allow_unscoped_changes: bool,
    env: Mapping[str, str],
) -> Settings:
    memdb = profile == "memdb"
    if profile != TOPODB and (spec is not None or allow_unscoped_changes):
        flag = "--spec" if spec is not None else "--allow-unscoped-changes"
        raise ConfigError(f"{flag} applies to the topodb profile only")
    if profile == TOPODB:
        return _load_topodb(db, scope, read_scopes, tool_timeout_ms, log_level, spec, allow_unscoped_changes, env)

    db_path = db
    if db_path is None and memdb:
        raw = _env(env, "MEMDB_PATH")
        if raw is not None and raw.strip():
            db_path = raw
    memory_file: str | None = None
    if profile == KNOWLEDGE_GRAPH:
        memory_file, named = memory_file_path(env)
        if db_path is None and named and memory_file is not None:
            db_path = memory_file_db(memory_file)
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
    return Settings(
        profile, resolve_db_path(db_path), write_scope, reads, timeout, level, memory_file, db_display=db_path
    )


def _load_topodb(
    db: str | None,
    scope: str | None,
    read_scopes: str | None,
    tool_timeout_ms: int | None,
    log_level: str | None,
    spec_path: str | None,
    allow_unscoped_changes: bool,
    env: Mapping[str, str],
) -> Settings:
    """topodb-mcp's settings: --db is required (TOPODB_DB stands in for it, an empty value
    meaning `.topodb/memory.redb` as in topodb's editor extension); --scope, else TOPODB_SCOPE,
    else shared; the read set defaults to the write scope."""
    from mnemodb.server.profiles.topodb import ToolError, parse_scope

    if db is None:
        raw = _env(env, "TOPODB_DB")
        if raw is None:
            raise ConfigError("missing required --db <path> (or set TOPODB_DB)")
        db = raw or TOPODB_DEFAULT_DB
    if not db.strip():
        raise ConfigError("--db must name a file")
    write = scope if scope is not None else (_env(env, "TOPODB_SCOPE") or "shared")
    try:
        write = parse_scope(write)
    except ToolError as exc:
        raise ConfigError(str(exc).replace("invalid scope", "invalid --scope value", 1)) from None
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
    spec: IndexSpec | None = None
    if spec_path is not None:
        text = _read_file(Path(spec_path), f"reading --spec {spec_path}")
        try:
            spec = IndexSpec.from_json(json.loads(text))
        except (ValueError, EngineError) as exc:
            raise ConfigError(f"parsing --spec {spec_path} as IndexSpec JSON: {exc}") from None
    timeout = DEFAULT_TIMEOUT_MS if tool_timeout_ms is None else tool_timeout_ms
    if timeout < 0:
        raise ConfigError("Invalid --tool-timeout-ms: expected a non-negative integer")
    return Settings(
        TOPODB,
        resolve_db_path(db),
        write,
        reads,
        timeout,
        log_level or "info",
        db_display=db,
        spec=spec,
        allow_unscoped_changes=allow_unscoped_changes,
    )


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
