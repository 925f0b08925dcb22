"""The native tools' parameters, annotations and output schemas, from which the tool table
is declared."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mnemodb.model.value import described
from mnemodb.server.profile import ToolAnnotations
from mnemodb.server.schema import Arr, Field, Int, Map, Num, Obj, Scalar, Str, Time

DEFAULT_LIMIT = 10
MAX_LIMIT = 100
MAX_BATCH = 100
MIN_MAX_CHARS = 500
# -- parameters ------------------------------------------------------------------------------------


@described
class Text(Str):
    r"""A string with something in it besides white space.

    Advertised by its pattern alone: `\S` already asks for one character, so a
    `minLength` of 1 beside it would say nothing more, on every text parameter of every
    listing. The validator still checks the length first, so an empty string is reported
    as too small and a blank one as blank."""

    def schema(self) -> dict[str, Any]:
        out = super().schema()
        out.pop("minLength", None)
        return out


def text_field(description: str | None = None) -> Text:
    return Text(min_length=1, pattern=r"\S", pattern_message="must not be blank", description=description)


# The parameters most tools share carry no description: it would be repeated in every tool
# of every listing. The server's instructions say what a reference is and how a time is
# written, the results carry next_cursor, and scopes are set by whoever runs the server.
SCOPES = Arr(items=text_field(), min_items=1)
SCOPE = text_field()
REF = text_field()
TEXT = text_field()
LIMIT = Int(minimum=1, maximum=MAX_LIMIT)
CURSOR = Str()
MAX_CHARS = Int(minimum=MIN_MAX_CHARS)
PROPS = Map(values=Scalar())
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
        "content": TEXT,
        "tags": Arr(items=TEXT, max_items=50),
        "importance": Int(minimum=0, maximum=10),
        "type": TEXT,
        "summary": Str(),
        "about": Arr(items=TEXT, max_items=20, description="Entity names (created if new)"),
        "supersedes": TEXT,
        "props": PROPS,
    },
    required=("content",),
)
NEW_ENTITY = Obj(
    fields={
        "name": text_field(),
        "type": Str(),
        "observations": Arr(items=TEXT, max_items=100, description="One fact each"),
        "props": PROPS,
    },
    required=("name",),
)
NEW_RELATION = Obj(
    fields={
        "from": REF,
        "to": REF,
        "type": text_field("Active voice: works_at, depends_on..."),
        "valid_from": Time(),
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
        "valid_to": Time(),
    },
)

WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
IDEMPOTENT_WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
UPDATE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
DELETE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)
# The MCP specification gives destructive and idempotent hints a meaning only for a tool
# that is not read-only, so a read-only tool leaves them out of every listing.
READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)


# -- output schemas ----------------------------------------------------------------------------------


def output_schema(*keys: str) -> dict[str, Any]:
    """An output schema: an object with these top-level keys. Their types and the keys a
    result may add are left to the description and the results themselves: a client checks
    a result against this, but every listing would carry the rest."""
    return {"type": "object", "required": list(keys)}
