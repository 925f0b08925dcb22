"""`mnemodb migrate SRC DST`: a whole database copied between SQLite and PostgreSQL, run as
the real command against a real PostgreSQL server (a schema of each test's own)."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import uuid
from pathlib import Path

from mnemodb.engine import Engine
from mnemodb.engine.graph import NewEntity, NewRelation
from mnemodb.engine.tokens import Grant, granted, token_digest
from postgres_server import PostgresServer

TIMEOUT_S = 120  # a hang guard only


def mnemodb(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMDB_", "MNEMODB_"))}
    return subprocess.run(
        [sys.executable, "-m", "mnemodb", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=TIMEOUT_S,
        check=False,
    )


def ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result


def schema_url(postgres: PostgresServer) -> str:
    return f"{postgres.url()}?schema=m_{uuid.uuid4().hex[:16]}"


def fill(path: Path) -> str:
    """A database with a bit of everything (memories, tags, entities, observations,
    relations, a closed one, an embedding, tokens, a scope name, a NUL in text, changes
    made under a token, an archived memory); the secret of its live token."""
    with Engine.open(str(path)) as engine:
        engine.memories.store("the deploy key rotates\x00 on the 1st", tags=["ops", "keys"], importance=7)
        engine.memories.store("lunch is at noon", memory_type="fact", summary="lunch", props={"w": 1.5})
        with granted(Grant("laptop", ("shared",), "shared", ("shared",))):
            engine.items.archive(engine.memories.store("the old office was on floor 2").memory.id)
        engine.graph.create_entities(
            [NewEntity("Ada", "person", ("writes code", "likes tea")), NewEntity("Babbage", "person")]
        )
        engine.graph.create_relations([NewRelation("Ada", "Babbage", "knows"), NewRelation("Ada", "Babbage", "met")])
        engine.graph.delete_relations([NewRelation("Ada", "Babbage", "met")])
        engine.graph.add_observations([("Babbage", ["built an engine"])])
        _, secret = engine.tokens.create("laptop")
        engine.tokens.create("old")
        engine.tokens.revoke("old")
        engine.name_scope("team-a")
        with engine.store.write() as tx:
            pk = tx.node_pks_with_labels(["Memory"])[0]
            tx.set_embedding(pk, "test-model", struct.pack("<2f", 0.5, -1.0), 2, engine.clock())
    return secret


def export_lines(cwd: Path, db: str) -> list[str]:
    lines = ok(mnemodb(cwd, "export", "--db", db)).stdout.splitlines()
    assert lines and '"type":"header"' in lines[0]
    return lines


def test_sqlite_to_postgresql_and_back_gives_the_same_export(tmp_path: Path, postgres: PostgresServer) -> None:
    source, back = tmp_path / "source.db", tmp_path / "back" / "copy.db"
    secret = fill(source)
    url = schema_url(postgres)
    there = ok(mnemodb(tmp_path, "migrate", str(source), url))
    assert "verified" in there.stdout
    ok(mnemodb(tmp_path, "migrate", url, str(back)))
    before, after = export_lines(tmp_path, str(source)), export_lines(tmp_path, str(back))
    # The header says when the export was taken; every record after it is the same, byte for byte.
    assert after[1:] == before[1:]
    kinds = [json.loads(line)["type"] for line in before[1:]]
    assert kinds == ["node"] * 5 + ["edge", "embedding"]
    assert sum('"archived_at"' in line for line in before) == 1
    assert export_lines(tmp_path, url)[1:] == before[1:]
    with Engine.open(str(source), read_only=True) as original, Engine.open(str(back), read_only=True) as copy:
        assert copy.changes() == original.changes()
        assert {c.actor for c in copy.changes()} == {None, "laptop"}
        assert [h.memory.content for h in copy.memories.search("office", include_archived=True)] == [
            "the old office was on floor 2"
        ]
        assert copy.memories.search("office") == []
        assert copy.current_seq() == original.current_seq() > 0
        assert copy.tokens.list(revoked=True) == original.tokens.list(revoked=True)
        assert copy.tokens.verify(secret) is not None
        assert copy.scope("team-a") == original.scope("team-a")
        assert copy.statistics.memory_totals() == original.statistics.memory_totals()
        assert copy.statistics.memories_per_scope() == original.statistics.memories_per_scope()
    with Engine.open(str(back), read_only=True) as copy, copy.store.read() as tx:
        assert tx.token_by_hash(token_digest(secret)) is not None


def test_postgresql_to_sqlite_into_a_new_file_with_json(tmp_path: Path, postgres: PostgresServer) -> None:
    source = tmp_path / "source.db"
    fill(source)
    url = schema_url(postgres)
    ok(mnemodb(tmp_path, "migrate", str(source), url))
    result = ok(mnemodb(tmp_path, "migrate", "--json", url, str(tmp_path / "new" / "copy.db")))
    report = json.loads(result.stdout)
    assert report["copied"]["tokens"] == 2 and report["copied"]["scope_names"] == 1
    assert report["rows"]["entities"] == 2 and report["rows"]["observations"] == 3
    assert len(report["sha256"]) == 64
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == ["copy.db"]


def test_a_target_that_holds_anything_is_refused_and_left_alone(tmp_path: Path, postgres: PostgresServer) -> None:
    source = tmp_path / "source.db"
    fill(source)
    url = schema_url(postgres)
    with Engine.open(url) as engine:
        engine.memories.store("already here")
    refused = mnemodb(tmp_path, "migrate", str(source), url)
    assert refused.returncode == 1
    assert "Traceback" not in refused.stderr
    assert "not empty" in refused.stderr
    with Engine.open(url, read_only=True) as engine:
        assert engine.statistics.memory_totals().memories == 1
        assert engine.current_seq() == 1
    # A file that holds anything is refused too.
    other = tmp_path / "other.db"
    with Engine.open(str(other)) as engine:
        engine.memories.store("mine")
    refused = mnemodb(tmp_path, "migrate", url, str(other))
    assert refused.returncode == 1 and "not empty" in refused.stderr


def test_the_same_database_or_a_missing_source_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "source.db"
    fill(source)
    same = mnemodb(tmp_path, "migrate", str(source), str(source))
    assert same.returncode == 1 and "same database" in same.stderr
    missing = mnemodb(tmp_path, "migrate", str(tmp_path / "nothing.db"), str(tmp_path / "copy.db"))
    assert missing.returncode == 1 and "no database" in missing.stderr
    assert not (tmp_path / "copy.db").exists()


def test_progress_is_reported_on_stderr(tmp_path: Path, postgres: PostgresServer) -> None:
    source = tmp_path / "source.db"
    fill(source)
    result = ok(mnemodb(tmp_path, "migrate", str(source), schema_url(postgres)))
    lines = [line for line in result.stderr.splitlines() if "migrating:" in line]
    assert lines, result.stderr
    done, total = lines[-1].rsplit(" ", 2)[-2].split("/")
    assert done == total and int(total) > 10


def test_sqlite_to_sqlite(tmp_path: Path) -> None:
    source, copy = tmp_path / "source.db", tmp_path / "copy.db"
    fill(source)
    ok(mnemodb(tmp_path, "migrate", str(source), str(copy)))
    assert export_lines(tmp_path, str(copy))[1:] == export_lines(tmp_path, str(source))[1:]
