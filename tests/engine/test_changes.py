"""The change log: one entry per operation, written with the write, gapless; reads and access counts write none."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

import pytest

from engine.helpers import committed, store_at
from mnemodb.engine import Conflict, Engine, InvalidArgument, NewMemory, NotFound, OperationTimeout
from mnemodb.engine.graph import NewEntity
from mnemodb.engine.items import Note
from mnemodb.model.ids import new_ulid
from support import START_MS, Clock, sha256


class Log:
    """Reads the change log entries a step appended, checking they follow on without a gap."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.seq = engine.current_seq()

    def take(self) -> list[Any]:
        changes = self.engine.changes(self.seq + 1)
        assert [c.seq for c in changes] == list(range(self.seq + 1, self.seq + 1 + len(changes)))
        self.seq += len(changes)
        assert self.engine.current_seq() == self.seq
        return changes

    def ops(self) -> list[tuple[str, str | None]]:
        return [(c.op, c.target) for c in self.take()]


def stored_log(db_path: Path) -> list[int]:
    """The seqs of the change log the database holds, read through a store of its own: what
    was committed, not what the engine that wrote it says."""
    with committed(db_path) as tx:
        seqs = [c.seq for c in tx.changes(0, None)]
        assert tx.current_seq() == (seqs[-1] if seqs else 0)
    return seqs


# -- what each write appends ------------------------------------------------------------------------------


def test_a_fresh_store_has_an_empty_log(eng: Engine) -> None:
    assert eng.current_seq() == 0
    assert eng.changes() == []


def test_memory_writes_append_their_ops(eng: Engine, clock: Clock) -> None:
    log = Log(eng)
    memory = eng.memories.store("alpha", ["x"], 3, "fact").memory
    [created] = log.take()
    assert (created.seq, created.op, created.target, created.scope, created.at) == (
        1,
        "create_node",
        memory.id,
        "shared",
        clock.now,
    )
    assert created.data["label"] == "Memory"
    assert created.data["memory"] == {
        "hash": memory.hash,
        "content": "alpha",
        "summary": None,
        "importance": 3,
        "memory_type": "fact",
        "tags": ["x"],
    }

    clock.now += 1
    eng.memories.store("alpha", ["x"])
    assert log.take() == []  # nothing new: nothing logged
    eng.memories.store("alpha", ["y", "x", "z"])
    [tags] = log.take()
    assert (tags.op, tags.target, tags.data["tags"]) == ("add_tags", memory.id, ["y", "z"])

    clock.now += 1
    _, after = eng.memories.update(memory.hash, content="beta", tags=["q"], importance=4)
    [updated] = log.take()
    assert (updated.op, updated.target, updated.at) == ("update_node", memory.id, clock.now)
    assert updated.data["set"] == {"content": "beta", "hash": after.hash, "importance": 4, "tags": ["q"]}
    eng.memories.update(after.hash, content="beta", tags=["q"], importance=4)
    assert log.take() == []  # no change: nothing logged

    assert eng.memories.delete(after.hash)
    assert log.ops() == [("remove_node", memory.id)]
    assert not eng.memories.delete(after.hash)
    assert log.take() == []


def test_batch_writes_append_one_op_per_change(eng: Engine) -> None:
    log = Log(eng)
    results = eng.memories.store_many([NewMemory("one"), NewMemory("bad", importance=99), NewMemory("two")])
    ids = [r.value.memory.id for r in results if r.ok]
    assert log.ops() == [("create_node", ids[0]), ("create_node", ids[1])]
    eng.memories.delete_many([sha256("one"), sha256("missing"), sha256("two")])
    assert log.ops() == [("remove_node", ids[0]), ("remove_node", ids[1])]


