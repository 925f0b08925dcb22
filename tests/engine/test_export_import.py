"""Export to records and import into another database: a faithful, idempotent round trip."""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.helpers import store_at
from mnemodb.engine import Engine, InvalidArgument
from mnemodb.engine.graph import NewEntity, NewRelation
from mnemodb.engine.items import EntityNote
from mnemodb.model import ops as ops_module
from mnemodb.model.records import Entity
from support import SCOPE_A, START_MS, Clock, sha256


def open_engine(path: Path, start: int = START_MS) -> Engine:
    return Engine(store_at(path), clock=Clock(start, tick=1), access_interval=3600)


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
    one = engine.memories.store("The build uses uv", ["build", "tooling"], 6, "fact", summary="build tool").memory
    two = engine.memories.store("Deploys run on Fridays", ["deploy"], 9, "decision").memory
    private = engine.memories.store("A private note ✓", ["private"], scope=SCOPE_A).memory
    dropped = engine.memories.store("Deleted before export").memory
    engine.memories.delete(dropped.hash)  # leaves a gap in the row ids
    three = engine.memories.store("Props and all", props={"source": "chat", "n": 2, "ok": True, "w": 0.25}).memory
    ada_note = EntityNote(NewEntity("Ada", "person", ("wrote the first program", "liked maths")), {"born": 1815})
    _, [remembered] = engine.items.remember(entities=[ada_note])
    ada = remembered.item
    assert isinstance(ada, Entity)
    engine.graph.add_observations([("Ada", ["corresponded with Babbage"])])
    engine.graph.create_entities([NewEntity("Ada", "person", ("in another scope",))], scope=SCOPE_A, scopes=[SCOPE_A])
    supports, _ = engine.memories.relate(one.hash, two.hash, "supports")
    engine.items.relate(add=[(three.id, ada.id, "mentions", {"weight": 0.5}, 1000)])
    [(closed, _)], _ = engine.items.relate(add=[(two.id, ada.id, "assigned_to", {}, 2000)])
    engine.items.relate(close=[(closed.id, 3000)])
    engine.items.relate(add=[(private.id, one.id, "refines", {}, None)], scope=SCOPE_A, scopes=["shared", SCOPE_A])
    with engine.store.write() as tx:
        tx.set_embedding(one.pk, "test-model", vector(0.5, -1.25, 3.0), 3, START_MS)
        tx.set_embedding(one.pk, "other-model", vector(1.0), 1, START_MS + 1)
        tx.set_embedding(ada.pk, "test-model", vector(0.0, 0.0, 1.0), 3, START_MS + 2)
    engine.memories.get(one.hash)
    engine.memories.get(one.hash)
    engine.access.flush()
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
        copy = target.memories.get(original.hash)
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
    private = target.memories.get(made["private"].hash, scopes=[SCOPE_A])
    assert private is not None
    assert private.id == made["private"].id
    assert target.memories.get(made["private"].hash) is None  # still private
    copied_one = target.memories.get(made["one"].hash)
    assert copied_one is not None
    assert copied_one.access_count == 2  # the access statistics came along

    [ada] = target.graph.open(["Ada"]).entities
    assert ada.id == made["ada"].id
    assert ada.observations == ("wrote the first program", "liked maths", "corresponded with Babbage")
    assert dict(ada.props) == {"born": 1815}
    [other_ada] = target.graph.open(["Ada"], scopes=[SCOPE_A]).entities
    assert other_ada.observations == ("in another scope",)

    links = target.memories.links(made["one"].hash)
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
    source.memories.store("shared content", ["from-source"])
    target.memories.store("shared content", ["from-target"])
    report = target.import_records(list(source.export()))
    assert (report.written, report.unchanged, report.errors) == (0, 1, ())
    assert target.stats().memories == 1


