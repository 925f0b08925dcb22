"""`mnemodb import` holds every line to the rules the live writes apply, run as a real process.

A record a live write would refuse is a skipped line: its number and the reason on stderr
(`mnemodb: skipped line N: <reason>`) and in the `--json` errors, exit status 1, the other
lines imported; never a traceback, however the line is nested or whatever text it holds.
The same for server-memory files, which the knowledge-graph server also reads on start.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mnemodb.engine import Engine
from support import SCOPE_A, START_MS, RawServer, sha256

TIMEOUT_S = 60  # a hang guard only
DEEP = 200_000

SCOPE_B = "01HV7N8Q3Y2J6W5X4Z9A0B1C2E"
NODE_1 = "01HV7N8Q3Y2J6W5X4Z9A0B1C31"
NODE_2 = "01HV7N8Q3Y2J6W5X4Z9A0B1C32"
NODE_3 = "01HV7N8Q3Y2J6W5X4Z9A0B1C33"
NODE_4 = "01HV7N8Q3Y2J6W5X4Z9A0B1C34"
NODE_5 = "01HV7N8Q3Y2J6W5X4Z9A0B1C35"
NODE_6 = "01HV7N8Q3Y2J6W5X4Z9A0B1C36"
EDGE_1 = "01HV7N8Q3Y2J6W5X4Z9A0B1C41"
HEADER = {"type": "header", "format": "mnemodb", "version": 1, "seq": 0, "exported_at": START_MS}


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("MEMDB_", "MNEMODB_", "MEMORY_FILE"))}


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mnemodb", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        env=clean_env(),
        timeout=TIMEOUT_S,
        check=False,
    )


def refused(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    """A run that skipped lines: exit status 1, and no traceback."""
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1, (result.returncode, result.stderr)
    return result


def memory(node_id: str, content: str, scope: str = "shared") -> dict[str, Any]:
    return {
        "type": "node",
        "id": node_id,
        "scope": scope,
        "label": "Memory",
        "props": {},
        "created_at": START_MS,
        "updated_at": START_MS,
        "memory": {
            "hash": sha256(content),
            "content": content,
            "summary": None,
            "importance": 0,
            "memory_type": "general",
            "tags": [],
        },
    }


def entity(node_id: str, name: str) -> dict[str, Any]:
    return {
        "type": "node",
        "id": node_id,
        "scope": "shared",
        "label": "Entity",
        "props": {},
        "created_at": START_MS,
        "updated_at": START_MS,
        "entity": {"name": name, "entity_type": "person", "observations": []},
    }


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def export_file(tmp_path: Path) -> Path:
    """An export whose lines 3, 4, 7 and 8 break rules of the live writes."""
    records: list[dict[str, Any]] = [
        HEADER,
        memory(NODE_1, "first"),
        {k: v for k, v in memory(NODE_2, "no fields").items() if k != "memory"},  # 3
        entity(NODE_3, ""),  # 4
        memory(NODE_4, "in scope a", SCOPE_A),
        memory(NODE_5, "in scope b", SCOPE_B),
        {  # 7
            "type": "edge",
            "id": EDGE_1,
            "from": NODE_4,
            "to": NODE_5,
            "edge_type": "knows",
            "scope": SCOPE_A,
            "props": {},
            "valid_from": START_MS,
            "valid_to": None,
            "created_at": START_MS,
        },
        {  # 8
            "type": "embedding",
            "node": NODE_1,
            "model": "m",
            "dim": 3,
            "vector": "0000803f0000803f",
            "updated_at": START_MS,
        },
        entity(NODE_6, "Ada"),
    ]
    return write_lines(tmp_path / "export.jsonl", [json.dumps(r) for r in records])


EXPECTED = [
    (3, f"node {NODE_2}: a Memory node needs its memory fields"),
    (4, f"node {NODE_3}: entity name must not be empty"),
    (7, f"edge {EDGE_1}: cross-scope edge requires at least one shared endpoint"),
    (8, f"embedding of node {NODE_1}: its vector holds 8 bytes, not the 12 of 3 float32 values (dim)"),
]


def test_each_refused_record_is_a_skipped_line_on_stderr(tmp_path: Path) -> None:
    db = tmp_path / "fresh.db"
    result = refused(run(tmp_path, "import", str(export_file(tmp_path)), "--db", str(db)))
    assert result.stdout == "imported 4 records (0 already present)\n"
    assert result.stderr.splitlines() == [f"mnemodb: skipped line {line}: {reason}" for line, reason in EXPECTED]
    with Engine.open(str(db)) as engine:
        stats = engine.stats(scopes=["shared", SCOPE_A, SCOPE_B])
        assert (stats.memories, stats.entities, stats.nodes, stats.edges, stats.embeddings) == (3, 1, 4, 0, 0)
        assert engine.graph.open(["Ada"]).entities


@pytest.mark.parametrize("kind", ["mnemodb", "server-memory"])
def test_a_line_cut_short_is_reported_at_its_own_column(tmp_path: Path, kind: str) -> None:
    # The line ending was parsed with the line, so an error at its end was "column 1" (of
    # the line after it).
    first = {"type": "header", "format": "mnemodb", "version": 1} if kind == "mnemodb" else {"type": "entity",
        "name": "Ada", "entityType": "person", "observations": []}  # fmt: skip
    source = tmp_path / "cut.jsonl"
    source.write_text(json.dumps(first) + '\n{"broken": \r\n', encoding="utf-8")
    result = refused(run(tmp_path, "import", str(source), "--db", str(tmp_path / "fresh.db")))
    assert "mnemodb: skipped line 2: not JSON (Expecting value at column 12)" in result.stderr.splitlines()


def test_json_gives_each_refused_line_and_its_reason(tmp_path: Path) -> None:
    result = refused(run(tmp_path, "import", str(export_file(tmp_path)), "--json", "--db", str(tmp_path / "fresh.db")))
    assert result.stderr == ""
    assert json.loads(result.stdout) == {
        "written": 4,
        "unchanged": 0,
        "errors": [{"line": line, "reason": reason} for line, reason in EXPECTED],
    }


def test_a_line_nested_200000_deep_is_a_skipped_line_not_a_traceback(tmp_path: Path) -> None:
    deep = '{"type":"node","props":' + "[" * DEEP + "]" * DEEP + "}"
    source = write_lines(
        tmp_path / "deep.jsonl",
        [json.dumps(HEADER), json.dumps(memory(NODE_1, "first")), deep, json.dumps(entity(NODE_2, "Ada"))],
    )
    result = refused(run(tmp_path, "import", str(source), "--db", str(tmp_path / "a.db")))
    assert result.stdout == "imported 2 records (0 already present)\n"
    assert result.stderr == "mnemodb: skipped line 3: not JSON (nested too deeply)\n"
    report = json.loads(refused(run(tmp_path, "import", str(source), "--json", "--db", str(tmp_path / "b.db"))).stdout)
    assert report == {"written": 2, "unchanged": 0, "errors": [{"line": 3, "reason": "not JSON (nested too deeply)"}]}


def test_text_that_cannot_be_printed_is_escaped_in_the_report(tmp_path: Path) -> None:
    bad = {**memory(NODE_1, "first"), "id": "\ud800"}  # written by json.dumps as the escape \ud800
    source = write_lines(tmp_path / "surrogate.jsonl", [json.dumps(HEADER), json.dumps(bad)])
    expected = 'node: id "\\ud800" is not a ULID: invalid length 1 (a ULID has 26 characters)'
    text = refused(run(tmp_path, "import", str(source), "--db", str(tmp_path / "a.db")))
    assert text.stderr == f"mnemodb: skipped line 2: {expected}\n"
    report = json.loads(refused(run(tmp_path, "import", str(source), "--json", "--db", str(tmp_path / "b.db"))).stdout)
    assert report["errors"] == [{"line": 2, "reason": expected}]


def test_an_export_with_a_byte_order_mark_imports(tmp_path: Path) -> None:
    source = tmp_path / "bom.jsonl"
    source.write_bytes(b"\xef\xbb\xbf" + f"{json.dumps(HEADER)}\n{json.dumps(memory(NODE_1, 'first'))}\n".encode())
    result = run(tmp_path, "import", str(source), "--db", str(tmp_path / "a.db"))
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == "imported 1 records (0 already present)\n"


# -- server-memory files -------------------------------------------------------------------------------------

GOOD = '{"type":"entity","name":"Ada","entityType":"person","observations":["writes code"]}'
DEEP_LINE = "[" * DEEP + "]" * DEEP
DEEP_EXTRA = '{"type":"entity","name":"Bob","entityType":"person","observations":[],"x":' + DEEP_LINE + "}"
EMPTY_NAME = '{"type":"entity","name":"","entityType":"person","observations":[]}'
EMPTY_END = '{"type":"relation","from":"Ada","to":"","relationType":"knows"}'
SERVER_MEMORY = [DEEP_LINE, GOOD, DEEP_EXTRA, EMPTY_NAME, EMPTY_END]
SERVER_MEMORY_SKIPPED = [
    "line 1: not JSON (nested too deeply)",
    "line 3: not JSON (nested too deeply)",
    'line 4: entity "name" is empty',
    'line 5: relation "to" is empty',
]


def test_a_server_memory_file_nested_200000_deep_is_skipped_lines(tmp_path: Path) -> None:
    source = write_lines(tmp_path / "memory.jsonl", SERVER_MEMORY)
    db = tmp_path / "kg.db"
    result = refused(run(tmp_path, "import", str(source), "--db", str(db)))
    assert result.stdout == "imported 1 entity and 0 relations; skipped 4 lines\n"
    assert result.stderr.splitlines() == [f"mnemodb: skipped {line}" for line in SERVER_MEMORY_SKIPPED]
    with Engine.open(str(db)) as engine:
        assert [e.name for e in engine.graph.read().entities] == ["Ada"]


def test_the_knowledge_graph_server_starts_on_a_memory_file_nested_200000_deep(tmp_path: Path) -> None:
    write_lines(tmp_path / "memory.jsonl", SERVER_MEMORY)
    server = RawServer(
        [sys.executable, "-m", "mnemodb", "serve", "--profile", "knowledge-graph"],
        env={"MEMORY_FILE_PATH": "memory.jsonl", "MEMDB_LOG_LEVEL": "info"},
        cwd=tmp_path,
    )
    try:
        server.initialize()
        graph = server.call("read_graph", {})
        assert graph.get("isError") is not True, graph
        assert [e["name"] for e in graph["structuredContent"]["entities"]] == ["Ada"]
    finally:
        assert server.close() == 0
    assert "Traceback" not in server.stderr
    assert "imported 1 entity and 0 relations; skipped 4 lines (first: line 1: not JSON (nested too deeply)" in (
        server.stderr
    )
