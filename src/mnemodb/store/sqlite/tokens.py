"""Access tokens: rows of `access_token` (schema migration 10), found by their hash."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from mnemodb.model.records import Token
from mnemodb.store.base import ScopeName

_COLUMNS = "id, name, read_scopes, write_scope, write_scopes, created_at, revoked_at"


def _token(row: Any) -> Token:
    return Token(row[0], row[1], tuple(json.loads(row[2])), row[3], tuple(json.loads(row[4])), row[5], row[6])


class TokenReads:
    conn: sqlite3.Connection

    def token_by_hash(self, digest: str) -> Token | None:
        """The live (not revoked) token with this hash."""
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM access_token WHERE hash = ? AND revoked_at IS NULL", [digest]
        ).fetchone()
        return None if row is None else _token(row)

    def tokens(self, *, revoked: bool = False) -> list[Token]:
        """Live tokens (and with `revoked`, revoked ones too), oldest first."""
        where = "" if revoked else "WHERE revoked_at IS NULL "
        return [_token(r) for r in self.conn.execute(f"SELECT {_COLUMNS} FROM access_token {where}ORDER BY id")]

    def live_token_count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM access_token WHERE revoked_at IS NULL").fetchone()[0])

    def scope_named(self, name: str) -> str | None:
        """The scope a name stands for (names ignore case)."""
        row = self.conn.execute("SELECT scope FROM scope_name WHERE name = ?", [name]).fetchone()
        return None if row is None else str(row[0])

    def scope_names(self) -> list[ScopeName]:
        """Every named scope, by name."""
        rows = self.conn.execute("SELECT name, scope, created_at FROM scope_name ORDER BY name")
        return [ScopeName(str(n), str(s), int(c)) for n, s, c in rows]


class TokenWrites:
    conn: sqlite3.Connection

    def insert_token(self, token: Token, digest: str) -> None:
        self.conn.execute(
            f"INSERT INTO access_token ({_COLUMNS}, read_only, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                token.id,
                token.name,
                json.dumps(list(token.read_scopes)),
                token.write_scope,
                json.dumps(list(token.write_scopes)),
                token.created_at,
                token.revoked_at,
                int(token.read_only),
                digest,
            ],
        )

    def name_scope(self, name: str, scope: str, at: int) -> None:
        try:
            self.conn.execute("INSERT INTO scope_name (name, scope, created_at) VALUES (?, ?, ?)", [name, scope, at])
        except sqlite3.IntegrityError as exc:  # the contract's error for a taken name, not SQLite's
            raise ValueError(f"the scope name {name!r} is taken ({exc})") from exc

    def revoke_token(self, token_id: str, at: int) -> None:
        self.conn.execute("UPDATE access_token SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", [at, token_id])
