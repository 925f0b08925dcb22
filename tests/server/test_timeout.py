"""The per-call time limit: a call past it answers E_TIMEOUT, changes nothing, and the server goes on."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from mnemodb.engine import Engine
from support import RawServer, serve_command


def test_a_write_blocked_past_the_limit_times_out_and_writes_nothing(db_path: Path) -> None:
    Engine.open(str(db_path)).close()  # create the schema first
    server = RawServer(serve_command(db_path), env={"MEMDB_TOOL_TIMEOUT_MS": "300"})
    blocker = sqlite3.connect(db_path, isolation_level=None)
    try:
        server.initialize()
        # Another writer holds the write lock for the whole call: the store cannot start.
        blocker.execute("BEGIN IMMEDIATE")
        result = server.call("store_memory", {"content": "blocked", "tags": ["t"]})
        assert result["isError"] is True
        assert result["structuredContent"] == {
            "ok": False,
            "error": {"code": "E_TIMEOUT", "message": "Tool execution timed out after 300ms"},
            "result": {"timeoutMs": 300},
        }
        blocker.execute("ROLLBACK")

        stats = server.call("memory_stats", {})
        assert stats["structuredContent"]["result"]["memoryCount"] == 0
        stored = server.call("store_memory", {"content": "after", "tags": ["t"]})
        assert stored["structuredContent"]["ok"] is True
    finally:
        blocker.close()
        assert server.close() == 0
    with Engine.open(str(db_path)) as engine:
        assert [c.op for c in engine.changes()] == ["create_node"]


def test_a_time_limit_of_zero_disables_it(db_path: Path) -> None:
    server = RawServer(serve_command(db_path), env={"MEMDB_TOOL_TIMEOUT_MS": "0"})
    try:
        server.initialize()
        items = [{"content": f"memory {i} " + "word " * 2000, "tags": ["bulk"]} for i in range(50)]
        result = server.call("store_memories", {"items": items})
        assert result["structuredContent"]["result"]["succeeded"] == 50
    finally:
        assert server.close() == 0
