"""Behaviour of the memdb profile's 12 tools, spoken to by the SDK's client (or in raw
JSON-RPC) over in-memory streams, to the server `mnemodb serve` builds, in this process.

A client written for memdb must not notice the difference: tool names and schemas,
the `{ok, result}` / `{ok: false, error}` envelopes (structured and as compact JSON
text), key orders, error codes and messages, and the SDK-style validation texts.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp_types import CallToolResult, TextContent

import inprocess
from inprocess import Wire
from mnemodb.engine import Engine
from support import PROFILE_TOOLS

pytestmark = pytest.mark.inprocess

TOOL_NAMES = PROFILE_TOOLS["memdb"]
MEMORY_KEYS = ["id", "content", "tags", "importance", "memory_type", "created_at", "accessed_at", "hash"]
SEARCH_KEYS = [*MEMORY_KEYS, "relevance"]
RELATIONSHIP_KEYS = ["id", "from_hash", "to_hash", "relation_type", "created_at"]
MEMORY_TYPES = ["general", "fact", "plan", "decision", "reflection", "lesson", "error", "gradient"]
TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$")
HASH_PATTERN = "^[a-fA-F0-9]{64}$"
INVALID_PREFIX = "MCP error -32602: Input validation error: Invalid arguments for tool "
MAX_RELEVANCE = 1.15
MISSING = "f" * 64


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def text_of(result: CallToolResult) -> str:
    assert len(result.content) == 1, result
    block = result.content[0]
    assert isinstance(block, TextContent), result
    return block.text


def ok(result: CallToolResult) -> Any:
    """The `result` of a success envelope, after checking both renderings of it."""
    assert result.is_error is False, result
    envelope = result.structured_content
    assert envelope is not None, result
    assert list(envelope) == ["ok", "result"]
    assert envelope["ok"] is True
    text = text_of(result)
    assert text == compact(envelope)
    assert "\n" not in text
    return envelope["result"]


def fail(result: CallToolResult, code: str, message: str) -> None:
    """An error envelope with this code and message, structured and as text."""
    assert result.is_error is True, result
    envelope = result.structured_content
    assert envelope == {"ok": False, "error": {"code": code, "message": message}}
    assert list(envelope) == ["ok", "error"]
    assert list(envelope["error"]) == ["code", "message"]
    assert text_of(result) == compact(envelope)


def invalid_text(tool: str, issues: list[dict[str, Any]]) -> str:
    return INVALID_PREFIX + tool + ": " + json.dumps(issues, indent=2, ensure_ascii=False)


def parse_time(value: str) -> datetime:
    assert TIMESTAMP.match(value), value
    return datetime.strptime(value, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)


def now_to_second() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


async def store(client: Client, content: str, tags: list[str], **extra: Any) -> dict[str, Any]:
    value: dict[str, Any] = ok(await client.call_tool("store_memory", {"content": content, "tags": tags, **extra}))
    return value


async def get(client: Client, digest: str) -> dict[str, Any]:
    value: dict[str, Any] = ok(await client.call_tool("get_memory", {"hash": digest}))
    return value


async def relate(client: Client, src: str, dst: str, relation: str) -> dict[str, Any]:
    args = {"from_hash": src, "to_hash": dst, "relation_type": relation}
    value: dict[str, Any] = ok(await client.call_tool("create_relationship", args))
    return value


# -- the tools/list surface ---------------------------------------------------------------------------

OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean"},
        "result": {},
        "error": {
            "type": "object",
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
            "required": ["code", "message"],
            "additionalProperties": False,
        },
    },
    "required": ["ok"],
    "additionalProperties": False,
}

TITLES = {
    "store_memory": "Store Memory",
    "store_memories": "Store Multiple Memories",
    "get_memory": "Get Memory",
    "delete_memory": "Delete Memory",
    "delete_memories": "Delete Multiple Memories",
    "update_memory": "Update Memory",
    "search_memories": "Search Memories",
    "recall": "Recall Memories",
    "create_relationship": "Create Relationship",
    "get_relationships": "Get Relationships",
    "delete_relationship": "Delete Relationship",
    "memory_stats": "Memory Stats",
}

ANNOTATIONS: dict[str, dict[str, bool] | None] = {
    "store_memory": {"idempotentHint": True},
    "store_memories": {"idempotentHint": True},
    "get_memory": None,
    "delete_memory": {"destructiveHint": True},
    "delete_memories": {"destructiveHint": True},
    "update_memory": {"idempotentHint": True},
    "search_memories": {"readOnlyHint": True},
    "recall": {"readOnlyHint": True},
    "create_relationship": {"idempotentHint": True},
    "get_relationships": {"readOnlyHint": True},
    "delete_relationship": {"destructiveHint": True},
    "memory_stats": {"readOnlyHint": True},
}

REQUIRED = {
    "store_memory": ["content", "tags"],
    "store_memories": ["items"],
    "get_memory": ["hash"],
    "delete_memory": ["hash"],
    "delete_memories": ["hashes"],
    "update_memory": ["hash", "content"],
    "search_memories": ["query"],
    "recall": ["query"],
    "create_relationship": ["from_hash", "to_hash", "relation_type"],
    "get_relationships": ["hash"],
    "delete_relationship": ["from_hash", "to_hash", "relation_type"],
    "memory_stats": [],
}


def limits(schema: dict[str, Any]) -> dict[str, Any]:
    """A property's schema without its prose."""
    out = {k: v for k, v in schema.items() if k != "description"}
    if isinstance(out.get("items"), dict):
        out["items"] = limits(out["items"])
    if isinstance(out.get("properties"), dict):
        out["properties"] = {k: limits(v) for k, v in out["properties"].items()}
    return out


CONTENT = {"type": "string", "minLength": 1, "maxLength": 100000}
TAG = {"type": "string", "minLength": 1, "maxLength": 50, "pattern": r"^\S+$"}
TAGS = {"type": "array", "items": TAG, "minItems": 1, "maxItems": 100}
IMPORTANCE = {"type": "integer", "minimum": 0, "maximum": 10}
MEMORY_TYPE = {"type": "string", "enum": MEMORY_TYPES}
HASH = {"type": "string", "pattern": HASH_PATTERN}
QUERY = {"type": "string", "minLength": 1, "maxLength": 1000}
RELATION_TYPE = {"type": "string", "minLength": 1, "maxLength": 50, "pattern": r"^\S+$"}

