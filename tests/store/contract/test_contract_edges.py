"""EdgeReads and EdgeWrites: typed, directed, time-bounded edges and their visibility."""

from __future__ import annotations

from typing import Any

from mnemodb.model.ids import new_ulid
from mnemodb.model.records import ENTITY, MEMORY, Direction, Edge
from mnemodb.store.base import AccessStats, EdgesAround, EdgesWalked, EntityKey, NodeReached, Store
from store.contract.rows import T0, A, B, C, add_edge, add_entity, add_memory, add_node, node_id


def test_an_edge_reads_back_with_every_field(store: Store) -> None:
    ident = new_ulid()
    with store.write() as tx:
        src = add_node(tx)
        dst = add_node(tx, scope=B)
        pk = tx.insert_edge(ident, src, dst, "knows", B, {"since": 1999, "w": 0.5}, T0 - 10, T0)
        src_id, dst_id = node_id(tx, src), node_id(tx, dst)
    with store.read() as tx:
        edge = tx.edge_by_pk(pk)
        assert tx.edge_by_id(ident) == edge
        assert tx.edge_by_pk(pk + 100) is None
        assert tx.edge_by_id(new_ulid()) is None
    assert edge == Edge(pk, ident, src_id, dst_id, "knows", B, {"since": 1999, "w": 0.5}, T0 - 10, None, T0, src, dst)


def test_insert_edge_keeps_a_free_pk(store: Store) -> None:
    with store.write() as tx:
        one, two = add_node(tx), add_node(tx)
        first = add_edge(tx, one, two)
        chosen = tx.insert_edge(new_ulid(), one, two, "t", A, {}, T0, T0, pk=first + 40)
        later = add_edge(tx, two, one)
    assert chosen == first + 40
    assert later > chosen


def test_close_edge_ends_validity_and_keeps_the_edge(store: Store) -> None:
    with store.write() as tx:
        one, two = add_node(tx), add_node(tx)
        pk = add_edge(tx, one, two, valid_from=T0)
        tx.close_edge(pk, T0 + 100)
    with store.read() as tx:
        edge = tx.edge_by_pk(pk)
        assert edge is not None and edge.valid_to == T0 + 100
        assert edge.is_valid_at(T0) and not edge.is_valid_at(T0 + 100)
        assert [e.pk for e in tx.edges_of([one], "out", valid_at=T0 + 99)] == [pk]
        assert tx.edges_of([one], "out", valid_at=T0 + 100) == []  # valid_to is exclusive
        assert tx.edges_of([one], "out", valid_at=T0 - 1) == []  # valid_from is inclusive
        assert [e.pk for e in tx.edges_of([one], "out", valid_at=T0)] == [pk]


def test_delete_edge_removes_it(store: Store) -> None:
    with store.write() as tx:
        one, two = add_node(tx), add_node(tx)
        pk = add_edge(tx, one, two)
        tx.delete_edge(pk)
        tx.delete_edge(pk + 100)  # missing: nothing happens
        tx.close_edge(pk + 100, T0)
        tx.set_edge_extra(pk + 100, {"a": 1})
    with store.read() as tx:
        assert tx.edge_by_pk(pk) is None
        assert tx.edges_of([one, two], "both") == []
        assert tx.labels_of([one, two]).keys() == {one, two}


def test_find_edges_oldest_first_and_open_only(store: Store) -> None:
    with store.write() as tx:
        one, two = add_node(tx), add_node(tx)
        closed = add_edge(tx, one, two, "likes")
        tx.close_edge(closed, T0 + 1)
        open_ = add_edge(tx, one, two, "likes")
        add_edge(tx, two, one, "likes")
        add_edge(tx, one, two, "hates")
    with store.read() as tx:
        assert [e.pk for e in tx.find_edges(one, two, "likes")] == [closed, open_]
        assert [e.pk for e in tx.find_edges(one, two, "likes", open_only=True)] == [open_]
        assert tx.find_edges(two, one, "hates") == []


def test_open_edge_keys_are_the_open_edges_among_the_keys_asked(store: Store) -> None:
    odd_type = "likes\x00 \u00e9"  # a type PostgreSQL must escape
    with store.write() as tx:
        one, two, three = add_node(tx), add_node(tx), add_node(tx)
        closed = add_edge(tx, one, two, "likes")
        tx.close_edge(closed, T0 + 1)
        add_edge(tx, two, one, "likes")
        add_edge(tx, one, three, odd_type)
        add_edge(tx, one, three, "hates")
    asked = [(one, two, "likes"), (two, one, "likes"), (one, three, odd_type), (three, one, "hates"), (two, one, "x")]
    with store.read() as tx:
        assert tx.open_edge_keys(asked) == {(two, one, "likes"), (one, three, odd_type)}
        assert tx.open_edge_keys([*asked, *asked]) == {(two, one, "likes"), (one, three, odd_type)}
        assert tx.open_edge_keys([]) == set()
        # What `find_edges` says of each key, for many at once.
        assert {k for k in asked if tx.find_edges(*k, open_only=True)} == tx.open_edge_keys(asked)


