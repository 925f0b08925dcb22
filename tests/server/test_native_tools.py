"""The native profile's nine tools, resources, prompts and instructions.

One server per module, built as `mnemodb serve` builds it but in this process, spoken to
over the SDK's in-memory streams by the MCP SDK's client, which also checks every
successful result against the tool's outputSchema.
Tests share the server, so each one works on items with names, tags and types of its
own (and the ones that count things, in a scope of their own).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from mcp_types import TextContent, TextResourceContents

from inprocess import Wire
from mnemodb.model.ids import new_ulid
from native_support import (
    INVALID_PARAMS,
    PREVIEW_CHARS,
    TOOL_NAMES,
    Native,
    iso,
    ms,
    now_ms,
    wait_past,
)
from support import sha256
from topodb_support import is_ulid

pytestmark = pytest.mark.inprocess

# Scopes of their own for the tests that count: nothing else writes there.
AUDIT_SCOPE = "01HV7N8Q3Y2J6W5X4Z9A0B1C30"
SURVEY_SCOPE = "01HV7N8Q3Y2J6W5X4Z9A0B1C31"
PAGING_SCOPE = "01HV7N8Q3Y2J6W5X4Z9A0B1C32"
MANY_SCOPE = "01HV7N8Q3Y2J6W5X4Z9A0B1C34"

# Hints as the native profile declares them: (readOnly, destructive, idempotent).
HINTS = {
    "remember": (False, False, False),
    "recall": (True, False, True),
    "get": (True, False, True),
    "update": (False, True, True),
    "forget": (False, True, True),
    "relate": (False, False, True),
    "explore": (True, False, True),
    "audit": (True, False, True),
    "survey": (True, False, True),
}


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Native]:
    db = tmp_path_factory.mktemp("native-tools") / "memory.db"
    with Native.in_process(db) as server:
        yield server
    assert "Traceback" not in server.stderr, server.stderr


def texts(items: list[dict[str, Any]]) -> list[str]:
    return [i.get("text") or i["name"] for i in items]


# -- the surface: initialize, tools/list, the default profile -----------------------------------------


@pytest.fixture(scope="module")
def raw_surface(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """initialize and tools/list as JSON, from a server started without --profile."""
    db = tmp_path_factory.mktemp("native-default") / "memory.db"
    with Wire.start(db, None) as server:
        init = server.initialize()["result"]
        tools = server.request("tools/list")["result"]["tools"]
        yield init, tools


def test_default_profile_is_native(raw_surface: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    init, tools = raw_surface
    assert init["serverInfo"]["name"] == "mnemodb"
    assert [t["name"] for t in tools] == TOOL_NAMES
    capabilities = init["capabilities"]
    assert {"tools", "resources", "prompts"} <= set(capabilities)


def test_initialize_carries_instructions(raw_surface: tuple[dict[str, Any], list[dict[str, Any]]], srv: Native) -> None:
    init, _ = raw_surface
    instructions = init["instructions"]
    assert isinstance(instructions, str) and instructions.strip()
    for tool in ("recall", "remember"):
        assert tool in instructions, tool
    assert srv.client.instructions == instructions


def test_tools_list_shapes(raw_surface: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    _, tools = raw_surface
    assert len(tools) == 9
    for tool in tools:
        name = tool["name"]
        assert isinstance(tool["description"], str) and len(tool["description"]) > 80, name
        read_only, destructive, idempotent = HINTS[name]
        annotations = tool["annotations"]
        assert annotations["readOnlyHint"] is read_only, name
        if read_only:
            # The specification gives these two a meaning only when a tool writes.
            assert "destructiveHint" not in annotations and "idempotentHint" not in annotations, name
        else:
            assert annotations["destructiveHint"] is destructive, name
            assert annotations["idempotentHint"] is idempotent, name
        assert annotations["openWorldHint"] is False, name
        inputs = tool["inputSchema"]
        assert inputs["type"] == "object" and inputs["additionalProperties"] is False, name
        assert inputs["properties"], name
        outputs = tool["outputSchema"]
        assert outputs["type"] == "object" and outputs["required"], name
        jsonschema.Draft202012Validator.check_schema(inputs)
        jsonschema.Draft202012Validator.check_schema(outputs)


def test_required_inputs(raw_surface: tuple[dict[str, Any], list[dict[str, Any]]]) -> None:
    _, tools = raw_surface
    required = {t["name"]: sorted(t["inputSchema"].get("required", [])) for t in tools}
    assert required == {
        "remember": [],
        "recall": [],
        "get": ["refs"],
        "update": ["ref"],
        "forget": [],
        "relate": [],
        "explore": [],
        "audit": [],
        "survey": [],
    }


def test_every_result_validates_against_its_output_schema(srv: Native) -> None:
    tools = {t.name: t for t in srv.run(srv.client.list_tools).tools}
    schemas = {name: tool.output_schema for name, tool in tools.items()}
    assert all(schemas.values())

    def checked(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        value = srv.call(tool, arguments)
        jsonschema.validate(value, schemas[tool])
        return value

    made = checked(
        "remember",
        {
            "memories": [{"content": "Schema check: the probe landed", "tags": ["schema"], "about": ["Schema Probe"]}],
            "entities": [{"name": "Schema Lab", "type": "org", "observations": ["builds probes"]}],
        },
    )
    memory = made["memories"][0]["id"]
    relation = checked("relate", {"add": [{"from": "Schema Probe", "to": "Schema Lab", "type": "built_by"}]})
    checked("recall", {"query": "probe", "expand": 1})
    checked("recall", {"tags": ["schema"], "full": True})
    checked("get", {"refs": [memory, "Schema Lab", relation["added"][0]["id"], "no such thing"]})
    checked("update", {"ref": memory, "add_tags": ["checked"]})
    checked("explore", {"from": "Schema Probe", "hops": 2})
    checked("explore", {"from": "Schema Probe", "to": "Schema Lab"})
    checked("audit", {"limit": 5})
    checked("audit", {"ref": memory})
    checked("survey", {})
    checked("relate", {"close": [{"id": relation["added"][0]["id"]}]})
    checked("forget", {"refs": [memory, "no such thing"]})


# -- remember ---------------------------------------------------------------------------------------------


def test_remember_creates_memories_and_entities(srv: Native) -> None:
    content = "Remember test: the staging database moved to eu-west-3"
    made = srv.call(
        "remember",
        {
            "memories": [{"content": content, "tags": ["infra"], "importance": 6, "type": "fact"}],
            "entities": [
                {
                    "name": "Staging DB",
                    "type": "service",
                    "observations": ["Postgres 16", "eu-west-3"],
                    "props": {"port": 5432, "managed": True},
                }
            ],
        },
    )
    [memory] = made["memories"]
    [entity] = made["entities"]
    assert memory == {"id": memory["id"], "hash": sha256(content), "status": "created"}
    assert entity == {"id": entity["id"], "name": "Staging DB", "status": "created"}
    assert is_ulid(memory["id"]) and is_ulid(entity["id"])

    stored = srv.get(memory["id"])
    assert stored["kind"] == "memory" and stored["text"] == content
    assert (stored["tags"], stored["importance"], stored["type"]) == (["infra"], 6, "fact")
    named = srv.get("Staging DB")
    assert (named["kind"], named["type"], named["observations"]) == ("entity", "service", ["Postgres 16", "eu-west-3"])
    assert named["props"] == {"port": 5432, "managed": True}


def test_remember_again_is_existing_or_updated(srv: Native) -> None:
    content = "Status test: the team standup is at 9:30"
    first = srv.memory(content, tags=["meeting"])
    assert first["status"] == "created"
    again = srv.memory(content, tags=["meeting"])
    assert again == {"id": first["id"], "hash": first["hash"], "status": "existing"}
    merged = srv.memory(content, tags=["meeting", "daily"])
    assert merged == {"id": first["id"], "hash": first["hash"], "status": "updated", "tags_added": ["daily"]}
    assert srv.get(first["id"])["tags"] == ["daily", "meeting"]

    entity = srv.entity("Status Person", observations=["likes tea"])
    assert entity["status"] == "created"
    same = srv.entity("Status Person", observations=["likes tea"])
    assert same == {"id": entity["id"], "name": "Status Person", "status": "existing"}
    more = srv.entity("Status Person", observations=["likes tea", "plays chess"])
    assert more == {
        "id": entity["id"],
        "name": "Status Person",
        "status": "updated",
        "observations_added": ["plays chess"],
    }
    assert srv.get("Status Person")["observations"] == ["likes tea", "plays chess"]


def test_remember_about_links_and_creates_entities(srv: Native) -> None:
    srv.entity("About Known", type="person")
    made = srv.memory("About test: Known and Unknown met in Lisbon", about=["About Known", "About Unknown"])
    assert made["about"] == ["About Known", "About Unknown"]
    assert made["created_entities"] == ["About Unknown"]

    created = srv.get("About Unknown")
    assert created["kind"] == "entity" and "type" not in created
    links = srv.get(made["id"])["relations"]
    assert sorted((r["type"], r["from"], r["to"]) for r in links) == [
        ("about", made["id"], "About Known"),
        ("about", made["id"], "About Unknown"),
    ]
    # Linking again to the same entities adds no relation and creates nothing.
    again = srv.memory("About test: Known and Unknown met in Lisbon", about=["About Known"])
    assert again["status"] == "existing" and "created_entities" not in again
    assert len(srv.get(made["id"])["relations"]) == 2


def test_remember_supersedes_an_older_memory(srv: Native) -> None:
    old = srv.memory("Supersede test: the office is in Paris", tags=["office"])
    new = srv.memory("Supersede test: the office is in Lyon", tags=["office"], supersedes=old["id"])
    assert new["supersedes"] == old["id"]
    assert new["status"] == "created"

    assert srv.ids("recall", {"query": "supersede office"}) == [new["id"]]
    assert srv.get(old["id"])["superseded_by"] == [new["id"]]
    assert "superseded_by" not in srv.get(new["id"])
    # By hash works too, and it is the memory's id that the result names.
    newer = srv.memory("Supersede test: the office is in Nantes", supersedes=new["hash"])
    assert newer["supersedes"] == new["id"]


def test_remember_item_by_item(srv: Native) -> None:
    old = srv.memory("Item by item test: old")
    result = srv.call(
        "remember",
        {
            "all_or_nothing": False,
            "memories": [
                {"content": "Item by item test: fine"},
                {"content": "Item by item test: bad", "about": ["Item Ghost"], "supersedes": "Item Nobody"},
                {"content": "Item by item test: bad tag", "tags": ["two words"]},
                {"content": "Item by item test: new", "supersedes": old["id"]},
            ],
            "entities": [{"name": "Item By Item Entity"}],
        },
    )
    fine, bad, bad_tag, new = result["memories"]
    assert fine["status"] == "created" and new["supersedes"] == old["id"]
    assert bad["status"] == "error" and "nothing found for 'Item Nobody'" in bad["error"]
    assert bad_tag["status"] == "error" and "whitespace" in bad_tag["error"]
    assert [e["status"] for e in result["entities"]] == ["created"]
    # A refused memory leaves nothing behind, not even the entity its `about` would have made.
    gone = srv.call("get", {"refs": [sha256("Item by item test: bad"), "Item Ghost"]})["items"]
    assert all(i.get("error") == "not found" for i in gone)
    assert srv.get(fine["id"])["text"] == "Item by item test: fine"


def test_remember_about_finds_a_name_that_differs_in_case(srv: Native) -> None:
    entity = srv.entity("Case Insensitive Corp")
    made = srv.memory("Case test: the corp moved", about=["case insensitive CORP"])
    assert made["about"] == ["Case Insensitive Corp"] and "created_entities" not in made
    assert [r["to"] for r in srv.get(made["id"])["relations"]] == ["Case Insensitive Corp"]
    assert srv.get("Case Insensitive Corp")["id"] == entity["id"]


def test_remember_batch_keeps_order(srv: Native) -> None:
    contents = [f"Batch test item {n}" for n in ("one", "two", "three")]
    made = srv.call(
        "remember",
        {
            "memories": [{"content": c} for c in contents],
            "entities": [{"name": "Batch B"}, {"name": "Batch A"}],
        },
    )
    assert [m["hash"] for m in made["memories"]] == [sha256(c) for c in contents]
    assert [e["name"] for e in made["entities"]] == ["Batch B", "Batch A"]
    assert len({m["id"] for m in made["memories"]}) == 3


# -- recall -----------------------------------------------------------------------------------------------


def test_recall_ranks_the_best_match_first(srv: Native) -> None:
    ferry = srv.memory("The Rottnest ferry leaves at noon")
    island = srv.memory("Quokkas live on Rottnest island")
    both = srv.memory("A quokka photo went viral because quokkas smile")
    found = srv.call("recall", {"query": "quokka smile"})["items"]
    ids = [i["id"] for i in found]
    assert ids[0] == both["id"]
    assert island["id"] in ids and ferry["id"] not in ids
    scores = [i["score"] for i in found]
    assert all(isinstance(s, float | int) for s in scores)
    assert scores == sorted(scores, reverse=True)


def test_recall_without_query_lists_newest_first(srv: Native) -> None:
    made = []
    for n in range(3):
        made.append(srv.memory(f"Listing test memory {n}", tags=["listing-only"]))
        wait_past(now_ms())
    found = srv.call("recall", {"tags": ["listing-only"]})
    assert [i["id"] for i in found["items"]] == [m["id"] for m in reversed(made)]
    assert all("score" not in i for i in found["items"])
    assert found["next_cursor"] is None
    # An empty or blank query is a listing too.
    for blank in ("", "   "):
        assert srv.ids("recall", {"query": blank, "tags": ["listing-only"]}) == [m["id"] for m in reversed(made)]


def test_recall_filters_by_tags_types_and_kinds(srv: Native) -> None:
    both = srv.memory("Filter test one", tags=["flt-x", "flt-y"], type="flt-kind-a")
    only_x = srv.memory("Filter test two", tags=["flt-x"], type="flt-kind-b")
    srv.memory("Filter test three", tags=["flt-y"])
    entity = srv.entity("Filter Entity", type="flt-kind-a")

    assert set(srv.ids("recall", {"tags": ["flt-x"]})) == {both["id"], only_x["id"]}
    # Every tag must be there.
    assert srv.ids("recall", {"tags": ["flt-x", "flt-y"]}) == [both["id"]]
    # Any of the types, for memories and entities alike.
    assert set(srv.ids("recall", {"types": ["flt-kind-a"]})) == {both["id"], entity["id"]}
    assert set(srv.ids("recall", {"types": ["flt-kind-a", "flt-kind-b"]})) == {both["id"], only_x["id"], entity["id"]}
    assert srv.ids("recall", {"types": ["flt-kind-a"], "kinds": ["memory"]}) == [both["id"]]
    assert srv.ids("recall", {"types": ["flt-kind-a"], "kinds": ["entity"]}) == [entity["id"]]
    # Tags belong to memories: a tag filter leaves entities out.
    assert srv.ids("recall", {"tags": ["flt-x"], "kinds": ["entity"]}) == []


def test_recall_filters_by_importance_about_and_props(srv: Native) -> None:
    low = srv.memory("Importance test low", tags=["imp-test"], importance=2)
    mid = srv.memory("Importance test mid", tags=["imp-test"], importance=5)
    high = srv.memory("Importance test high", tags=["imp-test"], importance=9)
    assert set(srv.ids("recall", {"tags": ["imp-test"], "min_importance": 5})) == {mid["id"], high["id"]}
    assert srv.ids("recall", {"tags": ["imp-test"], "min_importance": 10}) == []
    assert low["id"] in srv.ids("recall", {"tags": ["imp-test"], "min_importance": 0})

    linked = srv.memory("About filter test: Rita ships the release", about=["About Filter Rita"])
    srv.memory("About filter test: Sam ships nothing", about=["About Filter Sam"])
    assert srv.ids("recall", {"about": ["About Filter Rita"]}) == [linked["id"]]
    assert srv.ids("recall", {"query": "ships", "about": ["About Filter Rita"]}) == [linked["id"]]

    apollo = srv.memory("Props test apollo", props={"proj": "apollo", "n": 3, "ok": True})
    gemini = srv.memory("Props test gemini", props={"proj": "gemini", "n": 3, "ok": False})
    assert srv.ids("recall", {"props": {"proj": "apollo"}}) == [apollo["id"]]
    assert set(srv.ids("recall", {"props": {"n": 3}})) == {apollo["id"], gemini["id"]}
    assert srv.ids("recall", {"props": {"ok": False}}) == [gemini["id"]]
    assert srv.ids("recall", {"props": {"proj": "apollo", "ok": False}}) == []


def test_recall_filters_by_time(srv: Native) -> None:
    made = []
    for n in range(3):
        made.append(srv.memory(f"Time filter test {n}", tags=["time-filter"]))
        wait_past(now_ms())
    first, second, third = (m["id"] for m in made)
    created = {i["id"]: i["created"] for i in srv.call("get", {"refs": [first, second, third]})["items"]}
    assert ms(created[first]) < ms(created[second]) < ms(created[third])

    def ids(**window: Any) -> list[str]:
        return srv.ids("recall", {"tags": ["time-filter"], **window})

    # ISO 8601 times, as the server writes them.
    assert ids(since=created[second]) == [third, second]
    assert ids(until=created[second]) == [first]
    assert ids(since=created[second], until=created[third]) == [second]
    # Milliseconds since 1970.
    assert ids(since=ms(created[second])) == [third, second]
    assert ids(until=ms(created[third])) == [second, first]
    # Dates and offsets.
    assert ids(since="2000-01-01") == [third, second, first]
    assert ids(until="2000-01-01") == []
    later = iso(ms(created[third]) + 1).replace("Z", "+00:00")
    assert ids(until=later) == [third, second, first]


def test_recall_superseded_only_when_asked(srv: Native) -> None:
    old = srv.memory("Superseded recall test: the cat is called Tom", tags=["cat-name"])
    new = srv.memory("Superseded recall test: the cat is called Felix", tags=["cat-name"], supersedes=old["id"])
    assert srv.ids("recall", {"tags": ["cat-name"]}) == [new["id"]]
    assert srv.ids("recall", {"query": "cat called"}) == [new["id"]]
    found = srv.call("recall", {"tags": ["cat-name"], "include_superseded": True})["items"]
    by_id = {i["id"]: i for i in found}
    assert set(by_id) == {old["id"], new["id"]}
    assert by_id[old["id"]]["superseded_by"] == [new["id"]]
    assert "superseded_by" not in by_id[new["id"]]


def test_recall_kinds(srv: Native) -> None:
    memory = srv.memory("Kinds test: zebrafish regenerate fins")
    entity = srv.entity("Zebrafish Lab", observations=["studies zebrafish"])
    assert set(srv.ids("recall", {"query": "zebrafish"})) >= {memory["id"], entity["id"]}
    assert srv.ids("recall", {"query": "zebrafish", "kinds": ["memory"]}) == [memory["id"]]
    assert srv.ids("recall", {"query": "zebrafish", "kinds": ["entity"]}) == [entity["id"]]


def test_recall_finds_entities_by_the_words_of_a_question(srv: Native) -> None:
    """Models ask questions: their words find entities as they find memories (stemmed, no
    stop words, no one-letter words), not as substrings, where "I" matched every name with
    an "i" and "tom" matched "customer"."""
    tom = srv.entity("Tom Qorvath", type="person", observations=["reach him by phone"])
    maria = srv.entity("maria qorvathi", type="person", observations=["likes espresso"])
    desk = srv.entity("Customer Qorvathcare", type="team", observations=["customer support desk"])
    asked = srv.ids("recall", {"query": "how should I contact Tom Qorvath", "kinds": ["entity"]})
    assert asked[0] == tom["id"]
    assert maria["id"] not in asked and desk["id"] not in asked
    assert srv.ids("recall", {"query": "phones reaching", "kinds": ["entity"]}) == [tom["id"]]  # stemmed
    # The query language still matches substrings when asked for.
    named = srv.ids("recall", {"query": "name:qorvath", "kinds": ["entity"]})
    assert set(named) == {tom["id"], maria["id"], desk["id"]}
    # A query whose words no entity holds falls back to substrings.
    assert srv.ids("recall", {"query": "qorvathc", "kinds": ["entity"]}) == [desk["id"]]
    # A name written as one word is found by the words it is made of, after the entities
    # that hold the words themselves.
    glued = srv.entity("QorvathAuthService", type="component")
    found = srv.ids("recall", {"query": "the qorvath auth service", "kinds": ["entity"], "limit": 50})
    assert glued["id"] in found and found.index(tom["id"]) < found.index(glued["id"])


def test_recall_fuzzy_counts_swapped_letters_as_one_typo(srv: Native) -> None:
    entity = srv.entity("Xylvarn Atlas", type="map")
    assert srv.ids("recall", {"query": "Xylvarn Atals", "kinds": ["entity"]}) == [entity["id"]]  # a word matches
    for typo in ("Xylvran", "Xlyvarn"):
        assert srv.ids("recall", {"query": typo, "kinds": ["entity"]}) == []
        assert srv.ids("recall", {"query": typo, "kinds": ["entity"], "fuzzy": True}) == [entity["id"]], typo


def test_recall_fuzzy_tolerates_typos(srv: Native) -> None:
    entity = srv.entity("Zanzibarian Spice Guild", type="org")
    assert srv.ids("recall", {"query": "Zanzibarain", "kinds": ["entity"]}) == []
    fuzzy = srv.call("recall", {"query": "Zanzibarain", "kinds": ["entity"], "fuzzy": True})["items"]
    assert [i["id"] for i in fuzzy] == [entity["id"]]
    assert fuzzy[0]["score"] > 0


def test_recall_pattern_finds_entities_by_observation(srv: Native) -> None:
    srv.entity(
        "Pattern Service",
        type="pattern-kind",
        observations=["handles billing", "TODO: retry on timeout", "Quirk: caches forever"],
    )
    srv.entity("Pattern Other", type="pattern-kind", observations=["nothing to see here"])
    # A preset, and the observation it matched comes first in the preview.
    found = srv.call("recall", {"pattern": "techdebt", "types": ["pattern-kind"]})["items"]
    assert [i["name"] for i in found] == ["Pattern Service"]
    assert found[0]["observations"][0] == "TODO: retry on timeout"
    # A regular expression.
    found = srv.call("recall", {"pattern": r"cach(e|ing)s? forever", "types": ["pattern-kind"]})["items"]
    assert [i["name"] for i in found] == ["Pattern Service"]
    assert found[0]["observations"][0] == "Quirk: caches forever"
    assert srv.call("recall", {"pattern": "no such observation text"})["items"] == []
    # A query puts the observations it matched first too; full keeps their order.
    [hit] = srv.call("recall", {"query": "caches forever", "types": ["pattern-kind"]})["items"]
    assert hit["observations"][0] == "Quirk: caches forever"
    [whole] = srv.call("recall", {"query": "caches forever", "types": ["pattern-kind"], "full": True})["items"]
    assert whole["observations"][0] == "handles billing"


def test_recall_by_vector_after_setting_embeddings(srv: Native) -> None:
    memory = srv.memory("Vector test: a memory near the x axis")
    srv.entity("Vector Entity")
    assert srv.call("update", {"ref": memory["id"], "embedding": {"model": "vec-test", "values": [1, 0, 0]}})[
        "changed"
    ] == ["embedding"]
    srv.call("update", {"ref": "Vector Entity", "embedding": {"model": "vec-test", "values": [0, 1, 0]}})
    found = srv.call("recall", {"vector": {"model": "vec-test", "values": [1, 0.1, 0]}})["items"]
    assert [texts([i])[0] for i in found] == ["Vector test: a memory near the x axis", "Vector Entity"]
    assert found[0]["score"] > found[1]["score"]
    near_y = srv.call("recall", {"vector": {"model": "vec-test", "values": [0, 1, 0]}, "kinds": ["entity"]})
    assert [i["name"] for i in near_y["items"]] == ["Vector Entity"]
    # Another model's vectors are not compared with these.
    assert srv.call("recall", {"vector": {"model": "vec-other", "values": [1, 0, 0]}})["items"] == []


def test_recall_expand_returns_related_items_and_relations(srv: Native) -> None:
    memory = srv.memory("Expand test: the Borealis project uses Kafka", about=["Expand Borealis"])
    srv.entity("Expand Kafka")
    srv.relate("Expand Borealis", "Expand Kafka", "uses")
    plain = srv.call("recall", {"query": "Borealis Kafka", "kinds": ["memory"]})
    assert [i["id"] for i in plain["items"]] == [memory["id"]]
    assert "related" not in plain and "relations" not in plain

    one = srv.call("recall", {"query": "Borealis Kafka", "kinds": ["memory"], "expand": 1})
    assert [i["id"] for i in one["items"]] == [memory["id"]]
    assert [r["name"] for r in one["related"]] == ["Expand Borealis"]
    assert [(r["type"], r["from"], r["to"]) for r in one["relations"]] == [("about", memory["id"], "Expand Borealis")]

    two = srv.call("recall", {"query": "Borealis Kafka", "kinds": ["memory"], "expand": 2})
    assert {r["name"] for r in two["related"]} == {"Expand Borealis", "Expand Kafka"}
    assert {(r["type"], r["from"], r["to"]) for r in two["relations"]} == {
        ("about", memory["id"], "Expand Borealis"),
        ("uses", "Expand Borealis", "Expand Kafka"),
    }


def test_recall_previews_and_full(srv: Native) -> None:
    long_text = "Preview test: " + " ".join(f"word{n}" for n in range(80))
    assert len(long_text) > PREVIEW_CHARS
    memory = srv.memory(long_text, tags=["preview-test"], summary="a long memory", props={"k": "v"})
    [preview] = srv.call("recall", {"tags": ["preview-test"]})["items"]
    assert preview["truncated"] is True
    assert len(preview["text"]) <= PREVIEW_CHARS and preview["text"].endswith("…")
    assert long_text.startswith(preview["text"][:-1])
    assert "hash" not in preview and "props" not in preview and "summary" not in preview

    [whole] = srv.call("recall", {"tags": ["preview-test"], "full": True})["items"]
    assert whole["text"] == long_text and "truncated" not in whole
    assert (whole["hash"], whole["summary"], whole["props"]) == (memory["hash"], "a long memory", {"k": "v"})

    short = srv.memory("Preview test: short", tags=["preview-short"])
    [item] = srv.call("recall", {"tags": ["preview-short"]})["items"]
    assert item["text"] == "Preview test: short" and "truncated" not in item
    assert item["id"] == short["id"]

    observations = [f"Preview observation {n}" for n in range(7)] + ["Preview long observation " + "x" * 300]
    srv.entity("Preview Entity", type="preview-kind", observations=observations)
    [entity] = srv.call("recall", {"types": ["preview-kind"]})["items"]
    assert entity["observations"] == observations[:5]
    assert entity["observation_count"] == 8
    [full_entity] = srv.call("recall", {"types": ["preview-kind"], "full": True})["items"]
    assert full_entity["observations"] == observations and "observation_count" not in full_entity


def page_through(srv: Native, arguments: dict[str, Any]) -> list[list[str]]:
    """Every page's ids, following next_cursor until it is null."""
    pages: list[list[str]] = []
    cursor = None
    while True:
        page = srv.call("recall", {**arguments, **({"cursor": cursor} if cursor else {})})
        pages.append([i["id"] for i in page["items"]])
        cursor = page["next_cursor"]
        if cursor is None:
            return pages
        assert isinstance(cursor, str) and cursor
        assert len(pages) < 50, "next_cursor never ran out"


