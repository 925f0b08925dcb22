"""The layers of mnemodb, checked on the source: what each module may import, and that no
module reaches into another's private names.

From the bottom: the model (records, change-log ops, errors, validation rules, ids,
times), importing nothing above it; the store; search and graph algorithms; the engine; the server and
interop; the command line. A module imports from its own layer or below, never above,
deferred imports inside functions included. The test reads the files (it imports
nothing), so it also sees imports that only run on some paths.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "mnemodb"

# (layer, the module prefixes in it), bottom first.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("model", ("mnemodb", "mnemodb.model")),  # the package itself: its version, and nothing else
    ("store", ("mnemodb.store",)),
    ("algorithms", ("mnemodb.search", "mnemodb.graph")),
    ("engine", ("mnemodb.engine",)),
    ("faces to the world", ("mnemodb.server", "mnemodb.interop")),
    ("command line", ("mnemodb.cli", "mnemodb.__main__")),
)

# Imports that break the layering today, each with the step that removes it. The list may
# only shrink: an entry that no longer occurs fails the test too, so it is kept exact.
KNOWN: frozenset[tuple[str, str]] = frozenset()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def within(module: str, prefix: str) -> bool:
    """`module` is `prefix` or inside it (the package itself stands only for its own file)."""
    return module == prefix or (prefix != "mnemodb" and module.startswith(prefix + "."))


def layer_of(module: str) -> int:
    best, rank = -1, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if within(module, prefix) and len(prefix) > best:
                best, rank = len(prefix), index
    if rank < 0:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS")
    return rank


def modules() -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        yield module_name(path), ast.parse(path.read_text(encoding="utf-8"), str(path))


def imports(name: str, tree: ast.Module) -> Iterator[tuple[str, tuple[str, ...], int]]:
    """(imported module, names taken from it, line) for every import of mnemodb."""
    package = name if tree_is_package(name) else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "mnemodb":
                    yield alias.name, (), node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target.split(".")[0] != "mnemodb":
                continue
            names = []
            for alias in node.names:
                # `from package import module` imports the module, not the package.
                if tree_is_module(f"{target}.{alias.name}"):
                    yield f"{target}.{alias.name}", (), node.lineno
                else:
                    names.append(alias.name)
            if names:
                yield target, tuple(names), node.lineno


def tree_is_package(name: str) -> bool:
    return (SRC / Path(*name.split(".")) / "__init__.py").is_file()


def tree_is_module(name: str) -> bool:
    path = SRC / Path(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def test_every_module_imports_only_from_its_layer_or_below() -> None:
    found: set[tuple[str, str]] = set()
    for name, tree in modules():
        own = layer_of(name)
        for target, _, _ in imports(name, tree):
            if layer_of(target) > own:
                found.add((name, target))
    unexpected = sorted(found - KNOWN)
    assert not unexpected, "imports from a higher layer:\n" + "\n".join(f"  {a} imports {b}" for a, b in unexpected)
    gone = sorted(KNOWN - found)
    assert not gone, "no longer imported (remove from KNOWN):\n" + "\n".join(f"  {a} -> {b}" for a, b in gone)


def test_no_module_imports_another_module_s_private_name() -> None:
    found = [
        f"{name}:{line} imports {', '.join(n for n in names if n.startswith('_'))} from {target}"
        for name, tree in modules()
        for target, names, line in imports(name, tree)
        if target != name and any(n.startswith("_") and not n.startswith("__") for n in names)
    ]
    assert not found, "\n".join(found)


def test_no_module_reaches_into_the_engine_s_private_members() -> None:
    """`engine._x` outside the engine's own module: the engine's faces use its public core."""
    found = []
    for name, tree in modules():
        if name == "mnemodb.engine.engine":
            continue
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")):
                continue
            owner = node.value
            holder = owner.attr if isinstance(owner, ast.Attribute) else owner.id if isinstance(owner, ast.Name) else ""
            if holder in ("engine", "_engine"):
                found.append(f"{name}:{node.lineno} {holder}.{node.attr}")
    assert not found, "\n".join(found)


@pytest.mark.parametrize("bottom", LAYERS[0][1])
def test_the_model_imports_nothing_above_it(bottom: str) -> None:
    for name, tree in modules():
        if within(name, bottom):
            for target, _, line in imports(name, tree):
                assert layer_of(target) == 0, f"{name}:{line} imports {target}"


def test_the_store_loads_nothing_of_the_layers_above_it_nor_their_libraries() -> None:
    """Importing the SQLite store (what every command opens) loads neither the engine nor
    the search stack's numpy, regex and rapidfuzz."""
    probe = (
        "import sys, mnemodb.store.sqlite; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'regex', 'rapidfuzz', 'mcp') "
        "or m.startswith(('mnemodb.engine', 'mnemodb.search', 'mnemodb.server'))))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_no_face_imports_the_engine_s_composition_module() -> None:
    """The faces (memories, knowledge graph, property graph, items, embeddings, tokens…)
    are given the engine; they name its class for typing only, never import the module
    that composes them (which imports them)."""
    found = []
    for name, tree in modules():
        if not name.startswith("mnemodb.engine.") or name == "mnemodb.engine.engine":
            continue
        typing_only: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                typing_only.update(id(inner) for inner in ast.walk(node))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module == "mnemodb.engine.engine"
                and id(node) not in typing_only
            ):
                found.append(f"{name}:{node.lineno}")
    assert not found, "faces importing mnemodb.engine.engine at run time: " + ", ".join(found)


