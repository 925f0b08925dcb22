"""The items face (`engine.items`): memories, entities and relations addressed alike by id,
hash or name; remember, search and listing, forget, revise, relate, explore, paths and the
scoped change feed. Every test runs on a real database of the chosen store (`stores.py`: a
SQLite file by default) with a clock it controls."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import re
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.helpers import open_engine_at, store_at
from mnemodb.engine import Conflict, Engine, InvalidArgument, NotFound
from mnemodb.engine.graph import NewEntity
from mnemodb.engine.items import EntityNote, Item, ItemPage, Neighbourhood, Note, Patch, Remembered
from mnemodb.engine.properties import CreateNode, SetEmbedding
from mnemodb.model import ops
from mnemodb.model.records import ABOUT, SUPERSEDES, Edge, Entity, ItemFilter, Memory, NewMemory, Props, Stats
from support import SCOPE_A, START_MS, Clock, sha256

SCOPE_B = "01HV7N8Q3Y2J6W5X4Z9A0B1C2E"
ALL = ["shared", SCOPE_A, SCOPE_B]
MISSING = "01HV7N8Q3Y2J6W5X4Z9A0B1C2Z"  # a well-formed ULID no node or edge ever has


# -- helpers ----------------------------------------------------------------------------------------


def mem(
    eng: Engine,
    content: str,
    *,
    tags: Sequence[str] = (),
    importance: int = 0,
    memory_type: str = "general",
    summary: str | None = None,
    props: Props | None = None,
    about: Sequence[str] = (),
    supersedes: str | None = None,
    scope: str | None = None,
    scopes: Sequence[str] | None = None,
) -> Memory:
    """Remember one memory; the memory."""
    note = Note(
        NewMemory(content, tuple(tags), importance, memory_type, summary, dict(props or {})), tuple(about), supersedes
    )
    [done], _ = eng.items.remember([note], scope=scope, scopes=scopes)
    assert isinstance(done.item, Memory)
    return done.item


def ent(
    eng: Engine,
    name: str,
    entity_type: str = "",
    observations: Sequence[str] = (),
    *,
    scope: str | None = None,
    scopes: Sequence[str] | None = None,
) -> Entity:
    """Remember one entity; the entity."""
    _, [done] = eng.items.remember(
        entities=[NewEntity(name, entity_type, tuple(observations))], scope=scope, scopes=scopes
    )
    assert isinstance(done.item, Entity)
    return done.item


def rel(
    eng: Engine,
    src: str,
    dst: str,
    edge_type: str,
    *,
    props: Props | None = None,
    valid_from: int | None = None,
    scope: str | None = None,
    scopes: Sequence[str] | None = None,
) -> Edge:
    """Open one relation; the edge."""
    [(edge, _)], _ = eng.items.relate(
        [(src, dst, edge_type, dict(props or {}), valid_from)], scope=scope, scopes=scopes
    )
    return edge


def item_of(outcome: Remembered) -> Item:
    """The item a remembered outcome holds (an error outcome fails the test)."""
    assert outcome.item is not None, outcome.error
    return outcome.item


def label(item: Item | Edge | None) -> str | None:
    """A readable handle: a memory's content, an entity's name, an edge's type (None for None)."""
    if item is None:
        return None
    if isinstance(item, Memory):
        return item.content
    if isinstance(item, Entity):
        return item.name
    return f"edge:{item.type}"


def labels(page: ItemPage) -> list[str | None]:
    return [label(f.item) for f in page.found]


def names(items: Iterable[Item]) -> set[str | None]:
    return {label(i) for i in items}


def state(eng: Engine) -> tuple[Stats, int, list[dict[str, Any]]]:
    """Everything a write could change: counts, the change log's end, and every record."""
    stats = dataclasses.replace(eng.stats(scopes=ALL), size_bytes=0)
    return stats, eng.current_seq(), [r for r in eng.export() if r["type"] != "header"]


def open_edges(eng: Engine) -> list[dict[str, Any]]:
    return [r for r in eng.export() if r["type"] == "edge" and r.get("valid_to") is None]


# -- references: resolve and get ---------------------------------------------------------------------


def test_get_by_id_in_any_case_hash_in_any_case_name_and_edge_id(eng: Engine) -> None:
    m = mem(eng, "the deploy key rotates monthly", about=["Ops"])
    ops_entity = eng.items.get(["Ops"])[0]
    assert isinstance(ops_entity, Entity)
    [edge] = eng.items.edges_of([m])[0]
    refs = [m.id, m.id.lower(), m.hash, m.hash.upper(), "Ops", ops_entity.id.lower(), edge.id, edge.id.lower()]
    got = eng.items.get(refs)
    assert [label(g) for g in got] == [m.content] * 4 + ["Ops"] * 2 + ["edge:about"] * 2
    assert [g.id if g is not None else None for g in got] == [m.id] * 4 + [ops_entity.id] * 2 + [edge.id] * 2
    assert isinstance(got[6], Edge)
    assert (got[6].src, got[6].dst, got[6].type) == (m.id, ops_entity.id, ABOUT)


def test_get_unknown_references_are_none(eng: Engine) -> None:
    mem(eng, "present")
    ent(eng, "Present")
    thing, _ = eng.nodes.submit([CreateNode("Thing", {"code": 1})])
    assert (
        eng.items.get([MISSING, MISSING.lower(), sha256("absent"), "Absent", "present", "", thing[0] or ""])
        == [None] * 7
    )


def test_get_as_of_shows_items_as_they_were(eng: Engine, clock: Clock) -> None:
    clock.now = START_MS + 100
    m = mem(eng, "first text", tags=["a"], importance=2, summary="short", props={"p": 1})
    ada = ent(eng, "Ada", "", ["x"])
    edge = rel(eng, m.id, "Ada", "about")
    clock.now = START_MS + 300
    mem(eng, "first text", tags=["b"])
    eng.items.revise(m.id, Patch(content="second text", importance=7, summary="", props={"p": None, "q": 2}))
    eng.items.revise(
        "Ada", Patch(name="Ada L", entity_type="person", add_observations=("y",), remove_observations=("x",))
    )
    eng.items.relate(close=[(edge.id, None)])
    m_then, ada_then, edge_then = eng.items.get([m.id, "Ada L", edge.id], as_of=START_MS + 200)
    assert isinstance(m_then, Memory) and isinstance(ada_then, Entity) and isinstance(edge_then, Edge)
    assert (m_then.id, m_then.content, m_then.hash, m_then.tags) == (m.id, "first text", m.hash, ("a",))
    assert (m_then.importance, m_then.summary, dict(m_then.props)) == (2, "short", {"p": 1})
    assert (ada_then.id, ada_then.name, ada_then.entity_type, ada_then.observations) == (ada.id, "Ada", "", ("x",))
    assert edge_then.id == edge.id
    assert eng.items.get([m.id, "Ada L", edge.id], as_of=START_MS + 50) == [None] * 3
    m_now, ada_now = eng.items.get([m.id, "Ada L"])
    assert isinstance(m_now, Memory) and isinstance(ada_now, Entity)
    assert (m_now.content, m_now.tags, m_now.summary, dict(m_now.props)) == ("second text", ("a", "b"), None, {"q": 2})
    assert (ada_now.name, ada_now.entity_type, ada_now.observations) == ("Ada L", "person", ("y",))
    between = eng.items.get([m.id], as_of=START_MS + 300)[0]
    assert isinstance(between, Memory) and between.content == "second text"


def test_names_that_look_like_ids_or_hashes_still_resolve_as_names(eng: Engine) -> None:
    hash_like = "f" * 64
    ulid_like = MISSING
    ent(eng, hash_like)
    ent(eng, ulid_like)
    got = eng.items.get([hash_like, hash_like.upper(), ulid_like])
    assert [label(g) for g in got] == [hash_like, None, ulid_like]  # names are matched exactly


def test_a_name_means_the_oldest_entity_of_that_name_in_the_read_set(eng: Engine) -> None:
    shared = ent(eng, "Twin", "first")
    private = ent(eng, "Twin", "second", scope=SCOPE_A, scopes=[SCOPE_A])
    assert private.pk != shared.pk
    both = eng.items.get(["Twin"], scopes=ALL)[0]
    assert isinstance(both, Entity) and both.id == shared.id
    only_a = eng.items.get(["Twin"], scopes=[SCOPE_A])[0]
    assert isinstance(only_a, Entity) and only_a.id == private.id


def test_items_outside_the_read_set_are_never_returned(eng: Engine, db_path: Path) -> None:
    m = mem(eng, "private plan", about=["Secret"], scope=SCOPE_A, scopes=[SCOPE_A])
    secret = eng.items.get(["Secret"], scopes=[SCOPE_A])[0]
    assert isinstance(secret, Entity) and secret.scope == SCOPE_A
    [edge], _ = eng.items.edges_of([m], scopes=[SCOPE_A])
    refs = [m.id, m.hash, "Secret", secret.id, edge.id]
    assert eng.items.get(refs) == [None] * 5  # the engine reads `shared` by default
    assert eng.items.get(refs, scopes=[SCOPE_B]) == [None] * 5
    assert [label(g) for g in eng.items.get(refs, scopes=[SCOPE_A])] == [m.content, m.content] + ["Secret"] * 2 + [
        "edge:about"
    ]
    # Another engine on the same database, reading other scopes, sees nothing either.
    with open_engine_at(db_path, read_scopes=["shared", SCOPE_B]) as other:
        assert other.items.get(refs) == [None] * 5
        assert other.items.search().found == ()
    with open_engine_at(db_path, read_scopes=[SCOPE_A]) as owner:
        assert [label(g) for g in owner.items.get(refs)][:3] == [m.content, m.content, "Secret"]


def test_a_reference_with_a_lone_surrogate_is_invalid(eng: Engine) -> None:
    with pytest.raises(InvalidArgument, match="reference"):
        eng.items.get(["\ud800"])


# -- remember --------------------------------------------------------------------------------------------


def test_remember_memories_and_entities_in_one_call(eng: Engine, clock: Clock) -> None:
    seq = eng.current_seq()
    notes = [
        Note(NewMemory("Ada prefers tea", ("Drinks", "ada"), 4, "fact", "tea", {"source": "chat"})),
        Note(NewMemory("Bob prefers coffee")),
    ]
    memories, entities = eng.items.remember(notes, [NewEntity("Ada", "person", ("likes tea",)), NewEntity("Bob")])
    assert [r.status for r in memories + entities] == ["created"] * 4
    first = memories[0].item
    assert isinstance(first, Memory)
    assert (first.content, first.tags, first.importance, first.memory_type, first.summary) == (
        "Ada prefers tea",
        ("ada", "drinks"),
        4,
        "fact",
        "tea",
    )
    assert dict(first.props) == {"source": "chat"}
    assert first.hash == sha256("Ada prefers tea")
    assert first.created_at == clock.now and first.scope == "shared"
    ada = entities[0].item
    assert isinstance(ada, Entity)
    assert (ada.name, ada.entity_type, ada.observations) == ("Ada", "person", ("likes tea",))
    assert all(r.added == () and r.linked == () and r.created_entities == () for r in memories + entities)
    stats = eng.stats()
    assert (stats.memories, stats.entities, stats.observations, stats.edges) == (2, 2, 1, 0)
    log = eng.changes(seq + 1)
    assert [c.op for c in log] == [ops.CREATE_NODE] * 4
    assert {c.target for c in log} == {item_of(r).id for r in memories + entities}
    # What was remembered is what is read back.
    assert eng.items.get([first.hash])[0] == first


