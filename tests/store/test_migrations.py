"""Opening older and foreign database files: schema upgrades, memdb files, refusals."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import sqlite3
import stat
import struct
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path

import pytest

from mnemodb.engine import Engine, InvalidArgument, StoreUnavailable
from mnemodb.engine.graph import NewEntity
from mnemodb.engine.properties import SetEmbedding
from mnemodb.model import ops
from mnemodb.model.times import epoch_ms
from mnemodb.store.sqlite import SqliteStore
from mnemodb.store.sqlite.changes import define_log_functions
from mnemodb.store.sqlite.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION
from support import SCOPE_A, sha256


def md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()


def ms(text: str) -> int:
    return epoch_ms(datetime.strptime(text, "%Y-%m-%d %H:%M:%S"))


@contextlib.contextmanager
def connect(path: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        yield conn
    finally:
        conn.close()


def pragma(path: Path, name: str) -> int | str:
    with connect(path) as conn:
        value: int | str = conn.execute(f"PRAGMA {name}").fetchone()[0]
        return value


def schema_objects(path: Path) -> set[str]:
    with connect(path) as conn:
        return {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}


def dump(path: Path) -> list[str]:
    with connect(path) as conn:
        return list(conn.iterdump())


# -- upgrading an older mnemodb schema ------------------------------------------------------------------------

T1 = 1_700_000_000_000
NODE_1 = "01HV7N8Q3Y2J6W5X4Z9A0B1C31"
NODE_2 = "01HV7N8Q3Y2J6W5X4Z9A0B1C32"
NODE_3 = "01HV7N8Q3Y2J6W5X4Z9A0B1C33"
EDGE_1 = "01HV7N8Q3Y2J6W5X4Z9A0B1C41"
OLD_CONTENT = {1: "Deploys run on Fridays", 2: "A private deployment note", 3: "The build uses uv"}


def make_old_database(path: Path, version: int) -> None:
    """A database at schema `version`, written the way that version's code wrote it, with v1-shaped rows."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with connect(path) as conn:
        for migration in MIGRATIONS[:version]:
            conn.executescript(migration)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {version}")
        conn.execute("BEGIN")
        nodes = [(1, NODE_1, "shared"), (2, NODE_2, SCOPE_A), (3, NODE_3, "shared")]
        for pk, node_id, scope in nodes:
            conn.execute(
                "INSERT INTO node (pk, id, scope, label, props, created_at, updated_at) "
                "VALUES (?, ?, ?, 'Memory', ?, ?, ?)",
                [pk, node_id, scope, json.dumps({"n": pk}), T1 + pk, T1 + pk],
            )
            conn.execute(
                "INSERT INTO memory (node, scope, hash, content, summary, importance, memory_type) "
                "VALUES (?, ?, ?, ?, NULL, ?, ?)",
                [pk, scope, sha256(OLD_CONTENT[pk]), OLD_CONTENT[pk], pk + 4, "fact"],
            )
        conn.executemany(
            "INSERT INTO memory_tag (node, tag) VALUES (?, ?)",
            [(1, "deploy"), (1, "schedule"), (2, "deploy"), (3, "build")],
        )
        conn.execute(
            "INSERT INTO edge (pk, id, src, dst, type, scope, props, valid_from, valid_to, created_at) "
            "VALUES (1, ?, 3, 1, 'precedes', 'shared', '{}', ?, NULL, ?)",
            [EDGE_1, T1, T1],
        )
        for seq, (target, op) in enumerate([(NODE_1, "create_node"), (NODE_2, "create_node"), (NODE_3, "create_node")]):
            conn.execute(
                "INSERT INTO change_log (seq, at, scope, op, target, data) VALUES (?, ?, 'shared', ?, ?, '{}')",
                [seq + 1, T1, op, target],
            )
        conn.execute("INSERT INTO change_log (seq, at, scope, op, target, data) VALUES (4, ?, 'shared', ?, ?, '{}')",
                     [T1, "create_edge", EDGE_1])  # fmt: skip
        conn.execute("COMMIT")


