"""What the native tools answer with: previews of items and relations sized for a context
window, change-log entries, and pages cut at `max_chars` behind opaque cursors."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping
from json.encoder import encode_basestring_ascii as _text
from typing import TYPE_CHECKING, Any

from mnemodb.engine.items import Item
from mnemodb.model.errors import InvalidArgument
from mnemodb.model.records import Change, Edge, Memory
from mnemodb.model.times import iso_utc as iso

if TYPE_CHECKING:
    from mnemodb.store.base import EntityKey

PREVIEW_CHARS = 240
"""A memory's text, or an observation, longer than this is cut in previews."""
PREVIEW_OBSERVATIONS = 5
"""Observations of an entity shown in a preview."""
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
        if item.archived_at is not None:
            # Only an archived memory says so: searches leave it out, a look-up still finds it.
            out["archived"] = iso(item.archived_at)
    else:
        out = {"kind": "entity", "id": item.id, "name": item.name}
        if item.entity_type:
            out["type"] = item.entity_type
        observations = item.observations
        if observations:
            # Cut only what is long: a walk shapes dozens of entities a call, most of their
            # observations short.
            shown = observations if full else observations[:PREVIEW_OBSERVATIONS]
            out["observations"] = [o if full or len(o) <= PREVIEW_CHARS else _cut(o, False)[0] for o in shown]
            if len(shown) < len(observations):
                out["observation_count"] = len(observations)
    if item.scope != "shared":
        out["scope"] = item.scope
    if item.props and full:
        out["props"] = dict(item.props)
    out["created"] = iso(item.created_at)
    if full and item.updated_at != item.created_at:
        out["updated"] = iso(item.updated_at)
    return out


def relation_shape(edge: Edge, ends: Mapping[int, Item | EntityKey]) -> dict[str, Any]:
    """A relation, each end shown as it is in `ends`: an entity (or its key) by name, a
    memory by id; an end missing from `ends` by the id the relation holds."""
    # Each end looked up once and shown here, not by a function of its own: a walk shapes
    # dozens of relations a call.
    src = ends.get(edge.src_pk)
    dst = ends.get(edge.dst_pk)
    out: dict[str, Any] = {
        "id": edge.id,
        "type": edge.type,
        "from": edge.src if src is None else src.id if isinstance(src, Memory) else src.name,
        "to": edge.dst if dst is None else dst.id if isinstance(dst, Memory) else dst.name,
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
    if all(type(v) is str for v in fixed.values()):
        # The usual search (its words alone): what `json.dumps(fixed, sort_keys=True)`
        # writes for text keys and values, spelled out. `json.dumps` with any option
        # builds an encoder each call: two thirds of a page's cursor.
        text = "{" + ", ".join(f"{_text(k)}: {_text(v)}" for k, v in sorted(fixed.items())) + "}"
    else:
        text = json.dumps(fixed, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def make_cursor(arguments: Mapping[str, Any], offset: int) -> str:
    # What `json.dumps({"q": ..., "o": offset}, separators=(",", ":"))` writes: the
    # fingerprint is hexadecimal and the offset an int, so nothing needs escaping.
    raw = f'{{"q":"{_fingerprint(arguments)}","o":{int(offset)}}}'
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


def fit_chars(shapes: list[dict[str, Any]], max_chars: int | None) -> list[dict[str, Any]]:
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


def comparable_fields(item: Item) -> dict[str, Any]:
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