PROPERTIES: dict[str, dict[str, Any]] = {
    "store_memory": {"content": CONTENT, "tags": TAGS, "importance": IMPORTANCE, "memory_type": MEMORY_TYPE},
    "store_memories": {
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "content": CONTENT,
                    "tags": TAGS,
                    "importance": IMPORTANCE,
                    "memory_type": MEMORY_TYPE,
                },
                "required": ["content", "tags"],
                "additionalProperties": False,
            },
            "minItems": 1,
            "maxItems": 50,
        }
    },
    "get_memory": {"hash": HASH},
    "delete_memory": {"hash": HASH},
    "delete_memories": {"hashes": {"type": "array", "items": HASH, "minItems": 1, "maxItems": 50}},
    "update_memory": {
        "hash": HASH,
        "content": CONTENT,
        "tags": {"type": "array", "items": TAG, "maxItems": 100},
    },
    "search_memories": {"query": QUERY},
    "recall": {"query": QUERY, "depth": {"type": "integer", "minimum": 0, "maximum": 3}},
    "create_relationship": {"from_hash": HASH, "to_hash": HASH, "relation_type": RELATION_TYPE},
    "get_relationships": {"hash": HASH, "direction": {"type": "string", "enum": ["outgoing", "incoming", "both"]}},
    "delete_relationship": {"from_hash": HASH, "to_hash": HASH, "relation_type": RELATION_TYPE},
    "memory_stats": {},
}


@pytest.mark.anyio
async def test_tools_and_resources_listed_as_memdb(db_path: Path) -> None:
    async with inprocess.client(db_path, mode="legacy") as client:
        assert client.server_info is not None
        assert client.server_info.name == "memdb"
        tools = (await client.list_tools()).tools
        resources = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        read = await client.read_resource("internal://instructions")

    assert [t.name for t in tools] == TOOL_NAMES
    for tool in tools:
        listed = tool.model_dump(by_alias=True, exclude_none=True)
        assert tool.title == TITLES[tool.name]
        assert tool.description
        assert listed.get("annotations") == ANNOTATIONS[tool.name], tool.name
        assert tool.output_schema == OUTPUT_SCHEMA, tool.name
        schema = tool.input_schema
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False, tool.name
        assert schema.get("required", []) == REQUIRED[tool.name], tool.name
        assert limits(schema)["properties"] == PROPERTIES[tool.name], tool.name
    stats = tools[-1].input_schema
    assert stats["description"] == "No parameters required"

    # The instructions are a resource template, not a listed resource.
    assert resources == []
    assert [(t.name, t.uri_template, t.title, t.mime_type) for t in templates] == [
        ("internal://instructions", "internal://instructions", "Instructions", "text/markdown")
    ]
    [contents] = read.contents
    assert contents.mime_type == "text/markdown"
    assert "search_memories" in getattr(contents, "text", "")


# -- store, get, delete ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_store_and_get_shapes(db_path: Path) -> None:
    content = "  Café notes: the build uses ruff ☕  "
    async with inprocess.client(db_path, mode="legacy") as client:
        before = now_to_second()
        result = await client.call_tool(
            "store_memory",
            {
                "content": content,
                "tags": ["Zeta", "alpha", "ALPHA", "Mid", "\uff21\uff30\uff29"],
                "importance": 7,
                "memory_type": "fact",
            },
        )
        after = datetime.now(UTC)
        stored = ok(result)
        assert list(stored) == ["id", "hash", "isNew"]
        assert isinstance(stored["id"], int)
        assert stored["hash"] == sha(content)  # raw content: no trimming, no case folding
        assert stored["isNew"] is True
        fetched = await client.call_tool("get_memory", {"hash": stored["hash"].upper()})
        memory = ok(fetched)
        variants = [await store(client, text, ["x"]) for text in (content.strip(), "hello", "Hello")]
        plain = await get(client, variants[1]["hash"])

    assert "Café notes" in text_of(fetched) and "☕" in text_of(fetched)  # not \u-escaped

    assert list(memory) == MEMORY_KEYS  # no `summary` key at all
    assert memory["id"] == stored["id"]
    assert memory["content"] == content
    assert memory["tags"] == ["alpha", "api", "mid", "zeta"]
    assert memory["importance"] == 7
    assert memory["memory_type"] == "fact"
    assert memory["hash"] == stored["hash"]
    created = parse_time(memory["created_at"])
    assert before <= created <= after  # UTC, to the second
    assert parse_time(memory["accessed_at"]) >= created

    # Every distinct string is its own memory; defaults are importance 0, type general.
    assert len({stored["hash"], *(v["hash"] for v in variants)}) == 4
    assert all(v["isNew"] for v in variants)
    assert (plain["importance"], plain["memory_type"]) == (0, "general")


@pytest.mark.anyio
async def test_restore_is_idempotent_and_merges_tags(db_path: Path) -> None:
    async with inprocess.client(db_path, mode="legacy") as client:
        first = await store(client, "deploys run on fridays", ["ops", "Deploy"], importance=2, memory_type="plan")
        again = await store(client, "deploys run on fridays", ["Calendar", "ops"], importance=9, memory_type="error")
        memory = await get(client, first["hash"])
        stats = ok(await client.call_tool("memory_stats", {}))
    assert again == {"id": first["id"], "hash": first["hash"], "isNew": False}
    assert memory["tags"] == ["calendar", "deploy", "ops"]
    # The existing memory keeps its importance and type.
    assert (memory["importance"], memory["memory_type"]) == (2, "plan")
    assert stats["memoryCount"] == 1


