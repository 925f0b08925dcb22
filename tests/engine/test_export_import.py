"""Export to records and import into another database: a faithful, idempotent round trip."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mnemodb.engine import Engine, InvalidArgument
from mnemodb.engine import ops as ops_module
from mnemodb.store.sqlite import SqliteStore
from support import SCOPE_A, START_MS, Clock, sha256


def open_engine(path: Path, start: int = START_MS) -> Engine:
    return Engine(SqliteStore(path), clock=Clock(start, tick=1), access_interval=3600)


@pytest.fixture
def source(tmp_path: Path) -> Iterator[Engine]:
    with open_engine(tmp_path / "source.db") as engine:
        yield engine


@pytest.fixture
def target(tmp_path: Path) -> Iterator[Engine]:
    # Later than the source: edges made there are valid here.
    with open_engine(tmp_path / "target.db", START_MS + 3_600_000) as engine:
        yield engine


def vector(*values: float) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def fill(engine: Engine) -> dict[str, Any]:
    """A bit of everything: memories with tags, scopes, entities, open and closed edges, embeddings, access counts."""
    one = engine.store_memory("The build uses uv", ["build", "tooling"], 6, "fact", summary="build tool").memory
    two = engine.store_memory("Deploys run on Fridays", ["deploy"], 9, "decision").memory
    private = engine.store_memory("A private note ✓", ["private"], scope=SCOPE_A).memory
    dropped = engine.store_memory("Deleted before export").memory
    engine.delete_memory(dropped.hash)  # leaves a gap in the row ids
    three = engine.store_memory("Props and all", props={"source": "chat", "n": 2, "ok": True, "w": 0.25}).memory
    ada, _ = engine.create_entity("Ada", "person", ["wrote the first program", "liked maths"], props={"born": 1815})
    engine.add_observations("Ada", ["corresponded with Babbage"])
    engine.create_entity("Ada", "person", ["in another scope"], scope=SCOPE_A)
    supports, _ = engine.relate_memories(one.hash, two.hash, "supports")
    engine.link(three.id, ada.id, "mentions", props={"weight": 0.5}, valid_from=1000)
    closed = engine.link(two.id, ada.id, "assigned_to", valid_from=2000)
    engine.close_edge(closed.id, valid_to=3000)
    engine.link(private.id, one.id, "refines", scope=SCOPE_A)
    with engine.store.write() as tx:
        tx.set_embedding(one.pk, "test-model", vector(0.5, -1.25, 3.0), 3, START_MS)
        tx.set_embedding(one.pk, "other-model", vector(1.0), 1, START_MS + 1)
        tx.set_embedding(ada.pk, "test-model", vector(0.0, 0.0, 1.0), 3, START_MS + 2)
    engine.get_memory(one.hash)
    engine.get_memory(one.hash)
    engine.flush_access()
    return {"one": one, "two": two, "three": three, "private": private, "ada": ada, "supports": supports}


def comparable(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records without the header and without the integer row ids."""
    return [{k: v for k, v in r.items() if k != "pk"} for r in records if r["type"] != "header"]


