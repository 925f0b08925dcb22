"""Over Streamable HTTP, each change names the token it was made with: the grant a request's
token gives is what `Engine.log` records as the change's actor."""

from __future__ import annotations

from pathlib import Path

from http_support import HttpServer
from mnemodb.engine import Engine
from native_support import Native


def test_a_change_made_with_a_token_names_it_and_one_made_without_names_nobody(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with Engine.open(str(db)) as engine:
        engine.memories.store("Written by the operator")
        _, secret = engine.tokens.create("ops-laptop")
    with HttpServer.start(db) as running, Native.connect(running.url, token=secret) as remote:
        [stored] = remote.call("remember", {"memories": [{"content": "Written with the laptop's token"}]})["memories"]
        # The native audit shows the log as it always did: who made a change is not in it.
        assert all("actor" not in change for change in remote.call("audit", {})["changes"])
    with Engine.open(str(db)) as engine:
        first, second = engine.changes()
        assert (first.actor, second.actor, second.target) == (None, "ops-laptop", stored["id"])
        assert [c.seq for c in engine.change_log.page(actors=["ops-laptop"]).changes] == [second.seq]
