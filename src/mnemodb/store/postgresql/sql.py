"""What the PostgreSQL store's modules share: text in and out of the database, and the
SQL functions the schema defines first.

PostgreSQL's text cannot hold U+0000; the contract says any text the data model accepts
is stored and read back unchanged. Every text value the store writes goes through `put`
and every one it reads through `got`: U+0000 is written as U+FFFE followed by "0", and
U+FFFE itself doubled. The mapping is injective, so equality, uniqueness and hashing of
escaped text behave as on the original; U+FFFE is a noncharacter nobody types. JSON
text needs nothing: `json.dumps` already writes U+0000 as the escape sequence `\\u0000`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, overload

__all__ = ["FUNCTIONS", "advance_sequence", "got", "got_all", "put", "put_all"]

_ESC = "\ufffe"
_ESCAPED = re.compile("\ufffe(.)", re.DOTALL)


def _unescape(match: re.Match[str]) -> str:
    return "\x00" if match.group(1) == "0" else match.group(1)


@overload
def put(text: str) -> str: ...
@overload
def put(text: None) -> None: ...
def put(text: str | None) -> str | None:
    """`text` as PostgreSQL can hold it (see the module's docstring)."""
    if text is None or ("\x00" not in text and _ESC not in text):
        return text
    return text.replace(_ESC, _ESC + _ESC).replace("\x00", _ESC + "0")


@overload
def got(text: str) -> str: ...
@overload
def got(text: None) -> None: ...
def got(text: str | None) -> str | None:
    """Text read from PostgreSQL as it was given to `put`."""
    if text is None or _ESC not in text:
        return text
    return _ESCAPED.sub(_unescape, text)


def put_all(texts: Iterable[str]) -> list[str]:
    return [put(t) for t in texts]


def got_all(texts: Iterable[str]) -> list[str]:
    return [got(t) for t in texts]


# Defined before any table: SQLite's NOCASE folds ASCII letters only, and so does this
# (lower() would fold every letter its collation knows). IMMUTABLE, so indexes may use it.
FUNCTIONS = """
CREATE FUNCTION ascii_lower(t text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN translate(t, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz');
"""


def advance_sequence(conn: Any, table: str, pk: int) -> None:
    """After a row of `table` was inserted with the explicit key `pk` (a load), move the
    table's key sequence past it, so the key is never handed out again."""
    conn.execute(
        f"SELECT setval(pg_get_serial_sequence('{table}', 'pk'), GREATEST(%s, "
        f"(SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM {table}_pk_seq)))",
        [pk],
    )