def test_open_edge_keys_of_many_types_at_once(store: Store) -> None:
    # More types than the store lists in one statement: every type is read then.
    with store.write() as tx:
        one, two = add_node(tx), add_node(tx)
        for k in range(0, 100, 3):
            add_edge(tx, one, two, f"type {k}")
    asked = [(one, two, f"type {k}") for k in range(100)]
    with store.read() as tx:
        assert tx.open_edge_keys(asked) == {(one, two, f"type {k}") for k in range(0, 100, 3)}


def test_edges_of_by_direction_oldest_first_each_once(store: Store) -> None:
    with store.write() as tx:
        one, two, three = add_node(tx), add_node(tx), add_node(tx)
        a = add_edge(tx, one, two)
        b = add_edge(tx, three, one)
        c = add_edge(tx, two, three)
        loop = add_edge(tx, one, one)
    with store.read() as tx:
        assert [e.pk for e in tx.edges_of([one], "out")] == [a, loop]
        assert [e.pk for e in tx.edges_of([one], "in")] == [b, loop]
        assert [e.pk for e in tx.edges_of([one], "both")] == [a, b, loop]
        assert [e.pk for e in tx.edges_of([one, two], "both")] == [a, b, c, loop]
        assert tx.edges_of([], "both") == []


def test_edges_of_filters_by_type(store: Store) -> None:
    with store.write() as tx:
        one, two = add_node(tx), add_node(tx)
        likes = add_edge(tx, one, two, "likes")
        add_edge(tx, one, two, "hates")
        knows = add_edge(tx, two, one, "knows")
    with store.read() as tx:
        assert [e.pk for e in tx.edges_of([one], "both", edge_types=["likes", "knows"])] == [likes, knows]


def test_edges_of_every_shape_of_look_up_finds_what_a_filter_of_all_edges_does(store: Store) -> None:
    # Every combination of direction, time, scopes, types and number of nodes, asked in
    # turn on one connection: a statement kept for one shape is never used for another.
    with store.write() as tx:
        nodes = [add_node(tx, scope=(A, B)[i % 2]) for i in range(6)]
        for i, src in enumerate(nodes):
            for j, dst in enumerate(nodes):
                if (i + j) % 3 == 0:
                    edge = add_edge(tx, src, dst, ("knows", "likes", "uses")[(i * j) % 3], scope=(A, B)[j % 2])
                    if i == j:
                        tx.close_edge(edge, T0 + 5)
        every = tx.edges_of(nodes, "both")
    ends = {"out": lambda e: {e.src_pk}, "in": lambda e: {e.dst_pk}, "both": lambda e: {e.src_pk, e.dst_pk}}
    scope_of = {pk: (A, B)[i % 2] for i, pk in enumerate(nodes)}
    with store.read() as tx:
        for direction in ("out", "in", "both"):
            for valid_at in (None, T0 + 5):
                for scopes in (None, [A], [A, B]):
                    for types in (None, ["likes"], ["knows", "uses"]):
                        for asked in (nodes[:1], nodes[1:4], nodes):
                            found = tx.edges_of(asked, direction, valid_at=valid_at, scopes=scopes, edge_types=types)
                            assert [e.pk for e in found] == [
                                e.pk
                                for e in every
                                if ends[direction](e) & set(asked)
                                and (valid_at is None or e.is_valid_at(valid_at))
                                and (scopes is None or {e.scope, scope_of[e.src_pk], scope_of[e.dst_pk]} <= set(scopes))
                                and (types is None or e.type in types)
                            ], (direction, valid_at, scopes, types, len(asked))


def test_an_edge_is_visible_only_when_it_and_both_ends_are_readable(store: Store) -> None:
    with store.write() as tx:
        in_a, in_b, in_c = add_node(tx), add_node(tx, scope=B), add_node(tx, scope=C)
        same = add_edge(tx, in_a, in_a, "x")
        to_b = add_edge(tx, in_a, in_b, "x")
        edge_in_c = add_edge(tx, in_a, in_a, "x", scope=C)
        from_c = add_edge(tx, in_c, in_a, "x")
    with store.read() as tx:
        assert [e.pk for e in tx.edges_of([in_a], "both", scopes=[A])] == [same]
        assert [e.pk for e in tx.edges_of([in_a], "both", scopes=[A, B])] == [same, to_b]
        assert [e.pk for e in tx.edges_of([in_a], "both", scopes=[A, B, C])] == [same, to_b, edge_in_c, from_c]
        assert [e.pk for e in tx.edges_of([in_a], "both")] == [same, to_b, edge_in_c, from_c]
        assert [e.pk for e in tx.edges_of_types(["x"], [A], valid_at=None, limit=10)] == [same]
        assert [e.pk for e in tx.edges_of_types(None, [A, C], valid_at=None, limit=10)] == [from_c, edge_in_c, same]