def test_remember_again_reports_existing_and_updated(eng: Engine, clock: Clock) -> None:
    mem(eng, "release on fridays", tags=["process"])
    ent(eng, "Ada", "", ["likes tea"])
    ent(eng, "Bob", "person")
    clock.now += 100
    memories, entities = eng.items.remember(
        [
            Note(NewMemory("release on fridays", ("process",))),
            Note(NewMemory("release on fridays", ("Process", "risky", "ops"))),
        ],
        [
            NewEntity("Ada", "", ("likes tea",)),
            NewEntity("Ada", "", ("likes tea", "plays chess")),
            NewEntity("Bob", "robot"),
            NewEntity("Ada", "person"),
        ],
    )
    assert [(r.status, r.added) for r in memories] == [("existing", ()), ("updated", ("ops", "risky"))]
    assert item_of(memories[1]).pk == item_of(memories[0]).pk
    merged = eng.items.get([sha256("release on fridays")])[0]
    assert isinstance(merged, Memory) and merged.tags == ("ops", "process", "risky")
    assert merged.updated_at == clock.now
    assert [(r.status, r.added) for r in entities] == [
        ("existing", ()),
        ("updated", ("plays chess",)),
        ("existing", ()),  # Bob already had a type: it is kept
        ("updated", ()),  # Ada had none: it is set
    ]
    ada = eng.items.get(["Ada"])[0]
    assert isinstance(ada, Entity)
    assert (ada.entity_type, ada.observations) == ("person", ("likes tea", "plays chess"))
    assert ada.updated_at == clock.now
    bob = eng.items.get(["Bob"])[0]
    assert isinstance(bob, Entity) and bob.entity_type == "person"
    assert (eng.stats().memories, eng.stats().entities) == (1, 2)


def test_remembered_item_of_a_merged_memory_is_current(eng: Engine, clock: Clock) -> None:
    mem(eng, "tagged twice", tags=["a"])
    clock.now += 1000
    [again], _ = eng.items.remember([Note(NewMemory("tagged twice", ("b",)))])
    assert again.status == "updated"
    assert again.item == eng.items.get([item_of(again).id])[0]


def test_about_finds_or_creates_entities_and_links_once(eng: Engine) -> None:
    ada = ent(eng, "Ada", "person")
    [done], _ = eng.items.remember([Note(NewMemory("Ada met Bob"), ("Ada", "Bob", "Ada"))])
    assert (done.status, done.linked, done.created_entities) == ("created", ("Ada", "Bob"), ("Bob",))
    bob = eng.items.get(["Bob"])[0]
    assert isinstance(bob, Entity) and bob.entity_type == "" and bob.observations == ()
    memory = item_of(done)
    edges, _ = eng.items.edges_of([memory])
    assert sorted((e.type, e.src, e.dst) for e in edges) == sorted(
        [(ABOUT, memory.id, ada.id), (ABOUT, memory.id, bob.id)]
    )
    before = state(eng)
    [again], _ = eng.items.remember([Note(NewMemory("Ada met Bob"), ("Bob", "Ada"))])
    assert (again.status, again.linked, again.created_entities) == ("existing", ("Bob", "Ada"), ())
    assert state(eng) == before  # nothing new: no second edge, no change-log entry


def test_about_entities_named_in_the_same_call_are_created_once(eng: Engine) -> None:
    memories, entities = eng.items.remember(
        [Note(NewMemory("one"), ("Ada", "Cy")), Note(NewMemory("two"), ("Cy",))],
        [NewEntity("Ada", "person", ("curious",))],
    )
    assert [r.created_entities for r in memories] == [("Cy",), ()]
    assert [r.linked for r in memories] == [("Ada", "Cy"), ("Cy",)]
    assert entities[0].status == "created"
    assert eng.stats().entities == 2
    assert eng.stats().edges == 3
    ada = eng.items.get(["Ada"])[0]
    assert isinstance(ada, Entity) and ada.observations == ("curious",)


def test_supersedes_by_id_or_hash_creates_a_supersedes_edge(eng: Engine) -> None:
    v1 = mem(eng, "the office is on floor 2")
    [v2], _ = eng.items.remember([Note(NewMemory("the office is on floor 3"), supersedes=v1.id.lower())])
    assert v2.supersedes == v1.id
    assert isinstance(v2.item, Memory)
    [v3], _ = eng.items.remember([Note(NewMemory("the office is on floor 4"), supersedes=v2.item.hash.upper())])
    assert v3.supersedes == v2.item.id
    edges = {(e.src, e.dst) for e in eng.items.edges_of([v2.item])[0] if e.type == SUPERSEDES}
    assert edges == {(v2.item.id, v1.id), (item_of(v3).id, v2.item.id)}
    # Saying it again adds nothing.
    before = state(eng)
    [again], _ = eng.items.remember([Note(NewMemory("the office is on floor 3"), supersedes=v1.hash)])
    assert (again.status, again.supersedes) == ("existing", v1.id)
    assert state(eng) == before


@pytest.mark.parametrize(
    ("supersedes", "error", "message"),
    [
        ("Ada", InvalidArgument, r"memories\[1\]: supersedes must name a memory; 'Ada' is an entity"),
        (sha256("brand new"), InvalidArgument, r"memories\[1\]: a memory cannot supersede itself"),
        (sha256("never stored"), NotFound, r"memories\[1\]: nothing found for"),
        (MISSING, NotFound, r"memories\[1\]: nothing found"),
        ("relation", InvalidArgument, r"memories\[1\]: .* is a relation"),
    ],
)
def test_refused_supersedes_writes_nothing(eng: Engine, supersedes: str, error: type[Exception], message: str) -> None:
    old = mem(eng, "old", about=["Ada"])
    if supersedes == "relation":
        supersedes = eng.items.edges_of([old])[0][0].id
    before = state(eng)
    with pytest.raises(error, match=message) as caught:
        eng.items.remember(
            [Note(NewMemory("fine"), ("Newcomer",)), Note(NewMemory("brand new"), supersedes=supersedes)],
            [NewEntity("Other")],
        )
    assert "(nothing was written)" in str(caught.value)
    assert state(eng) == before
    assert eng.items.get(["Newcomer", "Other", sha256("fine")]) == [None] * 3


INVALID_BATCHES: list[tuple[list[Note], list[NewEntity], list[str]]] = [
    ([Note(NewMemory("fine")), Note(NewMemory(""))], [], [r"memories\[1\]: content must not be empty"]),
    ([Note(NewMemory("too important", importance=11))], [NewEntity("E")], [r"memories\[0\]: importance"]),
    ([Note(NewMemory("negative", importance=-1))], [], [r"memories\[0\]: importance"]),
    (
        [Note(NewMemory("a")), Note(NewMemory("b")), Note(NewMemory("c"), ("Ada", ""))],
        [],
        [r"memories\[2\]: an `about` name must not be empty"],
    ),
    ([Note(NewMemory("d", ("has space",)))], [], [r"memories\[0\]: Tag must not contain whitespace"]),
    ([Note(NewMemory("e", memory_type=""))], [], [r"memories\[0\]: memory_type must not be empty"]),
    ([Note(NewMemory("f"))], [NewEntity("E"), NewEntity("")], [r"entities\[1\]: an entity's name must not be empty"]),
    ([], [NewEntity("E", "t", ("ok", ""))], [r"entities\[0\]: an observation must not be empty"]),
    (
        [Note(NewMemory("")), Note(NewMemory("g"))],
        [NewEntity("F"), NewEntity("")],
        [r"memories\[0\]: content", r"entities\[1\]: an entity's name"],
    ),
]


@pytest.mark.parametrize(("notes", "entities", "messages"), INVALID_BATCHES)
def test_an_invalid_item_refuses_the_whole_call(
    eng: Engine, notes: list[Note], entities: list[NewEntity], messages: list[str]
) -> None:
    mem(eng, "already here")
    before = state(eng)
    with pytest.raises(InvalidArgument) as caught:
        eng.items.remember(notes, entities)
    for message in messages:
        assert re.search(message, str(caught.value)), str(caught.value)
    assert str(caught.value).endswith("(nothing was written)")
    assert state(eng) == before
    assert eng.stats().memories == 1


def test_remember_item_by_item_keeps_the_good_ones(eng: Engine) -> None:
    memories, entities = eng.items.remember(
        [
            Note(NewMemory("ok one"), ("X",)),
            Note(NewMemory("refused late"), ("Y",), supersedes="Nobody"),  # found wrong while writing
            Note(NewMemory("")),  # found wrong before writing
            Note(NewMemory("ok two"), supersedes=sha256("ok one")),
        ],
        [NewEntity(""), NewEntity("P", "t")],
        atomic=False,
    )
    assert [r.status for r in memories] == ["created", "error", "error", "created"]
    assert [r.status for r in entities] == ["error", "created"]
    assert memories[1].item is None and memories[1].error is not None
    assert "nothing found for 'Nobody'" in memories[1].error
    assert memories[2].error == "content must not be empty"
    assert entities[0].error == "an entity's name must not be empty"
    assert memories[0].error is None and memories[3].supersedes == item_of(memories[0]).id
    # The refused memory's own writes (its `about` entity) were undone with it, and only them.
    refs = ["X", "Y", sha256("refused late"), sha256("ok two"), "P"]
    assert [label(g) for g in eng.items.get(refs)] == ["X", None, None, "ok two", "P"]
    stats = eng.stats()
    assert (stats.memories, stats.entities, stats.edges) == (2, 2, 2)


def test_remember_names_of_one_call_mean_what_the_call_wrote_before_them(eng: Engine) -> None:
    """The call's names are read once and kept current as it writes: an entity it makes
    (listed, or by an earlier memory's `about`) is the one later memories link to, and one
    a refused memory made is gone for the next memory, which makes its own."""
    memories, entities = eng.items.remember(
        [
            Note(NewMemory("first about New"), ("New", "Later")),
            Note(NewMemory("refused, about Gone"), ("Gone",), supersedes="Nobody"),
            Note(NewMemory("second about New"), ("New", "Gone", "Later", "listed")),
        ],
        [NewEntity("Listed", "t"), NewEntity("Listed", "u")],
        atomic=False,
    )
    assert [r.status for r in memories] == ["created", "error", "created"]
    assert [r.status for r in entities] == ["created", "existing"]
    assert memories[0].created_entities == ("New", "Later")
    # "listed" is Listed by case; "Gone" was taken back with the refused memory.
    assert memories[2].created_entities == ("Gone",)
    assert memories[2].linked == ("New", "Gone", "Later", "Listed")
    stats = eng.stats()
    assert (stats.memories, stats.entities, stats.edges) == (2, 4, 6)
    second = item_of(memories[2])
    ends = {e.dst for e in eng.items.relations([ABOUT]).edges if e.src == second.id}
    assert ends == {g.id for g in eng.items.get(["New", "Gone", "Later", "Listed"]) if g is not None}


