"""The PostgreSQL store: one mnemodb schema in a PostgreSQL database, shared by any number
of processes on any number of hosts.

Concurrency model: writes are serialised across every process of the schema by a
transaction-scoped advisory lock (`database.PostgresDatabase.write`), as the contract
requires; reads run beside them from a pool, each on one snapshot. Errors a caller can act
on become the engine's own: a lost or refused connection is StoreUnavailable (retry), a
statement past the call's time limit OperationTimeout (rolled back), a refusal by the
server (rights, disk) StoreFailed.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import errors as pg_errors

from mnemodb.model.errors import EngineError, OperationTimeout, StoreFailed, StoreUnavailable
from mnemodb.store.base import ReadTx, Store, StoreHealth, VectorIndex, WriteTx
from mnemodb.store.postgresql import admin
from mnemodb.store.postgresql.changes import LogReads, LogWrites
from mnemodb.store.postgresql.database import PostgresDatabase
from mnemodb.store.postgresql.edges import EdgeReads, EdgeWrites
from mnemodb.store.postgresql.embeddings import EmbeddingReads, EmbeddingWrites
from mnemodb.store.postgresql.entities import EntityReads, EntityWrites
from mnemodb.store.postgresql.items import ItemReads
from mnemodb.store.postgresql.memories import MemoryReads, MemoryWrites
from mnemodb.store.postgresql.node_text import NodeTextReads, NodeTextWrites
from mnemodb.store.postgresql.nodes import NodeReads, NodeWrites
from mnemodb.store.postgresql.tokens import TokenReads, TokenWrites
from mnemodb.store.postgresql.transfer import TransferReads, TransferWrites

__all__ = ["PostgresStore"]

log = logging.getLogger(__name__)


class PgReadTx(
    TransferReads,
    MemoryReads,
    NodeTextReads,
    NodeReads,
    EdgeReads,
    EntityReads,
    ItemReads,
    EmbeddingReads,
    TokenReads,
    LogReads,
):
    """Read methods over one connection inside one transaction (each role's in its own
    module). Parameters are `%s`; a list goes in as one array (`= ANY(%s)`)."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn


class PgWriteTx(
    PgReadTx,
    TransferWrites,
    MemoryWrites,
    NodeTextWrites,
    NodeWrites,
    EdgeWrites,
    EntityWrites,
    EmbeddingWrites,
    TokenWrites,
    LogWrites,
):
    """Write methods. Only ever used inside `PostgresStore.write()`."""

    @contextlib.contextmanager
    def savepoint(self) -> Iterator[None]:
        """Changes made inside are undone alone if the block raises; the transaction goes on."""
        with self.conn.transaction():
            yield


