"""Many hosts, simulated: four `mnemodb serve --http` processes on one PostgreSQL schema,
as a team runs them behind a load balancer.

Fifty client threads send their calls round-robin over the four servers (each client
starting at a different one), with the plan and the ledgers of `test_http_concurrency`:
every write acknowledged is there at the end exactly once, nothing forgotten comes back,
every read right after a write — always through another server — sees it, each
raced-for shared memory and relation is made once, and the change log is gapless, in
each client's scope exactly its writes in its order, and its times never go back. A feed
reader polls the log from the test process the whole time, asking each time for what
comes after the last entry it saw: it must see every entry exactly once, which fails if
an entry ever commits after one with a higher number. Nothing here depends on timing.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from http_support import HttpServer
from mnemodb.engine import Engine
from postgres_server import PostgresServer
from server.test_http_concurrency import JOIN_TIMEOUT_S, Client, Ledger, verify

HOSTS = 4
CLIENTS = 50
# Calls per client: 60 in the suite (3,000 in all, about 40 s on two cores);
# MNEMODB_HOSTS_CALLS=500 runs the full 25,000.
CALLS = int(os.environ.get("MNEMODB_HOSTS_CALLS", "60"))


@dataclass
class Run:
    url: str
    logs: list[Ledger]
    exits: list[int]
    stderr: str
    fed: list[int]
    """The seq of every entry the feed reader saw, in the order it saw them."""


def follow(url: str, stop: threading.Event, fed: list[int], errors: list[str]) -> None:
    """Poll the change log for what comes after the last entry seen, until `stop`, then once more."""
    try:
        with Engine.open(url) as engine:
            while True:
                done = stop.is_set()
                fed.extend(c.seq for c in engine.changes(since_seq=(fed[-1] if fed else 0) + 1))
                if done:
                    return
                stop.wait(0.005)
    except Exception as exc:  # reported by the test
        errors.append(repr(exc))


@pytest.fixture(scope="module")
def run(postgres: PostgresServer) -> Iterator[Run]:
    url = f"{postgres.url()}?schema=many_hosts"
    # The schema is made once before the servers start, as an operator's first start would.
    Engine.open(url).close()
    servers = [HttpServer.start(url) for _ in range(HOSTS)]
    started = [server.__enter__() for server in servers]
    try:
        ports = [server.port for server in started]
        clients = [Client(i, ports[i % HOSTS :] + ports[: i % HOSTS], CALLS) for i in range(CLIENTS)]
        start = threading.Barrier(CLIENTS)
        stop = threading.Event()
        fed: list[int] = []
        feed_errors: list[str] = []
        feed = threading.Thread(target=follow, args=(url, stop, fed, feed_errors), daemon=True)
        feed.start()

        def body(client: Client) -> None:
            start.wait(JOIN_TIMEOUT_S)
            client.run()

        threads = [threading.Thread(target=body, args=(c,), daemon=True) for c in clients]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(JOIN_TIMEOUT_S * 5)
        assert not any(t.is_alive() for t in threads), "a client hung"
        stop.set()
        feed.join(JOIN_TIMEOUT_S)
        assert feed_errors == []
        exits = [server.stop() for server in started]
        yield Run(url, [c.log for c in clients], exits, "".join(s.stderr for s in started), fed)
    finally:
        for server in servers:
            server.__exit__(None, None, None)


def test_four_servers_on_one_postgresql_lose_duplicate_and_resurrect_nothing(run: Run) -> None:
    assert [e for log in run.logs for e in log.errors] == []
    assert [p for log in run.logs for p in log.problems] == []
    assert [log.calls for log in run.logs] == [CALLS] * CLIENTS
    assert run.exits == [0] * HOSTS
    assert "Traceback" not in run.stderr and "[ERROR]" not in run.stderr, run.stderr
    assert verify(run.url, run.logs) == []
    assert sum(log.checked for log in run.logs) >= CLIENTS * 10  # reads of own writes, checked


def test_a_feed_reader_sees_every_entry_once_in_order(run: Run) -> None:
    with Engine.open(run.url) as engine:
        logged = [c.seq for c in engine.changes()]
    assert len(logged) > CLIENTS * 10
    assert run.fed == logged