def test_entity_properties_are_given_and_merged(eng: Engine) -> None:
    _, [made] = eng.items.remember(entities=[EntityNote(NewEntity("Server", "host"), {"rack": 4, "up": True})])
    assert made.status == "created"
    assert dict(item_of(made).props) == {"rack": 4, "up": True}
    before = state(eng)
    _, [same] = eng.items.remember(entities=[EntityNote(NewEntity("Server"), {"rack": 4})])
    assert same.status == "existing"
    assert state(eng) == before
    _, [changed] = eng.items.remember(entities=[EntityNote(NewEntity("Server"), {"rack": 5, "os": "linux"})])
    assert changed.status == "updated"
    assert dict(item_of(changed).props) == {"rack": 5, "up": True, "os": "linux"}
    assert labels(eng.items.search(where=ItemFilter(props=(("up", True), ("rack", 5))))) == ["Server"]
    before = state(eng)
    with pytest.raises(InvalidArgument, match=r"entities\[1\]: property 'bad'"):
        eng.items.remember(entities=[NewEntity("Fine"), EntityNote(NewEntity("Server"), {"bad": float("inf")})])
    assert state(eng) == before


def test_remember_into_another_scope(eng: Engine) -> None:
    memories, entities = eng.items.remember(
        [Note(NewMemory("private note"), ("Private Thing",))], [NewEntity("Private Person")], scope=SCOPE_A
    )
    assert {item_of(r).scope for r in memories + entities} == {SCOPE_A}
    thing = eng.items.get(["Private Thing"], scopes=[SCOPE_A])[0]
    assert isinstance(thing, Entity) and thing.scope == SCOPE_A
    assert eng.items.get([item_of(memories[0]).id, "Private Thing", "Private Person"]) == [None] * 3
    # A shared entity is found, not duplicated, by a writer that reads `shared`.
    ent(eng, "Common")
    [note], _ = eng.items.remember([Note(NewMemory("about common"), ("Common",))], scope=SCOPE_A, scopes=ALL)
    assert note.created_entities == ()
    assert eng.stats(scopes=ALL).entities == 3


# -- search and listing ---------------------------------------------------------------------------------


def test_search_ranks_by_words(eng: Engine) -> None:
    both = mem(eng, "quantum harbour logistics notes")
    one = mem(eng, "the harbour closes at noon")
    mem(eng, "mountain weather")
    ent(eng, "Harbour Master", "role", ["runs the harbour"])
    ent(eng, "Baker", "role")
    page = eng.items.search("quantum harbour", kinds=("memory",))
    assert [f.item.id for f in page.found] == [both.id, one.id]
    scores = [f.score for f in page.found if f.score is not None]
    assert len(scores) == 2
    assert scores == sorted(scores, reverse=True)
    assert labels(eng.items.search("harbour", kinds=("entity",))) == ["Harbour Master"]
    mixed = eng.items.search("harbour")
    assert set(labels(mixed)) == {both.content, one.content, "Harbour Master"}
    assert not mixed.more
    assert eng.items.search("nonexistentword").found == ()


def test_listing_without_a_query_is_newest_first_across_kinds(eng: Engine, clock: Clock) -> None:
    order = []
    for i in range(3):
        clock.now += 10
        order.append(mem(eng, f"memory {i}").id)
        clock.now += 10
        order.append(ent(eng, f"Entity {i}").id)
    page = eng.items.search(limit=20)
    assert [f.item.id for f in page.found] == order[::-1]
    assert all(f.score is None for f in page.found)
    assert not page.more
    # Same instant: the later write first.
    a, b = mem(eng, "same time a"), ent(eng, "Same Time B")
    assert [f.item.id for f in eng.items.search(limit=2).found] == [b.id, a.id]


def test_filter_by_types_matches_memory_and_entity_types(eng: Engine) -> None:
    mem(eng, "a fact", memory_type="fact")
    mem(eng, "a plan", memory_type="plan")
    ent(eng, "Fact Entity", "fact")
    ent(eng, "Person", "person")
    assert set(labels(eng.items.search(where=ItemFilter(types=("fact",))))) == {"a fact", "Fact Entity"}
    assert set(labels(eng.items.search(where=ItemFilter(types=("plan", "person"))))) == {"a plan", "Person"}
    assert set(labels(eng.items.search(where=ItemFilter(types=("Fact",))))) == {"a fact", "Fact Entity"}  # any case
    assert labels(eng.items.search("fact", where=ItemFilter(types=("fact",)), kinds=("memory",))) == ["a fact"]


def test_filter_by_creation_time(eng: Engine, clock: Clock) -> None:
    for i, at in enumerate((100, 200, 300)):
        clock.now = START_MS + at
        mem(eng, f"memory at {at}")
        ent(eng, f"Entity{i}")
    window = ItemFilter(created_from=START_MS + 200, created_to=START_MS + 300)  # from inclusive, to exclusive
    assert set(labels(eng.items.search(where=window))) == {"memory at 200", "Entity1"}
    assert set(labels(eng.items.search(where=ItemFilter(created_from=START_MS + 201)))) == {"memory at 300", "Entity2"}
    assert set(labels(eng.items.search(where=ItemFilter(created_to=START_MS + 200)))) == {"memory at 100", "Entity0"}
    assert labels(eng.items.search("memory", where=window, kinds=("memory",))) == ["memory at 200"]


def test_filter_by_props_tells_booleans_from_numbers(eng: Engine) -> None:
    mem(eng, "flag true", props={"flag": True})
    mem(eng, "flag one", props={"flag": 1})
    mem(eng, "flag one point oh", props={"flag": 1.0})
    mem(eng, "flag text", props={"flag": "1", "my key": "v"})
    mem(eng, "no flag")
    e = ent(eng, "Flagged")
    eng.items.revise(e.id, Patch(props={"flag": True}))
    ent(eng, "Unflagged")

    def match(*pairs: tuple[str, Any]) -> set[str | None]:
        return set(labels(eng.items.search(where=ItemFilter(props=pairs), limit=20)))

    assert match(("flag", True)) == {"flag true", "Flagged"}
    assert match(("flag", 1)) == {"flag one", "flag one point oh"}  # 1 is 1.0, true is not 1
    assert match(("flag", 1.0)) == {"flag one", "flag one point oh"}
    assert match(("flag", "1")) == {"flag text"}
    assert match(("flag", False)) == set()
    assert match(("flag", "1"), ("my key", "v")) == {"flag text"}
    assert match(("flag", True), ("my key", "v")) == set()


def test_filter_by_tags_is_all_of_and_leaves_out_entities(eng: Engine) -> None:
    mem(eng, "both tags", tags=["a", "b"])
    mem(eng, "tag a", tags=["a"])
    mem(eng, "tag b", tags=["b"])
    ent(eng, "Entity")
    assert labels(eng.items.search(where=ItemFilter(tags=("a", "b")))) == ["both tags"]
    assert set(labels(eng.items.search(where=ItemFilter(tags=("a",))))) == {"both tags", "tag a"}
    assert labels(eng.items.search("both", where=ItemFilter(tags=("b", "a")))) == ["both tags"]


def test_a_query_word_that_is_a_tag_finds_the_tagged_memories_of_the_read_scopes(eng: Engine) -> None:
    mem(eng, "Deploy with the blue button", tags=["runbook"], memory_type="howto")
    mem(eng, "Restart the queue first", tags=["runbook"])
    mem(eng, "Another team's steps", tags=["runbook"], scope=SCOPE_A)
    mem(eng, "Untagged words about nothing")
    found = labels(eng.items.search("runbook", kinds=("memory",)))
    assert sorted(found, key=str) == ["Deploy with the blue button", "Restart the queue first"]
    typed = eng.items.search("runbook", kinds=("memory",), where=ItemFilter(types=("howto",)))
    assert labels(typed) == ["Deploy with the blue button"]
    both = eng.items.search("runbook", kinds=("memory",), scopes=["shared", SCOPE_A])
    assert len(labels(both)) == 3


def test_filter_by_min_importance_leaves_out_entities(eng: Engine) -> None:
    for importance in (3, 5, 8):
        mem(eng, f"importance {importance}", importance=importance)
    ent(eng, "Entity")
    assert set(labels(eng.items.search(where=ItemFilter(min_importance=5)))) == {"importance 5", "importance 8"}
    assert len(eng.items.search(where=ItemFilter(min_importance=0)).found) == 3
    assert eng.items.search(where=ItemFilter(min_importance=9)).found == ()


def test_about_names_filter_memories_linked_either_way(eng: Engine) -> None:
    mem(eng, "about ada", about=["Ada"])
    mem(eng, "about bob", about=["Bob"])
    mem(eng, "about nobody")
    mentioned = mem(eng, "mentioned by ada")
    rel(eng, "Ada", mentioned.id, "mentions")
    closed = mem(eng, "once about ada")
    edge = rel(eng, closed.hash, "Ada", "about")
    eng.items.relate(close=[(edge.id, None)])
    assert set(labels(eng.items.search(about=["Ada"]))) == {"about ada", "mentioned by ada"}
    assert set(labels(eng.items.search(about=["Ada", "Bob"]))) == {"about ada", "about bob", "mentioned by ada"}
    assert labels(eng.items.search("bob", about=["Ada", "Bob"])) == ["about bob"]
    with pytest.raises(NotFound, match="no entity named 'Nobody'"):
        eng.items.search(about=["Ada", "Nobody"])


def test_current_only_hides_superseded_memories_and_listing_reports_them(eng: Engine) -> None:
    old = mem(eng, "meeting at 10")
    new = mem(eng, "meeting at 11", supersedes=old.id)
    meeting = ent(eng, "Meeting")
    listing = {f.item.id: f.superseded_by for f in eng.items.search().found}
    assert listing == {old.id: (new.id,), new.id: (), meeting.id: ()}
    current = eng.items.search(where=ItemFilter(current_only=True))
    assert set(labels(current)) == {"meeting at 11", "Meeting"}
    assert labels(eng.items.search("meeting", where=ItemFilter(current_only=True), kinds=("memory",))) == [
        "meeting at 11"
    ]
    # Once the supersedes relation is closed, the old memory is current again.
    eng.items.relate(close=[((new.id, SUPERSEDES, old.hash), None)])
    assert set(labels(eng.items.search(where=ItemFilter(current_only=True), kinds=("memory",)))) == {
        "meeting at 10",
        "meeting at 11",
    }
    assert all(f.superseded_by == () for f in eng.items.search().found)


def test_superseded_by_never_names_a_memory_outside_the_read_set(eng: Engine) -> None:
    old = mem(eng, "shared fact")
    mem(eng, "private correction", supersedes=old.id, scope=SCOPE_A, scopes=ALL)
    [found] = eng.items.search().found
    assert found.item.id == old.id
    assert found.superseded_by == ()


def test_current_only_ignores_supersedes_edges_the_reader_cannot_see(eng: Engine) -> None:
    old = mem(eng, "shared fact")
    mem(eng, "private correction", supersedes=old.id, scope=SCOPE_A, scopes=ALL)
    assert labels(eng.items.search(where=ItemFilter(current_only=True))) == ["shared fact"]


def test_about_filter_ignores_edges_the_reader_cannot_see(eng: Engine) -> None:
    m = mem(eng, "shared note")
    ent(eng, "Ada")
    rel(eng, m.id, "Ada", "about", scope=SCOPE_A, scopes=ALL)  # an edge only SCOPE_A reads
    assert eng.items.explore(["Ada"]).edges == ()  # the shared reader does not see it...
    assert eng.items.search(about=["Ada"]).found == ()  # ...so it must not filter by it


