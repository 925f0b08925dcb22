"""Search ranking in the memdb profile: the deliberate fixes over memdb's own ranking.

memdb scored content matches as 1/(1+|bm25|), which ranks weaker matches first, and
ignored importance. mnemodb keeps the `relevance` field and its range but ranks better
matches first and lets importance order otherwise equal matches.

Every fixture is stored in one `store_memories` call, so all memories share one
creation time and recency cannot decide the order. The server is the one `mnemodb serve`
builds, in this process, spoken to by the SDK's client over in-memory streams.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp_types import CallToolResult, TextContent

import inprocess

pytestmark = [pytest.mark.anyio, pytest.mark.inprocess]

MAX_RELEVANCE = 1.15
# Unrelated memories, so that no query word is in most of the collection.
FILLER = [
    "the quarterly report is due in march",
    "coffee beans come from ethiopia",
    "ferries leave the harbour every hour",
    "the printer on floor two is broken",
    "violin lessons resume next week",
    "the garden needs more mulch",
    "passwords rotate every ninety days",
    "the cat sleeps on the radiator",
]


def ok(result: CallToolResult) -> Any:
    assert result.is_error is False, result
    envelope = result.structured_content
    assert envelope is not None and envelope["ok"] is True, result
    block = result.content[0]
    assert isinstance(block, TextContent)
    assert json.loads(block.text) == envelope
    return envelope["result"]


async def store_all(client: Client, items: list[dict[str, Any]]) -> None:
    batch = ok(await client.call_tool("store_memories", {"items": items}))
    assert batch["failed"] == 0, batch


async def search(client: Client, query: str) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = ok(await client.call_tool("search_memories", {"query": query}))
    for row in results:
        assert 0 <= row["relevance"] <= MAX_RELEVANCE, row
    relevances = [row["relevance"] for row in results]
    assert relevances == sorted(relevances, reverse=True)
    return results


def plain(contents: list[str]) -> list[dict[str, Any]]:
    return [{"content": c, "tags": ["note"]} for c in contents]


async def test_repeated_term_ranks_at_or_above_weaker_matches(db_path: Path) -> None:
    # memdb's own example: its scores put "alpha alpha alpha alpha" last for "alpha".
    candidates = ["delta alpha", "alpha beta", "alpha", "alpha alpha alpha alpha"]
    async with inprocess.client(db_path) as client:
        await store_all(client, plain(candidates + FILLER))
        results = await search(client, "alpha")

    by_content = {row["content"]: row["relevance"] for row in results}
    assert set(by_content) == set(candidates)
    strongest = by_content["alpha alpha alpha alpha"]
    assert all(strongest >= other for other in by_content.values())
    assert results[0]["content"] == "alpha alpha alpha alpha"
    # "alpha" alone is a better match than "alpha" diluted by another word.
    assert by_content["alpha"] > by_content["delta alpha"]
    assert by_content["alpha"] > by_content["alpha beta"]


async def test_matching_every_query_word_ranks_first(db_path: Path) -> None:
    candidates = [
        "banana bread recipe",
        "apple orchard visit",
        "apple banana smoothie",
        "apple apple apple apple",
        "banana banana banana split",
    ]
    async with inprocess.client(db_path) as client:
        await store_all(client, plain(candidates + FILLER))
        results = await search(client, "apple banana")
        reversed_query = await search(client, "banana apple")

    assert {row["content"] for row in results} == set(candidates)
    assert results[0]["content"] == "apple banana smoothie"
    assert results[0]["relevance"] > results[1]["relevance"]
    assert [row["hash"] for row in reversed_query] == [row["hash"] for row in results]


async def test_importance_orders_equal_text_matches(db_path: Path) -> None:
    # Two pairs with identical text relevance. In each pair the first one stored (the
    # older id) is the less important in one pair and the more important in the other,
    # so neither insertion order nor id can produce the expected order.
    items = [
        {"content": "kiwi fact alpha", "tags": ["fruit"], "importance": 2},
        {"content": "kiwi fact bravo", "tags": ["fruit"], "importance": 9},
        {"content": "mango note delta", "tags": ["fruit"], "importance": 8},
        {"content": "mango note gamma", "tags": ["fruit"], "importance": 1},
        *plain(FILLER),
    ]
    async with inprocess.client(db_path) as client:
        await store_all(client, items)
        kiwi = await search(client, "kiwi")
        mango = await search(client, "mango")
        unimportant = await search(client, "fact")

    assert [(row["content"], row["importance"]) for row in kiwi] == [("kiwi fact bravo", 9), ("kiwi fact alpha", 2)]
    assert [(row["content"], row["importance"]) for row in mango] == [("mango note delta", 8), ("mango note gamma", 1)]
    assert kiwi[0]["relevance"] > kiwi[1]["relevance"]
    assert mango[0]["relevance"] > mango[1]["relevance"]
    assert [row["content"] for row in unimportant] == ["kiwi fact bravo", "kiwi fact alpha"]


async def test_importance_does_not_bury_a_much_better_match(db_path: Path) -> None:
    rambling = (
        "a long rambling note that mentions a quokka once among many many other words "
        "about travel plans weather forecasts ferry times and lunch options"
    )
    items = [
        {"content": "quokka", "tags": ["animal"], "importance": 0},
        {"content": rambling, "tags": ["animal"], "importance": 1},
        *plain(FILLER),
    ]
    async with inprocess.client(db_path) as client:
        await store_all(client, items)
        results = await search(client, "quokka")
    assert [row["content"] for row in results] == ["quokka", rambling]


async def test_relevance_stays_within_range(db_path: Path) -> None:
    items = [
        {"content": "zephyr", "tags": ["zephyr"], "importance": 10, "memory_type": "fact"},
        {"content": "zephyr zephyr zephyr", "tags": ["wind"], "importance": 10},
        {"content": "gentle zephyr over the bay", "tags": ["weather"], "importance": 0},
        {"content": "no match in the text", "tags": ["Zephyr"], "importance": 10},
        {"content": "no match in the text either", "tags": ["zephyr"], "importance": 0},
        *plain(FILLER),
    ]
    async with inprocess.client(db_path) as client:
        await store_all(client, items)
        results = await search(client, "zephyr")
        recalled = ok(await client.call_tool("recall", {"query": "zephyr", "depth": 0}))
        everything = await search(client, "the")

    assert len(results) == 5
    assert all(0 < row["relevance"] <= MAX_RELEVANCE for row in results)
    # memdb's scale: a fresh, important, best match scores above 1 (recency adds up to 0.15).
    assert results[0]["importance"] == 10
    assert 1.0 < results[0]["relevance"] <= MAX_RELEVANCE
    assert all(0 <= row["relevance"] <= MAX_RELEVANCE for row in recalled["memories"])
    assert all(0 <= row["relevance"] <= MAX_RELEVANCE for row in everything)
