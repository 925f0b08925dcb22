"""Every tool of every profile advertises schemas a strict validator takes.

MCP Inspector's `--strict` refused the topodb profile over two bare `true` subschemas
(`items: true`), and the TypeScript SDK warned fourteen times about `format: "uint64"`,
a format no validator knows. Upstream's shapes are kept where clients read them; these
are only how the schemas say it.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from mnemodb.server import config
from mnemodb.server.calls import listed_tool
from mnemodb.server.profiles import build_profile

pytestmark = pytest.mark.inprocess

PROFILES = ("native", "memdb", "topodb", "knowledge-graph")
# JSON Schema 2020-12's formats, and the numeric ones OpenAPI defines (which validators
# such as Ajv's formats know).
KNOWN_FORMATS = {
    "date-time", "date", "time", "duration", "email", "idn-email", "hostname", "idn-hostname", "ipv4", "ipv6",
    "uri", "uri-reference", "iri", "iri-reference", "uuid", "uri-template", "json-pointer",
    "relative-json-pointer", "regex", "int32", "int64", "float", "double",
}  # fmt: skip
# Keywords whose value may be `true` or `false` without being a subschema a strict
# validator refuses.
BOOLEAN_ALLOWED = {"additionalProperties", "unevaluatedProperties", "uniqueItems", "readOnly", "deprecated"}


def _walk(node: Any, path: str) -> Iterator[tuple[str, str, Any]]:
    """(path, keyword, value) of every keyword in a schema, subschemas included."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield path, key, value
            yield from _walk(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, f"{path}/{i}")


def _schemas(tmp_path: Path) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for name in PROFILES:
        settings = config.load(argparse.Namespace(profile=name, db=str(tmp_path / f"{name}.db")), {})
        profile = build_profile(name, settings)
        for tool in profile.tools:
            listed = listed_tool(tool, profile)
            yield name, f"{tool.name} input", listed["inputSchema"]
            if "outputSchema" in listed:
                yield name, f"{tool.name} output", listed["outputSchema"]


def test_no_schema_holds_a_bare_boolean_subschema_or_an_unknown_format(tmp_path: Path) -> None:
    problems = []
    for profile, where, schema in _schemas(tmp_path):
        for path, key, value in _walk(schema, ""):
            if isinstance(value, bool) and key not in BOOLEAN_ALLOWED and key not in ("default", "const"):
                problems.append(f"{profile} {where} {path}/{key}: {value}")
            if key == "format" and isinstance(value, str) and value not in KNOWN_FORMATS:
                problems.append(f"{profile} {where} {path}: format {value!r}")
    assert problems == []


@pytest.mark.parametrize("profile", PROFILES)
def test_every_schema_is_valid_json_schema(tmp_path: Path, profile: str) -> None:
    checked = 0
    for name, where, schema in _schemas(tmp_path):
        if name != profile:
            continue
        validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        try:
            validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise AssertionError(f"{profile} {where}: {exc.message}") from None
        checked += 1
    assert checked > 0
