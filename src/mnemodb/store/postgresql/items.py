"""Memories and entities under an ItemFilter (filtered search, listings, facets). (Being written.)"""

from __future__ import annotations

from typing import Any

import psycopg

DDL = """"""


class ItemReads:
    conn: psycopg.Connection[Any]
