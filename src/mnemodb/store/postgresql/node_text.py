"""The words of properties an index spec declares (the property-graph face's text search). (Being written.)"""

from __future__ import annotations

from typing import Any

import psycopg

DDL = """"""


class NodeTextReads:
    conn: psycopg.Connection[Any]


class NodeTextWrites(NodeTextReads):
    pass