@pytest.mark.anyio
async def test_delete_memory(db_path: Path) -> None:
    async with inprocess.client(db_path, mode="legacy") as client:
        doomed = await store(client, "temporary note", ["tmp"])
        kept = await store(client, "permanent note", ["keep"])
        await relate(client, kept["hash"], doomed["hash"], "related_to")

        deleted = ok(await client.call_tool("delete_memory", {"hash": doomed["hash"].upper()}))
        assert deleted == {"deleted": True}

        fail(await client.call_tool("get_memory", {"hash": doomed["hash"]}), "E_NOT_FOUND", "Memory not found")
        fail(await client.call_tool("delete_memory", {"hash": doomed["hash"]}), "E_NOT_FOUND", "Memory not found")
        fail(await client.call_tool("delete_memory", {"hash": MISSING.upper()}), "E_NOT_FOUND", "Memory not found")
        # Its relationships went with it; the other memory is untouched.
        assert ok(await client.call_tool("get_relationships", {"hash": kept["hash"]})) == []
        assert (await get(client, kept["hash"]))["content"] == "permanent note"
        stats = ok(await client.call_tool("memory_stats", {}))
    assert stats["memoryCount"] == 1
    assert stats["tagCount"] == 1


@pytest.mark.anyio
async def test_delete_memories_partial_results(db_path: Path) -> None:
    async with inprocess.client(db_path, mode="legacy") as client:
        one = await store(client, "one", ["n"])
        two = await store(client, "two", ["n"])
        hashes = [one["hash"].upper(), MISSING.upper(), two["hash"], one["hash"]]
        result = ok(await client.call_tool("delete_memories", {"hashes": hashes}))
        stats = ok(await client.call_tool("memory_stats", {}))

    assert list(result) == ["results", "succeeded", "failed"]
    assert result["results"] == [
        {"hash": one["hash"], "deleted": True},
        {"hash": MISSING, "deleted": False, "error": "Memory not found"},
        {"hash": two["hash"], "deleted": True},
        {"hash": one["hash"], "deleted": False, "error": "Memory not found"},  # already gone
    ]
    assert [list(r) for r in result["results"]] == [
        ["hash", "deleted"],
        ["hash", "deleted", "error"],
        ["hash", "deleted"],
        ["hash", "deleted", "error"],
    ]
    assert (result["succeeded"], result["failed"]) == (2, 2)
    assert stats["memoryCount"] == 0


@pytest.mark.anyio
async def test_store_memories_partial_success_and_in_batch_duplicates(db_path: Path) -> None:
    # NFKC turns each "ﬃ" ligature into three letters: 17 of them pass the 50-character
    # schema limit but not the stored tag's.
    too_long_after_nfkc = "\ufb03" * 17
    items = [
        {"content": "alpha memory", "tags": ["Greek"], "importance": 3, "memory_type": "fact"},
        {"content": "broken memory", "tags": [too_long_after_nfkc]},
        {"content": "alpha memory", "tags": ["letters"]},
        {"content": "beta memory", "tags": ["greek"]},
    ]
    async with inprocess.client(db_path, mode="legacy") as client:
        result = ok(await client.call_tool("store_memories", {"items": items}))
        alpha = await get(client, sha("alpha memory"))
        search = ok(await client.call_tool("search_memories", {"query": "broken"}))
        again = ok(await client.call_tool("store_memories", {"items": [items[3]]}))

    assert list(result) == ["results", "succeeded", "failed"]
    assert result["results"] == [
        {"ok": True, "index": 0, "hash": sha("alpha memory"), "isNew": True},
        {"ok": False, "index": 1, "error": "Tag exceeds 50 characters"},
        {"ok": True, "index": 2, "hash": sha("alpha memory"), "isNew": False},
        {"ok": True, "index": 3, "hash": sha("beta memory"), "isNew": True},
    ]
    assert [list(r) for r in result["results"]] == [
        ["ok", "index", "hash", "isNew"],
        ["ok", "index", "error"],
        ["ok", "index", "hash", "isNew"],
        ["ok", "index", "hash", "isNew"],
    ]
    assert (result["succeeded"], result["failed"]) == (3, 1)
    assert alpha["tags"] == ["greek", "letters"]
    assert (alpha["importance"], alpha["memory_type"]) == (3, "fact")
    assert search == []  # the failed item left nothing behind
    assert again["results"] == [{"ok": True, "index": 0, "hash": sha("beta memory"), "isNew": False}]


# -- update ---------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_update_memory_keeps_identity_and_relationships(db_path: Path) -> None:
    async with inprocess.client(db_path, mode="legacy") as client:
        target = await store(client, "the API uses REST", ["api", "design"], importance=6, memory_type="decision")
        other = await store(client, "clients are generated", ["codegen"])
        link = await relate(client, target["hash"], other["hash"], "depends_on")
        original = await get(client, target["hash"])

        updated = ok(
            await client.call_tool("update_memory", {"hash": target["hash"].upper(), "content": "the API uses gRPC"})
        )
        assert list(updated) == ["updated", "oldHash", "newHash"]
        assert updated == {"updated": True, "oldHash": target["hash"], "newHash": sha("the API uses gRPC")}

        memory = await get(client, updated["newHash"])
        fail(await client.call_tool("get_memory", {"hash": target["hash"]}), "E_NOT_FOUND", "Memory not found")
        links = ok(await client.call_tool("get_relationships", {"hash": updated["newHash"]}))
        found = ok(await client.call_tool("search_memories", {"query": "gRPC"}))
        stale = ok(await client.call_tool("search_memories", {"query": "REST"}))

    assert memory["id"] == target["id"]
    assert memory["content"] == "the API uses gRPC"
    assert memory["tags"] == ["api", "design"]  # no tags given: kept
    assert (memory["importance"], memory["memory_type"]) == (6, "decision")
    assert memory["created_at"] == original["created_at"]
    assert [(r["id"], r["from_hash"], r["to_hash"], r["relation_type"]) for r in links] == [
        (link["id"], updated["newHash"], other["hash"], "depends_on")
    ]
    assert [m["hash"] for m in found] == [updated["newHash"]]
    assert stale == []


@pytest.mark.anyio
async def test_update_memory_tags_same_content_and_errors(db_path: Path) -> None:
    async with inprocess.client(db_path, mode="legacy") as client:
        memory = await store(client, "tagged note", ["old", "stale"])
        await store(client, "second text", ["b"])
        digest = memory["hash"]
        same = ok(
            await client.call_tool("update_memory", {"hash": digest, "content": "tagged note", "tags": ["New", "b"]})
        )
        assert same == {"updated": True, "oldHash": digest, "newHash": digest}
        assert (await get(client, digest))["tags"] == ["b", "new"]

        ok(await client.call_tool("update_memory", {"hash": digest, "content": "tagged note", "tags": []}))
        assert (await get(client, digest))["tags"] == []

        fail(
            await client.call_tool("update_memory", {"hash": MISSING, "content": "anything"}),
            "E_UPDATE_MEMORY",  # not E_NOT_FOUND
            "Memory not found",
        )
        fail(
            await client.call_tool("update_memory", {"hash": digest, "content": "second text", "tags": ["z"]}),
            "E_UPDATE_MEMORY",
            "Content already exists as another memory",
        )
        unchanged = await get(client, digest)
        stats = ok(await client.call_tool("memory_stats", {}))
    assert (unchanged["content"], unchanged["tags"]) == ("tagged note", [])
    assert (stats["memoryCount"], stats["tagCount"]) == (2, 1)


