"""Errors the engine raises. Each says what was wrong in words a caller can act on."""

from __future__ import annotations

__all__ = [
    "Conflict",
    "EngineError",
    "Forbidden",
    "InvalidArgument",
    "NotFound",
    "OperationTimeout",
    "StoreFailed",
    "StoreUnavailable",
]


class EngineError(Exception):
    """Base class of every error the engine raises on purpose."""


class InvalidArgument(EngineError):
    """The call's arguments break a rule of the data model."""


class Forbidden(InvalidArgument):
    """The caller's access token does not allow this: a scope it may not use, or a write
    with a read-only token. Nothing was read or changed."""


class NotFound(EngineError):
    """The node, edge or memory the call names does not exist in the caller's scopes."""


class Conflict(EngineError):
    """The write would break a uniqueness rule (for example, content stored twice in one scope)."""


class OperationTimeout(EngineError):
    """The operation ran past its deadline and was rolled back."""


class StoreUnavailable(EngineError):
    """The database could not be opened or stayed locked past every retry."""


class StoreFailed(EngineError):
    """The database refused the operation (the file is read-only, the disk is full or
    failing, the file is damaged): nothing was changed, and the message says which."""
