"""A whole database moved to another place and kind: SQLite to PostgreSQL, PostgreSQL to
SQLite, or either to its own kind (`mnemodb migrate SRC DST`).

The copy keeps what clients hold on to: ids, integer keys, content hashes, times, and the
change log with its numbers, so a client polling the log from seq N goes on where it
was. The source is read from one snapshot while it stays in use; the target must hold
nothing (a refusal otherwise) and is written in transactions of 250 entries
(`store.copying.copy_into` says why not one). The copy is then checked: the same counts
per kind as the source and the same SHA-256 over a canonical form of everything. A target
file that did not exist is written beside its place and renamed into it only once the
copy is complete and checked, so a failure leaves no file; a failure into a database
server's schema (or an existing empty file) leaves what was written, and says so.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from mnemodb.engine import Engine
from mnemodb.model.errors import Conflict, EngineError, NotFound, StoreFailed
from mnemodb.model.value import Value
from mnemodb.store import sqlite_path
from mnemodb.store.copying import copy_into, fingerprint, held
from mnemodb.store.files import not_a_regular_file, replaced_atomically, same_file

__all__ = ["MigrationReport", "migrate"]

# The files SQLite keeps beside a database while it is open.
_SIDECARS = ("-wal", "-shm", "-journal")


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class MigrationReport(Value):
    source: str
    target: str
    counts: dict[str, int]
    """What was copied, per kind: records (nodes, edges, embeddings), changes (log
    entries), tokens, scope_names, settings."""
    rows: dict[str, int]
    """The target's rows per kind, as `counts` of the store contract gives them, equal to
    the source's."""
    digest: str
    """The SHA-256 both sides gave (hex)."""
    seconds: float


def migrate(source: str, target: str, *, progress: Callable[[int, int], None] | None = None) -> MigrationReport:
    """Copy the database at `source` into the empty one at `target` (a file path, a
    sqlite:/// or postgresql:// URL; created when missing) and verify the copy.

    `progress(done, total)` counts entries (records, log entries, tokens, names, settings).
    NotFound when `source` does not exist, Conflict when `target` is the source or holds
    anything, StoreFailed when the copy fails or differs from the source."""
    started = time.monotonic()
    source_file, target_file = sqlite_path(source), sqlite_path(target)
    if source_file == ":memory:" or target_file == ":memory:":
        raise Conflict("an in-memory database cannot be migrated from or to: name a file or a server")
    if source_file is not None and not Path(source_file).expanduser().is_file():
        raise NotFound(f"no database at {source_file}")
    if _same_database(source, target, source_file, target_file):
        raise Conflict("the source and the target are the same database")
    with (
        Engine.open(source, read_only=True) as origin,
        _target(target, target_file) as (destination, where, fresh),
        origin.store.read() as reading,
    ):
        # Checked before anything is written, in words a person can act on; the copy
        # checks again in its first transaction.
        with destination.store.read() as there:
            found = held(there)
        if any(found.values()):
            listed = ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in found.items() if n)
            raise Conflict(f"the target {where} is not empty ({listed}): migrate into an empty database")
        rows = reading.counts(None)
        try:
            copied = copy_into(reading, destination.administer, progress)
            with destination.store.read() as check:
                written, written_rows = fingerprint(check), check.counts(None)
            if written_rows != rows or written.counts != copied.counts:
                raise StoreFailed(
                    f"the copy holds other counts than the source (source {rows} {copied.counts}, "
                    f"copy {written_rows} {written.counts})"
                )
            if written.digest != copied.digest:
                raise StoreFailed("the copy's checksum differs from the source's")
        except EngineError as exc:
            if fresh:
                raise StoreFailed(f"{exc}: nothing was written") from exc
            raise StoreFailed(
                f"{exc}: {where} holds part of the copy; empty it (a PostgreSQL schema: DROP SCHEMA ... CASCADE) "
                "before migrating into it again"
            ) from exc
    return MigrationReport(source, where, copied.counts, rows, copied.digest, time.monotonic() - started)


def _same_database(source: str, target: str, source_file: str | None, target_file: str | None) -> bool:
    if source_file is not None and target_file is not None:
        return same_file(Path(source_file).expanduser(), Path(target_file).expanduser())
    return source_file is None and target_file is None and source.rstrip("/") == target.rstrip("/")


@contextlib.contextmanager
def _target(target: str, target_file: str | None) -> Iterator[tuple[Engine, str, bool]]:
    """The engine over the target, the name to show for it, and whether it is a new file.
    A file that does not exist yet is written beside its place and renamed into it only
    once the block succeeds (a failure leaves no file)."""
    if target_file is None:
        with Engine.open(target) as engine:
            yield engine, engine.store.location, False
        return
    path = Path(target_file).expanduser()
    kind = not_a_regular_file(path)
    if kind is not None:
        raise Conflict(f"{path} is {kind}: the target must be a database file")
    if path.exists():
        with Engine.open(str(path)) as engine:
            yield engine, str(path), False
        return
    temporary: Path | None = None
    try:
        # The engine closes before the rename: SQLite has folded its WAL into the file by then.
        with replaced_atomically(path) as temporary, Engine.open(str(temporary), create_parent=False) as engine:
            yield engine, str(path), True
    finally:
        if temporary is not None:
            for suffix in _SIDECARS:
                with contextlib.suppress(OSError):
                    os.unlink(f"{temporary}{suffix}")