@pytest.fixture(scope="module")
def paged(srv: Native) -> list[str]:
    """25 memories with long texts in a scope of their own: their ids, newest first."""
    made = srv.call(
        "remember",
        {
            "scope": PAGING_SCOPE,
            "memories": [
                {"content": f"Paging test {n:02d} " + "lorem ipsum " * 30, "tags": ["pager"]} for n in range(25)
            ],
        },
    )
    ids = [m["id"] for m in made["memories"]]
    listed = srv.ids("recall", {"scopes": [PAGING_SCOPE], "limit": 100})
    assert sorted(listed) == sorted(ids)
    return listed


def test_recall_pages_with_cursor(srv: Native, paged: list[str]) -> None:
    pages = page_through(srv, {"scopes": [PAGING_SCOPE], "tags": ["pager"], "limit": 10})
    assert [len(p) for p in pages] == [10, 10, 5]
    flat = [i for p in pages for i in p]
    assert flat == paged
    assert len(set(flat)) == 25


def test_recall_query_pages_with_cursor(srv: Native, paged: list[str]) -> None:
    pages = page_through(srv, {"scopes": [PAGING_SCOPE], "query": "lorem", "limit": 7})
    flat = [i for p in pages for i in p]
    assert sorted(flat) == sorted(paged)
    assert len(set(flat)) == len(flat)


