"""The inspector's pages: what each shows, and the changes each lets a person make.

Each handler reads or changes through the engine's faces (the same calls the native tools
make), on a worker thread, under the request's grant: what a token may not read is not
shown, and a change it may not make is refused by the engine, not here.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from mnemodb.engine.items import Found, Item, Note, Patch
from mnemodb.model.errors import (
    EngineError,
    InvalidArgument,
    NotFound,
    StoreUnavailable,
)
from mnemodb.model.history import steps
from mnemodb.model.ops import ALL_OPS
from mnemodb.model.records import SUPERSEDES, Change, Edge, ItemFilter, Memory, NewMemory
from mnemodb.model.times import iso_utc
from mnemodb.model.value import Value
from mnemodb.server.inspector.web import (
    BASE,
    Page,
    call,
    engine_of,
    form_text,
    is_htmx,
    query_int,
    query_time,
    readable_scopes,
    status_of,
)

if TYPE_CHECKING:
    from mnemodb.engine import Engine

__all__ = ["routes"]

log = logging.getLogger("mnemodb.inspector")

PAGE_SIZE = 25
# The change log's live rows add at most this many entries at a time.
MAX_LIVE = 200
# A bulk action names at most this many items: one transaction, one confirmation.
MAX_BULK = 500


# -- errors: a refusal is a message on the page, never a traceback ---------------------------------


async def engine_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, EngineError)
    if isinstance(exc, StoreUnavailable):
        log.warning("inspector: the database is unavailable: %s", exc)
        page = Page(request, "_error.html" if is_htmx(request) else "message.html", status=503)
        response = page.render(
            title="The database is unavailable", text="The database cannot be reached right now. Retry shortly."
        )
        response.headers["Retry-After"] = "1"
        return response
    status = status_of(exc)
    if status == 500:
        log.error("inspector: %s", exc)
    template = "_error.html" if is_htmx(request) else "message.html"
    title = {400: "Not accepted", 403: "Not allowed", 404: "Not found", 409: "Conflict", 504: "Timed out"}
    return Page(request, template, status=status).render(title=title.get(status, "Error"), text=str(exc))


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    template = "_error.html" if is_htmx(request) else "message.html"
    return Page(request, template, status=exc.status_code).render(title="Error", text=exc.detail)


# -- scopes the page offers -------------------------------------------------------------------------


def _chosen_scopes(request: Request, engine: Engine) -> tuple[str | None, list[str]]:
    """(the scope picked, the scopes to read): one picked scope, or every readable one."""
    picked = request.query_params.get("scope", "").strip() or None
    if picked is not None:
        return picked, [picked]
    return None, readable_scopes(engine)


# -- memories -----------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False, repr=False)
class MemoryQuery(Value):
    text: str | None
    scope: str | None
    scopes: list[str]
    where: ItemFilter
    offset: int

    def page_url(self, request: Request, offset: int) -> str:
        params = {k: v for k, v in request.query_params.items() if k != "offset" and v}
        if offset:
            params["offset"] = str(offset)
        return f"{BASE}/memories?{urlencode(params)}"


def _memory_query(request: Request, engine: Engine) -> MemoryQuery:
    scope, scopes = _chosen_scopes(request, engine)
    text = request.query_params.get("q", "").strip() or None
    kind = request.query_params.get("type", "").strip()
    tag = request.query_params.get("tag", "").strip()
    low = query_int(request, "min", None, low=-1_000_000, high=1_000_000)
    high = query_int(request, "max", None, low=-1_000_000, high=1_000_000)
    if low is not None and high is not None and low > high:
        raise InvalidArgument(f"the importance range is empty: min {low} is above max {high}")
    start = query_time(request, "from")
    end = query_time(request, "to", end_of_day=True)
    archived = request.query_params.get("archived", "").strip()
    if archived not in ("", "show"):
        raise InvalidArgument(f"archived must be empty (leave them out) or show, not {archived!r}")
    where = ItemFilter(
        types=(kind,) if kind else (),
        created_from=start,
        created_to=None if end is None else end + 1,
        tags=(tag,) if tag else (),
        min_importance=low,
        max_importance=high,
        include_archived=archived == "show",
    )
    offset = query_int(request, "offset", 0, low=0, high=100_000) or 0
    return MemoryQuery(text, scope, scopes, where, offset)


def _search_memories(engine: Engine, query: MemoryQuery) -> tuple[list[Found], bool]:
    """One page of memories: ranked as `recall` ranks them when there is text, else newest
    first."""
    page = engine.items.search(
        query.text, where=query.where, kinds=("memory",), offset=query.offset, limit=PAGE_SIZE, scopes=query.scopes
    )
    return list(page.found), page.more


async def memories(request: Request) -> Response:
    engine = engine_of(request)
    query = _memory_query(request, engine)
    found, more = await call(_search_memories, engine, query)
    values: dict[str, Any] = {
        "found": found,
        "more": more,
        "q": query,
        "next_url": query.page_url(request, query.offset + PAGE_SIZE) if more else None,
        "previous_url": query.page_url(request, max(0, query.offset - PAGE_SIZE)) if query.offset else None,
    }
    if is_htmx(request):
        return Page(request, "_memory_results.html").render(**values)
    scopes = await call(readable_scopes, engine)
    return Page(request, "memories.html").render(scopes=scopes, **values)


async def bulk(request: Request) -> Response:
    """Forget, archive or restore the memories ticked on the list, in one transaction."""
    engine = engine_of(request)
    form = await request.form()
    action = form_text(form, "action", required=True)
    refs = [str(v) for v in form.getlist("ref") if isinstance(v, str) and v.strip()]
    if not refs:
        raise InvalidArgument("tick at least one memory first")
    if len(refs) > MAX_BULK:
        raise InvalidArgument(f"at most {MAX_BULK} memories at a time, not {len(refs)}")
    if action == "forget":
        done = await call(engine.items.forget, refs, scopes=readable_scopes(engine))
        count = sum(1 for d in done if d is not None)
        message = f"Forgot {count} memor{'y' if count == 1 else 'ies'}."
    elif action in ("archive", "unarchive"):
        change = engine.items.archive_many if action == "archive" else engine.items.unarchive_many
        changed = await call(change, refs, scopes=readable_scopes(engine))
        verb = "Archived" if action == "archive" else "Restored"
        message = f"{verb} {len(changed)} memor{'y' if len(changed) == 1 else 'ies'}."
    else:
        raise InvalidArgument(f"unknown action {action!r}")
    back = form_text(form, "back") or f"{BASE}/memories"
    return _back(request, _local(back), message)


def _local(url: str) -> str:
    return url if url.startswith(BASE + "/") and not url.startswith("//") and "\\" not in url else f"{BASE}/"


def _back(request: Request, url: str, message: str | None = None) -> Response:
    """After a change: htmx follows HX-Location (a plain form, a 303), to the page to show next."""
    if message:
        url += ("&" if "?" in url else "?") + urlencode({"done": message})
    if request.headers.get("hx-request") == "true":
        return Response(status_code=204, headers={"HX-Location": url})
    return RedirectResponse(url, status_code=303)


# -- one item -----------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False, repr=False)
class FieldChange(Value):
    name: str
    before: Any
    after: Any
    diff: list[tuple[str, str]] | None = None
    """For text: (kind, words) runs, kind one of equal, removed, added."""


@dataclass(frozen=True, eq=False, repr=False)
class HistoryEntry(Value):
    change: Change
    changes: list[FieldChange]


def _shown(value: Any) -> Any:
    """A field's value as a person reads it: a list as its items, a time as ISO UTC."""
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return value


