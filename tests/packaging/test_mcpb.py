"""The Claude Desktop bundle: built by scripts/build_mcpb.py, checked by the official mcpb CLI, started as a host would.

Needs Node.js and npm (npx runs the pinned mcpb CLI): without them these tests fail.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from mnemodb import __version__
from mnemodb.server.profiles import build_profile
from support import RawServer

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = ROOT / "scripts" / "build_mcpb.py"


def _load_build_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_mcpb", BUILD_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build_mcpb = _load_build_script()
MCPB = build_mcpb.MCPB_PACKAGE

# Resolves a manifest's server command with the CLI package's own `getMcpConfigForManifest`
# (the code hosts use to substitute ${__dirname}, ${user_config.*} and the rest), run
# under npx: the package is found next to the `mcpb` command npx put on PATH.
RESOLVE_CONFIG = """\
import { createRequire } from "node:module";
import { existsSync, readFileSync } from "node:fs";
import { delimiter, join } from "node:path";
import { pathToFileURL } from "node:url";

const binDir = process.env.PATH.split(delimiter).find((dir) => existsSync(join(dir, "mcpb")));
if (!binDir) throw new Error("the mcpb command is not on PATH");
const entry = createRequire(join(binDir, "..", "resolve.js")).resolve("@anthropic-ai/mcpb");
const { getMcpConfigForManifest } = await import(pathToFileURL(entry).href);
const options = JSON.parse(readFileSync("options.json", "utf8"));
process.stdout.write(JSON.stringify((await getMcpConfigForManifest(options)) ?? null));
"""


@dataclass(frozen=True)
class Bundle:
    archive: Path
    root: Path
    """The archive unpacked."""
    manifest: dict[str, Any]


def npx() -> str:
    found = shutil.which("npx")
    if found is None:
        pytest.fail(
            "npx is not on PATH: the bundle tests run the official mcpb CLI "
            f"({MCPB}) with npx, so they need Node.js and npm installed",
            pytrace=False,
        )
    return found


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Bundle:
    npx()
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, str(BUILD_SCRIPT), "--out-dir", str(out)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    if built.returncode != 0:
        pytest.fail(f"build_mcpb.py failed:\n{built.stdout}\n{built.stderr}", pytrace=False)
    archive = out / f"mnemodb-{__version__}.mcpb"
    root = tmp_path_factory.mktemp("unpacked")
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(root)
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    return Bundle(archive, root, manifest)


def host_config(bundle: Bundle, home: Path, user_config: dict[str, Any]) -> dict[str, Any]:
    """The command, arguments and environment a host derives from the manifest."""
    home.mkdir(parents=True, exist_ok=True)
    work = home.parent / "resolve"
    work.mkdir()
    (work / "resolve.mjs").write_text(RESOLVE_CONFIG, encoding="utf-8")
    options = {
        "manifest": bundle.manifest,
        "extensionPath": str(bundle.root),
        "systemDirs": {name: str(home / name.title()) for name in ("DESKTOP", "DOCUMENTS", "DOWNLOADS")}
        | {"HOME": str(home)},
        "userConfig": user_config,
        "pathSeparator": os.sep,
    }
    (work / "options.json").write_text(json.dumps(options), encoding="utf-8")
    done = subprocess.run(
        [npx(), "--yes", "--package", MCPB, "--call", "node resolve.mjs"],
        cwd=work,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    config: dict[str, Any] | None = json.loads(done.stdout)
    assert config is not None, "the host would not start the server (required settings missing?)"
    return config


def start(config: dict[str, Any], home: Path) -> RawServer:
    """Spawn the server as configured; the interpreter is looked up on PATH, the test's own first."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    command = shutil.which(config["command"], path=path)
    assert command is not None, f"{config['command']} (the manifest's command) is not on PATH"
    env = {**config.get("env", {}), "PATH": path, "HOME": str(home), "USERPROFILE": str(home)}
    return RawServer([command, *config.get("args", [])], env=env, cwd=home)


def served_tools(server: RawServer) -> list[str]:
    """The handshake, then the names `tools/list` gives."""
    initialized = server.initialize()
    assert "result" in initialized, initialized
    listed = server.request("tools/list")
    return [tool["name"] for tool in listed["result"]["tools"]]


def test_archive_has_the_manifest_at_its_root_and_the_server_beside_it(bundle: Bundle) -> None:
    with zipfile.ZipFile(bundle.archive) as zf:
        names = set(zf.namelist())
    assert "manifest.json" in names
    entry_point = bundle.manifest["server"]["entry_point"]
    assert entry_point in names
    assert (bundle.root / entry_point).is_file()
    lib = bundle.root / "server" / "lib"
    for package in ("mnemodb", "mcp", "pydantic_core", "rapidfuzz", "regex"):
        assert (lib / package).is_dir(), f"{package} is not bundled"
    assert not (lib / "bin").exists(), "console scripts name the build machine's interpreter"
    assert not list(lib.glob("*.dist-info/direct_url.json")), "the build machine's paths stay out"


def test_official_cli_validates_the_manifest(bundle: Bundle) -> None:
    done = subprocess.run(
        [npx(), "--yes", MCPB, "validate", str(bundle.root / "manifest.json")],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "validation passes" in done.stdout


def test_manifest_describes_this_build(bundle: Bundle) -> None:
    manifest = bundle.manifest
    assert manifest["manifest_version"] == build_mcpb.MANIFEST_VERSION
    assert (manifest["name"], manifest["version"]) == ("mnemodb", __version__)
    assert manifest["server"]["type"] == "python"
    assert "${__dirname}/" + manifest["server"]["entry_point"] in manifest["server"]["mcp_config"]["args"]
    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert manifest["compatibility"]["platforms"] == [sys.platform]
    assert manifest["compatibility"]["runtimes"]["python"].startswith(f">={python},")
    settings = manifest["user_config"]
    assert settings["profile"]["default"] == "native"
    assert settings["database_dir"]["type"] == "directory"
    assert settings["database_dir"]["default"] == "${HOME}/.mnemodb"
    expected = [tool.name for tool in build_profile("native").tools]
    assert [tool["name"] for tool in manifest["tools"]] == expected
    assert len(expected) == 9


def test_server_starts_from_the_bundle_as_the_host_starts_it(bundle: Bundle, tmp_path: Path) -> None:
    home = tmp_path / "home"
    picked = tmp_path / "picked folder"
    config = host_config(bundle, home, {"database_dir": str(picked)})
    server = start(config, home)
    try:
        names = served_tools(server)
    finally:
        status = server.close()
    assert names == [tool["name"] for tool in bundle.manifest["tools"]]
    assert status == 0, server.stderr
    assert (picked / "memory.db").is_file()


def test_default_database_folder_is_in_home_and_the_profile_is_a_setting(bundle: Bundle, tmp_path: Path) -> None:
    # The CLI package leaves ${HOME} unexpanded in a default it substitutes; the launcher expands it.
    home = tmp_path / "home"
    config = host_config(bundle, home, {"profile": "memdb"})
    server = start(config, home)
    try:
        names = served_tools(server)
    finally:
        status = server.close()
    assert names == [tool.name for tool in build_profile("memdb").tools]
    assert status == 0, server.stderr
    assert (home / ".mnemodb" / "memory.db").is_file()