# -- relationships --------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_create_relationship(db_path: Path) -> None:
    async with inprocess.client(db_path, mode="legacy") as client:
        a = await store(client, "node a", ["g"])
        b = await store(client, "node b", ["g"])
        created = ok(
            await client.call_tool(
                "create_relationship",
                {"from_hash": a["hash"].upper(), "to_hash": b["hash"], "relation_type": "causes"},
            )
        )
        assert list(created) == ["id", "isNew"]
        assert isinstance(created["id"], int)
        assert created["isNew"] is True
        assert await relate(client, a["hash"], b["hash"].upper(), "causes") == {"id": created["id"], "isNew": False}
        # Type and direction are part of the identity; the type is case-sensitive.
        others = [
            await relate(client, a["hash"], b["hash"], "Causes"),
            await relate(client, b["hash"], a["hash"], "causes"),
        ]
        assert all(o["isNew"] for o in others)
        assert len({created["id"], *(o["id"] for o in others)}) == 3

        missing_upper = "ABCDEF" + "0" * 58
        fail(
            await client.call_tool(
                "create_relationship", {"from_hash": missing_upper, "to_hash": b["hash"], "relation_type": "causes"}
            ),
            "E_CREATE_RELATIONSHIP",
            f"Memory not found: {missing_upper.lower()}",
        )
        fail(
            await client.call_tool(
                "create_relationship", {"from_hash": a["hash"], "to_hash": missing_upper, "relation_type": "causes"}
            ),
            "E_CREATE_RELATIONSHIP",
            f"Memory not found: {missing_upper.lower()}",
        )
        fail(
            await client.call_tool(
                "create_relationship", {"from_hash": MISSING, "to_hash": missing_upper, "relation_type": "causes"}
            ),
            "E_CREATE_RELATIONSHIP",
            f"Memory not found: {MISSING}",  # the source is checked first
        )
        fail(
            await client.call_tool(
                "create_relationship",
                {"from_hash": a["hash"], "to_hash": a["hash"].upper(), "relation_type": "causes"},
            ),
            "E_CREATE_RELATIONSHIP",
            "Cannot create self-referential relationship",
        )
        links = ok(await client.call_tool("get_relationships", {"hash": a["hash"]}))
    assert len(links) == 3