def _flat(past: Any) -> dict[str, Any]:
    if past is None:
        return {}
    out: dict[str, Any] = {}
    for part in (past.memory or {}, past.entity or {}):
        out.update({k: _shown(v) for k, v in part.items()})
    out.update({f"props.{k}": _shown(v) for k, v in (past.props or {}).items()})
    if isinstance(out.get("archived_at"), int):
        out["archived_at"] = iso_utc(out["archived_at"])
    return out


def _word_diff(before: str, after: str) -> list[tuple[str, str]]:
    a, b = before.split(" "), after.split(" ")
    runs: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            runs.append(("equal", " ".join(a[i1:i2])))
        else:
            if i2 > i1:
                runs.append(("removed", " ".join(a[i1:i2])))
            if j2 > j1:
                runs.append(("added", " ".join(b[j1:j2])))
    return runs


def history_entries(changes: Sequence[Change]) -> list[HistoryEntry]:
    """Each change to one item with what it changed, field by field (text as a word diff):
    the item replayed up to each entry, compared with the one before."""
    out: list[HistoryEntry] = []
    previous: dict[str, Any] = {}
    for change, past in steps(changes):
        state = _flat(past)
        fields: list[FieldChange] = []
        for name in sorted(set(previous) | set(state)):
            before, after = previous.get(name), state.get(name)
            if before == after:
                continue
            diff = _word_diff(before, after) if isinstance(before, str) and isinstance(after, str) else None
            fields.append(FieldChange(name, before, after, diff))
        out.append(HistoryEntry(change, fields))
        previous = state
    return out


