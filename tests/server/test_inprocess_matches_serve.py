"""The in-process server the profile tests use (tests/inprocess.py) is the one `mnemodb serve`
runs: for every profile, a real process over stdio and the in-process server answer the
same requests with the same messages, and see the same writes in the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import inprocess
from support import RawServer, serve_command

# Run where no server-memory file can be picked up, with no file named in the environment.
ENV = {"MEMORY_FILE_PATH": ""}
FLAGS = {"topodb": ("--allow-unscoped-changes",)}
# One write per profile, so the two servers are compared on data too.
WRITE = {
    "native": ("remember", {"memories": [{"content": "Both servers see this"}]}),
    "memdb": ("store_memory", {"content": "Both servers see this", "tags": ["both"]}),
    "knowledge-graph": ("create_entities", {"entities": [{"name": "Both", "entityType": "t", "observations": []}]}),
    "topodb": ("create_memory", {"content": "Both servers see this"}),
}
READ = {
    "native": ("recall", {"query": "servers"}),
    "memdb": ("search_memories", {"query": "servers"}),
    "knowledge-graph": ("read_graph", {}),
    "topodb": ("search_memories", {"query": "servers"}),
}


def surface(server: RawServer | inprocess.Wire) -> list[dict[str, Any]]:
    """What a client sees of a server before it calls a tool."""
    replies = [server.initialize()]
    for method in ("tools/list", "resources/list", "resources/templates/list", "prompts/list"):
        replies.append(server.request(method))
    for reply in replies:
        reply.pop("id")
    return replies


@pytest.mark.parametrize("profile", ["native", "memdb", "knowledge-graph", "topodb"])
def test_the_in_process_server_answers_as_the_process_does(tmp_path: Path, profile: str) -> None:
    db = tmp_path / "memory.db"
    flags = FLAGS.get(profile, ())
    process = RawServer(serve_command(db, profile, *flags), env=ENV, cwd=tmp_path)
    try:
        over_stdio = surface(process)
        written = process.call(*WRITE[profile])
        assert written["isError"] is False, written
    finally:
        process.close()
    with inprocess.Wire.start(db, profile, *flags, env=ENV, cwd=tmp_path) as peer:
        assert surface(peer) == over_stdio
        # The process's write is in the file the in-process server opened.
        tool, arguments = READ[profile]
        found = peer.call(tool, arguments)
        assert found["isError"] is False, found
        assert "Both" in found["content"][0]["text"], found
