"""The `native` profile: mnemodb's own nine tools, the default.

Designed for a model reading tool descriptions, not copied from anyone: few tools with
distinct verbs, each saying when to use it and when another is the right one; references
that take whatever the model has at hand (an id, a content hash, an entity's name);
results that are previews sized for a context window, paged with opaque cursors and
capped by `max_chars`; and time-aware reads that leave out superseded memories and
closed relations unless asked. Together the tools reach everything the three
compatibility profiles can do (docs/compatibility.md: "Native tools for every upstream tool").
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from mcp_types import CallToolResult, TextContent, ToolAnnotations

from mnemodb.engine import Engine, EngineError
from mnemodb.engine.graph import NewEntity
from mnemodb.engine.items import EntityNote, Found, Item, ItemPage, Neighbourhood, Note, Patch
from mnemodb.model.errors import InvalidArgument
from mnemodb.model.records import SUPERSEDES, Change, Edge, Entity, ItemFilter, Memory, NewMemory
from mnemodb.model.times import iso_utc as iso
from mnemodb.search.analyzer import words
from mnemodb.server.profile import Profile, Prompt, PromptArgument, Resource, TemplateResource, Tool, tool
from mnemodb.server.profiles import native_text
from mnemodb.server.schema import Arr, Bool, Enum, Field, Int, Invalid, Map, Num, Obj, OneOrMany, Scalar, Str, Time

log = logging.getLogger("mnemodb.server")

PREVIEW_CHARS = 240
"""A memory's text, or an observation, longer than this is cut in previews."""
PREVIEW_OBSERVATIONS = 5
"""Observations of an entity shown in a preview."""
DEFAULT_LIMIT = 10
MAX_LIMIT = 100
MAX_BATCH = 100
MIN_MAX_CHARS = 500
MAX_COMPLETIONS = 100
"""The most values one completion answer may hold (the MCP specification's bound)."""


# -- shapes ---------------------------------------------------------------------------------------


def _cut(text: str, full: bool) -> tuple[str, bool]:
    if full or len(text) <= PREVIEW_CHARS:
        return text, False
    return text[: PREVIEW_CHARS - 1].rstrip() + "…", True


def item_shape(item: Item, *, full: bool = False) -> dict[str, Any]:
    """A memory or an entity: defaults left out, long text cut unless `full`."""
    if isinstance(item, Memory):
        text, cut = _cut(item.content, full)
        out: dict[str, Any] = {"kind": "memory", "id": item.id, "text": text}
        if cut:
            out["truncated"] = True
        if item.tags:
            out["tags"] = list(item.tags)
        if item.memory_type != "general":
            out["type"] = item.memory_type
        if item.importance:
            out["importance"] = item.importance
        if full:
            out["hash"] = item.hash
            if item.summary:
                out["summary"] = item.summary
    else:
        out = {"kind": "entity", "id": item.id, "name": item.name}
        if item.entity_type:
            out["type"] = item.entity_type
        observations = list(item.observations) if full else list(item.observations[:PREVIEW_OBSERVATIONS])
        shown = [_cut(o, full)[0] for o in observations]
        if shown:
            out["observations"] = shown
        if len(observations) < len(item.observations):
            out["observation_count"] = len(item.observations)
    if item.scope != "shared":
        out["scope"] = item.scope
    if item.props and full:
        out["props"] = dict(item.props)
    out["created"] = iso(item.created_at)
    if full and item.updated_at != item.created_at:
        out["updated"] = iso(item.updated_at)
    return out


def _label(item: Item) -> str:
    """How a relation's end is shown: an entity by name, a memory by id."""
    return item.name if isinstance(item, Entity) else item.id


def relation_shape(edge: Edge, ends: Mapping[int, Item]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": edge.id,
        "type": edge.type,
        "from": _label(ends[edge.src_pk]) if edge.src_pk in ends else edge.src,
        "to": _label(ends[edge.dst_pk]) if edge.dst_pk in ends else edge.dst,
        "valid_from": iso(edge.valid_from),
    }
    if edge.valid_to is not None:
        out["valid_to"] = iso(edge.valid_to)
    if edge.props:
        out["props"] = dict(edge.props)
    return out


# -- cursors ----------------------------------------------------------------------------------------


def _fingerprint(arguments: Mapping[str, Any]) -> str:
    """What identifies a query across its pages: every argument but the paging ones."""
    fixed = {k: v for k, v in arguments.items() if k not in ("cursor", "limit", "max_chars", "full")}
    return hashlib.sha256(json.dumps(fixed, sort_keys=True, default=str).encode()).hexdigest()[:12]


