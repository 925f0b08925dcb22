"""Faults on the PostgreSQL store, through real `mnemodb serve --http` processes: a server
killed in the middle of its writes, and PostgreSQL itself restarted while serving.

What must hold is what was acknowledged: every write a client was told is done is there
afterwards, a batch is all there or not at all, and the change log says exactly what the
data holds. During an outage a client gets an answer that says to retry (503 with
Retry-After when the server cannot even ask who may call; a tool error that says so when a
call fails), never a hang or an internal error, and the servers find the database again
by themselves.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections import Counter
from collections.abc import Mapping
from typing import Any

from http_support import HttpServer
from mnemodb.engine import Engine
from postgres_server import PostgresServer

BATCH = 25
REPLY_TIMEOUT_S = 60.0


def call(port: int, tool: str, arguments: Mapping[str, Any]) -> tuple[bool, Any]:
    """One raw tools/call: (True, the structured result) or (False, the error text)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=REPLY_TIMEOUT_S)
    try:
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        connection.request(
            "POST",
            "/mcp",
            json.dumps(message).encode(),
            {
                "Host": f"127.0.0.1:{port}",
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2025-11-25",
            },
        )
        response = connection.getresponse()
        body = response.read()
    finally:
        connection.close()
    if response.status == 503:  # the server could not ask the database who may call
        assert response.getheader("Retry-After") == "1"
        return False, json.loads(body)["error_description"]
    assert response.status == 200, (response.status, body[:300])
    result = json.loads(body)["result"]
    if result.get("isError"):
        return False, result["content"][0]["text"]
    return True, result["structuredContent"]


def remember(port: int, contents: list[str]) -> tuple[bool, Any]:
    return call(port, "remember", {"memories": [{"content": c} for c in contents]})


def stored_memories(url: str) -> tuple[dict[str, str], list[str]]:
    """(memory id -> content, the targets of the change log's create_node entries)."""
    with Engine.open(url) as engine:
        records = list(engine.export())
        created = [c.target or "" for c in engine.changes() if c.op == "create_node"]
    memories = {r["id"]: r["memory"]["content"] for r in records if r["type"] == "node" and "memory" in r}
    return memories, created


def test_a_server_killed_in_the_middle_of_its_writes_loses_nothing_acknowledged(postgres: PostgresServer) -> None:
    url = f"{postgres.url()}?schema=killed_mid_write"
    Engine.open(url).close()
    acknowledged: dict[str, str] = {}
    failures: list[str] = []
    stop = threading.Event()
    with HttpServer.start(url) as server:

        def write(k: int) -> None:
            n = 0
            while not stop.is_set():
                n += 1
                batch = [f"writer {k} batch {n} item {i}" for i in range(BATCH)]
                try:
                    ok, reply = remember(server.port, batch)
                except (OSError, http.client.HTTPException):
                    return  # the server is gone
                if not ok:
                    failures.append(reply)
                    return
                for stored, content in zip(reply["memories"], batch, strict=True):
                    acknowledged[stored["id"]] = content

        writers = [threading.Thread(target=write, args=(k,), daemon=True) for k in range(4)]
        for thread in writers:
            thread.start()
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        while len(acknowledged) < 20 * BATCH and time.monotonic() < deadline and not failures:
            time.sleep(0.01)
        server.proc.kill()  # SIGKILL: no shutdown of any kind, writes in flight
        server.proc.wait()
        stop.set()
        for thread in writers:
            thread.join(REPLY_TIMEOUT_S)
    assert failures == []
    assert len(acknowledged) >= 20 * BATCH
    memories, created = stored_memories(url)
    assert {i: memories.get(i) for i in acknowledged} == acknowledged
    # Nothing half written: each batch is whole, and the log names exactly the memories there are.
    assert set(Counter(content.rsplit(" item ", 1)[0] for content in memories.values()).values()) == {BATCH}
    assert sorted(created) == sorted(memories)
    # The killed server's write lock went with its connection: the next writer goes straight on.
    with Engine.open(url) as engine, engine.time_limit(30):
        engine.memories.store("written after the kill")


def test_postgresql_restarted_while_serving_gives_retryable_errors_then_serves_again() -> None:
    database = PostgresServer().start()
    try:
        url = f"{database.url()}?schema=restarted&pool_timeout=2"
        Engine.open(url).close()
        acknowledged: dict[str, str] = {}
        with HttpServer.start(url) as server:

            def write(content: str) -> tuple[bool, Any]:
                ok, reply = remember(server.port, [content])
                if ok:
                    acknowledged[reply["memories"][0]["id"]] = content
                return ok, reply

            for i in range(10):
                assert write(f"before the restart {i}")[0]
            database.halt()
            during = [write(f"during the outage {i}") for i in range(3)]
            for ok, text in during:
                assert not ok
                assert "unavailable" in text and "retry" in text, text
            read_ok, read_text = call(server.port, "recall", {"query": "restart"})
            assert not read_ok and "retry" in read_text, read_text
            database.resume()
            # The server reconnects by itself: within seconds a call goes through again.
            deadline = time.monotonic() + 30
            while not write("the first after the restart")[0]:
                assert time.monotonic() < deadline, "the server did not reconnect"
                time.sleep(0.2)
            for i in range(10):
                assert write(f"after the restart {i}")[0]
            found_ok, found = call(server.port, "recall", {"query": "restart", "limit": 50})
            assert found_ok
            assert len(found["items"]) == len(acknowledged)
            assert server.stop() == 0
            assert "Traceback" not in server.stderr, server.stderr
        memories, created = stored_memories(url)
        assert memories == acknowledged
        assert sorted(created) == sorted(memories)
    finally:
        database.stop()
