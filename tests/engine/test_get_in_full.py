"""A detailed look-up (`Items.get_in_full`, what native `get` answers from): the items, the
relations touching them with their ends, the ends of relations named by reference and the
access statistics, as one snapshot on a real database, and the same as `get` then
`edges_of` give one by one."""

from __future__ import annotations

from engine.test_items import ent, mem, rel
from mnemodb.engine import Engine
from mnemodb.engine.items import Patch
from mnemodb.model.records import Edge, Entity, Memory
from mnemodb.store.base import EntityKey
from support import START_MS, Clock


def test_items_edges_and_ends_are_those_of_get_then_edges_of(eng: Engine) -> None:
    note = mem(eng, "the boiler needs a new valve", about=["Boiler"])
    ent(eng, "Plumber")
    works_on = rel(eng, "Plumber", "Boiler", "works_on")
    read = eng.items.get_in_full(["Boiler", note.hash, works_on.id, "Nobody"])
    found = eng.items.get(["Boiler", note.hash, works_on.id, "Nobody"], record_access=False)
    assert read.found == found
    items = [f for f in found if isinstance(f, Memory | Entity)]
    edges, ends = eng.items.edges_of(items)
    assert sorted(read.edges, key=lambda e: e.pk) == sorted(edges, key=lambda e: e.pk)
    # The items found are ends in full; another end, read now, is an entity's key only.
    assert {pk: (i.id, i.name if isinstance(i, Entity) else None) for pk, i in ends.items()} == {
        pk: (i.id, getattr(i, "name", None)) for pk, i in read.ends.items()
    }
    assert all(read.ends[i.pk] == i for i in items)
    assert {e.type for e in read.edges} == {"about", "works_on"}
    assert {pk: i.id for pk, i in read.edge_ends.items()} == {
        works_on.src_pk: ends[works_on.src_pk].id,
        works_on.dst_pk: ends[works_on.dst_pk].id,
    }


def test_other_ends_are_entity_keys_and_a_memory_end_is_named_by_the_relation(eng: Engine) -> None:
    note = mem(eng, "the boiler needs a new valve", about=["Boiler"])
    ent(eng, "Plumber")
    rel(eng, "Plumber", "Boiler", "works_on")
    read = eng.items.get_in_full(["Boiler"])
    boiler = read.found[0]
    assert isinstance(boiler, Entity)
    plumber = eng.items.get(["Plumber"], record_access=False)[0]
    assert isinstance(plumber, Entity)
    assert read.ends == {boiler.pk: boiler, plumber.pk: EntityKey(plumber.pk, plumber.id, plumber.scope, "Plumber")}
    about = next(e for e in read.edges if e.type == "about")
    assert (about.src_pk, about.src) == (note.pk, note.id)


def test_access_counts_are_read_with_the_items_and_the_look_up_is_counted(eng: Engine, clock: Clock) -> None:
    boiler = ent(eng, "Boiler")
    first = eng.items.get_in_full(["Boiler"])
    assert first.access == {boiler.pk: (0, 0)}
    clock.now = START_MS + 500
    eng.access.flush()
    second = eng.items.get_in_full(["Boiler"])
    assert second.access == {boiler.pk: (1, START_MS)}
    eng.access.flush()
    assert eng.items.get_in_full(["Boiler"]).access == {boiler.pk: (2, START_MS + 500)}


def test_as_of_gives_the_ends_as_they_were_and_relations_by_reference_as_they_are(eng: Engine, clock: Clock) -> None:
    clock.now = START_MS + 100
    ent(eng, "Boiler")
    ent(eng, "Plumber")
    works_on = rel(eng, "Plumber", "Boiler", "works_on")
    clock.now = START_MS + 300
    eng.items.revise("Plumber", Patch(name="Plumber Ltd"))
    ent(eng, "Latecomer")
    rel(eng, "Latecomer", "Boiler", "knows")
    then = eng.items.get_in_full(["Boiler", works_on.id], as_of=START_MS + 200)
    boiler_then = then.found[0]
    assert isinstance(boiler_then, Entity) and isinstance(then.found[1], Edge)
    assert [e.type for e in then.edges] == ["works_on"]
    assert {i.name for i in then.ends.values() if isinstance(i, Entity)} == {"Boiler", "Plumber"}
    assert {i.name for i in then.edge_ends.values() if isinstance(i, Entity)} == {"Boiler", "Plumber Ltd"}
    # A look-up as of a past time is not a read of the item.
    eng.access.flush()
    assert eng.items.get_in_full(["Boiler"]).access == {boiler_then.pk: (0, 0)}


def test_closed_relations_only_when_asked(eng: Engine) -> None:
    ent(eng, "Boiler")
    ent(eng, "Plumber")
    works_on = rel(eng, "Plumber", "Boiler", "works_on")
    eng.items.relate(close=[(works_on.id, None)])
    assert eng.items.get_in_full(["Boiler"]).edges == []
    assert [e.id for e in eng.items.get_in_full(["Boiler"], include_closed=True).edges] == [works_on.id]
