"""The per-call time limit: a call past it answers E_TIMEOUT, changes nothing, and the server goes on."""

from __future__ import annotations

import argparse
import sqlite3
import threading
from pathlib import Path
from typing import Any

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


def test_a_result_is_shaped_on_a_worker_thread_not_on_the_event_loop(db_path: Path) -> None:
    """A whole graph's result is tens of megabytes of JSON to build: built on the event
    loop, it held up every other request (a 28 MB read_graph stalled /healthz for 3.8 s).
    The result is shaped and dumped where the tool ran, inside its time limit."""
    from anyio.from_thread import start_blocking_portal
    from mcp import Client

    from mnemodb.engine.graph import NewEntity
    from mnemodb.server import config
    from mnemodb.server.app import build_server
    from mnemodb.server.profiles import build_profile

    with Engine.open(str(db_path)) as engine:
        engine.graph.create_entities([NewEntity(f"entity {n}", "thing", (f"note {n}",)) for n in range(50)])
        profile = build_profile(
            "knowledge-graph", config.load(argparse.Namespace(profile="knowledge-graph", db=str(db_path)), {})
        )
        shaped_on: list[int] = []
        success = profile.success

        def recorded(tool: Any, value: Any) -> Any:
            shaped_on.append(threading.get_ident())
            return success(tool, value)

        profile.success = recorded  # type: ignore[method-assign]
        with start_blocking_portal() as portal:
            loop_thread = portal.call(threading.get_ident)
            with portal.wrap_async_context_manager(Client(build_server(profile, engine), mode="legacy")) as client:
                result = portal.call(client.call_tool, "read_graph", {})
    assert result.is_error is False
    assert isinstance(result.structured_content, dict) and len(result.structured_content["entities"]) == 50
    assert shaped_on and loop_thread not in shaped_on


def test_an_engine_error_naming_the_database_file_tells_a_token_only_its_name(tmp_path: Path) -> None:
    """Where the server keeps its files is the operator's business: an error that names
    the database (a file the server cannot open, say) names only the file under a token."""
    import anyio

    from mnemodb.engine.tokens import Grant, granted
    from mnemodb.model.errors import StoreUnavailable
    from mnemodb.server.app import run_in_worker

    db = tmp_path / "operator-home" / "team.db"
    with Engine.open(str(db)) as engine:
        where = engine.store.location

        def fails() -> None:
            raise StoreUnavailable(f"cannot open database {where}: unable to open database file")

        def told(grant: Grant | None) -> str:
            async def call() -> str:
                with granted(grant):
                    try:
                        await run_in_worker(engine, fails, 1000)
                    except StoreUnavailable as exc:
                        return str(exc)
                raise AssertionError("the error was not raised")

            return anyio.run(call)

        team = Grant("team", ("shared",), "shared", ("shared",))
        assert told(team) == "cannot open database team.db: unable to open database file"
        assert told(None) == f"cannot open database {where}: unable to open database file"
    assert "operator-home" in where