def test_edges_among_both_ends_oldest_first(store: Store) -> None:
    with store.write() as tx:
        one, two, three = add_node(tx), add_node(tx), add_node(tx, scope=C)
        a = add_edge(tx, two, one)
        out = add_edge(tx, one, three)
        b = add_edge(tx, one, two)
        closed = add_edge(tx, two, one, "old")
        tx.close_edge(closed, T0 + 5)
    with store.read() as tx:
        assert [e.pk for e in tx.edges_among([one, two])] == [a, b, closed]
        assert [e.pk for e in tx.edges_among([one, two], valid_at=T0 + 5)] == [a, b]
        assert [e.pk for e in tx.edges_among([one, two, three])] == [a, out, b, closed]


def test_edges_of_types_newest_first_valid_and_limited(store: Store) -> None:
    with store.write() as tx:
        one, two = add_node(tx), add_node(tx)
        first = add_edge(tx, one, two, "x", valid_from=T0)
        second = add_edge(tx, one, two, "y", valid_from=T0)
        third = add_edge(tx, one, two, "x", valid_from=T0 + 50)
        closed = add_edge(tx, one, two, "x", valid_from=T0)
        tx.close_edge(closed, T0 + 10)
    with store.read() as tx:
        assert [e.pk for e in tx.edges_of_types(["x"], [A], valid_at=None, limit=10)] == [closed, third, first]
        assert [e.pk for e in tx.edges_of_types(["x"], [A], valid_at=T0 + 20, limit=10)] == [first]
        assert [e.pk for e in tx.edges_of_types(["x", "y"], [A], valid_at=T0 + 60, limit=10)] == [
            third,
            second,
            first,
        ]
        assert [e.pk for e in tx.edges_of_types(None, [A], valid_at=None, limit=2)] == [closed, third]
        assert tx.edges_of_types(["z"], [A], valid_at=None, limit=10) == []


def test_edges_reached_pairs_each_way_an_edge_is_followed_with_the_view_of_its_far_end(store: Store) -> None:
    with store.write() as tx:
        ada = add_entity(tx, "Ada", "person", props={"born": 1815})
        note = add_memory(tx, "Ada wrote the first program", importance=4, memory_type="fact")
        thing = add_node(tx, props={"k": "v"})
        hidden = add_node(tx, scope=C)
        about = add_edge(tx, note, ada, "about")
        owns = add_edge(tx, ada, thing, "owns", props={"since": 1840})
        back = add_edge(tx, thing, note, "cites")
        loop = add_edge(tx, thing, thing, "self")
        to_hidden = add_edge(tx, ada, hidden, "owns")
        closed = add_edge(tx, thing, ada, "owned_by")
        tx.close_edge(closed, T0 + 10)
        later = add_edge(tx, ada, note, "later", valid_from=T0 + 50)
    with store.read() as reader:
        views = reader.node_views([ada, note, thing, hidden])
        edges = {e.pk: e for e in reader.edges_of([ada, note, thing, hidden], "both")}

        def reached(pks: list[int], direction: Direction, **filters: Any) -> list[tuple[int, int]]:
            found = reader.edges_reached({pk: views[pk].id for pk in pks}, direction, **filters)
            for edge, view in found:  # each pair whole: the edge as edges_of reads it, the view as node_views
                assert edge == edges[edge.pk]
                assert view == views[view.pk]
            return [(edge.pk, view.pk) for edge, view in found]

        now = {"scopes": [A], "valid_at": T0 + 20}
        assert reached([ada], "out", **now) == [(owns, thing)]
        assert reached([ada], "in", **now) == [(about, note)]
        assert reached([ada], "both", **now) == [(about, note), (owns, thing)]
        # An edge between two of the nodes is followed both ways, leaving before entering;
        # so is a loop.
        assert reached([ada, thing], "both", **now) == [
            (about, note),
            (owns, thing),
            (owns, ada),
            (back, note),
            (loop, thing),
            (loop, thing),
        ]
        assert reached([thing], "both", scopes=[A], valid_at=T0 + 5) == [
            (owns, ada),
            (back, note),
            (loop, thing),
            (loop, thing),
            (closed, ada),
        ]
        assert reached([ada], "both", scopes=[A, C], valid_at=T0 + 60, edge_types=["owns", "later"]) == [
            (owns, thing),
            (to_hidden, hidden),
            (later, note),
        ]
        assert reached([ada], "out") == [(owns, thing), (to_hidden, hidden), (later, note)]
        # Leaving out the pairs that lead to some nodes, whichever way: the rest as before,
        # a node's own loop too, and one of `ends` still reached from another.
        assert reached([ada, thing], "both", **now, leaving_out=[note, hidden]) == [
            (owns, thing),
            (owns, ada),
            (loop, thing),
            (loop, thing),
        ]
        assert reached([ada, thing], "both", **now, leaving_out=[thing]) == [(about, note), (owns, ada), (back, note)]
        many = [*range(thing + 1000, thing + 1100), thing]  # a long list, as a long walk leaves
        assert reached([ada, thing], "both", **now, leaving_out=many) == [(about, note), (owns, ada), (back, note)]
        assert reached([thing], "in", scopes=[A], valid_at=T0 + 5, leaving_out=[ada, note]) == [(loop, thing)]
        assert reached([ada], "out", leaving_out=[thing, hidden, note]) == []
        assert reader.edges_reached({}, "both") == []
    assert dict(views[ada].props) == {"name": "Ada", "entityType": "person", "born": 1815}
    assert dict(views[note].props) == {"content": "Ada wrote the first program", "importance": 4, "memory_type": "fact"}


