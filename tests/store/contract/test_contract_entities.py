"""EntityReads and EntityWrites: entities, observations, names and relations."""

from __future__ import annotations

import itertools

from mnemodb.model.records import Entity, Relation
from mnemodb.store.base import EntityKey, EntityLink, EntityText, Store
from store.contract.rows import T0, A, B, C, add_edge, add_entity, add_memory, add_node, node_id


def test_an_entity_reads_back_with_its_observations_in_order(store: Store) -> None:
    with store.write() as tx:
        pk = add_node(tx, "Entity", props={"born": 1815}, at=T0 + 1)
        kept = tx.insert_entity(pk, A, "Ada", "person", {"upstream": [1, 2]}, ["b", "a", "b", "c"], T0 + 1)
        ident = node_id(tx, pk)
    with store.read() as tx:
        found = tx.entities_by_pk([pk, pk + 100])
    assert kept == ["b", "a", "c"]
    assert found == {
        pk: Entity(pk, ident, A, "Ada", "person", ("b", "a", "c"), {"born": 1815}, T0 + 1, T0 + 1, {"upstream": [1, 2]})
    }


def test_insert_entity_without_extra_has_none(store: Store) -> None:
    with store.write() as tx:
        pk = add_entity(tx, "Plain")
    with store.read() as tx:
        assert dict(tx.entities_by_pk([pk])[pk].extra) == {}


def test_the_entity_a_name_means_is_the_oldest_in_the_scopes(store: Store) -> None:
    with store.write() as tx:
        in_b = add_entity(tx, "Ada", scope=B)
        in_a = add_entity(tx, "Ada", scope=A)
        second_a = add_entity(tx, "Ada", scope=A)
        bob = add_entity(tx, "Bob")
    with store.read() as tx:
        assert _pk(tx.entity_by_name([A, B], "Ada")) == in_b
        assert _pk(tx.entity_by_name([A], "Ada")) == in_a
        assert tx.entity_by_name([A], "ada") is None  # case-sensitive
        assert tx.entity_by_name([C], "Ada") is None
        named = tx.entities_named([A], ["Bob", "Ada", "Nobody", "Ada"])
        assert {name: entity.pk for name, entity in named.items()} == {"Ada": in_a, "Bob": bob}
        assert tx.entity_pks([A]) == [in_a, bob]
        assert tx.entity_pks([A, B]) == [in_b, bob]
        assert second_a not in tx.entity_pks([A, B, C])


def test_entity_keys_named_are_the_entities_a_name_means(store: Store) -> None:
    with store.write() as tx:
        in_b = add_entity(tx, "Ada", scope=B)
        in_a = add_entity(tx, "Ada", "person", ["an observation"], scope=A)
        add_entity(tx, "Ada", scope=A)
        bob = add_entity(tx, "Bob\x00 \u00e9")  # a name PostgreSQL must escape
        ids = {pk: node_id(tx, pk) for pk in (in_a, in_b, bob)}
    with store.read() as tx:
        keys = tx.entity_keys_named([A], ["Bob\x00 \u00e9", "Ada", "Nobody", "Ada"])
        assert keys == {
            "Ada": EntityKey(in_a, ids[in_a], A, "Ada"),
            "Bob\x00 \u00e9": EntityKey(bob, ids[bob], A, "Bob\x00 \u00e9"),
        }
        assert tx.entity_keys_named([A, B], ["Ada"]) == {"Ada": EntityKey(in_b, ids[in_b], B, "Ada")}
        assert tx.entity_keys_named([C], ["Ada"]) == {}
        assert tx.entity_keys_named([A], []) == {}


def test_entity_keys_named_past_one_statement(store: Store) -> None:
    names = [f"entity {i}" for i in range(450)]
    with store.write() as tx:
        pks = [add_entity(tx, name) for name in names]
    with store.read() as tx:
        keys = tx.entity_keys_named([A], [*reversed(names), "missing"])
        full = tx.entities_named([A], names)
    assert {name: key.pk for name, key in keys.items()} == dict(zip(names, pks, strict=True))
    assert {name: (e.pk, e.id, e.scope, e.name) for name, e in full.items()} == {
        name: tuple(key) for name, key in keys.items()
    }


