"""One assistant's weeks with one user, over stdio against `mnemodb serve` (the native profile).

A real MCP client drives `mnemodb serve --db FILE` (no `--profile`: native is the default)
the way the personal-assistant prompt tells a model to: identify the user, store who they
are, what they like, what they aim for and who they know (memories `about` the user, and
relations), recall it on a later day, correct a fact, supersede a preference, record a job
change by closing one relation and opening another, search with filters, walk the graph,
read an item's history (audit), forget something on request, and survey what is kept.

Days are simulated three ways: the memory texts carry their date; relations get explicit
`valid_from`/`valid_to` (some back-dated to years before the session); and the wall-clock
instants between the "days" are kept, so recall's `since`/`until` and explore's `as_of`
can be pointed at them. Every answer's content is checked, not only that it succeeded.

Afterwards the same file is opened by the memdb and the knowledge-graph profiles, each in
a process of its own once the native server has exited: what the native tools stored is
what those profiles find.

The tests after it read a memory as it was before an edit, and check that explore sees
back-dated relations and leaves superseded memories out.
"""

from __future__ import annotations

import hashlib
import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult, TextContent

from support import PROFILE_TOOLS, serve_command, serve_params, server_env

NATIVE_TOOLS = PROFILE_TOOLS["native"]
USER = "Dana Whitfield"
ACME = "Acme Analytics"
GLOBEX = "Globex Robotics"
SAM = "Sam Ortiz"
MIA = "Mia Whitfield"
PEOPLE_RELATIONS = ["works_at", "knows", "sibling_of"]
NO_MEMORY_FILE = {"MEMORY_FILE_PATH": ""}


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def iso(ms: int) -> str:
    """A time as the native profile writes it."""
    moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{ms % 1000:03d}Z" if ms % 1000 else f"{text}Z"


def default_serve(db: Path) -> StdioServerParameters:
    """`mnemodb serve --db FILE`, without `--profile`."""
    command = [arg for arg in serve_command(db) if arg not in ("--profile", "memdb")]
    assert "--profile" not in command
    return StdioServerParameters(command=command[0], args=command[1:], env=server_env())


async def next_day() -> int:
    """An instant strictly between what was written before and what is written after."""
    await anyio.sleep(0.02)
    instant = time.time_ns() // 1_000_000
    await anyio.sleep(0.02)
    return instant


def text_of(result: CallToolResult) -> str:
    assert len(result.content) == 1, result
    block = result.content[0]
    assert isinstance(block, TextContent), result
    return block.text