@pytest.mark.anyio
async def test_get_relationships_order_and_direction(db_path: Path) -> None:
    async with inprocess.client(db_path, mode="legacy") as client:
        a, b, c = [(await store(client, f"memory {name}", ["g"]))["hash"] for name in ("a", "b", "c")]
        # Created in an order that differs from the listing order.
        plan = [(a, b, "zeta"), (c, a, "alpha"), (a, c, "alpha"), (b, a, "Beta"), (a, b, "alpha"), (b, c, "alpha")]
        ids = {}
        for src, dst, relation in plan:
            ids[src, dst, relation] = (await relate(client, src, dst, relation))["id"]

        both = ok(await client.call_tool("get_relationships", {"hash": a.upper()}))
        default_both = ok(await client.call_tool("get_relationships", {"hash": a, "direction": "both"}))
        outgoing = ok(await client.call_tool("get_relationships", {"hash": a, "direction": "outgoing"}))
        incoming = ok(await client.call_tool("get_relationships", {"hash": a, "direction": "incoming"}))
        unknown = ok(await client.call_tool("get_relationships", {"hash": MISSING}))

    def expected(keep: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
        # Binary order: "Beta" sorts before "alpha"; ties by from_hash, then to_hash.
        return sorted(keep, key=lambda t: (t[2], t[0], t[1]))

    touching = [t for t in plan if a in (t[0], t[1])]
    assert [(r["from_hash"], r["to_hash"], r["relation_type"]) for r in both] == expected(touching)
    assert both[0]["relation_type"] == "Beta"
    assert default_both == both
    for row in both:
        assert list(row) == RELATIONSHIP_KEYS
        assert row["id"] == ids[row["from_hash"], row["to_hash"], row["relation_type"]]
        parse_time(row["created_at"])
    assert [(r["from_hash"], r["to_hash"], r["relation_type"]) for r in outgoing] == expected(
        [t for t in plan if t[0] == a]
    )
    assert [(r["from_hash"], r["to_hash"], r["relation_type"]) for r in incoming] == expected(
        [t for t in plan if t[1] == a]
    )
    assert unknown == []


@pytest.mark.anyio
async def test_delete_relationship(db_path: Path) -> None:
    async with inprocess.client(db_path, mode="legacy") as client:
        a = (await store(client, "from here", ["g"]))["hash"]
        b = (await store(client, "to there", ["g"]))["hash"]
        await relate(client, a, b, "leads_to")
        await relate(client, a, b, "mentions")

        def args(src: str, dst: str, relation: str) -> dict[str, str]:
            return {"from_hash": src, "to_hash": dst, "relation_type": relation}

        not_found = ("E_NOT_FOUND", "Relationship not found")
        fail(await client.call_tool("delete_relationship", args(b, a, "leads_to")), *not_found)  # wrong way round
        fail(await client.call_tool("delete_relationship", args(a, b, "Leads_To")), *not_found)  # case-sensitive
        fail(await client.call_tool("delete_relationship", args(MISSING, b, "leads_to")), *not_found)
        deleted = ok(await client.call_tool("delete_relationship", args(a.upper(), b.upper(), "leads_to")))
        assert deleted == {"deleted": True}
        fail(await client.call_tool("delete_relationship", args(a, b, "leads_to")), *not_found)
        remaining = ok(await client.call_tool("get_relationships", {"hash": a}))
    assert [r["relation_type"] for r in remaining] == ["mentions"]


# -- search and recall -------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_search_shapes_tags_and_trimming(db_path: Path) -> None:
    async with inprocess.client(db_path, mode="legacy") as client:
        text_hit = await store(client, "Zebras sleep standing up", ["animals"], importance=4, memory_type="fact")
        tag_hit = await store(client, "Notes from the safari trip", ["Giraffe"])
        await store(client, "Unrelated memory about tea", ["drinks"])

        results = ok(await client.call_tool("search_memories", {"query": "  GIRAFFE  "}))
        by_text = ok(await client.call_tool("search_memories", {"query": "sleeping"}))  # stemmed
        nothing = ok(await client.call_tool("search_memories", {"query": "volcano"}))

    assert [r["hash"] for r in results] == [tag_hit["hash"]]  # the tag matches, the content does not
    assert [r["hash"] for r in by_text] == [text_hit["hash"]]
    for row in results + by_text:
        assert list(row) == SEARCH_KEYS
        assert 0 <= row["relevance"] <= MAX_RELEVANCE
        parse_time(row["created_at"])
        parse_time(row["accessed_at"])
    row = by_text[0]
    assert (row["content"], row["tags"], row["importance"], row["memory_type"]) == (
        "Zebras sleep standing up",
        ["animals"],
        4,
        "fact",
    )
    assert nothing == []


@pytest.mark.anyio
async def test_search_shows_a_summary_after_the_content_when_there_is_one(db_path: Path) -> None:
    # memdb's tools write no summary; another profile's can, and a search then shows it.
    with Engine.open(str(db_path)) as engine:
        summed = engine.memories.store("Kestrels hover over the meadow", ["birds"], 5, "fact", summary="hovering")
        plain = engine.memories.store("Kestrels nest on ledges", ["birds"], 2, "general")
    async with inprocess.client(db_path, mode="legacy") as client:
        found = ok(await client.call_tool("search_memories", {"query": "kestrels"}))

    by_hash = {row["hash"]: row for row in found}
    assert set(by_hash) == {summed.memory.hash, plain.memory.hash}
    with_summary, without = by_hash[summed.memory.hash], by_hash[plain.memory.hash]
    assert list(with_summary) == ["id", "content", "summary", *SEARCH_KEYS[2:]]
    assert list(without) == SEARCH_KEYS
    assert (with_summary["content"], with_summary["summary"], with_summary["tags"]) == (
        "Kestrels hover over the meadow",
        "hovering",
        ["birds"],
    )
    assert (with_summary["importance"], with_summary["memory_type"], with_summary["id"]) == (
        5,
        "fact",
        summed.memory.pk,
    )
    assert (without["content"], without["importance"], without["memory_type"]) == (
        "Kestrels nest on ledges",
        2,
        "general",
    )
    assert with_summary["accessed_at"] == with_summary["created_at"]  # never read before this search


@pytest.mark.anyio
async def test_search_and_recall_query_errors(db_path: Path) -> None:
    fifty = " ".join(f"word{i}" for i in range(50))
    async with inprocess.client(db_path, mode="legacy") as client:
        await store(client, "word1 is here", ["w"])
        assert len(ok(await client.call_tool("search_memories", {"query": fifty}))) == 1
        for tool, code in (("search_memories", "E_SEARCH_MEMORIES"), ("recall", "E_RECALL")):
            fail(await client.call_tool(tool, {"query": fifty + " extra"}), code, "Query has too many terms (max 50)")
            fail(await client.call_tool(tool, {"query": "apple " * 51}), code, "Query has too many terms (max 50)")
            fail(await client.call_tool(tool, {"query": "---"}), code, "Query cannot be empty")
            fail(await client.call_tool(tool, {"query": "?! ..."}), code, "Query cannot be empty")


@pytest.mark.anyio
async def test_query_terms_are_counted_as_memdb_counts_words(db_path: Path) -> None:
    # memdb counted words with a Unicode word segmenter: "don't", "it's" and
    # "snake_case" are one word each, so these 40-word queries are within the limit.
    contractions = " ".join(["don't", "it's", "we're", "can't"] * 10)
    identifiers = " ".join(f"field_{i}" for i in range(40))
    async with inprocess.client(db_path, mode="legacy") as client:
        await store(client, "we can't ship it yet", ["release"])
        for tool in ("search_memories", "recall"):
            ok(await client.call_tool(tool, {"query": contractions}))
            ok(await client.call_tool(tool, {"query": identifiers}))


@pytest.mark.anyio
async def test_search_caps_at_100_and_recall_at_50(db_path: Path) -> None:
    items = [{"content": f"shared keyword entry {i}", "tags": ["bulk"], "importance": (i * 7) % 11} for i in range(105)]
    async with inprocess.client(db_path, mode="legacy") as client:
        for start in range(0, len(items), 50):
            batch = ok(await client.call_tool("store_memories", {"items": items[start : start + 50]}))
            assert batch["failed"] == 0
        searched = ok(await client.call_tool("search_memories", {"query": "keyword"}))
        shallow = ok(await client.call_tool("recall", {"query": "keyword", "depth": 0}))
        deep = ok(await client.call_tool("recall", {"query": "keyword"}))
        stats = ok(await client.call_tool("memory_stats", {}))

    assert stats["memoryCount"] == 105
    assert len(searched) == 100
    relevances = [r["relevance"] for r in searched]
    assert relevances == sorted(relevances, reverse=True)
    assert all(0 <= r <= MAX_RELEVANCE for r in relevances)

    assert shallow["depth"] == 0 and shallow["relationships"] == []
    assert [m["hash"] for m in shallow["memories"]] == [r["hash"] for r in searched]
    for got, want in zip(shallow["memories"], searched, strict=True):
        assert list(got) == SEARCH_KEYS
        assert got["relevance"] == pytest.approx(want["relevance"], abs=1e-3)

    assert deep["depth"] == 1 and deep["relationships"] == []
    # At most 50; the seeds keep the search order, each at relevance 1/(1+0).
    assert [m["hash"] for m in deep["memories"]] == [r["hash"] for r in searched[:50]]
    assert all(m["relevance"] == 1.0 for m in deep["memories"])


@pytest.mark.anyio
async def test_recall_follows_relationships_by_depth(db_path: Path) -> None:
    async with inprocess.client(db_path, mode="legacy") as client:
        seed = (await store(client, "orchid greenhouse notes", ["plants"]))["hash"]
        bravo = (await store(client, "bravo fertiliser brand", ["supplies"]))["hash"]
        fox = (await store(client, "foxtrot lamp timer", ["supplies"]))["hash"]
        charlie = (await store(client, "charlie watering schedule", ["chores"]))["hash"]
        delta = (await store(client, "delta soil mix", ["supplies"]))["hash"]
        echo = (await store(client, "echo far away", ["misc"]))["hash"]
        edges = {
            (seed, bravo, "uses"),
            (seed, fox, "uses"),
            (bravo, fox, "related_to"),  # between two depth-1 memories: listed, never walked
            (charlie, bravo, "depends_on"),  # incoming edges are followed too
            (delta, charlie, "part_of"),
            (echo, delta, "follows"),
        }
        for src, dst, relation in sorted(edges):
            await relate(client, src, dst, relation)

        searched = ok(await client.call_tool("search_memories", {"query": "orchid"}))
        results = {d: ok(await client.call_tool("recall", {"query": "orchid", "depth": d})) for d in range(4)}
        default = ok(await client.call_tool("recall", {"query": "Orchid"}))
        empty = ok(await client.call_tool("recall", {"query": "nonexistent", "depth": 2}))

    def depth_of(memories: list[dict[str, Any]]) -> dict[str, float]:
        return {m["hash"]: m["relevance"] for m in memories}

    zero = results[0]
    assert list(zero) == ["memories", "relationships", "depth"]
    assert zero["depth"] == 0 and zero["relationships"] == []
    assert [m["hash"] for m in zero["memories"]] == [seed]
    assert zero["memories"][0]["relevance"] == pytest.approx(searched[0]["relevance"], abs=1e-3)

    expected_levels = [
        {seed: 1.0},
        {bravo: 1 / 2, fox: 1 / 2},
        {charlie: 1 / 3},
        {delta: 1 / 4},
    ]
    for depth in (1, 2, 3):
        result = results[depth]
        assert list(result) == ["memories", "relationships", "depth"]
        assert result["depth"] == depth
        want: dict[str, float] = {}
        for level in expected_levels[: depth + 1]:
            want.update(level)
        assert depth_of(result["memories"]) == pytest.approx(want)
        relevances = [m["relevance"] for m in result["memories"]]
        assert relevances == sorted(relevances, reverse=True)  # nearer memories first
        for memory in result["memories"]:
            assert list(memory) == SEARCH_KEYS
        returned = set(want)
        among = [(s, d, r) for s, d, r in edges if s in returned and d in returned]
        rows = result["relationships"]
        assert [(r["from_hash"], r["to_hash"], r["relation_type"]) for r in rows] == sorted(
            among, key=lambda t: (t[2], t[0], t[1])
        )
        for row in rows:
            assert list(row) == RELATIONSHIP_KEYS
    assert echo not in depth_of(results[3]["memories"])
    assert default["depth"] == 1
    assert depth_of(default["memories"]) == depth_of(results[1]["memories"])
    assert empty == {"memories": [], "relationships": [], "depth": 2}


# -- memory_stats ------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_memory_stats(db_path: Path) -> None:
    async with inprocess.client(db_path, mode="legacy") as client:
        empty = ok(await client.call_tool("memory_stats", {}))
        no_arguments = ok(await client.call_tool("memory_stats"))
        before = now_to_second()
        await store(client, "stats one", ["red", "green"])
        await store(client, "stats two", ["GREEN", "blue"])
        after = datetime.now(UTC)
        full = ok(await client.call_tool("memory_stats", {}))

    assert empty == {"memoryCount": 0, "tagCount": 0, "oldestMemory": None, "newestMemory": None}
    assert list(empty) == ["memoryCount", "tagCount", "oldestMemory", "newestMemory"]
    assert no_arguments == empty
    assert list(full) == ["memoryCount", "tagCount", "oldestMemory", "newestMemory"]
    assert (full["memoryCount"], full["tagCount"]) == (2, 3)
    oldest, newest = parse_time(full["oldestMemory"]), parse_time(full["newestMemory"])
    assert before <= oldest <= newest <= after


# -- other protocol eras, unknown tools ---------------------------------------------------------------


@pytest.mark.anyio
async def test_modern_protocol_era(db_path: Path) -> None:
    async with inprocess.client(db_path, mode="auto") as client:
        assert client.protocol_version >= "2026-07-28"
        assert [t.name for t in (await client.list_tools()).tools] == TOOL_NAMES
        stored = await store(client, "modern era memory", ["Era"])
        assert (await get(client, stored["hash"]))["tags"] == ["era"]
        found = ok(await client.call_tool("search_memories", {"query": "modern"}))
        assert [m["hash"] for m in found] == [stored["hash"]]
        fail(await client.call_tool("get_memory", {"hash": MISSING}), "E_NOT_FOUND", "Memory not found")
        invalid = await client.call_tool("store_memory", {"content": "x"})
        unknown = await client.call_tool("no_such_tool", {})
    assert invalid.is_error is True and invalid.structured_content is None
    assert text_of(invalid) == invalid_text(
        "store_memory",
        [
            {
                "expected": "array",
                "code": "invalid_type",
                "path": ["tags"],
                "message": "Invalid input: expected array, received undefined",
            }
        ],
    )
    assert unknown.is_error is True and text_of(unknown) == "MCP error -32602: Tool no_such_tool not found"


@pytest.mark.anyio
async def test_unknown_tool_and_validation_leave_no_trace(db_path: Path) -> None:
    async with inprocess.client(db_path, mode="legacy") as client:
        unknown = await client.call_tool("nope", {"content": "x"})
        missing = await client.call_tool("store_memory", {"content": "x"})
        stats = ok(await client.call_tool("memory_stats", {}))
    assert unknown.is_error is True
    assert unknown.structured_content is None
    assert text_of(unknown) == "MCP error -32602: Tool nope not found"
    # The exact text memdb's SDK produced, written out once in full.
    assert text_of(missing) == (
        "MCP error -32602: Input validation error: Invalid arguments for tool store_memory: [\n"
        "  {\n"
        '    "expected": "array",\n'
        '    "code": "invalid_type",\n'
        '    "path": [\n'
        '      "tags"\n'
        "    ],\n"
        '    "message": "Invalid input: expected array, received undefined"\n'
        "  }\n"
        "]"
    )
    assert missing.is_error is True and missing.structured_content is None
    assert stats["memoryCount"] == 0


# -- input validation: the SDK's texts, one shared server ------------------------------------------------


@pytest.fixture(scope="module")
def validating_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wire]:
    with inprocess.wire(tmp_path_factory.mktemp("validation") / "memory.db") as server:
        yield server