def test_recall_query_pages_through_many_matches(srv: Native) -> None:
    made = srv.call(
        "remember", {"scope": MANY_SCOPE, "memories": [{"content": f"Harbour note {n}"} for n in range(40)]}
    )["memories"]
    pages = page_through(srv, {"scopes": [MANY_SCOPE], "query": "harbour", "limit": 10})
    flat = [i for p in pages for i in p]
    assert len(flat) == len(set(flat))
    assert set(flat) == {m["id"] for m in made}


def test_recall_max_chars_caps_a_page_and_the_cursor_continues(srv: Native, paged: list[str]) -> None:
    arguments = {"scopes": [PAGING_SCOPE], "tags": ["pager"], "limit": 25, "max_chars": 1200}
    first = srv.call("recall", arguments)
    assert 1 <= len(first["items"]) < 25
    assert first["next_cursor"] is not None
    used = sum(len(json.dumps(i, ensure_ascii=False, separators=(",", ":"))) + 1 for i in first["items"])
    assert used <= 1200
    pages = page_through(srv, arguments)
    flat = [i for p in pages for i in p]
    assert flat == paged
    # Always at least one item, even when one alone is over the cap.
    capped = srv.call("recall", {**arguments, "full": True, "max_chars": 500})
    [huge] = capped["items"]
    assert len(json.dumps(huge)) > 500 and capped["next_cursor"] is not None


