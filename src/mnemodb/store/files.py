"""Files mnemodb makes: private by default, and replaced in one step.

A database holds every tenant's memories and the hashes of their tokens, and a backup or
an export holds the same, so what mnemodb creates is readable by its owner only (0600,
directories 0700), whatever the umask. A file that replaces another is written beside it
and renamed over it, so a failure never leaves the target half written. And a path that
names a FIFO or a device is refused before it is opened: opening a FIFO blocks until
someone writes to it, which would hang a command or a server start for good.

This module imports nothing of mnemodb's: every layer may use it.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "PRIVATE_DIR",
    "PRIVATE_FILE",
    "create_private_file",
    "make_private_dirs",
    "not_a_regular_file",
    "replaced_atomically",
    "same_file",
]

PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def not_a_regular_file(path: str | os.PathLike[str]) -> str | None:
    """What `path` is when it exists and is not a regular file ("a FIFO (named pipe)"...);
    None for a regular file (or a link to one) and for nothing at all."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def make_private_dirs(path: str | os.PathLike[str]) -> None:
    """Create `path` and any missing parents, each one private (0700); directories that
    exist are left as they are."""
    missing: list[Path] = []
    current = Path(path)
    while not current.exists() and current != current.parent:
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile by another process
            directory.mkdir(mode=PRIVATE_DIR)
            os.chmod(directory, PRIVATE_DIR)  # mkdir's mode is masked by the umask


def create_private_file(path: str | os.PathLike[str]) -> bool:
    """Create `path` empty and private (0600) unless something is there already. True when
    this call made it. An error (a read-only directory, say) is left for whoever opens the
    file next to report in its own words."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    except OSError:
        return False
    try:
        os.fchmod(fd, PRIVATE_FILE)  # the mode given to open() is masked by the umask
    finally:
        os.close(fd)
    return True


def same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """True when `a` and `b` name one file (through links too), or would once created."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()


@contextlib.contextmanager
def replaced_atomically(target: str | os.PathLike[str], *, keep_mode: bool = False) -> Iterator[Path]:
    """A private temporary file beside `target`, to fill; once the block ends without an
    error it is flushed to disk and renamed over `target` in one step (else removed, and
    `target` is as it was). With `keep_mode`, a file replaced keeps its permissions; a new
    one is private either way."""
    import tempfile

    destination = Path(target)
    make_private_dirs(destination.parent)
    fd, name = tempfile.mkstemp(prefix=f".{destination.name}.", suffix=".tmp", dir=destination.parent)
    os.close(fd)  # mkstemp makes it 0600
    temporary = Path(name)
    try:
        yield temporary
        with open(temporary, "rb+") as handle:
            os.fsync(handle.fileno())
        if keep_mode:
            with contextlib.suppress(FileNotFoundError):
                os.chmod(temporary, stat.S_IMODE(destination.stat().st_mode))
        os.replace(temporary, destination)
        with contextlib.suppress(OSError):  # the rename itself lasts once its directory is on disk
            directory = os.open(destination.parent, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
    finally:
        temporary.unlink(missing_ok=True)