@dataclass(frozen=True, eq=False, repr=False)
class Link(Value):
    edge: Edge
    outgoing: bool
    other: Item | None


def _links(item: Item, edges: Sequence[Edge], ends: Mapping[int, Item]) -> list[Link]:
    out = [Link(e, e.src_pk == item.pk, ends.get(e.dst_pk if e.src_pk == item.pk else e.src_pk)) for e in edges]
    out.sort(key=lambda link: (link.edge.valid_to is not None, -link.edge.valid_from))
    return out


def _item_view(engine: Engine, ref: str) -> dict[str, Any]:
    scopes = readable_scopes(engine)
    found = engine.items.get([ref], scopes=scopes, record_access=False)[0]
    if found is None:
        raise NotFound(f"nothing readable is named {ref!r}")
    if isinstance(found, Edge):
        return {"edge": found}
    history = engine.items.history(found.id, scopes=scopes)
    edges, ends = engine.items.edges_of([found], scopes=scopes, include_closed=True)
    links = _links(found, edges, ends)
    current = [link for link in links if link.edge.valid_to is None]
    return {
        "item": found,
        "is_memory": isinstance(found, Memory),
        "history": list(reversed(history_entries(history))),
        "links": links,
        "supersedes": [lk for lk in current if lk.edge.type == SUPERSEDES and lk.outgoing],
        "superseded_by": [lk for lk in current if lk.edge.type == SUPERSEDES and not lk.outgoing],
        "writable": _writable(found.scope),
    }


def _writable(scope: str) -> bool:
    from mnemodb.engine.tokens import current_grant

    grant = current_grant()
    return grant is None or scope in grant.write_scopes


async def item(request: Request) -> Response:
    engine = engine_of(request)
    view = await call(_item_view, engine, request.path_params["ref"])
    if "edge" in view:
        raise HTTPException(404, "relations have no page of their own: open one of their ends")
    return Page(request, "item.html").render(**view)


