"""`mnemodb`: the command line. `serve` speaks MCP; the rest are for humans and scripts.

Each command is a thin layer over the engine. Human output goes to stdout, progress
and errors to stderr; `--json` prints machine-readable JSON instead.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

from mnemodb import __version__
from mnemodb.model.times import iso_utc
from mnemodb.server.profiles import AVAILABLE, DEFAULT_PROFILE, REGISTRY
from mnemodb.store.files import not_a_regular_file, replaced_atomically, same_file

if TYPE_CHECKING:
    from mnemodb.engine import Engine
    from mnemodb.model.records import Token
    from mnemodb.search.embedders import Embedder
    from mnemodb.server.settings import DatabaseSettings

PROFILES = AVAILABLE


class CliError(Exception):
    """A problem to report in one line on stderr, with exit status 1."""


# -- output helpers ----------------------------------------------------------------------------


class Progress:
    """A one-line progress counter on stderr, shown only on a terminal."""

    def __init__(self, label: str, total: int | None = None, stream: TextIO = sys.stderr) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self.stream = stream
        self.enabled = stream.isatty()
        self._last = 0.0

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if self.enabled and now - self._last >= 0.1:
            self._last = now
            self._draw()

    def _draw(self) -> None:
        if self.total:
            width = 30
            filled = int(width * min(self.done, self.total) / self.total)
            bar = "#" * filled + "-" * (width - filled)
            self.stream.write(f"\r{self.label} [{bar}] {self.done}/{self.total}")
        else:
            self.stream.write(f"\r{self.label} {self.done}")
        self.stream.flush()

    def finish(self) -> None:
        if self.enabled:
            self._draw()
            self.stream.write("\n")
            self.stream.flush()


def print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def _when(ms: int | None) -> str | None:
    """A time as people read it (ISO 8601, UTC); None for none."""
    return None if ms is None else iso_utc(ms)


def open_engine(args: argparse.Namespace, *, reading: bool = False, embedder: Any = None) -> Engine:
    """The engine over the command's database. A command that only reads (`reading`) needs
    the database to exist, and opens it read-only, saying so, where this process may not
    write the file or its directory."""
    from mnemodb.engine import Engine

    chosen = _database(args)
    db, scope = chosen.db_path, chosen.write_scope
    if db == ":memory:":
        return Engine.open(db, write_scope=scope, embedder=embedder)
    if is_server_database(db):
        # A database server says itself whether the data exists and what the role may do:
        # a command that only reads opens it read-only, which refuses a missing schema.
        return Engine.open(db, write_scope=scope, read_only=reading, embedder=embedder)
    file = Path(db).expanduser()
    if reading and not file.exists():
        raise CliError(f"no database at {file}")
    writable = not file.exists() or (os.access(file, os.W_OK) and os.access(file.resolve().parent, os.W_OK))
    if writable:
        return Engine.open(db, write_scope=scope, embedder=embedder)
    if not reading:
        raise CliError(f"{file} is read-only here (the file or its directory): this command writes to it")
    print(f"mnemodb: {file} is read-only here: reading it without changing anything", file=sys.stderr)
    return Engine.open(db, write_scope=scope, read_only=True, embedder=embedder)


def _database(args: argparse.Namespace) -> DatabaseSettings:
    """The command's database and write scope, read as every command reads them."""
    from mnemodb.server import config

    try:
        return config.load_database(args, os.environ)
    except config.ConfigError as exc:
        raise CliError(str(exc)) from None


def is_server_database(db: str) -> bool:
    """True when `db` names a database server (a URL other than sqlite://), not a file."""
    from mnemodb.store import sqlite_path

    return sqlite_path(db) is None


def _embedder(args: argparse.Namespace, *, required: bool = False) -> Embedder | None:
    """The embedder the command's flags and the environment name, as the native profile
    would pick it (`required`: None is an error)."""
    from mnemodb.server import config

    try:
        return config.make_embedder(config.load_embedding(args, os.environ), required=required)
    except config.ConfigError as exc:
        raise CliError(str(exc)) from None


# -- commands --------------------------------------------------------------------------------------


def cmd_serve(args: argparse.Namespace) -> int:
    from mnemodb.server import config

    try:
        settings = config.load(args, os.environ)
    except config.ConfigError as exc:
        raise CliError(str(exc)) from None
    config.configure_logging(settings.log_level)

    from mnemodb.server.run import serve

    return serve(settings)


def cmd_ui(args: argparse.Namespace) -> int:
    """The web inspector on this machine: `serve --http` on loopback, telling its URL."""
    from mnemodb.server import config

    args.http = True
    args.host = "127.0.0.1"
    try:
        settings = config.load(args, os.environ)
    except config.ConfigError as exc:
        raise CliError(str(exc)) from None
    config.configure_logging(settings.log_level)

    from mnemodb.server.run import serve

    def announce(base: str) -> None:
        url = f"{base}/ui/"
        print(url, flush=True)
        if args.open:
            import webbrowser

            webbrowser.open(url)

    return serve(settings, on_listening=announce)


