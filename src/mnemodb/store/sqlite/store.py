"""The SQLite store: one file, WAL, FTS5, safe for several processes at once.

Concurrency model, in one process: one write connection, used by one thread at a time
under a lock, and one read connection per thread. Across processes: WAL lets readers
run beside the one writer; every write transaction starts with `BEGIN IMMEDIATE`, so a
writer waits for the write lock up front (busy timeout plus a retry loop) instead of
failing half-way with "database is locked".
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

from mnemodb.model.errors import OperationTimeout, StoreFailed, StoreUnavailable
from mnemodb.store.base import ReadTx, Store, StoreHealth, VectorIndex, WriteTx
from mnemodb.store.files import (
    create_private_file,
    make_private_dirs,
    not_a_regular_file,
    replaced_atomically,
    same_file,
)
from mnemodb.store.sqlite import legacy
from mnemodb.store.sqlite.changes import LogReads, LogWrites, define_log_functions
from mnemodb.store.sqlite.checkpoint import Checkpointer
from mnemodb.store.sqlite.edges import EdgeReads, EdgeWrites
from mnemodb.store.sqlite.entities import EntityReads, EntityWrites
from mnemodb.store.sqlite.facts import FactReads, ScopeFacts
from mnemodb.store.sqlite.items import ItemReads
from mnemodb.store.sqlite.memories import MemoryReads, MemoryWrites
from mnemodb.store.sqlite.nodes import NodeReads, NodeWrites
from mnemodb.store.sqlite.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION
from mnemodb.store.sqlite.segments import INDEXES, needs_merge
from mnemodb.store.sqlite.tokens import TokenReads, TokenWrites
from mnemodb.store.sqlite.transfer import TransferReads, TransferWrites
from mnemodb.store.sqlite.warming import kept_descriptor, warm_files

__all__ = ["SqliteStore"]

log = logging.getLogger(__name__)

T = TypeVar("T")

MEMORY_DB = ":memory:"
# What SQLite keeps beside a database file while it is in use (WAL mode: -wal and -shm).
_SIDECARS = ("", "-wal", "-shm", "-journal")

# A writer asks for the write lock in short waits (SQLite's busy timeout on the write
# connection) inside a retry loop, so a call's time limit is checked between waits; it
# gives up only after two minutes. Readers never need the lock in WAL mode and keep a
# long busy timeout for the rare wait (recovery after a crash).
_WRITE_BUSY_TIMEOUT_S = 0.1
_READ_BUSY_TIMEOUT_S = 5.0
_WRITE_LOCK_DEADLINE_S = 120.0


_BUMP_ACCESS_UPSERT = (
    " ON CONFLICT (node) DO UPDATE SET count = count + excluded.count, last_at = MAX(last_at, excluded.last_at)"
)
# `bump_access`'s statements by the rows they add: 1, 2, 4, ... 256 (768 parameters, under
# the 999 that SQLite builds before 3.32 allow).
_BUMP_ACCESS_ROWS = {
    1 << k: "INSERT INTO node_access (node, count, last_at) VALUES "
    + ", ".join(["(?, ?, ?)"] * (1 << k))
    + _BUMP_ACCESS_UPSERT
    for k in range(9)
}
_BUMP_ACCESS_OF_EXISTING = (
    "INSERT INTO node_access (node, count, last_at) SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM node WHERE pk = ?)"
    + _BUMP_ACCESS_UPSERT
)


def _refusal(exc: sqlite3.Error) -> StoreFailed | None:
    """What a refusal by SQLite means for the caller, when it is the file or the disk."""
    text = str(exc).lower()
    if "readonly" in text or "read-only" in text:
        return StoreFailed(f"the database file is read-only ({exc}): reads work, writes are refused")
    if "disk is full" in text:
        return StoreFailed(f"the disk is full ({exc}): nothing was written; free some space and retry")
    if "disk i/o error" in text:
        return StoreFailed(
            f"the disk refused the write ({exc}: full, over a size limit, or failing): nothing was written"
        )
    if "malformed" in text or "not a database" in text or "vtable constructor failed" in text:
        return StoreFailed(
            f"the database file is damaged ({exc}): restore it from a backup (`PRAGMA integrity_check` "
            "shows what is broken)"
        )
    return None


def _cannot_create(path: str) -> str:
    """Why SQLite could not open `path`, when it is that the file cannot be created there."""
    file = Path(path)
    if path == ":memory:" or file.exists():
        return ""
    try:
        probe = file.with_name(f".{file.name}.probe-{os.getpid()}")
        probe.touch()
        probe.unlink()
    except OSError as exc:
        return f" (the directory is read-only or not writable: {exc.strerror or exc})"
    return ""


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class SqliteReadTx(
    TransferReads, MemoryReads, NodeReads, EdgeReads, EntityReads, ItemReads, TokenReads, LogReads, FactReads
):
    """Read methods over one connection (each role's in its own module). Every method is a
    few indexed statements."""

    # A read closes what a search left open at its end (`_Read.__exit__`): the best text
    # matches may be read part way and on.
    reads_lazily = True

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn


class SqliteWriteTx(
    SqliteReadTx,
    TransferWrites,
    MemoryWrites,
    NodeWrites,
    EdgeWrites,
    EntityWrites,
    TokenWrites,
    LogWrites,
):
    """Write methods. Only ever used inside `SqliteStore.write()`."""

    # Its statements are read to their end: nothing closes them before the commit.
    reads_lazily = False

    def __init__(self, conn: sqlite3.Connection) -> None:
        super().__init__(conn)
        self._savepoints = 0

    @contextlib.contextmanager
    def savepoint(self) -> Iterator[None]:
        """Changes made inside are undone alone if the block raises; the transaction goes on."""
        self._savepoints += 1
        name = f"item_{self._savepoints}"
        self.conn.execute(f"SAVEPOINT {name}")
        try:
            yield
        except BaseException:
            # A write statement stopped at its deadline (`interrupted`) has already rolled
            # back the whole transaction, savepoints and all: there is nothing to roll back
            # to, and the interruption is what the caller must hear of.
            if self.conn.in_transaction:
                self.conn.execute(f"ROLLBACK TO {name}")
                self.conn.execute(f"RELEASE {name}")
            raise
        self.conn.execute(f"RELEASE {name}")


def _with_sidecars(path: str) -> list[str]:
    return [path + suffix for suffix in _SIDECARS]


def _foreign_format(path: str) -> str:
    """A hint when the file is another memory server's own format."""
    # Through a descriptor kept open: this process may have other connections on the file,
    # and closing any descriptor of it would release their locks (see warming.py).
    fd = kept_descriptor(path)
    try:
        head = b"" if fd is None else os.pread(fd, 4, 0)
    except OSError:
        return ""
    if head == b"redb":
        return " (it is a topodb-mcp redb file, which mnemodb cannot read; name a new file with --db)"
    return ""


class _Deadline:
    """`SqliteStore.deadline`: this thread's deadline for `seconds`, then the one before it
    again. A class rather than a generator, as every tool call enters one."""

    __slots__ = ("local", "previous", "seconds")

    def __init__(self, local: threading.local, seconds: float | None) -> None:
        self.local = local
        self.seconds = seconds
        self.previous: float | None = None

    def __enter__(self) -> None:
        local, seconds = self.local, self.seconds
        self.previous = getattr(local, "deadline", None)
        local.deadline = None if seconds is None else time.monotonic() + seconds

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.local.deadline = self.previous


class _Read:
    """One read transaction on `conn` (holding `lock` while it lasts, if any): a deferred
    transaction, so that every statement of the read sees the same snapshot. A class
    rather than a generator: a point read opens one per call, and a generator's context
    manager cost about twice as much (each read of the native `get` and `explore` pays it)."""

    __slots__ = ("conn", "facts", "lock", "store", "tx")

    def __init__(
        self,
        store: SqliteStore,
        conn: sqlite3.Connection,
        lock: threading.RLock | None,
        facts: ScopeFacts | None = None,
    ) -> None:
        self.store = store
        self.conn = conn
        self.lock = lock
        self.facts = facts
        self.tx: SqliteReadTx | None = None

    def __enter__(self) -> SqliteReadTx:
        conn = self.conn
        if self.lock is not None:
            self.lock.acquire()
        try:
            try:
                conn.execute("BEGIN")
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise
                self.store._retry_busy(lambda: conn.execute("BEGIN"), "start a read")
        except BaseException:
            if self.lock is not None:
                self.lock.release()
            raise
        tx = self.tx = SqliteReadTx(conn)
        tx.kept_facts = self.facts
        return tx

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        conn = self.conn
        try:
            if self.tx is not None:
                self.tx.end_scoring()
                self.tx = None
            # Ending a read changes nothing; on a damaged file it may fail again, which
            # must not hide the error that got here.
            if conn.in_transaction:
                try:
                    conn.execute("COMMIT")
                except sqlite3.Error:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
        finally:
            if self.lock is not None:
                self.lock.release()
        if isinstance(exc, sqlite3.DatabaseError):
            if "interrupted" in str(exc):
                raise OperationTimeout("the operation ran past its time limit") from exc
            refusal = _refusal(exc)
            if refusal is not None:
                raise refusal from exc


class SqliteStore:
    """A mnemodb graph in one SQLite file (or `:memory:`)."""

    def __init__(
        self, path: str | os.PathLike[str] = MEMORY_DB, *, create_parent: bool = True, read_only: bool = False
    ) -> None:
        """Open (or create) the database at `path`. With `read_only`, an existing database is
        opened for reading only: nothing is created, migrated or written, not even the WAL's
        index beside a file in a directory this process may not write to; a write raises
        StoreFailed."""
        self._path = str(path)
        self._in_memory = self._path == MEMORY_DB
        self.read_only = read_only and not self._in_memory
        self._uri: str | None = None
        if not self._in_memory:
            file = Path(self._path).expanduser().resolve()
            if self.read_only:
                self._uri = _read_only_uri(file)
            elif create_parent:
                make_private_dirs(file.parent)
            elif not file.parent.is_dir():
                raise StoreUnavailable(f"database parent directory does not exist: {file.parent}")
            kind = not_a_regular_file(file)
            if kind is not None:  # SQLite would block for good opening a FIFO
                raise StoreUnavailable(f"cannot open database {file}: it is {kind}, not a database file")
            self._path = str(file)
            if not self.read_only:
                # Made here, private, before SQLite makes it with the umask's permissions; its
                # -wal and -shm files take the database file's permissions.
                create_private_file(file)
        self._write_lock = threading.RLock()
        self._local = threading.local()
        self._readers: list[sqlite3.Connection] = []
        self._readers_lock = threading.Lock()
        self._closed = False
        self._vectors: VectorIndex | None = None
        self._checkpointer: Checkpointer | None = None
        self._writer = self._connect(_WRITE_BUSY_TIMEOUT_S)
        try:
            self._open_schema()
        except sqlite3.DatabaseError as exc:
            self._writer.close()
            raise StoreUnavailable(f"cannot use {self._path} as a mnemodb database: {exc}") from exc
        except BaseException:
            self._writer.close()
            raise
        if not self._in_memory and not self.read_only:
            # The log's checkpoints on a thread of their own, off the writing calls' path,
            # instead of SQLite's automatic one in the commit (see checkpoint.py).
            # The same thread merges the full-text indexes' segments (see segments.py).
            self._checkpointer = Checkpointer.open(self._path, self._connect, self._write_lock)
            if self._checkpointer is not None:
                self._writer.execute("PRAGMA wal_autocheckpoint = 0")
                # A file written by bulk imports, or by a process that stopped mid-merge.
                with contextlib.suppress(sqlite3.Error):  # a damaged index: `check` says so
                    if any(needs_merge(self._writer, index) for index in INDEXES):
                        self._checkpointer.merge_soon()

    @property
    def vectors(self) -> VectorIndex:
        """SQLite has no vector index: the in-process one, built on first use (numpy loads then)."""
        if self._vectors is None:
            with self._readers_lock:
                if self._vectors is None:
                    from mnemodb.store.vectors import MatrixVectorIndex

                    self._vectors = MatrixVectorIndex()
        return self._vectors

    # -- connections ------------------------------------------------------------------------

    @property
    def location(self) -> str:
        return self._path

    def _connect(self, busy_timeout: float = _READ_BUSY_TIMEOUT_S) -> sqlite3.Connection:
        try:
            # Opening waits as long as a reader would: these pragmas read the file's schema,
            # which another process creating the same new file holds exclusively while it
            # switches it to WAL, longer than the writer's short wait on a loaded machine.
            # The connection's own wait is set once they have run.
            opening = max(busy_timeout, _READ_BUSY_TIMEOUT_S)
            conn = sqlite3.connect(
                self._uri or self._path,
                timeout=opening,
                isolation_level=None,
                check_same_thread=False,
                cached_statements=512,
                uri=self._uri is not None,
            )
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA temp_store = MEMORY")
            if busy_timeout != opening:
                conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            # The page cache stays at SQLite's default (2 MB a connection). Over stdio at
            # 100,000 entities, 16 MiB took native `get` from 0.55 to 0.43 ms of server CPU
            # and the entity word statement from 0.66 to 0.41 ms, but memdb and topodb
            # searches no faster (4.7 -> 4.8-5.6 ms, 2.0 -> 2.1-2.4 ms), nothing measurable
            # at 10,000, and 7-18 MB more RSS per process; mmap_size (256 MiB) bought
            # nothing measurable for 90-250 MB more RSS.
        except sqlite3.Error as exc:
            with contextlib.suppress(NameError, sqlite3.Error):
                conn.close()
            raise StoreUnavailable(
                f"cannot open database {self._path}: {exc}{_cannot_create(self._path)}{_foreign_format(self._path)}"
            ) from exc
        conn.set_progress_handler(self._check_deadline, 4000)
        return conn

    def _check_deadline(self) -> int:
        deadline = getattr(self._local, "deadline", None)
        return 1 if deadline is not None and time.monotonic() > deadline else 0

    def deadline(self, seconds: float | None) -> _Deadline:
        """Abort (and roll back) any statement this thread runs after `seconds`."""
        return _Deadline(self._local, seconds)

    def _reader(self) -> sqlite3.Connection:
        if self._in_memory:
            return self._writer
        conn: sqlite3.Connection | None = getattr(self._local, "reader", None)
        if conn is None:
            conn = self._connect()
            conn.execute("PRAGMA query_only = ON")
            self._local.reader = conn
            # What searches read of each scope on every call, kept while the data stays the
            # same (see facts.py): a connection that never writes misses no change.
            self._local.facts = ScopeFacts()
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def _retry_busy(self, action: Callable[[], T], what: str) -> T:
        give_up = time.monotonic() + _WRITE_LOCK_DEADLINE_S
        delay = 0.001
        while True:
            try:
                return action()
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise
                deadline = getattr(self._local, "deadline", None)
                now = time.monotonic()
                if deadline is not None and now > deadline:
                    raise OperationTimeout(
                        f"the database stayed locked by another writer while trying to {what}"
                    ) from exc
                if now > give_up:
                    raise StoreUnavailable(f"database stayed locked while trying to {what}") from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.01)

    # -- schema -------------------------------------------------------------------------------

    def _open_schema(self) -> None:
        conn = self._writer

        # Every check that can refuse the file runs before anything is written to it, in
        # one read transaction: another process may be creating the schema right now, and
        # separate reads could see half of its work.
        def check() -> int:
            conn.execute("BEGIN")
            try:
                return self._check_usable(conn)
            finally:
                conn.execute("COMMIT")

        version = self._retry_busy(check, "read the database's schema")
        if self.read_only:
            if version != SCHEMA_VERSION:
                raise StoreUnavailable(
                    f"database {self._path} has schema version {version}, older than this mnemodb's "
                    f"({SCHEMA_VERSION}), and was opened read-only: open it once where it may be written "
                    "to upgrade it"
                )
            return
        if not self._in_memory:
            # WAL is a property of the file; setting it needs a moment of exclusive access.
            mode = self._retry_busy(lambda: conn.execute("PRAGMA journal_mode = WAL").fetchone(), "enable WAL")
            if mode[0].lower() != "wal":
                log.warning("database %s is in %s mode, not WAL", self._path, mode[0])
        if version == SCHEMA_VERSION:
            return
        if version == 0 and legacy.is_memdb_database(conn):
            legacy.backup_before_migration(conn, self._path)
        if version:
            log.info("upgrading database %s from schema %d to %d", self._path, version, SCHEMA_VERSION)
        with self._write_tx() as tx:
            self._migrate(tx)

    def _check_usable(self, conn: sqlite3.Connection) -> int:
        """The file's schema version; StoreUnavailable for a newer schema or another application's file."""
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise StoreUnavailable(
                f"database {self._path} has schema version {version}, newer than this mnemodb "
                f"understands ({SCHEMA_VERSION}); upgrade mnemodb"
            )
        if version == 0:
            app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
            tables = [
                name
                for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                if not name.startswith("sqlite_")
            ]
            if tables and app_id != APPLICATION_ID and not legacy.is_memdb_database(conn):
                raise StoreUnavailable(
                    f"{self._path} is an SQLite database that mnemodb did not create "
                    f"(it has tables {', '.join(sorted(tables)[:5])}); refusing to change it"
                )
        return version

    def _migrate(self, tx: SqliteWriteTx) -> None:
        conn = tx.conn
        # Checked again inside the write lock: another process may have migrated meanwhile.
        version = self._check_usable(conn)
        is_memdb = version == 0 and legacy.is_memdb_database(conn)
        define_log_functions(conn)
        for number in range(version, SCHEMA_VERSION):
            for statement in _split_sql(MIGRATIONS[number]):
                conn.execute(statement)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        if is_memdb:
            legacy.migrate_in_place(tx)

    # -- transactions ---------------------------------------------------------------------

    @contextlib.contextmanager
    def _write_tx(self, pauses_merging: bool = True) -> Iterator[SqliteWriteTx]:
        """A write transaction under the store's write lock. Its commit starts again the wait
        before the full-text indexes are merged (see checkpoint.py) unless `pauses_merging`
        is false (a write of no text that comes often while only reads run)."""
        if self.read_only:
            raise StoreFailed(f"the database {self._path} was opened read-only: nothing was changed")
        with self._write_lock:
            self._ensure_open()
            conn = self._writer
            self._retry_busy(lambda: conn.execute("BEGIN IMMEDIATE"), "start a write")
            try:
                yield SqliteWriteTx(conn)
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            # Past this point the work is done: a deadline must not interrupt the commit.
            deadline, self._local.deadline = getattr(self._local, "deadline", None), None
            try:
                self._retry_busy(lambda: conn.execute("COMMIT"), "commit")
                if self._checkpointer is not None:
                    self._checkpointer.committed(conn, pauses_merging)
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            finally:
                self._local.deadline = deadline

    def write(self) -> contextlib.AbstractContextManager[SqliteWriteTx]:
        return self._write()

    @contextlib.contextmanager
    def _write(self, pauses_merging: bool = True) -> Iterator[SqliteWriteTx]:
        try:
            with self._write_tx(pauses_merging) as tx:
                yield tx
        except sqlite3.DatabaseError as exc:
            if "interrupted" in str(exc):
                raise OperationTimeout("the operation ran past its time limit and was rolled back") from exc
            refusal = _refusal(exc)
            if refusal is not None:
                raise refusal from exc
            raise

    def read(self) -> _Read:
        self._ensure_open()
        if self._in_memory:
            return _Read(self, self._writer, self._write_lock)
        conn = self._reader()
        return _Read(self, conn, None, self._local.facts)

    def _ensure_open(self) -> None:
        if self._closed:
            raise StoreUnavailable("the store is closed")

    def bump_access(self, hits: Mapping[int, tuple[int, int]]) -> None:
        """Add read counts: `hits` maps node pk to (count, last access ms). Best effort."""
        if not hits or self.read_only:  # statistics: a read-only store keeps none
            return
        # In pk order: neighbouring rows share b-tree pages. The pks sorted alone (plain
        # integers), and the parameters laid out by slice assignment rather than a tuple a
        # row: sorting the (pk, (count, last)) pairs and flattening row tuples cost a
        # third of a flush's instructions (112 M against 76 M for five flushes of 12,471
        # rows in all).
        pks = sorted(hits)
        seen = list(map(hits.__getitem__, pks))
        values: list[int] = [0] * (3 * len(pks))
        values[0::3] = pks
        values[1::3] = [count for count, _ in seen]
        values[2::3] = [last for _, last in seen]
        # Many rows a statement, not one: a search's hundred winners are a hundred rows, and
        # a batch of 3,000 rows cost 0.95 µs a row this way against 1.32 µs a row by
        # `executemany` (each row bound, stepped and reset on its own, the interpreter's
        # lock given up and taken back each time). Chunks of 256, 128, ..., 1 rows: a
        # handful of statement texts, each prepared once.
        # Flushed every fraction of a second while searches run: such a commit does not put
        # off the merging of the full-text indexes, which searches gain from (checkpoint.py).
        try:
            with self._write(pauses_merging=False) as tx:
                done = 0
                while done < len(pks):
                    size = min(256, 1 << ((len(pks) - done).bit_length() - 1))
                    tx.conn.execute(_BUMP_ACCESS_ROWS[size], values[3 * done : 3 * (done + size)])
                    done += size
        except sqlite3.IntegrityError:
            # A node deleted since it was read fails the foreign key, and the batch with it:
            # written again with only the nodes that still exist. Checking every row up
            # front instead made a batch cost 1.6 times as much.
            with self._write(pauses_merging=False) as tx:
                tx.conn.executemany(_BUMP_ACCESS_OF_EXISTING, [(pk, *hits[pk], pk) for pk in pks])

    # -- maintenance ----------------------------------------------------------------------

    def files(self) -> list[str]:
        """The database file and the files SQLite keeps beside it while it is in use."""
        return [] if self._in_memory else _with_sidecars(self._path)

    def backup(self, target: str, progress: Callable[[int, int], None] | None = None) -> None:
        """A consistent copy of the whole database, taken while it stays in use, to a private
        file that replaces `target` only once it is complete: a failure leaves `target` as it
        was. Refused (StoreFailed) when `target` is the database or one of its files, is not
        a regular file, or looks like a database something has open.

        `progress(done_pages, total_pages)` is called as the copy advances.
        """
        destination = Path(target).expanduser()
        if any(same_file(destination, file) for file in self.files()):
            raise StoreFailed(f"{destination} is the database itself (or one of its files): back up elsewhere")
        kind = not_a_regular_file(destination)
        if kind is not None:
            raise StoreFailed(f"{destination} is {kind}: a backup is written to a file")
        in_use = [file for file in _with_sidecars(str(destination))[1:] if os.path.lexists(file)]
        if in_use:
            # Replacing a database that something has open would corrupt it for that process,
            # and its stale WAL would be read into the copy.
            raise StoreFailed(f"{in_use[0]} exists: {destination} looks like a database in use; back up elsewhere")
        with replaced_atomically(destination) as temporary:
            self._copy_to(str(temporary), progress)

    def _copy_to(self, target: str, progress: Callable[[int, int], None] | None) -> None:
        try:
            self._copy_pages(target, progress)
        except sqlite3.Error as exc:
            refusal = _refusal(exc)
            raise refusal or StoreFailed(f"the backup could not be written ({exc}): nothing was replaced") from exc

    def _copy_pages(self, target: str, progress: Callable[[int, int], None] | None) -> None:
        dest = sqlite3.connect(target)
        try:
            if self._in_memory:
                with self._write_lock:
                    self._writer.backup(dest)
                return
            # A connection of its own, so the copy never holds this process's write lock.
            source = self._connect()
            try:

                def report(status: int, remaining: int, total: int) -> None:
                    if progress is not None:
                        progress(total - remaining, total)

                source.backup(dest, pages=256, progress=report)
            finally:
                source.close()
        finally:
            dest.close()

    def check(self, *, thorough: bool = False) -> StoreHealth:
        """SQLite's quick_check (or, `thorough`, integrity_check, which also checks every
        index against its table), its foreign-key check, and each full-text index's own
        check; with the journal mode, WAL size and free pages."""
        problems: list[str] = []
        with self.read() as tx:
            conn = tx.conn
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            pragma = "integrity_check" if thorough else "quick_check"
            found = [str(row[0]) for row in conn.execute(f"PRAGMA {pragma}")]
            if found != ["ok"]:
                problems.extend(found[:20])
            broken = conn.execute("PRAGMA foreign_key_check").fetchall()
            if broken:
                problems.append(
                    f"{len(broken)} rows refer to rows that are gone (foreign keys), e.g. in {broken[0][0]}"
                )
            mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0])
            pages, free = (
                int(conn.execute(f"PRAGMA {name}").fetchone()[0]) for name in ("page_count", "freelist_count")
            )
            page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
        if not self.read_only and version == SCHEMA_VERSION:
            # The full-text indexes' own check; it is a write statement that changes nothing.
            for table in INDEXES:
                try:
                    with self._write_tx() as tx:
                        tx.conn.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")
                except sqlite3.DatabaseError as exc:
                    problems.append(f"the full-text index {table} is damaged ({exc}); restore a backup")
        wal = 0
        if not self._in_memory:
            with contextlib.suppress(OSError):
                wal = os.path.getsize(self._path + "-wal")
        details = {
            "journal_mode": mode,
            "wal_bytes": wal,
            "database_bytes": pages * page_size,
            "free_bytes": free * page_size,
            "read_only": self.read_only,
        }
        return StoreHealth(version, SCHEMA_VERSION, tuple(problems), details)

    def size_bytes(self) -> int:
        if self._in_memory:
            page_size = self._writer.execute("PRAGMA page_size").fetchone()[0]
            pages = self._writer.execute("PRAGMA page_count").fetchone()[0]
            return int(page_size) * int(pages)
        total = 0
        for suffix in ("", "-wal"):
            with contextlib.suppress(OSError):
                total += os.path.getsize(self._path + suffix)
        return total

    def warm(self, *, wait: bool = False) -> None:
        if self._in_memory or self._closed:
            return
        paths = [self._path]
        if wait:
            warm_files(paths, lambda: self._closed, read=True)
            return
        threading.Thread(
            target=warm_files, args=(paths, lambda: self._closed), name="mnemodb-warm", daemon=True
        ).start()

    def close(self) -> None:
        if self._closed:
            return
        with self._write_lock:
            self._closed = True
            with self._readers_lock:
                for conn in self._readers:
                    with contextlib.suppress(sqlite3.Error):
                        conn.close()
                self._readers.clear()
            # Before the writer, which is then the file's last connection in this process
            # and folds the log into the file as it closes. Its descriptor of the log's
            # index is closed after the writer: closing it releases the process's locks on
            # the index, the writer's among them.
            if self._checkpointer is not None:
                self._checkpointer.close(keep_index=True)
            self._writer.close()
            if self._checkpointer is not None:
                self._checkpointer.close_index()