def missing(expected: str, *path: str | int) -> dict[str, Any]:
    return {
        "expected": expected,
        "code": "invalid_type",
        "path": list(path),
        "message": f"Invalid input: expected {expected}, received undefined",
    }


def wrong_type(expected: str, received: str, *path: str | int) -> dict[str, Any]:
    return {
        "expected": expected,
        "code": "invalid_type",
        "path": list(path),
        "message": f"Invalid input: expected {expected}, received {received}",
    }


def size(origin: str, code: str, bound: int, *path: str | int) -> dict[str, Any]:
    key = "minimum" if code == "too_small" else "maximum"
    sign = ">=" if code == "too_small" else "<="
    word = "Too small" if code == "too_small" else "Too big"
    unit = {"string": f"to have {sign}{bound} characters", "array": f"to have {sign}{bound} items"}.get(
        origin, f"to be {sign}{bound}"
    )
    return {
        "origin": origin,
        "code": code,
        key: bound,
        "inclusive": True,
        "path": list(path),
        "message": f"{word}: expected {origin} {unit}",
    }


def regex(pattern: str, message: str | None, *path: str | int) -> dict[str, Any]:
    return {
        "origin": "string",
        "code": "invalid_format",
        "format": "regex",
        "pattern": pattern,
        "path": list(path),
        "message": message or f"Invalid string: must match pattern {pattern}",
    }