@pytest.mark.parametrize("version", [1, 2])
def test_an_older_schema_is_upgraded_and_its_data_readable(db_path: Path, version: int) -> None:
    make_old_database(db_path, version)
    with Engine.open(str(db_path)) as engine:
        assert pragma(db_path, "user_version") == SCHEMA_VERSION
        assert pragma(db_path, "application_id") == APPLICATION_ID

        deploys = engine.memories.get(sha256(OLD_CONTENT[1]))
        assert deploys is not None
        assert (deploys.pk, deploys.id, deploys.scope) == (1, NODE_1, "shared")
        assert (deploys.tags, deploys.importance, deploys.memory_type) == (("deploy", "schedule"), 5, "fact")
        assert (deploys.created_at, dict(deploys.props)) == (T1 + 1, {"n": 1})
        assert engine.memories.get(sha256(OLD_CONTENT[2])) is None
        private = engine.memories.get(sha256(OLD_CONTENT[2]), scopes=[SCOPE_A])
        assert private is not None
        assert private.tags == ("deploy",)

        assert [h.memory.pk for h in engine.memories.search("deploying")] == [1]
        assert [h.memory.pk for h in engine.memories.search("schedule")] == [1]
        assert [(lk.edge.id, lk.edge.type) for lk in engine.memories.links(sha256(OLD_CONTENT[3]))] == [
            (EDGE_1, "precedes")
        ]
        assert [r.memory.pk for r in engine.memories.recall("build", 1).memories] == [3, 1]

        stats = engine.stats()
        assert (stats.memories, stats.tags, stats.edges, stats.nodes) == (2, 3, 1, 2)
        assert engine.stats(scopes=[SCOPE_A]).tags == 1
        assert engine.stats(scopes=[SCOPE_A, "shared"]).tags == 3
        assert engine.current_seq() == 4
        with engine.store.read() as tx:
            assert (tx.count_memories(["shared"]), tx.count_memories([SCOPE_A])) == (2, 1)
            assert tx.count_tags(["shared"]) == 3

        # The upgraded file takes new writes of every kind, and its counters stay right.
        new = engine.memories.store("A new memory", ["deploy"]).memory
        assert new.pk == 4
        engine.graph.create_entities([NewEntity("Ops", "team", ("runs deploys",))])
        engine.memories.get(new.hash)
        engine.access.flush()
        engine.memories.delete(sha256(OLD_CONTENT[1]))
        stats = engine.stats()
        assert (stats.memories, stats.tags, stats.entities, stats.observations) == (2, 2, 1, 1)
        with engine.store.read() as tx:
            assert tx.count_memories(["shared"]) == 2
        assert [c.seq for c in engine.changes()] == list(range(1, 8))
    with Engine.open(str(db_path)) as again:
        assert again.stats().memories == 2


def test_embeddings_and_their_logged_vectors_survive_the_move_to_a_rowid_table(db_path: Path) -> None:
    make_old_database(db_path, 5)
    vector = struct.pack("<3f", 0.5, -0.25, 1.0)
    with connect(db_path) as conn:
        conn.execute(
            "INSERT INTO embedding (node, model, dim, vector, updated_at) VALUES (1, 'm', 3, ?, ?)", [vector, T1]
        )
        conn.execute(
            "INSERT INTO change_log (seq, at, scope, op, target, data) VALUES (5, ?, 'shared', 'set_embedding', ?, ?)",
            [T1, NODE_1, json.dumps({"id": NODE_1, "model": "m", "vector": [0.5, -0.25, 1.0]})],
        )
    with Engine.open(str(db_path)) as engine:
        with connect(db_path) as conn:
            ddl = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'embedding'").fetchone()[0]
        assert "WITHOUT ROWID" not in ddl
        hits = engine.nodes.search_vectors("m", [0.5, -0.25, 1.0], k=5, scopes=["shared"])
        assert [(node.id, round(score, 6)) for node, score in hits] == [(NODE_1, 1.0)]
        # Entries logged before the upgrade hold a list; new ones hold base64 float32: both read alike.
        engine.nodes.submit([SetEmbedding(NODE_3, "m", (1.0, 0.0, -0.125))])
        logged = [c for c in engine.changes() if c.op == ops.SET_EMBEDDING]
        assert [ops.embedding_vector(c.data) for c in logged] == [[0.5, -0.25, 1.0], [1.0, 0.0, -0.125]]
        assert "vector" not in logged[1].data
        with pytest.raises(InvalidArgument, match="does not match existing slab dim 3"):
            engine.nodes.submit([SetEmbedding(NODE_3, "m", (1.0, 0.0))])


