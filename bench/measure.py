"""Measurement helpers the benchmarks share: percentiles, a process tree's memory, reading
back a database file its writers have left, and the A/B benchmarks' child runs (one
source tree's measurement in a process of its own) and their spreads over rounds."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mnemodb.engine import Change, Engine


def p50(samples: Sequence[float]) -> float:
    return statistics.median(samples)


def p95(samples: Sequence[float]) -> float:
    if len(samples) < 2:
        return samples[0]
    return statistics.quantiles(samples, n=100, method="inclusive")[94]


def p99(samples: Sequence[float]) -> float:
    if len(samples) < 2:
        return samples[0]
    return statistics.quantiles(samples, n=100, method="inclusive")[98]


def _tree(pid: int) -> list[int]:
    """`pid` and all its descendants (a launcher script's child counts too)."""
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{current}/task").iterdir():
                with contextlib.suppress(OSError):
                    todo.extend(int(c) for c in (task / "children").read_text().split())
    return out


def _status_kb(pid: int, key: str) -> int:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def rss_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of the process tree in MiB."""
    pids = _tree(pid)
    return (
        sum(_status_kb(p, "VmRSS") for p in pids) / 1024,
        sum(_status_kb(p, "VmHWM") for p in pids) / 1024,
    )


@dataclass
class ReadBack:
    """A database file after its writers stopped: SQLite's own checks, its change log and
    its export."""

    integrity: list[str]
    """What `PRAGMA integrity_check` and `foreign_key_check` found wrong (empty when fine)."""
    gaps: list[int]
    """Change-log sequence numbers missing below the last one."""
    changes: list[Change]
    records: list[dict[str, Any]]

    @property
    def gap_text(self) -> str | None:
        if not self.gaps:
            return None
        return f"change log has gaps at seq {self.gaps[:10]} ({len(self.changes)} entries)"


def read_back(db: Path) -> ReadBack:
    integrity: list[str] = []
    conn = sqlite3.connect(db)
    try:
        result = conn.execute("PRAGMA integrity_check").fetchall()
        if result != [("ok",)]:
            integrity.append(f"integrity_check: {result[:5]}")
        broken = conn.execute("PRAGMA foreign_key_check").fetchall()
        if broken:
            integrity.append(f"foreign_key_check: {broken[:5]}")
    finally:
        conn.close()
    with Engine.open(str(db)) as engine:
        changes = list(engine.changes())
        records = list(engine.export())
    present = {c.seq for c in changes}
    gaps = [seq for seq in range(1, max(present, default=0) + 1) if seq not in present]
    return ReadBack(integrity, gaps, changes, records)


def fresh_copy(db: Path, copy: Path) -> None:
    """`db` copied to `copy`, without what an earlier, stopped run left beside the copy
    (its write-ahead log would be replayed into the fresh copy)."""
    for suffix in ("-wal", "-shm"):
        Path(str(copy) + suffix).unlink(missing_ok=True)
    shutil.copyfile(db, copy)


def run_child(script: Path, tree: Path, args: Sequence[str], *, show_stderr: bool = False) -> dict[str, Any]:
    """`script --child ARGS` run on the source tree `tree` (its `src` first on the path):
    the JSON object on the last line it prints. A failed child ends the benchmark with its
    stderr's tail; `show_stderr` passes a child's stderr on (a profile it printed)."""
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    done = subprocess.run(
        [sys.executable, str(script), "--child", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"child on {tree} failed:\n{done.stderr[-3000:]}")
    if show_stderr:
        print(done.stderr, file=sys.stderr)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def spread(values: Sequence[float], digits: int = 0, scale: float = 1.0) -> str:
    """Rounds' figures as `lowest-highest (median …)`, each times `scale`, to `digits` places."""
    ordered = [v * scale for v in sorted(values)]
    return f"{ordered[0]:.{digits}f}-{ordered[-1]:.{digits}f} (median {ordered[len(ordered) // 2]:.{digits}f})"
