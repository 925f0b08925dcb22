"""Small named values kept in the database's meta table.

The interop code keeps its bookkeeping (what it imported from which file) in the same
database file as the data it imported. Writing it is upkeep, not a caller's change: it is
never refused and never logged (`Engine.upkeep`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mnemodb.engine import Engine

__all__ = ["get_meta", "set_meta"]


def get_meta(engine: Engine, key: str) -> str | None:
    """The value stored under `key`, or None."""
    with engine.store.read() as tx:
        return tx.get_meta(key)


def set_meta(engine: Engine, key: str, value: str) -> None:
    """Store `value` under `key`, replacing what was there, in one write transaction."""
    with engine.upkeep() as tx:
        tx.set_meta(key, value)