def test_entity_keys_by_pk_are_the_keys_of_the_entities_among_them(store: Store) -> None:
    with store.write() as tx:
        ada = add_entity(tx, "Ada", "person", ["an observation"], scope=A)
        bob = add_entity(tx, "Bob\x00 \u00e9", scope=B)  # a name PostgreSQL must escape
        memory = add_memory(tx, "not an entity")
        ids = {pk: node_id(tx, pk) for pk in (ada, bob)}
    with store.read() as tx:
        keys = tx.entity_keys_by_pk([bob, memory, ada, bob + 1000])
        full = tx.entities_by_pk([ada, bob])
        assert tx.entity_keys_by_pk([]) == {}
    assert keys == {ada: EntityKey(ada, ids[ada], A, "Ada"), bob: EntityKey(bob, ids[bob], B, "Bob\x00 \u00e9")}
    assert {pk: (e.pk, e.id, e.scope, e.name) for pk, e in full.items()} == {pk: tuple(k) for pk, k in keys.items()}


def _pk(entity: Entity | None) -> int | None:
    return None if entity is None else entity.pk


def test_entity_by_name_nocase_only_when_one_name_matches(store: Store) -> None:
    with store.write() as tx:
        ada = add_entity(tx, "Ada Lovelace")
        add_entity(tx, "Bob")
        add_entity(tx, "BOB")
        add_entity(tx, "carol", scope=C)
    with store.read() as tx:
        assert _pk(tx.entity_by_name_nocase([A], "ada lovelace")) == ada
        assert _pk(tx.entity_by_name_nocase([A], "ADA LOVELACE")) == ada
        assert tx.entity_by_name_nocase([A], "bob") is None  # two names
        assert tx.entity_by_name_nocase([A], "Carol") is None  # not in the scopes
        assert tx.entity_by_name_nocase([A], "nobody") is None


def test_entity_by_name_nocase_means_what_the_one_matching_name_means(store: Store) -> None:
    with store.write() as tx:
        oldest = add_entity(tx, "Carol")
        add_entity(tx, "Carol")  # the same name twice: still one name
        add_entity(tx, "CAROL", scope=C)
    with store.read() as tx:
        assert _pk(tx.entity_by_name_nocase([A], "carol")) == oldest
        assert tx.entity_by_name_nocase([A, C], "carol") is None  # two names now


def test_entity_by_name_nocase_folds_more_than_ascii(store: Store) -> None:
    with store.write() as tx:
        pk = add_entity(tx, "Émile Zola")
    with store.read() as tx:
        assert _pk(tx.entity_by_name_nocase([A], "émile zola")) == pk


def test_entity_pks_pages_from_just_after_a_pk(store: Store) -> None:
    with store.write() as tx:
        pks = [add_entity(tx, f"E{i}") for i in range(5)]
        add_memory(tx, "not an entity")
    with store.read() as tx:
        assert tx.entity_pks([A]) == pks
        assert tx.entity_pks([A], after=pks[1]) == pks[2:]
        assert tx.entity_pks([A], after=pks[1], limit=2) == pks[2:4]
        assert tx.entity_pks([A], limit=0) == []


def test_entity_pks_of_type_ignores_case_oldest_first(store: Store) -> None:
    with store.write() as tx:
        one = add_entity(tx, "One", "Person")
        add_entity(tx, "Two", "place")
        three = add_entity(tx, "Three", "PERSON")
        add_entity(tx, "Four", "person", scope=C)
    with store.read() as tx:
        assert tx.entity_pks_of_type([A], "person") == [one, three]
        assert tx.entity_pks_of_type([A], "nothing") == []


def test_entity_names_starting_ignores_ascii_case_distinct_and_limited(store: Store) -> None:
    with store.write() as tx:
        for name in ("alpha", "Alpine", "ALPS", "beta", "al_x", "al%y"):
            add_entity(tx, name)
        add_entity(tx, "alpha", scope=B)
        add_entity(tx, "Altitude", scope=C)
    with store.read() as tx:
        assert tx.entity_names_starting([A, B], "alp", 10) == ["alpha", "Alpine", "ALPS"]
        assert tx.entity_names_starting([A, B], "ALP", 2) == ["alpha", "Alpine"]
        assert tx.entity_names_starting([A], "al_", 10) == ["al_x"]  # no wildcards
        assert tx.entity_names_starting([A], "al%", 10) == ["al%y"]
        assert tx.entity_names_starting([A], "alt", 10) == []


