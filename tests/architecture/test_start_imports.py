"""What starting mnemodb loads: importing the package, the engine or the command line loads
none of the libraries only some requests need (numpy for vectors, `regex` for patterns,
rapidfuzz for typo-tolerant search), nor the HTTP stack, the MCP SDK or package
metadata. Each costs 10 to 470 ms of every start; they are imported where they are used.

Structural, not timed: the probes run in a fresh interpreter and read `sys.modules`.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# Loaded on first use only: vectors, patterns, fuzzy matching, embeddings over HTTP.
ON_DEMAND = ("numpy", "regex", "rapidfuzz", "urllib.request", "http.client", "email")
# `mnemodb serve --http` and the web inspector only.
HTTP_STACK = ("starlette", "uvicorn", "h11", "sse_starlette", "jinja2", "jwt", "prometheus_client", "httpx")
# The SDK serves HTTP; stdio is served by mnemodb's own reader.
SDK = ("mcp", "mcp_types", "pydantic", "pydantic_core")
# `mnemodb.__version__` is a constant: looking the distribution up would load these.
METADATA = ("importlib.metadata", "zipfile")


def loaded_from(modules: list[str], roots: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == root or m.startswith(root + ".") for root in roots))


def modules_after(code: str) -> list[str]:
    probe = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    names: list[str] = json.loads(done.stdout)
    return names


def test_the_probe_sees_what_an_import_loads() -> None:
    """The check below would pass vacuously if the probe saw nothing."""
    assert loaded_from(modules_after("import numpy"), ON_DEMAND) != []


@pytest.mark.parametrize("module", ["mnemodb", "mnemodb.engine", "mnemodb.cli.main"])
def test_importing_mnemodb_loads_nothing_a_request_may_never_need(module: str) -> None:
    modules = modules_after(f"import {module}")
    assert module in modules
    assert loaded_from(modules, ON_DEMAND + HTTP_STACK + SDK + METADATA) == []