def tag_whitespace(*path: str | int) -> dict[str, Any]:
    return regex(r"/^\S+$/", "Tag must not contain whitespace", *path)


def bad_hash(*path: str | int) -> dict[str, Any]:
    return regex("/^[a-f0-9]{64}$/i", None, *path)


def unrecognized(keys: list[str], *path: str | int) -> dict[str, Any]:
    listed = ", ".join(f'"{k}"' for k in keys)
    return {
        "code": "unrecognized_keys",
        "keys": keys,
        "path": list(path),
        "message": f"Unrecognized key{'s' if len(keys) > 1 else ''}: {listed}",
    }


def enum(values: list[str], *path: str | int) -> dict[str, Any]:
    options = "|".join(f'"{v}"' for v in values)
    return {
        "code": "invalid_value",
        "values": values,
        "path": list(path),
        "message": f"Invalid option: expected one of {options}",
    }


H = "0123456789abcdef" * 4
NOT_INT = {
    "expected": "int",
    "format": "safeint",
    "code": "invalid_type",
    "path": ["importance"],
    "message": "Invalid input: expected int, received number",
}

VALIDATION_CASES: list[tuple[str, str, Any, list[dict[str, Any]]]] = [
    ("missing field", "store_memory", {"content": "x"}, [missing("array", "tags")]),
    ("two missing fields", "store_memory", {}, [missing("string", "content"), missing("array", "tags")]),
    ("no arguments", "get_memory", None, [missing("object")]),
    ("no arguments, search", "search_memories", None, [missing("object")]),
    (
        "content too long",
        "store_memory",
        {"content": "a" * 100_001, "tags": ["t"]},
        [size("string", "too_big", 100000, "content")],
    ),
    (
        "content too short",
        "store_memory",
        {"content": "", "tags": ["t"]},
        [size("string", "too_small", 1, "content")],
    ),
    (
        "content not a string",
        "store_memory",
        {"content": 5, "tags": ["t"]},
        [wrong_type("string", "number", "content")],
    ),
    ("tags not an array", "store_memory", {"content": "x", "tags": "a"}, [wrong_type("array", "string", "tags")]),
    ("no tags", "store_memory", {"content": "x", "tags": []}, [size("array", "too_small", 1, "tags")]),
    (
        "too many tags",
        "store_memory",
        {"content": "x", "tags": [f"t{i}" for i in range(101)]},
        [size("array", "too_big", 100, "tags")],
    ),
    (
        "tag too long",
        "store_memory",
        {"content": "x", "tags": ["ok", "t" * 51]},
        [size("string", "too_big", 50, "tags", 1)],
    ),
    (
        "tag too long in UTF-16 units",
        "store_memory",
        {"content": "x", "tags": ["\U0001f600" * 26]},
        [size("string", "too_big", 50, "tags", 0)],
    ),
    ("tag with a space", "store_memory", {"content": "x", "tags": ["a b"]}, [tag_whitespace("tags", 0)]),
    (
        "empty tag",
        "store_memory",
        {"content": "x", "tags": [""]},
        [size("string", "too_small", 1, "tags", 0), tag_whitespace("tags", 0)],
    ),
    (
        "importance too big",
        "store_memory",
        {"content": "x", "tags": ["t"], "importance": 11},
        [size("number", "too_big", 10, "importance")],
    ),
    (
        "importance too small",
        "store_memory",
        {"content": "x", "tags": ["t"], "importance": -1},
        [size("number", "too_small", 0, "importance")],
    ),
    ("importance not an integer", "store_memory", {"content": "x", "tags": ["t"], "importance": 1.5}, [NOT_INT]),
    (
        "importance a string",
        "store_memory",
        {"content": "x", "tags": ["t"], "importance": "5"},
        [wrong_type("number", "string", "importance")],
    ),
    (
        "importance null",
        "store_memory",
        {"content": "x", "tags": ["t"], "importance": None},
        [wrong_type("number", "null", "importance")],
    ),
    (
        "memory_type not in enum",
        "store_memory",
        {"content": "x", "tags": ["t"], "memory_type": "bogus"},
        [enum(MEMORY_TYPES, "memory_type")],
    ),
    ("unknown key", "store_memory", {"content": "x", "tags": ["t"], "extra": 1}, [unrecognized(["extra"])]),
    (
        "unknown keys",
        "store_memory",
        {"content": "x", "tags": ["t"], "extra": 1, "more": 2},
        [unrecognized(["extra", "more"])],
    ),
    ("no items", "store_memories", {"items": []}, [size("array", "too_small", 1, "items")]),
    (
        "too many items",
        "store_memories",
        {"items": [{"content": f"c{i}", "tags": ["t"]} for i in range(51)]},
        [size("array", "too_big", 50, "items")],
    ),
    (
        "item tag with a space",
        "store_memories",
        {"items": [{"content": "x", "tags": ["a b"]}]},
        [tag_whitespace("items", 0, "tags", 0)],
    ),
    (
        "item with an unknown key",
        "store_memories",
        {"items": [{"content": "x", "tags": ["t"]}, {"content": "y", "tags": ["t"], "summary": "s"}]},
        [unrecognized(["summary"], "items", 1)],
    ),
    ("bad hash", "get_memory", {"hash": "xyz"}, [bad_hash("hash")]),
    ("hash of non-hex characters", "delete_memory", {"hash": "g" * 64}, [bad_hash("hash")]),
    ("hash too long", "get_memory", {"hash": H + "0"}, [bad_hash("hash")]),
    ("hash with a trailing newline", "get_memory", {"hash": H + "\n"}, [bad_hash("hash")]),
    ("bad hash in a batch", "delete_memories", {"hashes": [H, "nope"]}, [bad_hash("hashes", 1)]),
    ("no hashes", "delete_memories", {"hashes": []}, [size("array", "too_small", 1, "hashes")]),
    ("too many hashes", "delete_memories", {"hashes": [H] * 51}, [size("array", "too_big", 50, "hashes")]),
    (
        "update with too many tags",
        "update_memory",
        {"hash": H, "content": "x", "tags": [f"t{i}" for i in range(101)]},
        [size("array", "too_big", 100, "tags")],
    ),
    ("update without content", "update_memory", {"hash": H}, [missing("string", "content")]),
    ("blank query", "search_memories", {"query": "   "}, [size("string", "too_small", 1, "query")]),
    ("query too long", "search_memories", {"query": "q" * 1001}, [size("string", "too_big", 1000, "query")]),
    (
        "query too long in UTF-16 units",
        "recall",
        {"query": "\U0001f600" * 501},
        [size("string", "too_big", 1000, "query")],
    ),
    ("depth too big", "recall", {"query": "x", "depth": 4}, [size("number", "too_big", 3, "depth")]),
    ("depth too small", "recall", {"query": "x", "depth": -1}, [size("number", "too_small", 0, "depth")]),
    (
        "direction not in enum",
        "get_relationships",
        {"hash": H, "direction": "up"},
        [enum(["outgoing", "incoming", "both"], "direction")],
    ),
    (
        "empty relation type",
        "create_relationship",
        {"from_hash": H, "to_hash": H, "relation_type": ""},
        [
            size("string", "too_small", 1, "relation_type"),
            regex(r"/^\S+$/", "Relation type must not contain whitespace", "relation_type"),
        ],
    ),
    (
        "relation type with a space",
        "delete_relationship",
        {"from_hash": H, "to_hash": H, "relation_type": "part of"},
        [regex(r"/^\S+$/", "Relation type must not contain whitespace", "relation_type")],
    ),
    (
        "relation type with a trailing newline",
        "create_relationship",
        {"from_hash": H, "to_hash": H, "relation_type": "part_of\n"},
        [regex(r"/^\S+$/", "Relation type must not contain whitespace", "relation_type")],
    ),
    ("tag with a trailing newline", "store_memory", {"content": "x", "tags": ["tag\n"]}, [tag_whitespace("tags", 0)]),
    (
        "tag with a zero-width no-break space (whitespace in JavaScript)",
        "store_memory",
        {"content": "x", "tags": ["a\ufeffb"]},
        [tag_whitespace("tags", 0)],
    ),
    ("stats with an argument", "memory_stats", {"verbose": True}, [unrecognized(["verbose"])]),
]