def test_edges_reached_from_id_is_the_view_of_the_node_and_edges_reached_from_it(store: Store) -> None:
    with store.write() as tx:
        ada = add_entity(tx, "Ada", "person", props={"born": 1815})
        note = add_memory(tx, "Ada wrote the first program", importance=4, memory_type="fact")
        thing = add_node(tx, props={"k": "v"})
        hidden = add_node(tx, scope=C)
        add_edge(tx, note, ada, "about")
        add_edge(tx, ada, thing, "owns", props={"since": 1840})
        add_edge(tx, thing, thing, "self")
        add_edge(tx, ada, hidden, "owns")
        closed = add_edge(tx, thing, ada, "owned_by")
        tx.close_edge(closed, T0 + 10)
    with store.read() as reader:
        views = reader.node_views([ada, note, thing, hidden])
        shapes: list[dict[str, Any]] = [
            {},
            {"scopes": [A], "valid_at": T0 + 20},
            {"scopes": [A], "valid_at": T0 + 5},
            {"scopes": [A, C], "edge_types": ["owns"]},
            {"scopes": [C]},  # a start not visible itself: its view and its pairs all the same
        ]
        directions: tuple[Direction, ...] = ("out", "in", "both")
        for pk in (ada, thing, hidden):
            for direction in directions:
                for filters in shapes:
                    expected = reader.edges_reached({pk: views[pk].id}, direction, **filters)
                    start, pairs = reader.edges_reached_from_id(views[pk].id, direction, **filters)
                    assert start == views[pk]
                    assert pairs == expected
        assert reader.edges_reached_from_id(views[ada].id, "both", scopes=[A], edge_types=["about"])[1] != []
        assert reader.edges_reached_from_id(new_ulid(), "both") == (None, [])


