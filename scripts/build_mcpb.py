#!/usr/bin/env python3
"""Build the Claude Desktop one-click install: `dist/mnemodb-<version>.mcpb`.

An MCP Bundle (`.mcpb`, formerly `.dxt`) is a zip with `manifest.json` at its root and
the server's files beside it. This one is a Python bundle: `server/main.py` starts
mnemodb from `server/lib/`, where pip installs mnemodb and every dependency, so the user
needs nothing but a Python interpreter.

Why a bundled `server/lib` and manifest version 0.2 rather than the `uv` server type of
manifest 0.4: the mcpb CLI marks 0.4 experimental (and 0.3 unfinished), and `mcpb init`
writes 0.2. A bundled lib also runs offline, exactly as built and tested, with no
dependency resolution on the user's machine. The price: pydantic-core, rapidfuzz and
regex are compiled, so a bundle works only on the platform and the Python minor version
that built it. The manifest says so (`compatibility`), the server command asks for that
exact interpreter, and the launcher refuses any other with a message saying what to do.

Run it with the Python the bundle is for: `python3.12 scripts/build_mcpb.py` builds a
bundle for Python 3.12 on this platform. Needs pip, and Node.js with npx for the
official mcpb CLI, which validates the manifest and packs the bundle.
"""

from __future__ import annotations

import argparse
import compileall
import json
import py_compile
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

# The official MCPB CLI (npm package @anthropic-ai/mcpb), pinned: the build and the tests
# run this version through npx.
MCPB_CLI_VERSION = "2.1.2"
MCPB_PACKAGE = f"@anthropic-ai/mcpb@{MCPB_CLI_VERSION}"

# The manifest version the CLI above writes for new bundles (0.3 is marked unfinished, 0.4
# experimental); it has all this bundle needs.
MANIFEST_VERSION = "0.2"

# mnemodb's own tool set, as for `mnemodb serve`; the others are one setting away.
DEFAULT_PROFILE = "native"
DEFAULT_DATABASE_DIR = "${HOME}/.mnemodb"
# The extension's name in Claude Desktop: mnemodb, as the command is (the Python
# distribution is mnemodb-mcp only because PyPI's name rules need it).
BUNDLE_NAME = "mnemodb"
DATABASE_FILE = "memory.db"
ENTRY_POINT = "server/main.py"

PROFILE_BLURBS = {
    "native": "mnemodb's own nine tools: memories, entities and time-aware relations, search, graph "
    "exploration and history",
    "knowledge-graph": "the tools of the knowledge-graph memory server (entities, relations, observations) "
    "plus graph search, paths and filters",
    "memdb": "memdb's tools (memories with tags, importance and types, and relationships between them)",
    "topodb": "topodb-mcp's tools (a scoped, temporal property graph with vectors and a change feed)",
}

PLATFORM_NAMES = {"darwin": "macOS", "win32": "Windows", "linux": "Linux"}

# `server/main.py` in the bundle. The two BUILT_FOR lines are filled in by `launcher()`.
LAUNCHER = '''\
"""Start mnemodb from this bundle: mnemodb and its dependencies are in lib/, beside this file.

Written by mnemodb's scripts/build_mcpb.py. Some packages in lib/ are compiled for one
Python minor version on one platform, so any other interpreter is refused up front.
"""

import sys
from pathlib import Path

BUILT_FOR_PYTHON = (0, 0)
BUILT_FOR_PLATFORM = ""


def main() -> int:
    if sys.version_info[:2] != BUILT_FOR_PYTHON or sys.platform != BUILT_FOR_PLATFORM:
        wanted = "Python %d.%d on %s" % (*BUILT_FOR_PYTHON, BUILT_FOR_PLATFORM)
        found = "Python %d.%d on %s" % (*sys.version_info[:2], sys.platform)
        sys.stderr.write(
            "mnemodb: this bundle was built for %s, but %s is %s. Install %s, or use a bundle "
            "built for the Python you have (mnemodb's scripts/build_mcpb.py builds one).\\n"
            % (wanted, sys.executable, found, wanted)
        )
        return 1
    sys.path.insert(0, str(Path(__file__).resolve().parent / "lib"))
    # A host substitutes ${HOME} in a setting's default only if it expands the default
    # itself; when it passes the default through as text, expand it here.
    home = str(Path.home())
    argv = [arg.replace("${HOME}", home) for arg in sys.argv[1:]]

    from mnemodb.cli.main import main as mnemodb

    return mnemodb(argv)


if __name__ == "__main__":
    sys.exit(main())
'''

# Imported with the bundled lib alone on the path: the profiles this build serves, and
# the tools of the default one.
PROFILE_PROBE = """\
import json, sys
sys.path.insert(0, sys.argv[1])
from mnemodb.server.profiles import AVAILABLE, build_profile
default = sys.argv[2]
tools = build_profile(default).tools if default in AVAILABLE else ()
print(json.dumps({"available": list(AVAILABLE), "tools": [[t.name, t.title, t.description] for t in tools]}))
"""


