"""Measurement helpers the benchmarks share: percentiles and a process tree's memory."""

from __future__ import annotations

import contextlib
import statistics
from collections.abc import Sequence
from pathlib import Path


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