def test_edges_around_reads_the_edges_their_other_ends_and_the_nodes_access(store: Store) -> None:
    with store.write() as tx:
        ada = add_entity(tx, "Ada", "person", ["an observation"], scope=C)
        bob = add_entity(tx, "Bob\x00 \u00e9", scope=B)  # a name PostgreSQL escapes
        note = add_memory(tx, "about Ada")
        thing = add_node(tx, "Thing")
        lamp = add_node(tx, "Lamp", scope=B)
        knows = add_edge(tx, ada, bob, "knows", props={"since": 1999})
        about = add_edge(tx, note, ada, "about", scope=B)
        owns = add_edge(tx, ada, thing, "owns", valid_from=T0 + 5)
        knew = add_edge(tx, bob, ada, "knew")
        tx.close_edge(knew, T0 + 3)
        lights = add_edge(tx, thing, lamp, "lights")  # touches neither node asked about
        ids = {pk: node_id(tx, pk) for pk in (ada, bob, note, thing, lamp)}
    store.bump_access({ada: (3, T0 + 7), lamp: (1, T0)})
    every = [A, B, C]
    with store.read() as tx:
        now = tx.edges_around({ada: ids[ada]}, valid_at=T0 + 10, scopes=every)
        then = tx.edges_around({ada: ids[ada]}, valid_at=T0 + 1, scopes=every)
        ever = tx.edges_around({ada: ids[ada]}, valid_at=None, scopes=every)
        without_b = tx.edges_around({ada: ids[ada]}, valid_at=None, scopes=[A, C])
        both = tx.edges_around({ada: ids[ada], thing: ids[thing]}, valid_at=T0 + 10, scopes=every)
        same = tx.edges_of([ada], "both", valid_at=T0 + 10, scopes=every)
        assert tx.edges_around({}, valid_at=None, scopes=every) == EdgesAround([], {}, {}, {})
    bob_key = EntityKey(bob, ids[bob], B, "Bob\x00 \u00e9")
    # Every edge as `edges_of` reads it, oldest first; each other end's label, and key when an entity.
    assert now.edges == same and [e.pk for e in now.edges] == [knows, about, owns]
    assert now.edges[0] == Edge(
        knows, now.edges[0].id, ids[ada], ids[bob], "knows", A, {"since": 1999}, T0, None, T0, ada, bob
    )
    assert now.labels == {bob: ENTITY, note: MEMORY, thing: "Thing"}
    assert now.keys == {bob: bob_key}
    assert now.access == {ada: AccessStats(3, T0 + 7)}
    # Validity: `owns` begins at T0 + 5 and `knew` ends at T0 + 3; None takes every edge.
    assert [e.pk for e in then.edges] == [knows, about, knew]
    assert [e.pk for e in ever.edges] == [knows, about, owns, knew]
    assert ever.edges[3].valid_to == T0 + 3 and (ever.edges[3].src, ever.edges[3].dst) == (ids[bob], ids[ada])
    # Not visible: an edge of an unread scope, or whose other end is in one.
    assert [e.pk for e in without_b.edges] == [owns]
    assert without_b.labels == {thing: "Thing"} and without_b.keys == {}
    # Between two of the nodes: the edge once, and neither end among the other ends.
    assert [e.pk for e in both.edges] == [knows, about, owns, lights]
    assert both.labels == {bob: ENTITY, note: MEMORY, lamp: "Lamp"} and both.keys == {bob: bob_key}
    assert both.access == {ada: AccessStats(3, T0 + 7)}  # `thing` was never read


def test_edges_around_in_one_scope_reads_what_it_reads_in_several(store: Store) -> None:
    """One scope read: the edges' and the keys' scopes are that scope (the SQLite store
    does not read them then), and an edge between two of the nodes, or from one to itself,
    has both ends' ids."""
    with store.write() as tx:
        ada = add_entity(tx, "Ada", scope=B)
        bob = add_entity(tx, "Bob", scope=B)
        cy = add_entity(tx, "Cy", scope=B)
        knows = add_edge(tx, ada, bob, "knows", scope=B)
        met = add_edge(tx, cy, ada, "met", scope=B)
        itself = add_edge(tx, bob, bob, "itself", scope=B)
        ids = {pk: node_id(tx, pk) for pk in (ada, bob, cy)}
    store.bump_access({bob: (2, T0 + 4)})
    nodes = {ada: ids[ada], bob: ids[bob]}
    with store.read() as tx:
        one = tx.edges_around(nodes, valid_at=T0 + 10, scopes=[B])
        several = tx.edges_around(nodes, valid_at=T0 + 10, scopes=[A, B])
    assert one == several
    assert [(e.pk, e.src, e.dst, e.scope) for e in one.edges] == [
        (knows, ids[ada], ids[bob], B),
        (met, ids[cy], ids[ada], B),
        (itself, ids[bob], ids[bob], B),
    ]
    assert one.labels == {cy: ENTITY} and one.keys == {cy: EntityKey(cy, ids[cy], B, "Cy")}
    assert one.access == {bob: AccessStats(2, T0 + 4)}


