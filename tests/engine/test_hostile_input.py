"""Engine answers to input the fuzzing of the tools found mishandled: each is either a
clear InvalidArgument or a correct result, never an exception from below the engine."""

from __future__ import annotations

import base64

import pytest

from mnemodb.engine import Engine, InvalidArgument
from mnemodb.engine.graph import NewEntity
from mnemodb.engine.patterns import MAX_PATTERN_STEPS
from mnemodb.model.checks import MAX_QUERY_CHARS, check_props


def test_an_observation_holding_a_nul_is_found_by_a_search_holding_it(eng: Engine) -> None:
    eng.graph.create_entities([NewEntity("Ada", "person", ("before\x00after",)), NewEntity("Bob", "person", ("x",))])
    assert [e.name for e in eng.graph.search("before\x00after").entities] == ["Ada"]
    assert [m.entity.name for m in eng.graph.search_observations("fore\x00aft")] == ["Ada"]
    assert [e.name for e in eng.graph.with_observations_matching("ore\x00af")] == ["Ada"]
    assert eng.graph.search("after\x00before").entities == ()


def test_search_text_longer_than_the_limit_is_refused(eng: Engine) -> None:
    eng.memories.store("a memory to search")
    at_limit = ("memory " * MAX_QUERY_CHARS)[:MAX_QUERY_CHARS]
    assert [h.memory.content for h in eng.memories.search(at_limit)] == ["a memory to search"]
    too_long = at_limit + "x"
    for search in (
        lambda: eng.memories.search(too_long),
        lambda: eng.graph.search(too_long),
        lambda: eng.graph.search_observations(too_long),
        lambda: eng.graph.with_observations_matching(too_long),
        lambda: eng.items.search(too_long),
        lambda: eng.items.search(pattern=too_long, kinds=("entity",)),
    ):
        with pytest.raises(InvalidArgument, match="too long: 32,769 characters, at most 32,768"):
            search()


def test_repeated_words_count_once(eng: Engine) -> None:
    eng.graph.create_entities([NewEntity("Ada", "person", ("likes maps",))])
    assert [e.name for e in eng.graph.search("maps " * 6000).entities] == ["Ada"]


def test_a_pattern_whose_repeats_write_out_too_much_is_refused(eng: Engine) -> None:
    eng.graph.create_entities([NewEntity("Ada", "person", ("a" * 40 + "!",))])
    with pytest.raises(InvalidArgument, match=f"at most {MAX_PATTERN_STEPS:,}"):
        eng.graph.with_observations_matching("(a{1000}){1000}")
    assert [e.name for e in eng.graph.with_observations_matching("a{40}!")] == ["Ada"]


def test_property_integers_beyond_64_bits_become_floats_and_beyond_floats_are_refused() -> None:
    assert check_props({"n": 2**63 - 1, "m": -(2**63)}) == {"n": 2**63 - 1, "m": -(2**63)}
    assert check_props({"n": 2**64}) == {"n": float(2**64)}
    with pytest.raises(InvalidArgument, match="finite number"):
        check_props({"n": 10**400})


def _cursor(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def test_read_graph_takes_any_limit_and_only_its_own_cursors(eng: Engine) -> None:
    eng.graph.create_entities([NewEntity("Ada"), NewEntity("Bob")])
    assert [e.name for e in eng.graph.read(limit=2**63 - 1).entities] == ["Ada", "Bob"]
    page = eng.graph.read(limit=1)
    assert page.next_cursor is not None
    assert [e.name for e in eng.graph.read(limit=1, cursor=page.next_cursor).entities] == ["Bob"]
    for forged in ("e:9223372036854775808", "e: 1", "e:-1", "e:1e3", "x:1"):
        with pytest.raises(InvalidArgument, match="cursor is not one this server gave out"):
            eng.graph.read(limit=1, cursor=_cursor(forged))


def test_names_starting_pages_and_takes_wildcards_literally(eng: Engine) -> None:
    eng.graph.create_entities([NewEntity(name) for name in ("ab1", "AB2", "ab3", "a%b", "a_b", "zz")])
    assert eng.graph.names_starting("ab", limit=2) == (["ab1", "AB2"], True)
    assert eng.graph.names_starting("ab", limit=3) == (["ab1", "AB2", "ab3"], False)
    assert eng.graph.names_starting("a%") == (["a%b"], False)
    assert eng.graph.names_starting("a_") == (["a_b"], False)
    assert eng.graph.names_starting("a\x00") == ([], False)
    with pytest.raises(InvalidArgument, match="prefix is too long"):
        eng.graph.names_starting("a" * (MAX_QUERY_CHARS + 1))
