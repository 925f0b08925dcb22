"""Access tokens, and the grant a token gives the calls made with it.

A team server decides who reads and writes which scopes by the bearer token of each
request, never by a tool argument. A token names the scopes it may read, the scopes it may
write (none when it is read-only; every one of them is readable too), and the one scope
writes go to by default. While a call runs under a grant (`granted`), the engine's default
scopes are the grant's, a scope the call names outside them is refused with `Forbidden`
before anything is read, and every change to a scope the grant does not write is refused
with `Forbidden` and rolled back (`Engine._log` checks each one).

Once a token has been made, the HTTP server keeps requiring one even after the last is
revoked (`Tokens.required`): falling back to open access must be an operator's explicit
choice (`Tokens.reopen`), never the side effect of a revocation.

Only a SHA-256 hash of a token is stored: tokens are 256-bit random strings, so a slow
password hash would add nothing but cost to every request.
"""

from __future__ import annotations

import contextlib
import hashlib
import unicodedata
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from mnemodb.model.errors import Conflict, InvalidArgument, NotFound
from mnemodb.model.ids import SHARED, new_ulid
from mnemodb.model.records import Token
from mnemodb.model.value import Value

if TYPE_CHECKING:
    from mnemodb.engine.engine import Engine

__all__ = ["TOKEN_PREFIX", "Grant", "Tokens", "current_grant", "granted", "token_digest"]

TOKEN_PREFIX = "mnemodb_"
_NAME_CHARS = 100
# The meta entry that remembers whether the HTTP server requires a token with none live.
_ACCESS_KEY = "http_access"
_CLOSED = "tokens"
_OPEN = "open"

_grant: ContextVar[Grant | None] = ContextVar("mnemodb_grant", default=None)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Grant(Value):
    """What the calls of one request may do: read `read_scopes`, change `write_scopes`
    (a subset of them; empty for a read-only grant), and write to `write_scope` when a call
    names no scope."""

    name: str
    read_scopes: tuple[str, ...]
    write_scope: str
    write_scopes: tuple[str, ...]

    @property
    def read_only(self) -> bool:
        return not self.write_scopes

    @classmethod
    def of(cls, token: Token) -> Grant:
        return cls(token.name, token.read_scopes, token.write_scope, token.write_scopes)


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
        write_scopes: tuple[str, ...] | list[str] | None = None,
        read_only: bool = False,
    ) -> tuple[Token, str]:
        """A new token: (what is stored of it, the token itself, which is not kept anywhere).

        It may write its write scope (default `shared`) and `write_scopes`, unless it is
        `read_only`; it may read those and `read_scopes`. Making the first token closes the
        HTTP server to requests without one, for good (see `required`)."""
        name = unicodedata.normalize("NFC", name).strip()
        if not name or len(name) > _NAME_CHARS or any(unicodedata.category(c).startswith("C") for c in name):
            raise InvalidArgument(f"a token name is 1 to {_NAME_CHARS} printable characters")
        if read_only and write_scopes:
            raise InvalidArgument("a read-only token writes no scope: leave out its write scopes")
        engine = self._engine
        default = engine.scope(write_scope or SHARED)
        writes = () if read_only else tuple(dict.fromkeys([default, *(engine.scope(s) for s in write_scopes or ())]))
        reads = tuple(dict.fromkeys([default, *writes, *(engine.scope(s) for s in read_scopes or ())]))
        # Imported here: `secrets` loads hmac and random, which a server that makes no token never needs.
        import secrets

        secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
        token = Token(new_ulid(), name, reads, default, writes, engine.clock())
        with engine.administer() as tx:
            if any(t.name == name for t in tx.tokens()):
                raise Conflict(f"a token named {name!r} exists: revoke it first, or choose another name")
            tx.insert_token(token, token_digest(secret))
            tx.set_meta(_ACCESS_KEY, _CLOSED)
        return token, secret

    def list(self, *, revoked: bool = False) -> list[Token]:
        with self._engine.store.read() as tx:
            return tx.tokens(revoked=revoked)

    def revoke(self, ref: str) -> Token:
        """Revoke the live token with this id or name; it stops working at once."""
        with self._engine.administer() as tx:
            matches = [t for t in tx.tokens() if ref in (t.id, t.name)]
            if not matches:
                raise NotFound(f"no live token named or with id {ref!r}")
            at = self._engine.clock()
            tx.revoke_token(matches[0].id, at)
        return replace(matches[0], revoked_at=at)

    def verify(self, secret: str) -> Token | None:
        """The live token `secret` is, or None."""
        if not secret.startswith(TOKEN_PREFIX):
            return None
        with self._engine.store.read() as tx:
            return tx.token_by_hash(token_digest(secret))

    def required(self) -> bool:
        """True once a token has been made: from then on every HTTP request needs one, even
        after the last token is revoked, until an operator `reopen`s the server."""
        with self._engine.store.read() as tx:
            return tx.get_meta(_ACCESS_KEY) == _CLOSED or tx.live_token_count() > 0

    def reopen(self) -> None:
        """Let the HTTP server take requests without a token again (on loopback only): an
        operator's explicit choice, refused while a live token exists (it would still be
        required)."""
        with self._engine.administer() as tx:
            live = tx.live_token_count()
            if live:
                tokens = "1 live token remains: revoke it" if live == 1 else f"{live} live tokens remain: revoke them"
                raise Conflict(f"{tokens} first (while one is live, every request needs one)")
            tx.set_meta(_ACCESS_KEY, _OPEN)
