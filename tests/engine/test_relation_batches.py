"""A call's relations are checked one by one and written together (`Writes.new_edges`):
what each face returns, writes and logs is what writing them one by one did. A batch
larger than one statement's rows, given twice, with an end missing, crossing private
scopes or refused by a grant partway: the relations before the refusal are not left
written, and the log holds one entry per relation made, in the call's order."""

from __future__ import annotations

import pytest

from mnemodb.engine import Engine
from mnemodb.engine.graph import NewEntity, NewRelation
from mnemodb.engine.properties import CommandFailed, CreateNode, Link
from mnemodb.engine.tokens import Grant, granted
from mnemodb.model import ops
from mnemodb.model.errors import EngineError, Forbidden, InvalidArgument, NotFound
from mnemodb.model.ids import SHARED, new_ulid
from mnemodb.model.records import Edge

A, B = new_ulid(), new_ulid()
"""Two private scopes."""
WRITES_A = Grant("team-a", (A, B, SHARED), A, (A,))
"""Reads both private scopes and the shared one; writes only A."""


def _entities(eng: Engine) -> dict[str, str]:
    """Entities in the shared scope (s0..s299), in A (a0, a1) and in B (b0): name -> id."""
    made = eng.graph.create_entities([NewEntity(f"s{i}", "thing") for i in range(300)])
    made += eng.graph.create_entities([NewEntity("a0"), NewEntity("a1")], scope=A)
    made += eng.graph.create_entities([NewEntity("b0")], scope=B)
    return {e.name: e.id for e in made}


def _written(eng: Engine) -> tuple[int, int]:
    """(relations, the log's last seq): what a refused call must leave as it was."""
    return eng.stats(scopes=[A, B, SHARED]).edges, eng.current_seq()


def _check_logged(eng: Engine, before: int, edges: list[Edge]) -> None:
    """One entry per relation made, in order, with the data a single write logs."""
    changes = eng.changes(before + 1, len(edges) + 10)
    assert [c.seq for c in changes] == list(range(before + 1, before + 1 + len(edges)))
    assert [(c.op, c.target, c.scope, c.data) for c in changes] == [
        (ops.CREATE_EDGE, e.id, e.scope, ops.edge_record(e)) for e in edges
    ]


def test_a_batch_larger_than_a_statement_is_written_and_logged_in_order(eng: Engine) -> None:
    ids = _entities(eng)
    pairs = [(f"s{i}", f"s{(i * 7 + 1) % 300}") for i in range(300)]
    before = eng.current_seq()
    opened, _, _ = eng.items.relate_with_ends([(a, b, "next", {"n": i}, None) for i, (a, b) in enumerate(pairs)])
    edges = [edge for edge, new in opened if new]
    assert len(edges) == 300 and [e.props for e in edges] == [{"n": i} for i in range(300)]
    assert [(e.src, e.dst) for e in edges] == [(ids[a], ids[b]) for a, b in pairs]
    with eng.store.read() as tx:
        assert [tx.edge_by_id(e.id) for e in edges] == edges
    _check_logged(eng, before, edges)

    before = eng.current_seq()
    relations = eng.graph.create_relations([NewRelation(a, b, "kg") for a, b in pairs[:150]])
    with eng.store.read() as tx:
        stored = [tx.edge_by_pk(r.pk) for r in relations]
    assert [(e.src, e.dst, e.type) for e in stored if e] == [(ids[a], ids[b], "kg") for a, b in pairs[:150]]
    _check_logged(eng, before, [e for e in stored if e])

    before = eng.current_seq()
    made, seq = eng.nodes.submit([Link(ids[a], ids[b], "pg") for a, b in pairs[:129]])
    assert seq == eng.current_seq() == before + 129
    with eng.store.read() as tx:
        linked = [tx.edge_by_id(i) for i in made if i]
    assert [(e.src, e.dst) for e in linked if e] == [(ids[a], ids[b]) for a, b in pairs[:129]]
    _check_logged(eng, before, [e for e in linked if e])


