"""Tool parameters the way a Rust MCP server declares them: a JSON Schema shaped like the
one schemars writes, and validation that fails like serde does, with the first problem only.

Used by the topodb profile, whose upstream rejects unknown fields and reports argument
errors as `failed to deserialize parameters: <serde message>`. The rules that matter to
clients, measured against that server:

- keys are checked in alphabetical order (serde reads them from a sorted map), so the
  first bad key in that order is the one reported; missing fields are reported after
  every present key was accepted;
- `null` means "omitted" for optional fields and is a type error for the others;
- fields typed as raw JSON accept anything here; the tool converts them and reports its
  own errors.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mnemodb.model.checks import is_finite_number
from mnemodb.model.value import Value
from mnemodb.server.schema import Invalid

__all__ = ["Param", "ParamError", "Params", "sorted_json"]

JSON_SCHEMA_2020_12 = "https://json-schema.org/draft/2020-12/schema"
I64_MIN, I64_MAX = -(2**63), 2**63 - 1
U64_MAX = 2**64 - 1
_INTEGER_RANGES = {"u8": (0, 255), "u64": (0, U64_MAX), "usize": (0, U64_MAX), "i64": (I64_MIN, I64_MAX)}
# Integer kinds, and the `format` each is advertised with: upstream's schemars wrote uint8,
# uint64 and uint too, which are no format a validator knows (the TypeScript SDK warns about
# each one); their range says the same, with `minimum`. int64 is a known format.
_FORMATS: dict[str, str | None] = {"u8": None, "u64": None, "usize": None, "i64": "int64"}
_NO_DEFAULT = object()


class ParamError(ValueError):
    """Arguments serde would refuse; the message is serde's wording."""