def test_entity_around_is_the_entity_a_name_means_and_what_edges_around_reads_of_it(store: Store) -> None:
    name = "Ada\x00 \u00e9"  # a name PostgreSQL escapes
    with store.write() as tx:
        ada = add_entity(tx, name, "person", ["first", "second"], scope=C, props={"born": 1815})
        later = add_entity(tx, name, "namesake", scope=B)  # the same name, newer: not the one it means in both
        bob = add_entity(tx, "Bob", scope=B)
        plain = add_entity(tx, "Plain")  # no observations, no relations, never read
        note = add_memory(tx, "about Ada")
        thing = add_node(tx, "Thing")
        add_edge(tx, ada, bob, "knows", props={"since": 1999})
        add_edge(tx, note, ada, "about", scope=B)
        add_edge(tx, ada, thing, "owns", valid_from=T0 + 5)
        knew = add_edge(tx, bob, ada, "knew")
        tx.close_edge(knew, T0 + 3)
        add_edge(tx, ada, ada, "itself", scope=C)
        add_edge(tx, later, bob, "met", scope=B)
        ids = {pk: node_id(tx, pk) for pk in (ada, later, bob, plain)}
    store.bump_access({ada: (3, T0 + 7), later: (1, T0)})
    cases = [
        (scopes, wanted, valid_at)
        for scopes in ([A, B, C], [A, C], [C], [B], [A], [])
        for wanted in (name, "Bob", "Plain", "Nobody", "ada\x00 \u00e9")
        for valid_at in (T0 + 10, T0 + 1, None)
    ]
    with store.read() as tx:
        for scopes, wanted, valid_at in cases:
            entity = tx.entity_by_name(scopes, wanted)
            expected = (
                None
                if entity is None
                else (entity, tx.edges_around({entity.pk: entity.id}, valid_at=valid_at, scopes=scopes))
            )
            assert tx.entity_around(scopes, wanted, valid_at=valid_at) == expected, (scopes, wanted, valid_at)
        ada_around = tx.entity_around([A, B, C], name, valid_at=T0 + 10)
        namesake = tx.entity_around([B], name, valid_at=None)
    assert ada_around is not None and namesake is not None
    entity, around = ada_around
    assert (entity.pk, entity.id, entity.observations, dict(entity.props)) == (
        ada,
        ids[ada],
        ("first", "second"),
        {"born": 1815},
    )
    assert [e.type for e in around.edges] == ["knows", "about", "owns", "itself"]
    assert around.access == {ada: AccessStats(3, T0 + 7)}
    assert around.keys == {bob: EntityKey(bob, ids[bob], B, "Bob")}
    assert (namesake[0].pk, [e.type for e in namesake[1].edges], namesake[1].access) == (
        later,
        ["met"],
        {later: AccessStats(1, T0)},
    )


def test_edges_walked_reads_a_hop_and_what_a_walk_needs_of_the_nodes_it_reaches(store: Store) -> None:
    with store.write() as tx:
        ada = add_entity(tx, "Ada\x00 \u00e9", "person")  # text PostgreSQL escapes
        note = add_memory(tx, "a note on Ada")
        newer = add_memory(tx, "a newer note")
        thing = add_node(tx, "Thing", scope=B)
        hidden = add_node(tx, scope=C)
        about = add_edge(tx, note, ada, "about")
        owns = add_edge(tx, ada, thing, "owns", props={"since": 1840})
        replaces = add_edge(tx, newer, note, "supersedes", valid_from=T0 + 10)
        to_hidden = add_edge(tx, ada, hidden, "owns")
        closed = add_edge(tx, thing, ada, "owned_by")
        tx.close_edge(closed, T0 + 10)
        later = add_edge(tx, ada, newer, "later", valid_from=T0 + 50)
        ids = {pk: node_id(tx, pk) for pk in (ada, note, newer, thing, hidden)}
    now: dict[str, Any] = {"valid_at": T0 + 20, "scopes": [A, B]}
    replaced: dict[str, Any] = {"entered_by": "supersedes", "entered_at": T0 + 20}
    with store.read() as reader:

        def walked(pks: list[int], direction: Direction, **filters: Any) -> EdgesWalked:
            found = reader.edges_walked({pk: ids[pk] for pk in pks}, direction, **filters)
            # The edges as `edges_of` reads them, whole, in its order.
            kept = {k: v for k, v in filters.items() if k in ("valid_at", "scopes", "edge_types")}
            assert found.edges == reader.edges_of(pks, direction, **kept)
            return found

        both = walked([ada], "both", **now, **replaced)
        assert [e.pk for e in both.edges] == [about, owns]
        assert both.edges[1] == Edge(
            owns, both.edges[1].id, ids[ada], ids[thing], "owns", A, {"since": 1840}, T0, None, T0, ada, thing
        )
        assert both.reached == {
            note: NodeReached(ids[note], MEMORY, A, True),  # `replaces` enters it at T0 + 20
            thing: NodeReached(ids[thing], "Thing", B, False),
        }
        # Before `replaces` began, or without asking: not entered.
        assert walked([ada], "both", **now, entered_by="supersedes", entered_at=T0 + 5).reached[note].entered is False
        assert walked([ada], "both", **now).reached[note] == NodeReached(ids[note], MEMORY, A, False)
        # An edge of the type from a node of an unread scope does not count.
        assert walked([ada], "both", **now, entered_by="owns", entered_at=T0 + 20).reached[thing].entered is True
        assert walked([ada], "both", valid_at=T0 + 20, scopes=[A, B, C], entered_by="owns", entered_at=T0 + 20).reached[
            hidden
        ] == NodeReached(ids[hidden], "Thing", C, True)
        # One way at a time.
        out = walked([ada], "out", **now, **replaced)
        assert [e.pk for e in out.edges] == [owns] and set(out.reached) == {thing}
        into = walked([ada], "in", **now, **replaced)
        assert [e.pk for e in into.edges] == [about] and set(into.reached) == {note}
        # Every edge whatever its time, the unread scope read; of some types only.
        ever = walked([ada], "both", valid_at=None, scopes=[A, B, C])
        assert [e.pk for e in ever.edges] == [about, owns, to_hidden, closed, later]
        assert set(ever.reached) == {note, thing, hidden, newer}
        assert ever.edges[3].valid_to == T0 + 10
        typed = walked([ada], "both", valid_at=None, scopes=[A, C], edge_types=["owns", "about"])
        assert [e.pk for e in typed.edges] == [about, to_hidden]  # `owns` leads to a node of B
        # An edge between two of the nodes: once, and each end reached by the other.
        pair = walked([ada, note], "both", **now, **replaced)
        assert [e.pk for e in pair.edges] == [about, owns, replaces]
        assert pair.reached == {
            ada: NodeReached(ids[ada], ENTITY, A, False),
            note: NodeReached(ids[note], MEMORY, A, True),
            thing: NodeReached(ids[thing], "Thing", B, False),
            newer: NodeReached(ids[newer], MEMORY, A, False),
        }
        # Leaving out the edges to some nodes (read when the walk left them): the others as before.
        rest = reader.edges_walked(
            {ada: ids[ada], note: ids[note]}, "both", **now, **replaced, leaving_out=[thing, ada]
        )
        assert [e.pk for e in rest.edges] == [about, replaces]  # `about` leads from Ada to the note too
        assert rest.edges == [e for e in pair.edges if e.pk != owns]
        assert rest.reached == {note: pair.reached[note], newer: pair.reached[newer]}
        out_only = reader.edges_walked({ada: ids[ada]}, "out", **now, leaving_out=[thing])
        assert out_only == EdgesWalked([], {})
        assert reader.edges_walked({}, "both", valid_at=None, scopes=[A]) == EdgesWalked([], {})
        assert reader.edges_walked({ada: ids[ada]}, "both", valid_at=None, scopes=[]) == EdgesWalked([], {})


