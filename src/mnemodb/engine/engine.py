"""The engine: the one Python API every profile, the CLI and library users call.

It owns the rules of the data model (content addressing, tag normalisation, scopes,
temporal edges, the change log) and runs every operation as one store transaction.
It knows nothing of MCP.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from mnemodb.engine.access import AccessRecorder
from mnemodb.engine.embedding import Embeddings
from mnemodb.engine.graph import KnowledgeGraph, NewEntity
from mnemodb.engine.items import Items
from mnemodb.engine.memories import Memories
from mnemodb.engine.properties import PropertyGraph
from mnemodb.engine.tokens import Tokens, current_grant
from mnemodb.model import ops
from mnemodb.model.checks import check_props, check_text
from mnemodb.model.errors import Conflict, Forbidden, InvalidArgument, NotFound
from mnemodb.model.ids import SHARED, InvalidId, content_hash, is_ulid, new_ulid, normalize_scope, parse_ulid
from mnemodb.model.records import (
    ENTITY,
    MEMORY,
    Change,
    Edge,
    Entity,
    ImportReport,
    Memory,
    MemoryStats,
    NewMemory,
    Node,
    Props,
    Stats,
    StoredMemory,
)
from mnemodb.model.rules import (
    TURN_CONTEXT_WINDOW_MS,
    check_edge_ends,
    check_extra,
    check_importance,
    check_model_dim,
    check_new_entity,
    check_window,
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

EXPORT_FORMAT = "mnemodb"
EXPORT_VERSION = 1
_IMPORT_CHUNK = 500


def now_ms() -> int:
    return time.time_ns() // 1_000_000


# A person's name for a scope: what the CLI and tool arguments take beside a ULID.
_SCOPE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class Engine:
    """Memories, entities, relations and the change log over one store."""

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
        self.clock = clock
        self.weights = weights
        self.fusion = fusion
        """How a search's rankings (words, vectors) are fused, and how much reads count."""
        self.embeddings = Embeddings(self, embedder)
        """The embedder that gives queries and items vectors, and the work of keeping them current."""
        self._access = AccessRecorder(store.bump_access, interval=access_interval)
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
        self._access.close()
        self.store.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextlib.contextmanager
    def time_limit(self, seconds: float | None) -> Iterator[None]:
        """Abort and roll back whatever this thread does in the engine after `seconds`."""
        previous = getattr(self._deadlines, "at", None)
        self._deadlines.at = None if seconds is None else time.monotonic() + seconds
        try:
            with self.store.deadline(seconds):
                yield
        finally:
            self._deadlines.at = previous

    def time_left(self) -> float | None:
        """Seconds left of this thread's time limit (none left: 0), None without one. For work
        the store cannot stop midway, such as compiling a caller's pattern, to fit it in."""
        at: float | None = getattr(self._deadlines, "at", None)
        return None if at is None else max(0.0, at - time.monotonic())

    def flush_access(self) -> None:
        """Write queued access statistics now (they are otherwise written within ~0.1 s)."""
        self._access.flush()

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
        self._check_writable(chosen)
        return chosen

    @staticmethod
    def _check_writable(scope: str | None) -> None:
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

    def _check_edge_scope(self, edge_scope: str, src_scope: str, dst_scope: str) -> None:
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
        self._check_writable(ends[pk][1])  # the item's own scope first: the plainer refusal
        for edge in edges:
            ends_readable = all(ends[end][1] in grant.read_scopes for end in (edge.src_pk, edge.dst_pk))
            if edge.scope not in grant.write_scopes or not ends_readable:
                raise Forbidden(
                    f'it cannot be deleted with token "{grant.name}": relations in scopes it may not write touch it'
                )

    # The kinds of write transaction. Every write above the store opens one of them.

    def change(self) -> contextlib.AbstractContextManager[WriteTx]:
        """A write transaction for a caller's change: every one opens here, so a read-only
        grant stops them all, whatever scope they touch; each change in it is logged by
        `log`, which checks the grant's write scopes."""
        grant = current_grant()
        if grant is not None and grant.read_only:
            raise Forbidden(f'token "{grant.name}" is read-only')
        return self.store.write()

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
        and its transaction rolls back, whichever face or lookup led to it."""
        scope, name, target, data = op
        self._check_writable(scope)
        return tx.append_change(at, scope, name, target, data)

    def record_access(self, pks: Iterable[int]) -> None:
        self._access.record(pks, self.clock())

    # -- memories -------------------------------------------------------------------------------

    def check_new_memory(self, item: NewMemory) -> NewMemory:
        """The item with canonical tags and clean props, or InvalidArgument: checked before any write."""
        content = check_text(item.content, "content")
        if not content:
            raise InvalidArgument("content must not be empty")
        check_importance(item.importance)
        if not check_text(item.memory_type, "memory_type"):
            raise InvalidArgument("memory_type must not be empty")
        if item.summary is not None:
            check_text(item.summary, "summary")
        return replace(item, tags=normalize_tags(item.tags), props=check_props(item.props))

    def store_one(self, tx: WriteTx, item: NewMemory, scope: str, at: int, *, turn: bool = False) -> StoredMemory:
        """Write one checked item (see `_check_new_memory`); a `turn` is also found by the
        words of the two turns before it (see `store_memories`)."""
        digest = content_hash(item.content)
        existing_pk = tx.memory_pk(scope, digest)
        if existing_pk is not None:
            # Same content, same memory: merge the tags, keep everything else.
            added = tx.add_tags(existing_pk, item.tags)
            if added:
                tx.touch_node(existing_pk, at)
            existing = tx.memory_by_pk(existing_pk)
            assert existing is not None
            if added:
                self.log(tx, ops.tags_added(scope, existing.id, added), at)
            return StoredMemory(existing, False)
        node_id = new_ulid()
        pk = tx.insert_node(node_id, scope, MEMORY, item.props, at)
        context_from = tx.latest_memory(scope, pk, at - TURN_CONTEXT_WINDOW_MS) if turn else None
        tx.insert_memory(
            pk, scope, digest, item.content, item.summary, item.importance, item.memory_type, context_from=context_from
        )
        tx.add_tags(pk, item.tags)
        memory = Memory(
            pk=pk,
            id=node_id,
            scope=scope,
            content=item.content,
            hash=digest,
            tags=item.tags,
            importance=item.importance,
            memory_type=item.memory_type,
            summary=item.summary,
            props=item.props,
            created_at=at,
            updated_at=at,
        )
        self.log(tx, ops.memory_created(memory), at)
        return StoredMemory(memory, True)

    def replace_tags(self, tx: WriteTx, memory: Memory, tags: Iterable[str], at: int) -> None:
        """Give a memory exactly these tags (normalized), inside the caller's transaction."""
        new_tags = normalize_tags(tags)
        if new_tags != memory.tags:
            tx.replace_tags(memory.pk, new_tags)
            tx.touch_node(memory.pk, at)
            self.log(tx, ops.node_updated(memory.scope, memory.id, {"tags": list(new_tags)}), at)

    # -- edges between any nodes ------------------------------------------------------------------

    def insert_edge(
        self,
        tx: WriteTx,
        src: int,
        dst: int,
        src_scope: str,
        dst_scope: str,
        edge_type: str,
        scope: str,
        props: Props,
        valid_from: int,
        at: int,
        *,
        edge_id: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> Edge:
        """The one way a caller's relation is written (every face comes here): the scope
        rules, the row, and its change-log entry. Faces that word the cross-scope refusal in
        their own protocol's terms check it first; the check here stands either way."""
        check_edge_ends(src_scope, dst_scope)
        self._check_edge_scope(scope, src_scope, dst_scope)
        pk = tx.insert_edge(edge_id or new_ulid(), src, dst, edge_type, scope, props, valid_from, at)
        if extra:
            tx.set_edge_extra(pk, extra)
        edge = tx.edge_by_pk(pk)
        assert edge is not None
        self.log(tx, ops.edge_created(edge), at)
        return edge

    def link(
        self,
        from_id: str,
        to_id: str,
        edge_type: str,
        *,
        props: Props | None = None,
        valid_from: int | None = None,
        scope: str | None = None,
    ) -> Edge:
        """A new edge between two existing nodes, valid from `valid_from` (default: now)."""
        check_text(edge_type, "edge type")
        if not edge_type:
            raise InvalidArgument("edge type must not be empty")
        clean = check_props(props)
        edge_scope = self.scope_to_write(scope)
        with self.change() as tx:
            at = self.clock()
            src, dst = tx.node_by_id(from_id), tx.node_by_id(to_id)
            if src is None:
                raise NotFound(f"node {from_id} not found")
            if dst is None:
                raise NotFound(f"node {to_id} not found")
            start = at if valid_from is None else valid_from
            return self.insert_edge(tx, src.pk, dst.pk, src.scope, dst.scope, edge_type, edge_scope, clean, start, at)

    def close_edge(self, edge_id: str, valid_to: int | None = None) -> Edge:
        """Mark an open edge as no longer true from `valid_to` (default: now)."""
        with self.change() as tx:
            at = self.clock()
            edge = tx.edge_by_id(edge_id)
            if edge is None:
                raise NotFound(f"edge {edge_id} not found")
            if edge.valid_to is not None:
                raise Conflict(f"edge {edge_id} is already closed")
            end = at if valid_to is None else valid_to
            tx.close_edge(edge.pk, end)
            self.log(tx, ops.edge_closed(edge, end), at)
            closed = tx.edge_by_pk(edge.pk)
            assert closed is not None
            return closed

    # -- entities and observations ------------------------------------------------------------

    def create_entity(
        self,
        name: str,
        entity_type: str = "",
        observations: Sequence[str] = (),
        *,
        props: Props | None = None,
        scope: str | None = None,
        unique: bool = True,
    ) -> tuple[Entity, bool]:
        """An entity; with `unique`, an existing entity of that name in the scope is returned."""
        clean = check_new_entity(name, entity_type, observations, props)
        target = self.scope_to_write(scope)
        with self.change() as tx:
            at = self.clock()
            if unique:
                existing = tx.entity_by_name([target], name)
                if existing is not None:
                    return existing, False
            return self.graph.insert(tx, NewEntity(name, entity_type, tuple(observations)), target, at, clean), True

    def get_entity(self, name: str, *, scopes: Sequence[str] | None = None) -> Entity | None:
        with self.store.read() as tx:
            return tx.entity_by_name(self.scopes(scopes), check_text(name, "entity name"))

    def add_observations(self, name: str, contents: Sequence[str], *, scopes: Sequence[str] | None = None) -> list[str]:
        """Append observations to an entity, skipping ones it already has. Returns the added ones."""
        return self.graph.add_observations([(name, contents)], scopes=scopes)[0][1]

    # -- statistics, change log, export and import -------------------------------------------------

    def memories_per_scope(self) -> dict[str, int]:
        """Every scope's number of memories, whatever the read scopes (for an operator's
        metrics, not for tools)."""
        with self.store.read() as tx:
            return tx.memories_per_scope()

    def stats(self, *, scopes: Sequence[str] | None = None) -> Stats:
        read = self.scopes(scopes)
        with self.store.read() as tx:
            counts = tx.counts(read)
            oldest, newest = tx.memory_time_range(read)
            return Stats(
                memories=counts["memories"],
                tags=tx.count_tags(read),
                entities=counts["entities"],
                observations=counts["observations"],
                edges=counts["edges"],
                nodes=counts["nodes"],
                embeddings=counts["embeddings"],
                oldest_memory_at=oldest,
                newest_memory_at=newest,
                current_seq=tx.current_seq(),
                size_bytes=self.store.size_bytes(),
            )

    def memory_stats(self, *, scopes: Sequence[str] | None = None) -> MemoryStats:
        """Memory and distinct-tag counts and the oldest and newest memory's time."""
        read = self.scopes(scopes)
        with self.store.read() as tx:
            oldest, newest = tx.memory_time_range(read)
            return MemoryStats(tx.count_memories(read), tx.count_tags(read), oldest, newest)

    def current_seq(self) -> int:
        with self.store.read() as tx:
            return tx.current_seq()

    def changes(self, since_seq: int = 1, limit: int | None = None) -> list[Change]:
        """The change log from `since_seq` (inclusive), oldest first: every scope's changes,
        so never under a grant (`items.changes` filters by scope)."""
        grant = current_grant()
        if grant is not None:
            raise Forbidden(f'the whole change log spans every scope: it is not readable with token "{grant.name}"')
        if limit is not None and limit < 1:
            raise InvalidArgument("limit must be at least 1")
        with self.store.read() as tx:
            return tx.changes(max(1, since_seq), limit)

    def export(self) -> Iterator[dict[str, Any]]:
        """Everything in the store as records: a header, then nodes, edges, embeddings."""
        with self.store.read() as tx:
            yield {
                "type": "header",
                "format": EXPORT_FORMAT,
                "version": EXPORT_VERSION,
                "seq": tx.current_seq(),
                "exported_at": self.clock(),
            }
            yield from tx.dump()

    def import_records(
        self,
        records: Iterable[Mapping[str, Any] | tuple[int, Mapping[str, Any]]],
        *,
        progress: Callable[[int], None] | None = None,
        on_skip: Callable[[int, str], None] | None = None,
    ) -> ImportReport:
        """Load exported records; what is already here is left alone (import is idempotent).

        Each record is a mapping, numbered by its place in `records` (the header is line 1),
        or a (line, mapping) pair from a reader that knows the line of the file it read. The
        first must be the export's header. Every other record is held to the rules the live
        write paths apply (`_checked_record`, then `_import_record` against the store as it
        is) and logged through `_log` like any write, so under an access token's grant only
        what it may write changes. A record that breaks a rule is skipped and reported in
        `ImportReport.errors` as "line N: <reason>", in line order (and to `on_skip(N,
        reason)` as it is found, when given); the others load.
        """
        written = unchanged = pending = 0
        skipped: list[tuple[int, str]] = []
        batch: list[tuple[int, dict[str, Any]]] = []
        header_seen = False

        def skip(line: int, reason: str) -> None:
            skipped.append((line, reason))
            if on_skip is not None:
                on_skip(line, reason)

        def flush() -> None:
            nonlocal written, unchanged, pending
            if batch:
                with self.change() as tx:
                    at = self.clock()
                    for line, record in batch:
                        try:
                            with tx.savepoint():
                                if self._import_record(tx, record, at):
                                    written += 1
                                else:
                                    unchanged += 1
                        except (InvalidArgument, Forbidden, ValueError) as exc:
                            skip(line, f"{_record_name(record)}: {exc}")
            if progress is not None:
                progress(pending)
            batch.clear()
            pending = 0

        for position, item in enumerate(records, 1):
            line, record = item if isinstance(item, tuple) else (position, item)
            if not header_seen:
                _check_header(record)
                header_seen = True
                continue
            pending += 1
            if record.get("type") == "header":
                skip(line, "a second header: an export has one, on its first line")
            else:
                try:
                    checked = self._checked_record(record)
                except InvalidArgument as exc:
                    skip(line, f"{_record_name(record)}: {exc}")
                else:
                    batch.append((line, checked))
            if pending >= _IMPORT_CHUNK:
                flush()
        if pending:
            flush()
        skipped.sort(key=lambda s: s[0])
        return ImportReport(written, unchanged, tuple(f"line {line}: {reason}" for line, reason in skipped))

    def _checked_record(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """An import record in canonical form (ids and scopes canonical, tags normalized,
        unknown fields dropped), held to the rules the live write paths apply to what they
        write; InvalidArgument says which it breaks. What needs the store (ends that exist,
        ids already taken, a model's vector length) is `_import_record`'s to check."""
        kind = record.get("type")
        if kind == "node":
            return self._checked_node(record)
        if kind == "edge":
            return _checked_edge(record)
        if kind == "embedding":
            return _checked_embedding(record)
        raise InvalidArgument(f"unknown record type {_shown(kind)}")

    def _checked_node(self, record: Mapping[str, Any]) -> dict[str, Any]:
        node_id = _ulid(record.get("id"), "id")
        scope = _scope(record.get("scope"))
        label = _string(record.get("label"), "label")
        if not label:
            raise InvalidArgument("label must not be empty")
        props = _object(record.get("props", {}), "props")
        created_at = _instant(record.get("created_at"), "created_at")
        out: dict[str, Any] = {
            "type": "node",
            "id": node_id,
            "scope": scope,
            "label": label,
            "props": check_props(props),
            "created_at": created_at,
            "updated_at": _instant(record.get("updated_at"), "updated_at"),
        }
        if "pk" in record:
            out["pk"] = record["pk"]  # kept by the store when it is free (see its `load`)
        memory, entity = record.get("memory"), record.get("entity")
        for fields, own, node in ((memory, MEMORY, "a Memory node"), (entity, ENTITY, "an Entity node")):
            if label == own and fields is None:
                raise InvalidArgument(f"{node} needs its {own.lower()} fields")
            if label != own and fields is not None:
                raise InvalidArgument(f"{own.lower()} fields belong to {node} only, not to a {_shown(label)} node")
        if memory is not None:
            out["memory"], out["props"] = self._checked_memory(_object(memory, "memory"), props)
        if entity is not None:
            out["entity"], out["props"] = _checked_entity(_object(entity, "entity"), props, created_at)
        access = record.get("access")
        if access is not None:
            fields = _object(access, "access")
            count = fields.get("count")
            if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= _I64_MAX:
                raise InvalidArgument(f"access count must be an integer from 0 to {_I64_MAX}")
            out["access"] = {"count": count, "last_at": _instant(fields.get("last_at"), "access last_at")}
        return out

    def _checked_memory(
        self, fields: Mapping[str, Any], props: Mapping[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """A Memory node's memory fields and properties, through the checks every new memory
        passes (`_check_new_memory`), with a hash that must be its content's."""
        content = _string(fields.get("content"), "content")
        summary = fields.get("summary")
        if summary is not None:
            _string(summary, "summary")
        importance = check_importance(fields.get("importance", 0))
        memory_type = _string(fields.get("memory_type", "general"), "memory_type")
        tags = fields.get("tags", [])
        if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
            raise InvalidArgument("tags must be a list of strings")
        item = self.check_new_memory(NewMemory(content, tuple(tags), importance, memory_type, summary, props))
        digest = content_hash(content)
        given = fields.get("hash")
        if not isinstance(given, str) or given.lower() != digest:
            raise InvalidArgument("its hash is not the sha256 of its content")
        checked = {
            "hash": digest,
            "content": content,
            "summary": summary,
            "importance": importance,
            "memory_type": memory_type,
            "tags": list(item.tags),
        }
        return checked, dict(item.props)

    def _import_record(self, tx: WriteTx, record: dict[str, Any], at: int) -> bool:
        """Write one checked record unless it is already here (True when something was
        written), with its change-log entries. InvalidArgument for what the store as it is
        refuses: an id another item holds, ends or a node that are not there (or that a
        grant in force may not see), an edge between two private scopes, a vector of
        another length than its model's; Forbidden for what a grant in force may not write."""
        kind = record["type"]
        if kind == "node":
            return self._import_node(tx, record, at)
        if kind == "edge":
            return self._import_edge(tx, record, at)
        return self._import_embedding(tx, record, at)

    def _import_node(self, tx: WriteTx, record: dict[str, Any], at: int) -> bool:
        self._check_writable(record["scope"])
        existing = tx.node_by_id(record["id"])
        if existing is not None:
            if (existing.label, existing.scope) != (record["label"], record["scope"]):
                raise InvalidArgument("its id is another node's, of another label or scope")
            entity = record.get("entity")
            # The entity is here: it gets the observations it lacks, as add_observations gives them.
            return entity is not None and self._import_observations(tx, existing.pk, entity["observations"], at)
        if tx.edge_by_id(record["id"]) is not None:
            raise InvalidArgument("its id is an edge's")
        if not tx.load(record):
            return False  # the same content under another id: the same memory
        self._log_import(tx, record, at)
        return True

    def _import_observations(self, tx: WriteTx, pk: int, observations: Sequence[Mapping[str, Any]], at: int) -> bool:
        added = [o["content"] for o in observations if tx.add_observations(pk, [o["content"]], o["created_at"])]
        if not added:
            return False
        tx.touch_node(pk, at)
        self.log(tx, ops.observations_added(tx.entities_by_pk([pk])[pk], added), at)
        return True

    def _import_edge(self, tx: WriteTx, record: dict[str, Any], at: int) -> bool:
        self._check_writable(record["scope"])
        existing = tx.edge_by_id(record["id"])
        if existing is not None:
            if (existing.src, existing.dst, existing.type) != (record["from"], record["to"], record["edge_type"]):
                raise InvalidArgument("its id is another edge's, between other nodes or of another type")
            return False
        if tx.node_by_id(record["id"]) is not None:
            raise InvalidArgument("its id is a node's")
        src, dst = self._import_end(tx, record["from"]), self._import_end(tx, record["to"])
        check_edge_ends(src.scope, dst.scope)
        self._check_edge_scope(record["scope"], src.scope, dst.scope)
        if not tx.load(record):
            return False
        self._log_import(tx, record, at)
        return True

    def _import_embedding(self, tx: WriteTx, record: dict[str, Any], at: int) -> bool:
        node = self._import_end(tx, record["node"])
        self._check_writable(node.scope)
        # The length is the model's while other nodes hold vectors of it.
        check_model_dim(record["model"], record["dim"], tx.embedding_dim(record["model"], excluding=node.pk))
        if not tx.load(record):
            return False
        self._log_import(tx, record, at)
        return True

    def _import_end(self, tx: WriteTx, node_id: str) -> Node:
        """The node a record refers to. Under a grant, a node of a scope it may not read is
        not there for it (the same answer as for an id nobody has)."""
        node = tx.node_by_id(node_id)
        if node is None or self.hidden(node.scope):
            raise InvalidArgument(f"it refers to node {node_id}, which is not in the store")
        return node

    def _log_import(self, tx: WriteTx, record: Mapping[str, Any], at: int) -> None:
        """The change-log entries of a record `_import_record` wrote: what the live write
        of the same item logs."""
        kind = record["type"]
        if kind == "node":
            self.log(tx, ops.record_created(record), at)
        elif kind == "edge":
            edge = tx.edge_by_id(record["id"])
            if edge is not None:
                self.log(tx, ops.edge_created(edge), at)
                if edge.valid_to is not None:
                    self.log(tx, ops.edge_closed(edge, edge.valid_to), at)
        elif kind == "embedding":
            node = tx.node_by_id(record["node"])
            if node is not None:
                vector = bytes.fromhex(record["vector"])
                self.log(tx, ops.embedding_set(node.scope, node.id, record["model"], vector), at)


# -- import records: their shape, checked before the store is asked -------------------------------------

_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
_SHOWN_CHARS = 60


def _check_header(record: Any) -> None:
    """Refuse a first record that is not the header of a mnemodb export of this version."""
    if not isinstance(record, Mapping) or record.get("type") != "header":
        raise InvalidArgument("not a mnemodb export: it must start with exactly one header line")
    found, version = record.get("format"), record.get("version")
    if found != EXPORT_FORMAT or type(version) is not int or version != EXPORT_VERSION:
        raise InvalidArgument(
            f"not a mnemodb export of version {EXPORT_VERSION}: format={_shown(found)} version={_shown(version)}"
        )


def _record_name(record: Mapping[str, Any]) -> str:
    """What an error calls a record: its kind and id, when it has a readable one."""
    kind = record.get("type")
    ident, prefix = (record.get("node"), "embedding of node") if kind == "embedding" else (record.get("id"), kind)
    if kind not in ("node", "edge", "embedding"):
        return "record"
    return f"{prefix} {ident}" if isinstance(ident, str) and is_ulid(ident) else str(prefix)


def _shown(value: Any) -> str:
    """A value read from a record as an error may quote it: JSON, cut short, with what a
    terminal cannot print (a lone surrogate) escaped."""
    if isinstance(value, str):
        cut = value if len(value) <= _SHOWN_CHARS else value[:_SHOWN_CHARS] + "…"
        return json.dumps(cut, ensure_ascii=False).encode("utf-8", "backslashreplace").decode("utf-8")
    if value is None or isinstance(value, bool | float) or (isinstance(value, int) and abs(value) < 10**18):
        return json.dumps(value)
    return _kind(value)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, Mapping) else f"a {type(value).__name__}"


def _string(value: Any, what: str) -> str:
    """Text SQLite stores faithfully (`check_text`), or InvalidArgument."""
    if not isinstance(value, str):
        raise InvalidArgument(f"{what} must be a string, not {_kind(value)}")
    return check_text(value, what)


def _object(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidArgument(f"{what} must be a JSON object, not {_kind(value)}")
    return value


def _ulid(value: Any, what: str) -> str:
    """A ULID in canonical form (as every id mnemodb makes is), or InvalidArgument."""
    if not isinstance(value, str):
        raise InvalidArgument(f"{what} must be a ULID, not {_kind(value)}")
    try:
        return parse_ulid(value)
    except InvalidId as exc:
        raise InvalidArgument(f"{what} {_shown(value)} is not a ULID: {exc}") from None


def _scope(value: Any) -> str:
    return Engine.parse_scope(_string(value, "scope"))


def _instant(value: Any, what: str, *, signed: bool = False) -> int:
    """A time in milliseconds since 1970, as SQLite keeps it (64 bits). Only the ends of a
    relation's validity may be before 1970 (a fact true since 1900), as the faces allow."""
    low = _I64_MIN if signed else 0
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= _I64_MAX:
        raise InvalidArgument(f"{what} must be milliseconds since 1970: an integer from {low} to {_I64_MAX}")
    return value


def _checked_entity(
    fields: Mapping[str, Any], props: Mapping[str, Any], created_at: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """An Entity node's entity fields and properties, through the checks every new entity
    passes (`check_new_entity`); each observation's time defaults to the node's."""
    name = _string(fields.get("name"), "entity name")
    entity_type = _string(fields.get("entity_type", ""), "entity type")
    listed = fields.get("observations", [])
    if not isinstance(listed, list):
        raise InvalidArgument(f"observations must be a list, not {_kind(listed)}")
    observations: dict[str, int] = {}
    for each in listed:
        observation = _object(each, "an observation")
        content = _string(observation.get("content"), "observation")
        when = _instant(observation.get("created_at", created_at), "an observation's created_at")
        observations.setdefault(content, when)  # an entity holds an observation once
    clean = check_new_entity(name, entity_type, list(observations), props)
    checked: dict[str, Any] = {
        "name": name,
        "entity_type": entity_type,
        "observations": [{"content": content, "created_at": when} for content, when in observations.items()],
    }
    extra = fields.get("extra")
    if extra is not None and check_extra(extra, "extra"):
        checked["extra"] = extra
    return checked, clean


def _checked_edge(record: Mapping[str, Any]) -> dict[str, Any]:
    edge_id = _ulid(record.get("id"), "id")
    src, dst = _ulid(record.get("from"), "from"), _ulid(record.get("to"), "to")
    edge_type = _string(record.get("edge_type"), "edge type")
    if not edge_type:
        raise InvalidArgument("edge type must not be empty")
    scope = _scope(record.get("scope"))
    props = check_props(_object(record.get("props", {}), "props"))
    valid_from = _instant(record.get("valid_from"), "valid_from", signed=True)
    valid_to = record.get("valid_to")
    if valid_to is not None:
        valid_to = _instant(valid_to, "valid_to", signed=True)
    check_window(valid_from, valid_to)
    out: dict[str, Any] = {
        "type": "edge",
        "id": edge_id,
        "from": src,
        "to": dst,
        "edge_type": edge_type,
        "scope": scope,
        "props": props,
        "valid_from": valid_from,
        "valid_to": valid_to,
        "created_at": _instant(record.get("created_at"), "created_at"),
    }
    if "pk" in record:
        out["pk"] = record["pk"]
    extra = record.get("extra")
    if extra is not None and check_extra(extra, "extra"):
        out["extra"] = extra
    return out


def _checked_embedding(record: Mapping[str, Any]) -> dict[str, Any]:
    node_id = _ulid(record.get("node"), "node")
    model = _string(record.get("model"), "model")
    dim = record.get("dim")
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise InvalidArgument(f"dim must be a positive integer, not {_shown(dim)}")
    vector = record.get("vector")
    if not isinstance(vector, str):
        raise InvalidArgument(f"vector must be a string of hexadecimal digits, not {_kind(vector)}")
    try:
        blob = bytes.fromhex(vector)
    except ValueError:
        raise InvalidArgument("vector must be a string of hexadecimal digits (float32 values, little-endian)") from None
    if len(blob) != 4 * dim:
        raise InvalidArgument(f"its vector holds {len(blob)} bytes, not the {4 * dim} of {dim} float32 values (dim)")
    bad = np.flatnonzero(~np.isfinite(np.frombuffer(blob, dtype="<f4")))
    if bad.size:
        raise InvalidArgument(f"vector element {int(bad[0])} is not finite")
    return {
        "type": "embedding",
        "node": node_id,
        "model": model,
        "dim": dim,
        "vector": blob.hex(),
        "updated_at": _instant(record.get("updated_at"), "updated_at"),
    }
