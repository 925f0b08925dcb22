"""What a detailed look-up and a walk read on a real SQLite file, statement by statement:
the other ends of a look-up's relations only as entity keys, and a walk's nodes labelled
once and read once (the statements are caught as the store runs them)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.test_items import ent, mem, rel
from mnemodb.engine import Engine
from mnemodb.model.ids import SHARED, new_ulid
from mnemodb.model.records import Direction, Memory
from mnemodb.store.sqlite import SqliteStore
from support import Clock


@pytest.fixture
def lite(tmp_path: Path, clock: Clock) -> Iterator[Engine]:
    with Engine(SqliteStore(tmp_path / "walk.db"), clock=clock, access_interval=3600) as opened:
        yield opened


def _statements(eng: Engine, read: Callable[[], Any]) -> tuple[Any, list[str]]:
    """What `read` returns, and the statements it ran (reads on this thread share one connection)."""
    statements: list[str] = []
    with eng.store.read() as tx:
        conn = tx.conn  # type: ignore[attr-defined]
    conn.set_trace_callback(statements.append)
    try:
        return read(), statements
    finally:
        conn.set_trace_callback(None)


def _is_hop(statement: str) -> bool:
    """Whether `statement` reads a walk's hop (`edges_walked`): from one node in one scope
    without the column that tells which way each row was found, from several with it."""
    return statement.startswith(("SELECT 0, e.pk, e.src", "SELECT 1, e.pk, e.src", "SELECT e.pk, e.src"))


def _chain(eng: Engine) -> None:
    for name in ("Ada", "Bob", "Cy", "Dee"):
        ent(eng, name, observations=[f"{name} likes tea"])
        mem(eng, f"a note on {name}", about=[name])
    rel(eng, "Ada", "Bob", "knows")
    rel(eng, "Bob", "Cy", "knows")
    rel(eng, "Cy", "Dee", "knows")


def test_a_walk_labels_each_node_once_and_reads_each_item_once(lite: Engine) -> None:
    _chain(lite)
    found, statements = _statements(lite, lambda: lite.items.explore(["Ada"], hops=2))
    assert {getattr(i, "name", None) for i in found.items} >= {"Ada", "Bob", "Cy"}
    hops = [s for s in statements if _is_hop(s)]
    # One a hop: its relations, with the nodes they reach labelled and checked for being superseded.
    assert len(hops) == 2
    assert all("d.label, EXISTS" in s and "'supersedes'" in s for s in hops)
    # One scope read: the relations' and the far nodes' scopes are that one, not columns;
    # from one node, nor is the way each row was found.
    assert hops[0].startswith(
        "SELECT e.pk, e.src, e.dst, e.valid_from, e.valid_to, e.created_at, e.id, e.type, e.props, d.id"
    )
    assert hops[1].startswith(
        "SELECT 0, e.pk, e.src, e.dst, e.valid_from, e.valid_to, e.created_at, e.id, e.type, e.props, d.id"
    )
    assert not [s for s in statements if s.startswith("SELECT n.pk, n.label")]  # no labels read apart
    entity_reads = [s for s in statements if "entity e JOIN node n" in s]
    assert len(entity_reads) == 2  # the start by name, then every other entity reached at once
    assert "'Ada'" in entity_reads[0] and "json_each" in entity_reads[1]
    # Neither the start's scope and name (those asked about) nor the others' ids and scope (the hops read them).
    assert entity_reads[0].startswith("SELECT n.pk, n.id, e.entity_type, n.props")
    assert entity_reads[1].startswith("SELECT n.pk, e.name, e.entity_type, n.props")


def test_a_look_up_reads_the_other_ends_as_entity_keys(lite: Engine) -> None:
    _chain(lite)
    read, statements = _statements(lite, lambda: lite.items.get_in_full(["Bob"]))
    assert {getattr(i, "name", None) for i in read.ends.values()} == {"Ada", "Bob", "Cy"}
    # The note about Bob: by the id its relation holds.
    assert not [s for s in statements if "memory m JOIN node n" in s]
    in_full = [s for s in statements if "LEFT JOIN entity_text" in s]
    assert len(in_full) == 1 and "'Bob'" in in_full[0]  # Bob himself; Ada and Cy by key


def test_a_look_up_reads_its_relations_their_other_ends_and_its_access_counts_in_one_statement(lite: Engine) -> None:
    _chain(lite)
    lite.items.get(["Bob", "Bob", "Cy"])
    lite.access.flush()
    read, statements = _statements(lite, lambda: lite.items.get_in_full(["Bob"]))
    bob = read.found[0]
    assert bob is not None and read.access[bob.pk].reads == 2
    assert {getattr(i, "name", None) for i in read.ends.values()} == {"Ada", "Bob", "Cy"}
    # The item by name, its relations with their other ends and its access statistics, in
    # one statement: nothing else.
    (select,) = [s for s in statements if s.startswith("SELECT")]
    parts = select.split(" UNION ALL ")
    assert [part.split(" FROM ")[0] for part in parts] == [
        # The item with its access statistics.
        "SELECT n.pk, a.count, n.id, n.created_at, n.updated_at, n.scope, e.name, e.entity_type, n.props, e.extra, "
        "t.c3, a.last_at",
        # One scope read: the relation's and the far entity's scopes are that one, not columns.
        "SELECT e.pk, e.src, e.dst, e.valid_from, e.valid_to, e.created_at, e.id, e.type, e.props, "
        "d.id, d.label, k.name",
        "SELECT e.pk, e.src, e.dst, e.valid_from, e.valid_to, e.created_at, e.id, e.type, e.props, "
        "s.id, s.label, k.name",
    ]
    assert "LEFT JOIN node_access a ON a.node = e.node" in parts[0]
    assert all("name = 'Bob'" in part for part in parts)


def test_a_look_up_as_of_a_time_reads_its_access_counts_with_its_relations(lite: Engine, clock: Clock) -> None:
    _chain(lite)
    lite.items.get(["Bob"])
    lite.access.flush()
    read, statements = _statements(lite, lambda: lite.items.get_in_full(["Bob"], as_of=clock.now))
    bob = read.found[0]
    assert bob is not None and read.access[bob.pk].reads == 1
    # As of a time, the other ends are read in full, as they were then (the note too).
    assert {getattr(i, "name", None) or getattr(i, "content", None) for i in read.ends.values()} == {
        "Ada",
        "Bob",
        "Cy",
        "a note on Bob",
    }
    assert not [s for s in statements if "FROM node_access WHERE node = " in s]  # no read of each item's own


def test_a_walk_looks_up_each_hop_s_relations_in_one_statement(lite: Engine) -> None:
    _chain(lite)
    found, statements = _statements(lite, lambda: lite.items.explore(["Bob"], hops=2))
    assert {getattr(i, "name", None) for i in found.items} >= {"Ada", "Bob", "Cy", "Dee"}
    hops = [s for s in statements if _is_hop(s)]
    assert len(hops) == 2 and "UNION ALL SELECT e.pk" in hops[0] and "UNION ALL SELECT 1" in hops[1]
    # Both ways at once: from one node by `IN`, from several by their JSON array (no list
    # SQLite copies into a b-tree of its own each run).
    assert all(
        ("e.src IN (" in s or "e.src = j.value" in s) and ("e.dst IN (" in s or "e.dst = j.value" in s) for s in hops
    )
    assert "e.src IN (" in hops[0] and "FROM json_each(" in hops[1] and " IN (?" not in hops[1]
    among = [s for s in statements if s.startswith("SELECT e.pk") and not _is_hop(s)]
    assert len(among) == 1  # and the relations among the items


@pytest.mark.parametrize("direction", ["out", "in", "both"])
def test_a_walk_both_ways_does_not_read_again_the_relations_back_to_the_hop_before(
    lite: Engine, direction: Direction
) -> None:
    _chain(lite)
    found, statements = _statements(lite, lambda: lite.items.explore(["Bob"], hops=3, direction=direction))
    hops = [s for s in statements if _is_hop(s)]
    bob = next(i.pk for i in found.items if getattr(i, "name", None) == "Bob")
    if direction == "both":
        # The first hop leaves out nothing; the second the edges back to Bob; the third, to Bob and his neighbours.
        # A few nodes left out as one text of their keys between commas.
        assert ["instr(" in s for s in hops] == [False, True, True]
        assert f"instr(',{bob},'" in hops[1]
        ahead = {int(pk) for pk in hops[2].split("instr(',")[1].split(",'")[0].split(",")}
        assert ahead == {pk for pk, d in ((i.pk, found.depth[i.id]) for i in found.items) if d <= 1}
    else:
        # One way, the edges back were not read: none is left out.
        assert hops and not any("NOT IN" in s or "instr(" in s for s in hops)


def test_a_walk_reads_again_only_the_relations_among_the_last_hop(lite: Engine) -> None:
    _chain(lite)
    found, statements = _statements(lite, lambda: lite.items.explore(["Bob"], hops=2))
    depth = {item.pk: found.depth[item.id] for item in found.items}
    assert sorted(depth.values()) == [0, 1, 1, 1, 2, 2, 2]  # Bob; Ada, Cy, his note; Dee and their notes
    among = [s for s in statements if s.startswith("SELECT e.pk") and not _is_hop(s)]
    assert len(among) == 1
    read_again = {int(pk) for pk in among[0].split("FROM json_each('[")[1].split("]")[0].split(",")}
    assert read_again == {pk for pk, d in depth.items() if d == 2}  # the hops before read every relation of theirs
    # Nothing else: the start, one statement a hop, the memories (their tags with them), the entities,
    # that re-read (leaving out what SQLite's text index reads of itself).
    assert len([s for s in statements if s.startswith("SELECT") and "'main'." not in s]) == 6


def test_a_walk_reads_its_memories_with_their_tags_in_one_statement(lite: Engine) -> None:
    _chain(lite)
    mem(lite, "a tagged note on Bob", about=["Bob"], tags=["tea", "notes"])
    found, statements = _statements(lite, lambda: lite.items.explore(["Bob"], hops=1))
    tags = {i.content: i.tags for i in found.items if isinstance(i, Memory)}
    assert tags == {"a note on Bob": (), "a tagged note on Bob": ("notes", "tea")}
    memory_reads = [s for s in statements if "memory m JOIN node n" in s]
    assert len(memory_reads) == 1 and "memory_tag" in memory_reads[0]
    assert not [s for s in statements if s.startswith("SELECT node, tag FROM memory_tag")]


@pytest.mark.parametrize("direction", ["out", "in", "both"])
def test_one_statement_finds_each_relation_once_whichever_way(lite: Engine, direction: Direction) -> None:
    _chain(lite)
    with lite.store.read() as tx:
        people = tx.entities_named([SHARED], ["Bob", "Cy"])
        # Bob -> Cy is found by both ends; the filters go to both ways of the lookup.
        edges = tx.edges_of([people["Bob"].pk, people["Cy"].pk], direction, edge_types=["knows"], valid_at=lite.clock())
        ends = tx.entities_by_pk([pk for e in edges for pk in (e.src_pk, e.dst_pk)])
    ways = {"out": {("Bob", "Cy"), ("Cy", "Dee")}, "in": {("Ada", "Bob"), ("Bob", "Cy")}}
    expected = ways["out"] | ways["in"] if direction == "both" else ways[direction]
    assert [e.pk for e in edges] == sorted({e.pk for e in edges})  # each once, oldest first
    assert {(ends[e.src_pk].name, ends[e.dst_pk].name) for e in edges} == expected


def test_a_memory_search_reads_its_winners_with_their_tags_in_one_statement(lite: Engine) -> None:
    lite.memories.store("the kettle is broken again", ("kitchen", "appliance"), 3)
    lite.memories.store("the kettle was mended", (), 1)
    found, statements = _statements(lite, lambda: lite.memories.search_views("kettle"))
    assert {view.content: view.tags for view, _ in found} == {
        "the kettle is broken again": ("appliance", "kitchen"),
        "the kettle was mended": (),
    }
    assert not [s for s in statements if s.startswith("SELECT node, tag FROM memory_tag")]
    winners = [s for s in statements if s.startswith("SELECT m.node, m.content")]
    assert len(winners) == 1 and "json_group_array(t.tag)" in winners[0]


def _traversal_hops(
    lite: Engine, direction: Direction, max_hops: int, scopes: tuple[str, ...] = (SHARED,)
) -> tuple[int, str, list[str], list[str]]:
    """Bob's key and id, the statements of a traversal from Bob, and those among them that
    read a hop."""
    _chain(lite)
    ent(lite, "Eve")
    rel(lite, "Bob", "Eve", "knows")  # two nodes a hop from Bob whichever way (his note and Ada in)
    bob = lite.items.get(["Bob"])[0]
    assert bob is not None
    _, statements = _statements(
        lite, lambda: lite.nodes.traverse(bob.id, max_hops=max_hops, direction=direction, scopes=list(scopes))
    )
    hops = [s for s in statements if " ifnull(m.content, n.name), ifnull(m.importance, n.entity_type)" in s]
    return bob.pk, bob.id, statements, hops


def _selected(statement: str) -> list[str]:
    """The columns each part of a statement's UNION ALL selects."""
    return [part.split("SELECT ", 1)[1].split(" FROM ", 1)[0] for part in statement.split(" UNION ALL ")]