def test_edges_walked_tells_which_nodes_reached_an_edge_of_the_type_enters_then_from_the_scopes(
    store: Store,
) -> None:
    with store.write() as tx:
        start = add_memory(tx, "where the walk starts")
        plain = add_memory(tx, "plain")
        replaced = add_memory(tx, "replaced", scope=B)
        newer = add_memory(tx, "newer")
        add_edge(tx, newer, replaced, "supersedes", valid_from=T0 + 10)  # not yet valid at T0 + 5
        closed = add_memory(tx, "replaced once")
        tx.close_edge(add_edge(tx, newer, closed, "supersedes"), T0 + 20)  # closed by T0 + 25
        hidden = add_memory(tx, "replaced in an unread scope")
        add_edge(tx, add_memory(tx, "from C", scope=C), hidden, "supersedes")  # its source is not read
        add_edge(tx, newer, hidden, "supersedes", scope=C)  # the edge is not read
        other = add_entity(tx, "Ada\x00", "person", scope=B)
        add_edge(tx, newer, other, "knows")  # another type
        thing = add_node(tx, "Thing", scope=B)
        add_edge(tx, newer, thing, "supersedes", scope=B)
        targets = (plain, replaced, closed, hidden, other, thing)
        for target in targets:
            add_edge(tx, start, target, "links")
        ids = {pk: node_id(tx, pk) for pk in (start, *targets)}
    with store.read() as reader:

        def entered(at: int, scopes: list[str]) -> dict[int, bool]:
            walked = reader.edges_walked(
                {start: ids[start]}, "out", valid_at=T0 + 15, scopes=scopes, entered_by="supersedes", entered_at=at
            )
            assert [e.dst_pk for e in walked.edges] == [pk for pk in targets if pk in walked.reached]
            return {pk: reached.entered for pk, reached in walked.reached.items()}

        at_15 = reader.edges_walked(
            {start: ids[start]}, "out", valid_at=T0 + 15, scopes=[A, B], entered_by="supersedes", entered_at=T0 + 15
        )
        assert at_15.reached == {
            plain: NodeReached(ids[plain], MEMORY, A, False),
            replaced: NodeReached(ids[replaced], MEMORY, B, True),
            closed: NodeReached(ids[closed], MEMORY, A, True),
            hidden: NodeReached(ids[hidden], MEMORY, A, False),
            other: NodeReached(ids[other], ENTITY, B, False),
            thing: NodeReached(ids[thing], "Thing", B, True),  # any label: whose ends count is the caller's business
        }
        assert {pk for pk, flag in entered(T0 + 5, [A, B]).items() if flag} == {closed, thing}
        assert {pk for pk, flag in entered(T0 + 25, [A, B]).items() if flag} == {replaced, thing}
        # Reading C: the edge from C's node, and the edge in C, enter `hidden`.
        assert entered(T0 + 15, [A, C]) == {plain: False, closed: True, hidden: True}