# -- get --------------------------------------------------------------------------------------------------


def test_get_by_every_kind_of_reference(srv: Native) -> None:
    memory = srv.memory("Get test: the API key rotates monthly", tags=["security"], props={"owner": "ops"})
    srv.entity("Get Entity", type="service", observations=["rotates keys"])
    relation = srv.relate(memory["id"], "Get Entity", "concerns")
    refs = [memory["id"], memory["id"].lower(), memory["hash"], memory["hash"].upper(), "Get Entity", relation["id"]]
    items = srv.call("get", {"refs": refs})["items"]
    assert [i["id"] for i in items] == [memory["id"]] * 4 + [items[4]["id"], relation["id"]]
    full = items[0]
    assert full["kind"] == "memory"
    assert full["text"] == "Get test: the API key rotates monthly"
    assert (full["hash"], full["tags"], full["props"]) == (memory["hash"], ["security"], {"owner": "ops"})
    assert is_ulid(items[4]["id"]) and items[4]["kind"] == "entity" and items[4]["name"] == "Get Entity"
    assert items[5] == {
        "kind": "relation",
        "id": relation["id"],
        "type": "concerns",
        "from": memory["id"],
        "to": "Get Entity",
        "valid_from": relation["valid_from"],
    }
    # One reference may be given alone.
    assert srv.call("get", {"refs": "Get Entity"})["items"][0]["name"] == "Get Entity"


def test_get_unknown_reference_is_an_entry_not_an_error(srv: Native) -> None:
    srv.entity("Get Known")
    items = srv.call("get", {"refs": ["Get Nobody", "Get Known", "01ARZ3NDEKTSV4RRFFQ69G5FAV", "f" * 64]})["items"]
    assert items[0] == {"ref": "Get Nobody", "error": "not found"}
    assert items[1]["name"] == "Get Known"
    assert items[2] == {"ref": "01ARZ3NDEKTSV4RRFFQ69G5FAV", "error": "not found"}
    assert items[3] == {"ref": "f" * 64, "error": "not found"}


def test_get_lists_relations_and_closed_ones_on_request(srv: Native) -> None:
    srv.entity("Get Rel A")
    srv.entity("Get Rel B")
    srv.entity("Get Rel C")
    open_one = srv.relate("Get Rel A", "Get Rel B", "knows")
    closed_one = srv.relate("Get Rel A", "Get Rel C", "knew")
    srv.call("relate", {"close": [{"id": closed_one["id"]}]})
    current = srv.get("Get Rel A")["relations"]
    assert [r["id"] for r in current] == [open_one["id"]]
    assert current[0] == {
        "id": open_one["id"],
        "type": "knows",
        "from": "Get Rel A",
        "to": "Get Rel B",
        "valid_from": open_one["valid_from"],
    }
    every = srv.get("Get Rel A", include_closed=True)["relations"]
    assert {r["id"] for r in every} == {open_one["id"], closed_one["id"]}
    [ended] = [r for r in every if r["id"] == closed_one["id"]]
    assert ms(ended["valid_to"]) >= ms(ended["valid_from"])
    # The other end sees the relation too, as incoming.
    assert [(r["from"], r["to"]) for r in srv.get("Get Rel B")["relations"]] == [("Get Rel A", "Get Rel B")]


def wait_for_accesses(srv: Native, ref: str, minimum: int) -> dict[str, Any]:
    """`get` the item until its access count (kept in the background) reaches `minimum`."""
    deadline = time.monotonic() + 10
    while True:
        item = srv.get(ref)
        if item.get("access_count", 0) >= minimum or time.monotonic() > deadline:
            return item
        time.sleep(0.05)


def test_get_as_of(srv: Native) -> None:
    srv.entity("GetAsOf Old", type="city")
    srv.entity("GetAsOf Country")
    relation = srv.relate("GetAsOf Old", "GetAsOf Country", "capital_of")
    wait_past(ms(relation["valid_from"]))
    middle = now_ms()
    wait_past(middle)
    srv.call("update", {"ref": "GetAsOf Old", "name": "GetAsOf New", "type": "town"})
    srv.call("relate", {"close": [{"id": relation["id"]}]})

    now = srv.get("GetAsOf New")
    assert (now["name"], now["type"], now["relations"]) == ("GetAsOf New", "town", [])
    for when in (middle, iso(middle)):
        then = srv.get("GetAsOf New", as_of=when)
        assert (then["id"], then["name"], then["type"]) == (now["id"], "GetAsOf Old", "city")
        assert [r["id"] for r in then["relations"]] == [relation["id"]]
    assert srv.get("GetAsOf New", as_of="2001-01-01") == {"ref": "GetAsOf New", "error": "not found"}


def test_as_of_replays_texts_tags_and_observations(srv: Native) -> None:
    srv.entity("AsOf Replay", observations=["early", "dropped later"])
    memory = srv.memory("AsOf replay memory, first text", tags=["asof-v1"], about=["AsOf Replay"])
    wait_past(ms(srv.get(memory["id"])["created"]))
    middle = now_ms()
    wait_past(middle)
    srv.call("update", {"ref": "AsOf Replay", "add_observations": ["late"], "remove_observations": ["dropped later"]})
    srv.call(
        "update",
        {"ref": memory["id"], "content": "AsOf replay memory, second text", "add_tags": ["asof-v2"], "importance": 5},
    )
    assert srv.get("AsOf Replay")["observations"] == ["early", "late"]

    entity = srv.get("AsOf Replay", as_of=middle)
    assert entity["observations"] == ["early", "dropped later"]
    then = srv.get(memory["id"], as_of=middle)
    assert (then["text"], then["tags"]) == ("AsOf replay memory, first text", ["asof-v1"])
    assert "importance" not in then
    explored = srv.call("explore", {"from": "AsOf Replay", "as_of": middle, "full": True})["items"]
    assert [(i.get("text") or i["observations"]) for i in explored] == [
        ["early", "dropped later"],
        "AsOf replay memory, first text",
    ]


def test_get_counts_accesses(srv: Native) -> None:
    memory = srv.memory("Access test: read me twice")
    first = srv.get(memory["id"])
    assert "access_count" not in first and "last_accessed" not in first
    item = wait_for_accesses(srv, memory["id"], 2)
    assert item["access_count"] >= 2
    assert ms(item["last_accessed"]) >= ms(item["created"])
    srv.entity("Access Entity")
    assert "access_count" not in srv.get("Access Entity")
    assert wait_for_accesses(srv, "Access Entity", 1)["access_count"] >= 1
    # recall and explore are reads too.
    srv.memory("Access test: found by recall", tags=["access-recall"])
    [found] = srv.ids("recall", {"tags": ["access-recall"]})
    assert wait_for_accesses(srv, found, 2)["access_count"] >= 2


def test_relate_does_not_count_as_an_access(srv: Native) -> None:
    srv.entity("Access Relate A")
    srv.entity("Access Relate B")
    srv.entity("Access Relate Control")
    srv.relate("Access Relate A", "Access Relate B", "knows")
    # Counts are written in batches, in order: once a later read of another item shows,
    # anything relate counted has been written too.
    assert wait_for_accesses(srv, "Access Relate Control", 1)["access_count"] >= 1
    assert "access_count" not in srv.get("Access Relate A")


def test_get_full_shape_shows_updated_and_superseded_by(srv: Native) -> None:
    old = srv.memory("Get shape test: v1")
    new = srv.memory("Get shape test: v2", supersedes=old["id"])
    item = srv.get(old["id"])
    assert item["superseded_by"] == [new["id"]]
    assert {r["type"] for r in item["relations"]} == {"supersedes"}
    assert "updated" not in item
    wait_past(ms(item["created"]))
    srv.call("update", {"ref": old["id"], "importance": 1})
    assert ms(srv.get(old["id"])["updated"]) > ms(item["created"])


# -- update ------------------------------------------------------------------------------------------------


