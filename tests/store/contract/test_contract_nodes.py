"""NodeReads and NodeWrites: node rows, the property-graph view, versions and reads."""

from __future__ import annotations

from mnemodb.model.ids import new_ulid
from mnemodb.model.records import ENTITY, MEMORY, Node
from mnemodb.store.base import AccessStats, EntityFieldWeights, NodeKey, NodeLabel, Store
from store.contract.rows import T0, A, B, C, add_edge, add_entity, add_memory, add_node, node_id


def test_insert_node_reads_back_its_own_row(store: Store) -> None:
    ident = new_ulid()
    with store.write() as tx:
        pk = tx.insert_node(ident, B, "Person", {"name": "Ada", "age": 36, "alive": False, "h": 1.5}, T0 + 3)
    with store.read() as tx:
        node = tx.node_by_id(ident)
        assert tx.node_by_id(new_ulid()) is None
    assert node == Node(pk, ident, B, "Person", {"name": "Ada", "age": 36, "alive": False, "h": 1.5}, T0 + 3, T0 + 3)


def test_insert_node_keeps_a_free_pk_and_pks_are_never_reused(store: Store) -> None:
    with store.write() as tx:
        first = add_node(tx)
        chosen = tx.insert_node(new_ulid(), A, "Thing", {}, T0, pk=first + 50)
        tx.delete_node(chosen)
        after = add_node(tx)
    assert chosen == first + 50
    assert after > chosen  # neither reused nor below a pk handed out before


def test_node_by_id_shows_stored_props_and_node_views_the_full_view(store: Store) -> None:
    with store.write() as tx:
        memory = add_memory(tx, "remember this", importance=3, memory_type="fact", summary="sum", props={"k": "v"})
        plain = add_memory(tx, "plain memory")
        entity = add_entity(tx, "Ada", "person", props={"born": 1815})
        untyped = add_entity(tx, "Thing one")
        ident = node_id(tx, memory)
    with store.read() as tx:
        own = tx.node_by_id(ident)
        views = tx.node_views([memory, plain, entity, untyped, memory + entity + 100])
        by_id = tx.node_view_by_id(ident)
        assert tx.node_view_by_id(new_ulid()) is None
    assert own is not None and dict(own.props) == {"k": "v"}
    assert set(views) == {memory, plain, entity, untyped}
    assert dict(views[memory].props) == {
        "content": "remember this",
        "importance": 3,
        "memory_type": "fact",
        "summary": "sum",
        "k": "v",
    }
    assert dict(views[plain].props) == {"content": "plain memory"}  # defaults are not shown
    assert dict(views[entity].props) == {"name": "Ada", "entityType": "person", "born": 1815}
    assert dict(views[untyped].props) == {"name": "Thing one"}
    assert views[memory].label == MEMORY and views[entity].label == ENTITY
    assert by_id == views[memory]


def test_a_view_takes_memory_and_entity_fields_by_the_nodes_label(store: Store) -> None:
    # Rows the engine never writes (it refuses memory fields on a node of another label,
    # entity fields likewise): a view, whichever read makes it, shows them only under
    # their own label, as the stores join them by it.
    with store.write() as tx:
        thing = add_node(tx, "Thing", props={"k": "v"})
        tx.insert_memory(thing, A, "0" * 64, "not its content", None, 0, "general")
        tx.insert_entity(thing, A, "Not Its Name", "ghost")
        ada = add_entity(tx, "Ada", "person")
        tx.insert_memory(ada, A, "1" * 64, "not Ada's content", None, 0, "general")
        note = add_memory(tx, "a memory")
        tx.insert_entity(note, A, "Not The Memory's Name", "ghost")
        add_edge(tx, ada, thing, "owns")
        add_edge(tx, note, ada, "about")
        ids = {pk: node_id(tx, pk) for pk in (thing, ada, note)}
    with store.read() as tx:
        views = tx.node_views([thing, ada, note])
        by_id = {pk: tx.node_view_by_id(ids[pk]) for pk in (thing, ada, note)}
        reached = {view.pk: view for _, view in tx.edges_reached({ada: ids[ada]}, "both")}
        reached_ada = [view for _, view in tx.edges_reached({thing: ids[thing]}, "in")]
    assert dict(views[thing].props) == {"k": "v"}
    assert dict(views[ada].props) == {"name": "Ada", "entityType": "person"}
    assert dict(views[note].props) == {"content": "a memory"}
    assert by_id == views
    assert reached == {thing: views[thing], note: views[note]}
    assert reached_ada == [views[ada]]


