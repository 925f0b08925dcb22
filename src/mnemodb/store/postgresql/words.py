"""Ranked word search in SQL: FTS5's bm25 over tokens analysed in Python. (Being written.)"""

from __future__ import annotations

DDL = """"""
