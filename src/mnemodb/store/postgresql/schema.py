"""The PostgreSQL schema, as an ordered list of migrations (the first creates it).

The list grows as the PostgreSQL store is built; until that store is offered by
`open_store`, no database outside the tests holds it, and a migration may still be
rewritten. After that, a migration is never edited: a change is a new one.
"""

from __future__ import annotations

__all__ = ["MIGRATIONS", "REQUIRED_EXTENSIONS", "SCHEMA_VERSION"]

# Substring search over entity text (pg_trgm) and vector search (pgvector).
REQUIRED_EXTENSIONS = ("pg_trgm", "vector")

MIGRATIONS: tuple[str, ...] = (
    # 1: the settings table that also marks the schema as mnemodb's (`application`) and
    # says which migrations it has (`schema_version`). Text is COLLATE "C": byte order, as
    # SQLite's BINARY compares.
    """
    CREATE TABLE meta (
        key text COLLATE "C" PRIMARY KEY,
        value text COLLATE "C" NOT NULL
    )
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)