def _tags(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    return tuple(dict.fromkeys(t.strip() for t in text.replace("\n", ",").split(",") if t.strip()))


def _int_field(form: Mapping[str, Any], name: str) -> int | None:
    raw = form_text(form, name)
    if raw is None or not raw.strip():
        return None
    try:
        return int(raw.strip())
    except ValueError:
        raise InvalidArgument(f"{name} must be a whole number, not {raw!r}") from None


async def edit(request: Request) -> Response:
    """Change a memory's text, tags, importance, type or summary, or an entity's name and type."""
    engine = engine_of(request)
    ref = request.path_params["ref"]
    form = await request.form()
    current = (await call(engine.items.get, [ref], scopes=readable_scopes(engine), record_access=False))[0]
    if current is None or isinstance(current, Edge):
        raise NotFound(f"nothing readable is named {ref!r}")
    if isinstance(current, Memory):
        content = form_text(form, "content")
        patch = Patch(
            content=content.replace("\r\n", "\n") if content is not None and content != current.content else None,
            summary=form_text(form, "summary"),
            importance=_int_field(form, "importance"),
            memory_type=(form_text(form, "type") or "").strip() or None,
            tags=_tags(form_text(form, "tags")),
        )
    else:
        name = (form_text(form, "name") or "").strip()
        patch = Patch(
            name=name if name and name != current.name else None,
            entity_type=form_text(form, "type"),
        )
    _, after = await call(engine.items.revise, current.id, patch, scopes=readable_scopes(engine))
    return _back(request, f"{BASE}/item/{after.id}", "Saved.")


async def supersede(request: Request) -> Response:
    """A new memory that replaces this one: the old one stays, marked as superseded."""
    engine = engine_of(request)
    ref = request.path_params["ref"]
    form = await request.form()
    content = (form_text(form, "content", required=True) or "").replace("\r\n", "\n")
    current = (await call(engine.items.get, [ref], scopes=readable_scopes(engine), record_access=False))[0]
    if not isinstance(current, Memory):
        raise NotFound(f"no readable memory is named {ref!r}")
    note = Note(
        NewMemory(content, current.tags, current.importance, current.memory_type),
        supersedes=current.id,
    )
    outcomes, _ = await call(engine.items.remember, [note], scope=current.scope, scopes=readable_scopes(engine))
    new = outcomes[0].item
    assert new is not None
    return _back(request, f"{BASE}/item/{new.id}", "Superseded: this memory replaces the old one.")


async def archive(request: Request) -> Response:
    """Archive a memory (recall leaves it out; it stays, and can be restored), or restore it."""
    engine = engine_of(request)
    ref = request.path_params["ref"]
    restore = request.url.path.endswith("/unarchive")
    change = engine.items.unarchive if restore else engine.items.archive
    memory = await call(change, ref, scopes=readable_scopes(engine))
    return _back(request, f"{BASE}/item/{memory.id}", "Restored from the archive." if restore else "Archived.")


async def forget(request: Request) -> Response:
    engine = engine_of(request)
    ref = request.path_params["ref"]
    done = await call(engine.items.forget, [ref], scopes=readable_scopes(engine))
    if done[0] is None:
        raise NotFound(f"nothing readable is named {ref!r}")
    return _back(request, f"{BASE}/memories", "Forgotten.")


async def observation(request: Request) -> Response:
    """Add, edit or remove one observation of an entity."""
    engine = engine_of(request)
    ref = request.path_params["ref"]
    form = await request.form()
    action = form_text(form, "action", required=True)
    old = form_text(form, "old")
    new = (form_text(form, "new") or "").strip()
    if action == "add":
        patch = Patch(add_observations=(new,))
    elif action == "remove" and old is not None:
        patch = Patch(remove_observations=(old,))
    elif action == "edit" and old is not None:
        patch = Patch(add_observations=(new,), remove_observations=(old,)) if new != old else Patch()
    else:
        raise InvalidArgument(f"unknown observation action {action!r}")
    if action != "remove" and not new:
        raise InvalidArgument("an observation must not be empty")
    _, after = await call(engine.items.revise, ref, patch, scopes=readable_scopes(engine))
    return _back(request, f"{BASE}/item/{after.id}", "Saved.")


async def open_relation(request: Request) -> Response:
    engine = engine_of(request)
    ref = request.path_params["ref"]
    form = await request.form()
    kind = (form_text(form, "type", required=True) or "").strip()
    other = (form_text(form, "other", required=True) or "").strip()
    direction = form_text(form, "direction") or "out"
    if not kind or not other:
        raise InvalidArgument("a relation needs a type and the item at its other end")
    scopes = readable_scopes(engine)
    current = (await call(engine.items.get, [ref], scopes=scopes, record_access=False))[0]
    if current is None or isinstance(current, Edge):
        raise NotFound(f"nothing readable is named {ref!r}")
    src, dst = (current.id, other) if direction == "out" else (other, current.id)
    await call(engine.items.relate, [(src, dst, kind, {}, None)], scope=current.scope, scopes=scopes)
    return _back(request, f"{BASE}/item/{current.id}", "Relation opened.")


async def close_relation(request: Request) -> Response:
    engine = engine_of(request)
    ref = request.path_params["ref"]
    form = await request.form()
    edge_id = (form_text(form, "edge", required=True) or "").strip()
    await call(engine.items.relate, (), [(edge_id, None)], scopes=readable_scopes(engine))
    return _back(request, f"{BASE}/item/{ref}", "Relation closed.")


# -- entities -------------------------------------------------------------------------------------------


async def entities(request: Request) -> Response:
    engine = engine_of(request)
    scope, scopes = _chosen_scopes(request, engine)
    text = request.query_params.get("q", "").strip() or None
    offset = query_int(request, "offset", 0, low=0, high=100_000) or 0
    page = await call(
        engine.items.search, text, kinds=("entity",), offset=offset, limit=PAGE_SIZE, scopes=scopes, semantic=False
    )
    params = {k: v for k, v in request.query_params.items() if k != "offset" and v}
    values = {
        "found": page.found,
        "scope": scope,
        "text": text or "",
        "next_url": f"{BASE}/entities?{urlencode({**params, 'offset': offset + PAGE_SIZE})}" if page.more else None,
        "previous_url": f"{BASE}/entities?{urlencode({**params, 'offset': max(0, offset - PAGE_SIZE)})}"
        if offset
        else None,
    }
    if is_htmx(request):
        return Page(request, "_entity_results.html").render(**values)
    return Page(request, "entities.html").render(scopes=await call(readable_scopes, engine), **values)


# -- the change log -----------------------------------------------------------------------------------------


async def changes(request: Request) -> Response:
    """The change log, newest first, filtered; `after` asks only for what came since (the
    page's live rows), `before` for the next page down."""
    engine = engine_of(request)
    scope, scopes = _chosen_scopes(request, engine)
    op = request.query_params.get("op", "").strip() or None
    target = request.query_params.get("item", "").strip() or None
    token = request.query_params.get("token", "").strip() or None
    start = query_time(request, "from")
    end = query_time(request, "to", end_of_day=True)
    after = query_int(request, "after", None, low=0, high=2**62)
    before = query_int(request, "before", None, low=1, high=2**62)
    filters = {
        "ops": (op,) if op else (),
        "target": target,
        "actors": (token,) if token else (),
        "at_from": start,
        "at_to": None if end is None else end + 1,
        "scopes": scopes,
    }
    page = await call(engine.change_log.page, before_seq=before, limit=PAGE_SIZE, **filters)
    entries = list(page.changes)
    if after is not None:
        # The live rows: every entry since `after`, however many came (up to a few pages).
        while page.next_before is not None and entries and entries[-1].seq > after and len(entries) < MAX_LIVE:
            page = await call(engine.change_log.page, before_seq=page.next_before, limit=PAGE_SIZE, **filters)
            entries += page.changes
        entries = [c for c in entries if c.seq > after]
    values: dict[str, Any] = {
        "entries": entries,
        "labels": await call(_change_labels, engine, entries, scopes),
        "last_seq": max((c.seq for c in entries), default=after or 0),
        "scope": scope,
        "older_url": None,
    }
    if page.next_before is not None and after is None:
        params = {k: v for k, v in request.query_params.items() if k not in ("before", "after") and v}
        values["older_url"] = f"{BASE}/changes?{urlencode({**params, 'before': page.next_before})}"
    if is_htmx(request):
        return Page(request, "_change_rows.html").render(**values)
    if after is None and not entries:
        values["last_seq"] = await call(engine.current_seq)
    return Page(request, "changes.html").render(
        scopes=await call(readable_scopes, engine), ops=sorted(ALL_OPS), **values
    )


def _change_labels(engine: Engine, entries: Sequence[Change], scopes: list[str]) -> dict[str, tuple[str, bool]]:
    """What each entry is about, as a person reads it, and whether it is still there: a
    memory's text, an entity's name, a relation's ends; for an item gone since, what its
    creation entry said (nothing, once forgetting redacted it)."""
    targets = list(dict.fromkeys(c.target for c in entries if c.target))
    found = engine.items.get(targets, scopes=scopes, record_access=False) if targets else []
    labels: dict[str, tuple[str, bool]] = {}
    for target, item in zip(targets, found, strict=True):
        if isinstance(item, Memory):
            labels[target] = item.content, True
        elif isinstance(item, Edge):
            labels[target] = f"{item.src} {item.type} {item.dst}", True
        elif item is not None:
            labels[target] = item.name, True
    for change in entries:
        if change.target and change.target not in labels:
            memory, entity = change.data.get("memory"), change.data.get("entity")
            said = ""
            if isinstance(memory, Mapping) and isinstance(memory.get("content"), str):
                said = memory["content"]
            elif isinstance(entity, Mapping) and isinstance(entity.get("name"), str):
                said = entity["name"]
            labels[change.target] = said or change.target, False
    return labels


# -- overview -----------------------------------------------------------------------------------------------


def _overview(engine: Engine) -> dict[str, Any]:
    scopes = readable_scopes(engine)
    stats = engine.stats(scopes=scopes)
    per_scope = engine.memories_per_scope()
    embeddings = engine.embeddings
    coverage = embeddings.coverage() if embeddings.model is not None else None
    growth = engine.statistics.growth(spans=30, scopes=scopes)
    tallest = max((n for _, n in growth), default=0)
    from mnemodb.engine.tokens import current_grant

    return {
        "stats": stats,
        # The log's position counts every scope's changes: the operator's figure only.
        "operator": current_grant() is None,
        "growth": growth,
        "growth_step": growth[1][0] - growth[0][0] if len(growth) > 1 else 86_400_000,
        "tallest": tallest,
        "largest": engine.statistics.largest_entities(limit=10, scopes=scopes),
        "per_scope": [(s, per_scope.get(s, 0)) for s in scopes],
        "facets": engine.items.facets(top=15, scopes=scopes),
        "embedder": embeddings.model,
        "coverage": coverage,
    }


async def overview(request: Request) -> Response:
    view = await call(_overview, engine_of(request))
    return Page(request, "overview.html").render(**view)


def routes() -> list[BaseRoute]:
    return [
        Route("/", overview, methods=["GET"]),
        Route("/memories", memories, methods=["GET"]),
        Route("/memories/bulk", bulk, methods=["POST"]),
        Route("/entities", entities, methods=["GET"]),
        Route("/changes", changes, methods=["GET"]),
        Route("/item/{ref}", item, methods=["GET"]),
        Route("/item/{ref}/edit", edit, methods=["POST"]),
        Route("/item/{ref}/supersede", supersede, methods=["POST"]),
        Route("/item/{ref}/forget", forget, methods=["POST"]),
        Route("/item/{ref}/archive", archive, methods=["POST"]),
        Route("/item/{ref}/unarchive", archive, methods=["POST"]),
        Route("/item/{ref}/observation", observation, methods=["POST"]),
        Route("/item/{ref}/relation", open_relation, methods=["POST"]),
        Route("/item/{ref}/relation/close", close_relation, methods=["POST"]),
    ]
