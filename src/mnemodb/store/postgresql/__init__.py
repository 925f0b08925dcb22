"""The PostgreSQL store: the same contract as SQLite's, for databases several hosts share."""

from mnemodb.store.postgresql.store import PostgresStore

__all__ = ["PostgresStore"]