def test_update_memory_fields(srv: Native) -> None:
    memory = srv.memory("Update test: draft text", tags=["a-tag", "b-tag"], importance=1)
    changed = srv.call(
        "update",
        {
            "ref": memory["id"],
            "content": "Update test: final text",
            "summary": "the final text",
            "importance": 8,
            "type": "decision",
            "add_tags": ["c-tag"],
            "remove_tags": ["a-tag"],
        },
    )
    assert changed["changed"] == ["content", "importance", "summary", "tags", "type"]
    item = changed["item"]
    assert item["id"] == memory["id"]
    assert (item["text"], item["summary"], item["importance"], item["type"]) == (
        "Update test: final text",
        "the final text",
        8,
        "decision",
    )
    assert item["tags"] == ["b-tag", "c-tag"]
    assert item["hash"] == sha256("Update test: final text")
    # The new hash names it; the old one no longer does.
    assert srv.get(item["hash"])["id"] == memory["id"]
    assert srv.get(memory["hash"]) == {"ref": memory["hash"], "error": "not found"}

    replaced = srv.call("update", {"ref": memory["id"], "tags": ["only-tag"], "summary": ""})
    assert replaced["changed"] == ["summary", "tags"]
    assert replaced["item"]["tags"] == ["only-tag"] and "summary" not in replaced["item"]
    # Changing nothing real is not an error; nothing is listed as changed.
    assert srv.call("update", {"ref": memory["id"], "importance": 8})["changed"] == []


def test_update_entity_fields(srv: Native) -> None:
    srv.entity("Update Ent", type="person", observations=["o1", "o2"])
    srv.relate("Update Ent", srv.entity("Update Org")["name"], "works_at")
    result = srv.call(
        "update",
        {
            "ref": "Update Ent",
            "name": "Update Ent Renamed",
            "type": "engineer",
            "add_observations": ["o3"],
            "remove_observations": ["o1"],
        },
    )
    assert result["changed"] == ["name", "observations", "type"]
    item = result["item"]
    assert (item["name"], item["type"], item["observations"]) == ("Update Ent Renamed", "engineer", ["o2", "o3"])
    assert srv.get("Update Ent") == {"ref": "Update Ent", "error": "not found"}
    renamed = srv.get("Update Ent Renamed")
    assert renamed["id"] == item["id"]
    # Relations stay with the item, and show its new name.
    assert [(r["type"], r["from"], r["to"]) for r in renamed["relations"]] == [
        ("works_at", "Update Ent Renamed", "Update Org")
    ]


def test_update_props_set_and_remove(srv: Native) -> None:
    memory = srv.memory("Props update test", props={"keep": 1, "drop": "x"})
    result = srv.call("update", {"ref": memory["id"], "props": {"drop": None, "new": True, "keep": 2.5}})
    assert result["changed"] == ["props"]
    assert result["item"]["props"] == {"keep": 2.5, "new": True}
    srv.entity("Props Entity")
    set_on_entity = srv.call("update", {"ref": "Props Entity", "props": {"born": 1815}})
    assert (set_on_entity["changed"], set_on_entity["item"]["props"]) == (["props"], {"born": 1815})
    removed = srv.call("update", {"ref": "Props Entity", "props": {"born": None}})
    assert removed["changed"] == ["props"] and "props" not in removed["item"]


# -- forget ------------------------------------------------------------------------------------------------


def test_forget_reports_each_reference(srv: Native) -> None:
    memory = srv.memory("Forget test memory")
    by_hash = srv.memory("Forget test by hash")
    entity = srv.entity("Forget Entity")
    srv.entity("Forget Other")
    relation = srv.relate("Forget Other", memory["id"], "noted")
    results = srv.call(
        "forget", {"refs": [memory["id"], by_hash["hash"], "Forget Entity", relation["id"], "Forget Nothing"]}
    )["results"]
    assert results[:3] == [
        {"ref": memory["id"], "forgotten": True, "kind": "memory", "id": memory["id"]},
        {"ref": by_hash["hash"], "forgotten": True, "kind": "memory", "id": by_hash["id"]},
        {"ref": "Forget Entity", "forgotten": True, "kind": "entity", "id": entity["id"]},
    ]
    assert results[3]["forgotten"] is False  # the relation went with the memory
    assert results[4]["ref"] == "Forget Nothing" and results[4]["forgotten"] is False
    assert "not found" in results[4]["reason"]
    gone = srv.call("get", {"refs": [memory["id"], by_hash["id"], entity["id"], relation["id"]]})["items"]
    assert all(i.get("error") == "not found" for i in gone)
    # Forgetting again is harmless.
    assert srv.call("forget", {"refs": memory["id"]})["results"][0]["forgotten"] is False


def test_forget_an_entity_takes_its_relations(srv: Native) -> None:
    srv.entity("Forget Hub")
    srv.entity("Forget Spoke")
    memory = srv.memory("Forget relations test", about=["Forget Hub"])
    edge = srv.relate("Forget Hub", "Forget Spoke", "links")
    [result] = srv.call("forget", {"refs": ["Forget Hub"]})["results"]
    assert result["forgotten"] is True and result["kind"] == "entity"
    assert srv.get(edge["id"]) == {"ref": edge["id"], "error": "not found"}
    assert srv.get("Forget Spoke", include_closed=True)["relations"] == []
    assert srv.get(memory["id"], include_closed=True)["relations"] == []
    assert srv.call("explore", {"from": "Forget Spoke", "include_closed": True})["relations"] == []


def test_forget_relations_by_their_ends(srv: Native) -> None:
    srv.entity("Forget Ends A")
    srv.entity("Forget Ends B")
    edge = srv.relate("Forget Ends A", "Forget Ends B", "wrongly_linked")
    kept = srv.relate("Forget Ends A", "Forget Ends B", "rightly_linked")
    results = srv.call(
        "forget",
        {
            "relations": [
                {"from": "Forget Ends A", "type": "wrongly_linked", "to": "Forget Ends B"},
                {"from": "Forget Ends B", "type": "wrongly_linked", "to": "Forget Ends A"},
            ]
        },
    )["results"]
    assert results[0] == {
        "ref": "Forget Ends A|wrongly_linked|Forget Ends B",
        "forgotten": True,
        "kind": "relation",
        "id": edge["id"],
    }
    assert results[1]["forgotten"] is False
    assert [r["id"] for r in srv.get("Forget Ends A", include_closed=True)["relations"]] == [kept["id"]]


def test_forget_takes_the_text_out_of_the_change_log(srv: Native) -> None:
    start = srv.seq() + 1
    memory = srv.memory("Forget redaction test: a private detail", tags=["private-tag"], props={"k": "private prop"})
    srv.call("update", {"ref": memory["id"], "add_tags": ["more-private"]})
    assert "private detail" in json.dumps(srv.call("audit", {"since": start}))
    srv.call("forget", {"refs": memory["id"]})
    log = srv.call("audit", {"since": start})["changes"]
    assert [c["op"] for c in log] == ["create_node", "update_node", "remove_node"]
    assert all(c["target"] == memory["id"] for c in log)
    assert "private" not in json.dumps(log)
    assert all(c["data"].get("redacted") is True for c in log[:2])


def test_forget_marks_a_redacted_vector(srv: Native) -> None:
    start = srv.seq() + 1
    memory = srv.memory("Forget redaction test: with a vector")
    srv.call("update", {"ref": memory["id"], "embedding": {"model": "redact-model", "values": [1.0, 2.0, 3.0]}})
    srv.call("forget", {"refs": memory["id"]})
    [vector] = [c for c in srv.call("audit", {"since": start})["changes"] if c["op"] == "set_embedding"]
    assert vector["data"].get("redacted") is True


def test_forget_a_relation_only(srv: Native) -> None:
    srv.entity("Forget Rel A")
    srv.entity("Forget Rel B")
    edge = srv.relate("Forget Rel A", "Forget Rel B", "mistake")
    [result] = srv.call("forget", {"refs": edge["id"]})["results"]
    assert result == {"ref": edge["id"], "forgotten": True, "kind": "relation", "id": edge["id"]}
    assert srv.get("Forget Rel A", include_closed=True)["relations"] == []
    assert srv.get("Forget Rel B")["kind"] == "entity"


# -- relate ------------------------------------------------------------------------------------------------


def test_relate_by_names_ids_and_hashes(srv: Native) -> None:
    person = srv.entity("Relate Person")
    srv.entity("Relate Company")
    memory = srv.memory("Relate test: contract signed")
    added = srv.call(
        "relate",
        {
            "add": [
                {"from": "Relate Person", "to": "Relate Company", "type": "works_at", "props": {"since": 2019}},
                {"from": memory["hash"], "to": person["id"], "type": "mentions"},
                {"from": memory["id"].lower(), "to": "Relate Company", "type": "concerns"},
            ]
        },
    )
    assert added["closed"] == []
    triples = [(r["type"], r["from"], r["to"], r["new"]) for r in added["added"]]
    assert triples == [
        ("works_at", "Relate Person", "Relate Company", True),
        ("mentions", memory["id"], "Relate Person", True),
        ("concerns", memory["id"], "Relate Company", True),
    ]
    assert all(is_ulid(r["id"]) and "valid_to" not in r for r in added["added"])
    assert srv.get(added["added"][0]["id"])["props"] == {"since": 2019}


def test_relate_again_returns_the_open_relation(srv: Native) -> None:
    srv.entity("Relate Again A")
    srv.entity("Relate Again B")
    first = srv.relate("Relate Again A", "Relate Again B", "follows")
    seq = srv.seq()
    again = srv.relate("Relate Again A", "Relate Again B", "follows")
    assert again == {**first, "new": False}
    assert srv.seq() == seq
    # Another type between the same two items is another relation.
    other = srv.relate("Relate Again A", "Relate Again B", "admires")
    assert other["new"] is True and other["id"] != first["id"]