def _failure(exc: psycopg.Error, location: str) -> EngineError:
    """What an error from PostgreSQL means for the caller."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, pg_errors.QueryCanceled):
        return OperationTimeout("the operation ran past its time limit and was rolled back")
    if isinstance(exc, pg_errors.LockNotAvailable):
        return OperationTimeout(f"the database stayed locked by another writer ({first}): nothing was changed")
    if isinstance(exc, pg_errors.InsufficientPrivilege):
        return StoreFailed(f"PostgreSQL at {location} refused the role ({first}): nothing was changed")
    if isinstance(exc, pg_errors.ReadOnlySqlTransaction):
        return StoreFailed(f"the PostgreSQL server at {location} is read-only ({first}): nothing was changed")
    if isinstance(exc, (pg_errors.DiskFull, pg_errors.OutOfMemory, pg_errors.ProgramLimitExceeded)):
        return StoreFailed(f"PostgreSQL at {location} refused the write ({first}): nothing was changed")
    if isinstance(exc, (psycopg.OperationalError, pg_errors.AdminShutdown, pg_errors.CannotConnectNow)):
        return StoreUnavailable(
            f"the connection to PostgreSQL at {location} failed ({first}): nothing was changed; retry"
        )
    return StoreFailed(f"PostgreSQL at {location} failed ({first}): nothing was changed")


class PostgresStore:
    """A mnemodb graph in one schema of a PostgreSQL database (`?schema=`, default `mnemodb`)."""

    def __init__(self, url: str, *, read_only: bool = False, readers: int = 8) -> None:
        self.database = PostgresDatabase(url, read_only=read_only, readers=readers)
        self.read_only = read_only
        self._local = threading.local()
        self._vectors: VectorIndex | None = None
        self._vectors_lock = threading.Lock()

    @property
    def location(self) -> str:
        return self.database.location

    @property
    def vectors(self) -> VectorIndex:
        """pgvector: exact below a size, HNSW above it (`?vector_index=exact`: always exact)."""
        if self._vectors is None:
            with self._vectors_lock:
                if self._vectors is None:
                    from mnemodb.store.postgresql.vectors import PgVectorIndex

                    self._vectors = PgVectorIndex(self.database, exact_only=self.database.vector_index == "exact")
        return self._vectors

    # -- transactions ---------------------------------------------------------------------

    @contextlib.contextmanager
    def deadline(self, seconds: float | None) -> Iterator[None]:
        """Cancel (and roll back) any statement this thread runs past `seconds` from now."""
        previous = getattr(self._local, "deadline", None)
        self._local.deadline = None if seconds is None else time.monotonic() + seconds
        try:
            yield
        finally:
            self._local.deadline = previous

    @contextlib.contextmanager
    def read(self) -> Iterator[PgReadTx]:
        try:
            with self.database.read(getattr(self._local, "deadline", None)) as conn:
                yield PgReadTx(conn)
        except psycopg.Error as exc:
            raise _failure(exc, self.location) from exc

    @contextlib.contextmanager
    def write(self) -> Iterator[PgWriteTx]:
        try:
            with self.database.write(getattr(self._local, "deadline", None)) as conn:
                yield PgWriteTx(conn)
        except psycopg.Error as exc:
            raise _failure(exc, self.location) from exc

    def bump_access(self, hits: Mapping[int, tuple[int, int]]) -> None:
        """Add read counts: `hits` maps node pk to (count, last access ms). Best effort."""
        if not hits or self.read_only:
            return
        # In pk order: two processes adding counts for the same nodes lock rows in one order.
        rows = sorted(hits.items())
        with self.write() as tx:
            tx.conn.execute(
                "INSERT INTO node_access (node, count, last_at) "
                "SELECT h.node, h.count, h.last_at FROM unnest(%s::bigint[], %s::bigint[], %s::bigint[]) "
                "AS h (node, count, last_at) JOIN node n ON n.pk = h.node ORDER BY h.node "
                "ON CONFLICT (node) DO UPDATE SET count = node_access.count + excluded.count, "
                "last_at = GREATEST(node_access.last_at, excluded.last_at)",
                [[pk for pk, _ in rows], [c for _, (c, _) in rows], [at for _, (_, at) in rows]],
            )

    # -- maintenance ----------------------------------------------------------------------

    def files(self) -> list[str]:
        """None: the data lives in the server, not in files of this process."""
        return []

    def backup(self, target: str, progress: Callable[[int, int], None] | None = None) -> None:
        admin.backup(self, target, progress)

    def check(self, *, thorough: bool = False) -> StoreHealth:
        return admin.check(self, thorough=thorough)

    def size_bytes(self) -> int:
        return admin.size_bytes(self)

    def warm(self, *, wait: bool = False) -> None:
        """The database server keeps its own cache: nothing to ask of this machine's."""

    def close(self) -> None:
        self.database.close()


if TYPE_CHECKING:
    # Where mypy checks that the PostgreSQL classes meet the store contract.
    def _meets_the_contract(store: PostgresStore, read: PgReadTx, write: PgWriteTx) -> tuple[Store, ReadTx, WriteTx]:
        return store, read, write
