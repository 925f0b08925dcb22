"""Any text the data model accepts, U+0000 included, is stored and read back unchanged, in
every kind of text field (the module rule "Text" of the store contract)."""

from __future__ import annotations

import json
import secrets

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mnemodb.model.ids import new_ulid
from mnemodb.model.records import ChangeFilter
from mnemodb.store.base import Store
from store.contract.rows import T0, A, add_edge, add_entity, add_memory, add_node, digest

NUL = "\x00"
# Any scalar value but a lone surrogate, with U+0000 made common.
TEXT = st.text(st.characters(exclude_categories=["Cs"]) | st.just(NUL), min_size=1, max_size=24)
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def test_nul_round_trips_in_memory_fields(store: Store) -> None:
    content = f"before{NUL}after"
    with store.write() as tx:
        pk = add_memory(
            tx,
            content,
            summary=f"sum{NUL}mary",
            memory_type=f"ty{NUL}pe",
            tags=[f"t{NUL}1", NUL],
            props={f"k{NUL}ey": f"va{NUL}lue"},
        )
    with store.read() as tx:
        memory = tx.memory_by_pk(pk)
        assert tx.memory_pk(A, digest(content)) == pk
        tagged = tx.memories_with_tags([f"t{NUL}1"], [A], 10)
    assert memory is not None
    assert memory.content == content
    assert memory.summary == f"sum{NUL}mary"
    assert memory.memory_type == f"ty{NUL}pe"
    assert memory.tags == tuple(sorted([f"t{NUL}1", NUL]))
    assert dict(memory.props) == {f"k{NUL}ey": f"va{NUL}lue"}
    assert [hit.pk for hit in tagged] == [pk]


def test_nul_round_trips_in_entities_and_observations(store: Store) -> None:
    name = f"Ada{NUL}Lovelace"
    with store.write() as tx:
        pk = add_entity(tx, name, f"per{NUL}son", [f"ob{NUL}s", NUL], props={NUL: NUL})
    with store.read() as tx:
        entity = tx.entity_by_name([A], name)
        assert tx.entity_by_name([A], "Ada") is None
        (text,) = tx.entity_texts([A], [pk])
    assert entity is not None and entity.pk == pk
    assert (entity.name, entity.entity_type) == (name, f"per{NUL}son")
    assert entity.observations == (f"ob{NUL}s", NUL)
    assert dict(entity.props) == {NUL: NUL}
    assert (text.name, text.entity_type) == (name, f"per{NUL}son")
    assert json.loads(text.observations_json) == [f"ob{NUL}s", NUL]
    assert text.observations == f"ob{NUL}s {NUL}"


def test_nul_round_trips_in_nodes_edges_log_and_meta(store: Store) -> None:
    ident = new_ulid()
    with store.write() as tx:
        one = tx.insert_node(ident, A, f"La{NUL}bel", {f"p{NUL}": f"v{NUL}"}, T0)
        two = add_node(tx)
        edge = add_edge(tx, one, two, f"ty{NUL}pe", props={f"e{NUL}": f"w{NUL}"})
        seq = tx.append_change(T0, A, f"o{NUL}p", f"tar{NUL}get", {f"d{NUL}": [f"x{NUL}", {NUL: NUL}]})
        tx.set_meta(f"key{NUL}", f"val{NUL}ue")
    with store.read() as tx:
        node = tx.node_by_id(ident)
        found = tx.edge_by_pk(edge)
        (change,) = tx.changes(seq, None)
        assert tx.changes_of(f"tar{NUL}get") == [change]
        assert tx.get_meta(f"key{NUL}") == f"val{NUL}ue"
        assert tx.get_meta("key") is None
    assert node is not None and node.label == f"La{NUL}bel" and dict(node.props) == {f"p{NUL}": f"v{NUL}"}
    assert found is not None and found.type == f"ty{NUL}pe" and dict(found.props) == {f"e{NUL}": f"w{NUL}"}
    assert (change.op, change.target) == (f"o{NUL}p", f"tar{NUL}get")
    assert dict(change.data) == {f"d{NUL}": [f"x{NUL}", {NUL: NUL}]}


