"""What writing many relations in one call reads: the ends and the relations already open
are read once for the call, not once per relation (native `relate`, a property-graph batch
of links), and what comes back is what one read per relation gave."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from engine.helpers import sqlite_only
from mnemodb.engine import Engine
from mnemodb.engine.graph import NewEntity, NewRelation
from mnemodb.engine.properties import CommandFailed, CreateNode, Link, Ref, RemoveNode, SetProps
from mnemodb.model import ops
from mnemodb.model.errors import NotFound
from mnemodb.model.records import Memory, Props
from mnemodb.store.sqlite import SqliteStore
from support import Clock

NAMES = [f"Entity {i}" for i in range(70)]


@pytest.fixture
def sqlite_eng(tmp_path: Path, clock: Clock) -> Iterator[tuple[Engine, SqliteStore]]:
    store = SqliteStore(tmp_path / "relations.db")
    with Engine(store, clock=clock, access_interval=3600) as opened:
        opened.graph.create_entities([NewEntity(name, "thing") for name in NAMES])
        yield opened, store


def _statements(store: SqliteStore, run: Callable[[], object]) -> list[str]:
    """The statements `run` had the store's writing connection run."""
    with store.write() as tx:
        conn = tx.conn
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        run()
    finally:
        conn.set_trace_callback(None)
    return statements


def _reads(statements: list[str]) -> list[str]:
    return [s for s in statements if s.lstrip().upper().startswith("SELECT")]


@sqlite_only("the statements a call runs")
def test_relating_by_name_reads_as_much_for_thirty_relations_as_for_three(
    sqlite_eng: tuple[Engine, SqliteStore],
) -> None:
    eng, store = sqlite_eng

    def relate(first: int, count: int) -> Callable[[], object]:
        add: list[tuple[str, str, str, Props, int | None]] = [
            (NAMES[i], NAMES[i + 1], "follows", {}, None) for i in range(first, first + count)
        ]
        return lambda: eng.items.relate_with_ends(add)

    few = _statements(store, relate(0, 3))
    many = _statements(store, relate(10, 30))
    assert len(_reads(many)) == len(_reads(few))
    # The 30 relations written several rows a statement: 16, 8, 4 and 2.
    assert sum("INSERT INTO edge" in s for s in many) == 4
    # The open relations, for the whole call.
    assert sum(re.search(r"\b(FROM|JOIN) edge\b", s) is not None for s in _reads(many)) == 1


def test_relate_returns_open_relations_as_they_are_and_names_ends_by_name(eng: Engine, clock: Clock) -> None:
    made = eng.graph.create_entities([NewEntity(name, "thing") for name in NAMES[:6]])
    [(old, _)], _ = eng.items.relate([(NAMES[1], NAMES[2], "knows", {"since": 1990}, 5)])
    clock.now += 10
    opened, _, ends = eng.items.relate_with_ends(
        [
            (NAMES[0], NAMES[1], "knows", {}, None),
            (NAMES[1], NAMES[2], "knows", {}, None),  # open already: returned as it is
            (NAMES[1], NAMES[2], "likes", {}, None),  # another type: a new relation
            (NAMES[0], NAMES[1], "knows", {}, None),  # given twice: made once
            (NAMES[2], NAMES[1], "knows", {}, None),  # the other way: a new relation
        ]
    )
    assert [new for _, new in opened] == [True, False, True, False, True]
    assert opened[1][0] == old and dict(old.props) == {"since": 1990} and old.valid_from == 5
    assert opened[3][0] == opened[0][0]
    assert {pk: (end.id, end.name) for pk, end in ends.items() if not isinstance(end, Memory)} == {
        entity.pk: (entity.id, entity.name) for entity in made[:3]
    }
    with eng.store.read() as tx:
        assert [tx.edge_by_id(e.id) for e, _ in opened] == [e for e, _ in opened]
    assert eng.stats().edges == 4


@sqlite_only("the statements a call runs")
def test_a_batch_of_links_reads_its_ends_once(sqlite_eng: tuple[Engine, SqliteStore]) -> None:
    eng, store = sqlite_eng
    ids = [n for n in eng.nodes.submit([CreateNode("Thing") for _ in range(40)])[0] if n]

    def links(first: int, count: int) -> Callable[[], object]:
        return lambda: eng.nodes.submit([Link(ids[i], ids[i + 1], "next") for i in range(first, first + count)])

    few = _statements(store, links(0, 3))
    many = _statements(store, links(5, 30))
    assert len(_reads(many)) == len(_reads(few))
    assert sum("FROM node" in s for s in _reads(many)) == 1


def test_a_batch_of_links_gives_the_seq_of_its_last_entry_and_misses_a_node_it_removed(eng: Engine) -> None:
    produced, _ = eng.nodes.submit([CreateNode("Thing") for _ in range(3)])
    a, b, c = (n for n in produced if n)
    made, seq = eng.nodes.submit([Link(a, b, "x"), Link(b, c, "x")])
    assert seq == eng.current_seq()
    assert [c.target for c in eng.changes(seq - 1, 10)] == made
    with pytest.raises(CommandFailed) as caught:
        eng.nodes.submit([Link(a, c, "y"), RemoveNode(c), Link(b, c, "y")])
    assert (caught.value.op, caught.value.subject, caught.value.end, caught.value.reason) == (
        "CreateEdge",
        c,
        "to",
        "not found",
    )
    assert eng.nodes.get_node(c) is not None  # nothing of the failed batch was written
    assert eng.current_seq() == seq


