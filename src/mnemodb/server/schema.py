"""Declarative tool parameters: one definition gives the JSON Schema and the validator.

A tool's parameters are an `Obj` of fields. `Obj.json_schema()` is what `tools/list`
advertises; `Obj.validate(arguments)` returns the cleaned arguments or raises
`Invalid` with every problem found. Problems are recorded as issues shaped like Zod's
(code, path, message and the code's own keys), because two of the three servers
mnemodb replaces report validation errors that way; each profile formats them as its
upstream did.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from datetime import datetime
from typing import Any

from mnemodb.model.checks import is_finite_number
from mnemodb.model.rules import WHITESPACE
from mnemodb.model.times import epoch_ms
from mnemodb.model.value import Value, described

__all__ = [
    "Arr",
    "Bool",
    "Enum",
    "Field",
    "Int",
    "Invalid",
    "Issue",
    "Map",
    "Num",
    "Obj",
    "OneOrMany",
    "Scalar",
    "Str",
    "Time",
    "js_length",
]

Issue = dict[str, Any]
Path = tuple[str | int, ...]
Check = Callable[[Any, Path, list[Issue]], Any]


class Invalid(Exception):
    """Arguments that do not satisfy a tool's parameter schema."""

    def __init__(self, issues: list[Issue]) -> None:
        super().__init__("; ".join(f"{'.'.join(map(str, i['path'])) or '(root)'}: {i['message']}" for i in issues))
        self.issues = issues


@functools.cache
def _js_regex(pattern: str, flags: str) -> re.Pattern[str]:
    """A JavaScript regex (the subset tool schemas use) compiled with JavaScript's meaning.

    `$` matches only at the very end (Python's also matches before a final newline),
    and `\\s` / `\\S` use JavaScript's set of white space characters.
    """
    space = re.escape("".join(sorted(WHITESPACE)))
    translated = re.sub(r"(?<!\\)\$", r"\\Z", pattern)
    translated = translated.replace("\\S", f"[^{space}]").replace("\\s", f"[{space}]")
    return re.compile(translated, re.IGNORECASE if "i" in flags else 0)


def js_length(text: str) -> int:
    """String length in UTF-16 code units, as JavaScript counts it."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def type_name(value: Any) -> str:
    """The name Zod gives the type of a received value."""
    if value is _MISSING:
        return "undefined"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "NaN" if isinstance(value, float) and math.isnan(value) else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()


def _invalid_type(expected: str, value: Any, path: Path) -> Issue:
    return {
        "expected": expected,
        "code": "invalid_type",
        "path": list(path),
        "message": f"Invalid input: expected {expected}, received {type_name(value)}",
    }


@described
class Field(Value):
    description: str | None = field(default=None, kw_only=True)
    default: Any = field(default=_MISSING, kw_only=True)

    def schema(self) -> dict[str, Any]:
        raise NotImplementedError

    def check(self, value: Any, path: Path, issues: list[Issue]) -> Any:
        raise NotImplementedError

    def json_schema(self) -> dict[str, Any]:
        out = self.schema()
        if self.description is not None:
            out["description"] = self.description
        if self.default is not _MISSING:
            out["default"] = self.default
        return out


@described
class Str(Field):
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    pattern_flags: str = ""
    pattern_message: str | None = None
    trim: bool = False
    utf16: bool = True
    """Count length in UTF-16 code units (JavaScript's rule) rather than code points."""
    schema_pattern: str | None = None
    """The pattern advertised in the JSON Schema, when it must differ from `pattern`
    (JSON Schema has no flags, so a case-insensitive pattern is spelled out)."""

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "string"}
        if self.min_length is not None:
            out["minLength"] = self.min_length
        if self.max_length is not None:
            out["maxLength"] = self.max_length
        if self.schema_pattern is not None or self.pattern is not None:
            out["pattern"] = self.schema_pattern or self.pattern
        return out

    def check(self, value: Any, path: Path, issues: list[Issue]) -> Any:
        if not isinstance(value, str):
            issues.append(_invalid_type("string", value, path))
            return value
        if self.trim:
            value = value.strip()
        min_length, max_length = self.min_length, self.max_length
        if min_length is None and max_length is None:
            length = 0  # not needed
        elif not self.utf16 or value.isascii():
            length = len(value)
        else:
            length = js_length(value)
        if min_length is not None and length < min_length:
            issues.append(
                {
                    "origin": "string",
                    "code": "too_small",
                    "minimum": self.min_length,
                    "inclusive": True,
                    "path": list(path),
                    "message": f"Too small: expected string to have >={self.min_length} characters",
                }
            )
        if max_length is not None and length > max_length:
            issues.append(
                {
                    "origin": "string",
                    "code": "too_big",
                    "maximum": self.max_length,
                    "inclusive": True,
                    "path": list(path),
                    "message": f"Too big: expected string to have <={self.max_length} characters",
                }
            )
        if self.pattern is not None and self._compiled.search(value) is None:
            shown = f"/{self.pattern}/{self.pattern_flags}"
            issues.append(
                {
                    "origin": "string",
                    "code": "invalid_format",
                    "format": "regex",
                    "pattern": shown,
                    "path": list(path),
                    "message": self.pattern_message or f"Invalid string: must match pattern {shown}",
                }
            )
        return value

    @functools.cached_property
    def _compiled(self) -> re.Pattern[str]:
        """The pattern, compiled once a field (`pattern` is set wherever this is read)."""
        assert self.pattern is not None
        return _js_regex(self.pattern, self.pattern_flags)


