"""Relations between memories, edges between any nodes, entities and observations."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.helpers import open_engine_at
from mnemodb.engine import Conflict, Engine, InvalidArgument, NotFound
from mnemodb.engine.graph import NewEntity
from mnemodb.engine.items import EntityNote
from mnemodb.engine.transfer import EXPORT_FORMAT, EXPORT_VERSION
from mnemodb.model.records import Edge, Entity, Props
from support import SCOPE_A, Clock, sha256

SCOPE_B = "01HV7N8Q3Y2J6W5X4Z9A0B1C2E"


# -- relate / unrelate memories -----------------------------------------------------------------------------


def test_relate_is_idempotent(eng: Engine, clock: Clock) -> None:
    a = eng.memories.store("memory a").memory
    b = eng.memories.store("memory b").memory
    first, created = eng.memories.relate(a.hash, b.hash, "supports")
    assert created
    assert (first.from_hash, first.to_hash, first.edge.type) == (a.hash, b.hash, "supports")
    assert (first.edge.src, first.edge.dst) == (a.id, b.id)
    assert first.edge.valid_from == clock.now
    assert first.edge.valid_to is None
    clock.now += 5
    again, created_again = eng.memories.relate(a.hash.upper(), b.hash, "supports")
    assert not created_again
    assert again.edge == first.edge
    assert eng.stats().edges == 1


def test_relation_type_and_direction_make_distinct_relations(eng: Engine) -> None:
    a = eng.memories.store("memory a").memory
    b = eng.memories.store("memory b").memory
    assert eng.memories.relate(a.hash, b.hash, "supports")[1]
    assert eng.memories.relate(a.hash, b.hash, "Supports")[1]  # compared case-sensitively
    assert eng.memories.relate(b.hash, a.hash, "supports")[1]
    assert eng.stats().edges == 3


def test_self_relation_is_refused(eng: Engine) -> None:
    a = eng.memories.store("lonely").memory
    with pytest.raises(InvalidArgument, match="self-referential"):
        eng.memories.relate(a.hash, a.hash.upper(), "is")
    assert eng.stats().edges == 0


def test_relate_with_a_missing_endpoint_is_not_found(eng: Engine) -> None:
    a = eng.memories.store("present").memory
    missing = sha256("absent")
    with pytest.raises(NotFound, match=missing):
        eng.memories.relate(a.hash, missing, "x")
    with pytest.raises(NotFound, match=missing):
        eng.memories.relate(missing.upper(), a.hash, "x")
    with pytest.raises(InvalidArgument):
        eng.memories.relate(a.hash, a.hash, "")
    assert eng.stats().edges == 0


def test_relate_across_scopes_needs_readable_endpoints(db_path: Path) -> None:
    with open_engine_at(db_path, write_scope=SCOPE_A) as a, open_engine_at(db_path, write_scope=SCOPE_B) as b:
        in_a = a.memories.store("in scope a").memory
        in_b = b.memories.store("in scope b").memory
        with pytest.raises(NotFound):
            a.memories.relate(in_a.hash, in_b.hash, "x")
    with open_engine_at(db_path, write_scope=SCOPE_A, read_scopes=[SCOPE_A, SCOPE_B]) as both:
        with pytest.raises(InvalidArgument, match="shared endpoint"):
            both.memories.relate(in_a.hash, in_b.hash, "x")
        assert both.stats(scopes=[SCOPE_A, SCOPE_B]).edges == 0


def test_memory_links_directions(eng: Engine) -> None:
    a = eng.memories.store("memory a").memory
    b = eng.memories.store("memory b").memory
    c = eng.memories.store("memory c").memory
    eng.memories.relate(a.hash, b.hash, "out")
    eng.memories.relate(c.hash, a.hash, "in")

    def types(direction: str) -> list[str]:
        return [link.edge.type for link in eng.memories.links(a.hash, direction)]

    assert types("outgoing") == ["out"]
    assert types("incoming") == ["in"]
    assert types("both") == ["in", "out"]
    assert eng.memories.links(sha256("unknown")) == []
    with pytest.raises(InvalidArgument):
        eng.memories.links(a.hash, "sideways")


def test_unrelate(eng: Engine) -> None:
    a = eng.memories.store("memory a").memory
    b = eng.memories.store("memory b").memory
    eng.memories.relate(a.hash, b.hash, "supports")
    eng.memories.relate(a.hash, b.hash, "contradicts")
    assert eng.memories.unrelate(b.hash, a.hash, "supports") is False  # direction matters
    assert eng.memories.unrelate(a.hash, b.hash, "supports") is True
    assert eng.memories.unrelate(a.hash, b.hash, "supports") is False
    assert eng.memories.unrelate(a.hash, sha256("missing"), "contradicts") is False
    assert [link.edge.type for link in eng.memories.links(a.hash)] == ["contradicts"]
    assert eng.memories.get(a.hash) is not None
    assert eng.memories.get(b.hash) is not None


def test_relate_again_after_the_relation_was_closed(eng: Engine, clock: Clock) -> None:
    a = eng.memories.store("memory a").memory
    b = eng.memories.store("memory b").memory
    first, _ = eng.memories.relate(a.hash, b.hash, "likes")
    clock.now += 10
    eng.items.relate(close=[(first.edge.id, None)])
    clock.now += 10
    assert eng.memories.links(a.hash) == []
    second, created = eng.memories.relate(a.hash, b.hash, "likes")
    assert created
    assert second.edge.id != first.edge.id
    assert eng.memories.unrelate(a.hash, b.hash, "likes") is True
    assert eng.stats().edges == 0  # the closed one goes too


# -- relations by id: open and close (the items face) -----------------------------------------------------


def test_relate_items_by_id(eng: Engine, clock: Clock) -> None:
    memory = eng.memories.store("about ada").memory
    [entity] = eng.graph.create_entities([NewEntity("Ada", "person")])
    props: Props = {"weight": 0.5, "source": "chat", "sure": True, "n": 3}
    [(edge, created)], _ = eng.items.relate(add=[(memory.id, entity.id, "mentions", props, None)])
    assert created
    assert (edge.src, edge.dst, edge.type, edge.scope) == (memory.id, entity.id, "mentions", "shared")
    assert dict(edge.props) == {"weight": 0.5, "source": "chat", "sure": True, "n": 3}
    assert edge.valid_from == clock.now
    assert edge.created_at == clock.now
    assert edge.valid_to is None
    assert len(edge.id) == 26
    with eng.store.read() as tx:
        assert tx.edge_by_id(edge.id) == edge


def test_relate_with_ends_gives_each_end_as_the_write_found_it(eng: Engine, clock: Clock) -> None:
    """Ends named every way in one call (names, ids, a hash, the same name twice), read
    together; the ends come back with the relations, as a reply names them."""
    memory = eng.memories.store("about ada and bob").memory
    ada, bob, _ = eng.graph.create_entities([NewEntity("Ada"), NewEntity("Bob"), NewEntity("ada")])
    [(old, _)], _ = eng.items.relate(add=[("Ada", "Bob", "knew", {}, None)])
    clock.now += 1
    opened, closed, ends = eng.items.relate_with_ends(
        add=[
            ("Ada", "Bob", "knows", {}, None),
            (memory.hash, "Ada", "mentions", {}, None),
            (memory.id, bob.id, "mentions", {}, None),
            ("Ada", "Bob", "knows", {}, None),
        ],
        close=[(old.id, None)],
    )
    assert [(e.src, e.dst, e.type, new) for e, new in opened] == [
        (ada.id, bob.id, "knows", True),
        (memory.id, ada.id, "mentions", True),
        (memory.id, bob.id, "mentions", True),
        (ada.id, bob.id, "knows", False),
    ]
    assert opened[3][0] == opened[0][0]
    assert [(e.id, e.valid_to) for e in closed] == [(old.id, clock.now)]
    assert {pk: item.id for pk, item in ends.items()} == {memory.pk: memory.id, ada.pk: ada.id, bob.pk: bob.id}
    with eng.store.read() as tx:
        assert [tx.edge_by_id(e.id) for e, _ in opened] == [e for e, _ in opened]


def test_relate_names_the_first_unknown_end_and_writes_nothing(eng: Engine) -> None:
    eng.graph.create_entities([NewEntity("Ada"), NewEntity("Bob")])
    with pytest.raises(NotFound, match=r"add\[1\]: nothing found for 'Nobody'"):
        eng.items.relate(add=[("Ada", "Bob", "knows", {}, None), ("Bob", "Nobody", "knows", {}, None)])
    with pytest.raises(InvalidArgument, match=r"add\[0\]: reference is not valid Unicode"):
        eng.items.relate(add=[("Ada", "Bo\ud800b", "knows", {}, None), ("Bob", "Nobody", "knows", {}, None)])
    assert eng.stats().edges == 0


def test_relate_refuses_bad_arguments(eng: Engine) -> None:
    memory = eng.memories.store("m").memory
    other = eng.memories.store("n").memory
    missing = "01HV7N8Q3Y2J6W5X4Z9A0B1C2Z"
    with pytest.raises(NotFound):
        eng.items.relate(add=[(memory.id, missing, "x", {}, None)])
    with pytest.raises(NotFound):
        eng.items.relate(add=[(missing, memory.id, "x", {}, None)])
    with pytest.raises(InvalidArgument):
        eng.items.relate(add=[(memory.id, other.id, "", {}, None)])
    for bad in ({"k": None}, {"k": [1]}, {"k": float("nan")}, {"k": {"nested": 1}}):
        with pytest.raises(InvalidArgument):
            eng.items.relate(add=[(memory.id, other.id, "x", bad, None)])  # type: ignore[list-item]
    assert eng.stats().edges == 0


def test_valid_from_and_valid_to(eng: Engine, clock: Clock) -> None:
    a = eng.memories.store("a").memory
    b = eng.memories.store("b").memory
    [(edge, _)], _ = eng.items.relate(add=[(a.id, b.id, "employed_by", {}, 1000)])
    assert edge.valid_from == 1000
    assert edge.created_at == clock.now
    _, [closed] = eng.items.relate(close=[(edge.id, 2000)])
    assert (closed.id, closed.valid_from, closed.valid_to) == (edge.id, 1000, 2000)
    # valid_from inclusive, valid_to exclusive
    assert not closed.is_valid_at(999)
    assert closed.is_valid_at(1000)
    assert closed.is_valid_at(1999)
    assert not closed.is_valid_at(2000)
    with eng.store.read() as tx:
        assert tx.find_edges(a.pk, b.pk, "employed_by") == [closed]
        assert tx.find_edges(a.pk, b.pk, "employed_by", open_only=True) == []
        assert tx.edges_of([a.pk], "out", valid_at=1500) == [closed]
        assert tx.edges_of([a.pk], "out", valid_at=2000) == []
        assert tx.edges_of([a.pk], "out") == [closed]  # history is kept


def test_close_defaults_to_now_and_only_once(eng: Engine, clock: Clock) -> None:
    a = eng.memories.store("a").memory
    b = eng.memories.store("b").memory
    [(edge, _)], _ = eng.items.relate(add=[(a.id, b.id, "x", {}, None)])
    clock.now += 42
    _, [closed] = eng.items.relate(close=[(edge.id, None)])
    assert closed.valid_to == clock.now
    assert not closed.is_valid_at(clock.now)
    assert closed.is_valid_at(clock.now - 1)
    with pytest.raises(Conflict, match="already closed"):
        eng.items.relate(close=[(edge.id, None)])
    with pytest.raises(NotFound):
        eng.items.relate(close=[("01HV7N8Q3Y2J6W5X4Z9A0B1C2Z", None)])


def test_open_edge_is_valid_from_its_start_onwards() -> None:
    edge = Edge(1, "E", "S", "D", "t", "shared", {}, 10, None, 10, 1, 2)
    assert not edge.is_valid_at(9)
    assert edge.is_valid_at(10)
    assert edge.is_valid_at(10**15)


def test_cross_scope_edges_need_a_shared_endpoint(eng: Engine) -> None:
    in_a = eng.memories.store("in a", scope=SCOPE_A).memory
    in_a2 = eng.memories.store("in a too", scope=SCOPE_A).memory
    in_b = eng.memories.store("in b", scope=SCOPE_B).memory
    shared = eng.memories.store("in shared").memory
    every = ["shared", SCOPE_A, SCOPE_B]
    with pytest.raises(InvalidArgument, match="shared endpoint"):
        eng.items.relate(add=[(in_a.id, in_b.id, "x", {}, None)], scopes=every)
    with pytest.raises(InvalidArgument, match="shared endpoint"):
        eng.items.relate(add=[(in_b.id, in_a.id, "x", {}, None)], scope=SCOPE_B, scopes=every)
    [(same, _)], _ = eng.items.relate(add=[(in_a.id, in_a2.id, "same_scope", {}, None)], scope=SCOPE_A, scopes=every)
    assert same.scope == SCOPE_A
    [(to_shared, _)], _ = eng.items.relate(
        add=[(in_a.id, shared.id, "to_shared", {}, None)], scope=SCOPE_A, scopes=every
    )
    assert to_shared.type == "to_shared"
    [(from_shared, _)], _ = eng.items.relate(
        add=[(shared.id, in_b.id, "from_shared", {}, None)], scope=SCOPE_B, scopes=every
    )
    assert from_shared.type == "from_shared"
    assert eng.stats(scopes=[SCOPE_A, SCOPE_B]).edges == 3


def test_edges_of_a_deleted_node_go_with_it(eng: Engine) -> None:
    memory = eng.memories.store("short-lived").memory
    [entity] = eng.graph.create_entities([NewEntity("Keeper")])
    [(edge, _)], _ = eng.items.relate(add=[(entity.id, memory.id, "remembers", {}, None)])
    eng.memories.delete(memory.hash)
    with eng.store.read() as tx:
        assert tx.edge_by_id(edge.id) is None
    assert eng.graph.open(["Keeper"]).entities


# -- entities and observations ---------------------------------------------------------------------------------


def test_create_entity(eng: Engine, clock: Clock) -> None:
    note = EntityNote(NewEntity("Ada Lovelace", "person", ("wrote notes", "liked maths")), {"born": 1815})
    _, [outcome] = eng.items.remember(entities=[note])
    assert outcome.status == "created"
    entity = outcome.item
    assert isinstance(entity, Entity)
    assert (entity.name, entity.entity_type, entity.scope) == ("Ada Lovelace", "person", "shared")
    assert entity.observations == ("wrote notes", "liked maths")
    assert dict(entity.props) == {"born": 1815}
    assert entity.created_at == clock.now
    assert eng.graph.open(["Ada Lovelace"]).entities == (entity,)
    assert eng.graph.open(["ada lovelace"]).entities == ()  # names are exact
    assert eng.stats().entities == 1
    assert eng.stats().observations == 2


def test_create_entity_is_unique_per_scope(eng: Engine, clock: Clock) -> None:
    [first] = eng.graph.create_entities([NewEntity("Bob", "person", ("one",))])
    assert eng.graph.create_entities([NewEntity("Bob", "robot", ("two",))]) == []  # not created
    assert eng.graph.open(["Bob"]).entities == (first,)
    [elsewhere] = eng.graph.create_entities([NewEntity("Bob", "person")], scope=SCOPE_A, scopes=[SCOPE_A])
    assert elsewhere.id != first.id
    assert elsewhere.scope == SCOPE_A
    assert eng.graph.open(["Bob"]).entities == (first,)
    assert eng.graph.open(["Bob"], scopes=[SCOPE_A]).entities == (elsewhere,)
    # Only a file imported from elsewhere brings a second entity of a name into a scope.
    duplicate = "01HV7N8Q3Y2J6W5X4Z9A0B1C3Z"
    header = {"type": "header", "format": EXPORT_FORMAT, "version": EXPORT_VERSION}
    node = {
        "type": "node",
        "id": duplicate,
        "scope": "shared",
        "label": "Entity",
        "created_at": clock.now,
        "updated_at": clock.now,
        "entity": {"name": "Bob"},
    }
    assert eng.import_records([header, node]).written == 1
    assert duplicate != first.id
    assert eng.graph.open(["Bob"]).entities == (first,)  # the oldest of that name
    assert eng.stats(scopes=["shared", SCOPE_A]).entities == 3


def test_create_entity_refuses_bad_arguments(eng: Engine) -> None:
    with pytest.raises(InvalidArgument):
        eng.graph.create_entities([NewEntity("")])
    with pytest.raises(InvalidArgument):
        eng.graph.create_entities([NewEntity("bad \ud800")])
    with pytest.raises(InvalidArgument):
        eng.graph.create_entities([NewEntity("ok", observations=("bad \udfff",))])
    assert eng.stats().entities == 0


def test_add_observations_dedups_and_keeps_order(eng: Engine) -> None:
    eng.graph.create_entities([NewEntity("Carol", observations=("first", "second"))])
    [(_, added)] = eng.graph.add_observations([("Carol", ["third", "first", "fourth", "third", "second", "fifth"])])
    assert added == ["third", "fourth", "fifth"]
    assert eng.graph.add_observations([("Carol", ["fourth"])]) == [("Carol", [])]
    [entity] = eng.graph.open(["Carol"]).entities
    assert entity.observations == ("first", "second", "third", "fourth", "fifth")


def test_create_entity_with_duplicate_observations(eng: Engine) -> None:
    [entity] = eng.graph.create_entities([NewEntity("Dave", observations=("x", "y", "x"))])
    assert entity.observations == ("x", "y")
    assert eng.graph.open(["Dave"]).entities == (entity,)


def test_add_observations_to_a_missing_entity(eng: Engine) -> None:
    with pytest.raises(NotFound, match="Nobody"):
        eng.graph.add_observations([("Nobody", ["anything"])])
    eng.graph.create_entities([NewEntity("Private")], scope=SCOPE_A)
    with pytest.raises(NotFound):
        eng.graph.add_observations([("Private", ["not visible from shared"])])
    assert eng.graph.add_observations([("Private", ["visible"])], scopes=[SCOPE_A]) == [("Private", ["visible"])]