def cmd_reindex(args: argparse.Namespace) -> int:
    from mnemodb.engine import Engine
    from mnemodb.search.embedders import EmbedderUnavailable, EmbeddingFailed

    embedder = _embedder(args, required=True)
    assert embedder is not None
    db = _database(args).db_path
    if not is_server_database(db) and not Path(db).exists():
        # Embedding an empty new file would only hide a mistyped path.
        raise CliError(f"no database at {db}: nothing to reindex")
    engine = Engine.open(db, embedder=embedder)
    progress = Progress(f"embedding ({embedder.model})")
    started = time.monotonic()

    def report(done: int, total: int) -> None:
        progress.total = total
        progress.advance(done - progress.done)

    try:
        written = engine.embeddings.reindex(batch=max(1, args.batch), progress=report)
    except (EmbedderUnavailable, EmbeddingFailed) as exc:
        raise CliError(str(exc)) from None
    finally:
        progress.finish()
        done, total = engine.embeddings.coverage()
        engine.close()
    seconds = time.monotonic() - started
    summary = {"model": embedder.model, "embedded": written, "current": done, "items": total, "seconds": seconds}
    if args.json:
        print_json(summary)
    else:
        rate = f", {written / seconds:.0f}/s" if written and seconds > 0 else ""
        print(f"{written} vectors written under {embedder.model} in {seconds:.1f} s{rate}; {done} of {total} current")
    return 0


def cmd_remember(args: argparse.Namespace) -> int:
    text = args.text
    if text == "-":
        # `echo X | mnemodb remember -` means X: the newline ending the input is not part of
        # it (kept, `mnemodb remember X` would later be another memory).
        text = sys.stdin.read()
        text = text.removesuffix("\n").removesuffix("\r") if text.endswith("\n") else text
    with open_engine(args) as engine:
        stored = engine.memories.store(text, args.tag or (), args.importance, args.type)
    memory = stored.memory
    if args.json:
        print_json({"id": memory.id, "hash": memory.hash, "new": stored.is_new, "tags": list(memory.tags)})
    else:
        state = "stored" if stored.is_new else "already stored"
        print(f"{state}: {memory.hash[:12]}  {memory.id}")
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    """Memories and entities as the native `recall` ranks them: by words and, when an
    embedder is on (the local model, when installed) and the store has vectors, by meaning."""
    from mnemodb.model.records import Entity, Memory

    kinds = tuple(k.strip() for k in args.kinds.split(",") if k.strip())
    if not kinds or not set(kinds) <= {"memory", "entity"}:
        raise CliError(f"--kinds takes memory, entity or both, comma-separated, not {args.kinds!r}")
    embedder = _embedder(args)
    with open_engine(args, reading=True, embedder=embedder) as engine:
        model = engine.embeddings.model
        load = getattr(embedder, "load", None)
        if model is not None and load is not None:
            with engine.store.read() as tx:
                has_vectors = bool(tx.embedding_changes(model).generation)
            if has_vectors:
                load()  # the server loads it in the background; a command cannot wait for that
        page = engine.items.search(args.query, kinds=kinds, limit=args.limit)
    if args.json:
        rows: list[dict[str, Any]] = []
        for found in page.found:
            item, score = found.item, round(found.score or 0.0, 6)
            if isinstance(item, Memory):
                rows.append(
                    {
                        "kind": "memory",
                        "id": item.id,
                        "hash": item.hash,
                        "score": score,
                        "content": item.content,
                        "tags": list(item.tags),
                        "importance": item.importance,
                        "type": item.memory_type,
                        "created_at": iso_utc(item.created_at),
                    }
                )
            elif isinstance(item, Entity):
                rows.append(
                    {
                        "kind": "entity",
                        "id": item.id,
                        "name": item.name,
                        "score": score,
                        "type": item.entity_type,
                        "observations": list(item.observations),
                        "created_at": iso_utc(item.created_at),
                    }
                )
        print_json(rows)
        return 0
    if not page.found:
        print("no matches")
        return 0
    for found in page.found:
        item = found.item
        if isinstance(item, Memory):
            ref, text = item.hash[:12], " ".join(item.content.split())
            tags = f"  [{', '.join(item.tags)}]" if item.tags else ""
        else:
            assert isinstance(item, Entity)
            ref, text, tags = "entity", " ".join(f"{item.name}: {'; '.join(item.observations)}".split()), ""
        if len(text) > 100:
            text = text[:97] + "..."
        print(f"{found.score or 0.0:5.3f}  {ref}  {text}{tags}")
    return 0


