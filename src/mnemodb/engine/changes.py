"""The change log as a whole: its position and its entries in order, across every scope.

A caller under an access token reads the log through the items face (`Items.changes`),
which keeps to the scopes the token reads; this reading spans them all, so a grant may
not use it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mnemodb.engine.tokens import current_grant
from mnemodb.model.errors import Forbidden, InvalidArgument
from mnemodb.model.records import Change

if TYPE_CHECKING:
    from mnemodb.engine.engine import Engine

__all__ = ["ChangeLog"]


class ChangeLog:
    """Reads of the whole change log."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def current_seq(self) -> int:
        """The sequence number of the latest change (0 before the first)."""
        with self._engine.store.read() as tx:
            return tx.current_seq()

    def since(self, since_seq: int = 1, limit: int | None = None) -> list[Change]:
        """The change log from `since_seq` (inclusive), oldest first: every scope's changes,
        so never under a grant (`Items.changes` filters by scope)."""
        grant = current_grant()
        if grant is not None:
            raise Forbidden(f'the whole change log spans every scope: it is not readable with token "{grant.name}"')
        if limit is not None and limit < 1:
            raise InvalidArgument("limit must be at least 1")
        with self._engine.store.read() as tx:
            return tx.changes(max(1, since_seq), limit)