@described
class Num(Field):
    minimum: float | None = None
    maximum: float | None = None
    integer: bool = False

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "integer" if self.integer else "number"}
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        return out

    def check(self, value: Any, path: Path, issues: list[Issue]) -> Any:
        if isinstance(value, bool) or not isinstance(value, int | float) or not is_finite_number(value):
            issues.append(_invalid_type("number", value, path))
            return value
        if self.integer and (isinstance(value, float) and not value.is_integer()):
            issues.append(
                {
                    "expected": "int",
                    "format": "safeint",
                    "code": "invalid_type",
                    "path": list(path),
                    "message": "Invalid input: expected int, received number",
                }
            )
            return value
        if self.integer:
            value = int(value)
        if self.minimum is not None and value < self.minimum:
            shown = int(self.minimum) if float(self.minimum).is_integer() else self.minimum
            issues.append(
                {
                    "origin": "number",
                    "code": "too_small",
                    "minimum": shown,
                    "inclusive": True,
                    "path": list(path),
                    "message": f"Too small: expected number to be >={shown}",
                }
            )
        if self.maximum is not None and value > self.maximum:
            shown = int(self.maximum) if float(self.maximum).is_integer() else self.maximum
            issues.append(
                {
                    "origin": "number",
                    "code": "too_big",
                    "maximum": shown,
                    "inclusive": True,
                    "path": list(path),
                    "message": f"Too big: expected number to be <={shown}",
                }
            )
        return value


@described
class Int(Num):
    integer: bool = True


@described
class Bool(Field):
    def schema(self) -> dict[str, Any]:
        return {"type": "boolean"}

    def check(self, value: Any, path: Path, issues: list[Issue]) -> Any:
        if not isinstance(value, bool):
            issues.append(_invalid_type("boolean", value, path))
        return value


@described
class Enum(Field):
    values: tuple[str, ...] = ()

    def schema(self) -> dict[str, Any]:
        return {"type": "string", "enum": list(self.values)}

    def check(self, value: Any, path: Path, issues: list[Issue]) -> Any:
        if value not in self.values or not isinstance(value, str):
            options = "|".join(f'"{v}"' for v in self.values)
            issues.append(
                {
                    "code": "invalid_value",
                    "values": list(self.values),
                    "path": list(path),
                    "message": f"Invalid option: expected one of {options}",
                }
            )
        return value


