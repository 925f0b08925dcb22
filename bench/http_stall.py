"""How long one large result holds up everyone else on `mnemodb serve --http`.

A knowledge-graph database is seeded (through `Engine`) so that one `read_graph` answers
with a large result (about 28 MB of JSON at the default size), and a server is started on
it. One client asks for the whole graph, once per round, while another asks `/healthz`
every 10 ms on its own connection. Whatever the server does on its event loop rather than
on a worker thread (building the result, serialising it) is time no other request is
answered in; it shows as the longest `/healthz` reply during the big call.

Printed per round: the big call's round trip and reply size, and the longest and median
`/healthz` replies while it ran; then the medians over the rounds. `--pythonpath` runs the
server from another source tree (an older checkout, say) for a before/after comparison
with the same seed and client.

Usage: python bench/http_stall.py [--entities 20000] [--rounds 5] [--pythonpath DIR] [--json PATH]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from mnemodb.engine import Engine
from mnemodb.engine.graph import NewEntity

LISTENING = re.compile(r"listening on http://(\S+):(\d+)/mcp")
PROBE_INTERVAL_S = 0.01
WORD = "observation text that fills the graph with something to serialise "


def seed(db: Path, entities: int) -> None:
    with Engine.open(str(db)) as engine:
        batch = 1000
        for start in range(0, entities, batch):
            engine.graph.create_entities(
                [
                    NewEntity(f"entity {n}", "thing", tuple(f"{n} {k} {WORD * 3}" for k in range(5)))
                    for n in range(start, min(entities, start + batch))
                ]
            )


def start(db: Path, pythonpath: str | None) -> tuple[subprocess.Popen[str], int]:
    env = {**os.environ, "MNEMODB_EMBEDDER": "none"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    command = [sys.executable, "-m", "mnemodb", "serve", "--profile", "knowledge-graph", "--db", str(db)]
    command += ["--http", "--port", "0", "--log-level", "info", "--tool-timeout-ms", "120000"]
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stderr is not None
    deadline = time.monotonic() + 60
    for line in proc.stderr:
        match = LISTENING.search(line)
        if match:
            threading.Thread(target=lambda: [None for _ in proc.stderr or ()], daemon=True).start()
            return proc, int(match.group(2))
        if time.monotonic() > deadline:
            break
    proc.kill()
    raise SystemExit("the server did not start")


def read_graph(port: int) -> tuple[float, int]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "read_graph", "arguments": {}}}
    )
    headers = {
        "Host": f"127.0.0.1:{port}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }
    started = time.perf_counter()
    connection.request("POST", "/mcp", body, headers)
    response = connection.getresponse()
    data = response.read()
    took = time.perf_counter() - started
    connection.close()
    if response.status != 200 or b'"isError":true' in data[:200]:
        raise SystemExit(f"read_graph failed: {response.status} {data[:300]!r}")
    return took, len(data)


def probe(port: int, stop: threading.Event, out: list[float]) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    while not stop.is_set():
        started = time.perf_counter()
        connection.request("GET", "/healthz", headers={"Host": f"127.0.0.1:{port}"})
        connection.getresponse().read()
        out.append(time.perf_counter() - started)
        time.sleep(PROBE_INTERVAL_S)
    connection.close()


def one_round(port: int) -> dict[str, Any]:
    waits: list[float] = []
    stop = threading.Event()
    prober = threading.Thread(target=probe, args=(port, stop, waits))
    prober.start()
    time.sleep(0.2)
    before = len(waits)
    took, size = read_graph(port)
    during = waits[before:]
    stop.set()
    prober.join()
    return {
        "read_graph_s": took,
        "reply_mb": size / 1e6,
        "healthz_max_ms": max(during) * 1000 if during else float("nan"),
        "healthz_p50_ms": statistics.median(during) * 1000 if during else float("nan"),
        "probes": len(during),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entities", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pythonpath", help="run the server from this source tree")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "memory.db"
        seed(db, args.entities)
        proc, port = start(db, args.pythonpath)
        try:
            read_graph(port)  # warm up: pages in the file, first-call imports
            rounds = []
            for n in range(args.rounds):
                figures = one_round(port)
                rounds.append(figures)
                print(
                    f"round {n + 1}: read_graph {figures['read_graph_s']:.2f} s, {figures['reply_mb']:.1f} MB; "
                    f"/healthz during it: longest {figures['healthz_max_ms']:.0f} ms, "
                    f"median {figures['healthz_p50_ms']:.1f} ms over {figures['probes']} probes"
                )
        finally:
            proc.terminate()
            proc.wait(30)
    summary = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
    print(
        f"median of {args.rounds} rounds: read_graph {summary['read_graph_s']:.2f} s "
        f"({summary['reply_mb']:.1f} MB); longest /healthz while it ran {summary['healthz_max_ms']:.0f} ms"
    )
    if args.json:
        Path(args.json).write_text(json.dumps({"entities": args.entities, "rounds": rounds, "median": summary}))


if __name__ == "__main__":
    main()
