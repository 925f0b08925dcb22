"""Persistence behind the store contract (`mnemodb.store.base`); all SQL lives in this package.

`open_store` is the one way in: the composition roots (`Engine.open`) name a database by
location and never a backend.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from mnemodb.model.errors import StoreUnavailable
from mnemodb.store.base import Store

__all__ = ["open_store", "sqlite_path"]

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def sqlite_path(location: str) -> str | None:
    """The SQLite database a location names, or None when it names another kind of store.

    A location without a URL scheme is a file path (`:memory:` for a private in-memory
    database). A `sqlite://` URL follows the usual convention: `sqlite:///data.db` is a path
    relative to the working directory, `sqlite:////srv/data.db` an absolute one, and
    `sqlite://` or `sqlite:///:memory:` an in-memory database."""
    if not _URL.match(location):
        return location
    parts = urlsplit(location)
    if parts.scheme.lower() != "sqlite":
        return None
    if parts.netloc:
        raise StoreUnavailable(f"a sqlite URL names a file, not a host: {location!r} (write sqlite:///path)")
    if parts.query or parts.fragment:
        raise StoreUnavailable(f"a sqlite URL takes no options: {location!r}")
    path = unquote(parts.path)
    if path in ("", "/"):
        return ":memory:"
    return path[1:]


def open_store(location: str, *, create_parent: bool = True, read_only: bool = False) -> Store:
    """Open (or create) the store at `location`: a file path or `sqlite://` URL (see
    `sqlite_path`), or a `postgresql://` URL (`postgres://` too) naming a database whose
    `mnemodb` schema holds the data (`?schema=` names another). `create_parent`: make a
    file's directory when missing; `read_only`: open an existing database for reading only
    (nothing created, migrated or written)."""
    path = sqlite_path(location)
    if path is None:
        scheme = urlsplit(location).scheme.lower()
        if scheme in ("postgresql", "postgres"):
            try:
                from mnemodb.store.postgresql import PostgresStore
            except ImportError as exc:
                raise StoreUnavailable(
                    f"the PostgreSQL store needs its driver ({exc.name} is not installed): "
                    "pip install 'mnemodb[postgresql]'"
                ) from None

            return PostgresStore(location, read_only=read_only)
        raise StoreUnavailable(
            f"unknown kind of database {scheme!r}: use a file path, a sqlite:/// URL or a postgresql:// URL"
        )
    from mnemodb.store.sqlite import SqliteStore

    return SqliteStore(path, create_parent=create_parent, read_only=read_only)