def test_relate_valid_from(srv: Native) -> None:
    srv.entity("Relate Since A")
    srv.entity("Relate Since B")
    dated = srv.relate("Relate Since A", "Relate Since B", "married_to", valid_from="2015-06-20")
    assert dated["valid_from"] == "2015-06-20T00:00:00Z"
    exact = srv.relate("Relate Since B", "Relate Since A", "married_to", valid_from="2015-06-20T14:30:00+02:00")
    assert exact["valid_from"] == "2015-06-20T12:30:00Z"
    in_ms = srv.relate("Relate Since A", "Relate Since B", "met", valid_from=1_000_000_000_123)
    assert in_ms["valid_from"] == "2001-09-09T01:46:40.123Z"


def test_relate_close_by_id_and_by_ends(srv: Native) -> None:
    srv.entity("Relate Close A")
    srv.entity("Relate Close B")
    one = srv.relate("Relate Close A", "Relate Close B", "one")
    two = srv.relate("Relate Close A", "Relate Close B", "two")
    closed = srv.call(
        "relate",
        {
            "close": [
                {"id": one["id"], "valid_to": "2100-01-01"},
                {"from": "Relate Close A", "type": "two", "to": "Relate Close B"},
            ]
        },
    )
    assert closed["added"] == []
    assert [c["id"] for c in closed["closed"]] == [one["id"], two["id"]]
    assert closed["closed"][0]["valid_to"] == "2100-01-01T00:00:00Z"
    assert ms(closed["closed"][1]["valid_to"]) >= ms(two["valid_from"])
    # A relation closed in the future still holds now; the other one does not.
    assert [r["id"] for r in srv.get("Relate Close A")["relations"]] == [one["id"]]


def test_relate_retype_in_one_call(srv: Native) -> None:
    srv.entity("Retype Ann")
    srv.entity("Retype Corp")
    old = srv.relate("Retype Ann", "Retype Corp", "works_at")
    result = srv.call(
        "relate",
        {
            "close": [{"from": "Retype Ann", "type": "works_at", "to": "Retype Corp"}],
            "add": [{"from": "Retype Ann", "to": "Retype Corp", "type": "consults_for"}],
        },
    )
    [closed] = result["closed"]
    [added] = result["added"]
    assert (closed["id"], closed["type"]) == (old["id"], "works_at") and "valid_to" in closed
    assert (added["type"], added["new"]) == ("consults_for", True)
    assert [r["type"] for r in srv.get("Retype Ann")["relations"]] == ["consults_for"]
    assert {r["type"] for r in srv.get("Retype Ann", include_closed=True)["relations"]} == {"works_at", "consults_for"}


# -- explore -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chain(srv: Native) -> dict[str, str]:
    """Xa -next-> Xb -next-> Xc -next-> Xd, Xa -other-> Xe, Xf -feeds-> Xa, and a lone Xz."""
    names = ["Xa", "Xb", "Xc", "Xd", "Xe", "Xf", "Xz"]
    made = srv.call("remember", {"entities": [{"name": f"Explore {n}"} for n in names]})["entities"]
    srv.call(
        "relate",
        {
            "add": [
                {"from": "Explore Xa", "to": "Explore Xb", "type": "next"},
                {"from": "Explore Xb", "to": "Explore Xc", "type": "next"},
                {"from": "Explore Xc", "to": "Explore Xd", "type": "next"},
                {"from": "Explore Xa", "to": "Explore Xe", "type": "other"},
                {"from": "Explore Xf", "to": "Explore Xa", "type": "feeds"},
            ]
        },
    )
    return {n: m["id"] for n, m in zip(names, made, strict=True)}


def reached(srv: Native, **arguments: Any) -> dict[str, int]:
    """Explored item names (without the "Explore " prefix) and their hops."""
    found = srv.call("explore", arguments)
    return {i["name"].removeprefix("Explore "): i["hops"] for i in found["items"]}


def test_explore_hops_and_depths(srv: Native, chain: dict[str, str]) -> None:
    assert reached(srv, **{"from": "Explore Xa"}) == {"Xa": 0, "Xb": 1, "Xe": 1, "Xf": 1}
    assert reached(srv, **{"from": "Explore Xa", "hops": 2}) == {"Xa": 0, "Xb": 1, "Xe": 1, "Xf": 1, "Xc": 2}
    assert reached(srv, **{"from": "Explore Xa", "hops": 3})["Xd"] == 3
    result = srv.call("explore", {"from": "Explore Xa"})
    assert result["next_cursor"] is None
    assert {(r["type"], r["from"], r["to"]) for r in result["relations"]} == {
        ("next", "Explore Xa", "Explore Xb"),
        ("other", "Explore Xa", "Explore Xe"),
        ("feeds", "Explore Xf", "Explore Xa"),
    }
    # Several starting points, by name and by id.
    assert set(reached(srv, **{"from": ["Explore Xd", chain["Xe"]]})) == {"Xd", "Xc", "Xe", "Xa"}


def test_explore_direction_and_types(srv: Native, chain: dict[str, str]) -> None:
    assert reached(srv, **{"from": "Explore Xa", "direction": "out"}) == {"Xa": 0, "Xb": 1, "Xe": 1}
    assert reached(srv, **{"from": "Explore Xa", "direction": "in"}) == {"Xa": 0, "Xf": 1}
    assert reached(srv, **{"from": "Explore Xa", "types": ["next"], "hops": 4}) == {
        "Xa": 0,
        "Xb": 1,
        "Xc": 2,
        "Xd": 3,
    }
    assert reached(srv, **{"from": "Explore Xa", "types": ["feeds", "other"]}) == {"Xa": 0, "Xe": 1, "Xf": 1}
    assert reached(srv, **{"from": "Explore Xz"}) == {"Xz": 0}


def test_explore_pages_with_limit_and_cursor(srv: Native, chain: dict[str, str]) -> None:
    arguments = {"from": "Explore Xa", "hops": 3}
    whole = srv.call("explore", arguments)
    assert whole["next_cursor"] is None
    assert len(whole["items"]) == 6

    def pages(extra: dict[str, Any]) -> list[dict[str, Any]]:
        out = [srv.call("explore", {**arguments, **extra})]
        while out[-1]["next_cursor"] is not None:
            out.append(srv.call("explore", {**arguments, **extra, "cursor": out[-1]["next_cursor"]}))
            assert len(out) < 20
        return out

    by_two = pages({"limit": 2})
    assert [len(p["items"]) for p in by_two] == [2, 2, 2]
    assert [i for p in by_two for i in p["items"]] == whole["items"]
    # Each relation comes once, on the page of its later end.
    relations = [r["id"] for p in by_two for r in p["relations"]]
    assert sorted(relations) == sorted(r["id"] for r in whole["relations"])

    capped = pages({"max_chars": 500})
    assert len(capped) > 1
    assert [i for p in capped for i in p["items"]] == whole["items"]
    for page in capped:
        used = sum(len(json.dumps(i, ensure_ascii=False, separators=(",", ":"))) + 1 for i in page["items"])
        assert used <= 500 or len(page["items"]) == 1


def test_explore_path(srv: Native, chain: dict[str, str]) -> None:
    path = srv.call("explore", {"from": "Explore Xa", "to": "Explore Xd"})
    assert path["path_found"] is True
    assert [(i["name"], i["hops"]) for i in path["items"]] == [
        ("Explore Xa", 0),
        ("Explore Xb", 1),
        ("Explore Xc", 2),
        ("Explore Xd", 3),
    ]
    assert [(r["from"], r["to"]) for r in path["relations"]] == [
        ("Explore Xa", "Explore Xb"),
        ("Explore Xb", "Explore Xc"),
        ("Explore Xc", "Explore Xd"),
    ]
    # Relations are followed either way; ids work as references.
    back = srv.call("explore", {"from": chain["Xd"], "to": "Explore Xf"})
    assert [i["name"] for i in back["items"]] == [f"Explore {n}" for n in ("Xd", "Xc", "Xb", "Xa", "Xf")]
    nowhere = srv.call("explore", {"from": "Explore Xa", "to": "Explore Xz"})
    assert (nowhere["path_found"], nowhere["items"], nowhere["relations"]) == (False, [], [])
    assert path["next_cursor"] is None and nowhere["next_cursor"] is None
    # A path longer than `hops` is not found; types narrow the relations followed.
    assert srv.call("explore", {"from": "Explore Xa", "to": "Explore Xd", "hops": 2})["path_found"] is False
    assert srv.call("explore", {"from": "Explore Xa", "to": "Explore Xd", "types": ["other"]})["path_found"] is False


def test_explore_as_of_and_include_closed(srv: Native) -> None:
    srv.entity("AsOf Old Name", type="person")
    srv.entity("AsOf Corp")
    relation = srv.relate("AsOf Old Name", "AsOf Corp", "works_at")
    wait_past(ms(relation["valid_from"]))
    middle = now_ms()
    wait_past(middle)
    srv.call("update", {"ref": "AsOf Old Name", "name": "AsOf New Name"})
    srv.call("relate", {"close": [{"id": relation["id"]}]})

    now = srv.call("explore", {"from": "AsOf New Name"})
    assert [i["name"] for i in now["items"]] == ["AsOf New Name"] and now["relations"] == []

    for when in (middle, iso(middle)):
        then = srv.call("explore", {"from": "AsOf New Name", "as_of": when})
        assert [i["name"] for i in then["items"]] == ["AsOf Old Name", "AsOf Corp"]
        [edge] = then["relations"]
        assert (edge["id"], edge["type"], edge["from"], edge["to"]) == (
            relation["id"],
            "works_at",
            "AsOf Old Name",
            "AsOf Corp",
        )

    every = srv.call("explore", {"from": "AsOf New Name", "include_closed": True})
    assert [i["name"] for i in every["items"]] == ["AsOf New Name", "AsOf Corp"]
    [edge] = every["relations"]
    assert edge["id"] == relation["id"] and "valid_to" in edge
    # Long before, no relation held: the start item alone.
    before = srv.call("explore", {"from": "AsOf New Name", "as_of": "2001-01-01"})
    assert [i["id"] for i in before["items"]] == [now["items"][0]["id"]] and before["relations"] == []