def test_vectors_from_before_node_versions_keep_whether_they_were_current(db_path: Path) -> None:
    """Schema 9 tells a stale vector by counting changes, not by comparing times. A vector
    written before the upgrade for its node's latest text stays current; one older than its
    node's last change stays stale; the search matrix starts from all of them."""
    make_old_database(db_path, 8)
    with connect(db_path) as conn:
        for pk, made in ((1, T1 + 1), (3, T1)):  # node 3 changed at T1 + 3, after its vector
            conn.execute(
                "INSERT INTO embedding (node, model, dim, vector, updated_at) VALUES (?, 'm', 3, ?, ?)",
                [pk, struct.pack("<3f", float(pk), 0.0, 1.0), made],
            )
    with Engine.open(str(db_path)) as engine, engine.store.read() as tx:
        assert tx.unembedded("m", ["Memory"], 10) == [2, 3]
        assert tx.embedding_coverage("m", ["Memory"]) == (1, 3)
        assert tx.embedding_changes("m")[1] == 0
        hits = engine.nodes.nearest(tx, "m", [1.0, 0.0, 1.0], k=5, scopes=["shared"])
        assert [pk for pk, _ in hits] == [1, 3]


def test_memories_from_before_turns_are_still_found_by_the_native_search(db_path: Path) -> None:
    make_old_database(db_path, 6)
    with Engine.open(str(db_path)) as engine:
        found = engine.items.search("deploys", kinds=["memory"], scopes=["shared", SCOPE_A]).found
        assert [f.item.pk for f in found] == [1]


def test_tokens_of_schema_10_write_only_their_write_scope_and_keep_the_server_closed(db_path: Path) -> None:
    """Schema 10 kept one list of scopes for reading and writing; its tokens wrote only
    their default write scope in practice. After the upgrade that is what they may write,
    a read-only one writes nothing, and a database that had tokens keeps requiring one."""
    make_old_database(db_path, 10)
    with connect(db_path) as conn:
        rows = [
            ("01HV7N8Q3Y2J6W5X4Z9A0B1C51", "team", json.dumps([SCOPE_A, "shared"]), SCOPE_A, 0, None),
            ("01HV7N8Q3Y2J6W5X4Z9A0B1C52", "reader", json.dumps(["shared"]), "shared", 1, None),
            ("01HV7N8Q3Y2J6W5X4Z9A0B1C53", "gone", json.dumps(["shared"]), "shared", 0, T1),
        ]
        conn.executemany(
            "INSERT INTO access_token (id, name, hash, read_scopes, write_scope, read_only, created_at, revoked_at) "
            f"VALUES (?, ?, ?, ?, ?, ?, {T1}, ?)",
            [(i, n, sha256(n), r, w, ro, rev) for i, n, r, w, ro, rev in rows],
        )
    with Engine.open(str(db_path)) as engine:
        tokens = {t.name: t for t in engine.tokens.list(revoked=True)}
        assert (tokens["team"].read_scopes, tokens["team"].write_scopes) == ((SCOPE_A, "shared"), (SCOPE_A,))
        assert (tokens["reader"].write_scopes, tokens["reader"].read_only) == ((), True)
        assert tokens["gone"].write_scopes == ("shared",)
        engine.tokens.revoke("team")
        engine.tokens.revoke("reader")
        assert engine.tokens.required() is True


def test_a_schema_10_database_that_never_had_tokens_stays_open(db_path: Path) -> None:
    make_old_database(db_path, 10)
    with Engine.open(str(db_path)) as engine:
        assert engine.tokens.required() is False