@pytest.mark.parametrize(
    ("tool", "arguments", "issues"),
    [pytest.param(tool, arguments, issues, id=name) for name, tool, arguments, issues in VALIDATION_CASES],
)
def test_input_validation_text(
    validating_server: Wire, tool: str, arguments: Any, issues: list[dict[str, Any]]
) -> None:
    result = validating_server.call(tool, arguments)
    assert result["isError"] is True
    assert "structuredContent" not in result
    assert result["content"] == [{"type": "text", "text": invalid_text(tool, issues)}]


@pytest.mark.anyio
async def test_tag_whitespace_is_javascript_whitespace(db_path: Path) -> None:
    # U+001C is not whitespace to memdb's validator (it is to Python's), so the tag is kept.
    async with inprocess.client(db_path, mode="legacy") as client:
        stored = await store(client, "separator tag", ["a\x1cb"])
        memory = await get(client, stored["hash"])
    assert memory["tags"] == ["a\x1cb"]


def test_memory_stats_without_arguments(validating_server: Wire) -> None:
    # memdb's SDK refused a call without `arguments`; mnemodb treats it as `{}`.
    result = validating_server.call("memory_stats")
    assert result["isError"] is False, result
    assert list(result["structuredContent"]["result"]) == ["memoryCount", "tagCount", "oldestMemory", "newestMemory"]


def test_times_are_formatted_alike_before_and_after_their_texts_are_kept_and_the_kept_ones_stay_bounded() -> None:
    from mnemodb.server.profiles import memdb

    def spelled(ms: int) -> str:
        return datetime.fromtimestamp(ms // 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")

    start = 1_767_225_600_000
    moments = [start + 999, start + 61_000, -1, 0, start + 86_400_000 * 400 + 1]
    assert [memdb.timestamp(ms) for ms in moments] == [spelled(ms) for ms in moments]  # formatted
    assert [memdb.timestamp(ms) for ms in moments] == [spelled(ms) for ms in moments]  # kept
    assert memdb.timestamp(None) is None
    for second in range(memdb._SECONDS_KEPT + 10):
        memdb.timestamp(start + second * 1000)
    assert len(memdb._SECONDS) <= memdb._SECONDS_KEPT
    assert memdb.timestamp(start + 5_000) == spelled(start + 5_000)
