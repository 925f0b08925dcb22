"""Storing, updating and deleting memories through the engine, on a real SQLite file."""

from __future__ import annotations

import sqlite3
import unicodedata
from pathlib import Path

import pytest

from mnemodb.engine import Conflict, Engine, InvalidArgument, NewMemory, NotFound, content_hash, normalize_tags
from support import SCOPE_A, sha256

SCOPE_B = "01HV7N8Q3Y2J6W5X4Z9A0B1C2E"


# -- content addressing ---------------------------------------------------------------------------


def test_hash_is_sha256_of_the_raw_utf8_content(engine: Engine) -> None:
    raw = "  Crème brûlée\tis served cold\n"
    stored = engine.store_memory(raw)
    assert stored.is_new
    assert stored.memory.hash == sha256(raw)
    assert stored.memory.hash == content_hash(raw)
    fetched = engine.get_memory(sha256(raw))
    assert fetched is not None
    assert fetched.content == raw  # not trimmed, not case-folded


def test_hash_lookup_accepts_upper_case(engine: Engine) -> None:
    memory = engine.store_memory("case of the hash").memory
    found = engine.get_memory(memory.hash.upper())
    assert found is not None
    assert found.id == memory.id


def test_content_is_not_normalised_before_hashing(engine: Engine) -> None:
    nfc = unicodedata.normalize("NFC", "café")
    nfd = unicodedata.normalize("NFD", "café")
    assert nfc != nfd
    variants = ["hello", "Hello", " hello", "hello ", "hello\n", nfc, nfd]
    stored = [engine.store_memory(v) for v in variants]
    assert all(s.is_new for s in stored)
    assert [s.memory.hash for s in stored] == [sha256(v) for v in variants]
    assert len({s.memory.id for s in stored}) == len(variants)
    assert engine.stats().memories == len(variants)


def test_new_memory_fields(engine: Engine) -> None:
    stored = engine.store_memory("a decision", ["Design"], 7, "decision")
    memory = stored.memory
    assert memory.importance == 7
    assert memory.memory_type == "decision"
    assert memory.tags == ("design",)
    assert memory.scope == "shared"
    assert memory.created_at == memory.updated_at
    assert memory.pk >= 1
    assert len(memory.id) == 26
    assert engine.get_memory(memory.hash) == memory


# -- tags -------------------------------------------------------------------------------------------


def test_tags_are_nfkc_lower_cased_sorted_and_deduplicated(engine: Engine) -> None:
    tags = ["Beta", "ALPHA", "\uff21\uff30\uff29", "alpha", "beta", "ﬁle", "Zeta"]
    memory = engine.store_memory("tagged", tags).memory
    assert memory.tags == ("alpha", "api", "beta", "file", "zeta")
    assert normalize_tags(tags) == memory.tags
    fetched = engine.get_memory(memory.hash)
    assert fetched is not None
    assert fetched.tags == ("alpha", "api", "beta", "file", "zeta")


def test_tag_limits_are_inclusive(engine: Engine) -> None:
    longest = "x" * 50
    many = [f"t{i:03d}" for i in range(100)]
    assert engine.store_memory("longest tag", [longest]).memory.tags == (longest,)
    assert len(engine.store_memory("a hundred tags", many).memory.tags) == 100


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
        engine.store_memory("some content", ["fine", tag])
    assert engine.stats().memories == 0
    assert engine.current_seq() == 0


def test_more_than_a_hundred_tags_is_refused(engine: Engine) -> None:
    with pytest.raises(InvalidArgument, match="Too many tags"):
        engine.store_memory("some content", [f"t{i}" for i in range(101)])
    assert engine.stats().memories == 0


# -- other validation ------------------------------------------------------------------------------


@pytest.mark.parametrize("importance", [-1, 11, 100])
def test_importance_out_of_range_is_refused(engine: Engine, importance: int) -> None:
    with pytest.raises(InvalidArgument, match="importance"):
        engine.store_memory("content", importance=importance)
    assert engine.stats().memories == 0


