"""What starting and stopping `mnemodb serve` costs with the local embedding model installed.

For each case a fresh server is started over stdio with `--embedder local`, sent
`initialize` and one `survey`, left alone for `--idle` seconds, and then its stdin is
closed, as MCP clients do when they disconnect (the TypeScript SDK kills the server 4 s
later). Printed per case, medians over `--rounds`: the time from spawn to the
`initialize` reply, the server's CPU time and peak RSS (from the kernel, via wait4), and
the time from closing stdin until the process had exited.

Cases:
- `empty`: a new, empty database (nothing to embed, nothing to search by meaning);
- `pending`: a database with one memory written without an embedder, so the model is
  needed, and is still loading when stdin closes (with the default `--idle`);
- `embedded`: a database whose memories all have vectors already, where a search needs
  the model, but not before the first search.

`--pythonpath` runs the server from another source tree for a before/after comparison.

Usage: python bench/serve_lifecycle.py [--rounds 3] [--idle 1.0] [--pythonpath DIR] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}


def _env(pythonpath: str | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMDB_", "MNEMODB_"))}
    env["MNEMODB_LOG_LEVEL"] = "error"
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    env.update(extra)
    return env


def prepare(case: str, db: Path, pythonpath: str | None) -> None:
    """Make the case's database with the code under test."""
    if case == "empty":
        return
    run = [sys.executable, "-m", "mnemodb", "remember", "the deploy runs on fridays", "--db", str(db)]
    subprocess.run(run, check=True, capture_output=True, env=_env(pythonpath, MNEMODB_EMBEDDER="none"))
    if case == "embedded":
        reindex = [sys.executable, "-m", "mnemodb", "reindex", "--db", str(db)]
        subprocess.run(reindex, check=True, capture_output=True, env=_env(pythonpath, MNEMODB_EMBEDDER="local"))


def one_run(db: Path, idle: float, pythonpath: str | None) -> dict[str, float]:
    command = [sys.executable, "-m", "mnemodb", "serve", "--db", str(db), "--embedder", "local"]
    started = time.perf_counter()
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=_env(pythonpath)
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((json.dumps(INIT) + "\n").encode())
    proc.stdin.flush()
    proc.stdout.readline()
    first = time.perf_counter() - started
    for message in (
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "survey", "arguments": {}}},
    ):
        proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()
    proc.stdout.readline()
    time.sleep(idle)
    closed = time.perf_counter()
    proc.stdin.close()
    _, status, usage = os.wait4(proc.pid, 0)
    exited = time.perf_counter() - closed
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "first_answer_s": first,
        "exit_s": exited,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "status": float(proc.returncode),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--idle", type=float, default=1.0, help="seconds between the survey and closing stdin")
    parser.add_argument("--pythonpath", help="run the server from this source tree")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    figures: dict[str, dict[str, Any]] = {}
    for case in ("empty", "pending", "embedded"):
        runs = []
        for _ in range(args.rounds):
            with tempfile.TemporaryDirectory() as tmp:
                db = Path(tmp) / "memory.db"
                prepare(case, db, args.pythonpath)
                runs.append(one_run(db, args.idle, args.pythonpath))
        summary = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
        figures[case] = summary
        print(
            f"{case:9} first answer {summary['first_answer_s']:.2f} s, CPU {summary['cpu_s']:.1f} s, "
            f"peak RSS {summary['peak_rss_mb']:.0f} MB, exit {summary['exit_s']:.2f} s after stdin closed "
            f"(status {summary['status']:.0f})"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(figures))


if __name__ == "__main__":
    main()
