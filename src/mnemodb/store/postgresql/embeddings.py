"""Stored vectors and what the background embedder still has to do. (Being written.)"""

from __future__ import annotations

from typing import Any

import psycopg

DDL = """"""


class EmbeddingReads:
    conn: psycopg.Connection[Any]


class EmbeddingWrites(EmbeddingReads):
    pass