def test_kinds_restrict_what_is_returned(eng: Engine) -> None:
    mem(eng, "river memory")
    ent(eng, "River Entity")
    assert labels(eng.items.search(kinds=("memory",))) == ["river memory"]
    assert labels(eng.items.search(kinds=("entity",))) == ["River Entity"]
    assert labels(eng.items.search("river", kinds=("memory",))) == ["river memory"]
    assert labels(eng.items.search("river", kinds=("entity",))) == ["River Entity"]
    assert eng.items.search(kinds=()).found == ()
    assert eng.items.search(kinds=("entity",), where=ItemFilter(tags=("x",))).found == ()


def test_paging_gives_disjoint_pages_and_a_right_more_flag(eng: Engine, clock: Clock) -> None:
    for i in range(12):
        clock.now += 1
        if i % 3:
            mem(eng, f"item {i}")
        else:
            ent(eng, f"item {i}")
    full = eng.items.search(limit=100)
    assert len(full.found) == 12 and not full.more
    pages = [eng.items.search(offset=o, limit=5) for o in (0, 5, 10)]
    assert [len(p.found) for p in pages] == [5, 5, 2]
    assert [p.more for p in pages] == [True, True, False]
    seen = [f.item.id for p in pages for f in p.found]
    assert seen == [f.item.id for f in full.found]
    assert len(set(seen)) == 12
    exact = eng.items.search(offset=6, limit=6)
    assert len(exact.found) == 6 and not exact.more
    assert eng.items.search(offset=5, limit=6).more
    assert eng.items.search(offset=12, limit=5) == ItemPage((), False)
    # Paging a ranked search.
    ranked = eng.items.search("item", limit=100)
    assert len(ranked.found) == 12
    paged = [f.item.id for o in range(0, 12, 4) for f in eng.items.search("item", offset=o, limit=4).found]
    assert paged == [f.item.id for f in ranked.found]


def test_paging_a_ranked_search_yields_each_match_once(eng: Engine) -> None:
    # Equal text rank; importance decides the order.
    eng.items.remember([Note(NewMemory(f"alpha note{i:03d}", importance=(i * 7) % 11)) for i in range(60)])
    full = [f.item.id for f in eng.items.search("alpha", kinds=("memory",), limit=60).found]
    assert len(full) == 60
    paged = [f.item.id for offset in range(0, 60, 5) for f in eng.items.search("alpha", offset=offset, limit=5).found]
    assert len(set(paged)) == 60
    assert paged == full


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"limit": 0}, "limit"),
        ({"offset": -1}, "offset"),
        ({"expand_hops": 5}, "expand"),
        ({"expand_hops": -1}, "expand"),
        ({"where": ItemFilter(props=(('say "hi"', 1),))}, "double quote"),
        ({"query": "\ud800"}, "query"),
    ],
)
def test_search_refuses_bad_arguments(eng: Engine, kwargs: dict[str, Any], message: str) -> None:
    mem(eng, "something")
    with pytest.raises(InvalidArgument, match=message):
        eng.items.search(**kwargs)


def test_expand_hops_returns_related_items_and_edges(eng: Engine) -> None:
    m = mem(eng, "zanzibar trip notes", about=["Ada"])
    ent(eng, "Bob")
    ent(eng, "Carol")
    knows = rel(eng, "Ada", "Bob", "knows")
    further = rel(eng, "Bob", "Carol", "knows")
    [about_edge], _ = eng.items.edges_of([m])
    plain = eng.items.search("zanzibar", kinds=("memory",))
    assert (plain.related, plain.edges) == ((), ())
    one = eng.items.search("zanzibar", kinds=("memory",), expand_hops=1)
    assert labels(one) == ["zanzibar trip notes"]
    assert names(one.related) == {"Ada"}
    assert {e.id for e in one.edges} == {about_edge.id}
    two = eng.items.search("zanzibar", kinds=("memory",), expand_hops=2)
    assert names(two.related) == {"Ada", "Bob"}
    assert {e.id for e in two.edges} == {about_edge.id, knows.id}
    three = eng.items.search("zanzibar", kinds=("memory",), expand_hops=3)
    assert names(three.related) == {"Ada", "Bob", "Carol"}
    assert {e.id for e in three.edges} == {about_edge.id, knows.id, further.id}
    # Items on the page are not repeated among the related ones.
    both = eng.items.search(kinds=("entity",), where=ItemFilter(), expand_hops=1, limit=10)
    assert not names(both.related) & set(labels(both))


def test_vector_search(eng: Engine) -> None:
    east = mem(eng, "points east")
    north = mem(eng, "points north")
    west = mem(eng, "points west", importance=5)
    almost = ent(eng, "Almost East")
    unembedded = mem(eng, "no vector")
    eng.nodes.submit(
        [
            SetEmbedding(east.id, "m", (1.0, 0.0, 0.0)),
            SetEmbedding(north.id, "m", (0.0, 1.0, 0.0)),
            SetEmbedding(west.id, "m", (-1.0, 0.0, 0.0)),
            SetEmbedding(almost.id, "m", (0.9, 0.1, 0.0)),
        ]
    )
    page = eng.items.search(vector=("m", [2.0, 0.0, 0.0]))
    assert [f.item.id for f in page.found] == [east.id, almost.id, north.id, west.id]
    assert page.found[0].score == pytest.approx(1.0)
    assert page.found[3].score == pytest.approx(-1.0)
    assert unembedded.id not in {f.item.id for f in page.found}
    assert labels(eng.items.search(vector=("m", [1.0, 0.0, 0.0]), kinds=("entity",))) == ["Almost East"]
    filtered = eng.items.search(vector=("m", [1.0, 0.0, 0.0]), where=ItemFilter(min_importance=5))
    assert labels(filtered) == ["points west"]
    assert eng.items.search(vector=("other model", [1.0, 0.0, 0.0])).found == ()
    # Words and a vector together: both rankings contribute.
    fused = eng.items.search("north", vector=("m", [1.0, 0.0, 0.0]), kinds=("memory",))
    assert {east.id, north.id} <= {f.item.id for f in fused.found}
    with pytest.raises(InvalidArgument, match="dimensions"):
        eng.items.search(vector=("m", [1.0, 0.0]))


def test_fuzzy_entity_search_finds_a_typo(eng: Engine) -> None:
    ent(eng, "Kubernetes", "platform", ["runs the containers"])
    ent(eng, "Postgres", "database")
    assert eng.items.search("Kubernetis", kinds=("entity",)).found == ()
    assert labels(eng.items.search("Kubernetis", kinds=("entity",), fuzzy=True)) == ["Kubernetes"]
    assert labels(eng.items.search("contaners", fuzzy=True)) == ["Kubernetes"]


def test_fuzzy_search_finds_an_entity_by_a_typo_of_its_new_name(eng: Engine) -> None:
    ent(eng, "Alice", "person")
    assert labels(eng.items.search("Alise", kinds=("entity",), fuzzy=True)) == ["Alice"]  # builds the vocabulary
    eng.items.revise("Alice", Patch(name="Zebediah"))
    assert labels(eng.items.search("Zebediah", kinds=("entity",))) == ["Zebediah"]
    assert labels(eng.items.search("Zebedaih", kinds=("entity",), fuzzy=True)) == ["Zebediah"]


def test_search_by_observation_pattern(eng: Engine) -> None:
    ent(eng, "Roof", "task", ["likes tea", "TODO: fix the gutter"])
    ent(eng, "Cellar", "task", ["drinks coffee", "deprecated since 2020"])
    ent(eng, "Attic", "task")
    mem(eng, "tea memory")
    assert labels(eng.items.search(pattern="tea")) == ["Roof"]  # memories are left out
    assert labels(eng.items.search(pattern="techdebt")) == ["Roof"]  # a preset
    assert labels(eng.items.search(pattern="^DRINKS")) == ["Cellar"]  # case-insensitive
    assert set(labels(eng.items.search(pattern="e"))) == {"Roof", "Cellar"}
    assert labels(eng.items.search(pattern="deprecated", where=ItemFilter(types=("task",)))) == ["Cellar"]
    assert eng.items.search(pattern="nowhere").found == ()
    with pytest.raises(InvalidArgument, match="entities"):
        eng.items.search(pattern="tea", kinds=("memory",))
    with pytest.raises(InvalidArgument, match="regular expression"):
        eng.items.search(pattern="(unclosed")


def test_search_never_shows_other_scopes(eng: Engine) -> None:
    mem(eng, "shared river")
    private = mem(eng, "private river", about=["Private River"], scope=SCOPE_A, scopes=[SCOPE_A])
    eng.nodes.submit([SetEmbedding(private.id, "m", (1.0,))])
    assert labels(eng.items.search("river")) == ["shared river"]
    assert labels(eng.items.search()) == ["shared river"]
    assert eng.items.search(vector=("m", [1.0])).found == ()
    assert set(labels(eng.items.search("river", scopes=ALL))) == {"shared river", "private river", "Private River"}
    with pytest.raises(NotFound):
        eng.items.search(about=["Private River"])


# -- forget -------------------------------------------------------------------------------------------


def test_forget_memories_entities_and_relations(eng: Engine) -> None:
    ada = ent(eng, "Ada")
    m = mem(eng, "forget me", about=["Ada"])
    keep = mem(eng, "keep me", about=["Bob"])
    ent(eng, "Carol")
    rel(eng, "Ada", "Bob", "knows")
    bob_carol = rel(eng, "Bob", "Carol", "knows")
    assert eng.stats().edges == 4
    seq = eng.current_seq()
    out = eng.items.forget([m.hash.upper(), "Ada", bob_carol.id, "Nobody", sha256("never")])
    assert [label(o) for o in out] == ["forget me", "Ada", "edge:knows", None, None]
    stats = eng.stats()
    assert (stats.memories, stats.entities, stats.edges) == (1, 2, 1)  # Ada's edges went with her
    assert eng.items.get([m.id, "Ada", bob_carol.id]) == [None] * 3
    assert [(c.op, c.target) for c in eng.changes(seq + 1)] == [
        (ops.REMOVE_NODE, m.id),
        (ops.REMOVE_NODE, ada.id),
        (ops.REMOVE_EDGE, bob_carol.id),
    ]
    assert eng.items.get([keep.id])[0] is not None


def test_forget_a_relation_by_its_ends(eng: Engine, clock: Clock) -> None:
    ent(eng, "Ada")
    ent(eng, "Bob")
    m = mem(eng, "note", about=["Ada"])
    knows = rel(eng, "Ada", "Bob", "knows")
    old = rel(eng, "Bob", "Ada", "knew")
    clock.now += 10
    eng.items.relate(close=[(old.id, None)])
    out = eng.items.forget(
        [
            ("Bob", "knows", "Ada"),  # relations have a direction
            ("Ada", "likes", "Bob"),
            ("Ada", "knows", "Nobody"),
            ("Bob", "knew", "Ada"),  # closed: not an open relation
            ("Ada", "knows", "Bob"),
            ("Ada", "knows", "Bob"),
            (m.hash, "about", "Ada"),
        ]
    )
    assert [label(o) for o in out] == [None, None, None, None, "edge:knows", None, "edge:about"]
    assert out[4] is not None and out[4].id == knows.id
    stats = eng.stats()
    assert (stats.memories, stats.entities, stats.edges) == (1, 2, 1)  # only the closed one is left
    assert eng.items.get([old.id])[0] is not None