def test_entity_texts_oldest_first_with_observations_joined(store: Store) -> None:
    with store.write() as tx:
        ada = add_entity(tx, "Ada", "person", ["wrote notes", "loved maths"])
        bob = add_entity(tx, "Bob")
        add_entity(tx, "Ada", scope=A)  # not what the name means
        add_entity(tx, "Hidden", scope=C)
    with store.read() as tx:
        every = list(tx.entity_texts([A]))
        given = list(tx.entity_texts([A], [bob, ada]))
    assert [text.pk for text in every] == [ada, bob]
    assert every[0] == EntityText(ada, "Ada", "person", "wrote notes loved maths", every[0].observations_json)
    import json

    assert json.loads(every[0].observations_json) == ["wrote notes", "loved maths"]
    assert json.loads(every[1].observations_json) == []
    assert given == every
    with store.read() as tx:
        assert list(tx.entity_texts([A], [bob + 1000])) == []


def test_observations_add_and_delete(store: Store) -> None:
    with store.write() as tx:
        pk = add_entity(tx, "Ada", observations=["one", "two"])
        added = tx.add_observations(pk, ["three", "one", "four", "three"], T0 + 1)
        removed = tx.delete_observations(pk, ["two", "nine", "four"])
        entity = tx.entities_by_pk([pk])[pk]
        assert tx.add_observations(pk + 100, ["x"], T0) == []
        assert tx.delete_observations(pk + 100, ["one"]) == []
    assert added == ["three", "four"]
    assert removed == ["two", "four"]
    assert entity.observations == ("one", "three")


def test_rename_entity_changes_name_and_or_type(store: Store) -> None:
    with store.write() as tx:
        pk = add_entity(tx, "Ada", "person")
        tx.rename_entity(pk, name="Ada L.")
        renamed = tx.entities_by_pk([pk])[pk]
        tx.rename_entity(pk, entity_type="mathematician")
        retyped = tx.entities_by_pk([pk])[pk]
        tx.rename_entity(pk + 100, name="Ghost")
        assert tx.entity_by_name([A], "Ghost") is None
        assert tx.entity_by_name([A], "Ada") is None
    assert (renamed.name, renamed.entity_type) == ("Ada L.", "person")
    assert (retyped.name, retyped.entity_type) == ("Ada L.", "mathematician")


def _relate(store: Store) -> tuple[list[int], list[int]]:
    """Entities e0..e3 in A (e3's relation goes to an entity in C) and relations r0..r4."""
    with store.write() as tx:
        e = [add_entity(tx, f"E{i}") for i in range(3)]
        hidden = add_entity(tx, "Hidden", scope=C)
        memory = add_memory(tx, "a memory")
        r = [
            add_edge(tx, e[0], e[1], "knows"),
            add_edge(tx, e[1], e[2], "Knows"),
            add_edge(tx, e[2], e[0], "likes"),
            add_edge(tx, e[0], hidden, "knows"),
            add_edge(tx, e[0], e[2], "knows", scope=C),
        ]
        closed = add_edge(tx, e[1], e[0], "knows")
        tx.close_edge(closed, T0 + 1)
        add_edge(tx, memory, e[0], "about")
    return [*e, hidden], r


def test_relations_by_pk_name_their_ends(store: Store) -> None:
    e, r = _relate(store)
    with store.write() as tx:
        tx.set_edge_extra(r[0], {"upstream": "x"})
    with store.read() as tx:
        found = tx.relations_by_pk([r[0], r[1], r[1] + 1000])
    assert found == {
        r[0]: Relation("E0", "E1", "knows", r[0], e[0], e[1], {"upstream": "x"}),
        r[1]: Relation("E1", "E2", "Knows", r[1], e[1], e[2], {}),
    }
    with store.write() as tx:
        tx.set_edge_extra(r[0], None)
        assert dict(tx.relations_by_pk([r[0]])[r[0]].extra) == {}
        tx.set_edge_extra(r[1], {"a": 1})
        tx.set_edge_extra(r[1], {})
        assert dict(tx.relations_by_pk([r[1]])[r[1]].extra) == {}


