"""EntityTextSearch: substring candidates over entity text, which the engine checks exactly."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from mnemodb.store.base import Store, TextClause
from store.contract.rows import A, B, C, add_entity
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