@SETTINGS
@given(content=TEXT, summary=TEXT, tag=TEXT, key=TEXT, value=TEXT)
def test_any_text_round_trips_in_a_memory(
    store: Store, content: str, summary: str, tag: str, key: str, value: str
) -> None:
    with store.write() as tx:
        pk = add_memory(tx, content, summary=summary, tags=[tag], props={key: value})
    try:
        with store.read() as tx:
            memory = tx.memory_by_pk(pk)
            assert tx.memory_pk(A, digest(content)) == pk
        assert memory is not None
        assert (memory.content, memory.summary, memory.tags) == (content, summary, (tag,))
        assert dict(memory.props) == {key: value}
    finally:
        with store.write() as tx:
            tx.delete_node(pk)


@SETTINGS
@given(name=TEXT, entity_type=TEXT, observations=st.lists(TEXT, min_size=1, max_size=4, unique=True))
def test_any_text_round_trips_in_an_entity(store: Store, name: str, entity_type: str, observations: list[str]) -> None:
    with store.write() as tx:
        pk = add_entity(tx, name, entity_type, observations)
    try:
        with store.read() as tx:
            entity = tx.entities_by_pk([pk])[pk]
            named = tx.entity_by_name([A], name)
        assert (entity.name, entity.entity_type, entity.observations) == (name, entity_type, tuple(observations))
        assert named is not None and named.pk == pk
    finally:
        with store.write() as tx:
            tx.delete_node(pk)


@SETTINGS
@given(op=TEXT, target=TEXT, key=TEXT, value=TEXT, meta=TEXT, actor=TEXT)
def test_any_text_round_trips_in_the_log_and_meta(
    store: Store, op: str, target: str, key: str, value: str, meta: str, actor: str
) -> None:
    with store.write() as tx:
        seq = tx.append_change(T0, A, op, target, {key: value}, actor=actor)
        tx.set_meta(key, meta)
    with store.read() as tx:
        (change,) = tx.changes(seq, 1)
        assert tx.get_meta(key) == meta
        assert seq in [c.seq for c in tx.changes_of(target)]
        assert seq in [c.seq for c in tx.change_page([A], ChangeFilter(ops=(op,), actors=(actor,)), None, 100)]
    assert (change.op, change.target, dict(change.data), change.actor) == (op, target, {key: value}, actor)


# Past what one index entry of a server database holds (a B-tree entry takes at most about
# a third of a page, after compression: so the values are random): the data model sets no
# length on these fields, and a client may well paste a long text into any of them.
LONG = 30_000


def _long(mark: str) -> str:
    return mark + secrets.token_hex(LONG // 2)


def test_long_values_are_stored_found_and_read_back(store: Store) -> None:
    word = _long("x")
    kind, name, observation = _long("T"), _long("N"), _long("O")
    with store.write() as tx:
        node = tx.insert_node(new_ulid(), A, "Thing", {"k": _long("v")}, T0)
        memory = add_memory(tx, f"the key is {word}", memory_type=kind, summary=word)
        entity = add_entity(tx, name, kind, [observation])
        edge = add_edge(tx, node, memory, kind)
        target = _long("t")
        seq = tx.append_change(T0, A, "op", target, {"d": word})
        tx.set_meta("key", word)
    with store.read() as tx:
        assert [hit.pk for hit in tx.search_text([word], [A], 5)] == [memory]
        assert tx.memory_by_pk(memory).memory_type == kind  # type: ignore[union-attr]
        assert tx.entity_by_name([A], name).pk == entity  # type: ignore[union-attr]
        assert tx.entity_by_name_nocase([A], name.lower()).pk == entity  # type: ignore[union-attr]
        assert tx.entity_pks_of_type([A], kind.lower()) == [entity]
        assert [e.pk for e in tx.find_edges(node, memory, kind)] == [edge]
        assert [c.seq for c in tx.changes_of(target)] == [seq]
        assert tx.get_meta("key") == word
    # Two long actors alike in their first thousands of characters are told apart.
    actor = _long("a")
    with store.write() as tx:
        by_actor = tx.append_change(T0, A, "op", None, {}, actor=actor)
        tx.append_change(T0, A, "op", None, {}, actor=actor[:-1] + "!")
    with store.read() as tx:
        assert tx.changes(by_actor, 1)[0].actor == actor
        for scopes in (None, [A]):
            assert [c.seq for c in tx.change_page(scopes, ChangeFilter(actors=(actor,)), None, 5)] == [by_actor]
