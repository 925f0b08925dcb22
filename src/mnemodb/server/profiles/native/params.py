"""The native tools' parameters, annotations and output schemas, from which the tool table
is declared."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_types import ToolAnnotations

from mnemodb.server.schema import Arr, Field, Int, Map, Num, Obj, Scalar, Str, Time

DEFAULT_LIMIT = 10
MAX_LIMIT = 100
MAX_BATCH = 100
MIN_MAX_CHARS = 500
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


def strict_params(fields: Mapping[str, Field], *required: str) -> Obj:
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

ARRAY_OUTPUT = {"type": "array"}
OBJECT_OUTPUT = {"type": "object"}
INT_OUTPUT = {"type": "integer"}


def output_schema(properties: Mapping[str, Any], *required: str) -> dict[str, Any]:
    """An output schema: the top-level keys and their JSON types (the tool description and
    the results themselves say the rest; a deeper schema would cost every listing tokens)."""
    return {"type": "object", "properties": dict(properties), "required": list(required or properties)}


PAGE_OUTPUT = output_schema(
    {
        "items": ARRAY_OUTPUT,
        "next_cursor": {"type": ["string", "null"]},
        "related": ARRAY_OUTPUT,
        "relations": ARRAY_OUTPUT,
    },
    "items",
    "next_cursor",
)
