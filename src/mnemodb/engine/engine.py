"""The engine: the one Python API every profile, the CLI and library users call.

`Engine` is composition: it opens the store, holds the core every face shares (scopes
and grants, the kinds of write transaction, the change log's `log`, access statistics,
time limits) and builds the faces, which do the work: memories, the knowledge graph, the
property graph, items, embeddings, tokens, statistics, the change log's reading, export
and import, and the one write path per primitive (`engine.writes`). It knows nothing of
MCP.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any

from mnemodb.engine.access import AccessRecorder
from mnemodb.engine.changes import ChangeLog
from mnemodb.engine.embedding import Embeddings
from mnemodb.engine.graph import KnowledgeGraph
from mnemodb.engine.items import Items
from mnemodb.engine.memories import Memories
from mnemodb.engine.properties import PropertyGraph
from mnemodb.engine.stats import Statistics
from mnemodb.engine.tokens import Tokens, current_grant
from mnemodb.engine.transfer import EXPORT_FORMAT, EXPORT_VERSION, Transfer
from mnemodb.engine.writes import Writes
from mnemodb.model import ops
from mnemodb.model.errors import Conflict, Forbidden, InvalidArgument
from mnemodb.model.ids import SHARED, InvalidId, content_hash, is_ulid, new_ulid, normalize_scope
from mnemodb.model.records import (
    Change,
    ImportReport,
    MemoryStats,
    Stats,
)
from mnemodb.model.rules import (
    normalize_tags,
)
from mnemodb.search.embedders import Embedder
from mnemodb.search.ranking import (
    DEFAULT_FUSION,
    DEFAULT_WEIGHTS,
    FusionWeights,
    RankWeights,
)
from mnemodb.store import open_store
from mnemodb.store.base import ReadTx, ScopeName, Store, WriteTx

__all__ = ["EXPORT_FORMAT", "EXPORT_VERSION", "Engine", "content_hash", "normalize_tags", "now_ms"]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


# A person's name for a scope: what the CLI and tool arguments take beside a ULID.
_SCOPE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class _TimeLimit:
    """`Engine.time_limit`: a class rather than a generator, as every tool call enters one
    (a generator's context manager, wrapping the store's, cost a point read several us)."""

    __slots__ = ("changed", "engine", "outer", "previous", "seconds", "statements", "within")

    def __init__(self, engine: Engine, seconds: float | None, statements_within: float | None) -> None:
        self.engine = engine
        self.seconds = seconds
        self.within = statements_within
        self.previous: float | None = None
        self.outer: _TimeLimit | None = None
        self.statements: AbstractContextManager[None] | None = None
        self.changed = False
        """Whether a caller's change committed within this limit (`Engine.change`): from
        then on, the call cannot be stopped and run again, so `statements_within` no longer
        applies."""

    def __enter__(self) -> None:
        deadlines = self.engine._deadlines
        seconds, within = self.seconds, self.within
        self.previous = getattr(deadlines, "at", None)
        self.outer = getattr(deadlines, "limit", None)
        deadlines.at = None if seconds is None else time.monotonic() + seconds
        if within is not None and (seconds is None or within < seconds):
            seconds = within
        else:
            self.within = None
        statements = self.engine.store.deadline(seconds)
        try:
            statements.__enter__()
        except BaseException:
            deadlines.at = self.previous
            raise
        self.statements = statements
        deadlines.limit = self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        try:
            assert self.statements is not None
            self.statements.__exit__(kind, exc, traceback)
        finally:
            self.engine._deadlines.at = self.previous
            self.engine._deadlines.limit = self.outer

    def committed(self) -> None:
        """A change committed: the rest of the call runs under the whole limit. A try that
        wrote cannot be stopped and run again (its change would be made twice), so the
        shorter limit of a first try (`statements_within`) is lifted here, and a timeout
        after this point is the call's own."""
        self.changed = True
        if self.within is None:
            return
        self.within = None
        assert self.statements is not None
        self.statements.__exit__(None, None, None)
        self.statements = self.engine.store.deadline(self.engine.time_left())
        self.statements.__enter__()


