"""The knowledge-graph profile's search: search_nodes' query language and scores, and
search_observations, in JSON-RPC to the server `mnemodb serve` builds, in this process.

The cases follow the upstream suites' checklist (OR, +required, -excluded, "phrases",
field prefixes, fuzzy typos, scores, limit, neighbours; single observations with their
entity), and the deliberate fixes: with fuzzy on, exclusions, required terms and field
filters still hold, and an entity without observations no longer matches every query.

Every test reads one graph, written once for the module on one shared server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

import inprocess
from inprocess import Wire

pytestmark = pytest.mark.inprocess


def ent(name: str, entity_type: str, *observations: str) -> dict[str, Any]:
    return {"name": name, "entityType": entity_type, "observations": list(observations)}


def rel(src: str, dst: str, relation_type: str) -> dict[str, Any]:
    return {"from": src, "to": dst, "relationType": relation_type}


ALICE = ent(
    "Alice",
    "Person",
    "[2025-11-26] First round interview at LabV",
    "Knows React and TypeScript",
    "Lives in Berlin",
    "[2025-11-26] Sent a thank-you note",
)
ENTITIES = [
    ent(
        "AuthService",
        "Service",
        "Handles login and token issuance",
        "Tech debt: session refresh is duplicated",
        "Purpose: central authentication",
    ),
    ent("AuthController", "Module", "HTTP endpoints for login"),
    ent("UserService", "Service", "DEPRECATED: replaced by AccountService", "Stores user profiles"),
    ent("Database", "Infrastructure", "PostgreSQL primary", "TODO: add a read replica"),
    ent("Redis", "Infrastructure", "Cache for sessions"),
    ent("Orphan", "Stub"),  # no observations at all
    ALICE,
    ent("Bob", "Person", "[2025-11-20] Interview scheduled at Globex", "Learning React hooks", "Prefers React to Vue"),
    ent("Builds", "Log", *(f"Shipped build {i}" for i in range(12))),
    ent("Odd", "Sample", "zebra\x1fquagga stripes", "plain"),
]
RELATIONS = [
    rel("AuthController", "AuthService", "calls"),
    rel("AuthService", "Database", "uses"),
    rel("AuthService", "Redis", "uses"),
    rel("UserService", "AuthService", "depends_on"),
    rel("Alice", "Bob", "knows"),
]
BY_NAME = {e["name"]: e for e in ENTITIES}


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class Searcher:
    def __init__(self, server: Wire) -> None:
        self.server = server

    def ok(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = self.server.call(tool, arguments)
        assert result["isError"] is False, result
        structured: dict[str, Any] = result["structuredContent"]
        assert result["content"] == [{"type": "text", "text": compact(structured)}]
        return structured

    def nodes(self, query: str, **options: Any) -> dict[str, Any]:
        found = self.ok("search_nodes", {"query": query, **options})
        assert list(found) == ["entities", "relations", "scores"]
        return found

    def names(self, query: str, **options: Any) -> list[str]:
        """The names found, in result order (best first)."""
        return [e["name"] for e in self.nodes(query, **options)["entities"]]

    def hits(self, query: str, **options: Any) -> list[str]:
        """The names found, sorted: for what matches, whatever the ranking."""
        return sorted(self.names(query, **options))

    def observations(self, query: str, **options: Any) -> dict[str, Any]:
        return self.ok("search_observations", {"query": query, **options})

    def matches(self, query: str, **options: Any) -> list[tuple[str, str]]:
        return [(m["entityName"], m["observation"]) for m in self.observations(query, **options)["matches"]]


@pytest.fixture(scope="module")
def search(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Searcher]:
    home = tmp_path_factory.mktemp("search")
    # Run where no server-memory file can be picked up, with no file named in the environment.
    with inprocess.wire(home / "memory.db", "knowledge-graph", env={"MEMORY_FILE_PATH": ""}, cwd=home) as server:
        for tool, arguments in (
            ("create_entities", {"entities": ENTITIES}),
            ("create_relations", {"relations": RELATIONS}),
        ):
            assert server.call(tool, arguments)["isError"] is False
        yield Searcher(server)


def triples(relations: Sequence[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(r["from"], r["to"], r["relationType"]) for r in relations]


# -- search_nodes: plain words ---------------------------------------------------------------------------


def test_by_name_type_and_observation_ignoring_case(search: Searcher) -> None:
    assert search.hits("Redis") == ["Redis"]
    assert search.hits("redis") == ["Redis"]
    assert search.hits("REDIS") == ["Redis"]
    assert search.hits("Infrastructure") == ["Database", "Redis"]  # by type
    assert search.hits("pOsTgReSqL") == ["Database"]  # by observation
    assert search.hits("hooks") == ["Bob"]


def test_results_are_whole_entities_with_relations_touching_them(search: Searcher) -> None:
    found = search.nodes("PostgreSQL")
    assert found["entities"] == [BY_NAME["Database"]]
    # A relation with one end among the results comes along: here an incoming one ...
    assert found["relations"] == [rel("AuthService", "Database", "uses")]
    # ... and here an outgoing one to an entity that did not match.
    assert search.nodes("endpoints")["relations"] == [rel("AuthController", "AuthService", "calls")]


def test_no_match_and_empty_queries(search: Searcher) -> None:
    nothing: dict[str, list[Any]] = {"entities": [], "relations": [], "scores": []}
    assert search.nodes("kubernetes") == nothing
    assert search.nodes("") == nothing
    assert search.nodes("   ") == nothing
    assert search.nodes("-auth") == nothing  # exclusions alone look for nothing
    assert search.nodes("+") == nothing


def test_words_are_ored(search: Searcher) -> None:
    assert search.hits("Auth User") == ["AuthController", "AuthService", "UserService"]


def test_required_terms(search: Searcher) -> None:
    assert search.hits("+Service +Auth") == ["AuthService"]
    assert search.hits("+react +berlin") == ["Alice"]
    assert search.hits("+react +kubernetes") == []
    # Once a term is required, the plain words no longer decide a match.
    assert search.hits("+hooks kubernetes") == ["Bob"]


def test_excluded_terms(search: Searcher) -> None:
    assert search.hits("Auth -Controller") == ["AuthService"]
    assert search.hits("Service -deprecated") == ["AuthService"]
    assert search.hits("react -globex") == ["Alice"]


def test_phrases(search: Searcher) -> None:
    assert search.hits('"Tech debt"') == ["AuthService"]
    assert search.hits('"first round"') == ["Alice"]
    assert search.hits('"round first"') == []
    # Observations are searched joined by spaces, so a phrase may span two of them.
    assert search.hits('"issuance tech debt"') == ["AuthService"]


def test_dated_queries(search: Searcher) -> None:
    assert search.hits("[2025-11-26]") == ["Alice"]
    assert search.hits("[2025-11-20]") == ["Bob"]
    assert search.hits("[2025-11-26] [2025-11-20]") == ["Alice", "Bob"]
    assert search.hits('"[2025-11-26] sent"') == ["Alice"]


# -- search_nodes: field prefixes ---------------------------------------------------------------------------


def test_field_prefixes(search: Searcher) -> None:
    assert search.hits("name:Auth") == ["AuthController", "AuthService"]
    assert search.hits("type:Module") == ["AuthController"]
    assert search.hits("obs:DEPRECATED") == ["UserService"]
    assert search.hits("TYPE:infrastructure") == ["Database", "Redis"]
    assert search.hits("name:AuthService type:Module") == []  # every field clause must hold
    assert search.hits("name:Auth type:Service") == ["AuthService"]
    # "service" is in UserService's name, not in its observations.
    assert search.hits("obs:service") == ["UserService"]  # "AccountService"
    assert search.hits("obs:login") == ["AuthController", "AuthService"]
    assert search.hits("name:login") == []


def test_field_prefixes_with_the_rest_of_the_query(search: Searcher) -> None:
    assert search.hits("name:Auth token") == ["AuthService"]
    assert search.hits("type:Service -deprecated") == ["AuthService"]
    assert search.hits("type:Person +berlin") == ["Alice"]


def test_quoted_field_values(search: Searcher) -> None:
    # A quoted value is read as words of that field (OR'ed, as upstream), so it may hold spaces.
    assert search.hits('name:"auth service"') == ["AuthController", "AuthService", "UserService"]
    assert search.hits('name:"+auth +service"') == ["AuthService"]
    assert search.hits('obs:"berlin globex"') == ["Alice", "Bob"]
    assert search.hits('type:"person" +hooks') == ["Bob"]


# -- search_nodes: scores, limit, neighbours ------------------------------------------------------------------


def test_scores_rank_the_results(search: Searcher) -> None:
    found = search.nodes("AuthService")
    scores = found["scores"]
    assert all(list(s) == ["name", "score"] for s in scores)
    assert [s["name"] for s in scores] == [e["name"] for e in found["entities"]]
    assert scores[0]["name"] == "AuthService"
    assert scores[0]["score"] >= 100  # an exact name match
    values = [s["score"] for s in scores]
    assert values == sorted(values, reverse=True)
    assert all(isinstance(v, int | float) for v in values)


def test_scores_for_a_multi_word_query_put_the_best_match_first(search: Searcher) -> None:
    found = search.nodes("Redis session")
    assert [s["name"] for s in found["scores"]][:1] == ["Redis"]
    assert {e["name"] for e in found["entities"]} == {"Redis", "AuthService"}  # "session refresh"
    values = [s["score"] for s in found["scores"]]
    assert values == sorted(values, reverse=True)


def test_limit_keeps_the_best(search: Searcher) -> None:
    everything = search.nodes("Auth User")
    limited = search.nodes("Auth User", limit=2)
    assert len(everything["entities"]) == 3
    assert limited["entities"] == everything["entities"][:2]
    assert limited["scores"] == everything["scores"][:2]
    assert search.nodes("Auth User", limit=0) == everything  # 0 means no limit
    assert len(search.names("Auth User", limit=1)) == 1


@pytest.mark.parametrize(
    "query",
    ["Auth User", "+Service +Auth", "Auth -Controller", '"tech debt"', "name:auth obs:login", "re", "interview"],
)
def test_all_matches_are_what_the_best_ones_are(search: Searcher, query: str) -> None:
    # Without a limit every match is read in full once; with one, matches are ranked on
    # their text and only the best are read: the two must agree on entities, order and scores.
    everything = search.nodes(query)
    assert everything["entities"], query
    assert search.nodes(query, limit=len(ENTITIES)) == everything


def test_include_neighbors(search: Searcher) -> None:
    found = search.nodes("name:AuthService", includeNeighbors=True)
    assert [e["name"] for e in found["entities"]] == [
        "AuthService",
        "AuthController",
        "Database",
        "Redis",
        "UserService",
    ]
    assert found["entities"][1] == BY_NAME["AuthController"]  # neighbours come whole
    assert [s["name"] for s in found["scores"]] == ["AuthService"]  # neighbours are not scored
    assert triples(found["relations"]) == triples(RELATIONS[:4])
    plain = search.nodes("name:AuthService")
    assert [e["name"] for e in plain["entities"]] == ["AuthService"]
    # Only one hop: Bob is Alice's neighbour, nobody is Bob's but Alice.
    assert search.names("hooks", includeNeighbors=True) == ["Bob", "Alice"]


# -- search_nodes: fuzzy ---------------------------------------------------------------------------------------


def test_fuzzy_tolerates_typos(search: Searcher) -> None:
    assert search.hits("Athservice") == []
    assert search.hits("Athservice", fuzzy=True) == ["AuthService"]
    assert search.hits("Databse", fuzzy=True) == ["Database"]
    assert search.hits("name:Athservice", fuzzy=True) == ["AuthService"]
    found = search.nodes("Athservice", fuzzy=True)
    assert found["scores"][0]["name"] == "AuthService"
    assert found["scores"][0]["score"] > 0


@pytest.mark.parametrize(("typo", "found"), [("Rdeis", "Redis"), ("Atuhsevrice", "AuthService")])
def test_fuzzy_counts_two_swapped_letters_as_one_typo(search: Searcher, typo: str, found: str) -> None:
    # The commonest typo: one edit each, not the two substitutions each takes otherwise (past
    # the one edit a five-letter word, or the two an eleven-letter one, may have).
    assert search.hits(typo) == []
    assert search.hits(typo, fuzzy=True) == [found]


def test_fuzzy_finds_a_typo_that_shares_no_three_letters_with_the_word(search: Searcher) -> None:
    # "rect" is one edit from "react", but has none of its three-letter pieces.
    assert search.hits("Rect") == []
    assert search.hits("Rect", fuzzy=True) == ["Alice", "Bob"]


@pytest.mark.parametrize("query", ["Athservice", "Databse", "qqqqqqq", "Rect", "xyz"])
def test_fuzzy_does_not_match_entities_without_observations(search: Searcher, query: str) -> None:
    # Upstream's fuzzy fallback matched every entity without observations to every query.
    assert "Orphan" not in search.hits(query, fuzzy=True)


def test_fuzzy_finds_nothing_for_nonsense(search: Searcher) -> None:
    assert search.hits("qqqqqqq", fuzzy=True) == []


def test_fuzzy_keeps_exclusions_required_terms_and_field_filters(search: Searcher) -> None:
    # Upstream's fuzzy fallback ignored all three.
    assert search.hits("Athservice -token", fuzzy=True) == []
    assert search.hits("+Athservice +kubernetes", fuzzy=True) == []
    assert search.hits("type:Infrastructure Athservice", fuzzy=True) == []
    assert search.hits("name:Redis Athservice", fuzzy=True) == []
    assert search.hits("type:Service Athservice", fuzzy=True) == ["AuthService"]


# -- search_observations ----------------------------------------------------------------------------------------


def test_single_observation_with_its_entity(search: Searcher) -> None:
    found = search.observations("LabV")
    assert list(found) == ["matches"]
    [match] = found["matches"]
    assert list(match) == ["entityName", "entityType", "observation", "score"]
    assert match["entityName"] == "Alice"
    assert match["entityType"] == "Person"
    assert match["observation"] == "[2025-11-26] First round interview at LabV"
    assert match["score"] > 0


def test_observations_across_entities_best_first(search: Searcher) -> None:
    assert sorted(search.matches("interview")) == [
        ("Alice", "[2025-11-26] First round interview at LabV"),
        ("Bob", "[2025-11-20] Interview scheduled at Globex"),
    ]
    react = search.observations("React")["matches"]
    assert len(react) == 3
    scores = [m["score"] for m in react]
    assert scores == sorted(scores, reverse=True)


def test_observation_query_language(search: Searcher) -> None:
    assert search.matches("+interview +LabV") == [("Alice", "[2025-11-26] First round interview at LabV")]
    assert search.matches("interview -LabV") == [("Bob", "[2025-11-20] Interview scheduled at Globex")]
    assert search.matches('"first round"') == [("Alice", "[2025-11-26] First round interview at LabV")]
    # Each observation is matched on its own: a phrase never spans two of them here.
    assert search.matches('"issuance tech debt"') == []
    assert sorted(search.matches("[2025-11-26]")) == [
        ("Alice", "[2025-11-26] First round interview at LabV"),
        ("Alice", "[2025-11-26] Sent a thank-you note"),
    ]


def test_an_excluded_term_hides_only_the_observations_that_hold_it(search: Searcher) -> None:
    # Bob has "Learning React hooks", but "Prefers React to Vue" has no "hooks".
    assert sorted(search.matches("react -hooks")) == [
        ("Alice", "Knows React and TypeScript"),
        ("Bob", "Prefers React to Vue"),
    ]


def test_observation_limit(search: Searcher) -> None:
    assert len(search.matches("React", limit=2)) == 2
    assert search.matches("React", limit=2) == search.matches("React")[:2]
    assert search.observations("React", limit=0) == {"matches": []}
    assert len(search.matches("shipped")) == 10  # the default
    assert len(search.matches("shipped", limit=50)) == 12


def test_observation_no_match_and_empty_query(search: Searcher) -> None:
    assert search.observations("kubernetes") == {"matches": []}
    assert search.observations("") == {"matches": []}
    assert search.observations("-react") == {"matches": []}


def test_observation_include_entity(search: Searcher) -> None:
    found = search.observations("LabV", includeEntity=True)
    assert list(found) == ["matches", "entities"]
    assert found["entities"] == [ALICE]  # the whole entity, all four observations
    both = search.observations("interview", includeEntity=True)
    assert sorted(e["name"] for e in both["entities"]) == ["Alice", "Bob"]
    assert list(search.observations("LabV", includeEntity=False)) == ["matches"]
    assert search.observations("kubernetes", includeEntity=True) == {"matches": []}


def test_observation_fuzzy(search: Searcher) -> None:
    assert search.matches("Reactt") == []
    fuzzy = search.matches("Reactt", fuzzy=True)
    assert sorted(fuzzy) == [
        ("Alice", "Knows React and TypeScript"),
        ("Bob", "Learning React hooks"),
        ("Bob", "Prefers React to Vue"),
    ]
    # Exclusions and required terms still hold.
    assert sorted(search.matches("Reactt -typescript", fuzzy=True)) == [
        ("Bob", "Learning React hooks"),
        ("Bob", "Prefers React to Vue"),
    ]
    assert search.matches("+Reactt +berlin", fuzzy=True) == []


def test_observation_fuzzy_finds_a_short_typo(search: Searcher) -> None:
    assert search.matches("Rect") == []
    fuzzy = search.matches("Rect", fuzzy=True)
    assert len(fuzzy) >= 1
    assert all("react" in observation.lower() for _, observation in fuzzy)


def test_observations_come_back_exactly_as_stored(search: Searcher) -> None:
    # Whatever the index keeps, the text returned is the observation as written.
    assert search.matches("quagga") == [("Odd", "zebra\x1fquagga stripes")]
    assert search.matches("plain") == [("Odd", "plain")]
    assert search.nodes("quagga")["entities"] == [BY_NAME["Odd"]]
