"""The JSONL file of the official knowledge-graph memory server, which better-memory also uses.

One JSON object per line:

    {"type":"entity","name":"Ada","entityType":"person","observations":["writes code"]}
    {"type":"relation","from":"Ada","to":"Acme","relationType":"works_at"}

Reading: the text is split on "\\n" (a "\\r" before it is JSON white space, so CRLF files
read the same), blank lines are skipped, lines of another `type` are ignored, and any
field besides the known ones is kept, in its order, as the entity's or relation's
`extra`. A malformed line is reported with its line number (1-based).

Importing goes through the engine's knowledge-graph API and is idempotent: an entity
that exists gets the observations it lacks, a relation that exists is skipped, so a
second import of the same file changes nothing. A name repeated in the file is one
entity (later lines add their observations to the first). A relation needs both ends:
one whose entity is neither in the file nor in the store is reported and skipped.

Writing: every entity, then every relation, in creation order; compact JSON with the
keys in the upstream order and the extra fields after them; numbers formatted as
JavaScript formats them; lines joined by "\\n" with none after the last, as upstream
writes. A file upstream wrote comes back byte for byte through import and export.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from mnemodb.engine.graph import NewEntity, NewRelation
from mnemodb.interop import state
from mnemodb.model.checks import json_kind
from mnemodb.model.errors import EngineError, InvalidArgument
from mnemodb.model.records import Entity, Relation
from mnemodb.model.rules import crosses_private_scopes, unstorable
from mnemodb.model.value import Value

if TYPE_CHECKING:
    from mnemodb.engine import Engine
    from mnemodb.server.config import Settings

__all__ = [
    "CHUNK_LINES",
    "ENTITY_KEYS",
    "RELATION_KEYS",
    "EntityLine",
    "ExportResult",
    "Fingerprint",
    "ImportResult",
    "LineError",
    "MemoryFileError",
    "OnError",
    "OtherLine",
    "RelationLine",
    "entity_line",
    "export_server_memory",
    "import_server_memory",
    "js_number",
    "looks_like_mnemodb_export",
    "malformed_lines",
    "parse_line",
    "prepare_knowledge_graph_store",
    "read_lines",
    "read_text",
    "relation_line",
    "server_memory_lines",
    "sync_memory_file",
    "to_json",
]

log = logging.getLogger("mnemodb")

OnError = Literal["skip", "abort"]
Progress = Callable[[int], None]

ENTITY_KEYS = ("type", "name", "entityType", "observations")
"""The known fields of an entity line, in the order upstream writes them."""
RELATION_KEYS = ("type", "from", "to", "relationType")
"""The known fields of a relation line, in the order upstream writes them."""

CHUNK_LINES = 500
"""Lines written per engine call (one transaction each)."""
_META_PREFIX = "server-memory file:"


# -- reading -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class LineError(Value):
    """A line that was not imported, and why."""

    line: int
    """1-based."""
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class EntityLine(Value):
    line: int
    entity: NewEntity


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class RelationLine(Value):
    line: int
    relation: NewRelation


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class OtherLine(Value):
    """A well-formed line of a `type` other than entity or relation: ignored, as upstream does."""

    line: int
    type: str


ParsedLine = EntityLine | RelationLine | OtherLine | LineError


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text} is out of range")
    return value


def _text_field(record: Mapping[str, Any], key: str, what: str, *, empty_ok: bool = False) -> str | LineError:
    if key not in record:
        return LineError(0, f'{what} has no "{key}"')
    value = record[key]
    if not isinstance(value, str):
        return LineError(0, f'{what} "{key}" must be a string, not {json_kind(value)}')
    if not value and not empty_ok:
        return LineError(0, f'{what} "{key}" is empty')
    return value


def _extra(record: Mapping[str, Any], known: Sequence[str]) -> dict[str, Any]:
    return {key: value for key, value in record.items() if key not in known}


def _entity(record: Mapping[str, Any], number: int) -> EntityLine | LineError:
    name = _text_field(record, "name", "entity")
    entity_type = _text_field(record, "entityType", "entity", empty_ok=True)
    for checked in (name, entity_type):
        if isinstance(checked, LineError):
            return replace(checked, line=number)
    assert isinstance(name, str)
    assert isinstance(entity_type, str)
    if "observations" not in record:
        return LineError(number, 'entity has no "observations"')
    observations = record["observations"]
    if not isinstance(observations, list) or not all(isinstance(o, str) for o in observations):
        return LineError(number, 'entity "observations" must be an array of strings')
    return EntityLine(number, NewEntity(name, entity_type, tuple(observations), _extra(record, ENTITY_KEYS)))


def _relation(record: Mapping[str, Any], number: int) -> RelationLine | LineError:
    fields: list[str] = []
    for key in RELATION_KEYS[1:]:
        checked = _text_field(record, key, "relation")
        if isinstance(checked, LineError):
            return replace(checked, line=number)
        fields.append(checked)
    source, target, relation_type = fields
    return RelationLine(number, NewRelation(source, target, relation_type, _extra(record, RELATION_KEYS)))


def parse_line(raw: bytes | str, number: int) -> ParsedLine | None:
    """What line `number` (1-based) holds; None for a blank line."""
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return LineError(number, "not UTF-8 text")
    else:
        text = raw
    if number == 1 and text.startswith("\ufeff"):
        text = text[1:]  # a byte-order mark some editors add
    if not text.strip():
        return None
    try:
        # Without its line ending, or an error at the end of the line would be "column 1"
        # of the next.
        record = json.loads(text.rstrip("\r\n"), parse_constant=_reject_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        return LineError(number, f"not JSON ({exc.msg} at column {exc.colno})")
    except ValueError as exc:
        return LineError(number, f"not JSON ({exc})")
    except RecursionError:
        return LineError(number, "not JSON (nested too deeply)")
    if not isinstance(record, dict):
        return LineError(number, f"not a JSON object but {json_kind(record)}")
    if "type" not in record:
        return LineError(number, 'no "type" field')
    kind = record["type"]
    if not isinstance(kind, str):
        return LineError(number, f'"type" must be a string, not {json_kind(kind)}')
    if kind not in ("entity", "relation"):
        return OtherLine(number, kind)
    problem = unstorable(record)
    if problem:
        return LineError(number, f"{kind} holds {problem}")
    return _entity(record, number) if kind == "entity" else _relation(record, number)


def read_lines(lines: Iterable[bytes | str]) -> Iterator[ParsedLine]:
    """Every non-blank line, parsed, numbered from 1 (blank lines count)."""
    for number, raw in enumerate(lines, 1):
        parsed = parse_line(raw, number)
        if parsed is not None:
            yield parsed


def read_text(text: str) -> Iterator[ParsedLine]:
    """The lines of a whole file's text, split on "\\n" as upstream splits them."""
    return read_lines(text.split("\n"))