def test_relations_touching_visible_open_oldest_first(store: Store) -> None:
    e, r = _relate(store)
    with store.read() as tx:
        assert [x.pk for x in tx.relations_touching([e[0]], [A])] == [r[0], r[2]]
        assert [x.pk for x in tx.relations_touching([e[0]], [A, C])] == [r[0], r[2], r[3], r[4]]
        assert [x.pk for x in tx.relations_touching([e[0], e[1]], [A], both_ends=True)] == [r[0]]
        assert tx.relations_touching([], [A]) == []


def test_relations_touching_many_ends_each_once(store: Store) -> None:
    # More ends than one statement could take as parameters: a search can touch thousands.
    with store.write() as tx:
        pks = [add_entity(tx, f"N{i}") for i in range(1200)]
        chain = [add_edge(tx, a, b) for a, b in itertools.pairwise(pks)]
        loop = add_edge(tx, pks[0], pks[0], "self")
    with store.read() as tx:
        every = tx.relations_touching([*pks, *pks[:10]], [A])
        half = tx.relations_touching(pks[:600], [A])
        inside = tx.relations_touching(pks[:600], [A], both_ends=True)
        entities = tx.entities_by_pk([*pks, pks[0]])
    assert [x.pk for x in every] == [*chain, loop]
    assert [x.pk for x in half] == [*chain[:600], loop]
    assert [x.pk for x in inside] == [*chain[:599], loop]
    assert (half[599].from_name, half[599].to_name) == ("N599", "N600")
    assert sorted(entities) == pks


def test_entity_links_visible_open_oldest_first(store: Store) -> None:
    e, r = _relate(store)
    with store.read() as tx:
        links = tx.entity_links([e[1]], [A])
        assert [x.relation_pk for x in tx.entity_links([e[0]], [A, C])] == [r[0], r[2], r[3], r[4]]
    assert links == [EntityLink(r[0], e[0], e[1]), EntityLink(r[1], e[1], e[2])]


def test_relations_matching_filters_and_pages(store: Store) -> None:
    e, r = _relate(store)
    with store.read() as tx:
        assert [x.pk for x in tx.relations_matching([A])] == [r[0], r[1], r[2]]
        assert [x.pk for x in tx.relations_matching([A], relation_type="knows")] == [r[0]]
        assert [x.pk for x in tx.relations_matching([A], relation_type="KNOWS", ignore_case=True)] == [r[0], r[1]]
        assert [x.pk for x in tx.relations_matching([A, C], from_pk=e[0])] == [r[0], r[3], r[4]]
        assert [x.pk for x in tx.relations_matching([A, C], to_pk=e[2])] == [r[1], r[4]]
        assert [x.pk for x in tx.relations_matching([A], after=r[0], limit=1)] == [r[1]]


def test_entities_reached_reads_what_entities_by_pk_reads(store: Store) -> None:
    with store.write() as tx:
        ada = add_node(tx, "Entity", props={"born": 1815}, at=T0 + 1)
        tx.insert_entity(ada, A, "Ada", "person", {"upstream": [1, 2]}, ["b", "a"], T0 + 1)
        bob = add_entity(tx, "Bob")
        cy = add_entity(tx, "Cy", scope=B)
        note = add_memory(tx, "not an entity")
        ids = {pk: node_id(tx, pk) for pk in (ada, bob, cy, note)}
    with store.read() as tx:
        # Entities of one scope, that scope given; of several, none; a memory left out.
        assert tx.entities_reached({ada: ids[ada], bob: ids[bob]}, A) == tx.entities_by_pk([ada, bob])
        assert tx.entities_reached(ids, None) == tx.entities_by_pk([ada, bob, cy])
        assert tx.entities_reached({cy: ids[cy], note: ids[note]}, B) == tx.entities_by_pk([cy])
        assert tx.entities_reached({ada: ids[ada]}, A)[ada].observations == ("b", "a")
        assert tx.entities_reached({}, A) == {}