def test_a_relation_given_twice_is_made_once_by_name_and_twice_as_links(eng: Engine) -> None:
    ids = _entities(eng)
    twice = [NewRelation("s1", "s2", "knows"), NewRelation("s2", "s3", "knows"), NewRelation("s1", "s2", "knows")]
    relations = eng.graph.create_relations(twice)
    assert [(r.from_name, r.to_name) for r in relations] == [("s1", "s2"), ("s2", "s3")]
    assert eng.graph.create_relations(twice) == []
    made, _ = eng.nodes.submit([Link(ids["s4"], ids["s5"], "x"), Link(ids["s4"], ids["s5"], "x")])
    assert len(set(made)) == 2  # a link always opens an edge, as before


@pytest.mark.parametrize("face", ["relate", "create_relations", "submit"])
@pytest.mark.parametrize(
    ("last", "refusal"),
    [
        (("s0", "nobody"), NotFound),  # an end that does not exist
        (("a0", "b0"), InvalidArgument),  # two private scopes
    ],
)
def test_a_refusal_partway_leaves_nothing_written(
    eng: Engine, face: str, last: tuple[str, str], refusal: type[EngineError]
) -> None:
    ids = _entities(eng)
    pairs = [(f"s{i}", f"s{i + 1}") for i in range(150)] + [last, ("s200", "s201")]
    before = _written(eng)
    with pytest.raises(CommandFailed if face == "submit" and refusal is NotFound else refusal):
        _relate(eng, face, ids, pairs, scope=None, scopes=[A, B, SHARED])
    assert _written(eng) == before


@pytest.mark.parametrize("face", ["relate", "create_relations", "submit"])
def test_a_grant_s_refusal_partway_leaves_nothing_written(eng: Engine, face: str) -> None:
    """Relations written to A: between A's entities, or A's and shared ones, the grant may
    make; one in A touching an entity of B it may not (B's readers could not see it)."""
    ids = _entities(eng)
    pairs = [("a0", "a1"), ("a1", "s0"), ("s1", "a0"), ("s2", "b0"), ("a1", "a0")]
    before = _written(eng)
    with granted(WRITES_A), pytest.raises(Forbidden, match='cannot touch an item in scope "' + B):
        _relate(eng, face, ids, pairs, scope=A, scopes=[A, B, SHARED])
    assert _written(eng) == before
    with granted(WRITES_A):
        _relate(eng, face, ids, [p for p in pairs if "b0" not in p], scope=A, scopes=[A, B, SHARED])
    assert _written(eng)[0] == before[0] + 4


def _relate(
    eng: Engine, face: str, ids: dict[str, str], pairs: list[tuple[str, str]], *, scope: str | None, scopes: list[str]
) -> None:
    if face == "relate":
        eng.items.relate_with_ends([(a, b, "t", {}, None) for a, b in pairs], scope=scope, scopes=scopes)
    elif face == "create_relations":
        eng.graph.create_relations([NewRelation(a, b, "t") for a, b in pairs], scope=scope, scopes=scopes)
    else:
        eng.nodes.submit([Link(ids.get(a, new_ulid()), ids.get(b, new_ulid()), "t", {}, scope) for a, b in pairs])


def test_a_batch_s_ids_follow_the_order_it_makes_them_in(eng: Engine) -> None:
    """Nodes and links made in one batch: each id greater than the one made before it, as
    when every link's id was made as its turn came."""
    ids = _entities(eng)
    made, _ = eng.nodes.submit(
        [
            Link(ids["s0"], ids["s1"], "x"),
            CreateNode("Thing"),
            Link(ids["s1"], ids["s2"], "x"),
            Link(ids["s2"], ids["s3"], "x"),
            CreateNode("Thing"),
            Link(ids["s3"], ids["s4"], "x"),
        ]
    )
    made_ids = [i for i in made if i is not None]
    assert len(made_ids) == 6
    assert made_ids == sorted(made_ids) and len(set(made_ids)) == len(made_ids)
