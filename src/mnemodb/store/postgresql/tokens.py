"""Access tokens and scope names. Mixed into the PostgreSQL store's transactions.

A token is kept by the hash of its secret only (the secret is shown once, when it is
made, and never stored). A revoked token stays listed, marked with when it was revoked;
only live tokens need distinct names. A scope name is what people call a scope instead of
its ULID: one name per scope, unique ignoring the case of ASCII letters (SQLite's NOCASE,
here `ascii_lower`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import psycopg

from mnemodb.model.records import Token
from mnemodb.store.base import ScopeName
from mnemodb.store.postgresql.sql import got, put

__all__ = ["DDL", "TokenReads", "TokenWrites"]

DDL = """
CREATE TABLE access_token (
    id           text COLLATE "C" PRIMARY KEY,
    name         text COLLATE "C" NOT NULL,
    hash         text COLLATE "C" NOT NULL UNIQUE,
    read_scopes  text COLLATE "C" NOT NULL,
    write_scope  text COLLATE "C" NOT NULL,
    read_only    bigint NOT NULL,
    created_at   bigint NOT NULL,
    revoked_at   bigint,
    write_scopes text COLLATE "C" NOT NULL DEFAULT '[]'
);
CREATE UNIQUE INDEX access_token_live_name ON access_token (name) WHERE revoked_at IS NULL;

CREATE TABLE scope_name (
    name       text COLLATE "C" NOT NULL,
    scope      text COLLATE "C" NOT NULL UNIQUE,
    created_at bigint NOT NULL
);
CREATE UNIQUE INDEX scope_name_nocase ON scope_name (ascii_lower(name));
"""

_COLUMNS = "id, name, read_scopes, write_scope, write_scopes, created_at, revoked_at"


def _token(row: Sequence[Any]) -> Token:
    # The scope lists are JSON text, which escapes U+0000 itself: no `got` for them.
    return Token(
        got(row[0]),
        got(row[1]),
        tuple(json.loads(row[2])),
        got(row[3]),
        tuple(json.loads(row[4])),
        int(row[5]),
        None if row[6] is None else int(row[6]),
    )


class TokenReads:
    conn: psycopg.Connection[Any]

    def token_by_hash(self, digest: str) -> Token | None:
        """The live (not revoked) token with this hash."""
        row = self.conn.execute(
            f"SELECT {_COLUMNS} FROM access_token WHERE hash = %s AND revoked_at IS NULL", [put(digest)]
        ).fetchone()
        return None if row is None else _token(row)

    def tokens(self, *, revoked: bool = False) -> list[Token]:
        """Live tokens (with `revoked`, revoked ones too), oldest first: by id, a ULID that
        begins with its making time."""
        where = "" if revoked else "WHERE revoked_at IS NULL "
        return [_token(r) for r in self.conn.execute(f"SELECT {_COLUMNS} FROM access_token {where}ORDER BY id")]

    def live_token_count(self) -> int:
        row = self.conn.execute("SELECT COUNT(*) FROM access_token WHERE revoked_at IS NULL").fetchone()
        return int(row[0]) if row else 0

    def token_hashes(self) -> dict[str, str]:
        """Every token's hash by its id, revoked ones too: not part of the store contract,
        for a copy of the whole database (a token's hash is otherwise never read back)."""
        return {got(i): got(h) for i, h in self.conn.execute("SELECT id, hash FROM access_token ORDER BY id")}

    def scope_named(self, name: str) -> str | None:
        """The scope a name stands for (names ignore the case of ASCII letters)."""
        row = self.conn.execute(
            "SELECT scope FROM scope_name WHERE ascii_lower(name) = ascii_lower(%s)", [put(name)]
        ).fetchone()
        return None if row is None else got(row[0])

    def scope_names(self) -> list[ScopeName]:
        """Every named scope, by name as SQLite's NOCASE orders them (ASCII letters folded,
        then byte order)."""
        rows = self.conn.execute(
            'SELECT name, scope, created_at FROM scope_name ORDER BY ascii_lower(name) COLLATE "C"'
        )
        return [ScopeName(got(n), got(s), int(c)) for n, s, c in rows]


class TokenWrites(TokenReads):
    def insert_token(self, token: Token, digest: str) -> None:
        self.conn.execute(
            f"INSERT INTO access_token ({_COLUMNS}, read_only, hash) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [
                put(token.id),
                put(token.name),
                json.dumps(list(token.read_scopes)),
                put(token.write_scope),
                json.dumps(list(token.write_scopes)),
                token.created_at,
                token.revoked_at,
                int(token.read_only),
                put(digest),
            ],
        )

    def name_scope(self, name: str, scope: str, at: int) -> None:
        # A taken name (in any case) or a scope that has a name already: nothing is inserted,
        # and the transaction goes on (an integrity error would abort it).
        row = self.conn.execute(
            "INSERT INTO scope_name (name, scope, created_at) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING RETURNING 1",
            [put(name), put(scope), at],
        ).fetchone()
        if row is None:
            raise ValueError(f"the scope name {name!r} is taken, or scope {scope} has a name already")

    def revoke_token(self, token_id: str, at: int) -> None:
        self.conn.execute(
            "UPDATE access_token SET revoked_at = %s WHERE id = %s AND revoked_at IS NULL", [at, put(token_id)]
        )