class BuildError(Exception):
    """A step failed; the message says which and why."""


def run(command: Sequence[str], what: str, *, quiet: bool = True) -> str:
    """Run a step; its output is shown only when it fails (or when not quiet)."""
    done = subprocess.run(
        list(command),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE if quiet else None,
        stderr=subprocess.STDOUT if quiet else None,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        output = (done.stdout or "").strip()
        raise BuildError(f"{what} failed (exit status {done.returncode})" + (f":\n{output}" if output else ""))
    return done.stdout or ""


def npx() -> str:
    found = shutil.which("npx")
    if found is None:
        raise BuildError(
            "npx is not on PATH: the bundle is validated and packed by the official mcpb CLI "
            f"({MCPB_PACKAGE}), which needs Node.js and npm"
        )
    return found


def project() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        data: dict[str, Any] = tomllib.load(f)["project"]
    # The version is written in the package (pyproject.toml's [tool.hatch.version] reads it
    # there); this interpreter need not have mnemodb installed, so it is read from the file.
    source = (ROOT / "src" / "mnemodb" / "__init__.py").read_text(encoding="utf-8")
    found = re.search(r'^__version__ = "([^"]+)"$', source, re.MULTILINE)
    if found is None:
        raise BuildError("src/mnemodb/__init__.py sets no __version__")
    data["version"] = found.group(1)
    return data


def install(lib: Path, wheels: Path) -> None:
    """mnemodb and its dependencies into `lib`, as wheels for this interpreter and platform."""
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    # --only-binary: mnemodb is the only thing built; everything else comes as wheels, from
    # pip's cache when it has them.
    binary = "--only-binary=:all:"
    run([*pip, "wheel", "--quiet", binary, "--no-deps", "--wheel-dir", str(wheels), str(ROOT)], "building mnemodb")
    (wheel,) = wheels.glob("mnemodb_mcp-*.whl")
    run(
        [*pip, "install", "--quiet", "--target", str(lib), binary, "--no-compile", str(wheel)],
        "installing mnemodb and its dependencies with pip",
    )
    # Console scripts name the build machine's interpreter; the bundle starts through its launcher.
    shutil.rmtree(lib / "bin", ignore_errors=True)
    # pip records where a local wheel came from, a path on the build machine: leave it out.
    for direct_url in lib.glob("*.dist-info/direct_url.json"):
        record = direct_url.with_name("RECORD")
        entry = f"{direct_url.parent.name}/direct_url.json,"
        kept = [line for line in record.read_text(encoding="utf-8").splitlines() if not line.startswith(entry)]
        record.write_text("\n".join(kept) + "\n", encoding="utf-8")
        direct_url.unlink()
    # Byte-code checked by hash, not by the source's modification time: packing stamps
    # every file with the packing time, which would make time-checked byte-code stale, and
    # the installed bundle may not be writable. The bundle's sources never change.
    compileall.compile_dir(
        str(lib), quiet=1, workers=0, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH
    )


def probe_profiles(lib: Path) -> tuple[list[str], list[dict[str, str]]]:
    """The profiles the bundled mnemodb serves, and the default profile's tools for the manifest."""
    output = run(
        [sys.executable, "-I", "-S", "-c", PROFILE_PROBE, str(lib), DEFAULT_PROFILE], "listing the bundled profiles"
    )
    found = json.loads(output)
    available: list[str] = found["available"]
    if DEFAULT_PROFILE not in available:
        raise BuildError(
            f"the bundled mnemodb does not serve the {DEFAULT_PROFILE!r} profile (it serves: {', '.join(available)})"
        )
    tools = [{"name": name, "description": summary(title, description)} for name, title, description in found["tools"]]
    return available, tools


def summary(title: str | None, description: str) -> str:
    """A tool's description cut to its first sentence, for the install dialog."""
    first = description.strip().split("\n\n", 1)[0].replace("\n", " ")
    match = re.match(r"(.+?[.!?])(\s|$)", first)
    if match:
        return match.group(1)
    return first or title or ""


def python_command(version: tuple[int, int]) -> tuple[str, list[str]]:
    """The interpreter the host starts: exactly the minor version the bundle was built for."""
    if sys.platform == "win32":
        return "py", [f"-{version[0]}.{version[1]}"]  # the Python launcher for Windows
    return f"python{version[0]}.{version[1]}", []


def manifest(meta: dict[str, Any], available: Sequence[str], tools: list[dict[str, str]]) -> dict[str, Any]:
    version = sys.version_info[:2]
    python = f"{version[0]}.{version[1]}"
    platform = PLATFORM_NAMES[sys.platform]
    command, command_args = python_command((version[0], version[1]))
    ordered = [DEFAULT_PROFILE, *(name for name in available if name != DEFAULT_PROFILE)]
    profiles = "; ".join(f"{name}: {PROFILE_BLURBS.get(name, 'see the mnemodb README')}" for name in ordered)
    return {
        "manifest_version": MANIFEST_VERSION,
        "name": BUNDLE_NAME,
        "display_name": "mnemodb",
        "version": meta["version"],
        "description": meta["description"],
        "long_description": (
            "Persistent, searchable memory for Claude, in one SQLite file on your computer. "
            f"Choose a **profile** (tool set): {profiles}. Every profile works on the same database.\n\n"
            f"The tools listed are those of the default profile, `{DEFAULT_PROFILE}`.\n\n"
            f"This bundle runs on {platform} with Python {python}, which must be installed "
            f"(the `{' '.join([command, *command_args])}` command); it contains compiled packages "
            "built for that Python and platform only."
        ),
        "author": dict(meta["authors"][0]),
        "license": meta["license"],
        "keywords": list(meta["keywords"]),
        "server": {
            "type": "python",
            "entry_point": ENTRY_POINT,
            "mcp_config": {
                "command": command,
                # -I -S: only the standard library and the bundle's lib, whatever the user's
                # Python has installed or PYTHON* variables say.
                "args": [
                    *command_args,
                    "-I",
                    "-S",
                    "${__dirname}/" + ENTRY_POINT,
                    "serve",
                    "--profile",
                    "${user_config.profile}",
                    "--db",
                    "${user_config.database_dir}/" + DATABASE_FILE,
                    "--scope",
                    "${user_config.scope}",
                ],
            },
        },
        "tools": tools,
        # The tools depend on the chosen profile.
        "tools_generated": True,
        "compatibility": {
            "platforms": [sys.platform],
            "runtimes": {"python": f">={python},<{version[0]}.{version[1] + 1}"},
        },
        "user_config": {
            "database_dir": {
                "type": "directory",
                "title": "Database folder",
                "description": (
                    f"The folder for the memory database ({DATABASE_FILE}); it is created if it does not exist. "
                    "Pick a memdb .memdb folder to keep using that database."
                ),
                "default": DEFAULT_DATABASE_DIR,
                "required": False,
            },
            "profile": {
                "type": "string",
                "title": "Profile",
                "description": f"Which tool set to serve. {profiles}.",
                "default": DEFAULT_PROFILE,
                "required": False,
            },
            "scope": {
                "type": "string",
                "title": "Scope",
                "description": (
                    'Where memories are written and read: "shared", or a ULID to keep a private set '
                    "apart from other agents that use the same database."
                ),
                "default": "shared",
                "required": False,
            },
        },
    }


def launcher() -> str:
    python = f"BUILT_FOR_PYTHON = ({sys.version_info[0]}, {sys.version_info[1]})"
    text = LAUNCHER.replace("BUILT_FOR_PYTHON = (0, 0)", python)
    return text.replace('BUILT_FOR_PLATFORM = ""', f"BUILT_FOR_PLATFORM = {sys.platform!r}")


def build(out_dir: Path) -> Path:
    """Build the bundle into `out_dir`; the path of the `.mcpb` file."""
    if sys.platform not in PLATFORM_NAMES:
        raise BuildError(f"MCP Bundles run on {', '.join(PLATFORM_NAMES)}; this is {sys.platform}")
    npx_path = npx()
    meta = project()
    with tempfile.TemporaryDirectory(prefix="mnemodb-mcpb-") as scratch:
        stage = Path(scratch) / "bundle"
        lib = stage / "server" / "lib"
        lib.mkdir(parents=True)
        print(f"installing mnemodb {meta['version']} and its dependencies for Python {sys.version.split()[0]}")
        install(lib, Path(scratch) / "wheels")
        available, tools = probe_profiles(lib)
        (stage / ENTRY_POINT).write_text(launcher(), encoding="utf-8")
        manifest_path = stage / "manifest.json"
        text = json.dumps(manifest(meta, available, tools), indent=2, ensure_ascii=False)
        manifest_path.write_text(text + "\n", encoding="utf-8")

        npx_mcpb = [npx_path, "--yes", MCPB_PACKAGE]
        print(f"validating manifest.json with {MCPB_PACKAGE}")
        run([*npx_mcpb, "validate", str(manifest_path)], "mcpb validate")
        out_dir.mkdir(parents=True, exist_ok=True)
        bundle = out_dir / f"{BUNDLE_NAME}-{meta['version']}.mcpb"
        print("packing with mcpb pack")
        run([*npx_mcpb, "pack", str(stage), str(bundle)], "mcpb pack")
    return bundle


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the mnemodb MCP Bundle (.mcpb) for Claude Desktop.")
    parser.add_argument(
        "--out-dir", type=Path, default=ROOT / "dist", help="where to write the bundle (default: dist/)"
    )
    args = parser.parse_args(argv)
    try:
        bundle = build(args.out_dir)
    except BuildError as exc:
        print(f"build_mcpb: {exc}", file=sys.stderr)
        return 1
    size = bundle.stat().st_size / (1024 * 1024)
    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    print(f"wrote {bundle} ({size:.1f} MiB), for Python {python} on {PLATFORM_NAMES[sys.platform]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
