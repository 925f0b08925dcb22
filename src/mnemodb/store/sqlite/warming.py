"""Bringing a database file into the machine's file cache when a server starts.

SQLite reads its file as it goes, a page at a time, and a page that is not in the
machine's file cache is a read from the disk. After a reboot, or on a machine that drops
cached file pages over time, a server's first searches on a 100,000-entity file waited on
the disk: the first native `recall` took 101-104 ms and the first twenty 22.6-23.9 ms
p50, against 17 ms and 5.7-6.2 ms with the file cached. `warm_files` asks the kernel to
read the files ahead (`posix_fadvise` with WILLNEED), a window at a time, since Linux
reads no more than a few megabytes for one call; the store runs it on a thread of its
own, so that the server answers at once. From the same cold file, with the first call a
second after the start (a model's first tool call comes later still): the first `recall`
18.7-19.1 ms and the first twenty 6.1-6.3 ms p50, against 91.6-102 and 18.9-20.4 ms
without. A call that comes at once may wait behind the reads asked for: the first took
12-21 ms in half the tries and 160-216 ms in the others (81-104 ms without), the next
nineteen were faster either way (3.5-5.6 ms p50). Reading a window at a time instead of
asking for it all did not spare the first call.

The descriptors opened for this are never closed. POSIX ties a process's record locks to
the file, not to a descriptor: closing any descriptor of a file releases every lock the
process holds on it, SQLite's included. A server's connections hold a shared lock on
the database file while they are open; with it gone, another process that closed its
last connection on the file took itself for the last user, checkpointed and deleted the
log, and the server no longer saw that process's later commits (a revoked token
reopened by `mnemodb token reopen` stayed refused). So one descriptor per file is kept
until the process ends; only the database file is warmed, since its log is small, just
written, and deleted and made again as connections come and go.

Files that would take more than a quarter of the memory available are left alone:
reading them through would push out what the machine caches for other programs, and most
of it would not stay. Where the kernel cannot be asked (no `posix_fadvise`, or no
`/proc/meminfo` to size it by), nothing is done.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from mnemodb.store.sqlite import descriptors

__all__ = ["WINDOW", "kept_descriptor", "memory_available", "warm_files"]

WINDOW = 8 << 20
"""Bytes asked for in one call: as much as Linux reads ahead for one (8 MB of a cold
265 MB file came in per call, 2 ms each)."""
_SHARE = 4
"""The files warmed take at most 1 / `_SHARE` of the memory available."""


def memory_available() -> int | None:
    """The memory the kernel could give without swapping (MemAvailable), in bytes, or None
    where it does not say."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def kept_descriptor(path: str) -> int | None:
    """This process's descriptor of the regular file at `path`, kept open until the process
    ends (see the module's note on locks); None for a path that names no regular file."""
    taken = descriptors.take(path)  # never given back
    return None if taken is None else taken[0]


def warm_files(paths: Sequence[str], stopped: Callable[[], bool], *, read: bool = False) -> int:
    """Ask the kernel to read each of `paths` into its file cache, in turn, a window at a
    time, until `stopped()`; a file that is missing, is not a regular file, or would take
    the files past their share of the memory available is passed over. The kernel reads
    what it is asked for after the call returns; with `read`, each window is read here
    instead, so the files are in the cache on return. The bytes asked for."""
    fadvise = getattr(os, "posix_fadvise", None)
    available = memory_available()
    if fadvise is None or available is None:
        return 0
    budget = available // _SHARE
    asked = 0
    for path in paths:
        fd = kept_descriptor(path)
        if fd is None:
            continue
        try:
            size = os.fstat(fd).st_size
            if asked + size > budget:
                continue
            for offset in range(0, size, WINDOW):
                if stopped():
                    return asked
                if read:
                    os.pread(fd, WINDOW, offset)
                else:
                    fadvise(fd, offset, min(WINDOW, size - offset), os.POSIX_FADV_WILLNEED)
            asked += size
        except OSError:
            continue
    return asked