def test_relation_and_edge_writes_append_their_ops(eng: Engine, clock: Clock) -> None:
    a = eng.memories.store("a").memory
    b = eng.memories.store("b").memory
    log = Log(eng)
    link, _ = eng.memories.relate(a.hash, b.hash, "supports")
    [created] = log.take()
    assert (created.op, created.target) == ("create_edge", link.edge.id)
    assert created.data == {
        "id": link.edge.id,
        "from": a.id,
        "to": b.id,
        "type": "supports",
        "scope": "shared",
        "props": {},
        "valid_from": clock.now,
    }
    eng.memories.relate(a.hash, b.hash, "supports")
    assert log.take() == []
    clock.now += 7
    eng.items.relate(close=[(link.edge.id, None)])
    [closed] = log.take()
    assert (closed.op, closed.target, closed.data) == (
        "close_edge",
        link.edge.id,
        {"id": link.edge.id, "valid_to": clock.now},
    )
    [(edge, _)], _ = eng.items.relate(add=[(b.id, a.id, "answers", {"w": 1}, None)])
    assert log.ops() == [("create_edge", edge.id)]
    assert eng.memories.unrelate(a.hash, b.hash, "supports")
    assert log.ops() == [("remove_edge", link.edge.id)]
    assert not eng.memories.unrelate(a.hash, b.hash, "supports")
    assert log.take() == []
    # Deleting a node logs its removal only; its edges go with it.
    eng.memories.delete(a.hash)
    assert log.ops() == [("remove_node", a.id)]


def test_entity_writes_append_their_ops(eng: Engine) -> None:
    log = Log(eng)
    [entity] = eng.graph.create_entities([NewEntity("Ada", "person", ("one", "two"))])
    [created] = log.take()
    assert (created.op, created.target) == ("create_node", entity.id)
    assert created.data["entity"] == {"name": "Ada", "entity_type": "person", "observations": ["one", "two"]}
    eng.graph.create_entities([NewEntity("Ada", "person")])
    assert log.take() == []
    eng.graph.add_observations([("Ada", ["two", "three"])])
    [added] = log.take()
    assert (added.op, added.target, added.data["contents"]) == ("add_observations", entity.id, ["three"])
    eng.graph.add_observations([("Ada", ["one"])])
    assert log.take() == []


def test_every_change_is_stored_in_the_change_log_table(eng: Engine, db_path: Path) -> None:
    eng.memories.store("a", ["t"])
    eng.graph.create_entities([NewEntity("E")])
    assert stored_log(db_path) == [c.seq for c in eng.changes()] == [1, 2]


# -- gapless, even when writes fail ---------------------------------------------------------------------------


def test_seq_is_gapless_from_one_when_writes_fail(eng: Engine) -> None:
    a = eng.memories.store("a").memory
    b = eng.memories.store("b").memory
    failures: list[Any] = [
        lambda: eng.memories.update(sha256("missing"), content="x"),
        lambda: eng.memories.update(a.hash, content="b"),
        lambda: eng.memories.update(a.hash, importance=12),
        lambda: eng.memories.store("bad", ["no good"]),
        lambda: eng.memories.relate(a.hash, a.hash, "self"),
        lambda: eng.memories.relate(a.hash, sha256("missing"), "x"),
        lambda: eng.graph.add_observations([("nobody", ["x"])]),
        lambda: eng.items.relate(add=[(a.id, "01HV7N8Q3Y2J6W5X4Z9A0B1C2Z", "x", {}, None)]),
        lambda: eng.memories.store("private", scope="nope"),
    ]
    expected = 2
    for fail in failures:
        with pytest.raises((InvalidArgument, NotFound, Conflict)):
            fail()
        assert eng.current_seq() == expected
        eng.memories.store(f"after failure {expected}")
        expected += 1
    link, _ = eng.memories.relate(a.hash, b.hash, "x")
    eng.items.relate(close=[(link.edge.id, None)])
    with pytest.raises(Conflict):
        eng.items.relate(close=[(link.edge.id, None)])
    expected += 2
    results = eng.memories.store_many([NewMemory("ok 1"), NewMemory(""), NewMemory("x", ("a b",)), NewMemory("ok 2")])
    assert [r.ok for r in results] == [True, False, False, True]
    expected += 2
    assert [c.seq for c in eng.changes()] == list(range(1, expected + 1))


def test_seq_is_gapless_when_a_batch_item_fails_inside_the_database(eng: Engine, db_path: Path) -> None:
    eng.memories.store("before")
    items = [NewMemory("ok 1"), NewMemory("unstorable type", memory_type="\udcff"), NewMemory("ok 2")]
    with contextlib.suppress(Exception):
        eng.memories.store_many(items)
    eng.memories.store("after")
    seqs = [c.seq for c in eng.changes()]
    assert seqs == list(range(1, len(seqs) + 1))
    # Whatever the batch did, it left no half-written item behind.
    with committed(db_path) as tx:
        stored = tx.counts(None)
    assert stored["nodes"] == stored["memories"] == eng.stats().memories
    assert len(seqs) == eng.stats().memories