def test_forget_twice_in_one_call_forgets_once(eng: Engine) -> None:
    m = mem(eng, "twice")
    seq = eng.current_seq()
    out = eng.items.forget([m.id, m.hash])
    assert [label(o) for o in out] == ["twice", None]
    assert eng.current_seq() == seq + 1


def test_forget_is_one_transaction(eng: Engine) -> None:
    m = mem(eng, "survives", about=["Ada"])
    before = state(eng)
    with pytest.raises(InvalidArgument):
        eng.items.forget([m.id, "Ada", "\ud800"])
    assert state(eng) == before


def test_forget_cannot_reach_other_scopes(eng: Engine) -> None:
    m = mem(eng, "private", about=["Private Entity"], scope=SCOPE_A, scopes=[SCOPE_A])
    [edge], _ = eng.items.edges_of([m], scopes=[SCOPE_A])
    before = state(eng)
    assert eng.items.forget([m.id, m.hash, "Private Entity", edge.id]) == [None] * 4
    assert eng.items.forget([m.id], scopes=[SCOPE_B]) == [None]
    assert state(eng) == before
    assert [label(o) for o in eng.items.forget([edge.id, m.id], scopes=[SCOPE_A])] == ["edge:about", "private"]
    assert eng.stats(scopes=ALL).memories == 0


# -- revise -------------------------------------------------------------------------------------------


def test_revise_memory_fields(eng: Engine, clock: Clock) -> None:
    m = mem(eng, "draft wording", tags=["a", "b"], importance=2, summary="old summary", props={"keep": 1})
    ent(eng, "Ada")
    edge = rel(eng, m.id, "Ada", "about")
    clock.now += 50
    before, after = eng.items.revise(
        m.hash,
        Patch(content="final wording", summary="new summary", importance=9, memory_type="decision", add_tags=("C",)),
    )
    assert before == m
    assert isinstance(after, Memory)
    assert (after.id, after.pk) == (m.id, m.pk)
    assert (after.content, after.summary, after.importance, after.memory_type, after.tags) == (
        "final wording",
        "new summary",
        9,
        "decision",
        ("a", "b", "c"),
    )
    assert after.hash == sha256("final wording")
    assert after.updated_at == clock.now
    assert dict(after.props) == {"keep": 1}
    assert eng.items.get([m.hash, after.hash.upper()]) == [None, after]
    assert labels(eng.items.search("final", kinds=("memory",))) == ["final wording"]
    assert eng.items.search("draft").found == ()
    assert [e.id for e in eng.items.edges_of([after])[0]] == [edge.id]  # relations stay
    _, after = eng.items.revise(m.id, Patch(summary="", remove_tags=("a", "missing"), props={"keep": None, "n": 2}))
    assert isinstance(after, Memory)
    assert (after.summary, after.tags, dict(after.props)) == (None, ("b", "c"), {"n": 2})
    _, after = eng.items.revise(m.id.lower(), Patch(tags=("x", "Y"), add_tags=("z",), remove_tags=("x",)))
    assert isinstance(after, Memory) and after.tags == ("y", "z")


@pytest.mark.parametrize(
    ("patch", "error", "message"),
    [
        (Patch(importance=11), InvalidArgument, "importance"),
        (Patch(memory_type=""), InvalidArgument, "memory_type"),
        (Patch(content="other memory"), Conflict, "already exists"),
        (Patch(content=""), InvalidArgument, "content"),
        (Patch(props={"content": "sneaky"}), InvalidArgument, "field of its own"),
        (Patch(props={"importance": 3}), InvalidArgument, "field of its own"),
        (Patch(importance=5, add_tags=("bad tag",)), InvalidArgument, "whitespace"),
        (Patch(name="Renamed"), InvalidArgument, "is a memory"),
        (Patch(entity_type="person"), InvalidArgument, "is a memory"),
        (Patch(add_observations=("x",)), InvalidArgument, "is a memory"),
        (Patch(remove_observations=("x",)), InvalidArgument, "is a memory"),
    ],
)
def test_refused_memory_revisions_write_nothing(
    eng: Engine, patch: Patch, error: type[Exception], message: str
) -> None:
    m = mem(eng, "the memory", importance=1)
    mem(eng, "other memory")
    before = state(eng)
    with pytest.raises(error, match=message):
        eng.items.revise(m.id, patch)
    assert state(eng) == before


def test_revise_entity_fields(eng: Engine, clock: Clock) -> None:
    ada = ent(eng, "Ada", "", ["likes tea", "plays chess"])
    m = mem(eng, "Ada's note", about=["Ada"])
    clock.now += 50
    before, after = eng.items.revise(
        "Ada",
        Patch(
            name="Ada Lovelace",
            entity_type="mathematician",
            add_observations=("wrote notes", "likes tea"),
            remove_observations=("plays chess",),
            props={"born": 1815},
        ),
    )
    assert before == ada
    assert isinstance(after, Entity)
    assert (after.id, after.name, after.entity_type) == (ada.id, "Ada Lovelace", "mathematician")
    assert after.observations == ("likes tea", "wrote notes")
    assert dict(after.props) == {"born": 1815}
    assert after.updated_at == clock.now
    assert eng.items.get(["Ada", "Ada Lovelace"]) == [None, after]
    assert labels(eng.items.search("Lovelace", kinds=("entity",))) == ["Ada Lovelace"]
    assert labels(eng.items.search(about=["Ada Lovelace"])) == [m.content]
    _, retyped = eng.items.revise(ada.id, Patch(entity_type=""))
    assert isinstance(retyped, Entity) and retyped.entity_type == ""


@pytest.mark.parametrize(
    ("patch", "error", "message"),
    [
        (Patch(name="Bob"), Conflict, "already exists"),
        (Patch(name=""), InvalidArgument, "name"),
        (Patch(name="Fine", remove_observations=("never said",)), NotFound, "no observation 'never said'"),
        (Patch(add_observations=("new",), remove_observations=("likes tea", "nope")), NotFound, "nope"),
        (Patch(add_observations=("",)), InvalidArgument, "observation"),
        (Patch(props={"name": "Sneaky"}), InvalidArgument, "field of its own"),
        (Patch(content="text"), InvalidArgument, "is an entity"),
        (Patch(summary="s"), InvalidArgument, "is an entity"),
        (Patch(importance=3), InvalidArgument, "is an entity"),
        (Patch(memory_type="fact"), InvalidArgument, "is an entity"),
        (Patch(tags=()), InvalidArgument, "is an entity"),
        (Patch(add_tags=("t",)), InvalidArgument, "is an entity"),
    ],
)
def test_refused_entity_revisions_write_nothing(
    eng: Engine, patch: Patch, error: type[Exception], message: str
) -> None:
    ent(eng, "Ada", "person", ["likes tea"])
    ent(eng, "Bob")
    before = state(eng)
    with pytest.raises(error, match=message):
        eng.items.revise("Ada", patch)
    assert state(eng) == before


def test_type_sets_whichever_type_the_item_has(eng: Engine) -> None:
    m = mem(eng, "typed memory")
    ent(eng, "Typed Entity", "old")
    _, after_memory = eng.items.revise(m.id, Patch(type="decision"))
    assert isinstance(after_memory, Memory) and after_memory.memory_type == "decision"
    _, after_entity = eng.items.revise("Typed Entity", Patch(type="new"))
    assert isinstance(after_entity, Entity) and after_entity.entity_type == "new"
    before = state(eng)
    with pytest.raises(InvalidArgument, match="memory_type"):
        eng.items.revise(m.id, Patch(type=""))
    assert state(eng) == before


def test_rename_conflicts_with_a_name_in_any_read_scope(eng: Engine) -> None:
    ent(eng, "Private Bob", scope=SCOPE_A, scopes=[SCOPE_A])
    ent(eng, "Ada")
    ent(eng, "Cy")
    before = state(eng)
    with pytest.raises(Conflict, match="already exists"):
        eng.items.revise("Ada", Patch(name="Private Bob"), scopes=["shared", SCOPE_A])
    assert state(eng) == before
    # Invisible to a `shared` reader: no conflict there.
    _, renamed = eng.items.revise("Ada", Patch(name="Private Bob"))
    assert label(renamed) == "Private Bob"
    with pytest.raises(Conflict):
        eng.items.revise("Cy", Patch(name="Private Bob"))
    # Renaming to its own name changes nothing.
    seq = eng.current_seq()
    eng.items.revise("Cy", Patch(name="Cy"))
    assert eng.current_seq() == seq


def test_revise_references(eng: Engine) -> None:
    m = mem(eng, "m", about=["Ada"])
    [edge], _ = eng.items.edges_of([m])
    with pytest.raises(InvalidArgument, match="is a relation"):
        eng.items.revise(edge.id, Patch(props={"x": 1}))
    with pytest.raises(NotFound):
        eng.items.revise(MISSING, Patch(importance=1))
    with pytest.raises(NotFound):
        eng.items.revise(m.id, Patch(importance=1), scopes=[SCOPE_A])


def test_revise_sets_an_embedding(eng: Engine) -> None:
    m = mem(eng, "embedded memory")
    e = ent(eng, "Embedded Entity")
    mem(eng, "plain")
    eng.items.revise(m.id, Patch(embedding=("m", [1.0, 0.0]), importance=2))
    _, after = eng.items.revise("Embedded Entity", Patch(embedding=("m", (0.0, 1.0))))
    assert after.id == e.id
    assert eng.stats().embeddings == 2
    assert labels(eng.items.search(vector=("m", [0.1, 1.0]))) == ["Embedded Entity", "embedded memory"]
    eng.items.revise(m.id, Patch(embedding=("m", [0.0, 2.0])))
    assert eng.stats().embeddings == 2
    before = state(eng)
    with pytest.raises(InvalidArgument):
        eng.items.revise(m.id, Patch(importance=7, embedding=("m", [1.0, 0.0, 0.0])))  # wrong size: all refused
    assert state(eng) == before


def test_the_change_log_records_revisions(eng: Engine) -> None:
    m = mem(eng, "first", tags=["a"])
    ada = ent(eng, "Ada", "", ["x"])
    seq = eng.current_seq()
    eng.items.revise(m.id, Patch(content="second", importance=3, add_tags=("b",)))
    eng.items.revise("Ada", Patch(name="Ada L", add_observations=("y",), remove_observations=("x",)))
    eng.items.revise(m.id, Patch(embedding=("m", [1.0])))
    log = eng.changes(seq + 1)
    assert [(c.op, c.target) for c in log] == [
        (ops.SET_PROPS, m.id),
        (ops.UPDATE_NODE, m.id),
        (ops.SET_PROPS, ada.id),
        (ops.ADD_OBSERVATIONS, ada.id),
        (ops.REMOVE_OBSERVATIONS, ada.id),
        (ops.SET_EMBEDDING, m.id),
    ]
    assert log[0].data["props"] == {"content": "second", "importance": 3}
    assert log[1].data["set"] == {"tags": ["a", "b"]}
    assert log[2].data["props"] == {"name": "Ada L"}
    assert (log[3].data["contents"], log[4].data["contents"]) == (["y"], ["x"])
    assert [c.op for c in eng.items.history(sha256("second").upper())] == [
        ops.CREATE_NODE,
        ops.SET_PROPS,
        ops.UPDATE_NODE,
        ops.SET_EMBEDDING,
    ]
    # A revision that changes nothing writes nothing.
    seq = eng.current_seq()
    eng.items.revise("Ada L", Patch(add_observations=("y",)))
    eng.items.revise(m.id, Patch(add_tags=("a",)))
    assert eng.current_seq() == seq