@pytest.mark.parametrize("importance", [0, 10])
def test_importance_bounds_are_accepted(engine: Engine, importance: int) -> None:
    assert engine.store_memory(f"importance {importance}", importance=importance).memory.importance == importance


def test_empty_content_is_refused(engine: Engine) -> None:
    with pytest.raises(InvalidArgument, match="empty"):
        engine.store_memory("")


def test_content_with_a_lone_surrogate_is_refused_clearly(engine: Engine) -> None:
    with pytest.raises(InvalidArgument, match="lone surrogate") as caught:
        engine.store_memory("broken \ud800 text")
    assert "content" in str(caught.value)
    assert engine.stats().memories == 0
    assert engine.current_seq() == 0


def test_tag_with_a_lone_surrogate_is_refused_clearly(engine: Engine) -> None:
    with pytest.raises(InvalidArgument, match="lone surrogate"):
        engine.store_memory("fine text", ["bad\udfff"])


def test_memory_type_with_a_lone_surrogate_is_refused_clearly(engine: Engine) -> None:
    with pytest.raises(InvalidArgument):
        engine.store_memory("fine text", memory_type="kind\ud800")
    assert engine.stats().memories == 0


def test_looking_up_a_hash_with_a_lone_surrogate_is_not_a_crash(engine: Engine) -> None:
    try:
        found = engine.get_memory("\ud800")
    except InvalidArgument:
        return
    assert found is None


# -- storing the same content again -------------------------------------------------------------------


def test_storing_again_merges_tags_and_keeps_importance_and_type(engine: Engine) -> None:
    first = engine.store_memory("Deploys run on Fridays", ["deploy", "ops"], 8, "decision")
    again = engine.store_memory("Deploys run on Fridays", ["Schedule", "ops"], 1, "fact")
    assert first.is_new
    assert not again.is_new
    assert again.memory.id == first.memory.id
    assert again.memory.pk == first.memory.pk
    assert again.memory.tags == ("deploy", "ops", "schedule")
    assert again.memory.importance == 8
    assert again.memory.memory_type == "decision"
    assert again.memory.created_at == first.memory.created_at
    assert engine.stats().memories == 1
    fetched = engine.get_memory(first.memory.hash)
    assert fetched is not None
    assert fetched.tags == ("deploy", "ops", "schedule")


def test_storing_again_without_new_tags_changes_nothing(engine: Engine) -> None:
    first = engine.store_memory("stable", ["a"])
    seq = engine.current_seq()
    again = engine.store_memory("stable", ["A"])
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
    results = engine.store_memories(items)
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
    assert engine.get_memory(sha256("bad tag")) is None
    assert engine.get_memory(sha256("too important")) is None
    third = engine.get_memory(sha256("third good"))
    assert third is not None
    assert third.memory_type == "fact"


def test_store_memories_item_that_fails_inside_the_database_fails_alone(engine: Engine) -> None:
    # The memory type is only written (not validated) before the database sees it.
    items = [NewMemory("kept before"), NewMemory("unstorable", memory_type="\udcff"), NewMemory("kept after")]
    results = engine.store_memories(items)
    assert [r.ok for r in results] == [True, False, True]
    assert engine.get_memory(sha256("kept before")) is not None
    assert engine.get_memory(sha256("kept after")) is not None
    assert engine.get_memory(sha256("unstorable")) is None


def test_store_memories_with_no_items(engine: Engine) -> None:
    assert engine.store_memories([]) == []
    assert engine.current_seq() == 0


# -- update ---------------------------------------------------------------------------------------------


