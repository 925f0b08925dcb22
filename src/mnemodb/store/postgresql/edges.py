"""Edges (relations between nodes, with validity windows). (Being written.)"""

from __future__ import annotations

from typing import Any

import psycopg

DDL = """"""


class EdgeReads:
    conn: psycopg.Connection[Any]


class EdgeWrites(EdgeReads):
    pass