# -- relate ----------------------------------------------------------------------------------------------


def test_relate_by_names_ids_and_hashes(eng: Engine, clock: Clock) -> None:
    ada, bob = ent(eng, "Ada"), ent(eng, "Bob")
    m = mem(eng, "a memory")
    n = mem(eng, "another memory")
    added, closed = eng.items.relate(
        [
            ("Ada", "Bob", "knows", {"since": 2020}, None),
            (ada.id.lower(), m.hash.upper(), "wrote", {}, START_MS - 100),
            (m.id, n.hash, "follows", {}, None),
            (n.hash, "Bob", "mentions", {}, None),
        ]
    )
    assert closed == []
    assert [new for _, new in added] == [True] * 4
    assert [(e.src, e.dst, e.type) for e, _ in added] == [
        (ada.id, bob.id, "knows"),
        (ada.id, m.id, "wrote"),
        (m.id, n.id, "follows"),
        (n.id, bob.id, "mentions"),
    ]
    assert dict(added[0][0].props) == {"since": 2020}
    assert [e.valid_from for e, _ in added] == [clock.now, START_MS - 100, clock.now, clock.now]
    assert all(e.valid_to is None and e.scope == "shared" for e, _ in added)
    assert eng.items.get([added[0][0].id]) == [added[0][0]]
    # The same open relation again is returned, not repeated; another type is another relation.
    clock.now += 10
    again, _ = eng.items.relate([("Ada", "Bob", "knows", {"since": 1999}, None), ("Bob", "Ada", "knows", {}, None)])
    assert again[0] == (added[0][0], False)
    assert again[1][1] is True
    assert eng.stats().edges == 5


def test_close_by_id_and_by_triple(eng: Engine, clock: Clock) -> None:
    ent(eng, "Ada")
    bob = ent(eng, "Bob")
    m = mem(eng, "m")
    knows = rel(eng, "Ada", "Bob", "knows")
    wrote = rel(eng, "Ada", m.hash, "wrote")
    clock.now += 100
    seq = eng.current_seq()
    _, closed = eng.items.relate(close=[(knows.id.lower(), None), (("Ada", "wrote", m.id), clock.now + 50)])
    assert [(e.id, e.valid_to) for e in closed] == [(knows.id, clock.now), (wrote.id, clock.now + 50)]
    assert [(c.op, c.target, c.data["valid_to"]) for c in eng.changes(seq + 1)] == [
        (ops.CLOSE_EDGE, knows.id, clock.now),
        (ops.CLOSE_EDGE, wrote.id, clock.now + 50),
    ]
    # Closed relations are no longer current, but are kept.
    assert eng.items.edges_of([m])[0] == [eng.items.get([wrote.id])[0]]  # still valid until +50
    assert eng.items.edges_of([bob])[0] == []
    assert [e.id for e in eng.items.edges_of([bob], include_closed=True)[0]] == [knows.id]
    before = state(eng)
    with pytest.raises(Conflict, match="already closed"):
        eng.items.relate(close=[(knows.id, None)])
    with pytest.raises(NotFound, match="no open relation 'knows' from 'Ada' to 'Bob'"):
        eng.items.relate(close=[(("Ada", "knows", "Bob"), None)])
    assert state(eng) == before


@pytest.mark.parametrize(
    ("close", "error", "message"),
    [
        ("before", InvalidArgument, r"close\[0\]: valid_to is before"),
        ("Ada", InvalidArgument, "is not a relation"),
        (("Ada", "likes", "Bob"), NotFound, "no open relation 'likes'"),
        (("Bob", "knows", "Ada"), NotFound, "no open relation 'knows' from 'Bob'"),  # relations have a direction
        (("Ada", "knows", "Nobody"), NotFound, "nothing found for 'Nobody'"),
        ("Ada|knows|Bob", NotFound, "nothing found"),  # a triple is a tuple, not a string
        (MISSING, NotFound, "nothing found"),
    ],
)
def test_refused_closes(
    eng: Engine, clock: Clock, close: str | tuple[str, str, str], error: type[Exception], message: str
) -> None:
    ent(eng, "Ada")
    ent(eng, "Bob")
    edge = rel(eng, "Ada", "Bob", "knows")
    before = state(eng)
    with pytest.raises(error, match=message):
        eng.items.relate(close=[(edge.id, clock.now - 1) if close == "before" else (close, None)])
    assert state(eng) == before


def test_relations_across_private_scopes_are_refused(eng: Engine) -> None:
    ent(eng, "In A", scope=SCOPE_A, scopes=[SCOPE_A])
    ent(eng, "In B", scope=SCOPE_B, scopes=[SCOPE_B])
    ent(eng, "Shared")
    before = state(eng)
    with pytest.raises(InvalidArgument, match="shared endpoint"):
        eng.items.relate([("Shared", "In A", "ok", {}, None), ("In A", "In B", "x", {}, None)], scopes=ALL)
    assert state(eng) == before
    # Through the shared scope it is allowed, and unreadable endpoints are not found.
    assert eng.items.relate([("In A", "Shared", "ok", {}, None)], scope=SCOPE_A, scopes=ALL)[0][0][1]
    with pytest.raises(NotFound, match=r"add\[0\]"):
        eng.items.relate([("Shared", "In A", "x", {}, None)])


def test_an_error_in_one_add_writes_nothing_from_the_others(eng: Engine) -> None:
    ent(eng, "Ada")
    ent(eng, "Bob")
    m = mem(eng, "m")
    edge = rel(eng, "Ada", "Bob", "knows")
    before = state(eng)
    cases: list[tuple[tuple[str, str, str, Props, int | None], type[Exception], str]] = [
        (("Ada", "Nobody", "x", {}, None), NotFound, r"add\[1\]: nothing found"),
        (("Ada", "Ada", "x", {}, None), InvalidArgument, r"add\[1\]: an item cannot be related to itself"),
        (("Ada", "Bob", "", {}, None), InvalidArgument, r"add\[1\]: a relation type must not be empty"),
        (("Ada", edge.id, "x", {}, None), InvalidArgument, r"add\[1\]: .* is a relation"),
        (("Ada", "Bob", "x", {"bad": float("nan")}, None), InvalidArgument, r"add\[1\]: property 'bad'"),
    ]
    for bad, error, message in cases:
        with pytest.raises(error, match=message):
            eng.items.relate([("Ada", m.id, "wrote", {}, None), bad], close=[(edge.id, None)])
        assert state(eng) == before
    assert eng.items.get([edge.id])[0] == edge  # still open


def test_relations_lists_relations_by_type_newest_first(eng: Engine, clock: Clock) -> None:
    for name in ("A", "B", "C"):
        ent(eng, name)
    ab = rel(eng, "A", "B", "knows")
    clock.now += 1
    bc = rel(eng, "B", "C", "knows")
    clock.now += 1
    ac = rel(eng, "A", "C", "likes")
    clock.now += 1
    ca = rel(eng, "C", "A", "knows")
    clock.now += 1
    eng.items.relate(close=[(ca.id, None)])
    ent(eng, "Hidden", scope=SCOPE_A, scopes=[SCOPE_A])
    rel(eng, "A", "Hidden", "knows", scope="shared", scopes=ALL)  # a readable edge to an unreadable item

    knows = eng.items.relations(["knows"])
    assert [e.id for e in knows.edges] == [bc.id, ab.id]
    assert names(knows.items) == {"A", "B", "C"}
    assert not knows.truncated
    assert [e.id for e in eng.items.relations(["knows"], include_closed=True).edges] == [ca.id, bc.id, ab.id]
    assert [e.id for e in eng.items.relations(None).edges] == [ac.id, bc.id, ab.id]
    assert [e.id for e in eng.items.relations(["likes", "knows"]).edges] == [ac.id, bc.id, ab.id]
    first = eng.items.relations(None, limit=1)
    assert [e.id for e in first.edges] == [ac.id] and first.truncated
    assert names(first.items) == {"A", "C"}
    assert eng.items.relations(["unknown"]).edges == ()
    assert {e.type for e in eng.items.relations(["knows"], scopes=ALL).edges} == {"knows"}
    assert len(eng.items.relations(["knows"], scopes=ALL).edges) == 3
    with pytest.raises(InvalidArgument, match="at least one relation type"):
        eng.items.relations([])


def test_facets_count_what_the_reader_sees(eng: Engine, clock: Clock) -> None:
    mem(eng, "one", tags=["a", "b"], memory_type="fact")
    mem(eng, "two", tags=["a"])
    mem(eng, "three", tags=["a"], memory_type="fact")
    mem(eng, "private", tags=["a", "z"], memory_type="secret", scope=SCOPE_A)
    ent(eng, "P1", "person")
    ent(eng, "P2", "person")
    ent(eng, "Thing")
    rel(eng, "P1", "P2", "knows")
    rel(eng, "P2", "Thing", "knows")
    closed = rel(eng, "P1", "Thing", "owned")
    clock.now += 1
    eng.items.relate(close=[(closed.id, None)])
    assert eng.items.facets() == {
        "tags": [("a", 3), ("b", 1)],
        "memory_types": [("fact", 2), ("general", 1)],
        "entity_types": [("person", 2)],  # a typeless entity is not a type
        "relation_types": [("knows", 2)],
    }
    everything = eng.items.facets(scopes=ALL)
    assert everything["tags"] == [("a", 4), ("b", 1), ("z", 1)]
    assert everything["memory_types"] == [("fact", 2), ("general", 1), ("secret", 1)]
    assert {k: len(v) for k, v in eng.items.facets(top=1).items()} == dict.fromkeys(everything, 1)
    for bad in (0, 101):
        with pytest.raises(InvalidArgument, match="top"):
            eng.items.facets(top=bad)


# -- explore and path ----------------------------------------------------------------------------------


def chain(eng: Engine, *names_: str, edge_type: str = "next") -> list[Edge]:
    for name in names_:
        ent(eng, name)
    return [rel(eng, a, b, edge_type) for a, b in itertools.pairwise(names_)]


def depths(n: Neighbourhood) -> dict[str | None, int]:
    by_id = {i.id: label(i) for i in n.items}
    return {by_id[k]: v for k, v in n.depth.items()}


def test_explore_hops(eng: Engine) -> None:
    edges = chain(eng, "A", "B", "C", "D", "E", "F")
    for hops in range(1, 5):
        n = eng.items.explore(["A"], hops=hops)
        assert depths(n) == {name: i for i, name in enumerate("ABCDEF"[: hops + 1])}
        assert {e.id for e in n.edges} == {e.id for e in edges[:hops]}
        assert not n.truncated
    assert depths(eng.items.explore(["C"], hops=2)) == {"C": 0, "B": 1, "D": 1, "A": 2, "E": 2}
    for hops in (0, 11):
        with pytest.raises(InvalidArgument, match="hops"):
            eng.items.explore(["A"], hops=hops)
    with pytest.raises(NotFound):
        eng.items.explore(["Nobody"])
    with pytest.raises(InvalidArgument, match="is a relation"):
        eng.items.explore([edges[0].id])


