"""A whole database copied into an empty one, whatever the backend of either side: how a
store moves between SQLite and PostgreSQL (`mnemodb migrate`) and how a PostgreSQL store
is backed up (into an SQLite file).

Everything a database holds goes across, read from one snapshot of the source: every
node, edge and embedding as the export's records (`TransferReads.dump`, loaded with
`TransferWrites.load`, which keeps ids, keys, hashes, times and archived states), the
change log entry by entry with who made each (so its `seq` numbers stay those of the
source: the target's log starts empty and takes the next number each time), the access
tokens with their hashes, the scope names and the settings. Derived data (word indexes,
counters, node versions) is rebuilt by the target as it takes the rows, except the
declared-text index of nodes: its bookkeeping setting is not copied, so the engine
indexes that text again from the change log.

The same walk over a store gives its fingerprint: counts per kind and a SHA-256 over a
canonical form of every entry, equal for two stores that hold the same data whatever
their backends, which is how a copy is verified.

Two things the store contract does not read are read here per backend: every setting (the
contract reads one key at a time) and each token's hash (the contract finds a token by
its hash, never shows it).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from mnemodb.model.errors import StoreFailed
from mnemodb.model.records import Token
from mnemodb.store.base import ReadTx, WriteTx

__all__ = ["Fingerprint", "copy_into", "fingerprint", "held", "settings_of", "token_hashes_of"]

NOT_COPIED_SETTINGS = frozenset({"node_text_seq"})
"""Settings that describe the source's derived data rather than data (the change-log
position up to which the declared-text index is current): left out of a copy."""

# Change-log entries read at a time.
_LOG_PAGE = 2000
# Progress is reported after this many entries (and once at the end).
_REPORT_EVERY = 500


@dataclass(slots=True)
class Fingerprint:
    """What a store holds, in counts per kind and one digest over everything."""

    counts: dict[str, int] = field(default_factory=dict)
    digest: str = ""


def settings_of(tx: ReadTx) -> dict[str, str]:
    """Every setting of the store, by key (the schema's own bookkeeping left out)."""
    own = getattr(tx, "meta_items", None)
    if own is not None:
        items: dict[str, str] = own()
        return items
    conn = getattr(tx, "conn", None)
    if isinstance(conn, sqlite3.Connection):  # the SQLite store keeps its schema version apart
        return {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM meta ORDER BY key")}
    raise StoreFailed(f"cannot list the settings of a {type(tx).__name__}")


def token_hashes_of(tx: ReadTx) -> dict[str, str]:
    """Every access token's hash, by token id."""
    own = getattr(tx, "token_hashes", None)
    if own is not None:
        hashes: dict[str, str] = own()
        return hashes
    conn = getattr(tx, "conn", None)
    if isinstance(conn, sqlite3.Connection):
        return {str(i): str(h) for i, h in conn.execute("SELECT id, hash FROM access_token ORDER BY id")}
    raise StoreFailed(f"cannot read the token hashes of a {type(tx).__name__}")


def held(tx: ReadTx) -> dict[str, int]:
    """How much of each kind the store holds (what `fingerprint` counts): zero everywhere
    for an empty store."""
    counts = tx.counts(None)
    out = {kind: counts[kind] for kind in ("nodes", "edges", "embeddings")}
    out["changes"] = tx.current_seq()
    out["tokens"] = len(tx.tokens(revoked=True))
    out["scope_names"] = len(tx.scope_names())
    out["settings"] = len([k for k in settings_of(tx) if k not in NOT_COPIED_SETTINGS])
    return out


def _entries(tx: ReadTx) -> Iterator[tuple[str, Any]]:
    """Everything the store holds, as (kind, value) in a fixed order: records, change-log
    entries, tokens, scope names, settings."""
    for record in tx.dump():
        yield "records", record
    since = 1
    while True:
        page = tx.changes(since, _LOG_PAGE)
        for change in page:
            yield "changes", change
        if len(page) < _LOG_PAGE:
            break
        since = page[-1].seq + 1
    hashes = token_hashes_of(tx)
    for token in tx.tokens(revoked=True):
        yield "tokens", (token, hashes[token.id])
    for name in tx.scope_names():
        yield "scope_names", name
    for key, value in sorted(settings_of(tx).items()):
        if key not in NOT_COPIED_SETTINGS:
            yield "settings", (key, value)


def _canonical(kind: str, value: Any) -> bytes:
    """One entry as bytes that two backends holding the same data give alike."""
    if kind == "changes":
        value = [value.seq, value.at, value.scope, value.op, value.target, dict(value.data), value.actor]
    elif kind == "tokens":
        token, digest = value
        value = [*_token_fields(token), digest]
    elif kind in ("scope_names", "settings"):
        value = list(value)
    text = json.dumps([kind, value], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass") + b"\n"


def _token_fields(token: Token) -> list[Any]:
    return [
        token.id,
        token.name,
        list(token.read_scopes),
        token.write_scope,
        list(token.write_scopes),
        token.created_at,
        token.revoked_at,
    ]


class _Tally:
    """Counts and the running digest of a walk."""

    def __init__(self) -> None:
        self.hash = hashlib.sha256()
        self.counts = dict.fromkeys(("records", "changes", "tokens", "scope_names", "settings"), 0)

    def add(self, kind: str, value: Any) -> None:
        self.hash.update(_canonical(kind, value))
        self.counts[kind] += 1

    def result(self) -> Fingerprint:
        return Fingerprint(dict(self.counts), self.hash.hexdigest())


def fingerprint(tx: ReadTx) -> Fingerprint:
    """The counts and digest of everything the store holds (see the module's docstring)."""
    tally = _Tally()
    for kind, value in _entries(tx):
        tally.add(kind, value)
    return tally.result()


def copy_into(
    source: ReadTx,
    writing: Callable[[], AbstractContextManager[WriteTx]],
    progress: Callable[[int, int], None] | None = None,
    *,
    batch: int = 250,
) -> Fingerprint:
    """Copy everything `source` holds into the store `writing()` opens write transactions
    on, which must hold nothing (StoreFailed otherwise, before anything is written); the
    fingerprint of what was read.

    The target is written `batch` entries to a transaction: PostgreSQL keeps every version
    of a row one transaction updates until it ends, so the counters the target keeps
    (words, tags, memories per scope) would cost more with every row of one long
    transaction. `progress(done, total)` as it goes, in entries (records, log entries,
    tokens, names, settings). StoreFailed when the target cannot take an entry as it was:
    a record refused, or a change-log entry that would get another number (a source whose
    log has a gap); what earlier transactions wrote stays."""
    total = sum(held(source).values())
    tally = _Tally()
    entries = _entries(source)
    done = 0
    if progress is not None:
        progress(0, total)
    first = True
    while True:
        taken = 0
        with writing() as tx:
            if first:
                there = held(tx)
                if any(there.values()):
                    what = ", ".join(f"{n} {kind}" for kind, n in there.items() if n)
                    raise StoreFailed(f"the target database is not empty ({what}): copy into an empty one")
                first = False
            for kind, value in itertools.islice(entries, batch):
                _write(tx, kind, value)
                tally.add(kind, value)
                taken += 1
                done += 1
                if progress is not None and done % _REPORT_EVERY == 0:
                    progress(min(done, total), max(done, total))
        if taken < batch:
            break
    if progress is not None:
        progress(done, max(done, total))
    return tally.result()


def _write(tx: WriteTx, kind: str, value: Any) -> None:
    if kind == "records":
        try:
            written = tx.load(value)
        except ValueError as exc:
            raise StoreFailed(
                f"the target refused {value['type']} {value.get('id', value.get('node'))}: {exc}"
            ) from exc
        if not written:
            raise StoreFailed(f"the target already holds {value['type']} {value.get('id', value.get('node'))}")
    elif kind == "changes":
        seq = tx.append_change(value.at, value.scope, value.op, value.target, value.data, actor=value.actor)
        if seq != value.seq:
            raise StoreFailed(
                f"change-log entry {value.seq} would become {seq} in the copy (the source's log has a gap)"
            )
    elif kind == "tokens":
        token, digest = value
        tx.insert_token(token, digest)
    elif kind == "scope_names":
        try:
            tx.name_scope(value.name, value.scope, value.created_at)
        except ValueError as exc:
            raise StoreFailed(f"the target refused the scope name {value.name!r}: {exc}") from exc
    else:
        tx.set_meta(*value)