def test_edges_among_reads_only_the_edges_between_the_nodes(store: Store) -> None:
    with store.write() as tx:
        one, two, three, away = (add_node(tx) for _ in range(4))
        first = add_edge(tx, one, two)
        add_edge(tx, two, away)  # leaves the nodes
        add_edge(tx, away, three)  # enters them
        loop = add_edge(tx, three, three)
        back = add_edge(tx, three, one, valid_from=T0 + 10)
        closed = add_edge(tx, two, three)
        tx.close_edge(closed, T0 + 5)
    with store.read() as reader:
        assert [e.pk for e in reader.edges_among([three, two, one])] == [first, loop, back, closed]
        assert [e.pk for e in reader.edges_among([one, two, three], valid_at=T0 + 7)] == [first, loop]
        assert [e.pk for e in reader.edges_among([one, two, three], valid_at=T0 + 2)] == [first, loop, closed]
        assert reader.edges_among([one]) == [] and reader.edges_among([]) == []
        # More nodes than one statement of the SQLite store lists (400).
        assert [e.pk for e in reader.edges_among([*range(away + 1, away + 500), three, one])] == [loop, back]


def test_insert_edges_writes_what_insert_edge_of_each_writes(store: Store) -> None:
    """In order, their pks following on from the last edge's; more rows than one statement
    of the SQLite store holds (128), and none."""
    rows = []
    with store.write() as tx:
        nodes = [add_node(tx) for _ in range(4)]
        before = add_edge(tx, nodes[0], nodes[1])
        for i in range(300):
            props = {"i": i} if i % 7 == 0 else {}
            rows.append((new_ulid(), nodes[i % 4], nodes[(i + 1) % 4], f"t{i % 3}", (A, B)[i % 2], props, T0 - i, T0))
        pks = tx.insert_edges(rows)
        assert tx.insert_edges([]) == []
        after = add_edge(tx, nodes[2], nodes[3])
        ids = {pk: node_id(tx, pk) for pk in nodes}
    assert pks == list(range(before + 1, before + 301))
    assert after == before + 301
    with store.read() as tx:
        stored = [tx.edge_by_pk(pk) for pk in pks]
    assert stored == [
        Edge(pk, edge_id, ids[src], ids[dst], kind, scope, dict(props), start, None, at, src, dst)
        for pk, (edge_id, src, dst, kind, scope, props, start, at) in zip(pks, rows, strict=True)
    ]


def test_edges_walked_in_one_scope_reads_what_it_reads_among_several(store: Store) -> None:
    # One scope read (and one node walked from) is read with fewer columns: the same hop.
    with store.write() as tx:
        ada = add_entity(tx, "Ada")
        bob = add_entity(tx, "Bob")
        note = add_memory(tx, "a note on Ada")
        newer = add_memory(tx, "a newer note")
        add_edge(tx, note, ada, "about", props={"weight": 2})
        add_edge(tx, ada, bob, "knows")
        add_edge(tx, bob, ada, "knows")
        add_edge(tx, ada, ada, "reflects")  # a loop: reached either way
        add_edge(tx, newer, note, "supersedes")
        add_edge(tx, ada, add_entity(tx, "Cy", scope=B), "knows")
        ids = {pk: node_id(tx, pk) for pk in (ada, bob, note, newer)}
    with store.read() as tx:
        for nodes in ([ada], [ada, bob], [note]):
            for direction in ("both", "out", "in"):
                filters: dict[str, Any] = {"valid_at": T0 + 20, "entered_by": "supersedes", "entered_at": T0 + 20}
                one = tx.edges_walked({pk: ids[pk] for pk in nodes}, direction, scopes=[A], **filters)
                # C holds nothing: the same edges and nodes, read with the scopes' columns.
                several = tx.edges_walked({pk: ids[pk] for pk in nodes}, direction, scopes=[A, C], **filters)
                assert one == several
                assert one.edges == tx.edges_of(nodes, direction, valid_at=T0 + 20, scopes=[A])
        assert tx.edges_walked({ada: ids[ada]}, "both", valid_at=None, scopes=[A]).reached == {
            ada: NodeReached(ids[ada], ENTITY, A, False),
            bob: NodeReached(ids[bob], ENTITY, A, False),
            note: NodeReached(ids[note], MEMORY, A, False),
        }
