"""Access tokens and scope names. Mixed into the PostgreSQL store's transactions. (Being written.)"""

from __future__ import annotations

from typing import Any

import psycopg

DDL = """"""


class TokenReads:
    conn: psycopg.Connection[Any]


class TokenWrites(TokenReads):
    pass