def test_labels_of_leaves_out_missing_nodes(store: Store) -> None:
    with store.write() as tx:
        memory = add_memory(tx, "m", scope=B)
        thing = add_node(tx, "Thing")
    with store.read() as tx:
        labels = tx.labels_of([thing, memory, thing + memory + 100])
    assert labels == {memory: NodeLabel(MEMORY, B), thing: NodeLabel("Thing", A)}
    assert labels[thing].label == "Thing" and labels[thing].scope == A


def test_nodes_with_prop_matches_value_and_type_oldest_first_in_scopes(store: Store) -> None:
    with store.write() as tx:
        tx.ensure_prop_index("Thing", "v")
        tx.ensure_prop_index("Thing", "v")  # idempotent
        text_one = add_node(tx, props={"v": "1"})
        int_one = add_node(tx, props={"v": 1})
        true = add_node(tx, props={"v": True})
        int_again = add_node(tx, props={"v": 1})
        add_node(tx, props={"v": 1}, scope=C)
        add_node(tx, "Other", props={"v": 1})
    with store.read() as tx:
        assert tx.nodes_with_prop("Thing", "v", 1, [A]) == [int_one, int_again]
        assert tx.nodes_with_prop("Thing", "v", "1", [A]) == [text_one]
        assert tx.nodes_with_prop("Thing", "v", True, [A]) == [true]
        assert tx.nodes_with_prop("Thing", "v", 2, [A]) == []
        assert tx.nodes_with_prop("Thing", "w", 1, [A]) == []


def test_nodes_with_prop_reads_a_memory_or_entity_field_from_the_view(store: Store) -> None:
    with store.write() as tx:
        first = add_memory(tx, "alpha text", importance=1)
        add_memory(tx, "beta text", importance=0)
        second = add_memory(tx, "gamma text", importance=1, scope=B)
        ada = add_entity(tx, "Ada", "person")
        add_entity(tx, "Untyped")
    with store.read() as tx:
        assert tx.nodes_with_prop(MEMORY, "content", "alpha text", [A, B]) == [first]
        assert tx.nodes_with_prop(MEMORY, "importance", 1, [A, B]) == [first, second]
        assert tx.nodes_with_prop(MEMORY, "importance", 1, [A]) == [first]
        assert tx.nodes_with_prop(ENTITY, "name", "Ada", [A]) == [ada]
        assert tx.nodes_with_prop(ENTITY, "entityType", "person", [A]) == [ada]
        # True is not 1, and a field the view does not show equals nothing.
        assert tx.nodes_with_prop(MEMORY, "importance", True, [A, B]) == []
        assert tx.nodes_with_prop(MEMORY, "importance", 0, [A, B]) == []
        assert tx.nodes_with_prop(MEMORY, "memory_type", "general", [A, B]) == []
        assert tx.nodes_with_prop(ENTITY, "entityType", "", [A]) == []


def test_node_pks_with_labels_oldest_first_whatever_the_scope(store: Store) -> None:
    with store.write() as tx:
        first = add_node(tx, "Thing", scope=C)
        add_node(tx, "Other")
        memory = add_memory(tx, "m", scope=B)
        last = add_node(tx, "Thing")
    with store.read() as tx:
        assert tx.node_pks_with_labels(["Thing"]) == [first, last]
        assert tx.node_pks_with_labels(["Thing", MEMORY]) == [first, memory, last]
        assert tx.node_pks_with_labels([]) == []


def test_touch_node_sets_updated_at_and_grows_the_version(store: Store) -> None:
    with store.write() as tx:
        pk = add_node(tx)
        before = tx.node_versions([pk])[pk]
        tx.touch_node(pk, T0 + 99)
        after = tx.node_versions([pk])[pk]
        node = tx.node_views([pk])[pk]
    assert after > before
    assert (node.created_at, node.updated_at) == (T0, T0 + 99)


