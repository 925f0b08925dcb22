"""The property-graph face (`engine.nodes`): index spec, command batches, scoped reads,
traversal, `as_of`, access statistics and vector search, over a real database of the chosen
store (`stores.py`: a SQLite file by default)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

from engine.helpers import store_at
from mnemodb.engine import Engine, EngineError, InvalidArgument, content_hash
from mnemodb.engine.graph import NewEntity
from mnemodb.engine.properties import (
    DEFAULT_SPEC,
    CloseEdge,
    Command,
    CommandFailed,
    CreateNode,
    IndexSpec,
    Link,
    Ref,
    RemoveNode,
    SetEmbedding,
    SetProps,
)
from mnemodb.engine.transfer import EXPORT_FORMAT, EXPORT_VERSION
from mnemodb.model import ops
from mnemodb.model.records import Edge, Node
from support import SCOPE_A, Clock

SCOPE_B = "01HV7N8Q3Y2J6W5X4Z9A0B1C2E"
MISSING = "01HV7N8Q3Y2J6W5X4Z9A0B1C2Z"  # a well-formed ULID no node or edge ever has
ALL = ["shared", SCOPE_A, SCOPE_B]

# Notes carry declared text, Things an equality-indexed `code`.
SPEC = IndexSpec(
    equality=(("Entity", "name"), ("Thing", "code")),
    text=(("Memory", "content"), ("Note", "body")),
)


def ids(nodes: Iterable[Node]) -> set[str]:
    return {n.id for n in nodes}


def hit_ids(hits: Sequence[tuple[Node, float]]) -> list[str]:
    return [n.id for n, _ in hits]


def edge_ids(edges: Iterable[Edge]) -> set[str]:
    return {e.id for e in edges}


def one(eng: Engine, command: Command) -> str:
    """Submit one producing command; its id."""
    [produced], _ = eng.nodes.submit([command])
    assert produced is not None
    return produced


def snapshot(eng: Engine) -> list[dict[str, Any]]:
    """Everything the store holds (nodes, edges, embeddings), for before/after comparisons."""
    return [r for r in eng.export() if r["type"] != "header"]


@pytest.fixture
def spec_eng(eng: Engine) -> Engine:
    eng.nodes.use_spec(SPEC)
    return eng


# -- the index spec --------------------------------------------------------------------------------


def test_default_spec(eng: Engine) -> None:
    assert IndexSpec(equality=(("Entity", "name"),), text=(("Memory", "content"),)) == DEFAULT_SPEC
    assert eng.nodes.spec == DEFAULT_SPEC
    assert eng.nodes.use_spec(None) == DEFAULT_SPEC
    assert DEFAULT_SPEC.to_json() == {
        "equality": [{"label": "Entity", "prop": "name"}],
        "text": [{"label": "Memory", "prop": "content"}],
    }


def test_spec_from_json_and_to_json() -> None:
    data = {
        "equality": [{"label": "Thing", "prop": "code"}, {"label": "Entity", "prop": "name"}],
        "text": [{"label": "Note", "prop": "body", "weight": 3}],
        "comment": "other keys are ignored",
    }
    spec = IndexSpec.from_json(data)
    # Pairs are kept sorted, whatever order the file lists them in.
    assert spec.equality == (("Entity", "name"), ("Thing", "code"))
    assert spec.text == (("Note", "body"),)
    assert spec.to_json() == {
        "equality": [{"label": "Entity", "prop": "name"}, {"label": "Thing", "prop": "code"}],
        "text": [{"label": "Note", "prop": "body"}],
    }
    assert IndexSpec.from_json(SPEC.to_json()) == SPEC
    assert IndexSpec.from_json({"equality": [], "text": []}) == IndexSpec()
    # One pair may be both looked up and searched.
    both = IndexSpec(equality=(("Note", "body"),), text=(("Note", "body"),))
    assert IndexSpec.from_json(both.to_json()) == both


def test_spec_round_trip_does_not_depend_on_declaration_order() -> None:
    spec = IndexSpec(equality=(("Thing", "code"), ("Entity", "name")), text=(("Note", "body"),))
    assert IndexSpec.from_json(spec.to_json()) == spec


@pytest.mark.parametrize("which", ["equality", "text"])
def test_duplicate_declaration_is_refused(which: str) -> None:
    pairs = [{"label": "A", "prop": "b"}, {"label": "C", "prop": "d"}, {"label": "A", "prop": "b"}]
    data: dict[str, Any] = {"equality": [], "text": [], which: pairs}
    with pytest.raises(InvalidArgument, match=r"^duplicate index declaration for \(A, b\)$"):
        IndexSpec.from_json(data)
    with pytest.raises(InvalidArgument, match=r"duplicate index declaration for \(A, b\)"):
        IndexSpec(**{which: (("A", "b"), ("A", "b"))})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"text": []}, "missing field `equality`"),
        ({"equality": []}, "missing field `text`"),
        ({}, "missing field `equality`"),
        ([], "an index spec is a JSON object"),
        (None, "an index spec is a JSON object"),
        ({"equality": {"label": "A", "prop": "b"}, "text": []}, "`equality` must be a list"),
        ({"equality": [], "text": [{"label": "A"}]}, "every `text` entry is an object with string `label` and `prop`"),
        ({"equality": [{"label": "A", "prop": 1}], "text": []}, "every `equality` entry"),
        ({"equality": ["A.b"], "text": []}, "every `equality` entry"),
    ],
)
def test_malformed_spec_is_refused(data: Any, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message.replace("(", r"\(").replace(")", r"\)")):
        IndexSpec.from_json(data)


def test_use_spec_persists_in_the_store(eng: Engine, db_path: Path) -> None:
    assert eng.nodes.use_spec(SPEC) == SPEC
    assert eng.nodes.spec == SPEC
    with Engine(store_at(db_path), access_interval=3600) as again:
        assert again.nodes.spec == SPEC
        # Without a spec the stored one is kept.
        assert again.nodes.use_spec(None) == SPEC
    with Engine(store_at(db_path), access_interval=3600) as third:
        assert third.nodes.spec == SPEC
        with pytest.raises(InvalidArgument, match=r"^\(Note, body\) is not equality-indexed$"):
            third.nodes.find_by_prop("Note", "body", "x")


def test_changing_the_text_spec_reindexes(eng: Engine) -> None:
    note = one(eng, CreateNode("Note", {"body": "granite quarry"}))
    memory = eng.memories.store("granite countertop").memory
    assert hit_ids(eng.nodes.search_text("granite")) == [memory.id]  # Note.body is not declared yet

    eng.nodes.use_spec(SPEC)
    assert set(hit_ids(eng.nodes.search_text("granite"))) == {note, memory.id}
    assert hit_ids(eng.nodes.search_text("quarry")) == [note]

    without_notes = IndexSpec(equality=SPEC.equality, text=(("Memory", "content"),))
    eng.nodes.use_spec(without_notes)
    assert hit_ids(eng.nodes.search_text("granite")) == [memory.id]
    assert eng.nodes.search_text("quarry") == []

    only_notes = IndexSpec(equality=SPEC.equality, text=(("Note", "body"),))
    eng.nodes.use_spec(only_notes)
    assert hit_ids(eng.nodes.search_text("granite")) == [note]


def test_changing_the_equality_spec_finds_nodes_written_before(eng: Engine) -> None:
    thing = one(eng, CreateNode("Thing", {"code": "X1"}))
    with pytest.raises(InvalidArgument, match=r"\(Thing, code\) is not equality-indexed"):
        eng.nodes.find_by_prop("Thing", "code", "X1")
    eng.nodes.use_spec(SPEC)
    assert ids(eng.nodes.find_by_prop("Thing", "code", "X1")) == {thing}


# -- submit: each command ---------------------------------------------------------------------------


def test_create_node_memory_entity_and_any_label(eng: Engine, clock: Clock) -> None:
    produced, seq = eng.nodes.submit(
        [
            CreateNode("Memory", {"content": "the first program", "origin": "notes"}),
            CreateNode("Entity", {"name": "Ada", "entityType": "person", "born": 1815}),
            CreateNode("Gadget", {"size": 2.5, "ok": True, "tag": "x"}, scope=SCOPE_A),
        ]
    )
    memory_id, entity_id, gadget_id = produced
    assert seq == 3 == eng.current_seq()
    assert memory_id and entity_id and gadget_id

    memory = eng.nodes.get_node(memory_id)
    assert memory is not None
    assert (memory.label, memory.scope, memory.created_at) == ("Memory", "shared", clock.now)
    assert memory.props == {"content": "the first program", "origin": "notes"}
    stored = eng.memories.get(content_hash("the first program"))
    assert stored is not None and stored.id == memory_id

    entity = eng.nodes.get_node(entity_id)
    assert entity is not None
    assert (entity.label, entity.props) == ("Entity", {"name": "Ada", "entityType": "person", "born": 1815})
    [kg_entity] = eng.graph.open(["Ada"]).entities
    assert (kg_entity.id, kg_entity.entity_type) == (entity_id, "person")

    assert eng.nodes.get_node(gadget_id) is None  # written to SCOPE_A, read from shared
    gadget = eng.nodes.get_node(gadget_id, scopes=[SCOPE_A])
    assert gadget is not None
    assert (gadget.label, gadget.scope, gadget.props) == ("Gadget", SCOPE_A, {"size": 2.5, "ok": True, "tag": "x"})


def test_create_node_uses_the_engines_write_scope(db_path: Path, clock: Clock) -> None:
    with Engine(store_at(db_path), write_scope=SCOPE_A, clock=clock, access_interval=3600) as private:
        node_id = one(private, CreateNode("Thing"))
        node = private.nodes.get_node(node_id)
        assert node is not None and node.scope == SCOPE_A
        assert private.nodes.get_node(node_id, scopes=["shared"]) is None


def test_link_and_the_cross_scope_rule(eng: Engine, clock: Clock) -> None:
    shared, in_a, in_b = eng.nodes.submit(
        [CreateNode("Thing"), CreateNode("Thing", scope=SCOPE_A), CreateNode("Thing", scope=SCOPE_B)]
    )[0]
    assert shared and in_a and in_b
    before = eng.current_seq()
    with pytest.raises(CommandFailed, match=r"^CreateEdge: cross-scope edge requires at least one Shared endpoint$"):
        eng.nodes.submit([Link(in_a, in_b, "knows")])
    assert eng.current_seq() == before

    to_shared = one(eng, Link(in_a, shared, "knows", props={"w": 1}))
    from_shared = one(eng, Link(shared, in_b, "knows", scope=SCOPE_B))
    same_private = one(eng, Link(in_a, in_a, "self", scope=SCOPE_A))
    assert eng.current_seq() == before + 3

    _, edges = eng.nodes.traverse(in_a, max_hops=1, scopes=ALL)
    assert edge_ids(edges) == {to_shared, same_private}
    edge = next(e for e in edges if e.id == to_shared)
    assert (edge.src, edge.dst, edge.type, edge.scope, edge.props) == (in_a, shared, "knows", "shared", {"w": 1})
    assert (edge.valid_from, edge.valid_to, edge.created_at) == (clock.now, None, clock.now)
    _, edges = eng.nodes.traverse(in_b, max_hops=1, scopes=ALL)
    [edge] = edges
    assert (edge.id, edge.scope) == (from_shared, SCOPE_B)  # the edge's scope is its own


def test_link_refuses_an_empty_edge_type_like_import(eng: Engine, clock: Clock) -> None:
    a, b = eng.nodes.submit([CreateNode("Thing"), CreateNode("Thing")])[0]
    assert a and b
    header = {"type": "header", "format": EXPORT_FORMAT, "version": EXPORT_VERSION}
    edge_id = "01HV7N8Q3Y2J6W5X4Z9A0B1C3Z"
    untyped = {
        "type": "edge",
        "id": edge_id,
        "from": a,
        "to": b,
        "edge_type": "",
        "scope": "shared",
        "valid_from": clock.now,
        "created_at": clock.now,
    }
    assert eng.import_records([header, untyped]).errors == (f"line 2: edge {edge_id}: edge type must not be empty",)
    with pytest.raises(InvalidArgument, match="edge type must not be empty"):
        eng.nodes.submit([Link(a, b, "")])


def test_set_props_adds_overwrites_and_null_removes(eng: Engine, clock: Clock) -> None:
    node = one(eng, CreateNode("Thing", {"a": 1, "b": "two", "c": True}))
    clock.now += 10
    _, seq = eng.nodes.submit([SetProps(node, {"a": 5, "b": None, "d": 1.5, "never": None})])
    assert seq == eng.current_seq()
    found = eng.nodes.get_node(node)
    assert found is not None
    assert found.props == {"a": 5, "c": True, "d": 1.5}
    assert found.updated_at == clock.now
    # An empty SetProps is allowed and still logged.
    _, again = eng.nodes.submit([SetProps(node, {})])
    assert again == seq + 1
    assert eng.changes(again)[0].data == {"id": node, "props": {}}


def test_set_props_memory_content_updates_search_and_hash(eng: Engine) -> None:
    memory_id = one(eng, CreateNode("Memory", {"content": "walnut orchard"}))
    assert hit_ids(eng.nodes.search_text("walnut")) == [memory_id]
    eng.nodes.submit([SetProps(memory_id, {"content": "cedar forest"})])
    assert eng.nodes.search_text("walnut") == []
    assert hit_ids(eng.nodes.search_text("cedar")) == [memory_id]
    assert eng.memories.get(content_hash("walnut orchard")) is None
    moved = eng.memories.get(content_hash("cedar forest"))
    assert moved is not None and moved.id == memory_id
    assert [h.memory.id for h in eng.memories.search("cedar")] == [memory_id]
    with pytest.raises(InvalidArgument, match="content must be a non-empty string"):
        eng.nodes.submit([SetProps(memory_id, {"content": None})])


def test_set_props_entity_name_updates_find_by_prop(eng: Engine) -> None:
    entity = one(eng, CreateNode("Entity", {"name": "Ada"}))
    eng.nodes.submit([SetProps(entity, {"name": "Ada Lovelace", "role": "analyst"})])
    assert eng.nodes.find_by_prop("Entity", "name", "Ada") == []
    [found] = eng.nodes.find_by_prop("Entity", "name", "Ada Lovelace")
    assert (found.id, found.props) == (entity, {"name": "Ada Lovelace", "role": "analyst"})
    assert eng.graph.open(["Ada"]).entities == ()
    [renamed] = eng.graph.open(["Ada Lovelace"]).entities
    assert renamed.id == entity
    with pytest.raises(InvalidArgument, match="name must be a non-empty string"):
        eng.nodes.submit([SetProps(entity, {"name": None})])


def test_remove_node_drops_edges_both_ways_and_leaves_search(eng: Engine) -> None:
    produced, _ = eng.nodes.submit(
        [
            CreateNode("Memory", {"content": "basalt column"}),
            CreateNode("Thing"),
            CreateNode("Thing"),
            Link(Ref(0), Ref(1), "out"),
            Link(Ref(2), Ref(0), "in"),
            Link(Ref(1), Ref(2), "other"),
            SetEmbedding(Ref(0), "m", (1.0, 0.0)),
        ]
    )
    memory, left, right, out_edge, in_edge, other = produced[:6]
    assert memory and left and right and other
    eng.nodes.submit([RemoveNode(memory)])
    assert eng.nodes.get_node(memory) is None
    assert eng.nodes.search_text("basalt") == []
    assert eng.memories.get(content_hash("basalt column")) is None
    assert eng.nodes.search_vectors("m", [1.0, 0.0]) == []
    nodes, edges = eng.nodes.traverse(left, max_hops=4)
    assert ids(nodes) == {left, right}
    assert edge_ids(edges) == {other}
    remaining = {r["id"] for r in snapshot(eng) if r["type"] == "edge"}
    assert remaining == {other}
    assert out_edge not in remaining and in_edge not in remaining
    assert eng.changes(eng.current_seq())[0].op == "remove_node"


def test_close_edge(eng: Engine, clock: Clock) -> None:
    a, b, edge = eng.nodes.submit([CreateNode("Thing"), CreateNode("Thing"), Link(Ref(0), Ref(1), "knows")])[0]
    assert a and b and edge
    clock.now += 100
    _, seq = eng.nodes.submit([CloseEdge(edge)])
    change = eng.changes(seq)[0]
    assert (change.op, change.target, change.data) == ("close_edge", edge, {"id": edge, "valid_to": clock.now})
    nodes, edges = eng.nodes.traverse(a)
    assert (ids(nodes), edges) == ({a}, [])
    with pytest.raises(CommandFailed, match=f"^CloseEdge: edge {edge} already closed$") as closed:
        eng.nodes.submit([CloseEdge(edge)])
    assert (closed.value.subject, closed.value.subject_kind, closed.value.reason) == (edge, "edge", "already closed")
    with pytest.raises(CommandFailed, match=f"^CloseEdge: edge {MISSING} not found$"):
        eng.nodes.submit([CloseEdge(MISSING)])
    # A node id is not an edge id.
    with pytest.raises(CommandFailed, match=f"^CloseEdge: edge {b} not found$"):
        eng.nodes.submit([CloseEdge(b)])
    assert eng.current_seq() == seq


def test_set_embedding_one_vector_per_node(eng: Engine) -> None:
    a, b = eng.nodes.submit([CreateNode("Thing"), CreateNode("Thing")])[0]
    assert a and b
    eng.nodes.submit([SetEmbedding(a, "m", (1.0, 0.0)), SetEmbedding(b, "m", (0.0, 1.0))])
    assert hit_ids(eng.nodes.search_vectors("m", [1.0, 0.0])) == [a, b]
    # Replacing under the same model.
    eng.nodes.submit([SetEmbedding(a, "m", (0.0, 1.0))])
    hits = eng.nodes.search_vectors("m", [0.0, 1.0])
    assert hit_ids(hits) == [a, b]
    assert [s for _, s in hits] == pytest.approx([1.0, 1.0])
    # A new model replaces the old one: one vector per node.
    eng.nodes.submit([SetEmbedding(a, "other", (1.0, 2.0, 3.0))])
    assert hit_ids(eng.nodes.search_vectors("m", [0.0, 1.0])) == [b]
    assert hit_ids(eng.nodes.search_vectors("other", [1.0, 2.0, 3.0])) == [a]
    assert [r["model"] for r in snapshot(eng) if r["type"] == "embedding" and r["node"] == a] == ["other"]


def test_set_embedding_dimension_rules(eng: Engine) -> None:
    a, b, c = eng.nodes.submit([CreateNode("Thing"), CreateNode("Thing"), CreateNode("Thing")])[0]
    assert a and b and c
    eng.nodes.submit([SetEmbedding(a, "m", (1.0, 0.0))])
    before = eng.current_seq()
    with pytest.raises(InvalidArgument, match=r'^embedding dim 3 does not match existing slab dim 2 for model "m"$'):
        eng.nodes.submit([SetEmbedding(b, "m", (1.0, 0.0, 0.0))])
    with pytest.raises(InvalidArgument, match=r'^inconsistent embedding dim for model "m2" within batch: 2 vs 3$'):
        eng.nodes.submit([SetEmbedding(b, "m2", (1.0, 0.0)), SetEmbedding(c, "m2", (1.0, 0.0, 0.0))])
    with pytest.raises(InvalidArgument, match=r'^embedding for model "m" must have at least one dimension$'):
        eng.nodes.submit([SetEmbedding(b, "m", ())])
    for bad in (math.inf, -math.inf, math.nan, 1e300):
        with pytest.raises(InvalidArgument, match=r"^vector element 1 is not finite$"):
            eng.nodes.submit([SetEmbedding(b, "m", (0.5, bad))])
    assert eng.current_seq() == before
    # The only vector of a model may change its dimension (nothing else holds the model).
    eng.nodes.submit([SetEmbedding(a, "m", (1.0, 0.0, 0.0))])
    assert hit_ids(eng.nodes.search_vectors("m", [1.0, 0.0, 0.0])) == [a]


def test_a_model_keeps_one_dimension_while_other_nodes_hold_it(eng: Engine) -> None:
    a, b = eng.nodes.submit([CreateNode("Thing"), CreateNode("Thing")])[0]
    assert a and b
    eng.nodes.submit([SetEmbedding(a, "m", (1.0, 0.0)), SetEmbedding(b, "m", (0.0, 1.0))])
    try:
        with pytest.raises(InvalidArgument, match="does not match existing slab dim 2"):
            eng.nodes.submit([SetEmbedding(a, "m", (1.0, 0.0, 0.0))])
    finally:
        # Whatever was written, search over the model must still work.
        eng.nodes.search_vectors("m", [1.0, 0.0])


def test_back_references(eng: Engine) -> None:
    produced, seq = eng.nodes.submit(
        [
            CreateNode("Entity", {"name": "Ada"}),
            CreateNode("Memory", {"content": "Ada wrote the first program"}),
            Link(Ref(1), Ref(0), "mentions"),
            SetProps(Ref(0), {"role": "analyst"}),
            CloseEdge(Ref(2)),
            SetEmbedding(Ref(1), "m", (1.0,)),
        ]
    )
    entity, memory, edge, *rest = produced
    assert rest == [None, None, None]
    assert entity and memory and edge
    assert seq == 6 == eng.current_seq()
    assert [(c.op, c.target) for c in eng.changes()] == [
        ("create_node", entity),
        ("create_node", memory),
        ("create_edge", edge),
        ("set_props", entity),
        ("close_edge", edge),
        ("set_embedding", memory),
    ]
    link = eng.changes(3)[0].data
    assert (link["from"], link["to"], link["type"]) == (memory, entity, "mentions")
    with pytest.raises(InvalidArgument, match=r"^back-reference #0 refers to a command that produces no id$"):
        eng.nodes.submit([SetProps(entity, {"x": 1}), SetProps(Ref(0), {"y": 2})])
    assert eng.current_seq() == 6


def test_a_forward_back_reference_is_an_invalid_argument(eng: Engine) -> None:
    with pytest.raises(InvalidArgument):
        eng.nodes.submit([CreateNode("Thing"), SetProps(Ref(1), {"a": 1})])


def test_seqs_are_gapless_and_match_current_seq(eng: Engine) -> None:
    assert eng.current_seq() == 0
    previous = 0
    for size in (1, 3, 2):
        _, seq = eng.nodes.submit([CreateNode("Thing", {"i": i}) for i in range(size)])
        assert seq == previous + size == eng.current_seq()
        assert [c.seq for c in eng.changes(previous + 1)] == list(range(previous + 1, seq + 1))
        previous = seq
    eng.memories.store("written by another face")
    _, seq = eng.nodes.submit([CreateNode("Thing")])
    assert seq == previous + 2 == eng.current_seq()


def test_an_empty_batch_is_refused(eng: Engine) -> None:
    with pytest.raises(InvalidArgument, match=r"^empty op batch$"):
        eng.nodes.submit([])
    assert eng.current_seq() == 0


def test_command_failed_names_its_parts(eng: Engine) -> None:
    thing = one(eng, CreateNode("Thing"))
    in_a, in_b = eng.nodes.submit([CreateNode("Thing", scope=SCOPE_A), CreateNode("Thing", scope=SCOPE_B)])[0]
    assert in_a and in_b

    def failure(commands: list[Command]) -> CommandFailed:
        with pytest.raises(CommandFailed) as caught:
            eng.nodes.submit(commands)
        assert isinstance(caught.value, InvalidArgument)
        return caught.value

    cases: list[tuple[list[Command], str, str, str, str | None, str]] = [
        ([SetProps(MISSING, {"a": 1})], "SetNodeProps", MISSING, "node", None, "not found"),
        ([RemoveNode(MISSING)], "RemoveNode", MISSING, "node", None, "not found"),
        ([SetEmbedding(MISSING, "m", (1.0,))], "SetEmbedding", MISSING, "node", None, "not found"),
        ([CloseEdge(MISSING)], "CloseEdge", MISSING, "edge", None, "not found"),
        ([Link(MISSING, thing, "x")], "CreateEdge", MISSING, "node", "from", "not found"),
        ([Link(thing, MISSING, "x")], "CreateEdge", MISSING, "node", "to", "not found"),
    ]
    for commands, op, subject, kind, end, reason in cases:
        err = failure(commands)
        assert (err.op, err.subject, err.subject_kind, err.end, err.reason) == (op, subject, kind, end, reason)
        where = f"{end} " if end else ""
        assert str(err) == f"{op}: {where}{kind} {subject} {reason}"
        if op == "CreateEdge":
            assert err.edge is not None and len(err.edge) == 26
        else:
            assert err.edge is None

    cross = failure([Link(in_a, in_b, "x")])
    assert (cross.op, cross.subject, cross.subject_kind, cross.end) == ("CreateEdge", None, None, None)
    assert cross.reason == "cross-scope edge requires at least one Shared endpoint"
    assert cross.edge is not None
    assert str(cross) == "CreateEdge: cross-scope edge requires at least one Shared endpoint"

    # The failing command is named even when earlier ones in the batch went well.
    err = failure([CreateNode("Thing"), SetProps(Ref(0), {"a": 1}), RemoveNode(MISSING)])
    assert (err.op, err.subject) == ("RemoveNode", MISSING)
    assert eng.current_seq() == 3


# -- atomicity ------------------------------------------------------------------------------------------


def _atomic_world(eng: Engine) -> dict[str, str]:
    produced, _ = eng.nodes.submit(
        [
            CreateNode("Note", {"body": "quartz vein", "v": 1}),
            CreateNode("Thing", {"code": "T1"}),
            Link(Ref(0), Ref(1), "near"),
            Link(Ref(1), Ref(0), "closed"),
            CloseEdge(Ref(3)),
            SetEmbedding(Ref(0), "m", (1.0, 0.0)),
            SetEmbedding(Ref(1), "m", (0.0, 1.0)),
        ]
    )
    note, thing, edge, closed = produced[:4]
    assert note and thing and edge and closed
    eng.memories.store("quartz crystal")
    return {"note": note, "thing": thing, "edge": edge, "closed": closed}


def _failing_batches(w: dict[str, str]) -> dict[str, tuple[list[Command], str]]:
    """Batches whose last command fails after earlier ones of every kind ran, and what the
    error says."""
    writes: list[Command] = [
        CreateNode("Note", {"body": "quartz sand"}),
        CreateNode("Memory", {"content": "quartz clock"}),
        SetProps(w["note"], {"body": "granite", "v": None}),
        Link(Ref(0), w["thing"], "near"),
        CloseEdge(w["edge"]),
        SetEmbedding(w["thing"], "m", (1.0, 0.0)),
        SetEmbedding(Ref(0), "m", (1.0, 1.0)),
        RemoveNode(w["thing"]),
    ]
    return {
        "first command": ([SetProps(MISSING, {"a": 1}), *writes], f"SetNodeProps: node {MISSING} not found"),
        "missing node": ([*writes[:3], SetProps(MISSING, {"a": 1})], f"SetNodeProps: node {MISSING} not found"),
        "closed edge": ([*writes[:7], CloseEdge(w["closed"])], f"CloseEdge: edge {w['closed']} already closed"),
        "edge closed in the batch": (
            [*writes[:5], CloseEdge(w["edge"])],
            f"CloseEdge: edge {w['edge']} already closed",
        ),
        "edge removed with its node": ([*writes, CloseEdge(Ref(3))], "CloseEdge: edge .* not found"),
        "node removed in the batch": ([*writes, SetProps(w["thing"], {"a": 1})], "SetNodeProps: node .* not found"),
        "link to a removed node": ([*writes, Link(Ref(0), w["thing"], "x")], "CreateEdge: to node .* not found"),
        "cross scope": (
            [
                *writes[:5],
                CreateNode("Thing", scope=SCOPE_A),
                CreateNode("Thing", scope=SCOPE_B),
                Link(Ref(5), Ref(6), "x"),
            ],
            "cross-scope edge",
        ),
        "dimension within the batch": (
            [*writes[:7], SetEmbedding(w["note"], "m", (1.0, 1.0, 1.0))],
            "inconsistent embedding dim",
        ),
        "dimension against the store": (
            [*writes[:5], SetEmbedding(Ref(0), "m", (1.0, 1.0, 1.0))],
            "does not match existing slab dim 2",
        ),
        "no id": (
            [*writes[:4], SetProps(Ref(2), {"a": 1})],
            "back-reference #2 refers to a command that produces no id",
        ),
        "memory clash": ([*writes[:4], SetProps(Ref(1), {"content": "quartz crystal"})], "Content already exists"),
    }


FAILING = list(_failing_batches(dict.fromkeys(("note", "thing", "edge", "closed"), MISSING)))


@pytest.mark.parametrize("case", FAILING)
def test_a_failing_command_writes_nothing(spec_eng: Engine, clock: Clock, case: str) -> None:
    eng = spec_eng
    world = _atomic_world(eng)
    batch, message = _failing_batches(world)[case]
    seq = eng.current_seq()
    before = snapshot(eng)
    search_before = [hit_ids(eng.nodes.search_text(q, k=20)) for q in ("quartz", "granite", "sand", "clock")]
    vectors_before = eng.nodes.search_vectors("m", [1.0, 0.0])
    clock.now += 1000
    with pytest.raises(EngineError, match=message):
        eng.nodes.submit(batch)
    assert eng.current_seq() == seq
    assert snapshot(eng) == before
    assert [hit_ids(eng.nodes.search_text(q, k=20)) for q in ("quartz", "granite", "sand", "clock")] == search_before
    assert [(n.id, s) for n, s in eng.nodes.search_vectors("m", [1.0, 0.0])] == [(n.id, s) for n, s in vectors_before]
    assert eng.memories.get(content_hash("quartz clock")) is None
    nodes, edges = eng.nodes.traverse(world["note"])
    assert ids(nodes) == {world["note"], world["thing"]}
    assert edge_ids(edges) == {world["edge"]}


def test_the_same_writes_without_the_failing_command_commit(spec_eng: Engine) -> None:
    """The control for the atomicity cases: the writes before the failure are valid."""
    eng = spec_eng
    world = _atomic_world(eng)
    batch, _ = _failing_batches(world)["node removed in the batch"]
    seq = eng.current_seq()
    _, last = eng.nodes.submit(batch[:-1])
    assert last == seq + len(batch) - 1 == eng.current_seq()
    assert eng.nodes.get_node(world["thing"]) is None
    assert eng.memories.get(content_hash("quartz clock")) is not None


# -- find_by_prop ---------------------------------------------------------------------------------------


def test_find_by_prop_is_exact_and_case_sensitive(spec_eng: Engine) -> None:
    eng = spec_eng
    ada = one(eng, CreateNode("Entity", {"name": "Ada"}))
    lower = one(eng, CreateNode("Entity", {"name": "ada"}))
    assert ids(eng.nodes.find_by_prop("Entity", "name", "Ada")) == {ada}
    assert ids(eng.nodes.find_by_prop("Entity", "name", "ada")) == {lower}
    for near in ("ADA", "Ada ", " Ada", "Ad", "Ada Lovelace"):
        assert eng.nodes.find_by_prop("Entity", "name", near) == []
    thing = one(eng, CreateNode("Thing", {"code": "Z-9"}))
    assert ids(eng.nodes.find_by_prop("Thing", "code", "Z-9")) == {thing}
    assert eng.nodes.find_by_prop("Thing", "code", "z-9") == []
    # The label is part of the pair: an Entity with a `code` is not a Thing.
    one(eng, CreateNode("Entity", {"name": "coded", "code": "Z-9"}))
    assert ids(eng.nodes.find_by_prop("Thing", "code", "Z-9")) == {thing}


def test_find_by_prop_is_type_sensitive(spec_eng: Engine) -> None:
    eng = spec_eng
    as_str, as_int, as_true, as_one, as_false, as_zero, as_float = eng.nodes.submit(
        [
            CreateNode("Thing", {"code": "1815"}),
            CreateNode("Thing", {"code": 1815}),
            CreateNode("Thing", {"code": True}),
            CreateNode("Thing", {"code": 1}),
            CreateNode("Thing", {"code": False}),
            CreateNode("Thing", {"code": 0}),
            CreateNode("Thing", {"code": 1815.0}),
        ]
    )[0]
    assert ids(eng.nodes.find_by_prop("Thing", "code", "1815")) == {as_str}
    assert ids(eng.nodes.find_by_prop("Thing", "code", 1815)) == {as_int}
    assert ids(eng.nodes.find_by_prop("Thing", "code", True)) == {as_true}
    assert ids(eng.nodes.find_by_prop("Thing", "code", 1)) == {as_one}
    assert ids(eng.nodes.find_by_prop("Thing", "code", False)) == {as_false}
    assert ids(eng.nodes.find_by_prop("Thing", "code", 0)) == {as_zero}
    assert as_float not in ids(eng.nodes.find_by_prop("Thing", "code", 1815))
    # An entity's name is a string: other types find nothing.
    one(eng, CreateNode("Entity", {"name": "1815"}))
    assert eng.nodes.find_by_prop("Entity", "name", 1815) == []


def test_find_by_prop_refusals(spec_eng: Engine) -> None:
    eng = spec_eng
    with pytest.raises(InvalidArgument, match=r"^\(Entity, zzz\) is not equality-indexed$"):
        eng.nodes.find_by_prop("Entity", "zzz", "x")
    with pytest.raises(InvalidArgument, match=r"^\(Memory, content\) is not equality-indexed$"):
        eng.nodes.find_by_prop("Memory", "content", "x")
    with pytest.raises(InvalidArgument, match=r"^Float values are not equality-indexable$"):
        eng.nodes.find_by_prop("Thing", "code", 1.5)
    with pytest.raises(InvalidArgument, match="scopes must not be empty"):
        eng.nodes.find_by_prop("Thing", "code", "x", scopes=[])


def test_find_by_prop_is_scoped(spec_eng: Engine) -> None:
    eng = spec_eng
    shared, in_a, in_b = eng.nodes.submit(
        [
            CreateNode("Entity", {"name": "Ada"}),
            CreateNode("Entity", {"name": "Ada"}, scope=SCOPE_A),
            CreateNode("Entity", {"name": "Ada"}, scope=SCOPE_B),
        ]
    )[0]
    assert len({shared, in_a, in_b}) == 3
    assert ids(eng.nodes.find_by_prop("Entity", "name", "Ada")) == {shared}
    assert ids(eng.nodes.find_by_prop("Entity", "name", "Ada", scopes=[SCOPE_A])) == {in_a}
    assert ids(eng.nodes.find_by_prop("Entity", "name", "Ada", scopes=[SCOPE_A, "shared"])) == {shared, in_a}
    assert ids(eng.nodes.find_by_prop("Entity", "name", "Ada", scopes=ALL)) == {shared, in_a, in_b}


def test_find_by_prop_over_memory_content(eng: Engine) -> None:
    eng.nodes.use_spec(IndexSpec(equality=(("Memory", "content"),), text=(("Memory", "content"),)))
    memory = eng.memories.store("Exact Text").memory
    assert ids(eng.nodes.find_by_prop("Memory", "content", "Exact Text")) == {memory.id}
    assert eng.nodes.find_by_prop("Memory", "content", "exact text") == []


def test_find_by_prop_sees_the_properties_get_node_shows(eng: Engine) -> None:
    eng.nodes.use_spec(
        IndexSpec(
            equality=(("Entity", "name"), ("Entity", "entityType"), ("Memory", "importance")),
            text=(("Memory", "content"),),
        )
    )
    entity = one(eng, CreateNode("Entity", {"name": "Ada", "entityType": "person"}))
    memory = eng.memories.store("an important memory", importance=5).memory
    node = eng.nodes.get_node(entity)
    assert node is not None and node.props["entityType"] == "person"
    assert ids(eng.nodes.find_by_prop("Entity", "entityType", "person")) == {entity}
    assert ids(eng.nodes.find_by_prop("Memory", "importance", 5)) == {memory.id}


# -- search_text ----------------------------------------------------------------------------------------


def test_search_text_ranks_by_bm25(eng: Engine) -> None:
    dense, sparse, *_ = eng.nodes.submit(
        [
            CreateNode("Memory", {"content": "falcon falcon falcon"}),
            CreateNode("Memory", {"content": "a falcon among many other words in a long sentence here"}),
            CreateNode("Memory", {"content": "sparrow"}),
            CreateNode("Memory", {"content": "heron"}),
            CreateNode("Memory", {"content": "owl"}),
            CreateNode("Memory", {"content": "crow"}),
        ]
    )[0]
    hits = eng.nodes.search_text("falcon")
    assert hit_ids(hits) == [dense, sparse]
    assert hits[0][1] > hits[1][1] > 0
    assert hit_ids(eng.nodes.search_text("falcon", k=1)) == [dense]
    # Terms are OR'd; a node matching more of them ranks higher.
    both = one(eng, CreateNode("Memory", {"content": "falcon sparrow"}))
    assert hit_ids(eng.nodes.search_text("sparrow falcon", k=2))[0] == both
    assert len(eng.nodes.search_text("falcon sparrow heron owl crow", k=100)) == 7


def test_search_text_refusals(eng: Engine) -> None:
    with pytest.raises(InvalidArgument, match=r"^text search requires k > 0$"):
        eng.nodes.search_text("x", k=0)
    with pytest.raises(InvalidArgument, match=r"^text search requires k > 0$"):
        eng.nodes.search_text("x", k=-1)
    for nothing in ("", "   ", "!?-,."):
        with pytest.raises(InvalidArgument, match=r"^query has no searchable terms$"):
            eng.nodes.search_text(nothing)
    assert eng.nodes.search_text("absent") == []


def test_search_text_is_scoped(eng: Engine) -> None:
    shared = eng.memories.store("pelican shared").memory.id
    in_a = eng.memories.store("pelican private", scope=SCOPE_A).memory.id
    in_b = one(eng, CreateNode("Memory", {"content": "pelican other"}, scope=SCOPE_B))
    assert hit_ids(eng.nodes.search_text("pelican")) == [shared]
    assert hit_ids(eng.nodes.search_text("pelican", scopes=[SCOPE_A])) == [in_a]
    assert set(hit_ids(eng.nodes.search_text("pelican", scopes=[SCOPE_B, "shared"]))) == {shared, in_b}
    assert set(hit_ids(eng.nodes.search_text("pelican", scopes=ALL))) == {shared, in_a, in_b}


def test_search_text_sees_declared_text_of_other_labels(spec_eng: Engine, db_path: Path, clock: Clock) -> None:
    eng = spec_eng
    note = one(eng, CreateNode("Note", {"body": "meteor shower", "size": 3}))
    memory = eng.memories.store("meteor crater").memory
    assert set(hit_ids(eng.nodes.search_text("meteor"))) == {note, memory.id}
    # Undeclared props and other labels are not text.
    one(eng, CreateNode("Thing", {"body": "meteor"}))
    one(eng, CreateNode("Note", {"title": "comet"}))
    assert set(hit_ids(eng.nodes.search_text("meteor"))) == {note, memory.id}
    assert eng.nodes.search_text("comet") == []
    # A body that is not a string is not text.
    one(eng, CreateNode("Note", {"body": 42}))
    assert eng.nodes.search_text("42") == []

    # Writes through another engine on the same database: this one catches up.
    with Engine(store_at(db_path), clock=clock, access_interval=3600) as other:
        assert other.nodes.spec == SPEC
        other.nodes.submit([SetProps(note, {"body": "aurora"})])
        late = one(other, CreateNode("Note", {"body": "nebula"}))
    assert hit_ids(eng.nodes.search_text("meteor")) == [memory.id]
    assert hit_ids(eng.nodes.search_text("aurora")) == [note]
    assert hit_ids(eng.nodes.search_text("nebula")) == [late]
    eng.nodes.submit([SetProps(late, {"body": None})])
    assert eng.nodes.search_text("nebula") == []
    eng.nodes.submit([RemoveNode(note)])
    assert eng.nodes.search_text("aurora") == []


def test_search_text_sees_what_other_faces_write(eng: Engine) -> None:
    eng.nodes.use_spec(IndexSpec(equality=(("Entity", "name"),), text=(("Memory", "content"), ("Entity", "name"))))
    memory = eng.memories.store("glacier lake").memory
    [entity] = eng.graph.create_entities([NewEntity("Glacier")])
    assert set(hit_ids(eng.nodes.search_text("glacier"))) == {memory.id, entity.id}
    eng.memories.update(memory.hash, content="desert dune")
    assert hit_ids(eng.nodes.search_text("glacier")) == [entity.id]
    assert hit_ids(eng.nodes.search_text("dune")) == [memory.id]
    eng.nodes.submit([SetProps(entity.id, {"name": "Tundra"})])
    assert eng.nodes.search_text("glacier") == []
    assert hit_ids(eng.nodes.search_text("tundra")) == [entity.id]
    eng.graph.delete_entities(["Tundra"])
    assert eng.nodes.search_text("tundra") == []
    assert eng.memories.delete(content_hash("desert dune"))
    assert eng.nodes.search_text("dune") == []


def test_a_memory_is_one_search_hit_whatever_props_match(eng: Engine) -> None:
    eng.nodes.use_spec(IndexSpec(text=(("Memory", "content"), ("Memory", "summary"))))
    memory = eng.memories.store("river stone", summary="river delta").memory
    assert hit_ids(eng.nodes.search_text("river")) == [memory.id]


def test_undeclared_memory_summary_is_not_searched(eng: Engine) -> None:
    assert eng.nodes.spec == DEFAULT_SPEC
    eng.memories.store("river stone", summary="estuary")
    assert eng.nodes.search_text("estuary") == []


# -- traverse -------------------------------------------------------------------------------------------


def _chain(eng: Engine, length: int) -> list[str]:
    """n0 -> n1 -> ... -> n(length-1), all `next` edges, in shared."""
    commands: list[Command] = [CreateNode("Thing", {"i": i}) for i in range(length)]
    commands += [Link(Ref(i), Ref(i + 1), "next") for i in range(length - 1)]
    produced, _ = eng.nodes.submit(commands)
    return [p for p in produced if p is not None]


def test_traverse_hops(eng: Engine) -> None:
    chain = _chain(eng, 7)
    nodes_, edges_ = chain[:7], chain[7:]
    for hops in range(1, 5):
        nodes, edges = eng.nodes.traverse(nodes_[0], max_hops=hops)
        assert ids(nodes) == set(nodes_[: hops + 1])
        assert edge_ids(edges) == set(edges_[:hops])
    nodes, _ = eng.nodes.traverse(nodes_[3])  # default: 2 hops, both ways
    assert ids(nodes) == set(nodes_[1:6])
    for bad in (0, 5, -1):
        with pytest.raises(InvalidArgument, match=rf"^max_hops must be in 1\.\.=4, got {bad}$"):
            eng.nodes.traverse(nodes_[0], max_hops=bad)


def test_traverse_missing_seed_is_empty(eng: Engine) -> None:
    assert eng.nodes.traverse(MISSING) == ([], [])


def test_traverse_direction(eng: Engine) -> None:
    chain = _chain(eng, 3)
    first, middle, last, e01, e12 = chain
    assert ids(eng.nodes.traverse(middle, direction="out")[0]) == {middle, last}
    assert edge_ids(eng.nodes.traverse(middle, direction="out")[1]) == {e12}
    assert ids(eng.nodes.traverse(middle, direction="in")[0]) == {middle, first}
    assert edge_ids(eng.nodes.traverse(middle, direction="in")[1]) == {e01}
    assert ids(eng.nodes.traverse(middle, direction="both")[0]) == {first, middle, last}
    assert ids(eng.nodes.traverse(last, direction="out", max_hops=4)[0]) == {last}
    assert ids(eng.nodes.traverse(last, direction="in", max_hops=4)[0]) == {first, middle, last}
    # A cycle is walked once.
    back = one(eng, Link(last, first, "next"))
    nodes, edges = eng.nodes.traverse(first, direction="out", max_hops=4)
    assert sorted(n.id for n in nodes) == sorted([first, middle, last])
    assert edge_ids(edges) == {e01, e12, back}


def test_traverse_edge_types(eng: Engine) -> None:
    hub, a, b, to_a, to_b = eng.nodes.submit(
        [CreateNode("Thing"), CreateNode("Thing"), CreateNode("Thing"), Link(Ref(0), Ref(1), "likes"),
         Link(Ref(0), Ref(2), "knows")]
    )[0]  # fmt: skip
    assert hub and a and b and to_a and to_b
    assert ids(eng.nodes.traverse(hub, edge_types=["likes"])[0]) == {hub, a}
    assert edge_ids(eng.nodes.traverse(hub, edge_types=["likes"])[1]) == {to_a}
    assert ids(eng.nodes.traverse(hub, edge_types=["likes", "knows"])[0]) == {hub, a, b}
    assert ids(eng.nodes.traverse(hub, edge_types=["Likes"])[0]) == {hub}  # exact strings
    assert ids(eng.nodes.traverse(hub, edge_types=None)[0]) == {hub, a, b}
    nodes, edges = eng.nodes.traverse(hub, edge_types=[])
    assert (ids(nodes), edges) == ({hub}, [])


def test_traverse_validity_bounds(eng: Engine, clock: Clock) -> None:
    t = clock.now
    clock.now = t - 100  # the nodes exist at every time the test looks
    seed = one(eng, CreateNode("Thing"))
    targets = eng.nodes.submit([CreateNode("Thing", {"k": k}) for k in range(4)])[0]
    clock.now = t
    starts_now, starts_later, ended_now, ends_later = targets
    assert starts_now and starts_later and ended_now and ends_later
    produced, _ = eng.nodes.submit(
        [
            Link(seed, starts_now, "e", valid_from=t),
            Link(seed, starts_later, "e", valid_from=t + 1),
            Link(seed, ended_now, "e", valid_from=t - 10),
            Link(seed, ends_later, "e", valid_from=t - 10),
            CloseEdge(Ref(2), valid_to=t),
            CloseEdge(Ref(3), valid_to=t + 1),
        ]
    )
    assert ids(eng.nodes.traverse(seed, max_hops=1)[0]) == {seed, starts_now, ends_later}
    assert edge_ids(eng.nodes.traverse(seed, max_hops=1)[1]) == {produced[0], produced[3]}
    clock.now = t + 1
    assert ids(eng.nodes.traverse(seed, max_hops=1)[0]) == {seed, starts_now, starts_later}
    clock.now = t - 1
    assert ids(eng.nodes.traverse(seed, max_hops=1)[0]) == {seed, ended_now, ends_later}


def test_traverse_stops_at_the_scope_boundary(eng: Engine) -> None:
    hub, in_a, in_b, far = eng.nodes.submit(
        [
            CreateNode("Thing"),
            CreateNode("Thing", scope=SCOPE_A),
            CreateNode("Thing", scope=SCOPE_B),
            CreateNode("Thing"),
        ]
    )[0]
    assert hub and in_a and in_b and far
    to_a, to_b, private_edge, beyond = eng.nodes.submit(
        [
            Link(hub, in_a, "e"),  # shared edge to a node in A
            Link(hub, in_b, "e", scope=SCOPE_B),  # edge in B
            Link(hub, far, "e", scope=SCOPE_A),  # edge in A between shared nodes
            Link(in_a, far, "e", scope=SCOPE_A),
        ]
    )[0]
    nodes, edges = eng.nodes.traverse(hub, max_hops=4)
    assert (ids(nodes), edge_ids(edges)) == ({hub}, set())  # every way out leaves shared
    nodes, edges = eng.nodes.traverse(hub, max_hops=4, scopes=["shared", SCOPE_A])
    assert ids(nodes) == {hub, in_a, far}
    assert edge_ids(edges) == {to_a, private_edge, beyond}
    nodes, edges = eng.nodes.traverse(hub, max_hops=4, scopes=["shared", SCOPE_B])
    assert (ids(nodes), edge_ids(edges)) == ({hub, in_b}, {to_b})
    nodes, edges = eng.nodes.traverse(hub, max_hops=4, scopes=[SCOPE_B])
    assert (nodes, edges) == ([], [])  # the seed itself is out of scope
    nodes, edges = eng.nodes.traverse(in_b, max_hops=4, scopes=[SCOPE_B])
    assert (ids(nodes), edges) == ({in_b}, [])  # the edge is readable, the far node is not


def test_traverse_as_of(eng: Engine, clock: Clock) -> None:
    t0 = clock.now
    a, b, ab = eng.nodes.submit(
        [CreateNode("Thing", {"n": "a"}), CreateNode("Thing", {"v": 1}), Link(Ref(0), Ref(1), "e")]
    )[0]
    assert a and b and ab
    clock.now = t0 + 100
    eng.nodes.submit([SetProps(b, {"v": 2, "w": "new"}), CloseEdge(ab)])
    clock.now = t0 + 200
    c, ac = eng.nodes.submit([CreateNode("Thing"), Link(a, Ref(0), "e", valid_from=t0)])[0]
    assert c and ac

    nodes, edges = eng.nodes.traverse(a)
    assert (ids(nodes), edge_ids(edges)) == ({a, c}, {ac})

    nodes, edges = eng.nodes.traverse(a, as_of=t0 + 50)
    assert (ids(nodes), edge_ids(edges)) == ({a, b}, {ab})
    past_b = next(n for n in nodes if n.id == b)
    assert past_b.props == {"v": 1}
    past_edge = next(iter(edges))
    assert past_edge.id == ab

    nodes, _ = eng.nodes.traverse(a, as_of=t0 + 100)  # valid_to is exclusive
    assert ids(nodes) == {a}

    nodes, edges = eng.nodes.traverse(a, as_of=t0 + 99)
    assert ids(nodes) == {a, b}
    assert eng.nodes.traverse(c, as_of=t0 + 199) == ([], [])  # the seed did not exist yet
    assert ids(eng.nodes.traverse(c, as_of=t0 + 200)[0]) == {c, a}


# -- get_node as_of ---------------------------------------------------------------------------------------


def test_get_node_as_of(eng: Engine, clock: Clock) -> None:
    t0 = clock.now
    node = one(eng, CreateNode("Thing", {"v": 1}))
    clock.now = t0 + 10
    eng.nodes.submit([SetProps(node, {"v": 2, "w": "x"})])
    clock.now = t0 + 20
    eng.nodes.submit([SetProps(node, {"w": None})])
    clock.now = t0 + 30
    eng.nodes.submit([RemoveNode(node)])

    def props_at(at: int) -> Any:
        found = eng.nodes.get_node(node, as_of=at)
        return None if found is None else found.props

    assert props_at(t0 - 1) is None
    assert props_at(t0) == {"v": 1}
    assert props_at(t0 + 9) == {"v": 1}
    assert props_at(t0 + 10) == {"v": 2, "w": "x"}
    assert props_at(t0 + 20) == {"v": 2}
    assert props_at(t0 + 29) == {"v": 2}
    assert props_at(t0 + 30) is None
    assert eng.nodes.get_node(node) is None
    past = eng.nodes.get_node(node, as_of=t0 + 15)
    assert past is not None
    assert (past.id, past.label, past.scope, past.created_at) == (node, "Thing", "shared", t0)
    assert eng.nodes.get_node(node, as_of=t0 + 15, scopes=[SCOPE_A]) is None


def test_get_node_as_of_sees_other_faces(eng: Engine, clock: Clock) -> None:
    t0 = clock.now
    memory = eng.memories.store("first words").memory
    entity = one(eng, CreateNode("Entity", {"name": "Ada", "entityType": "person"}))
    clock.now = t0 + 10
    eng.memories.update(memory.hash, content="second words")
    eng.nodes.submit([SetProps(entity, {"name": "Ada L."})])
    past = eng.nodes.get_node(memory.id, as_of=t0)
    assert past is not None and past.props == {"content": "first words"}
    now = eng.nodes.get_node(memory.id, as_of=t0 + 10)
    assert now is not None and now.props == {"content": "second words"}
    past_entity = eng.nodes.get_node(entity, as_of=t0)
    assert past_entity is not None and past_entity.props == {"name": "Ada", "entityType": "person"}


def test_get_node_as_of_keeps_memory_fields(eng: Engine, clock: Clock) -> None:
    t0 = clock.now
    memory = eng.memories.store("weighted", importance=5, memory_type="fact").memory
    current = eng.nodes.get_node(memory.id)
    assert current is not None
    assert current.props == {"content": "weighted", "importance": 5, "memory_type": "fact"}
    clock.now = t0 + 10
    eng.nodes.submit([SetProps(memory.id, {"seen": True})])
    past = eng.nodes.get_node(memory.id, as_of=t0)
    assert past is not None
    assert past.props == current.props


def test_get_node_as_of_an_imported_node_does_not_change_with_later_writes(db_path: Path, clock: Clock) -> None:
    t0 = clock.now
    with Engine(store_at(db_path.with_name("source.db")), clock=Clock(t0), access_interval=3600) as source:
        node = one(source, CreateNode("Thing", {"v": 1}))
        records = list(source.export())
    clock.now = t0 + 1000
    with Engine(store_at(db_path), clock=clock, access_interval=3600) as eng:
        eng.import_records(records)
        before = eng.nodes.get_node(node, as_of=t0 + 500)
        assert before is not None and before.props == {"v": 1}
        clock.now = t0 + 2000
        eng.nodes.submit([SetProps(node, {"v": 2})])
        assert eng.nodes.get_node(node, as_of=t0 + 500) == before


# -- access statistics ------------------------------------------------------------------------------------


def test_access_stats_count_reads(spec_eng: Engine, clock: Clock) -> None:
    eng = spec_eng
    entity, memory, other, _ = eng.nodes.submit(
        [
            CreateNode("Entity", {"name": "Ada"}),
            CreateNode("Memory", {"content": "albatross"}),
            CreateNode("Thing"),
            Link(Ref(0), Ref(1), "e"),
            SetEmbedding(Ref(0), "m", (1.0, 0.0)),
        ]
    )[0][:4]
    assert entity and memory and other
    assert eng.nodes.access_stats(entity) == (0, 0)
    t = clock.now

    def stats(node: str) -> tuple[int, int] | None:
        eng.access.flush()
        return eng.nodes.access_stats(node)

    clock.now = t + 1
    assert eng.nodes.get_node(entity) is not None
    assert stats(entity) == (1, t + 1)
    clock.now = t + 2
    assert len(eng.nodes.find_by_prop("Entity", "name", "Ada")) == 1
    assert stats(entity) == (2, t + 2)
    clock.now = t + 3
    assert len(eng.nodes.search_vectors("m", [1.0, 0.0])) == 1
    assert stats(entity) == (3, t + 3)
    clock.now = t + 4
    assert len(eng.nodes.traverse(entity)[0]) == 2
    assert stats(entity) == (4, t + 4)
    assert stats(memory) == (1, t + 4)
    clock.now = t + 5
    assert len(eng.nodes.search_text("albatross")) == 1
    assert stats(memory) == (2, t + 5)
    # Reading the statistics is not a read of the node; nor is a miss.
    for _ in range(3):
        eng.nodes.access_stats(entity)
    assert eng.nodes.get_node(entity, scopes=[SCOPE_A]) is None
    assert stats(entity) == (4, t + 4)
    assert stats(other) == (0, 0)


def test_access_stats_visibility(eng: Engine, clock: Clock) -> None:
    shared, private = eng.nodes.submit([CreateNode("Thing"), CreateNode("Thing", scope=SCOPE_A)])[0]
    assert shared and private
    eng.nodes.get_node(private, scopes=[SCOPE_A])
    eng.access.flush()
    assert eng.nodes.access_stats(private) is None
    assert eng.nodes.access_stats(private, scopes=[SCOPE_A]) == (1, clock.now)
    assert eng.nodes.access_stats(MISSING) is None
    eng.nodes.submit([RemoveNode(shared)])
    assert eng.nodes.access_stats(shared) is None


def test_access_counts_are_not_in_the_change_log(eng: Engine, clock: Clock) -> None:
    node = one(eng, CreateNode("Thing"))
    seq = eng.current_seq()
    for _ in range(3):
        eng.nodes.get_node(node)
    eng.access.flush()
    assert eng.nodes.access_stats(node) == (3, clock.now)
    assert eng.current_seq() == seq


# -- search_vectors ---------------------------------------------------------------------------------------


def test_search_vectors_cosine_ranking(eng: Engine) -> None:
    east, north_east, north, west = eng.nodes.submit([CreateNode("Thing", {"d": d}) for d in ["e", "ne", "n", "w"]])[0]
    assert east and north_east and north and west
    eng.nodes.submit(
        [
            SetEmbedding(east, "m", (2.0, 0.0)),
            SetEmbedding(north_east, "m", (3.0, 3.0)),
            SetEmbedding(north, "m", (0.0, 0.5)),
            SetEmbedding(west, "m", (-1.0, 0.0)),
        ]
    )
    hits = eng.nodes.search_vectors("m", [1.0, 0.0])
    assert hit_ids(hits) == [east, north_east, north, west]
    assert [s for _, s in hits] == pytest.approx([1.0, math.sqrt(0.5), 0.0, -1.0], abs=1e-6)
    assert hit_ids(eng.nodes.search_vectors("m", [10.0, 0.0], k=2)) == [east, north_east]  # scale-free
    assert hit_ids(eng.nodes.search_vectors("m", [0.0, 1.0], k=1)) == [north]
    assert hit_ids(eng.nodes.search_vectors("m", [1.0, 0.0], k=100)) == [east, north_east, north, west]


def test_search_vectors_candidates_and_scopes(eng: Engine) -> None:
    shared, in_a, in_b = eng.nodes.submit(
        [CreateNode("Thing"), CreateNode("Thing", scope=SCOPE_A), CreateNode("Thing", scope=SCOPE_B)]
    )[0]
    assert shared and in_a and in_b
    eng.nodes.submit(
        [
            SetEmbedding(shared, "m", (1.0, 0.0)),
            SetEmbedding(in_a, "m", (1.0, 0.1)),
            SetEmbedding(in_b, "m", (1.0, 0.2)),
        ]
    )
    q = [1.0, 0.0]
    assert hit_ids(eng.nodes.search_vectors("m", q)) == [shared]
    assert hit_ids(eng.nodes.search_vectors("m", q, scopes=[SCOPE_A])) == [in_a]
    assert hit_ids(eng.nodes.search_vectors("m", q, scopes=ALL)) == [shared, in_a, in_b]
    assert hit_ids(eng.nodes.search_vectors("m", q, scopes=[SCOPE_B, SCOPE_A])) == [in_a, in_b]
    assert hit_ids(eng.nodes.search_vectors("m", q, scopes=ALL, candidates=[in_b, shared])) == [shared, in_b]
    assert hit_ids(eng.nodes.search_vectors("m", q, candidates=[in_a])) == []  # out of scope
    assert eng.nodes.search_vectors("m", q, scopes=ALL, candidates=[]) == []
    assert hit_ids(eng.nodes.search_vectors("m", q, scopes=ALL, candidates=[MISSING, in_b])) == [in_b]


def test_search_vectors_edge_cases(eng: Engine) -> None:
    node = one(eng, CreateNode("Thing"))
    assert eng.nodes.search_vectors("m", [1.0, 0.0]) == []  # no such model yet
    eng.nodes.submit([SetEmbedding(node, "m", (1.0, 0.0))])
    assert eng.nodes.search_vectors("m", [0.0, 0.0]) == []  # a zero query scores nothing
    assert eng.nodes.search_vectors("unknown", [1.0]) == []
    with pytest.raises(
        InvalidArgument, match=r"^the query vector has 3 dimensions but model 'm' stores 2-dimensional vectors$"
    ):
        eng.nodes.search_vectors("m", [1.0, 0.0, 0.0])
    for k, vector in ((0, [1.0, 0.0]), (-1, [1.0, 0.0]), (1, [])):
        with pytest.raises(InvalidArgument, match=r"^vector search requires k > 0 and a non-empty query vector$"):
            eng.nodes.search_vectors("m", vector, k=k)
    with pytest.raises(InvalidArgument, match=r"^vector element 0 is not finite$"):
        eng.nodes.search_vectors("m", [math.nan, 0.0])


def test_search_vectors_skips_zero_vectors(eng: Engine) -> None:
    zero, unit = eng.nodes.submit([CreateNode("Thing"), CreateNode("Thing")])[0]
    assert zero and unit
    eng.nodes.submit([SetEmbedding(zero, "m", (0.0, 0.0)), SetEmbedding(unit, "m", (0.0, 1.0))])
    assert hit_ids(eng.nodes.search_vectors("m", [1.0, 0.0])) == [unit]


def test_search_vectors_follows_writes(eng: Engine, db_path: Path, clock: Clock) -> None:
    a, b = eng.nodes.submit([CreateNode("Thing"), CreateNode("Thing")])[0]
    assert a and b
    eng.nodes.submit([SetEmbedding(a, "m", (1.0, 0.0)), SetEmbedding(b, "m", (0.0, 1.0))])
    assert hit_ids(eng.nodes.search_vectors("m", [1.0, 0.0], k=1)) == [a]
    eng.nodes.submit([SetEmbedding(b, "m", (1.0, 0.0)), SetEmbedding(a, "m", (0.0, 1.0))])
    assert hit_ids(eng.nodes.search_vectors("m", [1.0, 0.0], k=1)) == [b]
    eng.nodes.submit([RemoveNode(b)])
    assert hit_ids(eng.nodes.search_vectors("m", [1.0, 0.0])) == [a]
    # Written by another engine on the same database.
    with Engine(store_at(db_path), clock=clock, access_interval=3600) as other:
        c = one(other, CreateNode("Thing"))
        other.nodes.submit([SetEmbedding(c, "m", (1.0, 0.0))])
    assert hit_ids(eng.nodes.search_vectors("m", [1.0, 0.0])) == [c, a]
    # A node deleted through another face leaves the index too.
    memory = eng.memories.store("embedded memory").memory
    eng.nodes.submit([SetEmbedding(memory.id, "m", (1.0, 0.01))])
    assert hit_ids(eng.nodes.search_vectors("m", [1.0, 0.0], k=2)) == [c, memory.id]
    eng.memories.delete(memory.hash)
    assert hit_ids(eng.nodes.search_vectors("m", [1.0, 0.0])) == [c, a]
    # Replacing the model empties the old one.
    eng.nodes.submit([SetEmbedding(a, "m2", (1.0,)), SetEmbedding(c, "m2", (1.0,))])
    assert eng.nodes.search_vectors("m", [1.0, 0.0]) == []


# -- dedup ------------------------------------------------------------------------------------------------


def test_memory_dedup(eng: Engine) -> None:
    first = one(eng, CreateNode("Memory", {"content": "same text"}))
    seq = eng.current_seq()
    produced, last = eng.nodes.submit([CreateNode("Memory", {"content": "same text"})])
    assert produced == [first]
    assert last == seq == eng.current_seq()  # nothing new written
    # Within one batch, and against memories other faces stored.
    stored = eng.memories.store("stored elsewhere").memory
    produced, _ = eng.nodes.submit(
        [
            CreateNode("Memory", {"content": "twice"}),
            CreateNode("Memory", {"content": "twice"}),
            CreateNode("Memory", {"content": "stored elsewhere"}),
            CreateNode("Memory", {"content": "Same text"}),  # case matters
        ]
    )
    assert produced[0] == produced[1]
    assert produced[2] == stored.id
    assert produced[3] not in (first, None)
    # Another scope is another memory.
    in_a = one(eng, CreateNode("Memory", {"content": "same text"}, scope=SCOPE_A))
    assert in_a != first
    assert eng.stats(scopes=ALL).memories == 5


def test_entity_dedup(eng: Engine) -> None:
    first = one(eng, CreateNode("Entity", {"name": "Ada"}))
    again, other = eng.nodes.submit(
        [CreateNode("Entity", {"name": "Ada", "x": 1}), CreateNode("Entity", {"name": "ada"})]
    )[0]
    assert again == first
    assert other != first
    in_a = one(eng, CreateNode("Entity", {"name": "Ada"}, scope=SCOPE_A))
    assert in_a != first
    made = eng.graph.create_entities([NewEntity("Bob")])
    assert one(eng, CreateNode("Entity", {"name": "Bob"})) == made[0].id
    assert eng.stats(scopes=ALL).entities == 4


# -- one store, every face ----------------------------------------------------------------------------


def test_memories_stored_elsewhere_are_memory_nodes(eng: Engine) -> None:
    stored = eng.memories.store("plain text", ["tag"], 4, "fact", summary="short", props={"k": "v"}).memory
    node = eng.nodes.get_node(stored.id)
    assert node is not None
    assert node.label == "Memory"
    assert node.props == {"content": "plain text", "importance": 4, "memory_type": "fact", "summary": "short", "k": "v"}
    assert (node.pk, node.scope, node.created_at) == (stored.pk, stored.scope, stored.created_at)


def test_entities_created_here_are_seen_by_the_knowledge_graph(eng: Engine) -> None:
    ada, bob, _, note = eng.nodes.submit(
        [
            CreateNode("Entity", {"name": "Ada", "entityType": "person"}),
            CreateNode("Entity", {"name": "Bob"}),
            Link(Ref(0), Ref(1), "knows"),
            CreateNode("Note", {"body": "not an entity"}),
        ]
    )[0]
    assert ada and bob and note
    graph = eng.graph.open(["Ada", "Bob"])
    assert [(e.name, e.entity_type, e.id) for e in graph.entities] == [("Ada", "person", ada), ("Bob", "", bob)]
    assert [(r.from_name, r.to_name, r.type) for r in graph.relations] == [("Ada", "Bob", "knows")]
    assert [e.name for e in eng.graph.read().entities] == ["Ada", "Bob"]
    eng.nodes.submit([RemoveNode(bob)])
    assert [e.name for e in eng.graph.read().entities] == ["Ada"]
    assert eng.graph.read().relations == ()


def test_every_command_is_in_the_change_log(eng: Engine, clock: Clock) -> None:
    produced, seq = eng.nodes.submit(
        [
            CreateNode("Thing", {"a": 1}, scope=SCOPE_A),
            CreateNode("Memory", {"content": "logged"}),
            CreateNode("Entity", {"name": "Logged"}),
            Link(Ref(1), Ref(2), "about", props={"w": 2}, valid_from=5),
            SetProps(Ref(0), {"a": None, "b": "x"}),
            CloseEdge(Ref(3), valid_to=7),
            SetEmbedding(Ref(1), "m", (0.5, 0.25)),
            RemoveNode(Ref(0)),
        ]
    )
    thing, memory, entity, edge = produced[:4]
    changes = eng.changes()
    assert [c.seq for c in changes] == list(range(1, 9))
    assert seq == 8
    assert all(c.at == clock.now for c in changes)
    assert [(c.op, c.target, c.scope) for c in changes] == [
        ("create_node", thing, SCOPE_A),
        ("create_node", memory, "shared"),
        ("create_node", entity, "shared"),
        ("create_edge", edge, "shared"),
        ("set_props", thing, SCOPE_A),
        ("close_edge", edge, "shared"),
        ("set_embedding", memory, "shared"),
        ("remove_node", thing, SCOPE_A),
    ]
    assert changes[0].data == {"id": thing, "label": "Thing", "scope": SCOPE_A, "props": {"a": 1}}
    assert changes[1].data["memory"]["content"] == "logged"
    assert changes[2].data["entity"]["name"] == "Logged"
    assert changes[3].data == {
        "id": edge,
        "from": memory,
        "to": entity,
        "type": "about",
        "scope": "shared",
        "props": {"w": 2},
        "valid_from": 5,
    }
    assert changes[4].data == {"id": thing, "props": {"a": None, "b": "x"}}
    assert changes[5].data == {"id": edge, "valid_to": 7}
    # The vector is logged as base64 of its float32 little-endian bytes: 0.5 and 0.25.
    assert changes[6].data == {"id": memory, "model": "m", "f32": "AAAAPwAAgD4="}
    assert ops.embedding_vector(changes[6].data) == [0.5, 0.25]
    assert changes[7].data == {"id": thing}


# -- where faces disagree -----------------------------------------------------------------------------


def test_set_props_on_memory_fields(eng: Engine) -> None:
    memory = eng.memories.store("fields", importance=5, memory_type="fact", summary="old").memory
    eng.nodes.submit([SetProps(memory.id, {"summary": "new"})])
    node = eng.nodes.get_node(memory.id)
    assert node is not None and node.props["summary"] == "new"
    eng.nodes.submit([SetProps(memory.id, {"importance": None, "memory_type": None, "summary": None})])
    node = eng.nodes.get_node(memory.id)
    assert node is not None and node.props == {"content": "fields"}


def test_create_node_memory_fields_reach_the_memory(eng: Engine) -> None:
    one(eng, CreateNode("Memory", {"content": "created", "importance": 3, "memory_type": "fact"}))
    stored = eng.memories.get(content_hash("created"))
    assert stored is not None
    assert (stored.importance, stored.memory_type) == (3, "fact")


def test_a_memory_needs_content_and_an_entity_a_name(eng: Engine) -> None:
    # A Memory node is a memory and an Entity node an entity for every face, so each
    # needs the property that identifies it; nothing is written otherwise.
    before = eng.current_seq()
    with pytest.raises(InvalidArgument, match="Memory node needs a string `content`"):
        eng.nodes.submit([CreateNode("Memory", {})])
    with pytest.raises(InvalidArgument, match="Entity node needs a non-empty string `name`"):
        eng.nodes.submit([CreateNode("Entity", {"name": ""})])
    with pytest.raises(InvalidArgument, match="Memory node needs"):
        eng.nodes.submit([CreateNode("Thing", {}), CreateNode("Memory", {"content": 5})])
    assert eng.current_seq() == before
