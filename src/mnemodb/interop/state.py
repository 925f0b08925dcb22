"""Small named values kept in the database's meta table.

The engine has no public call for the meta table yet; these two functions reach it
through the store's transactions, so the interop code keeps its bookkeeping in the
same database file as the data it imported.
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
    with engine.store.write() as tx:
        tx.set_meta(key, value)
