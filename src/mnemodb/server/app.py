"""The MCP server: a profile's tools and resources served by the SDK's low-level Server.

The low-level `Server` is used rather than `MCPServer` because every profile needs
exact control of its tools' JSON Schemas, validation messages, result shapes and error
transport, and because it is the shortest path per call.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types import (
    INVALID_PARAMS,
    CallToolRequestParams,
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
    UnsubscribeRequestParams,
)
from mcp_types import Prompt as McpPrompt
from mcp_types import PromptArgument as McpPromptArgument
from mcp_types import Resource as McpResource

from mnemodb.server.calls import ToolCalls, run_in_worker
from mnemodb.server.lean import server_info
from mnemodb.server.profile import Profile, ProtocolError, ToolResult

if TYPE_CHECKING:
    from mnemodb.engine import Engine

__all__ = ["build_server", "run_in_worker"]

log = logging.getLogger("mnemodb.server")


def _as_is(result: ToolResult) -> ToolResult:
    return result


def build_server(
    profile: Profile,
    engine: Engine,
    *,
    tool_timeout_ms: int = 15_000,
    on_tool_call: Callable[[str, str, float], None] | None = None,
    calls: ToolCalls | None = None,
) -> Server[Any]:
    """The SDK server for one profile over one engine. `on_tool_call(tool, outcome, seconds)`
    hears of every call of a known tool (outcome: ok, invalid, error, timeout, cancelled)."""
    if calls is None:
        calls = ToolCalls(profile, engine, tool_timeout_ms=tool_timeout_ms, on_tool_call=on_tool_call)
    resources = {r.uri: r for r in profile.resources}
    prompts = {p.name: p for p in profile.prompts}
    subscribed = calls.subscribed

    async def list_tools(ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        # A model, not the dict: the 2026-07-28 era adds fields (cache hints) with defaults.
        return ListToolsResult.model_validate({"tools": calls.listing}, by_name=False)

    async def call_tool(ctx: Any, params: CallToolRequestParams) -> ToolResult:
        try:
            result = await calls.call(params.name, params.arguments, _as_is)
        except ProtocolError as exc:
            raise MCPError(code=exc.code, message=exc.message) from None
        if subscribed and calls.writes(params.name) and not result.get("isError"):
            for uri in sorted(subscribed):
                await ctx.session.send_resource_updated(uri)
        # Required from the 2026-07-28 era on (the SDK drops it for older connections).
        return {**result, "resultType": "complete"}

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
        identity = server_info(profile)  # the one the lean stdio path answers with too
        server: Server[Any] = Server(
            identity["name"],
            version=identity["version"],
            title=identity["title"],
            instructions=profile.instructions,
            on_list_resources=list_resources if profile.resources or profile.templates else None,
            on_list_resource_templates=list_templates if profile.resources or profile.templates else None,
            on_read_resource=read_resource if profile.resources or profile.templates else None,
            on_list_prompts=list_prompts if profile.prompts else None,
            on_get_prompt=get_prompt if profile.prompts else None,
            on_completion=complete if profile.prompts or profile.templates else None,
            on_list_tools=list_tools,
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
