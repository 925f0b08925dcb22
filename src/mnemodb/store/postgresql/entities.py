"""Entities, observations, relations, and entity text search (substring and words). (Being written.)"""

from __future__ import annotations

from typing import Any

import psycopg

DDL = """"""


class EntityReads:
    conn: psycopg.Connection[Any]


class EntityWrites(EntityReads):
    pass