def test_replace_node_props_makes_them_exactly_the_given_ones(store: Store) -> None:
    with store.write() as tx:
        pk = add_node(tx, props={"old": 1, "kept": "x"})
        before = tx.node_versions([pk])[pk]
        tx.replace_node_props(pk, {"kept": "y", "new": True}, T0 + 7)
        node = tx.node_views([pk])[pk]
        after = tx.node_versions([pk])[pk]
    assert dict(node.props) == {"kept": "y", "new": True}
    assert node.updated_at == T0 + 7
    assert after > before


def test_node_versions_grow_when_the_node_is_written_and_only_then(store: Store) -> None:
    """The version counts writes of the node's row (`touch_node`, `replace_node_props`),
    which the engine makes with every change of a memory or entity; reads and changes of
    something else leave it alone."""
    with store.write() as tx:
        memory = add_memory(tx, "first words")
        entity = add_entity(tx, "Ada", observations=["one"])
    with store.read() as rx:
        seen = rx.node_versions([memory, entity, memory + entity + 100])
    assert set(seen) == {memory, entity}

    def version(pk: int) -> int:
        with store.read() as tx:
            return tx.node_versions([pk])[pk]

    before = version(memory)
    with store.write() as tx:
        tx.update_memory(memory, {"importance": 4})
        tx.add_tags(memory, ["t"])
        tx.touch_node(memory, T0 + 1)
    assert version(memory) > before
    before = version(entity)
    with store.write() as tx:
        tx.add_observations(entity, ["two"], T0)
        tx.replace_node_props(entity, {"kept": 1}, T0 + 2)
    assert version(entity) > before
    before = version(memory)
    store.bump_access({memory: (1, T0 + 3)})
    with store.write() as tx:
        tx.set_node_text(memory, "declared words")
    assert version(memory) == before


def test_delete_node_removes_everything_hanging_off_it(store: Store) -> None:
    with store.write() as tx:
        ada = add_entity(tx, "Ada", "person", ["wrote notes"])
        memory = add_memory(tx, "about ada", tags=["t"])
        about = add_edge(tx, memory, ada, "about")
        other = add_edge(tx, ada, memory, "mentioned_in")
        tx.set_embedding(ada, "model", b"\x00\x00\x80?", 1, T0)
        tx.set_node_text(ada, "declared words")
    store.bump_access({ada: (2, T0)})
    with store.write() as tx:
        tx.delete_node(ada)
    with store.read() as tx:
        assert tx.labels_of([ada]) == {}
        assert tx.entities_by_pk([ada]) == {}
        assert tx.entity_by_name([A], "Ada") is None
        assert tx.edge_by_pk(about) is None and tx.edge_by_pk(other) is None
        assert tx.edges_of([memory], "both") == []
        assert tx.embedded_nodes("model") == []
        assert tx.access_counts([ada]) == {}
        assert tx.node_text_search(["declared"], [A], 10) == []
        assert tx.entity_word_search(["notes"], [A], 10, EntityFieldWeights()) == []
        assert tx.memory_by_pk(memory) is not None


def test_writes_to_a_missing_node_change_nothing(store: Store) -> None:
    with store.write() as tx:
        pk = add_node(tx, props={"a": 1})
        missing = pk + 1000
        tx.touch_node(missing, T0 + 1)
        tx.replace_node_props(missing, {"b": 2}, T0 + 1)
        tx.delete_node(missing)
        tx.set_node_text(missing, "ghost words")
    with store.read() as tx:
        assert tx.labels_of([missing]) == {}
        assert tx.node_versions([missing]) == {}
        assert tx.node_views([pk])[pk].props == {"a": 1}
        assert tx.node_text_search(["ghost"], [A], 10) == []
    with store.write() as tx:
        # A pk that was free when the text was set, taken later, starts with no text.
        tx.insert_node(new_ulid(), A, "Thing", {}, T0, pk=missing)
    with store.read() as tx:
        assert tx.node_text_search(["ghost"], [A], 10) == []