@described
class Arr(Field):
    items: Field = field(default_factory=Str)
    min_items: int | None = None
    max_items: int | None = None

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "array", "items": self.items.json_schema()}
        if self.min_items is not None:
            out["minItems"] = self.min_items
        if self.max_items is not None:
            out["maxItems"] = self.max_items
        return out

    def check(self, value: Any, path: Path, issues: list[Issue]) -> Any:
        if not isinstance(value, list):
            issues.append(_invalid_type("array", value, path))
            return value
        check = self.items.check
        cleaned = [check(item, (*path, i), issues) for i, item in enumerate(value)]
        if self.min_items is not None and len(value) < self.min_items:
            issues.append(
                {
                    "origin": "array",
                    "code": "too_small",
                    "minimum": self.min_items,
                    "inclusive": True,
                    "path": list(path),
                    "message": f"Too small: expected array to have >={self.min_items} items",
                }
            )
        if self.max_items is not None and len(value) > self.max_items:
            issues.append(
                {
                    "origin": "array",
                    "code": "too_big",
                    "maximum": self.max_items,
                    "inclusive": True,
                    "path": list(path),
                    "message": f"Too big: expected array to have <={self.max_items} items",
                }
            )
        return cleaned


@described
class Obj(Field):
    """An object with named fields. `required` names the fields that must be present."""

    fields: Mapping[str, Field] = field(default_factory=dict)
    required: Sequence[str] = ()
    strict: bool = True
    """Reject unknown keys (Zod's strictObject); otherwise they are dropped."""

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "object",
            "properties": {name: f.json_schema() for name, f in self.fields.items()},
        }
        if self.required:
            out["required"] = list(self.required)
        if self.strict:
            out["additionalProperties"] = False
        return out

    @functools.cached_property
    def _plan(self) -> tuple[tuple[str, Check, Field, bool], ...]:
        """Each field's name, check, self and whether it is required, made once: a batch
        checks a hundred objects a call, each of which would look them up again."""
        return tuple((name, spec.check, spec, name in self.required) for name, spec in self.fields.items())

    @functools.cached_property
    def _places(self) -> dict[str, tuple[int, Check]] | None:
        """Each field's place and check, when no field is required or has a default: then
        only the fields given need checking (None otherwise)."""
        if self.required or any(spec.default is not _MISSING for spec in self.fields.values()):
            return None
        return {name: (place, spec.check) for place, (name, spec) in enumerate(self.fields.items())}

    def check(self, value: Any, path: Path, issues: list[Issue]) -> Any:
        if not isinstance(value, dict):
            issues.append(_invalid_type("object", value, path))
            return value
        out: dict[str, Any] = {}
        places = self._places
        if places is not None:
            # Nothing to add of the fields not given: the given ones, checked in the fields'
            # order as the loop below checks them (a tool call gives two or three of a dozen).
            given: list[tuple[int, str, Check]] = []
            for name in value:
                known = places.get(name)
                if known is None:
                    break  # an unknown key: told by the loop below
                given.append((known[0], name, known[1]))
            else:
                given.sort()
                for _, name, check in given:
                    out[name] = check(value[name], (*path, name), issues)
                return out
        fields = self.fields
        present = 0
        for name, check, spec, required in self._plan:
            # One look-up a field (a batch checks a hundred objects a call).
            given = value.get(name, _MISSING)
            if given is not _MISSING:
                present += 1
                out[name] = check(given, (*path, name), issues)
            elif required:
                issues.append(_invalid_type(_expected(spec), _MISSING, (*path, name)))
            elif spec.default is not _MISSING:
                out[name] = spec.default
        unknown = [k for k in value if k not in fields] if present < len(value) else []
        if unknown and self.strict:
            listed = ", ".join(f'"{k}"' for k in unknown)
            issues.append(
                {
                    "code": "unrecognized_keys",
                    "keys": unknown,
                    "path": list(path),
                    "message": f"Unrecognized key{'s' if len(unknown) > 1 else ''}: {listed}",
                }
            )
        return out

    def validate(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """Cleaned arguments; absent arguments count as `{}` unless a field is required."""
        issues: list[Issue] = []
        if arguments is None and self.required:
            raise Invalid([_invalid_type("object", _MISSING, ())])
        # `check` only reads a dict and builds a new one: a copy is made of other mappings only.
        given = arguments if type(arguments) is dict else dict(arguments or {})
        cleaned: dict[str, Any] = self.check(given, (), issues)
        if issues:
            raise Invalid(issues)
        return cleaned


@described
class Scalar(Field):
    """A JSON scalar: a string, a finite number or a boolean (null too when `nullable`)."""

    nullable: bool = False

    def schema(self) -> dict[str, Any]:
        kinds = ["string", "number", "boolean"] + (["null"] if self.nullable else [])
        return {"type": kinds}

    def check(self, value: Any, path: Path, issues: list[Issue]) -> Any:
        if value is None and self.nullable:
            return value
        if isinstance(value, str | bool) or (isinstance(value, int | float) and is_finite_number(value)):
            return value
        expected = "string, number or boolean" + (" or null" if self.nullable else "")
        issues.append(_invalid_type(expected, value, path))
        return value


@described
class Map(Field):
    """An object whose keys are free and whose values all follow `values`."""

    values: Field = field(default_factory=Str)
    max_keys: int | None = None

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "object", "additionalProperties": self.values.json_schema()}
        if self.max_keys is not None:
            out["maxProperties"] = self.max_keys
        return out

    def check(self, value: Any, path: Path, issues: list[Issue]) -> Any:
        if not isinstance(value, dict):
            issues.append(_invalid_type("object", value, path))
            return value
        if self.max_keys is not None and len(value) > self.max_keys:
            issues.append(
                {
                    "code": "too_big",
                    "maximum": self.max_keys,
                    "path": list(path),
                    "message": f"Too big: expected at most {self.max_keys} keys",
                }
            )
        return {k: self.values.check(v, (*path, k), issues) for k, v in value.items()}


_ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?)?")


@described
class Time(Field):
    """An instant: milliseconds since the Unix epoch, or an ISO 8601 date or date-time
    (UTC unless it carries an offset). Cleaned to milliseconds."""

    def schema(self) -> dict[str, Any]:
        return {"type": ["string", "integer"]}

    def check(self, value: Any, path: Path, issues: list[Issue]) -> Any:
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 53:
            return value
        if isinstance(value, str) and _ISO_TIME.fullmatch(value.strip()):
            try:
                parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            except ValueError:
                pass
            else:
                ms = epoch_ms(parsed)
                if 0 <= ms < 1 << 53:  # the range an integer time may take
                    return ms
        issues.append(
            {
                "code": "invalid_format",
                "format": "time",
                "path": list(path),
                "message": "Invalid time: give an ISO 8601 date or date-time (e.g. 2026-03-01 or "
                "2026-03-01T09:30:00Z) or milliseconds since 1970",
            }
        )
        return value


@described
class OneOrMany(Field):
    """One value or a list of them (each following `items`); cleaned to a list."""

    items: Field = field(default_factory=Str)
    max_items: int | None = None

    def schema(self) -> dict[str, Any]:
        many: dict[str, Any] = {"type": "array", "items": self.items.json_schema(), "minItems": 1}
        if self.max_items is not None:
            many["maxItems"] = self.max_items
        return {"anyOf": [self.items.json_schema(), many]}

    def check(self, value: Any, path: Path, issues: list[Issue]) -> Any:
        if not isinstance(value, list):
            return [self.items.check(value, path, issues)]
        if not value:
            message = "Too small: expected at least 1 item"
            issues.append({"code": "too_small", "minimum": 1, "path": list(path), "message": message})
        if self.max_items is not None and len(value) > self.max_items:
            issues.append(
                {
                    "code": "too_big",
                    "maximum": self.max_items,
                    "path": list(path),
                    "message": f"Too big: expected at most {self.max_items} items",
                }
            )
        if len(value) == 1:  # most: without a comprehension's call
            return [self.items.check(value[0], (*path, 0), issues)]
        return [self.items.check(item, (*path, i), issues) for i, item in enumerate(value)]


def _expected(spec: Field) -> str:
    if isinstance(spec, Str | Enum):
        return "string"
    if isinstance(spec, Num):
        return "number"
    if isinstance(spec, Bool):
        return "boolean"
    if isinstance(spec, Arr):
        return "array"
    return "object"