def test_update_content_keeps_id_and_relations_and_changes_hash(engine: Engine) -> None:
    target = engine.store_memory("the original text", ["keep"], 5, "fact").memory
    other = engine.store_memory("another memory").memory
    engine.relate_memories(target.hash, other.hash, "supports")
    before, after = engine.update_memory(target.hash, content="the revised text")
    assert before == target
    assert after.id == target.id
    assert after.pk == target.pk
    assert after.hash == sha256("the revised text")
    assert after.content == "the revised text"
    assert after.tags == ("keep",)
    assert after.importance == 5
    assert after.memory_type == "fact"
    assert after.created_at == target.created_at
    assert engine.get_memory(target.hash) is None
    assert engine.get_memory(after.hash) == after
    links = engine.memory_links(after.hash)
    assert [(link.from_hash, link.to_hash, link.edge.type) for link in links] == [(after.hash, other.hash, "supports")]
    assert [h.memory.id for h in engine.search_memories("revised")] == [target.id]
    assert engine.search_memories("original") == []


def test_update_to_another_memorys_content_is_a_conflict(engine: Engine) -> None:
    a = engine.store_memory("memory a").memory
    b = engine.store_memory("memory b").memory
    seq = engine.current_seq()
    with pytest.raises(Conflict, match="already exists"):
        engine.update_memory(a.hash, content="memory b", tags=["changed"])
    assert engine.get_memory(a.hash) == a
    assert engine.get_memory(b.hash) == b
    assert engine.current_seq() == seq


def test_update_to_its_own_content_is_not_a_conflict(engine: Engine) -> None:
    a = engine.store_memory("same text").memory
    _, after = engine.update_memory(a.hash, content="same text", importance=2)
    assert after.hash == a.hash
    assert after.importance == 2


def test_update_tags_replaced_kept_or_cleared(engine: Engine) -> None:
    memory = engine.store_memory("tag holder", ["old", "older"]).memory
    _, kept = engine.update_memory(memory.hash, importance=3)
    assert kept.tags == ("old", "older")
    _, replaced = engine.update_memory(memory.hash, tags=["New", "fresh", "new"])
    assert replaced.tags == ("fresh", "new")
    _, cleared = engine.update_memory(memory.hash, tags=[])
    assert cleared.tags == ()
    fetched = engine.get_memory(memory.hash)
    assert fetched is not None
    assert fetched.tags == ()
    assert engine.stats().tags == 0


def test_update_importance_and_type(engine: Engine) -> None:
    memory = engine.store_memory("a plan").memory
    _, after = engine.update_memory(memory.hash, importance=9, memory_type="plan")
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
    memory = engine.store_memory("unchanged").memory
    with pytest.raises(InvalidArgument):
        engine.update_memory(memory.hash, **changes)  # type: ignore[arg-type]
    assert engine.get_memory(memory.hash) == memory


def test_update_memory_type_with_a_lone_surrogate_is_refused_clearly(engine: Engine) -> None:
    memory = engine.store_memory("unchanged").memory
    with pytest.raises(InvalidArgument):
        engine.update_memory(memory.hash, memory_type="\ud800")
    assert engine.get_memory(memory.hash) == memory


def test_update_of_a_missing_memory_is_not_found(engine: Engine) -> None:
    with pytest.raises(NotFound, match="Memory not found"):
        engine.update_memory(sha256("never stored"), content="x")


# -- delete -----------------------------------------------------------------------------------------------


def test_delete_removes_the_memory_and_its_relations(engine: Engine, db_path: Path) -> None:
    doomed = engine.store_memory("doomed", ["gone"]).memory
    left = engine.store_memory("left behind").memory
    right = engine.store_memory("right behind").memory
    engine.relate_memories(doomed.hash, left.hash, "a")
    engine.relate_memories(right.hash, doomed.hash, "b")
    engine.relate_memories(left.hash, right.hash, "c")
    assert engine.stats().edges == 3
    assert engine.delete_memory(doomed.hash) is True
    assert engine.get_memory(doomed.hash) is None
    assert engine.search_memories("doomed") == []
    assert engine.search_memories("gone") == []
    stats = engine.stats()
    assert (stats.memories, stats.edges, stats.tags) == (2, 1, 0)
    assert [link.edge.type for link in engine.memory_links(left.hash)] == ["c"]
    assert [link.edge.type for link in engine.memory_links(right.hash)] == ["c"]
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM memory_tag").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM edge").fetchone()[0] == 1
    assert engine.delete_memory(doomed.hash) is False