def test_explore_as_of_follows_back_dated_relations(srv: Native) -> None:
    srv.entity("Backdated Ann")
    srv.entity("Backdated Bob")
    relation = srv.relate("Backdated Ann", "Backdated Bob", "married_to", valid_from="2015-06-20")
    then = srv.call("explore", {"from": "Backdated Ann", "as_of": "2016-01-01"})
    assert [i["name"] for i in then["items"]] == ["Backdated Ann", "Backdated Bob"]
    assert [r["id"] for r in then["relations"]] == [relation["id"]]
    earlier = srv.call("explore", {"from": "Backdated Ann", "as_of": "2015-06-19"})
    assert [i["name"] for i in earlier["items"]] == ["Backdated Ann"] and earlier["relations"] == []


def test_explore_leaves_out_superseded_memories_unless_asked(srv: Native) -> None:
    old = srv.memory("Explore superseded test: v1", about=["Explore Sup Hub"])
    new = srv.memory("Explore superseded test: v2", about=["Explore Sup Hub"], supersedes=old["id"])
    assert set(srv.ids("explore", {"from": "Explore Sup Hub"})) == {srv.get("Explore Sup Hub")["id"], new["id"]}
    assert old["id"] in srv.ids("explore", {"from": "Explore Sup Hub", "include_superseded": True})
    # A start item is always there, superseded or not.
    assert old["id"] in srv.ids("explore", {"from": old["id"]})


def test_explore_lists_relations_by_type(srv: Native) -> None:
    srv.call("remember", {"entities": [{"name": f"Listing Rel {n}"} for n in "ABC"]})
    one = srv.relate("Listing Rel A", "Listing Rel B", "listing_rel")
    two = srv.relate("Listing Rel B", "Listing Rel C", "listing_rel")
    srv.call("relate", {"close": [{"id": one["id"]}]})
    current = srv.call("explore", {"types": ["listing_rel"]})
    assert [r["id"] for r in current["relations"]] == [two["id"]]
    assert {i["name"] for i in current["items"]} == {"Listing Rel B", "Listing Rel C"}
    assert current["next_cursor"] is None
    every = srv.call("explore", {"types": ["listing_rel"], "include_closed": True})
    assert [r["id"] for r in every["relations"]] == [two["id"], one["id"]]
    assert {i["name"] for i in every["items"]} == {"Listing Rel A", "Listing Rel B", "Listing Rel C"}
    capped = srv.call("explore", {"types": ["listing_rel"], "include_closed": True, "limit": 1})
    assert [r["id"] for r in capped["relations"]] == [two["id"]]
    assert {i["name"] for i in capped["items"]} == {"Listing Rel B", "Listing Rel C"}
    assert capped["next_cursor"] is not None
    rest = srv.call(
        "explore", {"types": ["listing_rel"], "include_closed": True, "limit": 1, "cursor": capped["next_cursor"]}
    )
    assert [r["id"] for r in rest["relations"]] == [one["id"]] and rest["next_cursor"] is None
    # With neither `from` nor `types`: every relation, newest first.
    assert [r["id"] for r in srv.call("explore", {"limit": 1})["relations"]] == [two["id"]]
    every_open = [r["id"] for r in srv.call("explore", {"limit": 200})["relations"]]
    assert two["id"] in every_open and one["id"] not in every_open
    assert srv.call("explore", {"types": ["no_such_relation_type"]}) == {
        "items": [],
        "relations": [],
        "next_cursor": None,
    }


def test_explore_previews_and_full(srv: Native) -> None:
    long_text = "Explore preview test " + "detail " * 60
    memory = srv.memory(long_text, about=["Explore Preview Hub"])
    preview = srv.call("explore", {"from": "Explore Preview Hub"})["items"]
    [item] = [i for i in preview if i["id"] == memory["id"]]
    assert item["truncated"] is True and len(item["text"]) <= PREVIEW_CHARS
    full = srv.call("explore", {"from": "Explore Preview Hub", "full": True})["items"]
    [whole] = [i for i in full if i["id"] == memory["id"]]
    assert whole["text"] == long_text and whole["hash"] == memory["hash"]


# -- audit -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def logged(srv: Native) -> dict[str, Any]:
    """A few writes in a scope of their own; returns their ids."""
    memory = srv.memory("Changes test memory", tags=["one"], scope=AUDIT_SCOPE)
    srv.entity("Changes Entity", observations=["first"], scope=AUDIT_SCOPE)
    edge = srv.call(
        "relate",
        {"scope": AUDIT_SCOPE, "add": [{"from": memory["id"], "to": "Changes Entity", "type": "mentions"}]},
    )["added"][0]
    update = {"ref": memory["id"], "add_tags": ["two"], "scopes": [AUDIT_SCOPE]}
    srv.call("update", update)
    srv.call("update", {**update, "embedding": {"model": "chg-model", "values": [0.5, 0.25, 0.125, 1.0]}})
    srv.call("relate", {"scope": AUDIT_SCOPE, "close": [{"id": edge["id"]}]})
    return {"memory": memory["id"], "edge": edge["id"]}


def test_audit_feed(srv: Native, logged: dict[str, Any]) -> None:
    feed = srv.call("audit", {"scopes": [AUDIT_SCOPE]})
    changes = feed["changes"]
    seqs = [c["seq"] for c in changes]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert feed["next_since"] == seqs[-1] + 1
    assert feed["current_seq"] >= seqs[-1]
    assert feed["current_seq"] == srv.call("survey", {})["current_seq"]
    ops = [c["op"] for c in changes]
    assert ops == ["create_node", "create_node", "create_edge", "update_node", "set_embedding", "close_edge"]
    for change in changes:
        assert set(change) == {"seq", "at", "op", "target", "scope", "data"}, change
        assert change["scope"] == AUDIT_SCOPE
        assert ms(change["at"]) > 0
    assert changes[0]["target"] == logged["memory"]
    assert changes[2]["target"] == logged["edge"]
    # Polling from next_since finds nothing new.
    later = srv.call("audit", {"scopes": [AUDIT_SCOPE], "since": feed["next_since"]})
    assert later["changes"] == [] and later["next_since"] == feed["next_since"]


def test_audit_feed_pages_with_limit(srv: Native, logged: dict[str, Any]) -> None:
    every = srv.call("audit", {"scopes": [AUDIT_SCOPE]})["changes"]
    collected: list[dict[str, Any]] = []
    since = 1
    while True:
        page = srv.call("audit", {"scopes": [AUDIT_SCOPE], "since": since, "limit": 2})
        assert len(page["changes"]) <= 2
        if not page["changes"]:
            break
        collected += page["changes"]
        assert page["next_since"] == page["changes"][-1]["seq"] + 1
        since = page["next_since"]
    assert collected == every


def test_audit_of_one_item(srv: Native, logged: dict[str, Any]) -> None:
    history = srv.call("audit", {"ref": logged["memory"], "scopes": [AUDIT_SCOPE]})
    assert history["next_since"] is None
    ops = [c["op"] for c in history["changes"]]
    assert ops == ["create_node", "update_node", "set_embedding"]
    assert all(c["target"] == logged["memory"] for c in history["changes"])
    created = history["changes"][0]["data"]
    assert created["memory"]["content"] == "Changes test memory"
    # A vector is summarised as its model and size, never written out.
    assert history["changes"][2]["data"] == {"id": logged["memory"], "model": "chg-model", "dim": 4}
    assert history["earlier"] == 0
    latest = srv.call("audit", {"ref": logged["memory"], "scopes": [AUDIT_SCOPE], "limit": 1})
    assert [c["op"] for c in latest["changes"]] == ["set_embedding"]
    assert latest["earlier"] == 2
    edge = srv.call("audit", {"ref": logged["edge"], "scopes": [AUDIT_SCOPE]})["changes"]
    assert [c["op"] for c in edge] == ["create_edge", "close_edge"]


def test_audit_max_chars(srv: Native, logged: dict[str, Any]) -> None:
    every = srv.call("audit", {"scopes": [AUDIT_SCOPE]})["changes"]
    capped = srv.call("audit", {"scopes": [AUDIT_SCOPE], "max_chars": 500})
    kept = len(capped["changes"])
    assert 1 <= kept < len(every)
    assert capped["changes"] == every[:kept]
    # The feed continues right after the last change shown.
    assert capped["next_since"] == every[kept]["seq"]
    rest = srv.call("audit", {"scopes": [AUDIT_SCOPE], "since": capped["next_since"]})["changes"]
    assert capped["changes"] + rest == every

    history = srv.call("audit", {"ref": logged["memory"], "scopes": [AUDIT_SCOPE]})["changes"]
    latest = srv.call("audit", {"ref": logged["memory"], "scopes": [AUDIT_SCOPE], "max_chars": 500})
    # A history keeps its latest entries and counts the ones left out.
    shown = len(latest["changes"])
    assert 1 <= shown < len(history)
    assert latest["changes"] == history[-shown:]
    assert latest["earlier"] == len(history) - shown


def test_audit_default_feed_hides_other_scopes(srv: Native, logged: dict[str, Any]) -> None:
    seen = srv.call("audit", {"limit": 500})["changes"]
    assert all(c.get("scope") != AUDIT_SCOPE for c in seen)
    assert logged["memory"] not in {c["target"] for c in seen}


# -- survey --------------------------------------------------------------------------------------------------


