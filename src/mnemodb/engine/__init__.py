"""The engine: memories, entities, relations, search and the change log, as a Python API."""

from mnemodb.engine.engine import Engine, content_hash
from mnemodb.model.errors import (
    Conflict,
    EngineError,
    InvalidArgument,
    NotFound,
    OperationTimeout,
    StoreUnavailable,
)
from mnemodb.model.records import Change, Edge, Entity, Memory, NewMemory, SearchHit, Stats
from mnemodb.model.rules import normalize_tags

__all__ = [
    "Change",
    "Conflict",
    "Edge",
    "Engine",
    "EngineError",
    "Entity",
    "InvalidArgument",
    "Memory",
    "NewMemory",
    "NotFound",
    "OperationTimeout",
    "SearchHit",
    "Stats",
    "StoreUnavailable",
    "content_hash",
    "normalize_tags",
]