def test_delete_memories_reports_each_item(engine: Engine) -> None:
    a = engine.store_memory("a").memory
    b = engine.store_memory("b").memory
    results = engine.delete_memories([a.hash, sha256("missing"), b.hash.upper(), a.hash])
    assert [r.value for r in results] == [True, False, True, False]
    assert engine.stats().memories == 0


def test_content_can_be_stored_again_after_delete(engine: Engine) -> None:
    first = engine.store_memory("phoenix").memory
    engine.delete_memory(first.hash)
    second = engine.store_memory("phoenix")
    assert second.is_new
    assert second.memory.id != first.id
    assert second.memory.pk > first.pk


# -- scopes -------------------------------------------------------------------------------------------------


def test_memory_in_one_scope_is_invisible_to_a_reader_of_another(db_path: Path) -> None:
    with Engine.open(str(db_path), write_scope=SCOPE_A) as a, Engine.open(str(db_path), write_scope=SCOPE_B) as b:
        secret = a.store_memory("the secret plan", ["plans"]).memory
        assert secret.scope == SCOPE_A
        assert a.get_memory(secret.hash) == secret
        assert b.get_memory(secret.hash) is None
        assert b.search_memories("secret plan") == []
        assert b.search_memories("plans") == []
        assert b.stats().memories == 0
        assert b.stats().tags == 0
        assert b.delete_memory(secret.hash) is False
        with pytest.raises(NotFound):
            b.update_memory(secret.hash, importance=3)
        assert a.get_memory(secret.hash) == secret
        both = b.get_memory(secret.hash, scopes=[SCOPE_A, SCOPE_B])
        assert both is not None
        assert both.id == secret.id


def test_shared_memories_are_not_read_unless_shared_is_a_read_scope(db_path: Path) -> None:
    with Engine.open(str(db_path)) as shared, Engine.open(str(db_path), write_scope=SCOPE_A) as private:
        memory = shared.store_memory("common knowledge").memory
        assert memory.scope == "shared"
        assert private.get_memory(memory.hash) is None
        assert private.get_memory(memory.hash, scopes=["shared", SCOPE_A]) is not None
    with Engine.open(str(db_path), write_scope=SCOPE_A, read_scopes=[SCOPE_A, "SHARED"]) as reader:
        assert reader.get_memory(memory.hash) is not None


def test_same_content_in_two_scopes_is_two_memories(engine: Engine) -> None:
    in_a = engine.store_memory("same words", ["a"], scope=SCOPE_A)
    in_b = engine.store_memory("same words", ["b"], scope=SCOPE_B)
    assert in_a.is_new
    assert in_b.is_new
    assert in_a.memory.hash == in_b.memory.hash
    assert in_a.memory.id != in_b.memory.id
    got_a = engine.get_memory(in_a.memory.hash, scopes=[SCOPE_A])
    got_b = engine.get_memory(in_a.memory.hash, scopes=[SCOPE_B])
    assert got_a is not None
    assert got_b is not None
    assert (got_a.id, got_a.tags) == (in_a.memory.id, ("a",))
    assert (got_b.id, got_b.tags) == (in_b.memory.id, ("b",))
    assert engine.stats(scopes=[SCOPE_A, SCOPE_B]).memories == 2
    engine.delete_memory(in_a.memory.hash, scopes=[SCOPE_A])
    assert engine.get_memory(in_a.memory.hash, scopes=[SCOPE_B]) is not None


def test_scope_names_are_validated(engine: Engine) -> None:
    with pytest.raises(InvalidArgument, match="invalid scope"):
        engine.store_memory("x", scope="not-a-scope")
    with pytest.raises(InvalidArgument):
        engine.get_memory(sha256("x"), scopes=[])
    with pytest.raises(InvalidArgument):
        Engine.open(":memory:", write_scope="nope")
    lower = engine.store_memory("lower-case scope", scope=SCOPE_A.lower()).memory
    assert lower.scope == SCOPE_A
