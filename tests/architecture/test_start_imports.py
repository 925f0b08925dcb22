"""What starting mnemodb loads: the engine, and `mnemodb serve` over stdio with no embedder,
import none of the libraries only some requests need (numpy for vectors, `regex` for
patterns, rapidfuzz for typo-tolerant search), nor the HTTP stack, the MCP SDK or package
metadata. Each costs 10 to 470 ms of every start; they are imported where they are used.
Nor do they load what only other commands or rare calls need (temporary files, token
secrets), and the dataclasses they load have only the methods `@dataclass` must compile
(`__init__`, and a frozen class's `__setattr__` and `__delattr__`): `==`, `hash` and `repr`
come from `mnemodb.model.value.Value`, written once: compiled for each of the 85 classes a
start loads, they were about a tenth of it.

Structural, not timed: the probes run in a fresh interpreter and read `sys.modules`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mnemodb.server.profiles import AVAILABLE

# Loaded on first use only: vectors, patterns, fuzzy matching, embeddings over HTTP.
ON_DEMAND = ("numpy", "regex", "rapidfuzz", "urllib.request", "http.client", "email")
# `mnemodb serve --http` and the web inspector only.
HTTP_STACK = ("starlette", "uvicorn", "h11", "sse_starlette", "jinja2", "jwt", "prometheus_client", "httpx")
# The SDK serves HTTP; stdio is served by mnemodb's own reader.
SDK = ("mcp", "mcp_types", "pydantic", "pydantic_core")
# `mnemodb.__version__` is a constant: looking the distribution up would load these.
METADATA = ("importlib.metadata", "zipfile")
# The modules adding the other commands' parsers: `serve` builds its own parser alone.
OTHER_COMMANDS = tuple(f"mnemodb.cli.{name}" for name in ("clients", "completion", "doctor", "items", "scopes"))
# `mnemodb import -` spools stdin to a temporary file; only `mnemodb token create` makes a secret.
RARE = ("tempfile", "random", "secrets", "hmac")
# The methods `@dataclass` compiles that no base class can give: a frozen class's
# `__setattr__` and `__delattr__` must be its own, and `__init__` takes its fields.
COMPILED_ANYWAY = {"__init__", "__setattr__", "__delattr__"}
# Some of the descriptions a start builds: a tool's parameters, a tool, the settings.
DESCRIBED = ("mnemodb.server.schema.Str", "mnemodb.server.profile.Tool", "mnemodb.server.settings.Settings")

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
# Runs the command line's `main` with the given arguments, then writes to the file named
# first the names of every module loaded, and the methods `@dataclass` compiled (their code
# comes from a string, not a file) in every dataclass of mnemodb's modules, by class.
SERVE_PROBE = """
import json, sys
from mnemodb.cli.main import main
status = main(sys.argv[2:])
compiled = {}
for name, module in list(sys.modules.items()):
    if not name.startswith("mnemodb"):
        continue
    for value in list(vars(module).values()):
        if isinstance(value, type) and value.__module__ == name and "__dataclass_fields__" in vars(value):
            compiled[f"{name}.{value.__qualname__}"] = sorted(
                key for key, member in vars(value).items()
                if getattr(getattr(member, "__code__", None), "co_filename", None) == "<string>"
            )
with open(sys.argv[1], "w", encoding="utf-8") as f:
    json.dump({"modules": sorted(sys.modules), "compiled": compiled}, f)
sys.exit(status)
"""


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


@pytest.mark.parametrize("profile", AVAILABLE)
def test_serving_over_stdio_without_an_embedder_loads_neither_numpy_nor_the_http_stack(
    profile: str, tmp_path: Path
) -> None:
    listing = tmp_path / "modules.json"
    command = [sys.executable, "-c", SERVE_PROBE, str(listing), "serve", "--profile", profile]
    command += ["--db", str(tmp_path / "memory.db"), "--embedder", "none"]
    served = subprocess.run(
        command,
        input=json.dumps(INIT) + "\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        timeout=120,
        check=False,
    )
    assert served.returncode == 0, served.stderr
    # The server answered: the listing is of a start that went as far as serving.
    assert json.loads(served.stdout.splitlines()[0])["result"]["serverInfo"]
    loaded = json.loads(listing.read_text(encoding="utf-8"))
    modules = loaded["modules"]
    assert "mnemodb.engine" in modules and "mnemodb.server.stdio" in modules
    assert loaded_from(modules, ON_DEMAND + HTTP_STACK + SDK + METADATA + OTHER_COMMANDS + RARE) == []
    compiled: dict[str, list[str]] = loaded["compiled"]
    # The probe saw the dataclasses a start loads (the records, the tools' schemas, ...).
    assert "mnemodb.model.records.Memory" in compiled and len(compiled) > 50
    # Each has its `__init__`, and nothing `Value` gives it: `==`, `hash` and `repr` would
    # be three compilations more per class, in every start.
    assert {name: methods for name, methods in compiled.items() if "__init__" not in methods} == {}
    assert {name: methods for name, methods in compiled.items() if not COMPILED_ANYWAY.issuperset(methods)} == {}
    # The server's descriptions (`described`: frozen to type checking) compile no run-time guard.
    assert {name: compiled[name] for name in DESCRIBED} == {name: ["__init__"] for name in DESCRIBED}
