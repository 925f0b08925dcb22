"""EntityTextSearch: substring candidates over entity text, which the engine checks exactly."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from mnemodb.model.records import ENTITY
from mnemodb.store.base import EntityMatch, Store, TextClause
from store.contract.rows import T0, A, B, C, add_entity, add_node
from stores import chosen_backend


def _candidates(store: Store, clauses: Sequence[TextClause], scopes: Sequence[str]) -> list[int] | None:
    with store.read() as tx:
        found = tx.entity_text_search(clauses, scopes)
        readable = set(tx.entity_pks(scopes))
    if found is not None:
        assert found == sorted(found), "oldest first"
        assert set(found) <= readable, "only entities the names mean in the scopes"
    return found


def _populate(store: Store) -> dict[str, int]:
    with store.write() as tx:
        return {
            "ada": add_entity(tx, "Ada Lovelace", "mathematician", ["wrote the first program", "met Babbage"]),
            "bab": add_entity(tx, "Charles Babbage", "inventor", ["designed the analytical engine"]),
            "eng": add_entity(tx, "Engine", "machine", ["steam powered"]),
            "dup": add_entity(tx, "Ada Lovelace", "duplicate", ["wrote the first program"]),
            "far": add_entity(tx, "Babbage Far", "inventor", ["analytical"], scope=C),
            "b": add_entity(tx, "Ada of B", "person", ["analytical mind"], scope=B),
        }


def test_every_entity_meeting_the_clauses_is_a_candidate(store: Store) -> None:
    e = _populate(store)
    anywhere = _candidates(store, [(None, ["Babbage"], [])], [A])
    assert anywhere is not None and {e["ada"], e["bab"]} <= set(anywhere)
    by_name = _candidates(store, [("name", ["Babbage"], [])], [A])
    assert by_name is not None and e["bab"] in by_name
    by_obs = _candidates(store, [("obs", ["analytical"], [])], [A, B])
    assert by_obs is not None and {e["bab"], e["b"]} <= set(by_obs)
    by_type = _candidates(store, [("type", ["invent"], [])], [A])
    assert by_type is not None and e["bab"] in by_type


def test_every_substring_and_one_of_some(store: Store) -> None:
    e = _populate(store)
    both = _candidates(store, [(None, ["Lovelace", "program"], [])], [A])
    assert both is not None and e["ada"] in both
    some = _candidates(store, [(None, [], ["steam", "Babbage"])], [A])
    assert some is not None and {e["ada"], e["bab"], e["eng"]} <= set(some)
    two_clauses = _candidates(store, [("name", ["Engine"], []), ("obs", [], ["steam", "xyzzy"])], [A])
    assert two_clauses is not None and e["eng"] in two_clauses


def test_substrings_match_inside_words_and_case_as_the_engine_checks(store: Store) -> None:
    e = _populate(store)
    inside = _candidates(store, [(None, ["velac"], [])], [A])
    assert inside is not None and e["ada"] in inside


def test_a_substring_too_short_for_the_index_may_give_none(store: Store) -> None:
    e = _populate(store)
    found = _candidates(store, [(None, ["A"], [])], [A])
    assert found is None or {e["ada"], e["bab"], e["eng"]} <= set(found)
    long = _candidates(store, [(None, ["Lovelace"], [])], [A])
    assert long is not None  # a longer substring narrows


@pytest.mark.xfail(
    chosen_backend() == "sqlite",
    reason="SQLite's trigram tokenizer stops at U+0000: text after one is not in the substring index",
    strict=True,
)
def test_text_after_nul_is_found(store: Store) -> None:
    with store.write() as tx:
        pk = add_entity(tx, "before\x00afterwards", observations=["x\x00yz\x00wording"])
        add_entity(tx, "unrelated")
    clauses: list[list[TextClause]] = [
        [("name", ["afterw"], [])],
        [("obs", ["yz\x00word"], [])],
        [(None, [], ["wording"])],
    ]
    for clause in clauses:
        found = _candidates(store, clause, [A])
        assert found is None or pk in found, clause


def test_a_substring_holding_nul_finds_its_entity(store: Store) -> None:
    with store.write() as tx:
        pk = add_entity(tx, "first part\x00second", observations=["observed\x00"])
        add_entity(tx, "unrelated")
    clauses: list[list[TextClause]] = [
        [("name", ["rst part\x00"], [])],
        [("obs", ["observed\x00"], [])],
        [(None, [], ["part\x00s"])],
    ]
    for clause in clauses:
        found = _candidates(store, clause, [A])
        assert found is None or pk in found, clause


def test_names_alone_follow_renames_deletions_and_observation_changes(store: Store) -> None:
    """Clauses on names alone find exactly the entities whose current name holds the
    substrings: not those holding them in their type or observations only, not a renamed
    entity by its old name, not a deleted one."""
    e = _populate(store)
    assert _candidates(store, [("name", ["Babbage"], [])], [A, C]) == sorted([e["bab"], e["far"]])
    assert _candidates(store, [("name", ["analytic"], [])], [A, B, C]) == []
    assert _candidates(store, [("name", ["mathem"], [])], [A]) == []
    with store.write() as tx:
        tx.rename_entity(e["eng"], name="Difference Machine")
        tx.rename_entity(e["bab"], entity_type="engineer")
        tx.add_observations(e["ada"], ["a Difference noted"], 1)
        tx.delete_node(e["far"])
    assert _candidates(store, [("name", ["Engine"], [])], [A]) == []
    assert _candidates(store, [("name", ["Difference"], [])], [A]) == [e["eng"]]
    assert _candidates(store, [("name", ["Babbage"], [])], [A, C]) == [e["bab"]]
    assert _candidates(store, [("name", [], ["Machine", "Lovelace"])], [A]) == [e["ada"], e["eng"]]
    assert _candidates(store, [("name", ["Ada"], []), ("name", ["lace"], [])], [A, B]) == [e["ada"]]


def _matches(store: Store, clauses: Sequence[TextClause], scopes: Sequence[str]) -> list[EntityMatch] | None:
    """`entity_text_matches`, checked against what `entity_text_search` and
    `entities_by_pk` say of the same entities."""
    with store.read() as tx:
        found = tx.entity_text_matches(clauses, scopes)
        candidates = tx.entity_text_search(clauses, scopes)
        whole = tx.entities_by_pk(candidates or [])
    if found is None:
        assert candidates is None
        return None
    assert [m.pk for m in found] == candidates, "the same candidates, oldest first"
    for match in found:
        entity = whole[match.pk]
        assert (match.name, match.entity_type) == (entity.name, entity.entity_type)
        assert tuple(json.loads(match.observations_json)) == entity.observations
        assert (json.loads(match.extra_json) if match.extra_json else {}) == dict(entity.extra)
    return found


def test_matches_are_the_candidates_with_what_a_search_shows_of_them(store: Store) -> None:
    e = _populate(store)
    with store.write() as tx:
        odd = add_entity(tx, "Odd\x00Babbage", "inventor", ['line\nbreak "quoted" \\ \u2028', "", "Zoë 東京"])
        tx.insert_entity(
            add_node(tx, ENTITY, scope=A), A, "Babbage Extra", "x", {"color": "red", "n": [1, 2.5]}, ["one"], T0
        )
    clause_sets: list[list[TextClause]] = [
        [(None, ["Babbage"], [])],
        [("name", ["Babbage"], [])],
        [("name", [], ["Lovelace", "Extra"])],
        [(None, [], ["steam", "oë 東京", "quoted"])],
        [("obs", ["analytical"], [])],
        [("type", ["invent"], []), (None, [], ["Babbage", "engine"])],
        [(None, ["xyzzy"], [])],
    ]
    seen: set[int] = set()
    for clauses in clause_sets:
        found = _matches(store, clauses, [A, B, C])
        assert found is not None, clauses
        seen.update(m.pk for m in found)
    assert {e["ada"], e["bab"], e["eng"], e["far"], e["b"]} <= seen
    assert e["dup"] not in seen, "only the entity a name means"
    assert _matches(store, [(None, ["Babbage"], [])], [B]) == []
    _matches(store, [(None, ["A"], [])], [A])  # None exactly when entity_text_search is
    found = _matches(store, [(None, [], ["oë 東", "Extra"])], [A])
    assert found is not None and odd in {m.pk for m in found}
    assert any(m.extra_json for m in found)


def test_matches_follow_renames_deletions_and_new_observations(store: Store) -> None:
    e = _populate(store)
    with store.write() as tx:
        tx.rename_entity(e["eng"], name="Difference Machine")
        tx.add_observations(e["ada"], ["a Difference noted"], 1)
        tx.delete_node(e["bab"])
    found = _matches(store, [(None, ["Difference"], [])], [A])
    assert found is not None and {m.pk for m in found} == {e["ada"], e["eng"]}
    by_pk = {m.pk: m for m in found}
    assert by_pk[e["eng"]].name == "Difference Machine"
    assert json.loads(by_pk[e["ada"]].observations_json)[-1] == "a Difference noted"
    assert _matches(store, [("name", ["Charles"], [])], [A]) == []