def sorted_json(value: Any) -> Any:
    """`value` with every object's keys in alphabetical order, as serde_json writes them."""
    if isinstance(value, dict):
        return {key: sorted_json(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [sorted_json(item) for item in value]
    return value


def unexpected(value: Any) -> str:
    """serde's name for a JSON value it did not expect."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean `{'true' if value else 'false'}`"
    if isinstance(value, int):
        if value > U64_MAX or value < I64_MIN:  # serde_json has already read it as a float
            return f"floating point `{float_text(float(value))}`"
        return f"integer `{value}`"
    if isinstance(value, float):
        return f"floating point `{float_text(value)}`"
    if isinstance(value, str):
        return f'string "{value}"'
    if isinstance(value, list):
        return "sequence"
    return "map"


def float_text(value: float) -> str:
    """A float as Rust prints it: `1.0`, `1.5`, `1.8446744073709552e+19`."""
    if math.isfinite(value) and value == int(value) and abs(value) < 1e16:
        return f"{int(value)}.0"
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        sign = "-" if exponent.startswith("-") else "+"
        text = f"{mantissa}e{sign}{exponent.lstrip('+-').lstrip('0') or '0'}"
    return text


@dataclass(frozen=True, eq=False, repr=False)
class Param(Value):
    """One field of a params struct.

    `kind` is `string`, `u8`, `u64`, `usize`, `i64`, `strings` (a list of strings),
    `json` (any JSON value, converted by the tool; `schema` says what to advertise), or a
    tuple of allowed strings (a unit enum, advertised through `$defs` as `enum_name`).
    """

    name: str
    kind: str | tuple[str, ...]
    description: str
    required: bool = False
    """No default: absent is `missing field`."""
    optional: bool = False
    """An `Option`: absent or null is None."""
    default: Any = _NO_DEFAULT
    """The value when absent, for a field that is neither required nor optional."""
    minimum: int | None = None
    maximum: int | None = None
    min_items: int | None = None
    schema: Mapping[str, Any] | None = None
    """For `json` fields: the advertised schema (description is added)."""
    enum_name: str | None = None
    enum_description: str | None = None

    def json_schema(self) -> dict[str, Any]:
        kind = self.kind
        out: dict[str, Any] = {"description": self.description}
        if isinstance(kind, tuple):
            out["$ref"] = f"#/$defs/{self.enum_name}"
            return out
        if kind == "json":
            out.update(self.schema or {})
        elif kind == "string":
            out["type"] = "string"
        elif kind == "strings":
            out["type"] = "array"
            out["items"] = {"type": "string"}
        elif kind in _FORMATS:
            out["type"] = "integer"
            known = _FORMATS[kind]
            if known is not None:
                out["format"] = known
            if kind != "i64":
                out["minimum"] = 0
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        if self.min_items is not None:
            out["minItems"] = self.min_items
        if self.optional:
            out["default"] = None
            if isinstance(out.get("type"), str):
                out["type"] = [out["type"], "null"]
        elif self.default is not _NO_DEFAULT:
            out["default"] = self.default
        return out

    def absent(self) -> Any:
        if self.required:
            raise ParamError(f"missing field `{self.name}`")
        return None if self.default is _NO_DEFAULT else self.default

    def parse(self, value: Any) -> Any:
        kind = self.kind
        if kind == "json":
            return value
        if value is None and self.optional:
            return None
        if isinstance(kind, tuple):
            if not isinstance(value, str):
                raise ParamError(f"invalid type: {unexpected(value)}, expected string or map")
            if value not in kind:
                listed = ", ".join(f"`{v}`" for v in kind)
                raise ParamError(f"unknown variant `{value}`, expected one of {listed}")
            return value
        if kind == "string":
            if not isinstance(value, str):
                raise ParamError(f"invalid type: {unexpected(value)}, expected a string")
            return value
        if kind == "strings":
            if not isinstance(value, list):
                raise ParamError(f"invalid type: {unexpected(value)}, expected a sequence")
            for item in value:
                if not isinstance(item, str):
                    raise ParamError(f"invalid type: {unexpected(item)}, expected a string")
            return list(value)
        low, high = _INTEGER_RANGES[kind]
        if isinstance(value, bool) or not isinstance(value, int) or value > U64_MAX or value < I64_MIN:
            raise ParamError(f"invalid type: {unexpected(value)}, expected {kind}")
        if not low <= value <= high:
            raise ParamError(f"invalid value: integer `{value}`, expected {kind}")
        return value


def _holds_number_out_of_range(value: Any) -> bool:
    """Whether a JSON integer too large for a float is anywhere in `value`: serde_json fails
    the whole message on one ("number out of range") where Python reads it exactly.
    Iterative, since arguments may nest hundreds of levels deep."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, int) and not is_finite_number(item):
            return True
    return False


@dataclass(frozen=True, eq=False, repr=False)
class Params(Value):
    """A params struct. With `deny_unknown` (the default) an unknown key is an error; without
    fields and without `deny_unknown`, anything is accepted and ignored (a tool with no
    params struct)."""

    fields: Sequence[Param] = field(default_factory=tuple)
    deny_unknown: bool = True

    def json_schema(self) -> dict[str, Any]:
        if not self.fields and not self.deny_unknown:
            return {"properties": {}, "type": "object"}
        out: dict[str, Any] = {
            "$schema": JSON_SCHEMA_2020_12,
            "additionalProperties": False,
            "properties": {p.name: p.json_schema() for p in self.fields},
            "type": "object",
        }
        defs = {
            p.enum_name: {"description": p.enum_description, "enum": list(p.kind), "type": "string"}
            for p in self.fields
            if isinstance(p.kind, tuple) and p.enum_name
        }
        if defs:
            out["$defs"] = defs
        required = [p.name for p in self.fields if p.required]
        if required:
            out["required"] = required
        schema = sorted_json(out)
        if required:  # `required` keeps declaration order
            schema["required"] = required
        return dict(schema)

    def validate(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """`parse`, failing with the server's `Invalid` (one issue: serde's message)."""
        try:
            return self.parse(arguments)
        except ParamError as exc:
            raise Invalid([{"code": "serde", "path": [], "message": str(exc)}]) from None

    def parse(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """The arguments as the tool's types, or ParamError with serde's first complaint."""
        given = dict(arguments or {})
        if _holds_number_out_of_range(given):
            raise ParamError("number out of range")
        known = {p.name: p for p in self.fields}
        out: dict[str, Any] = {}
        for key in sorted(given):
            spec = known.get(key)
            if spec is None:
                if not self.deny_unknown:
                    continue
                if not known:
                    raise ParamError(f"unknown field `{key}`, there are no fields")
                names = [f"`{name}`" for name in known]
                if len(names) == 1:
                    expected = f"expected {names[0]}"
                elif len(names) == 2:
                    expected = f"expected {names[0]} or {names[1]}"
                else:
                    expected = f"expected one of {', '.join(names)}"
                raise ParamError(f"unknown field `{key}`, {expected}")
            out[key] = spec.parse(given[key])
        for spec in self.fields:
            if spec.name not in out:
                out[spec.name] = spec.absent()
        return out