class Engine:
    """The store, the core every face shares, and the faces over them."""

    def __init__(
        self,
        store: Store,
        *,
        write_scope: str = SHARED,
        read_scopes: Sequence[str] | None = None,
        clock: Callable[[], int] = now_ms,
        weights: RankWeights = DEFAULT_WEIGHTS,
        fusion: FusionWeights = DEFAULT_FUSION,
        embedder: Embedder | None = None,
        access_interval: float = 0.1,
    ) -> None:
        self.store = store
        self._deadlines = threading.local()
        self._write_scope_default = self.scope(write_scope)
        self._read_scopes_default = (
            self.scopes(read_scopes) if read_scopes is not None else (self._write_scope_default,)
        )
        self._wall_clock = clock
        self._floors = threading.local()
        self.weights = weights
        self.fusion = fusion
        """How a search's rankings (words, vectors) are fused, and how much reads count."""
        self.writes = Writes(self)
        """The one write path per primitive that every face writes through."""
        self.embeddings = Embeddings(self, embedder)
        """The embedder that gives queries and items vectors, and the work of keeping them current."""
        self.access = AccessRecorder(store.bump_access, interval=access_interval)
        """Reads' access statistics, queued and written in batches off the read path."""
        self.memories = Memories(self)
        """Memories by content hash, with tags, search and relations (the memdb API)."""
        self.graph = KnowledgeGraph(self)
        """Entities, observations and relations by name (the knowledge-graph API)."""
        self.nodes = PropertyGraph(self)
        """Nodes, properties, edges, vectors and batches by ULID (the property-graph API)."""
        self.items = Items(self)
        """Memories, entities and relations by reference, ranked search (the native API)."""
        self.tokens = Tokens(self)
        """Access tokens for the HTTP server."""
        self.statistics = Statistics(self)
        """Counts of what the store holds."""
        self.change_log = ChangeLog(self)
        """The whole change log, across every scope."""
        self.transfer = Transfer(self)
        """Export of the store as records, and their import."""

    @classmethod
    def open(
        cls, path: str = ":memory:", *, create_parent: bool = True, read_only: bool = False, **options: Any
    ) -> Engine:
        """An engine over the database at `path`, a file path or a store URL (`open_store`),
        created if missing, and its directory too unless `create_parent` is false. With
        `read_only`, an existing database is only read: nothing is created or written
        (writes raise StoreFailed)."""
        store = open_store(path, create_parent=create_parent, read_only=read_only)
        try:
            return cls(store, **options)
        except BaseException:
            store.close()
            raise

    def close(self) -> None:
        self.access.close()
        self.store.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def time_limit(self, seconds: float | None, *, statements_within: float | None = None) -> _TimeLimit:
        """Abort and roll back whatever this thread does in the engine after `seconds`.

        `statements_within` stops database statements sooner, for a first try that is run
        again under the whole limit when stopped (a read), while work sized to the time
        left (`time_left`: compiling a pattern) is still sized to `seconds`, so that what a
        call accepts does not depend on which try it is."""
        return _TimeLimit(self, seconds, statements_within)

    def time_left(self) -> float | None:
        """Seconds left of this thread's time limit (none left: 0), None without one. For work
        the store cannot stop midway, such as compiling a caller's pattern, to fit it in."""
        at: float | None = getattr(self._deadlines, "at", None)
        return None if at is None else max(0.0, at - time.monotonic())

    # -- scopes -------------------------------------------------------------------------------

    @staticmethod
    def parse_scope(text: str) -> str:
        """`shared` or a ULID, canonical; InvalidArgument for anything else (names too)."""
        try:
            return normalize_scope(text)
        except InvalidId as exc:
            raise InvalidArgument(f'invalid scope "{text}" (expected "shared" or a ULID): {exc}') from None

    def scope(self, text: str) -> str:
        """The scope `text` names: `shared`, a ULID, or a name given to one (`name_scope`).
        Under a grant a name stands only for scopes the grant reads: another team's name is
        an unknown one, so names tell nothing of other tenants."""
        try:
            return normalize_scope(text)
        except InvalidId as exc:
            name = text.strip()
            if not _SCOPE_NAME.fullmatch(name):
                raise InvalidArgument(f'invalid scope "{text}" (expected "shared" or a ULID): {exc}') from None
            found = self._scope_named(name)
            grant = current_grant()
            if found is not None and (grant is None or found in grant.read_scopes):
                return found
            raise InvalidArgument(
                f'invalid scope "{text}": no scope has that name (expected "shared", a ULID, or a name '
                "given with `mnemodb scope create NAME`)"
            ) from None

    def _scope_named(self, name: str) -> str | None:
        with self.store.read() as tx:
            return tx.scope_named(name)

    def name_scope(self, name: str, scope: str | None = None) -> tuple[str, str]:
        """Give a scope a name people can use wherever a scope is named: `scope` (a ULID),
        or a new one. (name, scope). Names are unique ignoring case, and may not look like a
        scope already ("shared", a ULID)."""
        name = name.strip()
        if not _SCOPE_NAME.fullmatch(name) or name.lower() == SHARED or is_ulid(name):
            raise InvalidArgument(
                f'invalid scope name "{name}": 1 to 64 letters, digits, ".", "_" or "-", starting with a letter '
                'or digit, and neither "shared" nor a ULID'
            )
        target = new_ulid() if scope is None else self.parse_scope(scope)
        if target == SHARED:
            raise InvalidArgument('the shared scope is called "shared" already')
        with self.change() as tx:
            taken = tx.scope_named(name)
            if taken is not None:
                raise Conflict(f'the name "{name}" is taken: it names scope {taken}')
            named = [n for n, s, _ in tx.scope_names() if s == target]
            if named:
                raise Conflict(f'scope {target} is named "{named[0]}" already')
            tx.name_scope(name, target, self.clock())
        return name, target

    def scope_names(self) -> list[ScopeName]:
        """Every named scope: (name, scope, created_at ms), by name."""
        with self.store.read() as tx:
            return tx.scope_names()

    @property
    def read_scopes(self) -> tuple[str, ...]:
        """The scopes a read sees when it names none: the grant's, under one."""
        grant = current_grant()
        return self._read_scopes_default if grant is None else grant.read_scopes

    @property
    def write_scope(self) -> str:
        """Where a write goes when it names no scope: the grant's, under one."""
        grant = current_grant()
        return self._write_scope_default if grant is None else grant.write_scope

    def scopes(self, texts: Sequence[str] | None) -> tuple[str, ...]:
        if texts is None:
            return self.read_scopes
        if not texts:
            raise InvalidArgument("scopes must not be empty (an empty scope set admits nothing)")
        chosen = tuple(dict.fromkeys(self.scope(t) for t in texts))
        grant = current_grant()
        if grant is not None:
            denied = [s for s in chosen if s not in grant.read_scopes]
            if denied:
                raise Forbidden(f'scope "{denied[0]}" is not readable with token "{grant.name}"')
        return chosen

    def scope_to_write(self, scope: str | None) -> str:
        """The scope a new item or relation goes to: `scope`, or the default write scope.
        Forbidden when the grant in force may not write it."""
        chosen = self.write_scope if scope is None else self.scope(scope)
        self.check_writable(chosen)
        return chosen

    @staticmethod
    def check_writable(scope: str | None) -> None:
        """Under a grant, refuse a change to `scope` unless the grant may write it. Reading a
        scope never implies writing it: a token reads its read scopes and writes only its
        write scopes."""
        grant = current_grant()
        if grant is None:
            return
        if grant.read_only:
            raise Forbidden(f'token "{grant.name}" is read-only')
        if scope not in grant.write_scopes:
            raise Forbidden(f'scope "{scope}" is not writable with token "{grant.name}"')

    def hidden(self, scope: str, others: Iterable[str] = ()) -> bool:
        """True when a grant is in force and `scope` (or any of `others`, such as the ends of
        an edge) is not among the scopes it may read."""
        grant = current_grant()
        return grant is not None and any(s not in grant.read_scopes for s in (scope, *others))

    def check_edge_scope(self, edge_scope: str, src_scope: str, dst_scope: str) -> None:
        """Under a grant, an edge may only touch items of its own scope or shared ones: an edge
        written to another scope (`shared`, say) would show that scope's readers an item they
        may not read. Without a grant, topodb's rule stands (any scope for the edge)."""
        if current_grant() is None:
            return
        for end in (src_scope, dst_scope):
            if end not in (edge_scope, SHARED):
                raise Forbidden(
                    f'a relation in scope "{edge_scope}" cannot touch an item in scope "{end}": readers of '
                    f'"{edge_scope}" may not read it; write the relation to "{end}"'
                )

    def check_deletable(self, tx: ReadTx, pk: int) -> None:
        """Under a grant, refuse to delete an item that relations the grant may not change
        touch: they would go with it (by cascade), a change to another tenant's data. A
        relation the grant may change is one in a scope it writes, between items it reads."""
        grant = current_grant()
        if grant is None:
            return
        edges = tx.edges_of([pk], "both")
        ends = tx.labels_of([pk, *(end for e in edges for end in (e.src_pk, e.dst_pk))])
        self.check_writable(ends[pk][1])  # the item's own scope first: the plainer refusal
        for edge in edges:
            ends_readable = all(ends[end][1] in grant.read_scopes for end in (edge.src_pk, edge.dst_pk))
            if edge.scope not in grant.write_scopes or not ends_readable:
                raise Forbidden(
                    f'it cannot be deleted with token "{grant.name}": relations in scopes it may not write touch it'
                )

    # The kinds of write transaction. Every write above the store opens one of them.

    def clock(self) -> int:
        """Now, in ms since the epoch. Inside a caller's change, never earlier than the change
        log's last entry: writers take turns, so times follow commit order even when the
        clocks of the hosts writing one database disagree, or this one steps back."""
        now = self._wall_clock()
        floor: int | None = getattr(self._floors, "at", None)
        return now if floor is None or now >= floor else floor

    @contextlib.contextmanager
    def change(self) -> Iterator[WriteTx]:
        """A write transaction for a caller's change: every one opens here, so a read-only
        grant stops them all, whatever scope they touch; each change in it is logged by
        `log`, which checks the grant's write scopes. The clock is held to the log's last
        time while it is open (`clock`)."""
        grant = current_grant()
        if grant is not None and grant.read_only:
            raise Forbidden(f'token "{grant.name}" is read-only')
        with self.store.write() as tx:
            outer = getattr(self._floors, "at", None)
            self._floors.at = tx.last_change_at()
            try:
                yield tx
            finally:
                self._floors.at = outer
        limit: _TimeLimit | None = getattr(self._deadlines, "limit", None)
        if limit is not None:
            limit.committed()

    def administer(self) -> contextlib.AbstractContextManager[WriteTx]:
        """A write transaction for the operator's administration of the database (access
        tokens, and whether the HTTP server requires one): refused under any grant, so no
        token can make, revoke or reopen access, and never logged, since tokens are not
        data the change log replays or a client reads."""
        grant = current_grant()
        if grant is not None:
            raise Forbidden(f'token "{grant.name}" may not administer access to the database')
        return self.store.write()

    def upkeep(self) -> contextlib.AbstractContextManager[WriteTx]:
        """A write transaction for derived data the engine keeps current from what callers
        wrote (the node-text index, vectors): never refused, whatever grant the call that
        needs it runs under (a read-only token's search catches the index up), and never
        logged, since it changes nothing a caller wrote."""
        return self.store.write()

    # -- helpers -------------------------------------------------------------------------------

    def log(self, tx: WriteTx, op: ops.Op, at: int) -> int:
        """Append a change to the log, inside the change's own transaction. Every change a
        caller makes is logged here, so this is where the grant's write scopes are checked
        once for all of them: a change to a scope the grant may only read raises Forbidden
        and its transaction rolls back, whichever face or lookup led to it. The entry
        names the grant it was made under (its actor; none without a grant)."""
        scope, name, target, data = op
        self.check_writable(scope)
        grant = current_grant()
        return tx.append_change(at, scope, name, target, data, actor=None if grant is None else grant.name)

    def log_many(self, tx: WriteTx, entries: Sequence[ops.Op], at: int) -> int:
        """`log` of each entry in turn, in one statement where the store can: what a call
        that writes many relations logs them with. The seq of the last entry (the log's
        last seq when there are none)."""
        # Each scope once: a call's entries are mostly of the one scope it writes to.
        for scope in dict.fromkeys(entry[0] for entry in entries):
            self.check_writable(scope)
        grant = current_grant()
        return tx.append_changes(at, entries, actor=None if grant is None else grant.name)

    def record_access(self, pks: Iterable[int]) -> None:
        self.access.record(pks, self.clock())

    # -- statistics, change log, export and import: the profiles' and the CLI's names for
    # -- what the statistics, change-log and transfer faces do

    def memories_per_scope(self) -> dict[str, int]:
        return self.statistics.memories_per_scope()

    def stats(self, *, scopes: Sequence[str] | None = None) -> Stats:
        return self.statistics.totals(scopes=scopes)

    def memory_stats(self, *, scopes: Sequence[str] | None = None) -> MemoryStats:
        return self.statistics.memory_totals(scopes=scopes)

    def current_seq(self) -> int:
        return self.change_log.current_seq()

    def changes(self, since_seq: int = 1, limit: int | None = None) -> list[Change]:
        return self.change_log.since(since_seq, limit)

    def export(self) -> Iterator[dict[str, Any]]:
        return self.transfer.export()

    def import_records(
        self,
        records: Iterable[Mapping[str, Any] | tuple[int, Mapping[str, Any]]],
        *,
        progress: Callable[[int], None] | None = None,
        on_skip: Callable[[int, str], None] | None = None,
    ) -> ImportReport:
        return self.transfer.import_records(records, progress=progress, on_skip=on_skip)
