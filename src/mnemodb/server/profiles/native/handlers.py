"""The native tools' bodies over the engine: each reads or writes through one face and
answers with the shapes of `shapes`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from mnemodb.engine import Engine
from mnemodb.engine.graph import NewEntity
from mnemodb.engine.items import EntityNote, Found, Item, ItemPage, Neighbourhood, Note, Patch
from mnemodb.model.errors import InvalidArgument
from mnemodb.model.records import SUPERSEDES, Edge, Entity, ItemFilter, Memory, NewMemory
from mnemodb.model.times import iso_utc as iso
from mnemodb.search.analyzer import words
from mnemodb.server.profiles.native.params import DEFAULT_LIMIT
from mnemodb.server.profiles.native.shapes import (
    change_shape,
    comparable_fields,
    fit_chars,
    item_shape,
    make_cursor,
    read_cursor,
    relation_shape,
)

# The arguments of `recall` that make its filter; without any, the filter is this one.
_FILTERING = frozenset(("types", "since", "until", "props", "tags", "min_importance", "include_superseded"))
_CURRENT_ONLY = ItemFilter(current_only=True)


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
        if _FILTERING.isdisjoint(a):
            # The usual call: the filter every such call makes, made once (building a
            # frozen filter cost as much as a statement of the search).
            where = _CURRENT_ONLY
        else:
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
        kept = fit_chars(shapes, a.get("max_chars"))
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
        if isinstance(item, Entity) and shown_first is not None and not full and len(item.observations) > 1:
            # A copy only when the order changes: a copy of an entity costs more than its shape.
            ordered = tuple(sorted(item.observations, key=lambda o: not shown_first(o)))
            if ordered != item.observations:
                item = replace(item, observations=ordered)
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
        read = engine.items.get_in_full(
            refs, scopes=a.get("scopes"), as_of=a.get("as_of"), include_closed=a.get("include_closed", False)
        )
        ends = read.ends
        out = []
        for ref, item in zip(refs, read.found, strict=True):
            if item is None:
                out.append({"ref": ref, "error": "not found"})
            elif isinstance(item, Edge):
                out.append({"kind": "relation", **relation_shape(item, read.edge_ends)})
            else:
                shape = item_shape(item, full=True)
                mine = [e for e in read.edges if item.pk in (e.src_pk, e.dst_pk)]
                shape["relations"] = [relation_shape(e, ends) for e in mine]
                if isinstance(item, Memory):
                    newer = [e.src for e in mine if e.type == SUPERSEDES and e.dst_pk == item.pk and e.valid_to is None]
                    if newer:
                        shape["superseded_by"] = newer
                count, last = read.access[item.pk]
                if count:
                    shape["access_count"] = count
                    shape["last_accessed"] = iso(last)
                out.append(shape)
        return {"items": out}

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
        changed = sorted(k for k, v in comparable_fields(after).items() if comparable_fields(before).get(k) != v)
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
        # The ends as the write found them: the reply names each relation's ends without
        # reading them again.
        opened, closed, ends = engine.items.relate_with_ends(
            [(r["from"], r["to"], r["type"], r.get("props", {}), r.get("valid_from")) for r in add],
            closing,
            scope=a.get("scope"),
        )
        return {
            "added": [{**relation_shape(e, ends), "new": new} for e, new in opened],
            "closed": [relation_shape(e, ends) for e in closed],
        }

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
            edges = edges[: len(fit_chars([relation_shape(e, ends) for e in edges], a.get("max_chars")))]
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
        shapes = fit_chars(
            [self._reached(i, found, full) for i in found.items[offset : offset + limit]], a.get("max_chars")
        )
        ends = {i.pk: i for i in found.items}
        if offset == 0 and len(shapes) == len(found.items):
            # The usual page, every item found: `explore` finds only relations among the items
            # it finds, so each of them is on the page.
            edges = list(found.edges)
        else:
            seen = {i.pk for i in found.items[: offset + len(shapes)]}
            page = {i.pk for i in found.items[offset : offset + len(shapes)]}
            edges = [
                e
                for e in found.edges
                if e.src_pk in seen and e.dst_pk in seen and (e.src_pk in page or e.dst_pk in page)
            ]
        more = len(found.items) > offset + len(shapes)
        return {
            "items": shapes,
            "relations": [relation_shape(e, ends) for e in edges],
            "next_cursor": make_cursor(a, offset + len(shapes)) if more else None,
        }

    @staticmethod
    def _reached(item: Item, found: Neighbourhood, full: bool) -> dict[str, Any]:
        shape = item_shape(item, full=full)
        shape["hops"] = found.depth.get(item.id, 0)
        return shape

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
            kept = list(reversed(fit_chars(list(reversed(shapes)), a.get("max_chars"))))
            return {"changes": kept, "next_since": None, "earlier": len(history) - len(kept)}
        changes, position = engine.items.changes(a.get("since", 1), limit, scopes=a.get("scopes"))
        shapes = fit_chars([change_shape(c) for c in changes], a.get("max_chars"))
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
