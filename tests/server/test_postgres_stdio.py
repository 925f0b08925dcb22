"""Every profile served over stdio by real `mnemodb serve --db postgresql://...` processes:
a write by one process is read by the next, and what one profile writes the others read,
from one PostgreSQL schema. (The profiles' tools are tested one by one on PostgreSQL by
the in-process suite: `scripts/test` runs it with MNEMODB_TEST_STORE=postgresql.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from postgres_server import PostgresServer
from server.test_inprocess_matches_serve import ENV, FLAGS, READ, WRITE
from support import RawServer, serve_command

PROFILES = ["native", "memdb", "knowledge-graph", "topodb"]


@pytest.mark.parametrize("profile", PROFILES)
def test_a_profile_over_stdio_keeps_its_writes_in_postgresql(
    postgres: PostgresServer, tmp_path: Path, profile: str
) -> None:
    url = f"{postgres.url()}?schema=stdio_{profile.replace('-', '_')}"
    flags = FLAGS.get(profile, ())
    writer = RawServer(serve_command(url, profile, *flags), env=ENV, cwd=tmp_path)
    try:
        writer.initialize()
        written = writer.call(*WRITE[profile])
        assert written["isError"] is False, written
    finally:
        writer.close()
    reader = RawServer(serve_command(url, profile, *flags), env=ENV, cwd=tmp_path)
    try:
        reader.initialize()
        found = reader.call(*READ[profile])
        assert found["isError"] is False, found
        assert "Both" in found["content"][0]["text"], found
        assert "Traceback" not in reader.stderr
    finally:
        reader.close()
    assert list(tmp_path.iterdir()) == []  # no file was made beside the working directory


def test_what_one_profile_writes_another_reads(postgres: PostgresServer, tmp_path: Path) -> None:
    url = f"{postgres.url()}?schema=stdio_shared"
    memdb = RawServer(serve_command(url, "memdb"), env=ENV, cwd=tmp_path)
    try:
        memdb.initialize()
        stored = memdb.call("store_memory", {"content": "the staging database moved to PostgreSQL", "tags": ["ops"]})
        assert stored["isError"] is False, stored
    finally:
        memdb.close()
    native = RawServer(serve_command(url, "native"), env=ENV, cwd=tmp_path)
    try:
        native.initialize()
        found = native.call("recall", {"query": "staging database"})
        assert found["isError"] is False, found
        assert "the staging database moved to PostgreSQL" in found["content"][0]["text"]
    finally:
        native.close()