def test_survey_counts_and_top_lists(srv: Native) -> None:
    empty = srv.call("survey", {"scopes": [SURVEY_SCOPE]})
    assert (empty["memories"], empty["entities"], empty["relations"], empty["observations"]) == (0, 0, 0, 0)
    assert (empty["oldest_memory"], empty["newest_memory"]) == (None, None)
    assert empty["scopes"] == [SURVEY_SCOPE]

    made = srv.call(
        "remember",
        {
            "scope": SURVEY_SCOPE,
            "memories": [
                {"content": "Stats one", "tags": ["red", "blue"], "type": "fact"},
                {"content": "Stats two", "tags": ["red"], "type": "fact"},
                {"content": "Stats three", "tags": ["red", "green", "blue"]},
            ],
            "entities": [
                {"name": "Stats Person", "type": "person", "observations": ["a", "b"]},
                {"name": "Stats Team", "type": "team", "observations": ["c"]},
                {"name": "Stats Robot", "type": "person"},
            ],
        },
    )
    srv.call(
        "relate",
        {
            "scope": SURVEY_SCOPE,
            "add": [
                {"from": "Stats Person", "to": "Stats Team", "type": "member_of"},
                {"from": "Stats Robot", "to": "Stats Team", "type": "member_of"},
                {"from": "Stats Robot", "to": "Stats Person", "type": "helps"},
            ],
        },
    )
    srv.call(
        "update",
        {"ref": made["memories"][0]["id"], "embedding": {"model": "st", "values": [1, 2]}, "scopes": [SURVEY_SCOPE]},
    )
    stats = srv.call("survey", {"scopes": [SURVEY_SCOPE]})
    assert (stats["memories"], stats["entities"], stats["observations"]) == (3, 3, 3)
    assert stats["tags"] == 3
    assert stats["relations"] == 3 and stats["embeddings"] >= 1
    assert stats["top_tags"] == [
        {"name": "red", "count": 3},
        {"name": "blue", "count": 2},
        {"name": "green", "count": 1},
    ]
    assert stats["top_memory_types"] == [{"name": "fact", "count": 2}, {"name": "general", "count": 1}]
    assert stats["top_entity_types"] == [{"name": "person", "count": 2}, {"name": "team", "count": 1}]
    assert stats["top_relation_types"] == [{"name": "member_of", "count": 2}, {"name": "helps", "count": 1}]
    assert ms(stats["oldest_memory"]) <= ms(stats["newest_memory"])
    assert stats["size_bytes"] > 0 and stats["current_seq"] == srv.seq()

    top = srv.call("survey", {"scopes": [SURVEY_SCOPE], "top": 1})
    assert top["top_tags"] == [{"name": "red", "count": 3}]
    assert top["top_memory_types"] == [{"name": "fact", "count": 2}]


def test_survey_by_default_reads_the_servers_scopes(srv: Native) -> None:
    before = srv.call("survey", {})
    srv.memory("Survey default test", about=["Survey Default Entity"])
    after = srv.call("survey", {})
    assert before["scopes"] == after["scopes"] == ["shared"]
    assert (after["memories"], after["entities"], after["relations"]) == (
        before["memories"] + 1,
        before["entities"] + 1,
        before["relations"] + 1,
    )


def test_survey_top_entity_types_leave_out_typeless_entities(srv: Native) -> None:
    scope = "01HV7N8Q3Y2J6W5X4Z9A0B1C33"
    srv.call("remember", {"scope": scope, "entities": [{"name": "Typeless One"}, {"name": "Typed", "type": "t"}]})
    assert srv.call("survey", {"scopes": [scope]})["top_entity_types"] == [{"name": "t", "count": 1}]


# -- resources -----------------------------------------------------------------------------------------------


def read(srv: Native, uri: str) -> Any:
    result = srv.run(srv.client.read_resource, uri)
    [content] = result.contents
    assert isinstance(content, TextResourceContents)
    assert content.uri == uri and content.mime_type == "application/json"
    return json.loads(content.text)


def test_resources_and_templates_are_listed(srv: Native) -> None:
    resources = srv.run(srv.client.list_resources).resources
    assert [(r.uri, r.name, r.mime_type) for r in resources] == [("mnemodb://stats", "stats", "application/json")]
    assert all(r.description for r in resources)
    templates = srv.run(srv.client.list_resource_templates).resource_templates
    assert [(t.uri_template, t.name) for t in templates] == [
        ("mnemodb://memory/{ref}", "memory"),
        ("mnemodb://entity/{name}", "entity"),
    ]
    assert all(t.description and t.mime_type == "application/json" for t in templates)


def test_read_the_stats_resource(srv: Native) -> None:
    stats = read(srv, "mnemodb://stats")
    tool = srv.call("survey", {})
    assert set(stats) == set(tool)
    for key in ("memories", "entities", "relations", "observations", "top_tags", "top_memory_types", "scopes"):
        assert stats[key] == tool[key], key


def test_read_memory_and_entity_resources(srv: Native) -> None:
    memory = srv.memory("Resource test: the lab opens at eight", about=["Resource Lab Two"], tags=["res"])
    by_id = read(srv, f"mnemodb://memory/{memory['id']}")
    assert (by_id["kind"], by_id["id"], by_id["text"], by_id["tags"]) == (
        "memory",
        memory["id"],
        "Resource test: the lab opens at eight",
        ["res"],
    )
    assert [(r["type"], r["to"]) for r in by_id["relations"]] == [("about", "Resource Lab Two")]
    assert read(srv, f"mnemodb://memory/{memory['hash']}")["id"] == memory["id"]
    entity = read(srv, "mnemodb://entity/Resource%20Lab%20Two")
    assert (entity["kind"], entity["name"]) == ("entity", "Resource Lab Two")
    assert [(r["from"], r["to"]) for r in entity["relations"]] == [(memory["id"], "Resource Lab Two")]
    assert read(srv, f"mnemodb://entity/{entity['id']}")["name"] == "Resource Lab Two"


def test_read_unknown_resources_fails(srv: Native) -> None:
    for uri in (
        "mnemodb://memory/01ARZ3NDEKTSV4RRFFQ69G5FAV",
        "mnemodb://entity/Resource%20Nobody",
        "mnemodb://nothing",
        "mnemodb://memory/",
    ):
        error = srv.rpc_error(srv.client.read_resource, uri)
        assert error.code == INVALID_PARAMS, uri
        assert "not found" in str(error), uri


def test_resource_templates_keep_to_their_kind(srv: Native) -> None:
    memory = srv.memory("Resource kind test")
    srv.entity("Resource Kind Entity")
    for uri in (f"mnemodb://entity/{memory['id']}", "mnemodb://memory/Resource%20Kind%20Entity"):
        error = srv.rpc_error(srv.client.read_resource, uri)
        assert error.code == INVALID_PARAMS, uri


# -- prompts -------------------------------------------------------------------------------------------------


def prompt_text(srv: Native, name: str, arguments: dict[str, str] | None = None) -> str:
    result = srv.run(srv.client.get_prompt, name, arguments)
    [message] = result.messages
    assert message.role == "user"
    assert isinstance(message.content, TextContent)
    assert result.description
    return message.content.text


def test_prompts_are_listed(srv: Native) -> None:
    prompts = srv.run(srv.client.list_prompts).prompts
    listed = {p.name: [(a.name, bool(a.required)) for a in p.arguments or []] for p in prompts}
    assert listed == {"personal-assistant": [("user_name", False)], "codebase-graph": [("project", False)]}
    assert all(p.title and p.description for p in prompts)


def test_prompts_render_their_arguments(srv: Native) -> None:
    named = prompt_text(srv, "personal-assistant", {"user_name": "Zoë Quill"})
    assert "(Zoë Quill)" in named and "remember" in named
    anonymous = prompt_text(srv, "personal-assistant")
    assert "()" not in anonymous and "{" not in anonymous
    project = prompt_text(srv, "codebase-graph", {"project": "mnemodb"})
    assert "(mnemodb)" in project and "remember" in project
    assert "{" not in prompt_text(srv, "codebase-graph", {})


def test_prompt_errors_are_invalid_params(srv: Native) -> None:
    unknown = srv.rpc_error(srv.client.get_prompt, "no-such-prompt", None)
    assert unknown.code == INVALID_PARAMS and "no-such-prompt" in str(unknown)
    wrong = srv.rpc_error(srv.client.get_prompt, "personal-assistant", {"username": "x"})
    assert wrong.code == INVALID_PARAMS and "username" in str(wrong)
    other = srv.rpc_error(srv.client.get_prompt, "codebase-graph", {"user_name": "x"})
    assert other.code == INVALID_PARAMS and "user_name" in str(other)


# -- the server's log ---------------------------------------------------------------------------------------


def test_errors_are_not_logged_as_crashes(srv: Native) -> None:
    srv.error("recall", {"cursor": "not a cursor"})
    assert "Traceback" not in srv.stderr


# -- turns of a conversation ------------------------------------------------------------------------


def test_remembered_turns_are_recalled_by_the_words_of_the_turn_before(srv: Native) -> None:
    scope = new_ulid()
    question = "Which trail did you take up the volcano?"
    answer = "The northern one, past the old observatory"
    srv.call("remember", {"memories": [{"content": question}, {"content": answer}], "turns": True, "scope": scope})
    srv.call("remember", {"memories": [{"content": "A separate volcano fact"}], "scope": new_ulid()})
    items = srv.call("recall", {"query": "trail", "scopes": [scope]})["items"]
    assert [i["text"] for i in items] == [question, answer]
    assert items[0]["score"] > items[1]["score"]
    # Without turns, a memory is found by its own words only.
    plain = new_ulid()
    srv.call("remember", {"memories": [{"content": question}, {"content": answer}], "scope": plain})
    assert [i["text"] for i in srv.call("recall", {"query": "trail", "scopes": [plain]})["items"]] == [question]