def _read_only_uri(file: Path) -> str:
    """The URI SQLite opens `file` read-only with. In WAL mode a reader needs the WAL's
    index (`-shm`) beside the file; where this process cannot create it (a directory it may
    not write to) and it is not there, no process can have written to the database either,
    so it is opened as immutable, which needs no index."""
    if not file.is_file():
        raise StoreUnavailable(f"no database at {file}")
    sidecars = [Path(f"{file}{suffix}") for suffix in ("-wal", "-shm")]
    immutable = not os.access(file.parent, os.W_OK) and not any(p.exists() for p in sidecars)
    return f"{file.as_uri()}?mode=ro{'&immutable=1' if immutable else ''}"


def _split_sql(script: str) -> list[str]:
    """Split a migration into statements, keeping trigger bodies whole."""
    statements, current = [], ""
    for line in script.splitlines(keepends=True):
        if line.strip().startswith("--"):
            continue
        current += line
        if sqlite3.complete_statement(current):
            if current.strip():
                statements.append(current.strip())
            current = ""
    if current.strip():
        statements.append(current.strip())
    return statements


if TYPE_CHECKING:
    # Where mypy checks that the SQLite classes meet the store contract.
    def _meets_the_contract(
        store: SqliteStore, read: SqliteReadTx, write: SqliteWriteTx
    ) -> tuple[Store, ReadTx, WriteTx]:
        return store, read, write