def through_json(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [json.loads(json.dumps(r)) for r in records]


def test_export_starts_with_a_header(source: Engine) -> None:
    fill(source)
    records = list(source.export())
    header = records[0]
    assert header["type"] == "header"
    assert (header["format"], header["version"]) == ("mnemodb", 1)
    assert header["seq"] == source.current_seq()
    assert {r["type"] for r in records[1:]} == {"node", "edge", "embedding"}
    assert sum(r["type"] == "node" for r in records) == 6
    assert sum(r["type"] == "edge" for r in records) == 4
    assert sum(r["type"] == "embedding" for r in records) == 3


def test_round_trip_reproduces_everything(source: Engine, target: Engine) -> None:
    made = fill(source)
    exported = through_json(list(source.export()))
    report = target.import_records(exported)
    assert report.errors == ()
    assert report.written == len(exported) - 1
    assert report.unchanged == 0
    assert comparable(list(target.export())) == comparable(exported)

    for name in ("one", "two", "three"):
        original = made[name]
        copy = target.get_memory(original.hash)
        assert copy is not None
        assert (copy.id, copy.content, copy.tags, copy.importance, copy.memory_type, copy.summary) == (
            original.id,
            original.content,
            original.tags,
            original.importance,
            original.memory_type,
            original.summary,
        )
        assert (copy.created_at, dict(copy.props)) == (original.created_at, dict(original.props))
    private = target.get_memory(made["private"].hash, scopes=[SCOPE_A])
    assert private is not None
    assert private.id == made["private"].id
    assert target.get_memory(made["private"].hash) is None  # still private
    copied_one = target.get_memory(made["one"].hash)
    assert copied_one is not None
    assert copied_one.access_count == 2  # the access statistics came along

    ada = target.get_entity("Ada")
    assert ada is not None
    assert ada.id == made["ada"].id
    assert ada.observations == ("wrote the first program", "liked maths", "corresponded with Babbage")
    assert dict(ada.props) == {"born": 1815}
    other_ada = target.get_entity("Ada", scopes=[SCOPE_A])
    assert other_ada is not None
    assert other_ada.observations == ("in another scope",)

    links = target.memory_links(made["one"].hash)
    assert [(lk.edge.id, lk.edge.type, lk.to_hash) for lk in links] == [
        (made["supports"].edge.id, "supports", made["two"].hash)
    ]
    edges = {r["edge_type"]: r for r in target.export() if r["type"] == "edge"}
    assert (edges["mentions"]["valid_from"], edges["mentions"]["valid_to"]) == (1000, None)
    assert edges["mentions"]["props"] == {"weight": 0.5}
    assert (edges["assigned_to"]["valid_from"], edges["assigned_to"]["valid_to"]) == (2000, 3000)
    assert edges["refines"]["scope"] == SCOPE_A

    embeddings = {(r["node"], r["model"]): r for r in target.export() if r["type"] == "embedding"}
    first = embeddings[(made["one"].id, "test-model")]
    assert struct.unpack("<3f", bytes.fromhex(first["vector"])) == (0.5, -1.25, 3.0)
    assert first["dim"] == 3
    assert (made["ada"].id, "test-model") in embeddings

    source_stats, target_stats = source.stats(scopes=["shared", SCOPE_A]), target.stats(scopes=["shared", SCOPE_A])
    for field in ("memories", "tags", "entities", "observations", "edges", "nodes", "embeddings"):
        assert getattr(target_stats, field) == getattr(source_stats, field), field


def test_import_logs_what_it_writes(source: Engine, target: Engine) -> None:
    fill(source)
    exported = list(source.export())
    target.import_records(exported)
    changes = target.changes()
    assert [c.seq for c in changes] == list(range(1, len(changes) + 1))
    ops = [c.op for c in changes]
    assert ops.count("create_node") == 6
    assert ops.count("create_edge") == 4
    assert ops.count("close_edge") == 1
    assert ops.count("set_embedding") == 3
    embedding = next(c for c in changes if c.op == "set_embedding" and c.data["model"] == "test-model")
    assert ops_module.embedding_vector(embedding.data) in ([0.5, -1.25, 3.0], [0.0, 0.0, 1.0])


def test_importing_twice_writes_nothing_the_second_time(source: Engine, target: Engine) -> None:
    fill(source)
    exported = through_json(list(source.export()))
    target.import_records(exported)
    seq = target.current_seq()
    snapshot = comparable(list(target.export()))
    again = target.import_records(exported)
    assert again.written == 0
    assert again.unchanged == len(exported) - 1
    assert again.errors == ()
    assert target.current_seq() == seq
    assert comparable(list(target.export())) == snapshot


def test_importing_into_the_source_itself_writes_nothing(source: Engine) -> None:
    fill(source)
    seq = source.current_seq()
    report = source.import_records(list(source.export()))
    assert report.written == 0
    assert source.current_seq() == seq


def test_import_merges_same_content_stored_under_another_id(source: Engine, target: Engine) -> None:
    source.store_memory("shared content", ["from-source"])
    target.store_memory("shared content", ["from-target"])
    report = target.import_records(list(source.export()))
    assert (report.written, report.unchanged, report.errors) == (0, 1, ())
    assert target.stats().memories == 1


@pytest.mark.parametrize(
    "header",
    [
        {"type": "header", "format": "mnemodb", "version": 2},
        {"type": "header", "format": "mnemodb", "version": "1"},
        {"type": "header", "format": "memdb", "version": 1},
        {"type": "header"},
    ],
)
def test_a_bad_header_is_refused(source: Engine, target: Engine, header: dict[str, Any]) -> None:
    fill(source)
    records = [header, *list(source.export())[1:]]
    with pytest.raises(InvalidArgument, match="version 1"):
        target.import_records(records)
    assert target.current_seq() == 0
    assert target.stats().nodes == 0


def node_record(node_id: str, content: str, **memory: Any) -> dict[str, Any]:
    return {
        "type": "node",
        "id": node_id,
        "scope": "shared",
        "label": "Memory",
        "props": {},
        "created_at": START_MS,
        "updated_at": START_MS,
        "memory": {
            "hash": sha256(content),
            "content": content,
            "summary": None,
            "importance": 0,
            "memory_type": "general",
            "tags": [],
            **memory,
        },
    }


HEADER = {"type": "header", "format": "mnemodb", "version": 1}
NODE_1 = "01HV7N8Q3Y2J6W5X4Z9A0B1C31"
NODE_2 = "01HV7N8Q3Y2J6W5X4Z9A0B1C32"
MISSING = "01HV7N8Q3Y2J6W5X4Z9A0B1C3Z"
EDGE_1 = "01HV7N8Q3Y2J6W5X4Z9A0B1C41"


def test_a_dangling_edge_is_reported_not_fatal(target: Engine) -> None:
    dangling = {
        "type": "edge",
        "id": EDGE_1,
        "from": NODE_1,
        "to": MISSING,
        "edge_type": "x",
        "scope": "shared",
        "props": {},
        "valid_from": START_MS,
        "valid_to": None,
        "created_at": START_MS,
    }
    records = [HEADER, node_record(NODE_1, "first"), dangling, node_record(NODE_2, "second")]
    report = target.import_records(records)
    assert report.written == 2
    assert report.unchanged == 0
    [error] = report.errors
    assert EDGE_1 in error
    assert MISSING in error
    assert target.get_memory(sha256("first")) is not None
    assert target.get_memory(sha256("second")) is not None
    assert target.stats().edges == 0
    assert [c.op for c in target.changes()] == ["create_node", "create_node"]


def test_an_unknown_record_type_is_reported_not_fatal(target: Engine) -> None:
    records: list[dict[str, Any]] = [HEADER, {"type": "mystery", "id": "m1"}, node_record(NODE_1, "kept")]
    report = target.import_records(records)
    assert report.written == 1
    assert len(report.errors) == 1
    assert "mystery" in report.errors[0]


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(node_record(NODE_1, "too important", importance=42), id="importance-out-of-range"),
        pytest.param(
            {**node_record(NODE_1, "x"), "memory": {"hash": "0" * 64, "content": "lone \ud800"}}, id="lone-surrogate"
        ),
        pytest.param({**node_record(NODE_1, "x"), "memory": {"content": "no hash"}}, id="missing-field"),
    ],
)
def test_a_record_that_cannot_be_stored_is_reported_not_fatal(target: Engine, bad: dict[str, Any]) -> None:
    records = [HEADER, bad, node_record(NODE_2, "fine")]
    report = target.import_records(records)
    assert report.written == 1
    assert len(report.errors) == 1
    assert NODE_1 in report.errors[0]
    assert target.get_memory(sha256("fine")) is not None
    assert target.stats().nodes == 1
    assert [c.op for c in target.changes()] == ["create_node"]


def test_import_progress_is_reported(source: Engine, target: Engine) -> None:
    fill(source)
    exported = list(source.export())
    seen: list[int] = []
    target.import_records(exported, progress=seen.append)
    assert sum(seen) == len(exported) - 1
