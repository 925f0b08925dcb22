"""Memories: their tags, per-scope counters and word search. (Being written.)"""

from __future__ import annotations

from typing import Any

import psycopg

DDL = """"""


class MemoryReads:
    conn: psycopg.Connection[Any]


class MemoryWrites(MemoryReads):
    pass