@pytest.mark.parametrize("direction", ["out", "in", "both"])
def test_a_traversal_in_one_scope_reads_no_scope_of_the_edges_and_nodes_it_reaches(
    lite: Engine, direction: Direction
) -> None:
    # Each column of each row is a call into SQLite (and the interpreter's lock let go and
    # taken back): with one scope read, every edge and far end is in it.
    _, _, _, hops = _traversal_hops(lite, direction, 2)
    assert len(hops) == 2
    start, *first = _selected(hops[0])
    assert len(first) == (2 if direction == "both" else 1)
    assert all("scope" not in columns for columns in [*first, *_selected(hops[1])])
    # The start's own row reads its scope: the caller tests it.
    assert start.count("scope") == 1
    # A memory's columns and an entity's share places: a node has one of the two rows.
    assert all("n.name" not in columns.replace("ifnull(m.content, n.name)", "") for columns in _selected(hops[1]))


def test_a_traversal_in_several_scopes_reads_the_scopes_of_what_it_reaches(lite: Engine) -> None:
    other = new_ulid()
    _, bob, _, hops = _traversal_hops(lite, "both", 2, (SHARED, other))
    assert len(hops) == 2
    for columns in _selected(hops[1]):
        assert columns.count("scope") == 2  # the edge's and the far end's
    # The same nodes and edges, in the same scope, whether the rows tell it or the one scope read does.
    one = lite.nodes.traverse(bob, scopes=[SHARED])
    two = lite.nodes.traverse(bob, scopes=[SHARED, other])
    assert one == two and {n.scope for n in one[0]} | {e.scope for e in one[1]} == {SHARED}