@pytest.fixture
def hub(eng: Engine) -> tuple[str, str]:
    """A memory with thousands of edges, so deleting it is one long statement; and a small memory."""
    small = eng.memories.store("small memory").memory
    hub = eng.memories.store("hub memory").memory
    other = eng.memories.store("other memory").memory
    with eng.store.write() as tx:
        for _ in range(3000):
            tx.insert_edge(new_ulid(), hub.pk, other.pk, "spoke", "shared", {}, START_MS, START_MS)
    return small.hash, hub.hash


def test_an_operation_killed_by_its_time_limit_leaves_no_data_and_no_ops(
    eng: Engine, hub: tuple[str, str], db_path: Path
) -> None:
    small, big = hub
    seq = eng.current_seq()
    with pytest.raises(OperationTimeout), eng.time_limit(0):
        # The small memory is deleted (and its removal logged) before the long delete is cut short.
        eng.memories.delete_many([small, big])
    assert eng.current_seq() == seq
    assert eng.memories.get(small) is not None
    assert eng.memories.get(big) is not None
    assert eng.stats().edges == 3000
    assert stored_log(db_path) == list(range(1, seq + 1))
    # The engine goes on, and the next entry follows on without a gap.
    with eng.time_limit(30):
        assert eng.memories.delete_many([small, big])[1].value is True
    assert [c.seq for c in eng.changes()] == list(range(1, seq + 3))
    assert eng.stats().edges == 0


def test_a_read_killed_by_its_time_limit_writes_nothing(eng: Engine) -> None:
    eng.memories.store_many([NewMemory(f"needle number {i}") for i in range(3000)])
    seq = eng.current_seq()
    with pytest.raises(OperationTimeout), eng.time_limit(0):
        eng.memories.search("needle")
    assert eng.current_seq() == seq
    assert len(eng.memories.search("needle", limit=5)) == 5


def test_a_write_stopped_inside_a_savepoint_is_a_timeout_and_leaves_nothing(eng: Engine, db_path: Path) -> None:
    # Each note is written inside a savepoint of its own; SQLite rolls back the whole
    # transaction when a write statement is stopped, so the savepoint is gone by then. The
    # reads before the first are short (one name to look up), and the notes' statements
    # add up to many checks of the time.
    notes = [Note(NewMemory(f"note number {i}"), about=("Topic",)) for i in range(200)]
    seq = eng.current_seq()
    with pytest.raises(OperationTimeout), eng.time_limit(0):
        eng.items.remember(notes)
    assert eng.current_seq() == seq and stored_log(db_path) == list(range(1, seq + 1))
    with eng.time_limit(60):
        eng.items.remember(notes)
    assert eng.current_seq() == seq + 401  # the entity, and each memory and its link


def test_a_committed_change_lifts_the_shorter_limit_of_a_first_try(eng: Engine) -> None:
    def many(tag: str) -> list[NewEntity]:
        return [NewEntity(f"{tag} {i}", "thing", (f"fact {i}",)) for i in range(500)]

    # Past the shorter limit with nothing committed, a statement is stopped: the try can be
    # run again.
    first_try = eng.time_limit(60, statements_within=0.05)
    with pytest.raises(OperationTimeout), first_try:
        time.sleep(0.1)
        eng.graph.create_entities(many("before"))
    assert not first_try.changed
    # Once a change has committed, the try cannot be run again: the rest of it runs under
    # the whole limit.
    first_try = eng.time_limit(60, statements_within=1.0)
    with first_try:
        eng.graph.create_entities([NewEntity("first", "thing", ("one fact",))])
        time.sleep(1.1)
        eng.graph.create_entities(many("after"))
    assert first_try.changed
    assert [e.name for e in eng.graph.open(["first", "after 499", "before 0"]).entities] == ["first", "after 499"]


# -- reads write nothing; access statistics are counted off the log ------------------------------------------