def test_explore_direction_and_types(eng: Engine) -> None:
    chain(eng, "A", "B", "C")
    ent(eng, "X")
    rel(eng, "B", "X", "likes")
    assert depths(eng.items.explore(["B"], direction="out")) == {"B": 0, "C": 1, "X": 1}
    assert depths(eng.items.explore(["B"], direction="in")) == {"B": 0, "A": 1}
    assert depths(eng.items.explore(["B"])) == {"B": 0, "A": 1, "C": 1, "X": 1}
    assert depths(eng.items.explore(["B"], types=["likes"])) == {"B": 0, "X": 1}
    assert depths(eng.items.explore(["A"], hops=2, types=["likes"])) == {"A": 0}
    assert depths(eng.items.explore(["A"], hops=2, types=["next", "likes"])) == {"A": 0, "B": 1, "C": 2, "X": 2}


def test_explore_reaches_memories_and_leaves_out_unreadable_items(eng: Engine) -> None:
    m = mem(eng, "note about ada", about=["Ada"])
    ent(eng, "Private", scope=SCOPE_A, scopes=[SCOPE_A])
    rel(eng, "Ada", "Private", "knows", scope="shared", scopes=ALL)  # readable edge, unreadable end
    n = eng.items.explore(["Ada"], hops=2)
    assert depths(n) == {"Ada": 0, m.content: 1}
    assert all(e.type == ABOUT for e in n.edges)
    assert depths(eng.items.explore(["Ada"], scopes=ALL)) == {"Ada": 0, m.content: 1, "Private": 1}


def test_explore_include_closed(eng: Engine, clock: Clock) -> None:
    [edge] = chain(eng, "A", "B")
    clock.now += 10
    eng.items.relate(close=[(edge.id, None)])
    assert depths(eng.items.explore(["A"])) == {"A": 0}
    n = eng.items.explore(["A"], include_closed=True)
    assert depths(n) == {"A": 0, "B": 1}
    assert [e.valid_to for e in n.edges] == [clock.now]


def test_explore_as_of(eng: Engine, clock: Clock) -> None:
    clock.now = START_MS + 100
    [knows] = chain(eng, "Ada", "Bob", edge_type="knows")
    m = mem(eng, "note about bob", importance=2, about=["Bob"])
    clock.now = START_MS + 300
    eng.items.relate(close=[(knows.id, None)])
    eng.items.revise("Ada", Patch(name="Ada Lovelace", entity_type="mathematician"))
    eng.items.revise(m.id, Patch(content="rewritten note", importance=8))
    clock.now = START_MS + 500
    ent(eng, "Late")
    rel(eng, "Ada Lovelace", "Late", "knows")
    rel(eng, "Ada Lovelace", "Bob", "knows")

    now = eng.items.explore(["Ada Lovelace"], hops=2)
    assert depths(now) == {"Ada Lovelace": 0, "Late": 1, "Bob": 1, "rewritten note": 2}
    then = eng.items.explore(["Ada Lovelace"], hops=2, as_of=START_MS + 200)
    assert depths(then) == {"Ada": 0, "Bob": 1, "note about bob": 2}  # old name, closed edge, no Late
    assert [e.id for e in then.edges if e.type == "knows"] == [knows.id]
    ada_then = next(i for i in then.items if isinstance(i, Entity) and i.name == "Ada")
    assert ada_then.entity_type == ""
    note_then = next(i for i in then.items if isinstance(i, Memory))
    assert (note_then.content, note_then.importance) == ("note about bob", 2)


def test_explore_as_of_follows_relations_valid_then_whenever_they_were_recorded(eng: Engine, clock: Clock) -> None:
    """Edge validity alone decides what `as_of` reaches: a relation recorded later but valid
    since earlier is there at the earlier time, with its ends as first recorded."""
    clock.now = START_MS + 100
    ent(eng, "Ada")
    clock.now = START_MS + 500
    ent(eng, "Late")
    back_dated = rel(eng, "Ada", "Late", "knows", valid_from=START_MS + 100)
    assert back_dated.valid_from == START_MS + 100
    assert depths(eng.items.explore(["Ada"], as_of=START_MS + 200)) == {"Ada": 0, "Late": 1}
    assert [e.id for e in eng.items.explore(["Ada"], as_of=START_MS + 200).edges] == [back_dated.id]
    # Before the relation held, the start item stands alone.
    assert depths(eng.items.explore(["Ada"], as_of=START_MS + 50)) == {"Ada": 0}
    assert depths(eng.items.explore(["Late"], as_of=START_MS + 50)) == {"Late": 0}
    assert depths(eng.items.explore(["Late"], as_of=START_MS + 500)) == {"Late": 0, "Ada": 1}
    assert depths(eng.items.explore(["Ada"])) == {"Ada": 0, "Late": 1}


def test_explore_as_of_keeps_a_type_remember_gave(eng: Engine, clock: Clock) -> None:
    clock.now = START_MS + 100
    ent(eng, "Untyped")
    clock.now = START_MS + 200
    ent(eng, "Untyped", "city")  # the type is set: it had none
    clock.now = START_MS + 400
    eng.items.revise("Untyped", Patch(name="Renamed"))
    [then] = eng.items.explore(["Renamed"], as_of=START_MS + 300).items
    assert isinstance(then, Entity)
    assert (then.name, then.entity_type) == ("Untyped", "city")


def test_explore_limit_truncates(eng: Engine) -> None:
    ent(eng, "Hub")
    for i in range(6):
        ent(eng, f"Leaf{i}")
        rel(eng, "Hub", f"Leaf{i}", "has")
    n = eng.items.explore(["Hub"], limit=4)
    assert len(n.items) == 4 and n.truncated
    assert label(n.items[0]) == "Hub"
    assert all(e.src_pk in {i.pk for i in n.items} and e.dst_pk in {i.pk for i in n.items} for e in n.edges)
    full = eng.items.explore(["Hub"], limit=50)
    assert len(full.items) == 7 and not full.truncated


def test_explore_is_not_truncated_when_everything_fits_exactly(eng: Engine) -> None:
    chain(eng, "A", "B", "C")
    n = eng.items.explore(["A"], hops=2, limit=3)
    assert len(n.items) == 3
    assert not n.truncated


def test_explore_relates_items_of_the_last_hop_that_no_walk_followed(eng: Engine) -> None:
    for name in ("Ada", "Bob", "Cy", "Dee", "Eve"):
        ent(eng, name)
    ab, ac, bc = rel(eng, "Ada", "Bob", "knows"), rel(eng, "Ada", "Cy", "knows"), rel(eng, "Bob", "Cy", "knows")
    cd, de, eb = rel(eng, "Cy", "Dee", "knows"), rel(eng, "Dee", "Eve", "knows"), rel(eng, "Eve", "Bob", "knows")
    one = eng.items.explore(["Ada"])
    assert depths(one) == {"Ada": 0, "Cy": 1, "Bob": 1}
    assert [e.id for e in one.edges] == [ac.id, ab.id, bc.id]  # those followed, then Bob -> Cy
    two = eng.items.explore(["Ada"], hops=2)
    assert depths(two) == {"Ada": 0, "Cy": 1, "Bob": 1, "Eve": 2, "Dee": 2}
    assert [e.id for e in two.edges] == [ac.id, ab.id, eb.id, cd.id, bc.id, de.id]  # Dee -> Eve last
    assert {e.id for e in eng.items.explore(["Ada"], hops=2, direction="out").edges} == {ab.id, ac.id, bc.id, cd.id}
    assert [e.id for e in eng.items.explore(["Ada"], hops=2, types=["knows"]).edges] == [e.id for e in two.edges]
    assert [e.id for e in eng.items.explore(["Ada"], hops=2, types=["likes"]).edges] == []


def test_explore_relates_start_items_that_it_leaves_out_of_the_walk(eng: Engine) -> None:
    old_one, old_two = mem(eng, "old one"), mem(eng, "old two")
    mem(eng, "new one", supersedes=old_one.id)
    mem(eng, "new two", supersedes=old_two.id)
    link = rel(eng, old_one.id, old_two.id, "see_also")
    found = eng.items.explore([old_one.id, old_two.id])
    assert depths(found) == {"old one": 0, "old two": 0, "new two": 1, "new one": 1}
    # Neither start item is entered from the other (both superseded), yet they are related.
    assert link.id in {e.id for e in found.edges}
    assert len(found.edges) == 3
    assert [label(i) for i in eng.items.explore([old_one.id], hops=2).items] == ["old one", "new one"]


def test_path_between_a_memory_and_an_entity_over_mixed_edges(eng: Engine) -> None:
    m = mem(eng, "incident report", about=["Server"])
    ent(eng, "Team")
    ent(eng, "Manager")
    owns = rel(eng, "Team", "Server", "owns")
    leads = rel(eng, "Manager", "Team", "leads")
    [about], _ = eng.items.edges_of([m])
    found = eng.items.path(m.hash, "Manager")
    assert found is not None
    assert [label(i) for i in found.items] == ["incident report", "Server", "Team", "Manager"]
    assert [e.id for e in found.edges] == [about.id, owns.id, leads.id]
    assert depths(found) == {"incident report": 0, "Server": 1, "Team": 2, "Manager": 3}
    back = eng.items.path("Manager", m.id.lower())
    assert back is not None and [label(i) for i in back.items] == ["Manager", "Team", "Server", "incident report"]
    same = eng.items.path("Team", "Team")
    assert same is not None and [label(i) for i in same.items] == ["Team"] and same.edges == ()
    # Bounds and filters.
    assert eng.items.path(m.id, "Manager", max_hops=2) is None
    assert eng.items.path(m.id, "Manager", max_hops=3) is not None
    assert eng.items.path(m.id, "Manager", types=["about", "owns"]) is None
    for bad in (0, 11):
        with pytest.raises(InvalidArgument, match="hops"):
            eng.items.path(m.id, "Manager", max_hops=bad)


def test_path_is_none_without_a_current_readable_chain(eng: Engine, clock: Clock) -> None:
    [ab, _] = chain(eng, "A", "B", "C")
    ent(eng, "Island")
    assert eng.items.path("A", "Island") is None
    eng.items.relate(close=[(ab.id, None)])
    assert eng.items.path("A", "C") is None
    # A chain through an item the reader cannot see is no chain for that reader.
    ent(eng, "Hidden", scope=SCOPE_A, scopes=[SCOPE_A])
    rel(eng, "A", "Hidden", "x", scope="shared", scopes=ALL)
    rel(eng, "Hidden", "Island", "x", scope="shared", scopes=ALL)
    assert eng.items.path("A", "Island") is None
    via = eng.items.path("A", "Island", scopes=ALL)
    assert via is not None and [label(i) for i in via.items] == ["A", "Hidden", "Island"]
    with pytest.raises(NotFound):
        eng.items.path("A", "Nobody")


def test_path_of_ten_hops_is_the_longest(eng: Engine) -> None:
    nodes = [f"N{i}" for i in range(12)]
    chain(eng, *nodes)
    ten = eng.items.path("N0", "N10")
    assert ten is not None and len(ten.edges) == 10
    assert [label(i) for i in ten.items] == nodes[:11]
    assert eng.items.path("N0", "N11") is None
    assert eng.items.path("N0", "N10", max_hops=9) is None


