"""Archived memories: kept, read by reference and in their history, but left out of every
face's searches and listings unless a caller asks for them; each archive and unarchive is
a logged change, gated by the grant's write scopes like any other."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.helpers import open_engine_at
from mnemodb.engine import Engine, InvalidArgument, NewMemory, NotFound
from mnemodb.engine.graph import NewEntity
from mnemodb.engine.items import Note
from mnemodb.engine.properties import IndexSpec, SetEmbedding
from mnemodb.engine.tokens import Grant, granted
from mnemodb.model.errors import Forbidden
from mnemodb.model.records import ItemFilter, Memory
from support import SCOPE_A, Clock

EVERY = ItemFilter(include_archived=True)


def _memories(eng: Engine, *contents: str, scope: str | None = None) -> list[Memory]:
    remembered, _ = eng.items.remember([Note(NewMemory(c, ("kitchen",))) for c in contents], scope=scope)
    out = [r.item for r in remembered]
    assert all(isinstance(m, Memory) for m in out)
    return out  # type: ignore[return-value]


def _found(eng: Engine, query: str | None = None, where: ItemFilter | None = None) -> list[str]:
    return [f.item.id for f in eng.items.search(query, where=where, kinds=["memory"], limit=20).found]


def test_an_archived_memory_is_read_by_reference_and_searched_only_when_asked(eng: Engine, clock: Clock) -> None:
    kettle, toaster, fridge = _memories(eng, "The kettle is broken", "The toaster is new", "The fridge hums")
    clock.now += 1000
    archived = eng.items.archive(kettle.hash)
    assert (archived.id, archived.archived_at, archived.updated_at) == (kettle.id, clock.now, clock.now)

    # Read by reference, whichever way it is named.
    [by_id] = eng.items.get([kettle.id])
    assert isinstance(by_id, Memory) and by_id.archived_at == clock.now
    by_hash = eng.memories.get(kettle.hash)
    assert by_hash is not None and by_hash.archived_at == clock.now

    # Left out of the native search and listing, and of memdb's search and recall.
    assert _found(eng, "kettle") == []
    assert _found(eng) == [fridge.id, toaster.id]
    assert _found(eng, "kettle", EVERY) == [kettle.id]
    assert _found(eng, None, EVERY) == [fridge.id, toaster.id, kettle.id]
    assert set(_found(eng, "kitchen")) == {fridge.id, toaster.id}
    assert eng.memories.search("kettle") == []
    assert [h.memory.id for h in eng.memories.search("kettle", include_archived=True)] == [kettle.id]
    assert kettle.id not in [h.memory.id for h in eng.memories.search("kitchen")]
    assert eng.memories.recall("kettle").memories == ()
    assert [r.memory.id for r in eng.memories.recall("kettle", include_archived=True).memories] == [kettle.id]

    clock.now += 1000
    back = eng.items.unarchive(kettle.id)
    assert (back.archived_at, back.updated_at) == (None, clock.now)
    assert _found(eng, "kettle") == [kettle.id]
    assert [c.op for c in eng.items.history(kettle.id)] == ["create_node", "archive_node", "unarchive_node"]


def test_the_past_of_an_item_shows_when_it_was_archived(eng: Engine, clock: Clock) -> None:
    [kettle] = _memories(eng, "The kettle is broken")
    created = clock.now
    clock.now += 1000
    eng.items.archive(kettle.id)
    archived_at = clock.now
    clock.now += 1000
    eng.items.unarchive(kettle.id)

    def then(at: int) -> int | None:
        [past] = eng.items.get([kettle.id], as_of=at)
        assert isinstance(past, Memory)
        return past.archived_at

    assert then(created) is None
    assert then(archived_at) == archived_at
    assert then(archived_at + 999) == archived_at
    assert then(clock.now) is None


def test_archiving_what_is_archived_changes_and_logs_nothing(eng: Engine, clock: Clock) -> None:
    [kettle] = _memories(eng, "The kettle is broken")
    eng.items.unarchive(kettle.id)
    assert eng.current_seq() == 1
    first = eng.items.archive(kettle.id)
    clock.now += 1000
    again = eng.items.archive(kettle.id)
    assert again.archived_at == first.archived_at
    assert [c.op for c in eng.changes()] == ["create_node", "archive_node"]


def test_only_memories_are_archived_and_several_are_all_or_nothing(eng: Engine) -> None:
    kettle, toaster = _memories(eng, "The kettle is broken", "The toaster is new")
    eng.graph.create_entities([NewEntity("Ada", "person")])
    [(relation, _)], _ = eng.items.relate([(kettle.id, "Ada", "about", {}, None)])
    seq = eng.current_seq()
    with pytest.raises(InvalidArgument, match="'Ada' is an entity: only memories are archived"):
        eng.items.archive("Ada")
    with pytest.raises(InvalidArgument, match="is a relation"):
        eng.items.archive(relation.id)
    with pytest.raises(NotFound):
        eng.items.archive("no such memory")
    with pytest.raises(InvalidArgument, match=r"refs\[1\]: 'Ada' is an entity.*\(nothing was changed\)"):
        eng.items.archive_many([kettle.id, "Ada", toaster.id])
    with pytest.raises(NotFound, match=r"refs\[2\]"):
        eng.items.archive_many([kettle.id, toaster.id, "01HV7N8Q3Y2J6W5X4Z9A0B1C99"])
    with pytest.raises(InvalidArgument, match="at least one"):
        eng.items.archive_many([])
    assert eng.current_seq() == seq
    assert _found(eng, "kettle toaster") != []

    done = eng.items.archive_many([kettle.id, toaster.hash, kettle.id])
    assert [m.id for m in done] == [kettle.id, toaster.id, kettle.id]
    assert [c.op for c in eng.changes(seq + 1)] == ["archive_node", "archive_node"]
    assert _found(eng) == []
    assert [m.archived_at for m in eng.items.unarchive_many([kettle.id, toaster.id])] == [None, None]
    assert len(_found(eng)) == 2


def test_a_grant_archives_only_in_the_scopes_it_writes(eng: Engine) -> None:
    [private] = _memories(eng, "Team A's kettle is broken", scope=SCOPE_A)
    [shared] = _memories(eng, "The shared kettle works")
    seq = eng.current_seq()
    reads_a = Grant("reads-a", (SCOPE_A, "shared"), "shared", ("shared",))
    with granted(reads_a):
        with pytest.raises(Forbidden, match=f'scope "{SCOPE_A}" is not writable with token "reads-a"'):
            eng.items.archive(private.id)
        with pytest.raises(Forbidden):
            eng.items.archive_many([shared.id, private.id])
        assert eng.items.archive(shared.id).archived_at is not None
        with pytest.raises(Forbidden):
            eng.items.unarchive_many([shared.id, private.id])
        with pytest.raises(Forbidden):  # nothing to change, but not its to change either way
            eng.items.unarchive(private.id)
    with granted(Grant("reader", (SCOPE_A, "shared"), "shared", ())), pytest.raises(Forbidden, match="read-only"):
        eng.items.archive(private.id)
    with granted(Grant("other-team", ("shared",), "shared", ("shared",))), pytest.raises(NotFound):
        eng.items.archive(private.id)  # a scope it cannot read holds nothing for it
    [archived] = eng.changes(seq + 1)
    assert (archived.op, archived.target, archived.actor) == ("archive_node", shared.id, "reads-a")
    [kept] = eng.items.get([private.id], scopes=[SCOPE_A])
    assert isinstance(kept, Memory) and kept.archived_at is None


def test_a_search_does_not_reach_archived_memories_over_relations(eng: Engine) -> None:
    kettle, note, other = _memories(eng, "The kettle is broken", "Buy a new one on Friday", "Descale it monthly")
    eng.items.relate([(kettle.id, note.id, "follows", {}, None), (kettle.id, other.id, "follows", {}, None)])
    eng.items.archive(note.id)
    page = eng.items.search("kettle", kinds=["memory"], expand_hops=1)
    assert [i.id for i in page.related] == [other.id]
    page = eng.items.search("kettle", kinds=["memory"], expand_hops=1, where=EVERY)
    assert {i.id for i in page.related} == {note.id, other.id}
    assert {r.memory.id for r in eng.memories.recall("kettle", 1).memories} == {kettle.id, other.id}
    recalled = eng.memories.recall("kettle", 1, include_archived=True).memories
    assert {r.memory.id for r in recalled} == {kettle.id, note.id, other.id}
    # A walk by reference is not a search: it shows the archived memory, which says so.
    explored = {i.id: i for i in eng.items.explore([kettle.id]).items}
    assert explored[note.id].archived_at is not None  # type: ignore[union-attr]


def test_the_property_graph_searches_leave_archived_memories_out(eng: Engine) -> None:
    eng.nodes.use_spec(IndexSpec(equality=(("Memory", "room"),), text=(("Memory", "content"), ("Memory", "topic"))))
    memories = [
        eng.memories.store(f"kettle note {i}", props={"room": "kitchen", "topic": "kettle"}).memory for i in range(4)
    ]
    eng.nodes.submit([SetEmbedding(m.id, "m", (1.0, float(i) / 10)) for i, m in enumerate(memories)])
    archived = {memories[0].id, memories[1].id}
    eng.items.archive_many(sorted(archived))
    live = {memories[2].id, memories[3].id}

    hits = eng.nodes.search_text("kettle", k=2)
    assert {node.id for node, _ in hits} == live
    assert len(eng.nodes.search_text("kettle", k=10, include_archived=True)) == 4
    assert {n.id for n in eng.nodes.find_by_prop("Memory", "room", "kitchen")} == live
    assert len(eng.nodes.find_by_prop("Memory", "room", "kitchen", include_archived=True)) == 4
    # The two nearest vectors are archived: the two next take their places.
    near = eng.nodes.search_vectors("m", (1.0, 0.0), k=2)
    assert {node.id for node, _ in near} == live
    assert {node.id for node, _ in eng.nodes.search_vectors("m", (1.0, 0.0), k=2, include_archived=True)} == archived
    # Read by id, as ever.
    assert eng.nodes.get_node(memories[0].id) is not None


def test_export_and_import_keep_archived_memories_archived(eng: Engine, tmp_path: Path, clock: Clock) -> None:
    kettle, toaster = _memories(eng, "The kettle is broken", "The toaster is new")
    clock.now += 1000
    eng.items.archive(kettle.id)
    records = list(eng.export())
    [record] = [r for r in records if r.get("id") == kettle.id]
    assert record["memory"]["archived_at"] == clock.now
    clock.now += 1000
    with open_engine_at(tmp_path / "copy" / "memory.db", clock=clock) as copy:
        report = copy.import_records(records)
        assert report.errors == ()
        [loaded] = copy.items.get([kettle.id])
        assert isinstance(loaded, Memory) and loaded.archived_at == clock.now - 1000
        assert _found(copy) == [toaster.id]
        assert _found(copy, "kettle", EVERY) == [kettle.id]
        # Its past: archived since the time it was archived, not before.
        [before] = copy.items.get([kettle.id], as_of=clock.now - 1001)
        assert isinstance(before, Memory) and before.archived_at is None
    bad = [records[0], {**record, "memory": {**record["memory"], "archived_at": "yesterday"}}]
    with open_engine_at(tmp_path / "bad" / "memory.db", clock=clock) as copy:
        assert "archived_at must be milliseconds" in copy.import_records(bad).errors[0]


def test_storing_an_archived_memory_s_content_again_leaves_it_archived(eng: Engine) -> None:
    [kettle] = _memories(eng, "The kettle is broken")
    eng.items.archive(kettle.id)
    again = eng.memories.store("The kettle is broken", ["urgent"])
    assert not again.is_new
    assert again.memory.id == kettle.id and again.memory.archived_at is not None
    assert again.memory.tags == ("kitchen", "urgent")
    assert eng.memories.search("kettle") == []