def _token_fields(token: Token) -> dict[str, Any]:
    return {
        "id": token.id,
        "name": token.name,
        "read_scopes": list(token.read_scopes),
        "write_scope": token.write_scope,
        "write_scopes": list(token.write_scopes),
        "read_only": token.read_only,
        "created": _when(token.created_at),
        "revoked": _when(token.revoked_at) if token.revoked_at is not None else None,
    }


def cmd_token_create(args: argparse.Namespace) -> int:
    with open_engine(args) as engine:
        token, secret = engine.tokens.create(
            args.name,
            read_scopes=_scope_list(args.read_scopes),
            write_scope=args.write_scope,
            write_scopes=_scope_list(args.write_scopes),
            read_only=args.read_only,
        )
    if args.json:
        print_json({**_token_fields(token), "token": secret})
    else:
        print(secret)
        print(
            f"token {token.name!r} ({token.id}): reads {', '.join(token.read_scopes)}; {_token_mode(token)}. "
            "It is shown this once: only its hash is kept.",
            file=sys.stderr,
        )
    return 0


def _scope_list(text: str | None) -> list[str]:
    return [s for s in (text or "").split(",") if s.strip()]


def _token_mode(token: Token) -> str:
    if token.read_only:
        return "read-only"
    return f"writes {', '.join(token.write_scopes)} (by default {token.write_scope})"


def cmd_token_list(args: argparse.Namespace) -> int:
    with open_engine(args, reading=True) as engine:
        tokens = engine.tokens.list(revoked=args.revoked)
        required = engine.tokens.required()
    if args.json:
        print_json([_token_fields(t) for t in tokens])
        return 0
    for t in tokens:
        state = f"revoked {_when(t.revoked_at)}" if t.revoked_at is not None else "live"
        reads = ",".join(t.read_scopes)
        print(f"{t.id}  {t.name}  reads {reads}  {_token_mode(t)}  created {_when(t.created_at)}  {state}")
    if not any(t.revoked_at is None for t in tokens):
        print(_open_access_note(required), file=sys.stderr)
    return 0


def _open_access_note(required: bool) -> str:
    if required:
        return (
            "no live tokens: the HTTP server refuses every request until one is made "
            "(`mnemodb token reopen` lets it take requests without one, on loopback only)"
        )
    return "no tokens: the HTTP server takes requests without one (on loopback only)"


def cmd_token_revoke(args: argparse.Namespace) -> int:
    with open_engine(args) as engine:
        token = engine.tokens.revoke(args.ref)
        last = not engine.tokens.list()
    if args.json:
        print_json(_token_fields(token))
    else:
        print(f"revoked token {token.name!r} ({token.id})")
    if last:
        print(_open_access_note(True), file=sys.stderr)
    return 0


def cmd_token_reopen(args: argparse.Namespace) -> int:
    with open_engine(args) as engine:
        engine.tokens.reopen()
    print("the HTTP server takes requests without a token again, on loopback only", file=sys.stderr)
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    with open_engine(args, reading=True) as engine:
        stats = engine.stats(scopes=args.scopes.split(",") if args.scopes else None)
        location = engine.store.location
    fields = {
        "database": location,
        "memories": stats.memories,
        "tags": stats.tags,
        "entities": stats.entities,
        "observations": stats.observations,
        "relations": stats.edges,
        "embeddings": stats.embeddings,
        "oldest_memory": _when(stats.oldest_memory_at),
        "newest_memory": _when(stats.newest_memory_at),
        "change_log_seq": stats.current_seq,
        "size_bytes": stats.size_bytes,
    }
    if args.json:
        print_json(fields)
    else:
        width = max(map(len, fields))
        for key, value in fields.items():
            print(f"{key.replace('_', ' '):<{width}}  {'-' if value is None else value}")
    return 0


EXPORT_FORMATS = ("mnemodb", "server-memory")
IMPORT_FORMATS = ("auto", *EXPORT_FORMATS)


def cmd_export(args: argparse.Namespace) -> int:
    if args.format not in EXPORT_FORMATS:
        raise CliError(f"unknown export format {args.format!r} (available: {', '.join(EXPORT_FORMATS)})")
    if args.format == "server-memory":
        return _export_server_memory(args)
    progress = Progress("exporting")
    with open_engine(args, reading=True) as engine, _atomic_output(args.file, engine) as out:
        for record in engine.export():
            out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")
            progress.advance()
    progress.finish()
    records = progress.done - 1
    if args.json and args.file != "-":
        print_json({"format": "mnemodb", "path": str(Path(args.file).expanduser().resolve()), "records": records})
    elif args.file != "-":
        print(f"exported {records} records to {args.file}", file=sys.stderr)
    return 0


