"""The native profile: its tools, resources and prompts, and how it shapes each outcome."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import orjson

from mnemodb.engine import Engine, EngineError
from mnemodb.engine.items import Item
from mnemodb.model.records import Entity, Memory
from mnemodb.server.profile import (
    Profile,
    Prompt,
    PromptArgument,
    Resource,
    StructuredText,
    TemplateResource,
    Tool,
    ToolResult,
    compact_json,
    exact_json,
    tool_result,
)
from mnemodb.server.profiles.native import text as native_text
from mnemodb.server.profiles.native.handlers import NativeTools
from mnemodb.server.profiles.native.shapes import item_shape, relation_shape
from mnemodb.server.profiles.native.tools import tools
from mnemodb.server.schema import Invalid

log = logging.getLogger("mnemodb.server")

MAX_COMPLETIONS = 100
"""The most values one completion answer may hold (the MCP specification's bound)."""


def _read_item(kind: type[Memory] | type[Entity]) -> Callable[[Engine, str], str | None]:
    """A resource reader for one kind of item: the memory template never answers with an
    entity, nor the entity template with a memory."""

    def read(engine: Engine, ref: str) -> str | None:
        found = engine.items.get([ref])[0]
        return _item_json(engine, found) if isinstance(found, kind) else None

    return read


def _item_json(engine: Engine, found: Item) -> str:
    edges, ends = engine.items.edges_of([found])
    return compact_json(item_shape(found, full=True) | {"relations": [relation_shape(e, ends) for e in edges]})


class NativeProfile(Profile):
    name = "native"
    server_name = "mnemodb"
    instructions = native_text.INSTRUCTIONS

    def __init__(self) -> None:
        self.handlers = NativeTools()
        self.tools = tools(self.handlers)
        self.templates = (
            TemplateResource(
                uri_template="mnemodb://memory/{ref}",
                name="memory",
                title="A memory",
                description="One memory in full, by id or content hash, with its relations",
                read=_read_item(Memory),
            ),
            TemplateResource(
                uri_template="mnemodb://entity/{name}",
                name="entity",
                title="An entity",
                description="One entity in full, by exact name or id, with its observations and relations",
                read=_read_item(Entity),
                complete=lambda engine, typed: engine.graph.names_starting(typed, limit=MAX_COMPLETIONS),
            ),
        )
        self.resources = (
            Resource(
                uri="mnemodb://stats",
                name="stats",
                title="Memory statistics",
                description="Counts, most used tags and types, and the change log's position",
                mime_type="application/json",
                read=lambda engine: compact_json(self.handlers.survey(engine, {})),
            ),
        )
        self.prompts = (
            Prompt(
                name="personal-assistant",
                title="Personal assistant memory",
                description="How to remember a person across conversations: who they are, what they like, "
                "their goals and relationships, kept current as they change",
                render=native_text.personal_assistant,
                arguments=(PromptArgument("user_name", "The user's name, if known"),),
            ),
            Prompt(
                name="codebase-graph",
                title="Codebase knowledge graph",
                description="How to build and maintain a knowledge graph of a codebase: modules, services, "
                "dependencies, decisions, quirks and tech debt",
                render=native_text.codebase_graph,
                arguments=(PromptArgument("project", "The project's name"),),
            ),
        )

    def success(self, tool: Tool, value: Any) -> ToolResult:
        try:
            # orjson's bytes kept with the text: the stdio transport writes them as they are.
            text = StructuredText.of_json(orjson.dumps(value))
        except orjson.JSONEncodeError:
            text = StructuredText(exact_json(value))
        return tool_result(text, value)

    @staticmethod
    def _error(text: str) -> ToolResult:
        return tool_result(text, is_error=True)

    def failure(self, tool: Tool, error: Exception) -> ToolResult:
        if isinstance(error, EngineError):
            return self._error(f"{tool.name}: {error}")
        log.exception("tool %s failed unexpectedly", tool.name, exc_info=error)
        return self._error(f"{tool.name}: internal error ({type(error).__name__}); nothing was changed")

    def invalid(self, tool: Tool, error: Invalid) -> ToolResult:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in issue['path']) or 'arguments'}: {issue['message']}" for issue in error.issues
        )
        return self._error(f"{tool.name}: invalid arguments: {problems}. The tool's input schema lists every field.")

    def timeout(self, tool: Tool, timeout_ms: int) -> ToolResult:
        return self._error(
            f"{tool.name}: timed out after {timeout_ms} ms and nothing was changed; narrow the call and retry"
        )

    def unknown_tool(self, name: str) -> ToolResult:
        names = ", ".join(t.name for t in self.tools)
        return self._error(f"unknown tool {name!r}; this server's tools are {names}")


def build() -> NativeProfile:
    return NativeProfile()