# -- changes and history --------------------------------------------------------------------------------


def test_change_feed_is_scoped(eng: Engine) -> None:
    ent(eng, "Shared One")  # seq 1
    mem(eng, "private one", scope=SCOPE_A)  # seq 2
    ent(eng, "Private Two", scope=SCOPE_A)  # seq 3
    mem(eng, "shared two")  # seq 4
    mem(eng, "b one", scope=SCOPE_B)  # seq 5
    feed, position = eng.items.changes(1, 10)
    assert [c.seq for c in feed] == [1, 4]
    assert position == 6
    assert all(c.scope == "shared" for c in feed)
    assert [c.seq for c in eng.items.changes(1, 10, scopes=[SCOPE_A])[0]] == [2, 3]
    assert [c.seq for c in eng.items.changes(1, 10, scopes=ALL)[0]] == [1, 2, 3, 4, 5]
    assert eng.items.changes(0, 10) == (feed, 6)


def test_change_feed_limit_and_continuation(eng: Engine) -> None:
    ent(eng, "S1")  # 1
    mem(eng, "p1", scope=SCOPE_A)  # 2
    mem(eng, "s2")  # 3
    mem(eng, "p2", scope=SCOPE_A)  # 4
    mem(eng, "p3", scope=SCOPE_A)  # 5
    mem(eng, "s3")  # 6
    first, position = eng.items.changes(1, 2)
    assert ([c.seq for c in first], position) == ([1, 3], 4)  # skipped entries are not counted
    second, position = eng.items.changes(position, 2)
    assert ([c.seq for c in second], position) == ([6], 7)
    assert eng.items.changes(position, 2) == ([], 7)
    mem(eng, "s4")
    assert [c.seq for c in eng.items.changes(position, 2)[0]] == [7]
    assert eng.items.changes(1, 0) == ([], 1)


def test_change_feed_continues_past_a_long_run_of_other_scopes(eng: Engine) -> None:
    eng.items.remember([Note(NewMemory(f"private {i}")) for i in range(450)], scope=SCOPE_A)
    last = mem(eng, "shared at last")
    feed, position = eng.items.changes(1, 1)
    assert [(c.seq, c.target) for c in feed] == [(451, last.id)]
    assert position == 452


def test_history_lists_one_items_entries(eng: Engine, clock: Clock) -> None:
    m = mem(eng, "tracked", tags=["a"])
    ent(eng, "Ada", "", ["x"])
    clock.now += 1
    mem(eng, "tracked", tags=["b"])
    edge = rel(eng, m.hash, "Ada", "about")
    eng.items.revise("Ada", Patch(add_observations=("y",)))
    clock.now += 1
    eng.items.relate(close=[(edge.id, None)])
    history = eng.items.history(m.hash)
    assert [c.op for c in history] == [ops.CREATE_NODE, ops.ADD_TAGS]
    assert all(c.target == m.id for c in history)
    assert [c.seq for c in history] == sorted(c.seq for c in history)
    assert [c.op for c in eng.items.history("Ada")] == [ops.CREATE_NODE, ops.ADD_OBSERVATIONS]
    assert [c.op for c in eng.items.history(edge.id.lower())] == [ops.CREATE_EDGE, ops.CLOSE_EDGE]
    with pytest.raises(NotFound):
        eng.items.history("Nobody")
    with pytest.raises(NotFound):
        eng.items.history(m.id, scopes=[SCOPE_A])


# -- properties -----------------------------------------------------------------------------------------

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@contextlib.contextmanager
def fresh_engine() -> Iterator[tuple[Engine, Clock]]:
    with tempfile.TemporaryDirectory() as tmp:
        clock = Clock(START_MS)
        with Engine(store_at(Path(tmp) / "items.db"), clock=clock, access_interval=3600) as eng:
            yield eng, clock


CONTENTS = ("", "alpha", "beta", "gamma delta")
ABOUT_NAMES = ("", "Ada", "Bob")
ENTITY_NAMES = ("", "Ada", "Cy")
OBSERVATIONS = ("", "likes tea", "plays chess")

note_specs = st.tuples(
    st.sampled_from(CONTENTS),
    st.integers(-1, 11),
    st.lists(st.sampled_from(ABOUT_NAMES), max_size=2),
    st.lists(st.sampled_from(("a", "B", "bad tag")), max_size=2),
)
entity_specs = st.tuples(st.sampled_from(ENTITY_NAMES), st.lists(st.sampled_from(OBSERVATIONS), max_size=2))


@SETTINGS
@given(
    st.lists(note_specs, max_size=4),
    st.lists(entity_specs, max_size=3),
    st.lists(note_specs, max_size=3),
    st.booleans(),
)
def test_remember_is_all_or_nothing_or_item_by_item(
    seed: list[tuple[str, int, list[str], list[str]]],
    entity_batch: list[tuple[str, list[str]]],
    note_batch: list[tuple[str, int, list[str], list[str]]],
    atomic: bool,
) -> None:
    """Atomic: a batch with any invalid item writes nothing and names every invalid item.
    Not atomic: the invalid items are refused one by one, and the store ends as if only
    the valid ones had been given. Either way, statuses follow what was there before."""

    def bad_note(spec: tuple[str, int, list[str], list[str]]) -> bool:
        content, importance, about, tags = spec
        return not content or not 0 <= importance <= 10 or "" in about or "bad tag" in tags

    def bad_entity(spec: tuple[str, list[str]]) -> bool:
        name, observations = spec
        return not name or "" in observations

    def notes_of(specs: list[tuple[str, int, list[str], list[str]]]) -> list[Note]:
        return [Note(NewMemory(c, tuple(t), i), tuple(a)) for c, i, a, t in specs]

    with fresh_engine() as (eng, clock):
        valid_seed = [s for s in seed if not bad_note(s)]
        if valid_seed:
            eng.items.remember(notes_of(valid_seed))
        clock.now += 1
        before = state(eng)
        notes = notes_of(note_batch)
        entities = [NewEntity(n, "", tuple(o)) for n, o in entity_batch]
        bad = [f"memories[{i}]" for i, s in enumerate(note_batch) if bad_note(s)]
        bad += [f"entities[{i}]" for i, s in enumerate(entity_batch) if bad_entity(s)]
        if bad and atomic:
            with pytest.raises(InvalidArgument) as caught:
                eng.items.remember(notes, entities)
            for path in bad:
                assert path + ":" in str(caught.value)
            assert str(caught.value).count("]: ") == len(bad)
            assert state(eng) == before
            return
        known = {s[0] for s in valid_seed}
        named = {a for s in valid_seed for a in s[2]}
        memories, remembered = eng.items.remember(notes, entities, atomic=atomic)
        # Entities are written first, then memories (whose `about` may create more).
        for spec_e, outcome in zip(entity_batch, remembered, strict=True):
            if bad_entity(spec_e):
                assert (outcome.status, outcome.item) == ("error", None) and outcome.error
                continue
            assert (outcome.status == "created") == (spec_e[0] not in named)
            assert label(outcome.item) == spec_e[0]
            named.add(spec_e[0])
        for spec, outcome in zip(note_batch, memories, strict=True):
            if bad_note(spec):
                assert (outcome.status, outcome.item) == ("error", None) and outcome.error
                continue
            assert (outcome.status == "created") == (spec[0] not in known)
            assert label(outcome.item) == spec[0]
            assert outcome.created_entities == tuple(a for a in dict.fromkeys(spec[2]) if a not in named)
            known.add(spec[0])
            named |= set(spec[2])
        stats = eng.stats()
        assert (stats.memories, stats.entities) == (len(known), len(named))


item_specs = st.lists(
    st.tuples(st.sampled_from(("memory", "entity")), st.integers(0, 3), st.sampled_from(ALL)), max_size=14
)


@SETTINGS
@given(item_specs, st.integers(1, 5), st.sampled_from([("memory", "entity"), ("memory",), ("entity",)]))
def test_paging_a_listing_yields_it_exactly_once(
    specs: list[tuple[str, int, str]], k: int, kinds: tuple[str, ...]
) -> None:
    """Over several scopes too: each scope's newest are read apart and merged."""
    with fresh_engine() as (eng, clock):
        for i, (kind, at, scope) in enumerate(specs):
            clock.now = START_MS + at  # equal times are common: ties must break the same way
            if kind == "memory":
                mem(eng, f"memory {i}", scope=scope, scopes=ALL)
            else:
                ent(eng, f"Entity {i}", scope=scope, scopes=ALL)
        expected = [s for s in specs if s[0] in kinds]
        full = eng.items.search(kinds=kinds, limit=100, scopes=ALL)
        assert len(full.found) == len(expected) and not full.more
        born = [(f.item.created_at, f.item.pk) for f in full.found]
        assert born == sorted(born, reverse=True)
        seen: list[str] = []
        offset = 0
        while True:
            page = eng.items.search(kinds=kinds, offset=offset, limit=k, scopes=ALL)
            seen += [f.item.id for f in page.found]
            offset += k
            assert page.more == (offset < len(expected))
            if not page.more:
                break
        assert seen == [f.item.id for f in full.found]
        assert len(set(seen)) == len(seen)


tagged_specs = st.lists(
    st.tuples(st.integers(0, 3), st.sampled_from(ALL), st.sets(st.sampled_from(["red", "blue", "green"]))),
    max_size=14,
)


@SETTINGS
@given(tagged_specs, st.sets(st.sampled_from(["red", "blue", "green"]), min_size=1), st.integers(1, 4))
def test_a_tag_filtered_listing_is_the_same_led_by_the_tag_or_by_time(
    specs: list[tuple[int, str, set[str]]], wanted: set[str], k: int
) -> None:
    """A rare tag leads the listing from its index entries, a common one is checked while
    walking the newest items; scopes are walked apart, or read together past `_WALKS` of
    them. Every way gives every memory carrying all the tags, newest first.

    The ways are the SQLite store's (its module's settings); another store ignores them, and
    its one way of listing is held to the same answer."""
    from mnemodb.store.sqlite import items as sqlite_items

    with fresh_engine() as (eng, clock):
        made = []
        for i, (at, scope, tags) in enumerate(specs):
            clock.now = START_MS + at
            made.append((at, mem(eng, f"memory {i}", tags=sorted(tags), scope=scope, scopes=ALL), tags))
        # Newest first by the time each was stored: a clock set back is held to the change
        # log's last time, so that is not always `at`.
        expected = [m.id for _, m, tags in sorted(made, key=lambda x: (-x[1].created_at, -x[1].pk)) if wanted <= tags]
        where = ItemFilter(tags=tuple(sorted(wanted)))
        listings = []
        ways = list(itertools.product((0, 10_000), (1, 32)))  # no tag is rare / every tag is; together / apart
        for rare, walks in ways:
            saved = sqlite_items._RARE_TAG, sqlite_items._WALKS
            sqlite_items._RARE_TAG, sqlite_items._WALKS = rare, walks
            try:
                pages = [
                    eng.items.search(kinds=("memory",), where=where, scopes=ALL, offset=o, limit=k)
                    for o in range(0, 16, k)
                ]
            finally:
                sqlite_items._RARE_TAG, sqlite_items._WALKS = saved
            listings.append([f.item.id for page in pages for f in page.found])
        assert listings == [expected] * len(ways)