def _export_server_memory(args: argparse.Namespace) -> int:
    from mnemodb.interop.server_memory import export_server_memory

    progress = Progress("exporting")
    with open_engine(args, reading=True) as engine, _atomic_output(args.file, engine) as out:
        counts = export_server_memory(engine, out, progress=progress.advance)
    progress.finish()
    if args.json and args.file != "-":
        print_json(
            {
                "format": "server-memory",
                "path": str(Path(args.file).expanduser().resolve()),
                "entities": counts.entities,
                "relations": counts.relations,
            }
        )
    elif args.file != "-":
        entities = "1 entity" if counts.entities == 1 else f"{counts.entities} entities"
        relations = "1 relation" if counts.relations == 1 else f"{counts.relations} relations"
        print(f"exported {entities} and {relations} to {args.file}", file=sys.stderr)
    return 0


def _check_target(target: Path, engine: Engine) -> None:
    """Refuse to export over the database itself (or its -wal or -shm): the export would
    replace what it reads."""
    if any(same_file(target, file) for file in engine.store.files()):
        raise CliError(f"{target} is the database itself (or one of its files): export elsewhere")


@contextlib.contextmanager
def _atomic_output(path: str, engine: Engine) -> Iterator[TextIO]:
    """UTF-8 text to `path`, which changes only once everything is written (a reader of the
    file, such as a running server, never sees half of it, and a failure leaves it as it
    was); stdout for `-`. A new file is private; one replaced keeps its permissions. A FIFO
    or a device (`/dev/stdout`) is written to directly: it cannot be replaced."""
    if path == "-":
        sys.stdout.flush()
        stdout = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="\n", write_through=True)
        try:
            yield stdout
        finally:
            stdout.flush()
            stdout.detach()
        return
    target = Path(path).expanduser()
    _check_target(target, engine)
    kind = not_a_regular_file(target)
    if kind == "a directory":
        raise CliError(f"{path} is a directory")
    if kind is not None:
        with open(target, "w", encoding="utf-8", newline="\n") as stream:
            yield stream
        return
    with (
        replaced_atomically(target, keep_mode=True) as temporary,
        open(temporary, "w", encoding="utf-8", newline="\n") as handle,
    ):
        yield handle


