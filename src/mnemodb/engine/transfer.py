"""Export and import: the whole store as records (a header, then nodes, edges and
embeddings), and those records loaded back.

An import holds every record to the rules the live write paths apply, checked first on
the record's own shape (`_checked_record`) and then against the store as it is
(`_import_record`); each record it writes is logged as the live write of the same item
is, through the engine's `log`, so an access token's grant limits an import as it limits
any change.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mnemodb.model import ops
from mnemodb.model.checks import check_props, check_text, json_kind
from mnemodb.model.errors import Forbidden, InvalidArgument
from mnemodb.model.ids import InvalidId, content_hash, is_ulid, parse_ulid
from mnemodb.model.records import ENTITY, MEMORY, ImportReport, NewMemory, Node
from mnemodb.model.rules import (
    check_edge_ends,
    check_extra,
    check_importance,
    check_model_dim,
    check_new_entity,
    check_window,
)

if TYPE_CHECKING:
    from mnemodb.engine.engine import Engine
    from mnemodb.store.base import WriteTx

__all__ = ["EXPORT_FORMAT", "EXPORT_VERSION", "Transfer"]

EXPORT_FORMAT = "mnemodb"
EXPORT_VERSION = 1
_IMPORT_CHUNK = 500


class Transfer:
    """The store as export records, and export records loaded into it."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def export(self) -> Iterator[dict[str, Any]]:
        """Everything in the store as records: a header, then nodes, edges, embeddings."""
        with self._engine.store.read() as tx:
            yield {
                "type": "header",
                "format": EXPORT_FORMAT,
                "version": EXPORT_VERSION,
                "seq": tx.current_seq(),
                "exported_at": self._engine.clock(),
            }
            yield from tx.dump()

    def import_records(
        self,
        records: Iterable[Mapping[str, Any] | tuple[int, Mapping[str, Any]]],
        *,
        progress: Callable[[int], None] | None = None,
        on_skip: Callable[[int, str], None] | None = None,
    ) -> ImportReport:
        """Load exported records; what is already here is left alone (import is idempotent).

        Each record is a mapping, numbered by its place in `records` (the header is line 1),
        or a (line, mapping) pair from a reader that knows the line of the file it read. The
        first must be the export's header. Every other record is held to the rules the live
        write paths apply (`_checked_record`, then `_import_record` against the store as it
        is) and logged through the engine's `log` like any write, so under an access token's grant only
        what it may write changes. A record that breaks a rule is skipped and reported in
        `ImportReport.errors` as "line N: <reason>", in line order (and to `on_skip(N,
        reason)` as it is found, when given); the others load.
        """
        written = unchanged = pending = 0
        skipped: list[tuple[int, str]] = []
        batch: list[tuple[int, dict[str, Any]]] = []
        header_seen = False

        def skip(line: int, reason: str) -> None:
            skipped.append((line, reason))
            if on_skip is not None:
                on_skip(line, reason)

        def flush() -> None:
            nonlocal written, unchanged, pending
            if batch:
                with self._engine.change() as tx:
                    at = self._engine.clock()
                    for line, record in batch:
                        try:
                            with tx.savepoint():
                                if self._import_record(tx, record, at):
                                    written += 1
                                else:
                                    unchanged += 1
                        except (InvalidArgument, Forbidden, ValueError) as exc:
                            skip(line, f"{_record_name(record)}: {exc}")
            if progress is not None:
                progress(pending)
            batch.clear()
            pending = 0

        for position, item in enumerate(records, 1):
            line, record = item if isinstance(item, tuple) else (position, item)
            if not header_seen:
                _check_header(record)
                header_seen = True
                continue
            pending += 1
            if record.get("type") == "header":
                skip(line, "a second header: an export has one, on its first line")
            else:
                try:
                    checked = self._checked_record(record)
                except InvalidArgument as exc:
                    skip(line, f"{_record_name(record)}: {exc}")
                else:
                    batch.append((line, checked))
            if pending >= _IMPORT_CHUNK:
                flush()
        if pending:
            flush()
        skipped.sort(key=lambda s: s[0])
        return ImportReport(written, unchanged, tuple(f"line {line}: {reason}" for line, reason in skipped))

    def _checked_record(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """An import record in canonical form (ids and scopes canonical, tags normalized,
        unknown fields dropped), held to the rules the live write paths apply to what they
        write; InvalidArgument says which it breaks. What needs the store (ends that exist,
        ids already taken, a model's vector length) is `_import_record`'s to check."""
        kind = record.get("type")
        if kind == "node":
            return self._checked_node(record)
        if kind == "edge":
            return self._checked_edge(record)
        if kind == "embedding":
            return _checked_embedding(record)
        raise InvalidArgument(f"unknown record type {_shown(kind)}")

    def _checked_node(self, record: Mapping[str, Any]) -> dict[str, Any]:
        node_id = _ulid(record.get("id"), "id")
        scope = self._scope(record.get("scope"))
        label = _string(record.get("label"), "label")
        if not label:
            raise InvalidArgument("label must not be empty")
        props = _object(record.get("props", {}), "props")
        created_at = _instant(record.get("created_at"), "created_at")
        out: dict[str, Any] = {
            "type": "node",
            "id": node_id,
            "scope": scope,
            "label": label,
            "props": check_props(props),
            "created_at": created_at,
            "updated_at": _instant(record.get("updated_at"), "updated_at"),
        }
        if "pk" in record:
            out["pk"] = record["pk"]  # kept by the store when it is free (see its `load`)
        memory, entity = record.get("memory"), record.get("entity")
        for fields, own, node in ((memory, MEMORY, "a Memory node"), (entity, ENTITY, "an Entity node")):
            if label == own and fields is None:
                raise InvalidArgument(f"{node} needs its {own.lower()} fields")
            if label != own and fields is not None:
                raise InvalidArgument(f"{own.lower()} fields belong to {node} only, not to a {_shown(label)} node")
        if memory is not None:
            out["memory"], out["props"] = self._checked_memory(_object(memory, "memory"), props)
        if entity is not None:
            out["entity"], out["props"] = _checked_entity(_object(entity, "entity"), props, created_at)
        access = record.get("access")
        if access is not None:
            fields = _object(access, "access")
            count = fields.get("count")
            if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= _I64_MAX:
                raise InvalidArgument(f"access count must be an integer from 0 to {_I64_MAX}")
            out["access"] = {"count": count, "last_at": _instant(fields.get("last_at"), "access last_at")}
        return out

    def _checked_memory(
        self, fields: Mapping[str, Any], props: Mapping[str, Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """A Memory node's memory fields and properties, through the checks every new memory
        passes (`Writes.check_new_memory`), with a hash that must be its content's."""
        content = _string(fields.get("content"), "content")
        summary = fields.get("summary")
        if summary is not None:
            _string(summary, "summary")
        importance = check_importance(fields.get("importance", 0))
        memory_type = _string(fields.get("memory_type", "general"), "memory_type")
        tags = fields.get("tags", [])
        if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
            raise InvalidArgument("tags must be a list of strings")
        item = self._engine.writes.check_new_memory(
            NewMemory(content, tuple(tags), importance, memory_type, summary, props)
        )
        digest = content_hash(content)
        given = fields.get("hash")
        if not isinstance(given, str) or given.lower() != digest:
            raise InvalidArgument("its hash is not the sha256 of its content")
        checked = {
            "hash": digest,
            "content": content,
            "summary": summary,
            "importance": importance,
            "memory_type": memory_type,
            "tags": list(item.tags),
        }
        turn_before = fields.get("context_from")
        if turn_before is not None:
            # The turn of a conversation this memory followed: its context comes from it again.
            checked["context_from"] = _ulid(turn_before, "context_from")
        archived_at = fields.get("archived_at")
        if archived_at is not None:
            # Archived: kept, out of searches and listings, as it was where it was exported.
            checked["archived_at"] = _instant(archived_at, "archived_at")
        return checked, dict(item.props)

    def _checked_edge(self, record: Mapping[str, Any]) -> dict[str, Any]:
        edge_id = _ulid(record.get("id"), "id")
        src, dst = _ulid(record.get("from"), "from"), _ulid(record.get("to"), "to")
        edge_type = _string(record.get("edge_type"), "edge type")
        if not edge_type:
            raise InvalidArgument("edge type must not be empty")
        scope = self._scope(record.get("scope"))
        props = check_props(_object(record.get("props", {}), "props"))
        valid_from = _instant(record.get("valid_from"), "valid_from", signed=True)
        valid_to = record.get("valid_to")
        if valid_to is not None:
            valid_to = _instant(valid_to, "valid_to", signed=True)
        check_window(valid_from, valid_to)
        out: dict[str, Any] = {
            "type": "edge",
            "id": edge_id,
            "from": src,
            "to": dst,
            "edge_type": edge_type,
            "scope": scope,
            "props": props,
            "valid_from": valid_from,
            "valid_to": valid_to,
            "created_at": _instant(record.get("created_at"), "created_at"),
        }
        if "pk" in record:
            out["pk"] = record["pk"]
        extra = record.get("extra")
        if extra is not None and check_extra(extra, "extra"):
            out["extra"] = extra
        return out

    def _scope(self, value: Any) -> str:
        return self._engine.parse_scope(_string(value, "scope"))

    def _import_record(self, tx: WriteTx, record: dict[str, Any], at: int) -> bool:
        """Write one checked record unless it is already here (True when something was
        written), with its change-log entries. InvalidArgument for what the store as it is
        refuses: an id another item holds, ends or a node that are not there (or that a
        grant in force may not see), an edge between two private scopes, a vector of
        another length than its model's; Forbidden for what a grant in force may not write."""
        kind = record["type"]
        if kind == "node":
            return self._import_node(tx, record, at)
        if kind == "edge":
            return self._import_edge(tx, record, at)
        return self._import_embedding(tx, record, at)

    def _import_node(self, tx: WriteTx, record: dict[str, Any], at: int) -> bool:
        self._engine.check_writable(record["scope"])
        existing = tx.node_by_id(record["id"])
        if existing is not None:
            if (existing.label, existing.scope) != (record["label"], record["scope"]):
                raise InvalidArgument("its id is another node's, of another label or scope")
            entity = record.get("entity")
            # The entity is here: it gets the observations it lacks, as add_observations gives them.
            return entity is not None and self._import_observations(tx, existing.pk, entity["observations"], at)
        if tx.edge_by_id(record["id"]) is not None:
            raise InvalidArgument("its id is an edge's")
        if not tx.load(record):
            return False  # the same content under another id: the same memory
        self._log_import(tx, record, at)
        return True

    def _import_observations(self, tx: WriteTx, pk: int, observations: Sequence[Mapping[str, Any]], at: int) -> bool:
        added = [o["content"] for o in observations if tx.add_observations(pk, [o["content"]], o["created_at"])]
        if not added:
            return False
        tx.touch_node(pk, at)
        self._engine.log(tx, ops.observations_added(tx.entities_by_pk([pk])[pk], added), at)
        return True

    def _import_edge(self, tx: WriteTx, record: dict[str, Any], at: int) -> bool:
        self._engine.check_writable(record["scope"])
        existing = tx.edge_by_id(record["id"])
        if existing is not None:
            if (existing.src, existing.dst, existing.type) != (record["from"], record["to"], record["edge_type"]):
                raise InvalidArgument("its id is another edge's, between other nodes or of another type")
            return False
        if tx.node_by_id(record["id"]) is not None:
            raise InvalidArgument("its id is a node's")
        src, dst = self._import_end(tx, record["from"]), self._import_end(tx, record["to"])
        check_edge_ends(src.scope, dst.scope)
        self._engine.check_edge_scope(record["scope"], src.scope, dst.scope)
        if not tx.load(record):
            return False
        self._log_import(tx, record, at)
        return True

    def _import_embedding(self, tx: WriteTx, record: dict[str, Any], at: int) -> bool:
        node = self._import_end(tx, record["node"])
        self._engine.check_writable(node.scope)
        # The length is the model's while other nodes hold vectors of it.
        check_model_dim(record["model"], record["dim"], tx.embedding_dim(record["model"], excluding=node.pk))
        if not tx.load(record):
            return False
        self._log_import(tx, record, at)
        return True

    def _import_end(self, tx: WriteTx, node_id: str) -> Node:
        """The node a record refers to. Under a grant, a node of a scope it may not read is
        not there for it (the same answer as for an id nobody has)."""
        node = tx.node_by_id(node_id)
        if node is None or self._engine.hidden(node.scope):
            raise InvalidArgument(f"it refers to node {node_id}, which is not in the store")
        return node

    def _log_import(self, tx: WriteTx, record: Mapping[str, Any], at: int) -> None:
        """The change-log entries of a record `_import_record` wrote: what the live write
        of the same item logs."""
        kind = record["type"]
        if kind == "node":
            self._engine.log(tx, ops.record_created(record), at)
        elif kind == "edge":
            edge = tx.edge_by_id(record["id"])
            if edge is not None:
                self._engine.log(tx, ops.edge_created(edge), at)
                if edge.valid_to is not None:
                    self._engine.log(tx, ops.edge_closed(edge, edge.valid_to), at)
        elif kind == "embedding":
            node = tx.node_by_id(record["node"])
            if node is not None:
                vector = bytes.fromhex(record["vector"])
                self._engine.log(tx, ops.embedding_set(node.scope, node.id, record["model"], vector), at)


# -- import records: their shape, checked before the store is asked -------------------------------------

_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
_SHOWN_CHARS = 60


def _check_header(record: Any) -> None:
    """Refuse a first record that is not the header of a mnemodb export of this version."""
    if not isinstance(record, Mapping) or record.get("type") != "header":
        raise InvalidArgument("not a mnemodb export: it must start with exactly one header line")
    found, version = record.get("format"), record.get("version")
    if found != EXPORT_FORMAT or type(version) is not int or version != EXPORT_VERSION:
        raise InvalidArgument(
            f"not a mnemodb export of version {EXPORT_VERSION}: format={_shown(found)} version={_shown(version)}"
        )


def _record_name(record: Mapping[str, Any]) -> str:
    """What an error calls a record: its kind and id, when it has a readable one."""
    kind = record.get("type")
    ident, prefix = (record.get("node"), "embedding of node") if kind == "embedding" else (record.get("id"), kind)
    if kind not in ("node", "edge", "embedding"):
        return "record"
    return f"{prefix} {ident}" if isinstance(ident, str) and is_ulid(ident) else str(prefix)


def _shown(value: Any) -> str:
    """A value read from a record as an error may quote it: JSON, cut short, with what a
    terminal cannot print (a lone surrogate) escaped."""
    if isinstance(value, str):
        cut = value if len(value) <= _SHOWN_CHARS else value[:_SHOWN_CHARS] + "…"
        return json.dumps(cut, ensure_ascii=False).encode("utf-8", "backslashreplace").decode("utf-8")
    if value is None or isinstance(value, bool | float) or (isinstance(value, int) and abs(value) < 10**18):
        return json.dumps(value)
    return json_kind(value)


def _string(value: Any, what: str) -> str:
    """Text SQLite stores faithfully (`check_text`), or InvalidArgument."""
    if not isinstance(value, str):
        raise InvalidArgument(f"{what} must be a string, not {json_kind(value)}")
    return check_text(value, what)


def _object(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidArgument(f"{what} must be a JSON object, not {json_kind(value)}")
    return value


def _ulid(value: Any, what: str) -> str:
    """A ULID in canonical form (as every id mnemodb makes is), or InvalidArgument."""
    if not isinstance(value, str):
        raise InvalidArgument(f"{what} must be a ULID, not {json_kind(value)}")
    try:
        return parse_ulid(value)
    except InvalidId as exc:
        raise InvalidArgument(f"{what} {_shown(value)} is not a ULID: {exc}") from None


def _instant(value: Any, what: str, *, signed: bool = False) -> int:
    """A time in milliseconds since 1970, as SQLite keeps it (64 bits). Only the ends of a
    relation's validity may be before 1970 (a fact true since 1900), as the faces allow."""
    low = _I64_MIN if signed else 0
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= _I64_MAX:
        raise InvalidArgument(f"{what} must be milliseconds since 1970: an integer from {low} to {_I64_MAX}")
    return value


def _checked_entity(
    fields: Mapping[str, Any], props: Mapping[str, Any], created_at: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """An Entity node's entity fields and properties, through the checks every new entity
    passes (`check_new_entity`); each observation's time defaults to the node's."""
    name = _string(fields.get("name"), "entity name")
    entity_type = _string(fields.get("entity_type", ""), "entity type")
    listed = fields.get("observations", [])
    if not isinstance(listed, list):
        raise InvalidArgument(f"observations must be a list, not {json_kind(listed)}")
    observations: dict[str, int] = {}
    for each in listed:
        observation = _object(each, "an observation")
        content = _string(observation.get("content"), "observation")
        when = _instant(observation.get("created_at", created_at), "an observation's created_at")
        observations.setdefault(content, when)  # an entity holds an observation once
    clean = check_new_entity(name, entity_type, list(observations), props)
    checked: dict[str, Any] = {
        "name": name,
        "entity_type": entity_type,
        "observations": [{"content": content, "created_at": when} for content, when in observations.items()],
    }
    extra = fields.get("extra")
    if extra is not None and check_extra(extra, "extra"):
        checked["extra"] = extra
    return checked, clean


def _checked_embedding(record: Mapping[str, Any]) -> dict[str, Any]:
    node_id = _ulid(record.get("node"), "node")
    model = _string(record.get("model"), "model")
    dim = record.get("dim")
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise InvalidArgument(f"dim must be a positive integer, not {_shown(dim)}")
    vector = record.get("vector")
    if not isinstance(vector, str):
        raise InvalidArgument(f"vector must be a string of hexadecimal digits, not {json_kind(vector)}")
    try:
        blob = bytes.fromhex(vector)
    except ValueError:
        raise InvalidArgument("vector must be a string of hexadecimal digits (float32 values, little-endian)") from None
    if len(blob) != 4 * dim:
        raise InvalidArgument(f"its vector holds {len(blob)} bytes, not the {4 * dim} of {dim} float32 values (dim)")
    import numpy as np  # here, not at the top: only an import that carries vectors needs it

    bad = np.flatnonzero(~np.isfinite(np.frombuffer(blob, dtype="<f4")))
    if bad.size:
        raise InvalidArgument(f"vector element {int(bad[0])} is not finite")
    return {
        "type": "embedding",
        "node": node_id,
        "model": model,
        "dim": dim,
        "vector": blob.hex(),
        "updated_at": _instant(record.get("updated_at"), "updated_at"),
    }