class Agent:
    """The model's side: one call at a time, each answer checked for its two renderings."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def ok(self, tool: str, arguments: dict[str, Any]) -> Any:
        result = await self.client.call_tool(tool, arguments)
        assert result.is_error is False, (tool, arguments, result)
        assert result.structured_content is not None, result
        assert json.loads(text_of(result)) == result.structured_content
        return result.structured_content

    async def refused(self, tool: str, arguments: dict[str, Any]) -> str:
        result = await self.client.call_tool(tool, arguments)
        assert result.is_error is True, (tool, arguments, result)
        text = text_of(result)
        assert text.startswith(f"{tool}: "), text
        return text

    async def recall(self, **arguments: Any) -> list[dict[str, Any]]:
        page = await self.ok("recall", arguments)
        items: list[dict[str, Any]] = page["items"]
        return items


def ids(items: list[dict[str, Any]]) -> list[str]:
    return [i["id"] for i in items]


def texts(items: list[dict[str, Any]]) -> set[str]:
    return {i["text"] for i in items if i["kind"] == "memory"}


def names(items: list[dict[str, Any]]) -> list[str]:
    return [i["name"] if i["kind"] == "entity" else i["id"] for i in items]


def triples(relations: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {(r["from"], r["type"], r["to"]) for r in relations}


# The memories of the first day, in the order they are remembered.
HOME_LYON = "[2026-11-02] Dana lives in Lyon, in the Croix-Rousse district"
HOME_FIXED = "[2026-11-02] Dana lives in Villeurbanne, just east of Lyon"
JOB_ACME = "[2026-11-02] Dana works as a data engineer at Acme Analytics"
TEA = "[2026-11-02] Dana drinks green tea in the morning and avoids coffee"
MEETINGS = "[2026-11-02] Dana wants no meetings before 10:00"
GOAL = "[2026-11-02] Goal: run the Lyon half marathon in April 2027 in under two hours"
TEAMMATE = "[2026-11-02] Sam Ortiz is Dana's teammate and running partner"
SISTER = "[2026-11-02] Dana's sister Mia Whitfield lives in Montreal"
# Later days.
COFFEE = "[2026-11-09] Dana switched from tea to coffee: a flat white every morning"
RUN = "[2026-11-09] Dana ran 14 km with Sam on Sunday, her longest run so far"
JOB_GLOBEX = "[2026-11-16] Dana left Acme Analytics and works as platform lead at Globex Robotics"


@pytest.mark.anyio
async def test_an_assistant_remembers_a_user_across_days(tmp_path: Path) -> None:
    db = tmp_path / "assistant.db"
    async with Client(default_serve(db), mode="legacy") as client:
        assert client.server_info is not None
        assert client.server_info.name == "mnemodb"
        assert [t.name for t in (await client.list_tools()).tools] == NATIVE_TOOLS
        agent = Agent(client)

        # -- day 1: a new user ------------------------------------------------------------------
        # Who is this? Memory is empty.
        assert await agent.recall(query="user") == []
        empty = await agent.ok("survey", {})
        assert (empty["memories"], empty["entities"], empty["relations"]) == (0, 0, 0)
        assert (empty["oldest_memory"], empty["newest_memory"]) == (None, None)

        def note(content: str, about: list[str], tags: list[str], kind: str, importance: int) -> dict[str, Any]:
            return {"content": content, "about": about, "tags": tags, "type": kind, "importance": importance}

        day1 = await agent.ok(
            "remember",
            {
                "entities": [
                    {
                        "name": USER,
                        "type": "person",
                        "observations": ["The user of this assistant", "Prefers to be called Dana"],
                    },
                    {"name": ACME, "type": "company", "observations": ["Data consultancy based in Lyon"]},
                    {"name": SAM, "type": "person", "observations": ["Dana's teammate"]},
                ],
                "memories": [
                    note(HOME_LYON, [USER], ["identity", "home"], "fact", 6),
                    note(JOB_ACME, [USER], ["identity", "work"], "fact", 7),
                    note(TEA, [USER], ["preference", "food"], "preference", 3),
                    note(MEETINGS, [USER], ["preference", "schedule"], "preference", 5),
                    note(GOAL, [USER], ["goal", "running"], "goal", 8),
                    note(TEAMMATE, [USER, SAM], ["relationship"], "relationship", 4),
                    note(SISTER, [USER, MIA], ["relationship", "family"], "relationship", 2),
                ],
            },
        )
        assert [(e["name"], e["status"]) for e in day1["entities"]] == [
            (USER, "created"),
            (ACME, "created"),
            (SAM, "created"),
        ]
        memories = day1["memories"]
        assert [m["status"] for m in memories] == ["created"] * 7
        assert [m["hash"] for m in memories] == [
            sha(t) for t in (HOME_LYON, JOB_ACME, TEA, MEETINGS, GOAL, TEAMMATE, SISTER)
        ]
        assert [m["about"] for m in memories] == [[USER]] * 5 + [[USER, SAM], [USER, MIA]]
        # Only the sister was unknown: `about` created her entity; nothing else was created twice.
        assert [m.get("created_entities") for m in memories] == [None] * 6 + [[MIA]]
        home, job, tea, meetings, goal, teammate, sister = (m["id"] for m in memories)
        assert len({home, job, tea, meetings, goal, teammate, sister}) == 7

        # The sister's entity was made without a type: give it one, and what is known of her.
        typed = await agent.ok("update", {"ref": MIA, "type": "person", "add_observations": ["Dana's sister"]})
        assert typed["changed"] == ["observations", "type"]
        assert (typed["item"]["name"], typed["item"]["type"], typed["item"]["observations"]) == (
            MIA,
            "person",
            ["Dana's sister"],
        )

        # Relations, back-dated to when they started holding.
        related = await agent.ok(
            "relate",
            {
                "add": [
                    {"from": USER, "to": ACME, "type": "works_at", "valid_from": "2023-04-17"},
                    {"from": USER, "to": SAM, "type": "knows", "valid_from": "2023-05-02T09:00:00Z"},
                    {"from": SAM, "to": ACME, "type": "works_at", "valid_from": "2021-09-01"},
                    {"from": USER, "to": MIA, "type": "sibling_of", "valid_from": "1994-07-30"},
                ]
            },
        )
        assert related["closed"] == []
        assert [(r["from"], r["type"], r["to"], r["valid_from"], r["new"]) for r in related["added"]] == [
            (USER, "works_at", ACME, "2023-04-17T00:00:00Z", True),
            (USER, "knows", SAM, "2023-05-02T09:00:00Z", True),
            (SAM, "works_at", ACME, "2021-09-01T00:00:00Z", True),
            (USER, "sibling_of", MIA, "1994-07-30T00:00:00Z", True),
        ]
        assert all("valid_to" not in r for r in related["added"])
        acme_job = related["added"][0]["id"]
        # Saying it again changes nothing.
        again = await agent.ok("relate", {"add": [{"from": USER, "to": ACME, "type": "works_at"}]})
        assert [(r["id"], r["new"], r["valid_from"]) for r in again["added"]] == [
            (acme_job, False, "2023-04-17T00:00:00Z")
        ]
        # A relation to someone memory does not know is refused, and nothing is written.
        refused = await agent.refused("relate", {"add": [{"from": USER, "to": "Lena", "type": "knows"}]})
        assert "'Lena'" in refused
        assert "nothing was written" in refused

        # The same identification question now finds the user.
        [me] = await agent.recall(query="user")
        assert (me["kind"], me["name"], me["type"]) == ("entity", USER, "person")
        assert me["observations"] == ["The user of this assistant", "Prefers to be called Dana"]

        day2 = await next_day()

        # -- day 2: recall first, then a correction and a changed preference ---------------------
        [me] = await agent.recall(query="user", kinds=["entity"])
        assert me["name"] == USER
        everything = await agent.recall(about=[USER])
        assert texts(everything) == {HOME_LYON, JOB_ACME, TEA, MEETINGS, GOAL, TEAMMATE, SISTER}
        assert all(i["kind"] == "memory" and "score" not in i for i in everything)  # a listing
        assert everything[0]["created"] == everything[-1]["created"]  # all from one call
        by_id = {i["id"]: i for i in everything}
        assert by_id[goal] | {"created": None} == {
            "kind": "memory",
            "id": goal,
            "text": GOAL,
            "tags": ["goal", "running"],
            "type": "goal",
            "importance": 8,
            "created": None,
        }

        # The user asks about their race: the goal comes first.
        race = await agent.recall(query="half marathon")
        assert race[0]["id"] == goal
        assert race[0]["score"] > 0

        # "I don't live in Croix-Rousse, I live in Villeurbanne": a typo-level correction, in place.
        fixed = await agent.ok("update", {"ref": home, "content": HOME_FIXED})
        assert fixed["changed"] == ["content"]
        assert (fixed["item"]["id"], fixed["item"]["text"], fixed["item"]["hash"]) == (
            home,
            HOME_FIXED,
            sha(HOME_FIXED),
        )
        assert fixed["item"]["tags"] == ["home", "identity"]
        assert "updated" in fixed["item"]
        assert await agent.recall(query="Croix Rousse district") == []
        assert ids(await agent.recall(query="Villeurbanne")) == [home]
        # The old hash names nothing any more; the new one names the same memory.
        looked_up = (await agent.ok("get", {"refs": [sha(HOME_LYON), sha(HOME_FIXED)]}))["items"]
        assert looked_up[0] == {"ref": sha(HOME_LYON), "error": "not found"}
        assert (looked_up[1]["id"], looked_up[1]["text"]) == (home, HOME_FIXED)
        assert triples(looked_up[1]["relations"]) == {(home, "about", USER)}

        # "I've switched to coffee": the new preference replaces the old, which stays as history.
        switched = await agent.ok(
            "remember",
            {
                "memories": [
                    {
                        "content": COFFEE,
                        "about": [USER],
                        "tags": ["preference", "food"],
                        "type": "preference",
                        "importance": 3,
                        "supersedes": sha(TEA),
                    },
                    {"content": RUN, "about": [USER, SAM], "tags": ["running"], "type": "event", "importance": 2},
                ]
            },
        )
        coffee, run = (m["id"] for m in switched["memories"])
        assert switched["memories"][0] == {
            "id": coffee,
            "hash": sha(COFFEE),
            "status": "created",
            "about": [USER],
            "supersedes": tea,
        }
        assert switched["memories"][1]["about"] == [USER, SAM]
        assert "supersedes" not in switched["memories"][1]

        drinks = await agent.recall(query="tea coffee morning", types=["preference"])
        assert ids(drinks) == [coffee]
        history = await agent.recall(query="tea coffee morning", types=["preference"], include_superseded=True)
        assert set(ids(history)) == {coffee, tea}
        shown = {i["id"]: i for i in history}
        assert shown[tea]["superseded_by"] == [coffee]
        assert shown[tea]["text"] == TEA
        assert "superseded_by" not in shown[coffee]
        [old] = (await agent.ok("get", {"refs": tea}))["items"]
        assert old["superseded_by"] == [coffee]
        assert (coffee, "supersedes", tea) in triples(old["relations"])
        # The listing about the user no longer shows the tea.
        assert texts(await agent.recall(about=[USER])) == {
            HOME_FIXED,
            JOB_ACME,
            MEETINGS,
            GOAL,
            TEAMMATE,
            SISTER,
            COFFEE,
            RUN,
        }

        day3 = await next_day()

        # -- day 3: a new job ------------------------------------------------------------------
        work = await agent.recall(query="work job", about=[USER])
        assert work[0]["id"] == job

        new_job = await agent.ok(
            "remember",
            {
                "entities": [
                    {"name": GLOBEX, "type": "company", "observations": ["Robotics start-up in Villeurbanne"]}
                ],
                "memories": [
                    {
                        "content": JOB_GLOBEX,
                        "about": [USER, GLOBEX],
                        "tags": ["work"],
                        "type": "fact",
                        "importance": 7,
                        "supersedes": job,
                    }
                ],
            },
        )
        assert new_job["entities"][0]["status"] == "created"
        [globex_job] = new_job["memories"]
        assert (globex_job["about"], globex_job["supersedes"]) == ([USER, GLOBEX], job)
        assert "created_entities" not in globex_job  # the entity came first, in the same call

        switch = await next_day()
        moved = await agent.ok(
            "relate",
            {
                "close": [{"from": USER, "type": "works_at", "to": ACME, "valid_to": switch}],
                "add": [{"from": USER, "to": GLOBEX, "type": "works_at", "valid_from": iso(switch)}],
            },
        )
        [closed] = moved["closed"]
        assert closed == {
            "id": acme_job,
            "type": "works_at",
            "from": USER,
            "to": ACME,
            "valid_from": "2023-04-17T00:00:00Z",
            "valid_to": iso(switch),
        }
        [opened] = moved["added"]
        assert (opened["from"], opened["type"], opened["to"], opened["valid_from"], opened["new"]) == (
            USER,
            "works_at",
            GLOBEX,
            iso(switch),
            True,
        )
        # Closing it twice is refused.
        twice = await agent.refused("relate", {"close": [{"id": acme_job}]})
        assert "already closed" in twice

        # Where does Dana work? Now, and just before the switch.
        now = await agent.ok("explore", {"from": USER, "types": ["works_at"]})
        assert names(now["items"]) == [USER, GLOBEX]
        assert [i["hops"] for i in now["items"]] == [0, 1]
        assert triples(now["relations"]) == {(USER, "works_at", GLOBEX)}
        assert not now.get("truncated") and now.get("next_cursor") is None  # nothing more to page
        before = await agent.ok("explore", {"from": USER, "types": ["works_at"], "as_of": switch - 1})
        assert names(before["items"]) == [USER, ACME]
        assert [(r["to"], r["valid_to"]) for r in before["relations"]] == [(ACME, iso(switch))]
        ever = await agent.ok("explore", {"from": USER, "types": ["works_at"], "include_closed": True})
        assert set(names(ever["items"])) == {USER, GLOBEX, ACME}
        assert triples(ever["relations"]) == {(USER, "works_at", GLOBEX), (USER, "works_at", ACME)}
        # get shows current relations, and the ended one on request.
        [current] = (await agent.ok("get", {"refs": USER}))["items"]
        assert (USER, "works_at", ACME) not in triples(current["relations"])
        assert {(USER, "works_at", GLOBEX), (USER, "knows", SAM), (USER, "sibling_of", MIA)} <= triples(
            current["relations"]
        )
        assert current["observations"] == ["The user of this assistant", "Prefers to be called Dana"]
        [past] = (await agent.ok("get", {"refs": USER, "include_closed": True}))["items"]
        assert [r["valid_to"] for r in past["relations"] if r["id"] == acme_job] == [iso(switch)]

        # -- searches with filters -------------------------------------------------------------------
        running = await agent.recall(query="running", kinds=["memory"], tags=["running"])
        assert set(ids(running)) == {goal, run}
        assert ids(await agent.recall(types=["goal"])) == [goal]
        important = await agent.recall(min_importance=7, kinds=["memory"])
        assert set(ids(important)) == {goal, globex_job["id"]}  # the Acme job (7) is superseded
        assert set(ids(await agent.recall(min_importance=7, kinds=["memory"], include_superseded=True))) == {
            goal,
            globex_job["id"],
            job,
        }
        # What was learnt on day 2, on day 1, and since day 3.
        assert set(ids(await agent.recall(since=day2, until=day3, kinds=["memory"]))) == {coffee, run}
        assert set(ids(await agent.recall(until=day2, kinds=["memory"]))) == {home, meetings, goal, teammate, sister}
        assert set(ids(await agent.recall(until=iso(day2), kinds=["memory"], include_superseded=True))) == {
            home,
            job,
            tea,
            meetings,
            goal,
            teammate,
            sister,
        }
        since_day3 = await agent.recall(since=day3)
        assert names(since_day3) == [globex_job["id"], GLOBEX]  # newest first, both kinds
        # Everything about Sam; the people memory knows; words with a filter on the user.
        assert set(ids(await agent.recall(about=[SAM]))) == {teammate, run}
        people = await agent.recall(kinds=["entity"], types=["person"])
        assert set(names(people)) == {USER, SAM, MIA}
        assert all(i["kind"] == "entity" for i in people)
        assert ids(await agent.recall(query="flat white", about=[USER])) == [coffee]
        nowhere = await agent.refused("recall", {"query": "run", "about": ["Lena"]})
        assert "'Lena'" in nowhere
        # Paging: a small page, then the rest with the cursor.
        first = await agent.ok("recall", {"about": [USER], "limit": 3})
        assert len(first["items"]) == 3
        assert first["next_cursor"]
        rest = await agent.ok("recall", {"about": [USER], "limit": 10, "cursor": first["next_cursor"]})
        assert rest["next_cursor"] is None
        listed = texts(first["items"]) | texts(rest["items"])
        assert listed == {HOME_FIXED, MEETINGS, GOAL, TEAMMATE, SISTER, COFFEE, RUN, JOB_GLOBEX}
        assert len(first["items"]) + len(rest["items"]) == 8

        # -- the neighbourhood and a path --------------------------------------------------------
        circle = await agent.ok("explore", {"from": USER, "hops": 2, "types": PEOPLE_RELATIONS})
        depth = {n: i["hops"] for n, i in zip(names(circle["items"]), circle["items"], strict=True)}
        assert depth == {USER: 0, GLOBEX: 1, SAM: 1, MIA: 1, ACME: 2}
        assert triples(circle["relations"]) == {
            (USER, "works_at", GLOBEX),
            (USER, "knows", SAM),
            (USER, "sibling_of", MIA),
            (SAM, "works_at", ACME),
        }
        close_by = await agent.ok("explore", {"from": USER})
        assert {coffee, run, home, globex_job["id"]} <= set(ids(close_by["items"]))
        assert {(coffee, "about", USER), (run, "about", USER), (USER, "works_at", GLOBEX)} <= triples(
            close_by["relations"]
        )

        path = await agent.ok("explore", {"from": MIA, "to": ACME, "types": PEOPLE_RELATIONS})
        assert path["path_found"] is True
        assert names(path["items"]) == [MIA, USER, SAM, ACME]
        assert [i["hops"] for i in path["items"]] == [0, 1, 2, 3]
        assert [(r["from"], r["type"], r["to"]) for r in path["relations"]] == [
            (USER, "sibling_of", MIA),
            (USER, "knows", SAM),
            (SAM, "works_at", ACME),
        ]
        any_way = await agent.ok("explore", {"from": MIA, "to": ACME})
        assert any_way["path_found"] is True
        assert (names(any_way["items"])[0], names(any_way["items"])[-1], len(any_way["relations"])) == (MIA, ACME, 3)
        no_way = await agent.ok("explore", {"from": MIA, "to": GLOBEX, "types": ["knows"]})
        assert (no_way["items"], no_way["relations"], no_way["path_found"]) == ([], [], False)

        # -- history -------------------------------------------------------------------------------
        home_history = (await agent.ok("audit", {"ref": home}))["changes"]
        assert [c["op"] for c in home_history] == ["create_node", "set_props"]
        assert home_history[0]["data"]["memory"]["content"] == HOME_LYON
        assert home_history[1]["data"]["props"] == {"content": HOME_FIXED}
        assert home_history[0]["seq"] < home_history[1]["seq"]
        job_history = (await agent.ok("audit", {"ref": acme_job}))["changes"]
        assert [c["op"] for c in job_history] == ["create_edge", "close_edge"]
        assert job_history[1]["data"]["valid_to"] == switch
        feed = await agent.ok("audit", {"since": 1, "limit": 5})
        assert [c["seq"] for c in feed["changes"]] == [1, 2, 3, 4, 5]
        assert feed["changes"][0]["data"]["entity"]["name"] == USER
        assert feed["next_since"] == 6

        # -- day 4: "please forget where my sister lives" ---------------------------------------------
        await next_day()
        forgotten = await agent.ok("forget", {"refs": sha(SISTER)})
        assert forgotten == {"results": [{"ref": sha(SISTER), "forgotten": True, "kind": "memory", "id": sister}]}
        assert await agent.recall(query="Montreal") == []
        assert await agent.recall(query="Montreal sister", kinds=["memory"], include_superseded=True) == []
        assert await agent.recall(about=[MIA]) == []
        assert (await agent.ok("get", {"refs": [sister, sha(SISTER)]}))["items"] == [
            {"ref": sister, "error": "not found"},
            {"ref": sha(SISTER), "error": "not found"},
        ]
        assert sister not in ids((await agent.ok("explore", {"from": USER, "hops": 2}))["items"])
        around_mia = await agent.ok("explore", {"from": MIA})
        assert names(around_mia["items"]) == [MIA, USER]
        assert triples(around_mia["relations"]) == {(USER, "sibling_of", MIA)}
        assert "nothing found" in await agent.refused("audit", {"ref": sister})
        # Forgetting it again finds nothing to forget; the sister herself is still known.
        assert (await agent.ok("forget", {"refs": [sister]}))["results"] == [
            {"ref": sister, "forgotten": False, "reason": "not found"}
        ]
        assert names(await agent.recall(query="Mia", kinds=["entity"])) == [MIA]

        # -- the survey -----------------------------------------------------------------------------
        stats = await agent.ok("survey", {})
        # home, job, tea, meetings, goal, teammate, coffee, run, Globex job (superseded ones count).
        assert stats["memories"] == 9
        assert stats["entities"] == 5
        assert stats["observations"] == 6
        # 12 about-links, 2 supersedes, 3 works_at (one closed), knows, sibling_of.
        assert stats["relations"] == 19
        assert stats["embeddings"] == 0
        assert stats["scopes"] == ["shared"]
        created = {i["id"]: i["created"] for i in await agent.recall(kinds=["memory"], include_superseded=True)}
        assert stats["oldest_memory"] == created[home]
        assert stats["newest_memory"] == created[globex_job["id"]]
        assert stats["top_tags"][0] == {"name": "preference", "count": 3}
        assert {"name": "running", "count": 2} in stats["top_tags"]
        assert {"name": "family", "count": 1} not in stats["top_tags"]  # went with the sister's memory
        assert stats["top_entity_types"] == [{"name": "person", "count": 3}, {"name": "company", "count": 2}]
        assert stats["top_relation_types"][0] == {"name": "about", "count": 12}
        assert {"name": "works_at", "count": 2} in stats["top_relation_types"]  # open ones
        assert stats["current_seq"] == (await agent.ok("audit", {"since": 1, "limit": 1}))["current_seq"]
        assert stats["size_bytes"] > 0

    # -- the same file through the compatibility profiles ---------------------------------------------
    async with Client(serve_params(db, "memdb"), mode="legacy") as memdb:
        found = await memdb.call_tool("search_memories", {"query": "Villeurbanne"})
        assert found.structured_content is not None
        assert found.structured_content["ok"] is True
        [hit] = found.structured_content["result"]
        assert (hit["content"], hit["hash"], hit["tags"], hit["importance"], hit["memory_type"]) == (
            HOME_FIXED,
            sha(HOME_FIXED),
            ["home", "identity"],
            6,
            "fact",
        )
        flat = await memdb.call_tool("search_memories", {"query": "flat white"})
        assert flat.structured_content is not None
        assert [m["hash"] for m in flat.structured_content["result"]] == [sha(COFFEE)]
        counted = await memdb.call_tool("memory_stats", {})
        assert counted.structured_content is not None
        assert counted.structured_content["result"]["memoryCount"] == 9
        gone = await memdb.call_tool("get_memory", {"hash": sha(SISTER)})
        assert gone.structured_content == {"ok": False, "error": {"code": "E_NOT_FOUND", "message": "Memory not found"}}

    kg_params = serve_params(db, "knowledge-graph", env=NO_MEMORY_FILE, cwd=tmp_path)
    async with Client(kg_params, mode="legacy") as kg:
        opened_nodes = await kg.call_tool("open_nodes", {"names": [USER, GLOBEX, ACME, SAM, "Lena"]})
        graph = opened_nodes.structured_content
        assert graph is not None
        # In the order they were created, as server-memory lists them; unknown names are skipped.
        assert graph["entities"] == [
            {
                "name": USER,
                "entityType": "person",
                "observations": ["The user of this assistant", "Prefers to be called Dana"],
            },
            {"name": ACME, "entityType": "company", "observations": ["Data consultancy based in Lyon"]},
            {"name": SAM, "entityType": "person", "observations": ["Dana's teammate"]},
            {"name": GLOBEX, "entityType": "company", "observations": ["Robotics start-up in Villeurbanne"]},
        ]
        # Current relations among them only: the closed Acme job is not one.
        assert {(r["from"], r["relationType"], r["to"]) for r in graph["relations"]} == {
            (USER, "works_at", GLOBEX),
            (USER, "knows", SAM),
            (SAM, "works_at", ACME),
        }
        searched = await kg.call_tool("search_nodes", {"query": "Whitfield"})
        assert searched.structured_content is not None
        assert {e["name"] for e in searched.structured_content["entities"]} == {USER, MIA}


# -- the past, as it was ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_as_of_shows_a_memory_as_it_was(tmp_path: Path) -> None:
    async with Client(serve_params(tmp_path / "m.db", "native"), mode="legacy") as client:
        agent = Agent(client)
        stored = await agent.ok("remember", {"memories": [{"content": HOME_LYON, "about": [USER], "importance": 2}]})
        home = stored["memories"][0]["id"]
        before = await next_day()
        await agent.ok("update", {"ref": home, "content": HOME_FIXED, "importance": 6, "add_tags": ["home"]})
        [got] = (await agent.ok("get", {"refs": home, "as_of": before}))["items"]
        walked = await agent.ok("explore", {"from": home, "as_of": before, "full": True})
    [shown] = [i for i in walked["items"] if i["id"] == home]
    # Its text, importance, hash and tags as they were: the hash names the text shown.
    for then in (got, shown):
        assert (then["text"], then["importance"]) == (HOME_LYON, 2)
        assert then["hash"] == sha(HOME_LYON)
        assert "tags" not in then


# -- time and corrections in explore -------------------------------------------------------------------


@pytest.mark.anyio
async def test_explore_as_of_sees_a_back_dated_relation(tmp_path: Path) -> None:
    async with Client(serve_params(tmp_path / "m.db", "native"), mode="legacy") as client:
        agent = Agent(client)
        await agent.ok("remember", {"entities": [{"name": USER, "type": "person"}, {"name": ACME, "type": "company"}]})
        await agent.ok("relate", {"add": [{"from": USER, "to": ACME, "type": "works_at", "valid_from": "2024-01-15"}]})
        # Where did Dana work in mid-2025? The relation says: at Acme, since January 2024.
        then = await agent.ok("explore", {"from": USER, "as_of": "2025-06-01"})
    assert names(then["items"]) == [USER, ACME]
    assert triples(then["relations"]) == {(USER, "works_at", ACME)}


@pytest.mark.anyio
async def test_explore_leaves_out_or_marks_a_superseded_memory(tmp_path: Path) -> None:
    async with Client(serve_params(tmp_path / "m.db", "native"), mode="legacy") as client:
        agent = Agent(client)
        stored = await agent.ok("remember", {"memories": [{"content": TEA, "about": [USER], "type": "preference"}]})
        tea = stored["memories"][0]["id"]
        await agent.ok(
            "remember", {"memories": [{"content": COFFEE, "about": [USER], "type": "preference", "supersedes": tea}]}
        )
        assert texts(await agent.recall(about=[USER])) == {COFFEE}  # recall gets this right
        around = await agent.ok("explore", {"from": USER})
    shown = {i["id"]: i for i in around["items"]}
    assert COFFEE in texts(around["items"])
    assert tea not in shown or shown[tea].get("superseded_by")
