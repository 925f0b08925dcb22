"""One replay of the change log serves every face that reads the past: what the native
items show `as_of` a time and what the property-graph face shows of the same node then
agree, whichever face made each change."""

from __future__ import annotations

from engine.helpers import sqlite_only
from mnemodb.engine import Engine
from mnemodb.engine.graph import NewEntity
from mnemodb.engine.items import Patch
from mnemodb.engine.properties import SetProps
from mnemodb.model.records import Entity
from support import Clock


def test_both_faces_replay_a_type_given_by_another_face(eng: Engine, clock: Clock) -> None:
    """An untyped entity given a type by `remember` (logged as an update of its fields),
    then a property through the property-graph face: between the two, both faces show the
    type (the property graph's own replay skipped field updates and showed none)."""
    [ada] = eng.graph.create_entities([NewEntity("Ada", "", ("writes code",))])
    created = clock.now
    clock.now += 1000
    eng.items.remember(entities=[NewEntity("Ada", "person", ("likes tea",))])
    typed = clock.now
    clock.now += 1000
    eng.nodes.submit([SetProps(ada.id, {"team": "core"})])

    for at, kind, observations, team in (
        (created, None, ("writes code",), None),
        (typed, "person", ("writes code", "likes tea"), None),
        (clock.now, "person", ("writes code", "likes tea"), "core"),
    ):
        node = eng.nodes.get_node(ada.id, as_of=at)
        assert node is not None
        assert (node.props.get("entityType"), node.props.get("team")) == (kind, team)
        [item] = eng.items.get([ada.id], as_of=at)
        assert isinstance(item, Entity)
        assert (item.entity_type or None, item.observations, item.props.get("team")) == (kind, observations, team)


@sqlite_only("an in-memory SQLite database, whose reads share the writer's connection")
def test_an_in_memory_engine_renames_an_entity() -> None:
    """Renaming reads the index spec inside the write: on an in-memory store, whose reads
    share the writer's connection, that read began a second transaction and failed."""
    with Engine.open(":memory:") as engine:
        engine.graph.create_entities([NewEntity("Ada", "person")])
        engine.items.revise("Ada", Patch(name="Ada L"))
        assert [e.name for e in engine.graph.read().entities] == ["Ada L"]


def test_a_node_that_did_not_exist_yet_is_none_in_the_property_graph(eng: Engine, clock: Clock) -> None:
    before = clock.now
    clock.now += 1000
    [ada] = eng.graph.create_entities([NewEntity("Ada")])
    assert eng.nodes.get_node(ada.id, as_of=before) is None
    assert eng.nodes.get_node(ada.id, as_of=clock.now) is not None