def test_relate_logs_each_change_in_the_call_s_order_with_consecutive_seqs(eng: Engine, clock: Clock) -> None:
    eng.graph.create_entities([NewEntity(name, "thing") for name in NAMES[:5]])
    [(old, _)], _ = eng.items.relate([(NAMES[0], NAMES[1], "knows", {}, None)])
    [(kept, _)], _ = eng.items.relate([(NAMES[1], NAMES[2], "knows", {}, None)])
    clock.now += 10
    before = eng.current_seq()
    opened, closed = eng.items.relate(
        [
            (NAMES[2], NAMES[3], "knows", {"weight": 2}, None),
            (NAMES[1], NAMES[2], "knows", {}, None),  # open already: not logged
            (NAMES[3], NAMES[4], "likes", {}, 7),
            (NAMES[2], NAMES[3], "knows", {}, None),  # given twice: made and logged once
            (NAMES[4], NAMES[0], "knows", {}, None),
        ],
        [(old.id, None)],
    )
    assert [new for _, new in opened] == [True, False, True, False, True]
    assert opened[1][0] == kept
    made = [edge for edge, new in opened if new]
    changes = eng.changes(before + 1, 10)
    assert [c.seq for c in changes] == list(range(before + 1, before + 5))
    assert [(c.op, c.target, c.at) for c in changes] == [
        (ops.CLOSE_EDGE, old.id, clock.now),
        *((ops.CREATE_EDGE, edge.id, clock.now) for edge in made),
    ]
    assert [dict(c.data) for c in changes[1:]] == [ops.edge_record(edge) for edge in made]
    assert dict(changes[0].data) == {"id": old.id, "valid_to": closed[0].valid_to}


def test_create_relations_logs_each_new_relation_in_order(eng: Engine) -> None:
    ents = eng.graph.create_entities([NewEntity(name, "thing") for name in NAMES[:4]])
    before = eng.current_seq()
    made = eng.graph.create_relations(
        [
            NewRelation(NAMES[0], NAMES[1], "knows"),
            NewRelation(NAMES[1], NAMES[2], "knows"),
            NewRelation(NAMES[0], NAMES[1], "knows"),  # given twice: made once
            NewRelation(NAMES[2], NAMES[3], "likes"),
        ]
    )
    changes = eng.changes(before + 1, 10)
    with eng.store.read() as tx:
        edges = [tx.edge_by_pk(relation.pk) for relation in made]
    assert [c.seq for c in changes] == list(range(before + 1, before + 4))
    assert [(c.op, c.target, dict(c.data)) for c in changes] == [
        (ops.CREATE_EDGE, edge.id, ops.edge_record(edge)) for edge in edges if edge is not None
    ]
    assert [(e.src, e.dst, e.type) for e in edges if e is not None] == [
        (ents[0].id, ents[1].id, "knows"),
        (ents[1].id, ents[2].id, "knows"),
        (ents[2].id, ents[3].id, "likes"),
    ]


def test_a_relation_that_fails_late_in_a_call_writes_and_logs_nothing(eng: Engine) -> None:
    eng.graph.create_entities([NewEntity(name, "thing") for name in NAMES[:4]])
    before, edges = eng.current_seq(), eng.stats().edges
    with pytest.raises(NotFound, match=r"add\[2\]"):
        eng.items.relate(
            [
                (NAMES[0], NAMES[1], "knows", {}, None),
                (NAMES[1], NAMES[2], "knows", {}, None),
                (NAMES[2], "nobody at all", "knows", {}, None),
            ]
        )
    with pytest.raises(NotFound):
        eng.graph.create_relations([NewRelation(NAMES[0], NAMES[1], "knows"), NewRelation(NAMES[1], "nobody", "x")])
    assert (eng.current_seq(), eng.stats().edges) == (before, edges)


def test_a_batch_logs_links_between_other_commands_in_its_order(eng: Engine) -> None:
    produced, _ = eng.nodes.submit([CreateNode("Thing") for _ in range(3)])
    a, b, c = (n for n in produced if n)
    before = eng.current_seq()
    made, seq = eng.nodes.submit(
        [
            CreateNode("Thing"),
            Link(Ref(0), a, "x"),
            Link(a, b, "x", {"w": 2}),
            SetProps(a, {"colour": "red"}),
            Link(b, c, "x"),
            Link(c, Ref(0), "y"),
        ]
    )
    assert seq == eng.current_seq() == before + 6
    changes = eng.changes(before + 1, 10)
    assert [(ch.seq, ch.target) for ch in changes] == [
        (before + 1, made[0]),
        (before + 2, made[1]),
        (before + 3, made[2]),
        (before + 4, a),
        (before + 5, made[4]),
        (before + 6, made[5]),
    ]
    with eng.store.read() as tx:
        edge = tx.edge_by_id(str(made[2]))
    assert edge is not None and dict(changes[2].data) == ops.edge_record(edge)
    _, only_links = eng.nodes.submit([Link(a, c, "z"), Link(b, a, "z")])
    assert only_links == eng.current_seq() == before + 8