def _insert_old_entities(
    conn: sqlite3.Connection, entities: Sequence[tuple[int, str, list[str]]], *, words: bool = False
) -> None:
    """Entities (pk, name, observations) as an older schema's code wrote them, with the
    word index's rows when that schema had one (`words`)."""
    conn.execute("BEGIN")
    for pk, name, observations in entities:
        conn.execute(
            "INSERT INTO node (pk, id, scope, label, props, created_at, updated_at) "
            "VALUES (?, ?, 'shared', 'Entity', '{}', ?, ?)",
            [pk, f"01HV7N8Q3Y2J6W5X4Z9A0B1C{pk + 50}", T1, T1],
        )
        conn.execute("INSERT INTO entity (node, scope, name, entity_type) VALUES (?, 'shared', ?, 'x')", [pk, name])
        conn.execute(
            "INSERT INTO entity_text (rowid, name, type, obs, items) VALUES (?, ?, 'x', ?, ?)",
            [pk, name, " ".join(observations), json.dumps(observations)],
        )
        if words:
            conn.execute(
                "INSERT INTO entity_words (rowid, name, type, obs) VALUES (?, ?, 'x', ?)",
                [pk, name, " ".join(observations)],
            )
    conn.execute("COMMIT")


def test_entities_of_schema_11_are_found_by_their_words_and_forgotten_when_deleted(db_path: Path) -> None:
    """Schema 12 indexes entities by words over the substring index's text: the entities an
    older file holds are in it at once, and it follows every later change of them."""
    make_old_database(db_path, 11)
    with connect(db_path) as conn:
        _insert_old_entities(conn, [(10, "Tom Becker", ["prefers phone calls"]), (11, "Customer Desk", [])])

    def found(engine: Engine, query: str) -> list[str]:
        return [f.item.name for f in engine.items.search(query, kinds=["entity"]).found]  # type: ignore[union-attr]

    with Engine.open(str(db_path)) as engine:
        assert found(engine, "how should I call Tom") == ["Tom Becker"]
        assert found(engine, "phone calling") == ["Tom Becker"]
        engine.graph.add_observations([("Customer Desk", ["answers the phone"])])
        engine.graph.delete_entities(["Tom Becker"])
        assert found(engine, "phone") == ["Customer Desk"]
    with connect(db_path) as conn:
        conn.execute("INSERT INTO entity_words (entity_words) VALUES ('integrity-check')")


def test_entities_of_schema_17_are_found_by_their_names_alone(db_path: Path) -> None:
    """Schema 18 indexes names apart from the rest of an entity's text: the names an older
    file holds are in it at once, and it follows later renames and deletions."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    with connect(db_path) as conn:
        define_log_functions(conn)
        for migration in MIGRATIONS[:17]:
            conn.executescript(migration)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute("PRAGMA user_version = 17")
        _insert_old_entities(conn, [(10, "Tom Becker", ["knows Rebecca"]), (11, "Rebecca Stone", [])], words=True)

    def named(engine: Engine, query: str) -> list[str]:
        return sorted(e.name for e in engine.graph.search(query).entities)

    with Engine.open(str(db_path)) as engine:
        assert pragma(db_path, "user_version") == SCHEMA_VERSION
        assert named(engine, "name:becca") == ["Rebecca Stone"]
        assert named(engine, "becca") == ["Rebecca Stone", "Tom Becker"]
        engine.graph.delete_entities(["Rebecca Stone"])
        assert named(engine, "name:becca") == []
        assert named(engine, "name:becker") == ["Tom Becker"]
    with connect(db_path) as conn:
        conn.execute("INSERT INTO entity_name_text (entity_name_text) VALUES ('integrity-check')")
        tom = conn.execute("SELECT rowid FROM entity_name_text WHERE entity_name_text MATCH 'tom'").fetchall()
        assert tom == [(10,)]


def test_a_schema_13_log_keeps_every_entry_with_no_actor_and_its_memories_can_be_archived(db_path: Path) -> None:
    """Schema 14 adds who made each change and archived memories: every entry an older file
    holds stays as it was, made by nobody known, and no memory is archived until one is."""
    make_old_database(db_path, 13)
    with connect(db_path) as conn:
        before = conn.execute("SELECT seq, at, scope, op, target, data FROM change_log ORDER BY seq").fetchall()
    with Engine.open(str(db_path)) as engine:
        assert pragma(db_path, "user_version") == SCHEMA_VERSION
        log = engine.changes()
        assert [(c.seq, c.at, c.scope, c.op, c.target, json.dumps(dict(c.data))) for c in log] == before
        assert [c.actor for c in log] == [None] * len(before)
        page = engine.change_log.page(every_scope=True, actors=[None])
        assert [c.seq for c in page.changes] == [4, 3, 2, 1]
        assert engine.memories.get(sha256(OLD_CONTENT[1])).archived_at is None  # type: ignore[union-attr]
        assert [h.memory.pk for h in engine.memories.search("deploys")] == [1]
        archived = engine.items.archive(sha256(OLD_CONTENT[1]))
        assert archived.archived_at is not None
        assert engine.memories.search("deploys") == []
        assert [h.memory.pk for h in engine.memories.search("deploys", include_archived=True)] == [1]
        assert engine.changes()[-1].op == "archive_node"
    assert {"change_log_scope_at", "change_log_actor_at", "memory_archived_update"} <= schema_objects(db_path)


def test_a_new_database_is_created_at_the_latest_version(db_path: Path) -> None:
    with Engine.open(str(db_path)) as engine:
        engine.memories.store("first")
    assert pragma(db_path, "user_version") == SCHEMA_VERSION
    assert pragma(db_path, "application_id") == APPLICATION_ID
    assert str(pragma(db_path, "journal_mode")).lower() == "wal"


def test_an_empty_file_becomes_a_database(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(b"")
    with Engine.open(str(db_path)) as engine:
        assert engine.memories.store("into an empty file").is_new
    assert pragma(db_path, "user_version") == SCHEMA_VERSION


# -- migrating a file made by memdb ------------------------------------------------------------------------------

# memdb's schema, exactly as memdb executes it on every open.
MEMDB_SCHEMA = """
PRAGMA journal_mode = WAL;
PRAGMA synchronous = NORMAL;

