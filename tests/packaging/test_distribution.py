"""What `pip install mnemodb-mcp` will install: the sdist and the wheel are built from this
tree, the wheel is installed into a new virtual environment (its dependencies from the
package index, as a user's would come), and the installed `mnemodb` serves.

The distribution is named mnemodb-mcp because PyPI compares names with their dashes
removed and the unrelated mnemo-db holds "mnemodb"; the command and the import are
mnemodb, and `mnemodb-mcp` is a second command, so `uvx mnemodb-mcp` runs it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import tomllib
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemodb import __version__

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = out.glob("mnemodb_mcp-*.whl")
    (sdist,) = out.glob("mnemodb_mcp-*.tar.gz")
    yield wheel, sdist


def test_the_wheel_holds_the_package_and_its_commands(built: tuple[Path, Path]) -> None:
    wheel, _ = built
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        entry_points = archive.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert "mnemodb/__init__.py" in names and "mnemodb/search/minilm.py" in names
    assert not any(name.startswith(("tests/", "bench/")) for name in names)
    assert f"Name: {PROJECT['name']}" in metadata and f"Version: {__version__}" in metadata
    assert "Provides-Extra: embeddings" in metadata
    requirements = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert requirements and not any("torch" in line for line in requirements)  # the model runs without it
    for command in ("mnemodb = mnemodb.cli.main:main", "mnemodb-mcp = mnemodb.cli.main:main"):
        assert command in entry_points


def test_the_sdist_holds_what_a_build_needs(built: tuple[Path, Path]) -> None:
    _, sdist = built
    with tarfile.open(sdist) as archive:
        names = [name.split("/", 1)[1] for name in archive.getnames() if "/" in name]
    for needed in ("pyproject.toml", "README.md", "src/mnemodb/__init__.py", "CHANGELOG.md"):
        assert needed in names, needed


def test_the_installed_wheel_serves(built: tuple[Path, Path], tmp_path: Path) -> None:
    wheel, _ = built
    environment = tmp_path / "venv"
    venv.create(environment, with_pip=True)
    python = environment / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], check=True, timeout=600)
    for command in ("mnemodb", "mnemodb-mcp"):
        shown = subprocess.run(
            [str(environment / "bin" / command), "--version"], capture_output=True, text=True, check=True
        )
        assert shown.stdout.strip() == f"mnemodb {__version__}"
    reply = subprocess.run(
        [str(environment / "bin" / "mnemodb"), "serve", "--db", str(tmp_path / "memory.db")],
        input=json.dumps(INIT) + "\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        timeout=120,
        check=False,
    )
    answer = json.loads(reply.stdout.splitlines()[0])
    assert answer["result"]["serverInfo"] == {"name": "mnemodb", "version": __version__} | {
        k: v for k, v in answer["result"]["serverInfo"].items() if k not in ("name", "version")
    }
    assert reply.returncode == 0, reply.stderr
