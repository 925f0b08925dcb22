"""This process's own descriptors of a database's files, one per file, shared.

Closing any descriptor of a file releases every POSIX lock the process holds on it, and
SQLite's connections hold theirs on the database file and on the log's index (`-shm`)
while they are open. A descriptor mnemodb opens beside them (the checkpoint thread's of
the index, warming's of the database file) is therefore opened once per file in the
process, shared by whoever asks, and closed only when the last user gives it back: after
the stores' connections on the file are closed. A user that never gives it back keeps it
until the process ends.

This module imports nothing of mnemodb's.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading

__all__ = ["give_back", "take"]

Key = tuple[int, int]
"""A file's (device, inode)."""

_open: dict[Key, list[int]] = {}
"""Key -> [users, descriptor, descriptors opened on it by a race]; an entry with no user is
never closed."""
_lock = threading.Lock()


def take(path: str) -> tuple[int, Key] | None:
    """This process's descriptor of the regular file at `path` and its key, opened on
    first need; None if there is no regular file there to open."""
    with _lock:
        try:
            status = os.stat(path)
        except OSError:
            return None
        if not stat.S_ISREG(status.st_mode):
            return None
        key = (status.st_dev, status.st_ino)
        entry = _open.get(key)
        if entry is None:
            try:
                # Not blocking: a FIFO put in the file's place since it was looked at would
                # wait for a writer.
                fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
            except OSError:
                return None
            opened = os.fstat(fd)
            key = (opened.st_dev, opened.st_ino)
            entry = _open.get(key)
            if entry is None:
                entry = _open[key] = [0, fd]
            else:  # the file was replaced since it was looked at: kept with the other
                entry.append(fd)
            if not stat.S_ISREG(opened.st_mode):
                return None  # kept, never closed: closing is what must not happen
        entry[0] += 1
        return entry[1], key


def give_back(key: Key) -> None:
    """Done with the descriptor `take` gave for `key`: the last user closes it."""
    with _lock:
        entry = _open.get(key)
        if entry is None:
            return
        entry[0] -= 1
        if entry[0] > 0:
            return
        del _open[key]
        for fd in entry[1:]:
            with contextlib.suppress(OSError):
                os.close(fd)
