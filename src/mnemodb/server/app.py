"""The MCP server: a profile's tools and resources served by the SDK's low-level Server.

The low-level `Server` is used rather than `MCPServer` because every profile needs
exact control of its tools' JSON Schemas, validation messages, result shapes and error
transport, and because it is the shortest path per call.
"""

from __future__ import annotations

import copy
import logging
import time
import warnings
from collections.abc import Callable
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.to_thread
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    CompleteRequestParams,
    CompleteResult,
    Completion,
    EmptyResult,
    GetPromptRequestParams,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
    PromptMessage,
    ReadResourceRequestParams,
    ReadResourceResult,
    ResourceTemplate,
    ResourceTemplateReference,
    SetLevelRequestParams,
    SubscribeRequestParams,
    TextContent,
    TextResourceContents,
    ToolExecution,
    UnsubscribeRequestParams,
)
from mcp_types import Prompt as McpPrompt
from mcp_types import PromptArgument as McpPromptArgument
from mcp_types import Resource as McpResource
from mcp_types import Tool as McpTool

from mnemodb import __version__
from mnemodb.engine.tokens import current_grant
from mnemodb.model.errors import EngineError, OperationTimeout
from mnemodb.server.profile import Profile, Tool
from mnemodb.server.schema import Invalid
from mnemodb.store import sqlite_path

if TYPE_CHECKING:
    from mnemodb.engine import Engine

log = logging.getLogger("mnemodb.server")
T = TypeVar("T")

# Past the tool's own time limit, how long to wait for the worker thread before giving
# up on it. The store aborts and rolls back at the limit itself; this only catches
# work that is not inside a database statement.
_BACKSTOP_S = 6.0


def _listed(tool: Tool, profile: Profile) -> McpTool:
    schema = tool.params.json_schema()
    if profile.json_schema_dialect is not None:
        schema["$schema"] = profile.json_schema_dialect
    return McpTool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=schema,
        output_schema=dict(tool.output_schema) if tool.output_schema is not None else None,
        annotations=tool.annotations,
        execution=ToolExecution(task_support="forbidden") if profile.forbid_tasks else None,
    )


async def run_in_worker(engine: Engine, work: Callable[[], T], timeout_ms: int) -> T:
    """Run engine work on a worker thread, within the tool time limit (0 = none). An engine
    error that names the database's file says only its name to a call under a token."""
    try:
        if timeout_ms <= 0:
            return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        limit = timeout_ms / 1000

        def bounded() -> T:
            with engine.time_limit(limit):
                return work()

        try:
            with anyio.fail_after(limit + _BACKSTOP_S):
                return await anyio.to_thread.run_sync(bounded, abandon_on_cancel=True)
        except TimeoutError:
            raise OperationTimeout(f"timed out after {timeout_ms}ms") from None
    except EngineError as exc:
        told = _as_told(exc, engine)
        if told is exc:
            raise
        raise told from exc


def _as_told(error: EngineError, engine: Engine) -> EngineError:
    """`error` as a caller may read it: under a token (a team server), with the server's
    path to the database (a file that cannot be opened, say) cut to the file's name, since
    where the server keeps its files is no tenant's business. Unchanged otherwise."""
    location = engine.store.location
    text = str(error)
    if current_grant() is None or location == ":memory:" or location not in text:
        return error
    told = copy.copy(error)
    # A file is named by its name; a database server not at all (its address is no tenant's business either).
    shown = PurePath(location).name if sqlite_path(location) is not None else "the database server"
    told.args = (text.replace(location, shown),)
    return told


def _wire(result: CallToolResult) -> dict[str, Any]:
    """A tool result as the SDK puts it on the wire (what its server runner makes of a model)."""
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


