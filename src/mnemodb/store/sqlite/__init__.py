"""The embedded default store: one SQLite file."""

from mnemodb.store.sqlite.store import SqliteStore

__all__ = ["SqliteStore"]