def looks_like_mnemodb_export(first_line: bytes | str) -> bool:
    """Whether the first non-blank line of a file is a line of mnemodb's own export format."""
    try:
        record = json.loads(first_line)
    except (ValueError, RecursionError):
        return False
    return isinstance(record, dict) and record.get("type") in ("header", "node", "edge", "embedding")


# -- writing ------------------------------------------------------------------------------------


def js_number(value: float) -> str:
    """`value` as JavaScript's JSON.stringify writes it (non-finite numbers become null)."""
    if not math.isfinite(value):
        return "null"
    if value == 0:
        return "0"
    _, digit_tuple, exponent = Decimal(repr(abs(value))).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    k = len(digits)
    n = k + exponent  # value = 0.digits * 10**n
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = f"{digits[:n]}.{digits[n:]}"
    elif -6 < n <= 0:
        body = "0." + "0" * -n + digits
    else:
        mantissa = digits if k == 1 else f"{digits[0]}.{digits[1:]}"
        body = f"{mantissa}e{'+' if n >= 1 else '-'}{abs(n - 1)}"
    return ("-" if value < 0 else "") + body


def _string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def to_json(value: Any) -> str:
    """Compact JSON, byte for byte as JavaScript's JSON.stringify writes the same value."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return js_number(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{_string(str(k))}:{to_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(to_json(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def _with_extra(record: dict[str, Any], extra: Mapping[str, Any]) -> str:
    for key, value in extra.items():
        record.setdefault(key, value)  # a known field always wins over an extra of its name
    return to_json(record)


def entity_line(entity: Entity) -> str:
    """The entity as one line of the file: type, name, entityType, observations, then its extra fields."""
    record: dict[str, Any] = {
        "type": "entity",
        "name": entity.name,
        "entityType": entity.entity_type,
        "observations": list(entity.observations),
    }
    return _with_extra(record, entity.extra)


def relation_line(relation: Relation) -> str:
    """The relation as one line of the file: type, from, to, relationType, then its extra fields."""
    record: dict[str, Any] = {
        "type": "relation",
        "from": relation.from_name,
        "to": relation.to_name,
        "relationType": relation.type,
    }
    return _with_extra(record, relation.extra)


def server_memory_lines(engine: Engine, *, scopes: Sequence[str] | None = None) -> Iterator[tuple[str, str]]:
    """("entity" or "relation", line) for the graph in `scopes`, from one consistent snapshot:
    every entity in creation order, then every relation between them in creation order (what
    `engine.graph.read()` returns, streamed)."""
    reads = engine.scopes(scopes)
    with engine.store.read() as tx:
        pks = tx.entity_pks(reads)
        members = set(pks)
        for start in range(0, len(pks), CHUNK_LINES):
            chunk = pks[start : start + CHUNK_LINES]
            entities = tx.entities_by_pk(chunk)
            for pk in chunk:
                if pk in entities:
                    yield "entity", entity_line(entities[pk])
        after = 0
        while True:
            relations = tx.relations_matching(reads, after=after, limit=CHUNK_LINES)
            if not relations:
                break
            for relation in relations:
                if relation.src_pk in members and relation.dst_pk in members:
                    yield "relation", relation_line(relation)
            after = relations[-1].pk


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ExportResult(Value):
    entities: int
    relations: int


def export_server_memory(
    engine: Engine, out: IO[str], *, scopes: Sequence[str] | None = None, progress: Progress | None = None
) -> ExportResult:
    """Write the graph to `out` in the upstream format (no newline after the last line)."""
    counts = {"entity": 0, "relation": 0}
    for kind, line in server_memory_lines(engine, scopes=scopes):
        out.write(line if counts["entity"] + counts["relation"] == 0 else "\n" + line)
        counts[kind] += 1
        if progress is not None:
            progress(1)
    return ExportResult(counts["entity"], counts["relation"])


# -- importing ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Fingerprint(Value):
    """What a file was when it was read: its size, modification time and sha256."""

    size: int
    mtime_ns: int
    sha256: str

    def dumps(self) -> str:
        return json.dumps({"size": self.size, "mtime_ns": self.mtime_ns, "sha256": self.sha256})

    @classmethod
    def loads(cls, text: str | None) -> Fingerprint | None:
        if not text:
            return None
        try:
            data = json.loads(text)
            return cls(int(data["size"]), int(data["mtime_ns"]), str(data["sha256"]))
        except (ValueError, KeyError, TypeError):
            return None


def _plural(count: int, word: str) -> str:
    if count == 1:
        return f"1 {word}"
    return f"{count} {word[:-1]}ies" if word.endswith("y") else f"{count} {word}s"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ImportResult(Value):
    """What an import did. `skipped` lists malformed lines and relations without both ends."""

    lines: int = 0
    """Non-blank lines read."""
    entities_created: int = 0
    entities_updated: int = 0
    """Entities that existed before and got observations they lacked."""
    entities_unchanged: int = 0
    entities_merged: int = 0
    """Entity lines repeating a name of an earlier line (merged into that entity)."""
    observations_added: int = 0
    """Observations added to entities that existed (or were created by an earlier line)."""
    relations_created: int = 0
    relations_unchanged: int = 0
    ignored: int = 0
    """Lines of another `type`."""
    skipped: tuple[LineError, ...] = ()
    aborted: bool = False
    """With on_error="abort" and a malformed line: nothing was written."""
    source: Fingerprint | None = None

    @property
    def changed(self) -> bool:
        return bool(self.entities_created or self.observations_added or self.relations_created)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": "server-memory",
            "aborted": self.aborted,
            "lines": self.lines,
            "entities": {
                "created": self.entities_created,
                "updated": self.entities_updated,
                "unchanged": self.entities_unchanged,
                "merged": self.entities_merged,
            },
            "observations_added": self.observations_added,
            "relations": {"created": self.relations_created, "unchanged": self.relations_unchanged},
            "ignored": self.ignored,
            "errors": [{"line": e.line, "reason": e.reason} for e in self.skipped],
        }

    def summary(self) -> str:
        """One line saying what happened."""
        if self.aborted:
            return f"nothing imported: {_plural(len(self.skipped), 'malformed line')}"
        entities, relations = _plural(self.entities_created, "entity"), _plural(self.relations_created, "relation")
        parts = [f"imported {entities} and {relations}"]
        if self.observations_added:
            parts.append(f"added {_plural(self.observations_added, 'observation')} to existing entities")
        present_entities = self.entities_updated + self.entities_unchanged
        if present_entities or self.relations_unchanged:
            present = f"{_plural(present_entities, 'entity')}, {_plural(self.relations_unchanged, 'relation')}"
            parts.append(f"already present: {present}")
        if self.entities_merged:
            parts.append(f"merged {_plural(self.entities_merged, 'repeated entity line')}")
        if self.ignored:
            parts.append(f"ignored {_plural(self.ignored, 'line')} of another type")
        if self.skipped:
            parts.append(f"skipped {_plural(len(self.skipped), 'line')}")
        return "; ".join(parts)


def _quoted(name: str) -> str:
    return json.dumps(name, ensure_ascii=False)


class _Importer:
    """The state of one import: counters, and the names seen so far."""

    def __init__(
        self, engine: Engine, scope: str | None, scopes: Sequence[str] | None, progress: Progress | None
    ) -> None:
        self.engine = engine
        self.target = engine.write_scope if scope is None else engine.scope(scope)
        # Where a name is looked up: what the caller reads, and where it writes.
        self.visible = tuple(dict.fromkeys((*engine.scopes(scopes), self.target)))
        self.progress = progress or (lambda _n: None)
        self.lines = self.ignored = self.merged = 0
        self.entities_created = self.observations_added = 0
        self.relations_created = self.relations_unchanged = 0
        self.skipped: list[LineError] = []
        self.names: set[str] = set()
        self.created: set[str] = set()
        self.existing: dict[str, bool] = {}
        """Entities that were there before this import: name -> whether it added observations."""

    def entities(self, chunk: list[EntityLine]) -> None:
        if not chunk:
            return
        merged: dict[str, NewEntity] = {}
        for item in chunk:
            entity = item.entity
            if entity.name in self.names:
                self.merged += 1
            self.names.add(entity.name)
            first = merged.get(entity.name)
            if first is None:
                merged[entity.name] = entity
            else:
                combined = tuple(dict.fromkeys((*first.observations, *entity.observations)))
                merged[entity.name] = replace(first, observations=combined)
        items = list(merged.values())
        graph = self.engine.graph
        created = {e.name for e in graph.create_entities(items, scope=self.target, scopes=self.visible)}
        self.entities_created += len(created)
        self.created |= created
        rest = [(item.name, item.observations) for item in items if item.name not in created]
        if rest:
            for name, added in graph.add_observations(rest, scopes=self.visible):
                self.observations_added += len(added)
                if name not in self.created:
                    self.existing[name] = self.existing.get(name, False) or bool(added)
        self.progress(len(chunk))

    def relations(self, chunk: list[RelationLine]) -> None:
        if not chunk:
            return
        names = [n for item in chunk for n in (item.relation.from_name, item.relation.to_name)]
        with self.engine.store.read() as tx:
            found = tx.entities_named(self.visible, names)
        ready: list[NewRelation] = []
        for item in chunk:
            relation = item.relation
            label = f"relation from {_quoted(relation.from_name)} to {_quoted(relation.to_name)}"
            missing = [n for n in dict.fromkeys((relation.from_name, relation.to_name)) if n not in found]
            if missing:
                names_missing = " or ".join(_quoted(n) for n in missing)
                self.skipped.append(LineError(item.line, f"{label}: no entity named {names_missing}"))
                continue
            src, dst = found[relation.from_name], found[relation.to_name]
            if crosses_private_scopes(src.scope, dst.scope):
                self.skipped.append(LineError(item.line, f"{label}: the two entities live in different private scopes"))
                continue
            ready.append(relation)
        if ready:
            created = self.engine.graph.create_relations(ready, scope=self.target, scopes=self.visible)
            self.relations_created += len(created)
            self.relations_unchanged += len(ready) - len(created)
        self.progress(len(chunk))

    def result(self, source: Fingerprint | None) -> ImportResult:
        updated = sum(1 for added in self.existing.values() if added)
        return ImportResult(
            lines=self.lines,
            entities_created=self.entities_created,
            entities_updated=updated,
            entities_unchanged=len(self.existing) - updated,
            entities_merged=self.merged,
            observations_added=self.observations_added,
            relations_created=self.relations_created,
            relations_unchanged=self.relations_unchanged,
            ignored=self.ignored,
            skipped=tuple(sorted(self.skipped, key=lambda e: e.line)),
            source=source,
        )


class _Hashing:
    """The lines of a binary file, hashed and measured as they are read."""

    def __init__(self, handle: IO[bytes]) -> None:
        self.handle = handle
        self.digest = hashlib.sha256()
        self.size = 0

    def __iter__(self) -> Iterator[bytes]:
        for raw in self.handle:
            self.digest.update(raw)
            self.size += len(raw)
            yield raw


@contextlib.contextmanager
def _binary(source: str | os.PathLike[str] | IO[bytes]) -> Iterator[IO[bytes]]:
    if isinstance(source, str | os.PathLike):
        with open(source, "rb") as handle:
            yield handle
    else:
        yield source


def malformed_lines(source: str | os.PathLike[str] | IO[bytes]) -> tuple[LineError, ...]:
    """The malformed lines of a server-memory file (a path, or a binary file, read from
    where it is and left at its start), without touching any database."""
    with _binary(source) as handle:
        try:
            return tuple(p for p in read_lines(handle) if isinstance(p, LineError))
        finally:
            handle.seek(0)


def import_server_memory(
    engine: Engine,
    source: str | os.PathLike[str] | IO[bytes],
    *,
    on_error: OnError = "skip",
    scope: str | None = None,
    scopes: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> ImportResult:
    """Import a server-memory JSONL file (a path, or a seekable binary file) into the graph.

    Entities go to `scope` (default: the engine's write scope); names are looked up in
    `scopes` (default: its read scopes) and in `scope`. With on_error="skip" malformed
    lines are skipped; with "abort", a malformed line means nothing is written. Either
    way they are listed in `skipped`. The file is read twice (entities first, so a
    relation may come before the entities it joins); `progress` gets line counts.
    """
    if on_error not in ("skip", "abort"):
        raise InvalidArgument(f"on_error must be skip or abort, not {on_error!r}")
    importer = _Importer(engine, scope, scopes, progress)
    with _binary(source) as handle:
        try:
            mtime_ns = os.fstat(handle.fileno()).st_mtime_ns
        except (OSError, ValueError, AttributeError):
            mtime_ns = 0
        hashing = _Hashing(handle)
        if on_error == "abort":
            count, problems = 0, []
            for parsed_line in read_lines(hashing):
                count += 1
                if isinstance(parsed_line, LineError):
                    problems.append(parsed_line)
            if problems:
                return ImportResult(lines=count, skipped=tuple(problems), aborted=True)
            handle.seek(0)
        chunk: list[EntityLine] = []
        lines: Iterable[bytes] = hashing if on_error == "skip" else handle
        for parsed in read_lines(lines):
            importer.lines += 1
            if isinstance(parsed, EntityLine):
                chunk.append(parsed)
                if len(chunk) >= CHUNK_LINES:
                    importer.entities(chunk)
                    chunk = []
            elif isinstance(parsed, RelationLine):
                continue  # the second pass
            else:
                if isinstance(parsed, LineError):
                    importer.skipped.append(parsed)
                else:
                    importer.ignored += 1
                importer.progress(1)
        importer.entities(chunk)
        source_print = Fingerprint(hashing.size, mtime_ns, hashing.digest.hexdigest())
        handle.seek(0)
        pending: list[RelationLine] = []
        for parsed in read_lines(handle):
            if isinstance(parsed, RelationLine):
                pending.append(parsed)
                if len(pending) >= CHUNK_LINES:
                    importer.relations(pending)
                    pending = []
        importer.relations(pending)
    return importer.result(source_print)


# -- the knowledge-graph profile's MEMORY_FILE_PATH ---------------------------------------------------


class MemoryFileError(Exception):
    """The memory file exists but cannot be read."""


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sync_memory_file(
    engine: Engine, path: str | os.PathLike[str], *, scope: str | None = None, scopes: Sequence[str] | None = None
) -> ImportResult | None:
    """Import the server-memory file at `path` unless it is unchanged since this database last
    imported it (same size and modification time, or same sha256). None when nothing was read.

    The file is only read, never written. Its size, modification time and sha256 are kept
    in the database, one record per file path. MemoryFileError when it cannot be read.
    """
    target = Path(path)
    key = _META_PREFIX + str(target)
    try:
        info = target.stat()
        if not stat.S_ISREG(info.st_mode):
            raise MemoryFileError(f"{target} is not a regular file")
        recorded = Fingerprint.loads(state.get_meta(engine, key))
        if recorded is not None and recorded.size == info.st_size:
            if recorded.mtime_ns == info.st_mtime_ns:
                return None
            if _file_sha256(target) == recorded.sha256:
                state.set_meta(engine, key, replace(recorded, mtime_ns=info.st_mtime_ns).dumps())
                return None
        result = import_server_memory(engine, target, scope=scope, scopes=scopes)
    except OSError as exc:
        raise MemoryFileError(f"cannot read {target}: {exc.strerror or exc}") from None
    assert result.source is not None
    state.set_meta(engine, key, result.source.dumps())
    return result


def prepare_knowledge_graph_store(settings: Settings, engine: Engine) -> bool:
    """Before the knowledge-graph profile serves: bring `settings.memory_file` (the file
    MEMORY_FILE_PATH names, or the one upstream would have used) into the database when it
    exists and changed since the last import. Logs one line. False: the server must not start."""
    path = settings.memory_file
    if path is None:
        return True
    if not os.path.lexists(path):
        log.info("Memory file %s does not exist; nothing to import", path)
        return True
    legacy = " (legacy memory.json: the file is left as it is)" if Path(path).name == "memory.json" else ""
    try:
        result = sync_memory_file(engine, path, scope=settings.write_scope, scopes=settings.read_scopes)
    except (MemoryFileError, EngineError) as exc:
        log.error("Failed to import the memory file %s: %s", path, exc)
        return False
    if result is None:
        log.info("Memory file %s unchanged since its last import; nothing to import", path)
        return True
    text = result.summary()
    if result.skipped:
        text += f" (first: {result.skipped[0]}; `mnemodb import` on the file lists them all)"
    log.info("Memory file %s%s: %s", path, legacy, text)
    return True
