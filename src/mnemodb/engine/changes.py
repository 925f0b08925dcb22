"""The change log as a whole: its position, its entries in order, and pages of it
filtered by op, item, actor and time.

`since` spans every scope, so a grant may not use it; `page` reads the reader's scopes
(as `Items.changes` does), or the whole log for a caller without a grant who asks.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mnemodb.engine.tokens import current_grant
from mnemodb.model.errors import Forbidden, InvalidArgument, NotFound
from mnemodb.model.ids import is_ulid
from mnemodb.model.records import Change, ChangeFilter
from mnemodb.model.value import Value

if TYPE_CHECKING:
    from mnemodb.engine.engine import Engine
    from mnemodb.store.base import ReadTx

__all__ = ["MAX_PAGE", "ChangeLog", "ChangePage", "ends_readable"]

MAX_PAGE = 1000
"""The most entries one page of the log may hold."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ChangePage(Value):
    """Entries of the change log, newest first, and where the next page starts."""

    changes: tuple[Change, ...]
    next_before: int | None
    """The `before_seq` of the next page; None when this is the last."""


class ChangeLog:
    """Reads of the change log: the whole of it in order, and filtered pages."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def current_seq(self) -> int:
        """The sequence number of the latest change (0 before the first)."""
        with self._engine.store.read() as tx:
            return tx.current_seq()

    def since(self, since_seq: int = 1, limit: int | None = None) -> list[Change]:
        """The change log from `since_seq` (inclusive), oldest first: every scope's changes,
        so never under a grant (`Items.changes` and `page` filter by scope)."""
        grant = current_grant()
        if grant is not None:
            raise Forbidden(f'the whole change log spans every scope: it is not readable with token "{grant.name}"')
        if limit is not None and limit < 1:
            raise InvalidArgument("limit must be at least 1")
        with self._engine.store.read() as tx:
            return tx.changes(max(1, since_seq), limit)

    def page(
        self,
        *,
        ops: Sequence[str] = (),
        target: str | None = None,
        actors: Sequence[str | None] = (),
        at_from: int | None = None,
        at_to: int | None = None,
        before_seq: int | None = None,
        limit: int = 50,
        scopes: Sequence[str] | None = None,
        every_scope: bool = False,
    ) -> ChangePage:
        """A page of the change log, newest first (by time, then seq), of the entries that
        meet every filter given: an op among `ops`, about `target` (a node's or an edge's
        id, which need not exist any more, or a memory's hash or an entity's name), made by
        one of `actors` (a grant's name, `Change.actor`; None for changes made without
        one), at or after `at_from` and before `at_to` (ms). Pass the page's `next_before`
        as `before_seq` for the next one.

        The entries are those of the reader's scopes (`scopes`, or the grant's or the
        default read scopes), as `Items.changes` reads them: an entry about a relation that
        touches an item of a scope the reader may not read is left out. With
        `every_scope`, the whole log, which a grant may not read. The filtering is the
        store's, along indexes: a page costs about the same however long the log is."""
        if not 1 <= limit <= MAX_PAGE:
            raise InvalidArgument(f"limit must be from 1 to {MAX_PAGE}")
        if before_seq is not None and before_seq < 1:
            raise InvalidArgument("before_seq must be at least 1")
        for value in ops:
            if not isinstance(value, str) or not value:
                raise InvalidArgument("an op to filter by must be a non-empty string")
        for actor in actors:
            if actor is not None and not isinstance(actor, str):
                raise InvalidArgument("an actor to filter by is a grant's name, or None")
        engine = self._engine
        grant = current_grant()
        if every_scope and grant is not None:
            raise Forbidden(f'the whole change log spans every scope: it is not readable with token "{grant.name}"')
        if every_scope and scopes is not None:
            raise InvalidArgument("name scopes, or ask for every scope, not both")
        reads = engine.scopes(scopes)
        known: dict[str, str | None] = {}
        out: list[Change] = []
        with engine.store.read() as tx:
            where = ChangeFilter(
                ops=tuple(dict.fromkeys(ops)),
                target=None if target is None else self._target(tx, target, reads),
                actors=tuple(dict.fromkeys(actors)),
                at_from=at_from,
                at_to=at_to,
            )
            cursor = before_seq
            # One more than the page, to know whether another follows; entries the reader may
            # not see (rare: relations to unreadable items) are skipped and more are read.
            chunk = limit + 1
            while len(out) <= limit:
                found = tx.change_page(None if every_scope else reads, where, cursor, chunk)
                for change in found:
                    if every_scope or change.scope is None or ends_readable(tx, change, reads, known):
                        out.append(change)
                if len(found) < chunk:
                    break
                cursor = found[-1].seq
                chunk = max(chunk, 100)
        more = len(out) > limit
        return ChangePage(tuple(out[:limit]), out[limit - 1].seq if more else None)

    def _target(self, tx: ReadTx, ref: str, reads: Sequence[str]) -> str:
        """The id a target filter means: an id as it is (its item may be gone), else the
        memory or entity `ref` names in the reader's scopes."""
        if not isinstance(ref, str) or not ref:
            raise InvalidArgument("target must be an id, a memory's hash or an entity's name")
        if is_ulid(ref.upper()):
            return ref.upper()
        found = self._engine.items.resolve(tx, ref, reads)
        if found is None:
            raise NotFound(f"nothing found for {ref!r}: give an id, a memory's hash or an entity's name")
        return found.id


def ends_readable(tx: ReadTx, change: Change, reads: Collection[str], known: dict[str, str | None]) -> bool:
    """False for an entry about an edge with an end in a scope the reader may not read: an
    edge of a readable scope may touch such an item, and its entry names it. `known` keeps
    the scopes looked up (a removed node's, from its first entry)."""
    for key in ("from", "to"):
        node_id = change.data.get(key)
        if not isinstance(node_id, str):
            continue
        if node_id not in known:
            node = tx.node_by_id(node_id)
            if node is not None:
                known[node_id] = node.scope
            else:
                first = tx.changes_of(node_id)
                known[node_id] = first[0].scope if first else None
        scope = known[node_id]
        if scope is not None and scope not in reads:
            return False
    return True
