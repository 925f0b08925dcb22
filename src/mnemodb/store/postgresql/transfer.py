"""The whole database as records (dump and load). Mixed into the PostgreSQL store's transactions. (Being written.)"""

from __future__ import annotations

from typing import Any

import psycopg

DDL = """"""


class TransferReads:
    conn: psycopg.Connection[Any]


class TransferWrites(TransferReads):
    pass