def test_reads_write_no_ops(eng: Engine, db_path: Path) -> None:
    a = eng.memories.store("read me", ["tag"]).memory
    b = eng.memories.store("read me too").memory
    eng.memories.relate(a.hash, b.hash, "x")
    eng.graph.create_entities([NewEntity("Reader", observations=("o",))])
    seq = eng.current_seq()
    eng.memories.get(a.hash)
    eng.memories.get(sha256("missing"))
    eng.memories.search("read")
    eng.memories.search("tag")
    eng.memories.recall("read", 2)
    eng.memories.links(a.hash)
    eng.graph.open(["Reader"])
    eng.stats()
    eng.changes()
    list(eng.export())
    eng.access.flush()
    assert eng.current_seq() == seq
    assert stored_log(db_path) == list(range(1, seq + 1))


def test_access_statistics_are_counted_for_reads(eng: Engine, clock: Clock) -> None:
    a = eng.memories.store("apple pie").memory
    b = eng.memories.store("banana split").memory
    c = eng.memories.store("cherry tart").memory
    eng.memories.relate(a.hash, b.hash, "with")
    seq = eng.current_seq()
    assert (a.access_count, a.last_accessed_at) == (0, None)

    clock.now += 10
    eng.memories.get(a.hash)
    clock.now += 10
    eng.memories.get(a.hash)
    clock.now += 10
    eng.memories.search("apple")  # a
    eng.memories.search("cherry", record_access=False)  # not counted
    eng.memories.get(sha256("missing"))
    clock.now += 10
    eng.memories.recall("apple", 1)  # a and b
    eng.memories.links(a.hash)  # not counted
    eng.access.flush()

    def current(digest: str) -> tuple[int, int | None]:
        with eng.store.read() as tx:  # reading through the store records no access
            memory = tx.memory_by_hash(["shared"], digest)
        assert memory is not None
        return memory.access_count, memory.last_accessed_at

    assert current(a.hash) == (4, clock.now)
    assert current(b.hash) == (1, clock.now)
    assert current(c.hash) == (0, None)
    assert eng.current_seq() == seq
    fetched = eng.memories.get(a.hash)
    assert fetched is not None
    assert fetched.access_count == 4
    eng.access.flush()
    assert current(a.hash) == (5, clock.now)
    assert eng.current_seq() == seq


def test_access_statistics_are_flushed_on_close(db_path: Path, clock: Clock) -> None:
    with Engine(store_at(db_path), clock=clock, access_interval=3600) as first:
        memory = first.memories.store("remember me").memory
        first.memories.get(memory.hash)
        first.memories.get(memory.hash)
    with Engine(store_at(db_path), clock=clock, access_interval=3600) as second, second.store.read() as tx:
        found = tx.memory_by_pk(memory.pk)
        assert found is not None
        assert (found.access_count, found.last_accessed_at) == (2, clock.now)
        assert tx.current_seq() == 1


def test_access_to_a_memory_deleted_before_the_flush_is_dropped(eng: Engine, db_path: Path) -> None:
    memory = eng.memories.store("fleeting").memory
    eng.memories.get(memory.hash)
    eng.memories.delete(memory.hash)
    eng.access.flush()
    with committed(db_path) as tx:
        assert tx.access_counts([memory.pk]) == {}
        assert tx.access_of(memory.pk) == (0, 0)
    assert eng.current_seq() == 2


def test_times_never_go_back_when_the_clock_does(db_path: Path) -> None:
    """A host whose clock is behind another's (or steps back) writes at the change log's
    last time, not before it: the log's times follow its order. Reads are not held back."""
    clock = Clock(START_MS)
    with Engine(store_at(db_path), clock=clock) as engine:
        first = engine.memories.store("written by the host whose clock is ahead")
        clock.now = START_MS - 60_000  # another host, a minute behind
        second = engine.memories.store("written by the host whose clock is behind")
        assert engine.clock() == START_MS - 60_000
        clock.now = START_MS + 5
        third = engine.memories.store("written once the clock caught up")
        times = [change.at for change in engine.changes()]
    assert times == [START_MS, START_MS, START_MS + 5]
    assert first.memory.created_at == START_MS
    assert second.memory.created_at == START_MS
    assert third.memory.created_at == START_MS + 5
