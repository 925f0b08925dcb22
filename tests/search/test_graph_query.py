"""The knowledge-graph query language, on its own: clauses, fields, exclusions, phrases,
and typo-tolerant matching that still honours exclusions and fields."""

from __future__ import annotations

import pytest

from mnemodb.search.graph_query import (
    EntityText,
    ParsedQuery,
    entity_matches,
    fuzzy_matches,
    parse,
    parse_terms,
)


def test_a_clause_splits_required_excluded_optional_and_phrases() -> None:
    assert parse_terms('+Alpha -beta gamma "Delta Epsilon" gamma + -') == ParsedQuery(
        required=("alpha",), excluded=("beta",), optional=("gamma",), phrases=("delta epsilon",)
    )
    assert parse_terms("   ").empty


def test_fields_are_taken_out_and_the_last_of_each_wins() -> None:
    query = parse('name:"Tom Becker" type:person type:engineer espresso -decaf')
    # A quoted field value is one clause of words (any of them), not a phrase.
    assert query.fields == {
        "name": ParsedQuery(optional=("tom", "becker")),
        "type": ParsedQuery(optional=("engineer",)),
    }
    assert query.all == ParsedQuery(excluded=("decaf",), optional=("espresso",))
    assert parse("name:tom").all is None
    assert parse("").empty


TOM = EntityText.of("Tom Becker", "person", ("likes espresso", "works at Acme"))
MARIA = EntityText.of("Maria Lopez", "person", ("drinks tea",))


@pytest.mark.parametrize(
    ("query", "tom", "maria"),
    [
        ("espresso", True, False),
        ("becker", True, False),  # substrings of the name, as upstream
        ("+person -tea", True, False),
        ('"works at"', True, False),
        ('"at works"', False, False),
        ("name:maria", False, True),
        ("type:person tea", False, True),
        ("obs:acme", True, False),
        ("unknownword", False, False),
    ],
)
def test_entity_matches(query: str, tom: bool, maria: bool) -> None:
    parsed = parse(query)
    assert (entity_matches(TOM, parsed), entity_matches(MARIA, parsed)) == (tom, maria)


def test_fuzzy_counts_one_typo_and_a_swap_as_one_edit_and_keeps_exclusions() -> None:
    assert fuzzy_matches("likes espresso", "espreso")
    assert fuzzy_matches("maria lopez", "marai")  # two swapped letters: one edit
    assert not fuzzy_matches("maria lopez", "xyzzy")
    assert entity_matches(TOM, parse("Beker"), fuzzy=True)
    assert not entity_matches(TOM, parse("Beker -espresso"), fuzzy=True)
    assert not entity_matches(EntityText.of("Empty", "", ()), parse("anything"), fuzzy=True)
    assert not entity_matches(TOM, parse("-decaf"))  # exclusions alone look for nothing