def make_cursor(arguments: Mapping[str, Any], offset: int) -> str:
    raw = json.dumps({"q": _fingerprint(arguments), "o": offset}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def read_cursor(arguments: Mapping[str, Any]) -> int:
    cursor = arguments.get("cursor")
    if cursor is None:
        return 0
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        offset = data["o"]
        same = data["q"] == _fingerprint(arguments)
        # Only what make_cursor writes: a non-negative integer offset (JSON to Python also
        # means Infinity, 1e999 and integers of any size).
        if type(offset) is not int or not 0 <= offset < 2**40:
            raise ValueError(offset)
    except (ValueError, KeyError, TypeError):
        raise InvalidArgument("cursor is not one this server gave out: repeat the call without it") from None
    if not same:
        raise InvalidArgument("cursor belongs to a different query: pass it with the same arguments, or drop it")
    return offset


def _fit(shapes: list[dict[str, Any]], max_chars: int | None) -> list[dict[str, Any]]:
    """As many leading items as fit in `max_chars` of JSON (always at least one)."""
    if max_chars is None:
        return shapes
    kept: list[dict[str, Any]] = []
    used = 0
    for shape in shapes:
        used += len(json.dumps(shape, ensure_ascii=False, separators=(",", ":"))) + 1
        if kept and used > max_chars:
            break
        kept.append(shape)
    return kept


# -- parameters ------------------------------------------------------------------------------------


def text_field(description: str | None = None) -> Str:
    """A string with something in it besides white space."""
    return Str(min_length=1, pattern=r"\S", pattern_message="must not be blank", description=description)


SCOPES = Arr(
    items=text_field(),
    min_items=1,
    description="Scopes to read (default: the server's)",
)
SCOPE = text_field("Scope to write into (default: the server's)")
REF = text_field("Memory id or hash, entity name or id, or relation id")
TEXT = text_field()
LIMIT = Int(minimum=1, maximum=MAX_LIMIT, description=f"Default {DEFAULT_LIMIT}")
CURSOR = Str(description="next_cursor of the previous page")
MAX_CHARS = Int(
    minimum=MIN_MAX_CHARS,
    description="Cap the page's size in characters (the rest via next_cursor)",
)
PROPS = Map(values=Scalar(), description="Custom properties (scalar values)")
VECTOR = Obj(
    fields={
        "model": text_field(),
        "values": Arr(items=Num(), min_items=1),
    },
    required=("model", "values"),
)


def _params(fields: Mapping[str, Field], *required: str) -> Obj:
    return Obj(fields=dict(fields), required=required, strict=True)


NEW_MEMORY = Obj(
    fields={
        "content": text_field("One self-contained fact, event or note"),
        "tags": Arr(items=TEXT, max_items=50),
        "importance": Int(minimum=0, maximum=10, description="Default 0"),
        "type": text_field("fact, preference, decision, event... (default general)"),
        "summary": Str(),
        "about": Arr(items=TEXT, max_items=20, description="Names of entities it concerns (created if new)"),
        "supersedes": text_field("Id or hash of the older memory it replaces"),
        "props": PROPS,
    },
    required=("content",),
)
NEW_ENTITY = Obj(
    fields={
        "name": text_field(),
        "type": Str(description="person, project, service..."),
        "observations": Arr(items=TEXT, max_items=100, description="Facts about it, one each"),
        "props": PROPS,
    },
    required=("name",),
)
NEW_RELATION = Obj(
    fields={
        "from": REF,
        "to": REF,
        "type": text_field("Active voice: works_at, depends_on..."),
        "valid_from": Time(description="Default now"),
        "props": PROPS,
    },
    required=("from", "to", "type"),
)
CLOSE_RELATION = Obj(
    fields={
        "id": text_field("Or give from, type and to"),
        "from": REF,
        "type": text_field(),
        "to": REF,
        "valid_to": Time(description="Default now"),
    },
)

WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
IDEMPOTENT_WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
UPDATE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
DELETE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


# -- output schemas ----------------------------------------------------------------------------------

_ARRAY = {"type": "array"}
_OBJECT = {"type": "object"}
_INT = {"type": "integer"}


def _output(properties: Mapping[str, Any], *required: str) -> dict[str, Any]:
    """An output schema: the top-level keys and their JSON types (the tool description and
    the results themselves say the rest; a deeper schema would cost every listing tokens)."""
    return {"type": "object", "properties": dict(properties), "required": list(required or properties)}


PAGE_OUTPUT = _output(
    {"items": _ARRAY, "next_cursor": {"type": ["string", "null"]}, "related": _ARRAY, "relations": _ARRAY},
    "items",
    "next_cursor",
)


# -- the tools -----------------------------------------------------------------------------------------


class NativeTools:
    """The handlers: argument dicts (already validated) in, plain JSON values out."""

    # remember -------------------------------------------------------------------------------------

    def remember(self, engine: Engine, a: dict[str, Any]) -> Any:
        memories = a.get("memories", [])
        entities = a.get("entities", [])
        if not memories and not entities:
            raise InvalidArgument("nothing to remember: give `memories`, `entities` or both")
        notes = [
            Note(
                NewMemory(
                    m["content"],
                    tuple(m.get("tags", ())),
                    m.get("importance", 0),
                    m.get("type", "general"),
                    m.get("summary") or None,
                    m.get("props", {}),
                ),
                tuple(m.get("about", ())),
                m.get("supersedes"),
            )
            for m in memories
        ]
        new_entities = [
            EntityNote(
                NewEntity(e["name"], e.get("type", ""), tuple(dict.fromkeys(e.get("observations", ())))),
                e.get("props", {}),
            )
            for e in entities
        ]
        stored, named = engine.items.remember(
            notes,
            new_entities,
            scope=a.get("scope"),
            atomic=a.get("all_or_nothing", True),
            turns=a.get("turns", False),
        )
        out_memories = []
        for r in stored:
            if not isinstance(r.item, Memory):
                out_memories.append({"status": "error", "error": r.error})
                continue
            shape: dict[str, Any] = {"id": r.item.id, "hash": r.item.hash, "status": r.status}
            if r.added:
                shape["tags_added"] = list(r.added)
            if r.linked:
                shape["about"] = list(r.linked)
            if r.created_entities:
                shape["created_entities"] = list(r.created_entities)
            if r.supersedes:
                shape["supersedes"] = r.supersedes
            out_memories.append(shape)
        out_entities = []
        for r in named:
            if not isinstance(r.item, Entity):
                out_entities.append({"status": "error", "error": r.error})
                continue
            shape = {"id": r.item.id, "name": r.item.name, "status": r.status}
            if r.added:
                shape["observations_added"] = list(r.added)
            out_entities.append(shape)
        return {"memories": out_memories, "entities": out_entities}

    # recall -------------------------------------------------------------------------------------

    def recall(self, engine: Engine, a: dict[str, Any]) -> Any:
        offset = read_cursor(a)
        limit = a.get("limit", DEFAULT_LIMIT)
        kinds = a.get("kinds") or ["memory", "entity"]
        where = ItemFilter(
            types=tuple(a.get("types", ())),
            created_from=a.get("since"),
            created_to=a.get("until"),
            props=tuple(sorted(a.get("props", {}).items())),
            tags=tuple(a.get("tags", ())),
            min_importance=a.get("min_importance"),
            current_only=not a.get("include_superseded", False),
        )
        vector = (a["vector"]["model"], a["vector"]["values"]) if "vector" in a else None
        page = engine.items.search(
            a.get("query"),
            where=where,
            kinds=kinds,
            fuzzy=a.get("fuzzy", False),
            vector=vector,
            about=a.get("about", ()),
            pattern=a.get("pattern"),
            within=a.get("within"),
            offset=offset,
            limit=limit,
            expand_hops=a.get("expand", 0),
            explain=a.get("why", False),
            scopes=a.get("scopes"),
        )
        return self._page(engine, a, page, offset)

    @staticmethod
    def _matching_observations(engine: Engine, a: Mapping[str, Any]) -> Callable[[str], bool] | None:
        """Which observations an entity's preview should show first: those the query or the
        pattern matched, so the preview shows why the entity was found."""
        if "pattern" in a:
            return engine.graph.observation_matcher(a["pattern"], time_limit=0.05)
        query = [w for w in words(a.get("query") or "") if len(w) > 2]
        if query:
            return lambda text: any(w.startswith(q) for w in words(text) for q in query)
        return None

    def _page(self, engine: Engine, a: Mapping[str, Any], page: ItemPage, offset: int) -> dict[str, Any]:
        full = a.get("full", False)
        shown_first = self._matching_observations(engine, a)
        shapes = [self._found(f, full, shown_first) for f in page.found]
        kept = _fit(shapes, a.get("max_chars"))
        more = page.more or len(kept) < len(shapes)
        out: dict[str, Any] = {
            "items": kept,
            "next_cursor": make_cursor(a, offset + len(kept)) if more else None,
        }
        if a.get("expand"):
            ends: dict[int, Item] = {f.item.pk: f.item for f in page.found}
            ends.update({i.pk: i for i in page.related})
            out["related"] = [item_shape(i, full=full) for i in page.related]
            out["relations"] = [relation_shape(e, ends) for e in page.edges if e.src_pk in ends and e.dst_pk in ends]
        return out

    @staticmethod
    def _found(found: Found, full: bool, shown_first: Callable[[str], bool] | None = None) -> dict[str, Any]:
        item = found.item
        if isinstance(item, Entity) and shown_first is not None and not full:
            item = replace(item, observations=tuple(sorted(item.observations, key=lambda o: not shown_first(o))))
        shape = item_shape(item, full=full)
        if found.score is not None:
            shape["score"] = found.score
        if found.superseded_by:
            shape["superseded_by"] = list(found.superseded_by)
        if found.why is not None:
            shape["why"] = found.why
        return shape

    # get -------------------------------------------------------------------------------------------

    def get(self, engine: Engine, a: dict[str, Any]) -> Any:
        refs: list[str] = a["refs"]
        scopes = a.get("scopes")
        as_of = a.get("as_of")
        found = engine.items.get(refs, scopes=scopes, as_of=as_of)
        items = [f for f in found if isinstance(f, Memory | Entity)]
        include_closed = a.get("include_closed", False)
        edges, ends = engine.items.edges_of(items, scopes=scopes, include_closed=include_closed, as_of=as_of)
        out = []
        for ref, item in zip(refs, found, strict=True):
            if item is None:
                out.append({"ref": ref, "error": "not found"})
            elif isinstance(item, Edge):
                shape = {"kind": "relation", **relation_shape(item, self._edge_ends(engine, item, scopes))}
                out.append(shape)
            else:
                shape = item_shape(item, full=True)
                mine = [e for e in edges if item.pk in (e.src_pk, e.dst_pk)]
                shape["relations"] = [relation_shape(e, ends) for e in mine]
                if isinstance(item, Memory):
                    newer = [
                        ends[e.src_pk].id
                        for e in mine
                        if e.type == SUPERSEDES and e.dst_pk == item.pk and e.valid_to is None
                    ]
                    if newer:
                        shape["superseded_by"] = newer
                access = engine.nodes.access_stats(item.id, scopes=scopes)
                if access is not None and access[0]:
                    shape["access_count"], last = access
                    shape["last_accessed"] = iso(last)
                out.append(shape)
        return {"items": out}

    @staticmethod
    def _edge_ends(engine: Engine, edge: Edge, scopes: Sequence[str] | None) -> dict[int, Item]:
        ends = engine.items.get([edge.src, edge.dst], scopes=scopes, record_access=False)
        return {i.pk: i for i in ends if isinstance(i, Memory | Entity)}

    # update ------------------------------------------------------------------------------------------

    def update(self, engine: Engine, a: dict[str, Any]) -> Any:
        embedding = a.get("embedding")
        patch = Patch(
            content=a.get("content"),
            summary=a.get("summary"),
            importance=a.get("importance"),
            type=a.get("type"),
            tags=tuple(a["tags"]) if "tags" in a else None,
            add_tags=tuple(a.get("add_tags", ())),
            remove_tags=tuple(a.get("remove_tags", ())),
            name=a.get("name"),
            add_observations=tuple(dict.fromkeys(a.get("add_observations", ()))),
            remove_observations=tuple(dict.fromkeys(a.get("remove_observations", ()))),
            props=a.get("props", {}),
            embedding=(embedding["model"], embedding["values"]) if embedding else None,
        )
        changing = [k for k in a if k not in ("ref", "scopes")]
        if not changing:
            raise InvalidArgument("nothing to change: give at least one field to update")
        before, after = engine.items.revise(a["ref"], patch, scopes=a.get("scopes"))
        changed = sorted(k for k, v in _comparable(after).items() if _comparable(before).get(k) != v)
        if embedding:
            changed.append("embedding")
        return {"item": item_shape(after, full=True), "changed": changed}

    # forget ------------------------------------------------------------------------------------------

    def forget(self, engine: Engine, a: dict[str, Any]) -> Any:
        refs: list[str | tuple[str, str, str]] = list(a.get("refs", []))
        refs += [(r["from"], r["type"], r["to"]) for r in a.get("relations", [])]
        if not refs:
            raise InvalidArgument("nothing to forget: give `refs`, `relations` or both")
        results = []
        for given, found in zip(refs, engine.items.forget(refs, scopes=a.get("scopes")), strict=True):
            ref = given if isinstance(given, str) else "|".join(given)
            if found is None:
                results.append({"ref": ref, "forgotten": False, "reason": "not found"})
            else:
                kind = "relation" if isinstance(found, Edge) else "memory" if isinstance(found, Memory) else "entity"
                results.append({"ref": ref, "forgotten": True, "kind": kind, "id": found.id})
        return {"results": results}

    # relate --------------------------------------------------------------------------------------------

    def relate(self, engine: Engine, a: dict[str, Any]) -> Any:
        add = a.get("add", [])
        close = a.get("close", [])
        if not add and not close:
            raise InvalidArgument("nothing to do: give relations to `add`, to `close`, or both")
        closing: list[tuple[str | tuple[str, str, str], int | None]] = []
        for i, c in enumerate(close):
            named = [k for k in ("from", "type", "to") if k in c]
            if ("id" in c) == bool(named) or (named and len(named) != 3):
                raise InvalidArgument(f"close[{i}]: name the relation by `id`, or by `from`, `type` and `to`")
            closing.append((c["id"] if "id" in c else (c["from"], c["type"], c["to"]), c.get("valid_to")))
        opened, closed = engine.items.relate(
            [(r["from"], r["to"], r["type"], r.get("props", {}), r.get("valid_from")) for r in add],
            closing,
            scope=a.get("scope"),
        )
        edges = [e for e, _ in opened] + closed
        ends = self._ends(engine, edges, a.get("scope"))
        return {
            "added": [{**relation_shape(e, ends), "new": new} for e, new in opened],
            "closed": [relation_shape(e, ends) for e in closed],
        }

    @staticmethod
    def _ends(engine: Engine, edges: Sequence[Edge], write_scope: str | None) -> dict[int, Item]:
        """The items at the ends of relations just written: seen from the read scopes and
        the scope written to, and not counted as reads."""
        ids = list(dict.fromkeys(i for e in edges for i in (e.src, e.dst)))
        scopes = list(dict.fromkeys((*engine.read_scopes, write_scope or engine.write_scope)))
        found = engine.items.get(ids, scopes=scopes, record_access=False) if ids else []
        return {i.pk: i for i in found if isinstance(i, Memory | Entity)}

    # explore --------------------------------------------------------------------------------------------

    def explore(self, engine: Engine, a: dict[str, Any]) -> Any:
        full = a.get("full", False)
        scopes = a.get("scopes")
        limit = a.get("limit", 50)
        if "to" in a:
            if "from" not in a or len(a["from"]) != 1:
                raise InvalidArgument("a path starts from one item: give one `from` with `to`")
            if "as_of" in a or a.get("include_closed") or "cursor" in a:
                raise InvalidArgument("a path follows current relations: as_of, include_closed and cursor do not apply")
            path = engine.items.path(
                a["from"][0], a["to"], max_hops=a.get("hops", 6), types=a.get("types"), scopes=scopes
            )
            if path is None:
                return {"items": [], "relations": [], "path_found": False, "next_cursor": None}
            return self._neighbourhood(path, full) | {"path_found": True, "next_cursor": None}
        offset = read_cursor(a)
        if "from" not in a:
            if "as_of" in a or "direction" in a or "hops" in a:
                raise InvalidArgument("as_of, direction and hops walk from items: give `from` with them")
            listed = engine.items.relations(
                a.get("types"), include_closed=a.get("include_closed", False), limit=offset + limit + 1, scopes=scopes
            )
            # A page of relations, with the items at their ends.
            ends = {i.pk: i for i in listed.items}
            edges = list(listed.edges[offset : offset + limit])
            edges = edges[: len(_fit([relation_shape(e, ends) for e in edges], a.get("max_chars")))]
            on_page = list(dict.fromkeys(pk for e in edges for pk in (e.src_pk, e.dst_pk)))
            more = listed.truncated or len(listed.edges) > offset + len(edges)
            return {
                "items": [item_shape(ends[pk], full=full) for pk in on_page],
                "relations": [relation_shape(e, ends) for e in edges],
                "next_cursor": make_cursor(a, offset + len(edges)) if more else None,
            }
        found = engine.items.explore(
            a["from"],
            hops=a.get("hops", 1),
            direction=a.get("direction", "both"),
            types=a.get("types"),
            as_of=a.get("as_of"),
            include_closed=a.get("include_closed", False),
            include_superseded=a.get("include_superseded", False),
            limit=offset + limit + 1,
            scopes=scopes,
        )
        shapes = _fit([self._reached(i, found, full) for i in found.items[offset : offset + limit]], a.get("max_chars"))
        seen = {i.pk for i in found.items[: offset + len(shapes)]}
        page = {i.pk for i in found.items[offset : offset + len(shapes)]}
        ends = {i.pk: i for i in found.items}
        edges = [e for e in found.edges if {e.src_pk, e.dst_pk} <= seen and {e.src_pk, e.dst_pk} & page]
        more = len(found.items) > offset + len(shapes)
        return {
            "items": shapes,
            "relations": [relation_shape(e, ends) for e in edges],
            "next_cursor": make_cursor(a, offset + len(shapes)) if more else None,
        }

    @staticmethod
    def _reached(item: Item, found: Neighbourhood, full: bool) -> dict[str, Any]:
        return item_shape(item, full=full) | {"hops": found.depth.get(item.id, 0)}

    def _neighbourhood(self, found: Neighbourhood, full: bool) -> dict[str, Any]:
        ends = {i.pk: i for i in found.items}
        return {
            "items": [self._reached(i, found, full) for i in found.items],
            "relations": [relation_shape(e, ends) for e in found.edges],
        }

    # audit -------------------------------------------------------------------------------------------------

    def audit(self, engine: Engine, a: dict[str, Any]) -> Any:
        limit = a.get("limit", 20)
        if "ref" in a:
            if "since" in a:
                raise InvalidArgument("give `since` (the feed) or `ref` (one item's history), not both")
            history = engine.items.history(a["ref"], scopes=a.get("scopes"))
            # The latest entries, oldest first; max_chars drops the oldest of them.
            shapes = [change_shape(c) for c in history[-limit:]]
            kept = list(reversed(_fit(list(reversed(shapes)), a.get("max_chars"))))
            return {"changes": kept, "next_since": None, "earlier": len(history) - len(kept)}
        changes, position = engine.items.changes(a.get("since", 1), limit, scopes=a.get("scopes"))
        shapes = _fit([change_shape(c) for c in changes], a.get("max_chars"))
        if len(shapes) < len(changes):
            position = changes[len(shapes)].seq
        return {"changes": shapes, "next_since": position, "current_seq": engine.current_seq()}

    # survey -----------------------------------------------------------------------------------------------

    def survey(self, engine: Engine, a: dict[str, Any]) -> Any:
        scopes = a.get("scopes")
        stats = engine.stats(scopes=scopes)
        facets = engine.items.facets(top=a.get("top", 10), scopes=scopes)
        out: dict[str, Any] = {
            "memories": stats.memories,
            "tags": stats.tags,
            "entities": stats.entities,
            "observations": stats.observations,
            "relations": stats.edges,
            "embeddings": stats.embeddings,
            "oldest_memory": iso(stats.oldest_memory_at) if stats.oldest_memory_at is not None else None,
            "newest_memory": iso(stats.newest_memory_at) if stats.newest_memory_at is not None else None,
            "current_seq": stats.current_seq,
            "size_bytes": stats.size_bytes,
            "scopes": list(engine.scopes(scopes)),
            "write_scope": engine.write_scope,
        }
        for name, pairs in facets.items():
            out[f"top_{name}"] = [{"name": n, "count": c} for n, c in pairs]
        return out


def _comparable(item: Item) -> dict[str, Any]:
    if isinstance(item, Memory):
        return {
            "content": item.content,
            "summary": item.summary,
            "importance": item.importance,
            "type": item.memory_type,
            "tags": item.tags,
            "props": dict(item.props),
        }
    return {"name": item.name, "type": item.entity_type, "observations": item.observations, "props": dict(item.props)}


def change_shape(change: Change) -> dict[str, Any]:
    data = dict(change.data)
    if "vector" in data or "f32" in data:
        # A vector is thousands of characters of numbers a model cannot use: its size instead.
        from mnemodb.model.ops import embedding_vector

        data = {"id": data.get("id"), "model": data.get("model"), "dim": len(embedding_vector(data))} | (
            {"redacted": True} if data.get("redacted") else {}
        )
    out: dict[str, Any] = {"seq": change.seq, "at": iso(change.at), "op": change.op, "target": change.target}
    if change.scope is not None and change.scope != "shared":
        out["scope"] = change.scope
    out["data"] = data
    return out


# -- the table -------------------------------------------------------------------------------------------


def tools(handlers: NativeTools) -> tuple[Tool, ...]:
    return (
        tool(
            "remember",
            "Remember",
            "Store new knowledge so later conversations can recall it: memories (facts, preferences, "
            "decisions, events; one self-contained fact each) and entities (named people, projects, "
            "services, modules) with observations. Several items in one call, all written or none (unless "
            "all_or_nothing is false: then each item's result says if it failed). "
            "Storing a memory's exact text again only merges its tags; naming an existing entity adds the "
            "new observations. Link memories to entities with `about`. To correct a fact, remember the new "
            "one with `supersedes` = the old memory's id (the old one stops being recalled, history stays). "
            "Not for editing in place (use update) or for relations between items (use relate).",
            _params(
                {
                    "memories": Arr(items=NEW_MEMORY, max_items=MAX_BATCH),
                    "entities": Arr(items=NEW_ENTITY, max_items=MAX_BATCH),
                    "all_or_nothing": Bool(description="Default true; false: each item succeeds or fails alone"),
                    "turns": Bool(
                        description="The memories are consecutive turns of a conversation, oldest first: "
                        "recall also finds each by the words of the two turns before it"
                    ),
                    "scope": SCOPE,
                }
            ),
            handlers.remember,
            WRITE,
            _output({"memories": _ARRAY, "entities": _ARRAY}),
        ),
        tool(
            "recall",
            "Recall",
            "Search memory: memories and entities matching `query`, most relevant first; without a query, "
            "the newest items (a listing). Use at the start of a task and before creating anything. "
            "Narrow with tags, types, min_importance, about (entity names), since/until, props. Words match "
            'by stem; for entities the query also takes "phrases", +required, -excluded and name:/type:/obs: '
            "fields; fuzzy tolerates typos; vector searches by embedding (with an embedder configured, the query "
            "also matches by meaning); why explains each score. Superseded memories are left out "
            "unless include_superseded. Returns previews: read one in full with get; walk its relations with "
            "explore; more results with next_cursor.",
            _params(
                {
                    "query": Str(description="Empty: list the newest items"),
                    "kinds": Arr(items=Enum(values=("memory", "entity")), min_items=1),
                    "tags": Arr(items=TEXT, description="All of these"),
                    "types": Arr(items=TEXT, description="Any of these"),
                    "min_importance": Int(minimum=0, maximum=10),
                    "about": Arr(items=TEXT, description="Memories linked to these entities"),
                    "since": Time(description="ISO 8601 or ms"),
                    "until": Time(description="ISO 8601 or ms, exclusive"),
                    "props": PROPS,
                    "include_superseded": Bool(),
                    "fuzzy": Bool(),
                    "pattern": Str(
                        min_length=1,
                        description="Entities with an observation matching this regex, or a preset: dated, "
                        "techdebt, deprecated, purpose, quirk",
                    ),
                    "vector": VECTOR,
                    "within": Arr(items=REF, max_items=1000, description="Only these items"),
                    "expand": Int(minimum=0, maximum=3, description="Relations away to include"),
                    "full": Bool(description="Whole texts, not previews"),
                    "why": Bool(description="Explain each score: every ranking's rank, weight and signals"),
                    "limit": LIMIT,
                    "cursor": CURSOR,
                    "max_chars": MAX_CHARS,
                    "scopes": SCOPES,
                }
            ),
            handlers.recall,
            READ,
            PAGE_OUTPUT,
        ),
        tool(
            "get",
            "Get",
            "Read items in full by reference: a memory's id or content hash, an entity's exact name or id, a "
            "relation's id. Returns the whole text, every observation, tags, properties, access counts and "
            "the item's current relations (past ones too with include_closed; as_of: as it all was then). "
            "Use after recall or explore to read a preview in full; to find items by words, use recall.",
            _params(
                {
                    "refs": OneOrMany(items=REF, max_items=MAX_LIMIT),
                    "include_closed": Bool(),
                    "as_of": Time(description="As it was then (ISO 8601 or ms)"),
                    "scopes": SCOPES,
                },
                "refs",
            ),
            handlers.get,
            READ,
            _output({"items": _ARRAY}),
        ),
        tool(
            "update",
            "Update",
            "Change one memory or entity in place; its id and relations stay. A memory: content, summary, "
            "importance, type, tags (replace all) or add_tags/remove_tags. An entity: name (rename), type, "
            "add_observations/remove_observations (exact text). Both: props (null removes one) and embedding. "
            "To record that a fact changed over time, prefer remember with supersedes, which keeps the old "
            "fact as history; to end a relation, use relate.",
            _params(
                {
                    "ref": REF,
                    "content": text_field(),
                    "summary": Str(),
                    "importance": Int(minimum=0, maximum=10),
                    "type": text_field(),
                    "tags": Arr(items=TEXT, description="Replace all"),
                    "add_tags": Arr(items=TEXT),
                    "remove_tags": Arr(items=TEXT),
                    "name": text_field("Rename an entity"),
                    "add_observations": Arr(items=TEXT),
                    "remove_observations": Arr(items=TEXT, description="Exact texts"),
                    "props": Map(values=Scalar(nullable=True), description="null removes one"),
                    "embedding": VECTOR,
                    "scopes": SCOPES,
                },
                "ref",
            ),
            handlers.update,
            UPDATE,
            _output({"item": _OBJECT, "changed": _ARRAY}),
        ),
        tool(
            "forget",
            "Forget",
            "Delete memories, entities (with all their relations) or relations, by reference (relations "
            "also by from, type and to). Permanent: a forgotten item's text leaves the change log too. "
            "To mark a fact as no longer true but keep its history, remember its replacement with "
            "supersedes, or close the relation with relate; to drop one observation, use update.",
            _params(
                {
                    "refs": OneOrMany(items=REF, max_items=MAX_BATCH),
                    "relations": Arr(
                        items=Obj(fields={"from": REF, "type": TEXT, "to": REF}, required=("from", "type", "to")),
                        max_items=MAX_BATCH,
                        description="Open relations to delete, named by their ends",
                    ),
                    "scopes": SCOPES,
                }
            ),
            handlers.forget,
            DELETE,
            _output({"results": _ARRAY}),
        ),
        tool(
            "relate",
            "Relate",
            "Add or close typed, directed relations between items (entities by name, memories by id or "
            "hash), all in one call. A relation holds from valid_from (default now); closing it sets "
            "valid_to, so it stops showing in explore but stays in history (explore as_of still sees it). "
            "Adding a relation that is already open returns it unchanged. To change a relation's type, close "
            "the old one and add the new one in the same call. Delete a wrong relation with forget.",
            _params(
                {
                    "add": Arr(items=NEW_RELATION, max_items=MAX_BATCH),
                    "close": Arr(items=CLOSE_RELATION, max_items=MAX_BATCH),
                    "scope": SCOPE,
                }
            ),
            handlers.relate,
            IDEMPOTENT_WRITE,
            _output({"added": _ARRAY, "closed": _ARRAY}),
        ),
        tool(
            "explore",
            "Explore",
            "Walk the graph from items: their neighbours (hops 1), a neighbourhood (more hops), or with "
            "`to`, the shortest chain of relations between two items; without `from`, every relation (of "
            "`types`, if given), newest first. Follows relations valid now (as_of: valid then; "
            "include_closed: ended ones too) and leaves out superseded memories (include_superseded). "
            "Filter by relation types and direction. Returns previews; use get for full items.",
            _params(
                {
                    "from": OneOrMany(items=REF, max_items=20),
                    "to": REF,
                    "hops": Int(
                        minimum=1, maximum=10, description="Default 1; with `to`, the longest path (default 6)"
                    ),
                    "direction": Enum(values=("out", "in", "both")),
                    "types": Arr(items=TEXT, description="Relation types"),
                    "as_of": Time(description="ISO 8601 or ms"),
                    "include_closed": Bool(),
                    "include_superseded": Bool(),
                    "full": Bool(),
                    "limit": Int(minimum=1, maximum=200, description="Default 50"),
                    "cursor": CURSOR,
                    "max_chars": MAX_CHARS,
                    "scopes": SCOPES,
                },
            ),
            handlers.explore,
            READ,
            _output(
                {
                    "items": _ARRAY,
                    "relations": _ARRAY,
                    "next_cursor": {"type": ["string", "null"]},
                    "path_found": {"type": "boolean"},
                },
                "items",
                "relations",
                "next_cursor",
            ),
        ),
        tool(
            "audit",
            "Audit",
            "Audit what changed, oldest first: the change log from `since` (a sequence number; poll with "
            "the previous call's next_since), or one item's whole history (`ref`). Only changes in scopes "
            "you may read. For the current state of items, use recall or get.",
            _params(
                {
                    "since": Int(minimum=0, description="Default 1"),
                    "ref": REF,
                    "limit": Int(minimum=1, maximum=500, description="Default 20"),
                    "max_chars": MAX_CHARS,
                    "scopes": SCOPES,
                }
            ),
            handlers.audit,
            READ,
            _output(
                {"changes": _ARRAY, "next_since": {"type": ["integer", "null"]}, "current_seq": _INT},
                "changes",
                "next_since",
            ),
        ),
        tool(
            "survey",
            "Survey",
            "Survey the memory you can read: counts of memories, entities, observations, relations and "
            "embeddings, the oldest and newest memory, the most used tags and types, the change log's "
            "position and the database size. Cheap; use it to get your bearings in an unfamiliar memory.",
            _params(
                {
                    "top": Int(minimum=1, maximum=100, description="Default 10"),
                    "scopes": SCOPES,
                }
            ),
            handlers.survey,
            READ,
            _output({"memories": _INT, "entities": _INT, "relations": _INT}),
        ),
    )


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _read_item(kind: type[Memory] | type[Entity]) -> Callable[[Engine, str], str | None]:
    """A resource reader for one kind of item: the memory template never answers with an
    entity, nor the entity template with a memory."""

    def read(engine: Engine, ref: str) -> str | None:
        found = engine.items.get([ref])[0]
        return _item_json(engine, found) if isinstance(found, kind) else None

    return read


def _item_json(engine: Engine, found: Item) -> str:
    edges, ends = engine.items.edges_of([found])
    return _json(item_shape(found, full=True) | {"relations": [relation_shape(e, ends) for e in edges]})


class NativeProfile(Profile):
    name = "native"
    server_name = "mnemodb"
    instructions = native_text.INSTRUCTIONS

    def __init__(self) -> None:
        self.handlers = NativeTools()
        self.tools = tools(self.handlers)
        self.templates = (
            TemplateResource(
                uri_template="mnemodb://memory/{ref}",
                name="memory",
                title="A memory",
                description="One memory in full, by id or content hash, with its relations",
                read=_read_item(Memory),
            ),
            TemplateResource(
                uri_template="mnemodb://entity/{name}",
                name="entity",
                title="An entity",
                description="One entity in full, by exact name or id, with its observations and relations",
                read=_read_item(Entity),
                complete=lambda engine, typed: engine.graph.names_starting(typed, limit=MAX_COMPLETIONS),
            ),
        )
        self.resources = (
            Resource(
                uri="mnemodb://stats",
                name="stats",
                title="Memory statistics",
                description="Counts, most used tags and types, and the change log's position",
                mime_type="application/json",
                read=lambda engine: _json(self.handlers.survey(engine, {})),
            ),
        )
        self.prompts = (
            Prompt(
                name="personal-assistant",
                title="Personal assistant memory",
                description="How to remember a person across conversations: who they are, what they like, "
                "their goals and relationships, kept current as they change",
                render=native_text.personal_assistant,
                arguments=(PromptArgument("user_name", "The user's name, if known"),),
            ),
            Prompt(
                name="codebase-graph",
                title="Codebase knowledge graph",
                description="How to build and maintain a knowledge graph of a codebase: modules, services, "
                "dependencies, decisions, quirks and tech debt",
                render=native_text.codebase_graph,
                arguments=(PromptArgument("project", "The project's name"),),
            ),
        )

    def success(self, tool: Tool, value: Any) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=_json(value))], structured_content=value)

    @staticmethod
    def _error(text: str) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)

    def failure(self, tool: Tool, error: Exception) -> CallToolResult:
        if isinstance(error, EngineError):
            return self._error(f"{tool.name}: {error}")
        log.exception("tool %s failed unexpectedly", tool.name, exc_info=error)
        return self._error(f"{tool.name}: internal error ({type(error).__name__}); nothing was changed")

    def invalid(self, tool: Tool, error: Invalid) -> CallToolResult:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in issue['path']) or 'arguments'}: {issue['message']}" for issue in error.issues
        )
        return self._error(f"{tool.name}: invalid arguments: {problems}. The tool's input schema lists every field.")

    def timeout(self, tool: Tool, timeout_ms: int) -> CallToolResult:
        return self._error(
            f"{tool.name}: timed out after {timeout_ms} ms and nothing was changed; narrow the call and retry"
        )

    def unknown_tool(self, name: str) -> CallToolResult:
        names = ", ".join(t.name for t in self.tools)
        return self._error(f"unknown tool {name!r}; this server's tools are {names}")


def build() -> NativeProfile:
    return NativeProfile()


__all__ = ["NativeProfile", "build", "item_shape"]
