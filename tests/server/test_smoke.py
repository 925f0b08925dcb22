"""The server starts, lists memdb's tools and answers a call, over a real stdio client."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from conftest import serve_params

pytestmark = pytest.mark.anyio


async def test_lists_twelve_tools_and_stores(db_path: Path) -> None:
    async with Client(serve_params(db_path), mode="legacy") as client:
        tools = await client.list_tools()
        assert [t.name for t in tools.tools] == [
            "store_memory",
            "store_memories",
            "get_memory",
            "delete_memory",
            "delete_memories",
            "update_memory",
            "search_memories",
            "recall",
            "create_relationship",
            "get_relationships",
            "delete_relationship",
            "memory_stats",
        ]
        result = await client.call_tool("store_memory", {"content": "hello", "tags": ["greeting"]})
        assert result.is_error is False
        assert result.structured_content is not None
        assert result.structured_content["result"]["isNew"] is True
