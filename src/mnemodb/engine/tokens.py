"""Access tokens, and the grant a token gives the calls made with it.

A team server decides who reads and writes which scopes by the bearer token of each
request, never by a tool argument. A token names the scopes it may read (and, unless it is
read-only, write) and the one scope writes go to by default. While a call runs under a
grant (`Engine.granted`), the engine's default scopes are the grant's, a scope the call
names outside them is refused with `Forbidden` before anything is read, and a read-only
grant refuses every write.

Only a SHA-256 hash of a token is stored: tokens are 256-bit random strings, so a slow
password hash would add nothing but cost to every request.
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
import unicodedata
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from mnemodb.engine.errors import Conflict, InvalidArgument, NotFound
from mnemodb.engine.models import Token
from mnemodb.ids import SHARED, new_ulid

if TYPE_CHECKING:
    from mnemodb.engine.engine import Engine

__all__ = ["TOKEN_PREFIX", "Grant", "Tokens", "current_grant", "granted", "token_digest"]

TOKEN_PREFIX = "mnemodb_"
_NAME_CHARS = 100

_grant: ContextVar[Grant | None] = ContextVar("mnemodb_grant", default=None)


@dataclass(frozen=True, slots=True)
class Grant:
    """What the calls of one request may do: the token's name, scopes and mode."""

    name: str
    read_scopes: tuple[str, ...]
    write_scope: str
    read_only: bool

    @classmethod
    def of(cls, token: Token) -> Grant:
        return cls(token.name, token.read_scopes, token.write_scope, token.read_only)


def current_grant() -> Grant | None:
    """The grant the current call runs under, if any (HTTP requests with a token)."""
    return _grant.get()


@contextlib.contextmanager
def granted(grant: Grant | None) -> Iterator[None]:
    """Run what is inside under `grant` (None: none). Worker threads started from inside
    it inherit it with the context."""
    reset = _grant.set(grant)
    try:
        yield
    finally:
        _grant.reset(reset)


def token_digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


class Tokens:
    """Making, listing, revoking and checking access tokens (`Engine.tokens`)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def create(
        self,
        name: str,
        *,
        read_scopes: tuple[str, ...] | list[str] | None = None,
        write_scope: str | None = None,
        read_only: bool = False,
    ) -> tuple[Token, str]:
        """A new token: (what is stored of it, the token itself, which is not kept anywhere).

        Its write scope (default `shared`) is always among the scopes it may read."""
        name = unicodedata.normalize("NFC", name).strip()
        if not name or len(name) > _NAME_CHARS or any(unicodedata.category(c).startswith("C") for c in name):
            raise InvalidArgument(f"a token name is 1 to {_NAME_CHARS} printable characters")
        engine = self._engine
        writes = engine.scope(write_scope or SHARED)
        reads = tuple(dict.fromkeys([writes, *(engine.scope(s) for s in read_scopes or ())]))
        secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
        token = Token(new_ulid(), name, reads, writes, read_only, engine._clock())
        with engine.store.write() as tx:
            if any(t.name == name for t in tx.tokens()):
                raise Conflict(f"a token named {name!r} exists: revoke it first, or choose another name")
            tx.insert_token(token, token_digest(secret))
        return token, secret

    def list(self, *, revoked: bool = False) -> list[Token]:
        with self._engine.store.read() as tx:
            return tx.tokens(revoked=revoked)

    def revoke(self, ref: str) -> Token:
        """Revoke the live token with this id or name; it stops working at once."""
        with self._engine.store.write() as tx:
            matches = [t for t in tx.tokens() if ref in (t.id, t.name)]
            if not matches:
                raise NotFound(f"no live token named or with id {ref!r}")
            at = self._engine._clock()
            tx.revoke_token(matches[0].id, at)
        return replace(matches[0], revoked_at=at)

    def verify(self, secret: str) -> Token | None:
        """The live token `secret` is, or None."""
        if not secret.startswith(TOKEN_PREFIX):
            return None
        with self._engine.store.read() as tx:
            return tx.token_by_hash(token_digest(secret))

    def required(self) -> bool:
        """True once the database holds a live token: from then on every HTTP request needs one."""
        with self._engine.store.read() as tx:
            return tx.live_token_count() > 0