@pytest.mark.parametrize(
    "header",
    [
        {"type": "header", "format": "mnemodb", "version": 2},
        {"type": "header", "format": "mnemodb", "version": "1"},
        {"type": "header", "format": "memdb", "version": 1},
        {"type": "header", "format": "mnemodb", "version": True},
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
    assert target.memories.get(sha256("first")) is not None
    assert target.memories.get(sha256("second")) is not None
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
    assert target.memories.get(sha256("fine")) is not None
    assert target.stats().nodes == 1
    assert [c.op for c in target.changes()] == ["create_node"]


def test_import_progress_is_reported(source: Engine, target: Engine) -> None:
    fill(source)
    exported = list(source.export())
    seen: list[int] = []
    target.import_records(exported, progress=seen.append)
    assert sum(seen) == len(exported) - 1


# -- import holds every record to the rules the live write paths apply ------------------------------------

NODE_3 = "01HV7N8Q3Y2J6W5X4Z9A0B1C33"
EDGE_2 = "01HV7N8Q3Y2J6W5X4Z9A0B1C42"
SCOPE_B = "01HV7N8Q3Y2J6W5X4Z9A0B1C2E"


def entity_record(node_id: str, name: str, *observations: str, **fields: Any) -> dict[str, Any]:
    return {
        "type": "node",
        "id": node_id,
        "scope": "shared",
        "label": "Entity",
        "props": {},
        "created_at": START_MS,
        "updated_at": START_MS,
        "entity": {
            "name": name,
            "entity_type": "person",
            "observations": [{"content": o, "created_at": START_MS} for o in observations],
            **fields,
        },
    }


def edge_record(edge_id: str, src: str, dst: str, **fields: Any) -> dict[str, Any]:
    return {
        "type": "edge",
        "id": edge_id,
        "from": src,
        "to": dst,
        "edge_type": "knows",
        "scope": "shared",
        "props": {},
        "valid_from": START_MS,
        "valid_to": None,
        "created_at": START_MS,
        **fields,
    }


def embedding_record(node_id: str, *values: float, **fields: Any) -> dict[str, Any]:
    return {
        "type": "embedding",
        "node": node_id,
        "model": "test-model",
        "dim": len(values),
        "vector": vector(*values).hex(),
        "updated_at": START_MS,
        **fields,
    }


def without(record: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != key}


def with_memory(**fields: Any) -> dict[str, Any]:
    record = node_record(NODE_3, "third")
    return {**record, "memory": {**record["memory"], **fields}}


def with_entity(**fields: Any) -> dict[str, Any]:
    record = entity_record(NODE_3, "Ada")
    return {**record, "entity": {**record["entity"], **fields}}


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value]
    return value


# Each record breaks one rule a live write path applies; it comes on line 4, after the
# header and two memories it may refer to.
REFUSED = [
    # nodes: label and kind
    pytest.param(
        without(node_record(NODE_3, "x"), "memory"),
        "a Memory node needs its memory fields",
        id="memory-node-without-memory-fields",
    ),
    pytest.param(
        {**node_record(NODE_3, "x"), "label": "Thing"},
        "memory fields belong to a Memory node only",
        id="memory-fields-on-another-label",
    ),
    pytest.param(
        {**node_record(NODE_3, "x"), "entity": entity_record(NODE_3, "Ada")["entity"]},
        "entity fields belong to an Entity node only",
        id="memory-and-entity-fields",
    ),
    pytest.param(
        without(entity_record(NODE_3, "Ada"), "entity"),
        "an Entity node needs its entity fields",
        id="entity-node-without-entity-fields",
    ),
    pytest.param(
        {**without(node_record(NODE_3, "x"), "memory"), "label": ""}, "label must not be empty", id="empty-label"
    ),
    pytest.param(
        {**without(node_record(NODE_3, "x"), "memory"), "label": 7}, "label must be a string", id="label-not-a-string"
    ),
    pytest.param(
        {**without(node_record(NODE_3, "x"), "memory"), "label": "bad \ud800"},
        "label is not valid Unicode",
        id="label-lone-surrogate",
    ),
    # nodes: ids, scopes, times
    pytest.param({**node_record(NODE_3, "x"), "id": "m1"}, 'id "m1" is not a ULID', id="id-not-a-ulid"),
    pytest.param({**node_record(NODE_3, "x"), "id": 12345}, "id must be a ULID", id="id-not-a-string"),
    pytest.param({**node_record(NODE_3, "x"), "scope": "team-a"}, 'invalid scope "team-a"', id="scope-not-a-ulid"),
    pytest.param({**node_record(NODE_3, "x"), "scope": 7}, "scope must be a string", id="scope-not-a-string"),
    pytest.param(
        {**node_record(NODE_3, "x"), "created_at": -1},
        "created_at must be milliseconds since 1970",
        id="created-at-negative",
    ),
    pytest.param(
        {**node_record(NODE_3, "x"), "created_at": 1.5},
        "created_at must be milliseconds since 1970",
        id="created-at-not-an-integer",
    ),
    pytest.param(
        {**node_record(NODE_3, "x"), "created_at": "yesterday"}, "created_at must be milliseconds", id="created-at-text"
    ),
    pytest.param(
        {**node_record(NODE_3, "x"), "created_at": 2**63},
        "created_at must be milliseconds",
        id="created-at-past-64-bits",
    ),
    pytest.param(
        {**node_record(NODE_3, "x"), "updated_at": True}, "updated_at must be milliseconds", id="updated-at-boolean"
    ),
    pytest.param(
        {**node_record(NODE_3, "x"), "access": {"count": -5, "last_at": START_MS}},
        "access count must be an integer",
        id="access-count-negative",
    ),
    pytest.param(
        {**node_record(NODE_3, "x"), "access": {"count": 1, "last_at": -1}},
        "access last_at must be milliseconds",
        id="access-time-negative",
    ),
    # nodes: properties
    pytest.param(
        {**node_record(NODE_3, "x"), "props": {"a": {"b": 1}}},
        "property 'a' must be a string, a finite number",
        id="props-nested-object",
    ),
    pytest.param(
        {**node_record(NODE_3, "x"), "props": {"a": float("nan")}},
        "property 'a' must be a string, a finite number",
        id="props-not-finite",
    ),
    pytest.param({**node_record(NODE_3, "x"), "props": ["a"]}, "props must be a JSON object", id="props-not-an-object"),
    pytest.param(
        {**node_record(NODE_3, "x"), "props": {"\udc00": 1}},
        "property name is not valid Unicode",
        id="prop-name-lone-surrogate",
    ),
    # nodes: memory fields
    pytest.param(node_record(NODE_3, ""), "content must not be empty", id="content-empty"),
    pytest.param(with_memory(content=42, hash=sha256("42")), "content must be a string", id="content-not-a-string"),
    pytest.param(
        with_memory(content="bad \ud800", hash=sha256("x")), "content is not valid Unicode", id="content-lone-surrogate"
    ),
    pytest.param(
        with_memory(hash=sha256("other")), "its hash is not the sha256 of its content", id="hash-of-other-content"
    ),
    pytest.param(
        with_memory(importance=2.5), "importance must be an integer from 0 to 10", id="importance-not-an-integer"
    ),
    pytest.param(with_memory(importance=True), "importance must be an integer from 0 to 10", id="importance-boolean"),
    pytest.param(with_memory(importance=-1), "importance must be an integer from 0 to 10", id="importance-negative"),
    pytest.param(with_memory(memory_type=""), "memory_type must not be empty", id="memory-type-empty"),
    pytest.param(with_memory(memory_type=3), "memory_type must be a string", id="memory-type-not-a-string"),
    pytest.param(with_memory(summary=5), "summary must be a string", id="summary-not-a-string"),
    pytest.param(with_memory(summary="bad \ud800"), "summary is not valid Unicode", id="summary-lone-surrogate"),
    pytest.param(with_memory(tags="abc"), "tags must be a list of strings", id="tags-not-a-list"),
    pytest.param(with_memory(tags=["two words"]), "Tag must not contain whitespace", id="tag-with-whitespace"),
    pytest.param(with_memory(tags=[""]), "Tag must be at least 1 character", id="tag-empty"),
    pytest.param(with_memory(tags=["x" * 51]), "Tag exceeds 50 characters", id="tag-too-long"),
    pytest.param(with_memory(tags=[f"t{i}" for i in range(101)]), "Too many tags", id="too-many-tags"),
    # nodes: entity fields
    pytest.param(entity_record(NODE_3, ""), "entity name must not be empty", id="entity-name-empty"),
    pytest.param(with_entity(name=42), "entity name must be a string", id="entity-name-not-a-string"),
    pytest.param(
        entity_record(NODE_3, "bad \ud800"), "entity name is not valid Unicode", id="entity-name-lone-surrogate"
    ),
    pytest.param(with_entity(entity_type=None), "entity type must be a string", id="entity-type-not-a-string"),
    pytest.param(
        entity_record(NODE_3, "Ada", "bad \ud800"), "observation is not valid Unicode", id="observation-lone-surrogate"
    ),
    pytest.param(
        with_entity(observations=["plain"]), "an observation must be a JSON object", id="observation-not-an-object"
    ),
    pytest.param(
        with_entity(observations=[{"content": "x", "created_at": -1}]),
        "an observation's created_at must be milliseconds",
        id="observation-time-negative",
    ),
    pytest.param(with_entity(extra="x"), "extra must be a JSON object", id="entity-extra-not-an-object"),
    pytest.param(
        with_entity(extra={"deep": nested(150)}),
        "extra holds values nested more than 100 deep",
        id="entity-extra-too-deep",
    ),
    pytest.param(
        {**entity_record(NODE_3, "Ada"), "props": {"born": [1815]}}, "property 'born' must be", id="entity-props-list"
    ),
    # edges
    pytest.param(
        edge_record(EDGE_1, NODE_1, NODE_2, edge_type=""), "edge type must not be empty", id="edge-type-empty"
    ),
    pytest.param(
        edge_record(EDGE_1, NODE_1, NODE_2, edge_type=5), "edge type must be a string", id="edge-type-not-a-string"
    ),
    pytest.param(
        edge_record(EDGE_1, NODE_1, NODE_2, valid_to=START_MS - 1),
        "valid_to is before the relation became valid",
        id="valid-to-before-valid-from",
    ),
    pytest.param(
        edge_record(EDGE_1, NODE_1, NODE_2, valid_from=1.5),
        "valid_from must be milliseconds",
        id="valid-from-not-an-integer",
    ),
    pytest.param(
        edge_record(EDGE_1, NODE_1, NODE_2, valid_to="later"), "valid_to must be milliseconds", id="valid-to-text"
    ),
    pytest.param(
        edge_record(EDGE_1, NODE_1, NODE_2, created_at=-1),
        "created_at must be milliseconds",
        id="edge-created-at-negative",
    ),
    pytest.param(edge_record(EDGE_1, "n1", NODE_2), 'from "n1" is not a ULID', id="edge-end-not-a-ulid"),
    pytest.param(edge_record("e1", NODE_1, NODE_2), 'id "e1" is not a ULID', id="edge-id-not-a-ulid"),
    pytest.param(
        edge_record(EDGE_1, NODE_1, NODE_2, scope="everyone"), 'invalid scope "everyone"', id="edge-scope-invalid"
    ),
    pytest.param(edge_record(EDGE_1, NODE_1, NODE_2, props={"w": None}), "property 'w' must be", id="edge-props-null"),
    pytest.param(
        edge_record(EDGE_1, NODE_1, NODE_2, extra=[1]), "extra must be a JSON object", id="edge-extra-not-an-object"
    ),
    pytest.param(
        edge_record(EDGE_1, NODE_1, MISSING),
        f"it refers to node {MISSING}, which is not in the store",
        id="edge-end-missing",
    ),
    # embeddings
    pytest.param(
        embedding_record(NODE_1, 0.5, 1.0, dim=3),
        "its vector holds 8 bytes, not the 12 of 3 float32 values",
        id="vector-length-not-dim",
    ),
    pytest.param(embedding_record(NODE_1, dim=0), "dim must be a positive integer", id="dim-zero"),
    pytest.param(embedding_record(NODE_1, 0.5, dim="1"), "dim must be a positive integer", id="dim-not-an-integer"),
    pytest.param(
        embedding_record(NODE_1, 0.5, vector="zz"), "vector must be a string of hexadecimal digits", id="vector-not-hex"
    ),
    pytest.param(embedding_record(NODE_1, 0.5, float("nan")), "vector element 1 is not finite", id="vector-not-finite"),
    pytest.param(embedding_record(NODE_1, 0.5, model=7), "model must be a string", id="model-not-a-string"),
    pytest.param(
        embedding_record(NODE_1, 0.5, updated_at=-1), "updated_at must be milliseconds", id="embedding-time-negative"
    ),
    pytest.param(
        embedding_record(MISSING, 0.5),
        f"it refers to node {MISSING}, which is not in the store",
        id="embedding-node-missing",
    ),
]


@pytest.mark.parametrize(("bad", "reason"), REFUSED)
def test_a_record_a_live_write_would_refuse_is_refused_with_its_line(
    target: Engine, bad: dict[str, Any], reason: str
) -> None:
    records = [HEADER, node_record(NODE_1, "first"), node_record(NODE_2, "second"), bad]
    report = target.import_records(records)
    assert (report.written, report.unchanged) == (2, 0)
    [error] = report.errors
    assert error.startswith("line 4: "), error
    assert reason in error
    stats = target.stats(scopes=["shared", SCOPE_A])
    assert (stats.nodes, stats.edges, stats.embeddings) == (2, 0, 0)
    assert [c.op for c in target.changes()] == ["create_node", "create_node"]


def private_memory(node_id: str, content: str, scope: str) -> dict[str, Any]:
    return {**node_record(node_id, content), "scope": scope}


def test_an_edge_between_two_private_scopes_is_refused(target: Engine) -> None:
    records = [
        HEADER,
        private_memory(NODE_1, "in a", SCOPE_A),
        private_memory(NODE_2, "in b", SCOPE_B),
        node_record(NODE_3, "shared"),
        edge_record(EDGE_1, NODE_1, NODE_2, scope=SCOPE_A),
        edge_record(EDGE_2, NODE_1, NODE_3, scope=SCOPE_A),  # to the shared scope: allowed
    ]
    report = target.import_records(records)
    assert report.errors == (f"line 5: edge {EDGE_1}: cross-scope edge requires at least one shared endpoint",)
    assert report.written == 4
    edges = [r["id"] for r in target.export() if r["type"] == "edge"]
    assert edges == [EDGE_2]
    # The live path refuses the same edge with the same words.
    with pytest.raises(InvalidArgument, match="cross-scope edge requires at least one shared endpoint"):
        target.items.relate(add=[(NODE_1, NODE_2, "knows", {}, None)], scope=SCOPE_A, scopes=[SCOPE_A, SCOPE_B])


def test_an_embedding_of_another_length_than_its_models_is_refused(target: Engine) -> None:
    records = [
        HEADER,
        node_record(NODE_1, "first"),
        node_record(NODE_2, "second"),
        embedding_record(NODE_1, 0.5, 1.0, 2.0),
        embedding_record(NODE_2, 0.5, 1.0),  # the model's vectors have 3 values
    ]
    report = target.import_records(records)
    assert report.errors == (
        f"line 5: embedding of node {NODE_2}: "
        'embedding dim 2 does not match existing slab dim 3 for model "test-model"',
    )
    assert target.stats().embeddings == 1
    # The model keeps the length its vectors have: a live write of 3 values is taken.
    from mnemodb.engine.properties import SetEmbedding

    target.nodes.submit([SetEmbedding(NODE_2, "test-model", (1.0, 2.0, 3.0))])
    with pytest.raises(InvalidArgument, match="does not match existing slab dim 3"):
        target.nodes.submit([SetEmbedding(NODE_2, "test-model", (1.0, 2.0))])


def test_an_id_another_item_holds_is_refused(target: Engine) -> None:
    target.import_records(
        [HEADER, node_record(NODE_1, "first"), entity_record(NODE_2, "Ada"), edge_record(EDGE_1, NODE_1, NODE_2)]
    )
    seq = target.current_seq()
    records = [
        HEADER,
        node_record(NODE_2, "a memory where an entity is"),
        {**node_record(NODE_1, "first"), "scope": SCOPE_A},
        node_record(EDGE_1, "a node where an edge is"),
        edge_record(NODE_1, NODE_2, NODE_1),
        edge_record(EDGE_1, NODE_2, NODE_1),
        edge_record(EDGE_1, NODE_1, NODE_2),  # the same edge again: already here
    ]
    report = target.import_records(records)
    assert report.errors == (
        f"line 2: node {NODE_2}: its id is another node's, of another label or scope",
        f"line 3: node {NODE_1}: its id is another node's, of another label or scope",
        f"line 4: node {EDGE_1}: its id is an edge's",
        f"line 5: edge {NODE_1}: its id is a node's",
        f"line 6: edge {EDGE_1}: its id is another edge's, between other nodes or of another type",
    )
    assert (report.written, report.unchanged) == (0, 1)
    assert target.current_seq() == seq


def test_a_row_id_past_what_clients_hold_is_not_kept(target: Engine) -> None:
    records = [
        HEADER,
        {**node_record(NODE_1, "first"), "pk": 2**63 - 1},
        {**node_record(NODE_2, "second"), "pk": 2**63},
        {**node_record(NODE_3, "third"), "pk": 41},
    ]
    report = target.import_records(records)
    assert (report.written, report.errors) == (3, ())
    pks = {r["id"]: r["pk"] for r in target.export() if r["type"] == "node"}
    assert pks[NODE_3] == 41
    assert max(pks.values()) < 2**53
    # New rows still get ids (a row at SQLite's largest rowid would leave none).
    assert target.memories.store("written after the import").is_new


def test_an_existing_entity_gets_the_observations_it_lacks_logged_as_added(target: Engine) -> None:
    target.import_records([HEADER, entity_record(NODE_1, "Ada", "wrote the first program")])
    report = target.import_records([HEADER, entity_record(NODE_1, "Ada", "wrote the first program", "liked maths")])
    assert (report.written, report.errors) == (1, ())
    [ada] = target.graph.open(["Ada"]).entities
    assert ada.observations == ("wrote the first program", "liked maths")
    last = target.changes()[-1]
    assert (last.op, last.scope, last.target, last.data["contents"]) == (
        "add_observations",
        "shared",
        NODE_1,
        ["liked maths"],
    )


def test_under_a_grant_import_writes_only_the_scopes_it_may_write(target: Engine) -> None:
    from mnemodb.engine.tokens import Grant, granted

    target.import_records([HEADER, entity_record(NODE_1, "Ada", "in shared")])
    seq = target.current_seq()
    grant = Grant("team-a", (SCOPE_A, "shared"), SCOPE_A, (SCOPE_A,))
    records = [
        HEADER,
        private_memory(NODE_2, "mine", SCOPE_A),
        node_record(NODE_3, "not mine to write"),
        {**entity_record(NODE_1, "Ada", "in shared", "added by a"), "scope": SCOPE_A},
        entity_record(NODE_1, "Ada", "in shared", "added by a"),
        edge_record(EDGE_1, NODE_2, NODE_1, scope=SCOPE_A),  # to shared from its own scope: allowed
    ]
    with granted(grant):
        report = target.import_records(records)
    assert report.errors == (
        'line 3: node 01HV7N8Q3Y2J6W5X4Z9A0B1C33: scope "shared" is not writable with token "team-a"',
        f"line 4: node {NODE_1}: its id is another node's, of another label or scope",
        f'line 5: node {NODE_1}: scope "shared" is not writable with token "team-a"',
    )
    assert report.written == 2
    [ada] = target.graph.open(["Ada"]).entities
    assert ada.observations == ("in shared",)
    assert {c.scope for c in target.changes(seq + 1)} == {SCOPE_A}


def test_a_second_header_is_a_refused_line(target: Engine) -> None:
    report = target.import_records([HEADER, node_record(NODE_1, "first"), HEADER, node_record(NODE_2, "second")])
    assert report.written == 2
    assert report.errors == ("line 3: a second header: an export has one, on its first line",)


def test_records_may_carry_the_line_they_were_read_from(target: Engine) -> None:
    skipped: list[tuple[int, str]] = []
    report = target.import_records(
        [(3, HEADER), (7, entity_record(NODE_1, "")), (12, node_record(NODE_2, "fine"))],
        on_skip=lambda line, reason: skipped.append((line, reason)),
    )
    assert report.written == 1
    assert report.errors == (f"line 7: node {NODE_1}: entity name must not be empty",)
    assert skipped == [(7, f"node {NODE_1}: entity name must not be empty")]


def test_what_the_live_paths_accept_still_round_trips(source: Engine, target: Engine) -> None:
    # A relation true since before 1970 (the faces take such times), a self-relation (the
    # knowledge graph makes them), NUL in text, and empty observations and types.
    [ada] = source.graph.create_entities([NewEntity("Ada", "", ("", "nul \x00 inside"))])
    memory = source.memories.store("with a nul \x00 byte", props={"k": "v\x00"}).memory
    source.items.relate(add=[(memory.id, ada.id, "about", {}, -2_208_988_800_000)])
    source.graph.create_relations([NewRelation("Ada", "Ada", "knows")])
    exported = through_json(list(source.export()))
    report = target.import_records(exported)
    assert report.errors == ()
    assert comparable(list(target.export())) == comparable(exported)