@pytest.mark.parametrize("direction", ["out", "in", "both"])
def test_a_traversal_starts_each_hop_from_its_nodes_keys(lite: Engine, direction: Direction) -> None:
    bob, _, _, hops = _traversal_hops(lite, direction, 2)
    assert len(hops) == 2
    # From several nodes by their JSON array: no list on the right of `IN`, which SQLite
    # copies into a b-tree of its own each run.
    for end in {"out": ["e.src"], "in": ["e.dst"], "both": ["e.src", "e.dst"]}[direction]:
        assert f"{end} = j.value" in hops[1] and "FROM json_each('[" in hops[1]
    assert not any(f"{end} IN (" in s for s in hops for end in ("e.src", "e.dst"))
    # Both ways, the node left behind goes in as one text of keys between commas, not a list.
    assert ["instr(" in s for s in hops] == [False, direction == "both"]
    assert not any("NOT IN" in s for s in hops)
    if direction == "both":
        assert f"instr(',{bob},'" in hops[1]


@pytest.mark.parametrize("direction", ["out", "in", "both"])
@pytest.mark.parametrize("max_hops", [1, 2])
def test_a_traversal_reads_its_start_with_its_first_hop(lite: Engine, direction: Direction, max_hops: int) -> None:
    _, bob, statements, hops = _traversal_hops(lite, direction, max_hops)
    # One statement a hop, the first of which reads the start by its id too: nothing else.
    assert len([s for s in statements if s.startswith("SELECT")]) == len(hops) == max_hops
    assert f"WHERE s.id = '{bob}'" in hops[0]
    for end in {"out": ["e.src"], "in": ["e.dst"], "both": ["e.src", "e.dst"]}[direction]:
        assert f"{end} = (SELECT pk FROM node WHERE id = '{bob}')" in hops[0]