def build_server(
    profile: Profile,
    engine: Engine,
    *,
    tool_timeout_ms: int = 15_000,
    on_tool_call: Callable[[str, str, float], None] | None = None,
) -> Server[Any]:
    """The SDK server for one profile over one engine. `on_tool_call(tool, outcome, seconds)`
    hears of every call of a known tool (outcome: ok, invalid, error, timeout, cancelled)."""
    tools = {tool.name: tool for tool in profile.tools}
    listed = [_listed(tool, profile) for tool in profile.tools]
    resources = {r.uri: r for r in profile.resources}
    prompts = {p.name: p for p in profile.prompts}
    # Subscribed resource URIs. A stdio server has one client; the modern protocol era
    # has no resources/subscribe at all (it listens through subscriptions/listen).
    subscribed: set[str] = set()

    async def list_tools(ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        return ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult | dict[str, Any]:
        tool = tools.get(params.name)
        if tool is None:
            log.info("unknown tool %r", params.name)
            return profile.unknown_tool(params.name)
        started = time.perf_counter()
        outcome = "error"

        def work() -> dict[str, Any]:
            # The result is shaped and dumped to its wire form here, on the worker thread and
            # within the time limit: a large one (a whole graph) would otherwise hold up every
            # other request on the event loop while it is built.
            return _wire(profile.success(tool, tool.run(engine, arguments)))

        try:
            arguments = tool.params.validate(params.arguments)
            result = await run_in_worker(engine, work, tool_timeout_ms)
            outcome = "ok"
        except Invalid as exc:
            outcome = "invalid"
            return profile.invalid(tool, exc)
        except OperationTimeout:
            outcome = "timeout"
            return profile.timeout(tool, tool_timeout_ms)
        except MCPError:
            raise
        except Exception as exc:
            return profile.failure(tool, exc)
        except BaseException:
            outcome = "cancelled"
            raise
        finally:
            elapsed = time.perf_counter() - started
            log.info("Tool %s %s in %dms", tool.name, outcome, elapsed * 1000, extra={"tool": tool.name})
            if on_tool_call is not None:
                on_tool_call(tool.name, outcome, elapsed)
        if subscribed and tool.annotations is not None and tool.annotations.read_only_hint is False:
            for uri in sorted(subscribed):
                await ctx.session.send_resource_updated(uri)
        return result

    async def subscribe(ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
        resource = resources.get(str(params.uri))
        if resource is not None and resource.subscribable:
            subscribed.add(resource.uri)
        return EmptyResult()

    async def unsubscribe(ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
        subscribed.discard(str(params.uri))
        return EmptyResult()

    async def list_resources(ctx: Any, params: PaginatedRequestParams | None) -> ListResourcesResult:
        return ListResourcesResult(
            resources=[
                McpResource(uri=r.uri, name=r.name, title=r.title, description=r.description, mime_type=r.mime_type)
                for r in profile.resources
                if not r.template
            ]
        )

    async def list_templates(ctx: Any, params: PaginatedRequestParams | None) -> ListResourceTemplatesResult:
        return ListResourceTemplatesResult(
            resource_templates=[
                ResourceTemplate(
                    uri_template=r.uri, name=r.name, title=r.title, description=r.description, mime_type=r.mime_type
                )
                for r in profile.resources
                if r.template
            ]
            + [
                ResourceTemplate(
                    uri_template=t.uri_template,
                    name=t.name,
                    title=t.title,
                    description=t.description,
                    mime_type=t.mime_type,
                )
                for t in profile.templates
            ]
        )

    async def read_resource(ctx: Any, params: ReadResourceRequestParams) -> ReadResourceResult:
        uri = str(params.uri)
        resource = resources.get(uri)
        if resource is not None:
            text: str | None = await run_in_worker(engine, lambda: resource.read(engine), tool_timeout_ms)
            mime_type = resource.mime_type
        else:
            text, mime_type = None, None
            matches = [(t, v) for t in profile.templates if (v := t.match(uri)) is not None]
            if matches:
                template, value = matches[0]
                text = await run_in_worker(engine, lambda: template.read(engine, value), tool_timeout_ms)
                mime_type = template.mime_type
        if text is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Resource {uri} not found", data={"uri": uri})
        return ReadResourceResult(contents=[TextResourceContents(uri=uri, text=text, mime_type=mime_type)])

    async def list_prompts(ctx: Any, params: PaginatedRequestParams | None) -> ListPromptsResult:
        return ListPromptsResult(
            prompts=[
                McpPrompt(
                    name=p.name,
                    title=p.title,
                    description=p.description,
                    arguments=[
                        McpPromptArgument(name=a.name, description=a.description, required=a.required)
                        for a in p.arguments
                    ],
                )
                for p in profile.prompts
            ]
        )

    async def get_prompt(ctx: Any, params: GetPromptRequestParams) -> GetPromptResult:
        prompt = prompts.get(params.name)
        if prompt is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt {params.name!r}")
        given = dict(params.arguments or {})
        missing = [a.name for a in prompt.arguments if a.required and not given.get(a.name)]
        unknown = sorted(set(given) - {a.name for a in prompt.arguments})
        if missing or unknown:
            problem = f"missing argument {missing[0]!r}" if missing else f"unknown argument {unknown[0]!r}"
            raise MCPError(code=INVALID_PARAMS, message=f"Prompt {prompt.name!r}: {problem}")
        return GetPromptResult(
            description=prompt.description,
            messages=[PromptMessage(role="user", content=TextContent(type="text", text=prompt.render(given)))],
        )

    async def complete(ctx: Any, params: CompleteRequestParams) -> CompleteResult:
        # Only template variables that name something stored (an entity's name) have values
        # worth suggesting; prompt arguments are free text.
        ref = params.ref
        template = (
            next((t for t in profile.templates if t.uri_template == ref.uri), None)
            if isinstance(ref, ResourceTemplateReference)
            else None
        )
        if template is None or template.complete is None:
            return CompleteResult(completion=Completion(values=[], total=0, has_more=False))
        suggest, typed = template.complete, params.argument.value
        values, more = await run_in_worker(engine, lambda: suggest(engine, typed), tool_timeout_ms)
        return CompleteResult(completion=Completion(values=values, total=None if more else len(values), has_more=more))

    async def set_logging_level(ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
        # Accepted so clients may ask; the server sends no log notifications, at any level
        # (its log goes to stderr, or the HTTP server's own output).
        return EmptyResult()

    # Clients of the 2025-11-25 era may set a log level; the SDK warns that the capability is
    # gone from 2026-07-28, which does not make it wrong to answer the older clients.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        server: Server[Any] = Server(
            profile.server_name,
            version=__version__,
            title=f"mnemodb ({profile.name} profile)",
            instructions=profile.instructions,
            on_list_tools=list_tools,
            on_list_resources=list_resources if profile.resources or profile.templates else None,
            on_list_resource_templates=list_templates if profile.resources or profile.templates else None,
            on_read_resource=read_resource if profile.resources or profile.templates else None,
            on_list_prompts=list_prompts if profile.prompts else None,
            on_get_prompt=get_prompt if profile.prompts else None,
            on_completion=complete if profile.prompts or profile.templates else None,
            on_set_logging_level=set_logging_level,
            on_subscribe_resource=subscribe if any(r.subscribable for r in profile.resources) else None,
            on_unsubscribe_resource=unsubscribe if any(r.subscribable for r in profile.resources) else None,
        )
    # Registered as a plain request handler: it may answer with the result's wire form (a
    # dict), which the SDK takes as it is instead of dumping the model again on the event loop.
    server.add_request_handler("tools/call", CallToolRequestParams, call_tool)
    # The OpenTelemetry middleware is a no-op without an exporter but still costs every
    # call; mnemodb does not export traces.
    server.middleware.clear()
    return server
