"""The PostgreSQL schema, as an ordered list of migrations (the first creates it).

Each role's module declares the tables, indexes and functions it needs (`DDL`); the
second migration is them all, in an order where every reference points backwards. A
migration is never edited once databases hold it: a change is a new one, declared by the
module of its role beside its `DDL` (`changes.ACTOR_DDL`, `memories.ARCHIVE_DDL`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg

from mnemodb.store.postgresql import (
    changes,
    edges,
    embeddings,
    entities,
    memories,
    node_text,
    nodes,
    tokens,
    words,
)
from mnemodb.store.postgresql.sql import FUNCTIONS

__all__ = ["MIGRATIONS", "REQUIRED_EXTENSIONS", "SCHEMA_VERSION"]

# Substring search over entity text (pg_trgm) and vector search (pgvector).
REQUIRED_EXTENSIONS = ("pg_trgm", "vector")

Migration = str | Callable[[psycopg.Connection[Any]], None]
"""SQL, or a step that needs Python (run in the same transaction)."""

MIGRATIONS: tuple[Migration, ...] = (
    # 1: the settings table that also marks the schema as mnemodb's (`application`) and
    # says which migrations it has (`schema_version`). Text is COLLATE "C": byte order, as
    # SQLite's BINARY compares.
    """
    CREATE TABLE meta (
        key text COLLATE "C" PRIMARY KEY,
        value text COLLATE "C" NOT NULL
    )
    """,
    # 2: everything else.
    "\n".join(
        module
        for module in (
            FUNCTIONS,
            nodes.DDL,
            changes.DDL,
            edges.DDL,
            words.DDL,
            memories.DDL,
            entities.DDL,
            node_text.DDL,
            embeddings.DDL,
            tokens.DDL,
        )
        if module.strip()
    ),
    # 3: who made each change, and archived memories.
    changes.ACTOR_DDL + memories.ARCHIVE_DDL,
    # 4: the change log packed: each entry's data without what its row already says.
    changes.pack_log,
    # 5: the actor indexes only of entries made under a grant.
    changes.ACTOR_PARTIAL_DDL,
    # 6: memories' importance by scope, of those not archived, for `most_important`.
    memories.IMPORTANCE_DDL,
)

SCHEMA_VERSION = len(MIGRATIONS)