CREATE TABLE IF NOT EXISTS memories (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  content TEXT NOT NULL,
  summary TEXT,
  importance INTEGER DEFAULT 0,
  memory_type TEXT DEFAULT 'general',
  created_at TEXT DEFAULT CURRENT_TIMESTAMP,
  accessed_at TEXT DEFAULT CURRENT_TIMESTAMP,
  hash TEXT UNIQUE NOT NULL
) STRICT;

CREATE TABLE IF NOT EXISTS tags (
  memory_id INTEGER NOT NULL,
  tag TEXT NOT NULL,
  PRIMARY KEY (memory_id, tag),
  FOREIGN KEY (memory_id) REFERENCES memories(id) ON DELETE CASCADE
) STRICT;

CREATE INDEX IF NOT EXISTS idx_tags_tag_memory_id ON tags(tag, memory_id);

CREATE TABLE IF NOT EXISTS relationships (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  from_memory_id INTEGER NOT NULL,
  to_memory_id INTEGER NOT NULL,
  relation_type TEXT NOT NULL,
  created_at TEXT DEFAULT CURRENT_TIMESTAMP,
  FOREIGN KEY (from_memory_id) REFERENCES memories(id) ON DELETE CASCADE,
  FOREIGN KEY (to_memory_id) REFERENCES memories(id) ON DELETE CASCADE,
  UNIQUE(from_memory_id, to_memory_id, relation_type)
) STRICT;

CREATE INDEX IF NOT EXISTS idx_relationships_to_memory_id ON relationships(to_memory_id);

CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
  content,
  summary,
  content_rowid='id'
);

CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN
  INSERT INTO memories_fts(rowid, content, summary)
  VALUES (new.id, new.content, new.summary);
END;

CREATE TRIGGER IF NOT EXISTS memories_au AFTER UPDATE ON memories BEGIN
  DELETE FROM memories_fts WHERE rowid = old.id;
  INSERT INTO memories_fts(rowid, content, summary)
  VALUES (new.id, new.content, new.summary);
END;

CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN
  DELETE FROM memories_fts WHERE rowid = old.id;