def _read_records(stream: BinaryIO, skipped: list[tuple[int, str]]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) for each line of an export that holds a JSON object with a
    `type`; the other non-blank lines go to `skipped` as (line number, reason)."""
    for number, raw in enumerate(stream, 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            skipped.append((number, "not UTF-8 text"))
            continue
        if number == 1:
            line = line.removeprefix("\ufeff")  # a byte-order mark some editors add
        if not line.strip():
            continue
        try:
            # Without its line ending, or an error at the end of the line would be "column 1"
            # of the next.
            record = json.loads(line.rstrip("\r\n"))
        except json.JSONDecodeError as exc:
            skipped.append((number, f"not JSON ({exc.msg} at column {exc.colno})"))
            continue
        except ValueError as exc:  # an integer of more digits than Python converts
            skipped.append((number, f"not JSON ({exc})"))
            continue
        except RecursionError:
            skipped.append((number, "not JSON (nested too deeply)"))
            continue
        if not isinstance(record, dict) or "type" not in record:
            skipped.append((number, 'not a record (no "type")'))
            continue
        yield number, record


@contextlib.contextmanager
def _input(path: str) -> Iterator[BinaryIO]:
    """`path` opened for reading, or stdin for `-` (copied to a temporary file, so it can be
    read more than once)."""
    if path == "-":
        # Imported here: shutil loads the compression modules, which serving never needs.
        import shutil
        import tempfile

        with tempfile.TemporaryFile() as spool:
            shutil.copyfileobj(sys.stdin.buffer, spool)
            spool.seek(0)
            yield spool
        return
    if not Path(path).is_file():
        raise CliError(f"no such file: {path}")
    with open(path, "rb") as handle:
        yield handle


def _detect_format(stream: BinaryIO) -> str:
    """mnemodb's own export (its lines have a header, node, edge or embedding `type`) or a
    server-memory file (anything else). The stream is left at its start."""
    from mnemodb.interop.server_memory import looks_like_mnemodb_export

    try:
        for raw in stream:
            if raw.strip():
                return "mnemodb" if looks_like_mnemodb_export(raw.removeprefix(b"\xef\xbb\xbf")) else "server-memory"
        return "server-memory"
    finally:
        stream.seek(0)


def _count_lines(stream: BinaryIO) -> int:
    count = sum(1 for line in stream if line.strip())
    stream.seek(0)
    return count


def cmd_import(args: argparse.Namespace) -> int:
    with _input(args.file) as stream:
        kind = args.format if args.format != "auto" else _detect_format(stream)
        if kind == "server-memory":
            return _import_server_memory(args, stream)
        if args.on_error == "abort":
            raise CliError(
                "--on-error abort applies to server-memory files; a mnemodb export skips bad records and reports them"
            )
        return _import_mnemodb(args, stream)


def _import_mnemodb(args: argparse.Namespace, stream: BinaryIO) -> int:
    from mnemodb.engine import InvalidArgument

    skipped: list[tuple[int, str]] = []  # (line, reason): lines that are no record, and records refused

    def refused(line: int, reason: str) -> None:
        skipped.append((line, reason))

    progress = Progress("importing", max(_count_lines(stream) - 1, 0))
    with open_engine(args) as engine:
        try:
            report = engine.import_records(_read_records(stream, skipped), progress=progress.advance, on_skip=refused)
        except InvalidArgument as exc:
            raise CliError(str(exc)) from None
    progress.finish()
    skipped.sort(key=lambda s: s[0])
    if args.json:
        errors = [{"line": line, "reason": reason} for line, reason in skipped]
        print_json({"written": report.written, "unchanged": report.unchanged, "errors": errors})
    else:
        print(f"imported {report.written} records ({report.unchanged} already present)")
        for line, reason in skipped:
            print(f"mnemodb: skipped line {line}: {reason}", file=sys.stderr)
    return 1 if skipped else 0


def _import_server_memory(args: argparse.Namespace, stream: BinaryIO) -> int:
    from mnemodb.interop.server_memory import ImportResult, import_server_memory, malformed_lines

    # With abort, a malformed line stops the import before the database is even opened.
    problems = malformed_lines(stream) if args.on_error == "abort" else ()
    if problems:
        result = ImportResult(lines=_count_lines(stream), skipped=problems, aborted=True)
    else:
        progress = Progress("importing", _count_lines(stream))
        with open_engine(args) as engine:
            result = import_server_memory(engine, stream, on_error=args.on_error, progress=progress.advance)
        progress.finish()
    if args.json:
        print_json(result.to_json())
    elif result.aborted:
        for error in result.skipped:
            print(f"mnemodb: {error}", file=sys.stderr)
        print(f"mnemodb: {result.summary()} (--on-error abort)", file=sys.stderr)
    else:
        print(result.summary())
        for error in result.skipped:
            print(f"mnemodb: skipped {error}", file=sys.stderr)
    return 1 if result.skipped else 0


def cmd_backup(args: argparse.Namespace) -> int:
    target = Path(args.path).expanduser()
    source = _database(args).db_path
    if not is_server_database(source) and not os.path.lexists(source):
        raise CliError(f"no database at {source}: nothing to back up")
    if target.exists() and not target.is_dir() and not args.force:
        raise CliError(f"{target} exists; pass --force to overwrite it")
    progress = Progress("backing up")
    with open_engine(args, reading=True) as engine:
        started = time.monotonic()

        def report(done: int, total: int) -> None:
            progress.total = total
            progress.advance(done - progress.done)

        engine.store.backup(str(target), report)
        elapsed = time.monotonic() - started
    progress.finish()
    size = target.stat().st_size
    if args.json:
        print_json({"path": str(target.resolve()), "bytes": size, "seconds": round(elapsed, 3)})
    else:
        print(f"backed up to {target} ({size:,} bytes in {elapsed:.2f}s)")
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    from mnemodb.interop.migrate import migrate

    progress = Progress("migrating")
    # Off a terminal (the bar is not drawn), a line now and then says how far it is.
    shown = {"at": time.monotonic(), "done": -1}

    def report(done: int, total: int) -> None:
        progress.total = total
        progress.advance(done - progress.done)
        now = time.monotonic()
        if not progress.enabled and done != shown["done"] and (now - shown["at"] >= 5 or done == total):
            shown.update(at=now, done=done)
            print(f"mnemodb: migrating: {done}/{total} entries", file=sys.stderr)

    result = migrate(args.source, args.target, progress=report)
    progress.finish()
    if args.json:
        print_json(
            {
                "source": result.source,
                "target": result.target,
                "copied": result.counts,
                "rows": result.rows,
                "sha256": result.digest,
                "seconds": round(result.seconds, 3),
            }
        )
    else:
        copied = ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in result.counts.items())
        print(f"migrated {result.source} to {result.target} ({copied}) in {result.seconds:.2f}s")
        print(f"verified: the same counts and sha256 {result.digest} on both sides")
    return 0


# -- argument parsing -------------------------------------------------------------------------------


def store_options(parser: argparse.ArgumentParser, *, scope: bool = True) -> None:
    parser.add_argument("--db", help="database file or postgresql:// URL (default: $MNEMODB_DB or .mnemodb/memory.db)")
    if scope:
        parser.add_argument("--scope", help='scope to write to and read from: "shared" (default) or a ULID')
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")


def _embedding_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--embedder",
        help="what gives memories vectors for search by meaning: auto (the local model if installed, native "
        "profile only), local (all-MiniLM-L6-v2 on the CPU), http (an OpenAI-compatible endpoint), none "
        "(default: $MNEMODB_EMBEDDER or auto)",
    )
    parser.add_argument(
        "--embed-url", help="http embedder: base URL, e.g. http://localhost:11434/v1 ($MNEMODB_EMBED_URL)"
    )
    parser.add_argument(
        "--embed-model",
        help=(
            "http: the endpoint's name for the model; local: all-MiniLM-L6-v2-int8 (the default"
            " with ONNX Runtime) or all-MiniLM-L6-v2 ($MNEMODB_EMBED_MODEL)"
        ),
    )
    parser.add_argument("--embed-key", help="http embedder: API key, sent as a bearer token ($MNEMODB_EMBED_KEY)")


# Texts per embedder call for reindex: the local model sorts each call's texts by length
# before batching them, so a larger call pads less (LoCoMo turns: 171/s at 64, 279 at
# 256, 331 at 1024 on two cores).
EMBED_BATCH = 512


def build_parser(*, serve_only: bool = False) -> argparse.ArgumentParser:
    """The command line's parser; with `serve_only`, the `serve` command's alone (what a
    client's start of the server needs: the other commands' parsers, and the modules that
    add them, took 13 ms of every start)."""
    parser = argparse.ArgumentParser(
        prog="mnemodb",
        description="Persistent, searchable memory for AI assistants and agents.",
    )
    parser.add_argument("--version", action="version", version=f"mnemodb {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = commands.add_parser("serve", help="run the MCP server over stdio (or Streamable HTTP with --http)")
    # No default here: without --profile, the settings loader reads MNEMODB_PROFILE.
    serve.add_argument("--profile", choices=PROFILES, help=f"which tool set to serve (default: {DEFAULT_PROFILE})")
    serve.add_argument(
        "--db",
        help="database file (default: $MEMDB_PATH or .memdb/memory.db for memdb; beside $MEMORY_FILE_PATH "
        "for knowledge-graph; $TOPODB_DB for topodb, where it is required; else .mnemodb/memory.db)",
    )
    serve.add_argument("--scope", help='default write scope: "shared" (default) or a ULID')
    serve.add_argument("--read-scopes", help="default read scopes, comma-separated (default: the write scope)")
    serve.add_argument("--tool-timeout-ms", type=int, help="per-call time limit in ms; 0 disables (default: 15000)")
    serve.add_argument("--log-level", choices=("error", "warn", "info"), help="stderr log level (default: info)")
    for spec in REGISTRY.values():
        for profile_option in spec.options:
            profile_option.add_to(serve)
    _embedding_options(serve)
    serve.add_argument(
        "--search-weights",
        metavar="NAME=VALUE,...",
        help="native search: rank fusion weights words, vector, k and access (default: "
        "words=1,vector=0.15,k=20,access=0; or $MNEMODB_SEARCH_WEIGHTS)",
    )
    http = serve.add_argument_group("Streamable HTTP (a shared team server)")
    http.add_argument("--http", action="store_true", help="serve MCP over Streamable HTTP at /mcp instead of stdio")
    http.add_argument("--host", help="address to bind (default: 127.0.0.1; or $MNEMODB_HOST)")
    http.add_argument("--port", type=int, help="port (default: 8765, 0 for any free one; or $MNEMODB_PORT)")
    http.add_argument(
        "--insecure",
        action="store_true",
        help="serve an address other than loopback without authentication (refused otherwise)",
    )
    http.add_argument(
        "--allowed-hosts",
        metavar="NAME,...",
        help="Host header names accepted besides loopback and the bound address, e.g. the name clients use "
        "($MNEMODB_ALLOWED_HOSTS); others get 421",
    )
    http.add_argument(
        "--allowed-origins",
        metavar="ORIGIN,...",
        help="browser Origins accepted besides loopback ones, e.g. https://app.example.com "
        "($MNEMODB_ALLOWED_ORIGINS); others get 403",
    )
    http.add_argument(
        "--max-body-bytes",
        type=int,
        help="largest request body accepted; larger ones get 413 (default: 4194304; or $MNEMODB_MAX_BODY_BYTES)",
    )
    http.add_argument(
        "--rate-limit",
        type=float,
        metavar="PER_SECOND",
        help="requests per second per token (per client address without tokens), in bursts of as many; "
        "more get 429 with Retry-After (default: 0, no limit; or $MNEMODB_RATE_LIMIT)",
    )
    http.add_argument(
        "--header-timeout",
        type=float,
        metavar="SECONDS",
        help="time a client has to send a request's headers; its body gets as long again plus 1 s per 64 KiB, "
        "and a response it stops reading as long again; then the connection is closed "
        "(default: 10; or $MNEMODB_HEADER_TIMEOUT)",
    )
    http.add_argument(
        "--keep-alive-timeout",
        type=float,
        metavar="SECONDS",
        help="close a connection idle this long between requests (default: 5; or $MNEMODB_KEEP_ALIVE_TIMEOUT)",
    )
    http.add_argument(
        "--max-connections",
        type=int,
        metavar="N",
        help="connections served at once; past it the one waiting longest for a request is closed, or a "
        "newcomer gets 503 (default: what the open-file limit leaves beside the database's files, at most "
        "1024; or $MNEMODB_MAX_CONNECTIONS)",
    )
    jwt = serve.add_argument_group(
        "JWT bearer tokens (from an identity provider; database tokens keep working beside them)"
    )
    jwt.add_argument("--jwt-issuer", help="the `iss` a JWT must carry ($MNEMODB_JWT_ISSUER)")
    jwt.add_argument("--jwt-audience", help="the `aud` a JWT must carry ($MNEMODB_JWT_AUDIENCE)")
    jwt.add_argument(
        "--jwt-key",
        help="the shared secret (HS256) or PEM public key that signs them, or @FILE ($MNEMODB_JWT_KEY)",
    )
    jwt.add_argument("--jwt-algorithms", help="accepted algorithms (default: HS256, or RS256,ES256 for a PEM key)")
    jwt.add_argument(
        "--jwt-scope-claim",
        help="the claim listing read:SCOPE and write:SCOPE entries (default: scope)",
    )
    jwt.add_argument(
        "--public-url",
        help="the URL clients use, for the OAuth protected-resource metadata (default: http://HOST:PORT; "
        "or $MNEMODB_PUBLIC_URL)",
    )
    http.add_argument("--no-ui", action="store_true", help="do not serve the web inspector at /ui")
    serve.set_defaults(run=cmd_serve)
    if serve_only:
        return parser

    ui = commands.add_parser(
        "ui",
        help="the web inspector: see, search, correct and curate what is remembered, in a browser",
        description="Serve the web inspector on 127.0.0.1 and print its URL. It needs no token there unless "
        "the database has tokens; the MCP endpoint is served beside it at /mcp.",
    )
    ui.add_argument("--db", help="database file or postgresql:// URL (default: $MNEMODB_DB, else .mnemodb/memory.db)")
    ui.add_argument("--port", type=int, help="port (default: 8765, 0 for any free one; or $MNEMODB_PORT)")
    ui.add_argument("--open", action="store_true", help="open it in the browser")
    ui.add_argument("--log-level", choices=("error", "warn", "info"), help="stderr log level (default: info)")
    _embedding_options(ui)
    ui.set_defaults(run=cmd_ui)

    reindex = commands.add_parser(
        "reindex", help="give every memory and entity a current vector from the embedder, with progress"
    )
    store_options(reindex)
    _embedding_options(reindex)
    reindex.add_argument(
        "--batch", type=int, default=EMBED_BATCH, help=f"texts per embedder call (default {EMBED_BATCH})"
    )
    reindex.set_defaults(run=cmd_reindex)

    remember = commands.add_parser("remember", help="store a memory")
    remember.add_argument("text", help="what to remember (- reads stdin)")
    remember.add_argument("--tag", "-t", action="append", help="a tag (repeatable)")
    remember.add_argument("--importance", "-i", type=int, default=0, help="0 to 10 (default 0)")
    remember.add_argument("--type", default="general", help="memory type (default: general)")
    store_options(remember)
    remember.set_defaults(run=cmd_remember)

    search = commands.add_parser(
        "search", help="search memories and entities by words and meaning, as the native recall does"
    )
    search.add_argument("query")
    search.add_argument("--limit", "-n", type=int, default=10, help="how many results (default 10)")
    search.add_argument("--kinds", default="memory,entity", help="memory, entity or both (default both)")
    store_options(search)
    _embedding_options(search)
    search.set_defaults(run=cmd_search)

    token = commands.add_parser(
        "token",
        help="access tokens for the HTTP server",
        description="Bearer tokens for `mnemodb serve --http`. Once a token has been made, every HTTP "
        "request needs one (even after the last is revoked, until `token reopen`); each token decides "
        "which scopes its requests may read and which they may write.",
    )
    token_commands = token.add_subparsers(dest="token_command", metavar="ACTION", required=True)
    create = token_commands.add_parser("create", help="make a token and print it (once)")
    create.add_argument("name", help="who or what holds it, e.g. ci-agent")
    create.add_argument(
        "--read-scopes", metavar="SCOPE,...", help="scopes it may only read (it reads its write scopes too)"
    )
    create.add_argument(
        "--write-scope", help='where its writes go by default, and a scope it may write: "shared" (default) or a ULID'
    )
    create.add_argument("--write-scopes", metavar="SCOPE,...", help="more scopes it may write (and read)")
    create.add_argument("--read-only", action="store_true", help="it may read but never write")
    store_options(create, scope=False)
    create.set_defaults(run=cmd_token_create)
    listing = token_commands.add_parser("list", help="the tokens (never the tokens themselves)")
    listing.add_argument("--revoked", action="store_true", help="revoked ones too")
    store_options(listing, scope=False)
    listing.set_defaults(run=cmd_token_list)
    revoke = token_commands.add_parser("revoke", help="stop a token working, at once")
    revoke.add_argument("ref", help="the token's name or id")
    store_options(revoke, scope=False)
    revoke.set_defaults(run=cmd_token_revoke)
    reopen = token_commands.add_parser(
        "reopen",
        help="let the HTTP server take requests without a token again (loopback only)",
        description="Once a token has been made, the HTTP server requires one even after the last is "
        "revoked. With no live token left, this lets it take requests without one again, on a loopback "
        "address only; those requests read and write every scope.",
    )
    store_options(reopen, scope=False)
    reopen.set_defaults(run=cmd_token_reopen)

    stats = commands.add_parser("stats", help="what the database holds")
    stats.add_argument("--scopes", help="comma-separated scopes to count (default: the --scope)")
    store_options(stats)
    stats.set_defaults(run=cmd_stats)

    export = commands.add_parser(
        "export",
        help="write everything as versioned JSONL",
        description="Write the database as JSONL. The mnemodb format (the default) holds everything; "
        "server-memory writes the knowledge graph (entities, observations, relations) as the "
        "knowledge-graph memory servers' memory.jsonl, for use with those servers.",
    )
    export.add_argument("file", nargs="?", default="-", help="output file (default: stdout)")
    export.add_argument(
        "--format", default="mnemodb", help=f"dump format: {' or '.join(EXPORT_FORMATS)} (default: mnemodb)"
    )
    store_options(export)
    export.set_defaults(run=cmd_export)

    load = commands.add_parser(
        "import",
        help="load a JSONL export or a server-memory file (idempotent)",
        description="Load a file written by `mnemodb export`, or a memory.jsonl of the knowledge-graph "
        "memory servers (the format is detected). Importing the same file twice adds nothing.",
    )
    load.add_argument("file", help="the file to load (- reads stdin)")
    load.add_argument(
        "--format",
        choices=IMPORT_FORMATS,
        default="auto",
        help="the file's format (default: auto, detected from its first line)",
    )
    load.add_argument(
        "--on-error",
        choices=("skip", "abort"),
        default="skip",
        help="server-memory files: skip malformed lines (default) or import nothing when there is one",
    )
    store_options(load)
    load.set_defaults(run=cmd_import)

    from mnemodb.cli import clients, completion, doctor, items, scopes

    items.add_commands(commands)
    scopes.add_command(commands, store_options)
    doctor.add_command(commands, store_options)
    clients.add_command(commands)
    completion.add_command(commands)

    backup = commands.add_parser("backup", help="copy the database while it is in use")
    backup.add_argument("path", help="where to write the copy")
    backup.add_argument("--force", action="store_true", help="overwrite an existing file")
    store_options(backup)
    backup.set_defaults(run=cmd_backup)

    migrate = commands.add_parser(
        "migrate",
        help="copy a database between SQLite and PostgreSQL (either way) into an empty one, and verify it",
        description="Copy everything the database SRC holds into DST, which must be empty: ids, hashes, times "
        "and the change log's numbering are kept; the copy is checked (counts and a checksum) before it commits.",
    )
    migrate.add_argument("source", metavar="SRC", help="the database to copy: a file path or a postgresql:// URL")
    migrate.add_argument("target", metavar="DST", help="the empty (or new) database to copy it into")
    migrate.add_argument("--json", action="store_true", help="print JSON instead of text")
    migrate.set_defaults(run=cmd_migrate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(serve_only=given[:1] == ["serve"])
    args = parser.parse_args(given)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    from mnemodb.engine import EngineError

    if args.command != "serve":  # serve sets up its own logging
        # What a command does to the database on its own initiative (a schema upgrade) is said.
        notices = logging.StreamHandler(sys.stderr)
        notices.setFormatter(logging.Formatter("mnemodb: %(message)s"))
        store_log = logging.getLogger("mnemodb.store")
        store_log.addHandler(notices)
        store_log.setLevel(logging.INFO)
    try:
        return int(args.run(args))
    except CliError as exc:
        print(f"mnemodb: {exc}", file=sys.stderr)
        return 1
    except EngineError as exc:
        print(f"mnemodb: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (`mnemodb export | head`): not worth a message, as for any
        # Unix tool; what is still buffered for stdout goes nowhere.
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 128 + 13  # as if killed by SIGPIPE
    except OSError as exc:
        detail = f"{exc.strerror}: {exc.filename}" if exc.strerror and exc.filename else str(exc)
        print(f"mnemodb: {detail}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def topodb_main(argv: Sequence[str] | None = None) -> int:
    """`topodb-mcp`: `mnemodb serve --profile topodb`, for configurations written for topodb-mcp."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("--version", "-V"):
        print(f"topodb-mcp (mnemodb {__version__})")
        return 0
    return main(["serve", "--profile", "topodb", *args])


if __name__ == "__main__":
    sys.exit(main())
