"""Storing, updating and deleting memories through the engine, on a real SQLite file."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from engine.helpers import committed, open_engine_at
from mnemodb.engine import Conflict, Engine, InvalidArgument, NewMemory, NotFound, content_hash, normalize_tags
from stores import store_location
from support import SCOPE_A, sha256

SCOPE_B = "01HV7N8Q3Y2J6W5X4Z9A0B1C2E"


# -- content addressing ---------------------------------------------------------------------------


def test_hash_is_sha256_of_the_raw_utf8_content(engine: Engine) -> None:
    raw = "  Crème brûlée\tis served cold\n"
    stored = engine.memories.store(raw)
    assert stored.is_new
    assert stored.memory.hash == sha256(raw)
    assert stored.memory.hash == content_hash(raw)
    fetched = engine.memories.get(sha256(raw))
    assert fetched is not None
    assert fetched.content == raw  # not trimmed, not case-folded


def test_hash_lookup_accepts_upper_case(engine: Engine) -> None:
    memory = engine.memories.store("case of the hash").memory
    found = engine.memories.get(memory.hash.upper())
    assert found is not None
    assert found.id == memory.id


def test_content_is_not_normalised_before_hashing(engine: Engine) -> None:
    nfc = unicodedata.normalize("NFC", "café")
    nfd = unicodedata.normalize("NFD", "café")
    assert nfc != nfd
    variants = ["hello", "Hello", " hello", "hello ", "hello\n", nfc, nfd]
    stored = [engine.memories.store(v) for v in variants]
    assert all(s.is_new for s in stored)
    assert [s.memory.hash for s in stored] == [sha256(v) for v in variants]
    assert len({s.memory.id for s in stored}) == len(variants)
    assert engine.stats().memories == len(variants)


def test_new_memory_fields(engine: Engine) -> None:
    stored = engine.memories.store("a decision", ["Design"], 7, "decision")
    memory = stored.memory
    assert memory.importance == 7
    assert memory.memory_type == "decision"
    assert memory.tags == ("design",)
    assert memory.scope == "shared"
    assert memory.created_at == memory.updated_at
    assert memory.pk >= 1
    assert len(memory.id) == 26
    assert engine.memories.get(memory.hash) == memory


# -- tags -------------------------------------------------------------------------------------------


def test_tags_are_nfkc_lower_cased_sorted_and_deduplicated(engine: Engine) -> None:
    tags = ["Beta", "ALPHA", "\uff21\uff30\uff29", "alpha", "beta", "ﬁle", "Zeta"]
    memory = engine.memories.store("tagged", tags).memory
    assert memory.tags == ("alpha", "api", "beta", "file", "zeta")
    assert normalize_tags(tags) == memory.tags
    fetched = engine.memories.get(memory.hash)
    assert fetched is not None
    assert fetched.tags == ("alpha", "api", "beta", "file", "zeta")


def test_tag_limits_are_inclusive(engine: Engine) -> None:
    longest = "x" * 50
    many = [f"t{i:03d}" for i in range(100)]
    assert engine.memories.store("longest tag", [longest]).memory.tags == (longest,)
    assert len(engine.memories.store("a hundred tags", many).memory.tags) == 100


@pytest.mark.parametrize(
    ("tag", "message"),
    [
        ("", "at least 1 character"),
        ("x" * 51, "exceeds 50 characters"),
        ("ﬃ" * 17, "exceeds 50 characters"),  # 17 characters that NFKC turns into 51
        ("two words", "whitespace"),
        ("tab\there", "whitespace"),
        ("no\u00a0break", "whitespace"),  # NFKC turns a no-break space into a space
        ("\u3000wide", "whitespace"),
        ("line\nbreak", "whitespace"),
    ],
)
def test_invalid_tags_are_refused(engine: Engine, tag: str, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        engine.memories.store("some content", ["fine", tag])
    assert engine.stats().memories == 0
    assert engine.current_seq() == 0


def test_more_than_a_hundred_tags_is_refused(engine: Engine) -> None:
    with pytest.raises(InvalidArgument, match="Too many tags"):
        engine.memories.store("some content", [f"t{i}" for i in range(101)])
    assert engine.stats().memories == 0


# -- other validation ------------------------------------------------------------------------------


@pytest.mark.parametrize("importance", [-1, 11, 100])
def test_importance_out_of_range_is_refused(engine: Engine, importance: int) -> None:
    with pytest.raises(InvalidArgument, match="importance"):
        engine.memories.store("content", importance=importance)
    assert engine.stats().memories == 0


@pytest.mark.parametrize("importance", [0, 10])
def test_importance_bounds_are_accepted(engine: Engine, importance: int) -> None:
    assert engine.memories.store(f"importance {importance}", importance=importance).memory.importance == importance


def test_empty_content_is_refused(engine: Engine) -> None:
    with pytest.raises(InvalidArgument, match="empty"):
        engine.memories.store("")


def test_content_with_a_lone_surrogate_is_refused_clearly(engine: Engine) -> None:
    with pytest.raises(InvalidArgument, match="lone surrogate") as caught:
        engine.memories.store("broken \ud800 text")
    assert "content" in str(caught.value)
    assert engine.stats().memories == 0
    assert engine.current_seq() == 0


def test_tag_with_a_lone_surrogate_is_refused_clearly(engine: Engine) -> None:
    with pytest.raises(InvalidArgument, match="lone surrogate"):
        engine.memories.store("fine text", ["bad\udfff"])


def test_memory_type_with_a_lone_surrogate_is_refused_clearly(engine: Engine) -> None:
    with pytest.raises(InvalidArgument):
        engine.memories.store("fine text", memory_type="kind\ud800")
    assert engine.stats().memories == 0


def test_looking_up_a_hash_with_a_lone_surrogate_is_not_a_crash(engine: Engine) -> None:
    try:
        found = engine.memories.get("\ud800")
    except InvalidArgument:
        return
    assert found is None


# -- storing the same content again -------------------------------------------------------------------


def test_storing_again_merges_tags_and_keeps_importance_and_type(engine: Engine) -> None:
    first = engine.memories.store("Deploys run on Fridays", ["deploy", "ops"], 8, "decision")
    again = engine.memories.store("Deploys run on Fridays", ["Schedule", "ops"], 1, "fact")
    assert first.is_new
    assert not again.is_new
    assert again.memory.id == first.memory.id
    assert again.memory.pk == first.memory.pk
    assert again.memory.tags == ("deploy", "ops", "schedule")
    assert again.memory.importance == 8
    assert again.memory.memory_type == "decision"
    assert again.memory.created_at == first.memory.created_at
    assert engine.stats().memories == 1
    fetched = engine.memories.get(first.memory.hash)
    assert fetched is not None
    assert fetched.tags == ("deploy", "ops", "schedule")


def test_storing_again_without_new_tags_changes_nothing(engine: Engine) -> None:
    first = engine.memories.store("stable", ["a"])
    seq = engine.current_seq()
    again = engine.memories.store("stable", ["A"])
    assert not again.is_new
    assert again.memory == first.memory
    assert engine.current_seq() == seq


# -- batches ------------------------------------------------------------------------------------------


def test_store_memories_failures_do_not_affect_other_items(engine: Engine) -> None:
    items = [
        NewMemory("first good", ("one",)),
        NewMemory("bad tag", ("has space",)),
        NewMemory("second good", importance=4),
        NewMemory("first good", ("two",)),
        NewMemory("too important", importance=11),
        NewMemory("surrogate \udc00"),
        NewMemory(""),
        NewMemory("third good", memory_type="fact"),
    ]
    results = engine.memories.store_many(items)
    assert [r.index for r in results] == list(range(len(items)))
    assert [r.ok for r in results] == [True, False, True, True, False, False, False, True]
    for failed in (results[1], results[4], results[5], results[6]):
        assert failed.error
        assert failed.value is None
    assert results[0].value.is_new
    assert not results[3].value.is_new
    assert results[3].value.memory.id == results[0].value.memory.id
    assert results[3].value.memory.tags == ("one", "two")
    assert engine.stats().memories == 3
    assert engine.memories.get(sha256("bad tag")) is None
    assert engine.memories.get(sha256("too important")) is None
    third = engine.memories.get(sha256("third good"))
    assert third is not None
    assert third.memory_type == "fact"


def test_store_memories_item_that_fails_inside_the_database_fails_alone(engine: Engine) -> None:
    # The memory type is only written (not validated) before the database sees it.
    items = [NewMemory("kept before"), NewMemory("unstorable", memory_type="\udcff"), NewMemory("kept after")]
    results = engine.memories.store_many(items)
    assert [r.ok for r in results] == [True, False, True]
    assert engine.memories.get(sha256("kept before")) is not None
    assert engine.memories.get(sha256("kept after")) is not None
    assert engine.memories.get(sha256("unstorable")) is None


def test_store_memories_with_no_items(engine: Engine) -> None:
    assert engine.memories.store_many([]) == []
    assert engine.current_seq() == 0


# -- update ---------------------------------------------------------------------------------------------


def test_update_content_keeps_id_and_relations_and_changes_hash(engine: Engine) -> None:
    target = engine.memories.store("the original text", ["keep"], 5, "fact").memory
    other = engine.memories.store("another memory").memory
    engine.memories.relate(target.hash, other.hash, "supports")
    before, after = engine.memories.update(target.hash, content="the revised text")
    assert before == target
    assert after.id == target.id
    assert after.pk == target.pk
    assert after.hash == sha256("the revised text")
    assert after.content == "the revised text"
    assert after.tags == ("keep",)
    assert after.importance == 5
    assert after.memory_type == "fact"
    assert after.created_at == target.created_at
    assert engine.memories.get(target.hash) is None
    assert engine.memories.get(after.hash) == after
    links = engine.memories.links(after.hash)
    assert [(link.from_hash, link.to_hash, link.edge.type) for link in links] == [(after.hash, other.hash, "supports")]
    assert [h.memory.id for h in engine.memories.search("revised")] == [target.id]
    assert engine.memories.search("original") == []


def test_update_to_another_memorys_content_is_a_conflict(engine: Engine) -> None:
    a = engine.memories.store("memory a").memory
    b = engine.memories.store("memory b").memory
    seq = engine.current_seq()
    with pytest.raises(Conflict, match="already exists"):
        engine.memories.update(a.hash, content="memory b", tags=["changed"])
    assert engine.memories.get(a.hash) == a
    assert engine.memories.get(b.hash) == b
    assert engine.current_seq() == seq


def test_update_to_its_own_content_is_not_a_conflict(engine: Engine) -> None:
    a = engine.memories.store("same text").memory
    _, after = engine.memories.update(a.hash, content="same text", importance=2)
    assert after.hash == a.hash
    assert after.importance == 2


def test_update_tags_replaced_kept_or_cleared(engine: Engine) -> None:
    memory = engine.memories.store("tag holder", ["old", "older"]).memory
    _, kept = engine.memories.update(memory.hash, importance=3)
    assert kept.tags == ("old", "older")
    _, replaced = engine.memories.update(memory.hash, tags=["New", "fresh", "new"])
    assert replaced.tags == ("fresh", "new")
    _, cleared = engine.memories.update(memory.hash, tags=[])
    assert cleared.tags == ()
    fetched = engine.memories.get(memory.hash)
    assert fetched is not None
    assert fetched.tags == ()
    assert engine.stats().tags == 0


def test_update_importance_and_type(engine: Engine) -> None:
    memory = engine.memories.store("a plan").memory
    _, after = engine.memories.update(memory.hash, importance=9, memory_type="plan")
    assert (after.importance, after.memory_type) == (9, "plan")
    assert after.content == memory.content


@pytest.mark.parametrize(
    "changes",
    [
        {"importance": 11},
        {"importance": -1},
        {"content": ""},
        {"memory_type": ""},
        {"tags": ["bad tag"]},
        {"content": "lone \ud800"},
    ],
)
def test_update_with_invalid_fields_is_refused(engine: Engine, changes: dict[str, object]) -> None:
    memory = engine.memories.store("unchanged").memory
    with pytest.raises(InvalidArgument):
        engine.memories.update(memory.hash, **changes)  # type: ignore[arg-type]
    assert engine.memories.get(memory.hash) == memory


def test_update_memory_type_with_a_lone_surrogate_is_refused_clearly(engine: Engine) -> None:
    memory = engine.memories.store("unchanged").memory
    with pytest.raises(InvalidArgument):
        engine.memories.update(memory.hash, memory_type="\ud800")
    assert engine.memories.get(memory.hash) == memory


def test_update_of_a_missing_memory_is_not_found(engine: Engine) -> None:
    with pytest.raises(NotFound, match="Memory not found"):
        engine.memories.update(sha256("never stored"), content="x")


# -- delete -----------------------------------------------------------------------------------------------


def test_delete_removes_the_memory_and_its_relations(engine: Engine, db_path: Path) -> None:
    doomed = engine.memories.store("doomed", ["gone"]).memory
    left = engine.memories.store("left behind").memory
    right = engine.memories.store("right behind").memory
    engine.memories.relate(doomed.hash, left.hash, "a")
    engine.memories.relate(right.hash, doomed.hash, "b")
    engine.memories.relate(left.hash, right.hash, "c")
    assert engine.stats().edges == 3
    assert engine.memories.delete(doomed.hash) is True
    assert engine.memories.get(doomed.hash) is None
    assert engine.memories.search("doomed") == []
    assert engine.memories.search("gone") == []
    stats = engine.stats()
    assert (stats.memories, stats.edges, stats.tags) == (2, 1, 0)
    assert [link.edge.type for link in engine.memories.links(left.hash)] == ["c"]
    assert [link.edge.type for link in engine.memories.links(right.hash)] == ["c"]
    # What the database holds, read anew: no tag row and no edge of the deleted memory is left.
    with committed(db_path) as tx:
        stored = tx.counts(None)
        assert (stored["nodes"], stored["memories"], stored["edges"]) == (2, 2, 1)
        assert tx.memories_with_tags(["gone"], ["shared"], 10) == []
        assert tx.count_tags(["shared"]) == 0
        assert [m.tags for m in tx.memories_by_pk([left.pk, right.pk]).values()] == [(), ()]
        assert tx.edges_of([doomed.pk], "both") == []
    # The database's own checks: on SQLite, that no row refers to the deleted one (foreign keys).
    assert engine.store.check().problems == ()
    assert engine.memories.delete(doomed.hash) is False


def test_delete_memories_reports_each_item(engine: Engine) -> None:
    a = engine.memories.store("a").memory
    b = engine.memories.store("b").memory
    results = engine.memories.delete_many([a.hash, sha256("missing"), b.hash.upper(), a.hash])
    assert [r.value for r in results] == [True, False, True, False]
    assert engine.stats().memories == 0


def test_content_can_be_stored_again_after_delete(engine: Engine) -> None:
    first = engine.memories.store("phoenix").memory
    engine.memories.delete(first.hash)
    second = engine.memories.store("phoenix")
    assert second.is_new
    assert second.memory.id != first.id
    assert second.memory.pk > first.pk


# -- scopes -------------------------------------------------------------------------------------------------


def test_memory_in_one_scope_is_invisible_to_a_reader_of_another(db_path: Path) -> None:
    # Read counts are written only when asked (a long interval), so `a` reads back the very memory it stored.
    with (
        open_engine_at(db_path, write_scope=SCOPE_A, access_interval=3600) as a,
        open_engine_at(db_path, write_scope=SCOPE_B, access_interval=3600) as b,
    ):
        secret = a.memories.store("the secret plan", ["plans"]).memory
        assert secret.scope == SCOPE_A
        assert a.memories.get(secret.hash) == secret
        assert b.memories.get(secret.hash) is None
        assert b.memories.search("secret plan") == []
        assert b.memories.search("plans") == []
        assert b.stats().memories == 0
        assert b.stats().tags == 0
        assert b.memories.delete(secret.hash) is False
        with pytest.raises(NotFound):
            b.memories.update(secret.hash, importance=3)
        assert a.memories.get(secret.hash) == secret
        both = b.memories.get(secret.hash, scopes=[SCOPE_A, SCOPE_B])
        assert both is not None
        assert both.id == secret.id


def test_shared_memories_are_not_read_unless_shared_is_a_read_scope(db_path: Path) -> None:
    with open_engine_at(db_path) as shared, open_engine_at(db_path, write_scope=SCOPE_A) as private:
        memory = shared.memories.store("common knowledge").memory
        assert memory.scope == "shared"
        assert private.memories.get(memory.hash) is None
        assert private.memories.get(memory.hash, scopes=["shared", SCOPE_A]) is not None
    with open_engine_at(db_path, write_scope=SCOPE_A, read_scopes=[SCOPE_A, "SHARED"]) as reader:
        assert reader.memories.get(memory.hash) is not None


def test_same_content_in_two_scopes_is_two_memories(engine: Engine) -> None:
    in_a = engine.memories.store("same words", ["a"], scope=SCOPE_A)
    in_b = engine.memories.store("same words", ["b"], scope=SCOPE_B)
    assert in_a.is_new
    assert in_b.is_new
    assert in_a.memory.hash == in_b.memory.hash
    assert in_a.memory.id != in_b.memory.id
    got_a = engine.memories.get(in_a.memory.hash, scopes=[SCOPE_A])
    got_b = engine.memories.get(in_a.memory.hash, scopes=[SCOPE_B])
    assert got_a is not None
    assert got_b is not None
    assert (got_a.id, got_a.tags) == (in_a.memory.id, ("a",))
    assert (got_b.id, got_b.tags) == (in_b.memory.id, ("b",))
    assert engine.stats(scopes=[SCOPE_A, SCOPE_B]).memories == 2
    engine.memories.delete(in_a.memory.hash, scopes=[SCOPE_A])
    assert engine.memories.get(in_a.memory.hash, scopes=[SCOPE_B]) is not None


def test_scope_names_are_validated(engine: Engine, db_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="invalid scope"):
        engine.memories.store("x", scope="not-a-scope")
    with pytest.raises(InvalidArgument):
        engine.memories.get(sha256("x"), scopes=[])
    with pytest.raises(InvalidArgument):
        Engine.open(store_location(db_path), write_scope="nope")
    lower = engine.memories.store("lower-case scope", scope=SCOPE_A.lower()).memory
    assert lower.scope == SCOPE_A