END;
"""

MEMDB_OBJECTS = {
    "memories",
    "tags",
    "relationships",
    "memories_fts",
    "memories_fts_data",
    "memories_fts_idx",
    "memories_fts_content",
    "memories_fts_docsize",
    "memories_fts_config",
    "memories_ai",
    "memories_au",
    "memories_ad",
    "idx_tags_tag_memory_id",
    "idx_relationships_to_memory_id",
}

BUILD = "The build uses uv"
DEPLOY = "Deploys run on Fridays"
CAFE = "The café opens at nine"
LAST = "Backups are taken nightly"

# id, content, hash, importance, memory_type, created_at, accessed_at
MEMDB_MEMORIES = [
    (1, BUILD, md5(BUILD), 3, "fact", "2023-05-01 10:00:00", "2023-05-01 10:00:00"),  # MD5 era
    (2, DEPLOY, sha256(DEPLOY), 8, "decision", "2024-01-02 03:04:05", "2024-03-01 12:00:00"),
    (3, CAFE, md5(CAFE), 0, "general", "2023-06-01 08:30:00", "2023-06-01 08:30:00"),  # MD5 era
    (4, BUILD, sha256(BUILD), 9, "plan", "2024-02-02 02:02:02", "2024-02-02 02:02:02"),  # same content, SHA era
    (5, "deleted in memdb", sha256("deleted in memdb"), 0, "general", "2024-02-03 00:00:00", "2024-02-03 00:00:00"),
    (6, LAST, sha256(LAST), 10, "lesson", "2024-02-04 00:00:00", "2024-02-04 00:00:00"),
    (7, "deleted last", sha256("deleted last"), 0, "general", "2024-02-05 00:00:00", "2024-02-05 00:00:00"),
]
MEMDB_TAGS = [(1, "build"), (1, "tooling"), (2, "deploy"), (4, "tooling"), (4, "python"), (6, "ops")]
# id, from, to, type, created_at
MEMDB_RELATIONSHIPS = [
    (1, 1, 2, "supports", "2024-03-01 00:00:00"),
    (2, 4, 2, "supports", "2024-03-02 00:00:00"),  # the same link once the duplicate is merged
    (3, 2, 3, "follows", "2024-03-03 00:00:00"),
    (4, 4, 1, "same_as", "2024-03-04 00:00:00"),  # a link of the memory to itself once merged
    (5, 3, 4, "mentions", "2024-03-05 00:00:00"),
    (6, 6, 2, "deleted", "2024-03-06 00:00:00"),
]


def make_memdb_database(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with connect(path) as conn:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.executescript(MEMDB_SCHEMA)
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO memories (id, content, hash, importance, memory_type, created_at, accessed_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            MEMDB_MEMORIES,
        )
        conn.executemany("INSERT INTO tags (memory_id, tag) VALUES (?, ?)", MEMDB_TAGS)
        conn.executemany(
            "INSERT INTO relationships (id, from_memory_id, to_memory_id, relation_type, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            MEMDB_RELATIONSHIPS,
        )
        # Deleted in memdb: ids 5 and 7 and relationship 6 were seen by clients and are never reused there.
        conn.execute("DELETE FROM relationships WHERE id = 6")
        conn.execute("DELETE FROM memories WHERE id IN (5, 7)")
        conn.execute("COMMIT")
        assert dict(conn.execute("SELECT name, seq FROM sqlite_sequence")) == {"memories": 7, "relationships": 6}


@pytest.fixture
def memdb_file(db_path: Path) -> Path:
    make_memdb_database(db_path)
    return db_path


def backup_of(path: Path) -> Path:
    return Path(str(path) + ".memdb-backup")


def test_memdb_file_is_backed_up_untouched(memdb_file: Path) -> None:
    original = dump(memdb_file)
    assert schema_objects(memdb_file) >= MEMDB_OBJECTS
    with Engine.open(str(memdb_file)):
        pass
    backup = backup_of(memdb_file)
    assert backup.is_file()
    assert dump(backup) == original
    assert pragma(backup, "user_version") == 0
    with connect(backup) as conn:
        assert conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == 5
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_memdb_memories_keep_their_ids_and_fields(memdb_file: Path) -> None:
    with Engine.open(str(memdb_file)) as engine:
        assert engine.stats().memories == 4
        build = engine.memories.get(sha256(BUILD))
        assert build is not None
        assert (build.pk, build.hash, build.content) == (1, sha256(BUILD), BUILD)
        assert build.tags == ("build", "python", "tooling")  # merged with its SHA-era duplicate
        # The merged memory keeps the first row's type and time and the higher importance.
        assert (build.importance, build.memory_type, build.created_at) == (9, "fact", ms("2023-05-01 10:00:00"))
        assert build.scope == "shared"

        deploy = engine.memories.get(sha256(DEPLOY))
        assert deploy is not None
        assert (deploy.pk, deploy.tags, deploy.importance, deploy.memory_type) == (2, ("deploy",), 8, "decision")
        assert deploy.created_at == ms("2024-01-02 03:04:05")
        assert deploy.last_accessed_at == ms("2024-03-01 12:00:00")

        cafe = engine.memories.get(sha256(CAFE))
        assert cafe is not None
        assert (cafe.pk, cafe.tags, cafe.importance, cafe.memory_type) == (3, (), 0, "general")
        assert cafe.created_at == ms("2023-06-01 08:30:00")

        last = engine.memories.get(sha256(LAST))
        assert last is not None
        assert (last.pk, last.tags, last.importance, last.memory_type) == (6, ("ops",), 10, "lesson")

        assert engine.memories.get(md5(BUILD)) is None
        assert engine.memories.get(md5(CAFE)) is None
        assert engine.memories.get(sha256("deleted in memdb")) is None

        assert [h.memory.pk for h in engine.memories.search("cafe")] == [3]
        assert [h.memory.pk for h in engine.memories.search("deploying")] == [2]
        assert [h.memory.pk for h in engine.memories.search("python")] == [1]


def test_memdb_relationships_keep_their_ids(memdb_file: Path) -> None:
    with Engine.open(str(memdb_file)) as engine:
        edges = {
            link.edge.pk: (link.from_hash, link.to_hash, link.edge.type, link.edge.created_at)
            for digest in (sha256(BUILD), sha256(DEPLOY), sha256(CAFE))
            for link in engine.memories.links(digest)
        }
        assert edges == {
            1: (sha256(BUILD), sha256(DEPLOY), "supports", ms("2024-03-01 00:00:00")),
            3: (sha256(DEPLOY), sha256(CAFE), "follows", ms("2024-03-03 00:00:00")),
            5: (sha256(CAFE), sha256(BUILD), "mentions", ms("2024-03-05 00:00:00")),
        }
        assert engine.stats().edges == 3


def test_memdb_backup_is_private(memdb_file: Path) -> None:
    """The copy holds what the database holds: readable by its owner only, whatever the umask."""
    memdb_file.chmod(0o644)
    old = os.umask(0o022)
    try:
        Engine.open(str(memdb_file)).close()
    finally:
        os.umask(old)
    assert stat.S_IMODE(backup_of(memdb_file).stat().st_mode) == 0o600


def test_memdb_tables_are_gone_after_migration(memdb_file: Path) -> None:
    with Engine.open(str(memdb_file)):
        pass
    objects = schema_objects(memdb_file)
    assert not objects & MEMDB_OBJECTS
    assert {"node", "memory", "memory_tag", "edge", "change_log"} <= objects
    # memdb's own full-text tables go; every one of mnemodb's stays.
    assert {"memory_fts", "entity_text", "node_text"} <= objects
    assert pragma(memdb_file, "user_version") == SCHEMA_VERSION
    assert pragma(memdb_file, "application_id") == APPLICATION_ID
    with connect(memdb_file) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        assert "memories" not in dict(conn.execute("SELECT name, seq FROM sqlite_sequence"))


def test_memdb_migration_is_in_the_change_log(memdb_file: Path) -> None:
    with Engine.open(str(memdb_file)) as engine:
        changes = engine.changes()
    assert [c.seq for c in changes] == list(range(1, len(changes) + 1))
    assert [c.op for c in changes].count("create_node") == 4
    assert [c.op for c in changes].count("create_edge") == 3


def test_opening_a_migrated_memdb_file_again_does_nothing_more(memdb_file: Path) -> None:
    with Engine.open(str(memdb_file)) as engine:
        seq = engine.current_seq()
        exported = [r for r in engine.export() if r["type"] != "header"]
    backups = sorted(p.name for p in memdb_file.parent.iterdir() if ".memdb-backup" in p.name)
    with Engine.open(str(memdb_file)) as engine:
        assert engine.current_seq() == seq
        assert [r for r in engine.export() if r["type"] != "header"] == exported
    assert sorted(p.name for p in memdb_file.parent.iterdir() if ".memdb-backup" in p.name) == backups
    assert backups == [backup_of(memdb_file).name]


def test_memdb_ids_deleted_before_migration_are_not_reused(memdb_file: Path) -> None:
    with Engine.open(str(memdb_file)) as engine:
        new = engine.memories.store("written after the migration").memory
        link, _ = engine.memories.relate(new.hash, sha256(DEPLOY), "new_link")
    # memdb handed out memory ids up to 7 and relationship ids up to 6; a client may still hold them.
    assert (new.pk > 7, link.edge.pk > 6) == (True, True), (new.pk, link.edge.pk)


def test_memdb_file_opened_through_the_store_directly(memdb_file: Path) -> None:
    store = SqliteStore(memdb_file)
    try:
        with store.read() as tx:
            assert tx.count_memories(["shared"]) == 4
            memory = tx.memory_by_pk(4)
        assert memory is None  # the duplicate became part of memory 1
    finally:
        store.close()


# -- refusing files that are not ours ------------------------------------------------------------------------------


def make_foreign_database(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with connect(path) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER REFERENCES users (id))")
        conn.execute("INSERT INTO users (name) VALUES ('alice'), ('bob')")


def test_a_foreign_database_is_refused_with_a_clear_error(db_path: Path) -> None:
    make_foreign_database(db_path)
    with pytest.raises(StoreUnavailable, match="did not create") as caught:
        Engine.open(str(db_path))
    message = str(caught.value)
    assert str(db_path.name) in message
    assert "users" in message
    assert "refusing" in message
    assert schema_objects(db_path) == {"users", "orders"}


def test_a_foreign_database_is_left_unchanged(db_path: Path) -> None:
    make_foreign_database(db_path)
    before = db_path.read_bytes()
    with pytest.raises(StoreUnavailable):
        SqliteStore(db_path)
    gc.collect()  # let go of anything the failed open left behind
    assert pragma(db_path, "journal_mode") == "delete"
    assert db_path.read_bytes() == before
    assert not Path(str(db_path) + "-wal").exists() or Path(str(db_path) + "-wal").stat().st_size == 0
    assert not backup_of(db_path).exists()


def test_a_newer_schema_version_is_refused(db_path: Path) -> None:
    with Engine.open(str(db_path)) as engine:
        engine.memories.store("from the future")
    with connect(db_path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreUnavailable, match="upgrade mnemodb") as caught:
        Engine.open(str(db_path))
    assert "newer" in str(caught.value)
    assert str(SCHEMA_VERSION + 1) in str(caught.value)
    gc.collect()
    assert pragma(db_path, "user_version") == SCHEMA_VERSION + 1
    with connect(db_path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM memory").fetchone()[0] == 1


def test_a_file_that_is_not_a_database_is_refused_clearly(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.write_text("just some text, long enough to not look like an empty database file\n" * 20)
    before = db_path.read_bytes()
    with pytest.raises(StoreUnavailable):
        Engine.open(str(db_path))
    assert db_path.read_bytes() == before


def test_a_command_that_upgrades_the_schema_says_so(db_path: Path) -> None:
    import subprocess
    import sys

    from support import server_env

    make_old_database(db_path, 11)
    result = subprocess.run(
        [sys.executable, "-m", "mnemodb", "stats", "--db", str(db_path)],
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert f"mnemodb: upgrading database {db_path} from schema 11 to {SCHEMA_VERSION}" in result.stderr
    again = subprocess.run(
        [sys.executable, "-m", "mnemodb", "stats", "--db", str(db_path)],
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=60,
        check=False,
    )
    assert "upgrading" not in again.stderr