def test_every_write_above_the_store_opens_a_named_kind_of_transaction() -> None:
    """Above the store, a write opens `Engine.change()` (a caller's, gated and logged),
    `Engine.upkeep()` (derived data) or `Engine.administer()` (access tokens): only the
    engine's composition module opens the store's write transactions itself."""
    found = []
    for name, tree in modules():
        if name.startswith("mnemodb.store") or name == "mnemodb.engine.engine":
            continue
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr == "write" and "store" in ast.unparse(node.func.value):
                found.append(f"{name}:{node.lineno}")
    assert not found, "store.write() outside the engine's core: " + ", ".join(found)


def test_only_the_store_package_names_a_backend() -> None:
    """Above the store, a database is opened by location (`open_store`), never by naming a
    backend's module: a second store plugs in without a change above it."""
    found = [
        f"{name}:{line} imports {target}"
        for name, tree in modules()
        if not within(name, "mnemodb.store")
        for target, _, line in imports(name, tree)
        if within(target, "mnemodb.store.sqlite")
    ]
    assert not found, "backend modules imported above the store:\n" + "\n".join(found)


def test_only_the_composition_root_opens_a_store() -> None:
    """`open_store` is called from `Engine.open` only; every other path gets an engine."""
    found = []
    for name, tree in modules():
        if within(name, "mnemodb.store") or name == "mnemodb.engine.engine":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] == "open_store":
                found.append(f"{name}:{node.lineno}")
    assert not found, "open_store() called outside the composition root: " + ", ".join(found)


def test_the_store_contract_documents_every_method() -> None:
    """Every method of the store contract says what it does: its order, its scope
    filtering and what None means are what a second backend has to go on."""
    tree = ast.parse((PACKAGE / "store" / "base.py").read_text(encoding="utf-8"))
    methods = [
        f"{node.name}.{item.name}"
        for node in tree.body
        if isinstance(node, ast.ClassDef)
        for item in node.body
        if isinstance(item, ast.FunctionDef)
    ]
    undocumented = [
        f"{node.name}.{item.name}"
        for node in tree.body
        if isinstance(node, ast.ClassDef)
        for item in node.body
        if isinstance(item, ast.FunctionDef) and not ast.get_docstring(item)
    ]
    assert len(methods) > 80
    assert not undocumented, f"undocumented contract methods: {undocumented}"