def test_access_counts_add_up_and_keep_the_latest_time(store: Store) -> None:
    with store.write() as tx:
        read = add_node(tx)
        unread = add_node(tx)
    with store.read() as tx:
        assert tx.access_of(read) == AccessStats(0, 0)
    store.bump_access({read: (2, T0 + 10)})
    store.bump_access({read: (3, T0 + 5), unread + 100: (1, T0)})
    with store.read() as tx:
        stats = tx.access_of(read)
        counts = tx.access_counts([read, unread, unread + 100])
    assert stats == AccessStats(5, T0 + 10)
    assert (stats.reads, stats.last_at) == (5, T0 + 10)
    assert counts == {read: 5}


def test_access_counts_of_a_large_batch_each_add_up(store: Store) -> None:
    # 600 nodes: more rows than one statement of the SQLite store adds (256), and a count
    # that is not a sum of whole statements; half of them read before.
    with store.write() as tx:
        pks = [add_node(tx) for _ in range(600)]
    store.bump_access(dict.fromkeys(pks[::2], (1, T0 + 1)))
    store.bump_access({pk: (i % 5 + 1, T0 + i) for i, pk in enumerate(pks)})
    with store.read() as tx:
        counts = tx.access_counts(pks)
        first, second, last = tx.access_of(pks[0]), tx.access_of(pks[1]), tx.access_of(pks[-1])
    assert counts == {pk: i % 5 + 1 + (1 - i % 2) for i, pk in enumerate(pks)}
    assert (first, second, last) == (AccessStats(2, T0 + 1), AccessStats(2, T0 + 1), AccessStats(5, T0 + 599))


def test_access_counts_of_a_large_batch_skip_only_a_deleted_node(store: Store) -> None:
    with store.write() as tx:
        pks = [add_node(tx) for _ in range(300)]
        tx.delete_node(pks[200])
    store.bump_access(dict.fromkeys(pks, (2, T0 + 9)))
    with store.read() as tx:
        counts = tx.access_counts(pks)
    assert counts == {pk: 2 for pk in pks if pk != pks[200]}


def test_bump_access_shows_in_the_memory_record(store: Store) -> None:
    with store.write() as tx:
        pk = add_memory(tx, "read me")
    store.bump_access({pk: (4, T0 + 40)})
    with store.read() as tx:
        memory = tx.memory_by_pk(pk)
    assert memory is not None and (memory.access_count, memory.last_accessed_at) == (4, T0 + 40)


def test_bump_access_is_not_logged_and_keeps_the_version(store: Store) -> None:
    with store.write() as tx:
        pk = add_node(tx)
        version = tx.node_versions([pk])[pk]
    store.bump_access({pk: (1, T0)})
    with store.read() as tx:
        assert tx.current_seq() == 0
        assert tx.node_versions([pk])[pk] == version


def test_nodes_by_ids_reads_what_node_by_id_reads_for_many_ids_at_once(store: Store) -> None:
    with store.write() as tx:
        pks = [add_node(tx, props={"i": i} if i % 2 else {}) for i in range(450)]  # more than one chunk
        ids = [node_id(tx, pk) for pk in pks]
    missing = new_ulid()
    with store.read() as tx:
        found = tx.nodes_by_ids([*ids, ids[3], missing])
        one_by_one = {i: tx.node_by_id(i) for i in ids}
        assert tx.nodes_by_ids([]) == {}
    assert found == one_by_one
    assert dict(found[ids[1]].props) == {"i": 1} and dict(found[ids[2]].props) == {}


def test_node_keys_by_ids_are_the_keys_of_what_nodes_by_ids_reads(store: Store) -> None:
    with store.write() as tx:
        pks = [add_node(tx, scope=(A, B)[i % 2], props={"i": i}) for i in range(300)]  # more than one chunk
        ids = [node_id(tx, pk) for pk in pks]
    with store.read() as tx:
        keys = tx.node_keys_by_ids([*ids[:5], ids[3], new_ulid(), *ids[5:]])
        nodes = tx.nodes_by_ids(ids)
        assert tx.node_keys_by_ids([]) == {}
    assert keys == {i: NodeKey(n.pk, n.id, n.scope, n.label) for i, n in nodes.items()}
    assert set(keys) == set(ids)
