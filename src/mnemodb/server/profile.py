"""What a profile is: a table of tools over the engine, plus how its upstream talks.

A profile module builds one `Profile`: its tools (name, parameters, engine call), its
server identity and instructions, its resources, how it shapes success and failure, and
the protocol rules its upstream enforced on stdio. The server (`app.py`) and the
transport (`stdio.py`) read these; neither knows any profile by name.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import unquote

from mnemodb.model.value import Value, described
from mnemodb.server.schema import Invalid

if TYPE_CHECKING:
    from mnemodb.engine import Engine

ToolRun = Callable[["Engine", dict[str, Any]], Any]

ToolResult = dict[str, Any]
"""A `tools/call` result in its wire form (`content`, `structuredContent`, `isError`): what
a profile's shaping methods return and what either transport sends as it is."""

# JSON-RPC error codes a profile may answer a call with (`ProtocolError`).
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class StructuredText(str):
    """A text block that is, exactly, the compact JSON of its result's `structuredContent`
    (as most profiles send it): the stdio transport then encodes the data once, for both."""

    encoded: bytes | None = None
    """The text as UTF-8, when the profile has it already (orjson writes bytes): the stdio
    transport writes it as it is rather than encoding the text again."""

    @classmethod
    def of_json(cls, encoded: bytes) -> StructuredText:
        """The text of `encoded`, which is UTF-8 JSON, keeping those bytes."""
        text = cls(encoded.decode())
        text.encoded = encoded
        return text


def exact_json(value: Any) -> str:
    """`value` as compact JSON, non-ASCII characters as they are: the standard library's
    encoder, whose spelling of floats the compatibility profiles' replies keep."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def compact_json(value: Any) -> str:
    """`value` as `exact_json` writes it, by orjson: the same text in a quarter to a tenth of
    the time, but for floats' spelling (`1e-05` is `0.00001`, `2.5e-07` is `2.5e-7`: the same
    numbers). What orjson refuses (a lone surrogate, an integer past 64 bits) goes to the
    standard library."""
    import orjson  # here, not at the top: the first reply's, not every start's

    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        return exact_json(value)


def compact_text(value: Any) -> StructuredText:
    """`compact_json(value)` as a `StructuredText` that keeps orjson's bytes, so the stdio
    transport writes them as they are instead of encoding the text again."""
    import orjson

    try:
        return StructuredText.of_json(orjson.dumps(value))
    except orjson.JSONEncodeError:
        return StructuredText(exact_json(value))


def tool_result(text: str, structured: Mapping[str, Any] | None = None, *, is_error: bool = False) -> ToolResult:
    """A tool's result with one text block, and its structured form when there is one."""
    result: ToolResult = {"content": [{"type": "text", "text": text}]}
    if structured is not None:
        result["structuredContent"] = structured
    result["isError"] = is_error
    return result


class ProtocolError(Exception):
    """A call answered with a JSON-RPC error instead of a tool result, as some upstreams did."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def wire(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message}


@described
class ToolAnnotations(Value):
    """The hints a tool listing carries about what a tool does (MCP's `ToolAnnotations`)."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None

    def wire(self) -> dict[str, Any]:
        """The hints that are set, named as on the wire."""
        named = (
            ("title", self.title),
            ("readOnlyHint", self.read_only_hint),
            ("destructiveHint", self.destructive_hint),
            ("idempotentHint", self.idempotent_hint),
            ("openWorldHint", self.open_world_hint),
        )
        return {key: value for key, value in named if value is not None}


class ToolParams(Protocol):
    """A tool's parameters: the JSON Schema to advertise and the validator (raises `Invalid`)."""

    def json_schema(self) -> dict[str, Any]: ...
    def validate(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]: ...


@described
class Tool(Value):
    name: str
    description: str
    params: ToolParams
    run: ToolRun
    """Called in a worker thread with the engine and the validated arguments."""
    title: str | None = None
    annotations: ToolAnnotations | None = None
    output_schema: Mapping[str, Any] | None = None
    error_code: str = "E_TOOL_ERROR"
    """The code a profile with coded errors reports when this tool fails."""
    reads_only: bool | None = None
    """Whether a call changes nothing, so that it may be stopped and run again; None: as the
    annotations' read-only hint says (topodb's tools carry no annotations, as upstream's)."""

    @property
    def changes_nothing(self) -> bool:
        if self.reads_only is not None:
            return self.reads_only
        return self.annotations is not None and self.annotations.read_only_hint is True


def tool(
    name: str,
    title: str,
    description: str,
    params: ToolParams,
    run: ToolRun,
    annotations: ToolAnnotations | None,
    output: Mapping[str, Any] | None,
    *,
    error_code: str = Tool.error_code,
) -> Tool:
    """A tool, its parts in the order a profile's table lists them."""
    return Tool(
        name=name,
        title=title,
        description=description,
        params=params,
        run=run,
        annotations=annotations,
        output_schema=output,
        error_code=error_code,
    )


@described
class Resource(Value):
    uri: str
    name: str
    read: Callable[[Engine], str]
    title: str | None = None
    description: str | None = None
    mime_type: str = "text/plain"
    template: bool = False
    """Advertised through `resources/templates/list` instead of `resources/list`."""
    subscribable: bool = False
    """Clients may subscribe; every successful writing tool call then notifies them."""


@described
class TemplateResource(Value):
    """Resources named by a URI template with one `{variable}`: `read` gets the engine and
    the variable's (percent-decoded) value, and returns None when there is no such resource."""

    uri_template: str
    name: str
    read: Callable[[Engine, str], str | None]
    title: str | None = None
    description: str | None = None
    mime_type: str = "application/json"
    complete: Callable[[Engine, str], tuple[list[str], bool]] | None = None
    """Values of the variable that start with what was typed, and whether there are more."""

    def match(self, uri: str) -> str | None:
        """The variable's value when `uri` fits the template, else None."""
        head, _, rest = self.uri_template.partition("{")
        tail = rest.partition("}")[2]
        if not uri.startswith(head) or not uri.endswith(tail) or len(uri) <= len(head) + len(tail):
            return None
        return unquote(uri[len(head) : len(uri) - len(tail)])


@described
class PromptArgument(Value):
    name: str
    description: str
    required: bool = False


@described
class Prompt(Value):
    """A prompt template: `render` gets the arguments given and returns the message text."""

    name: str
    title: str
    description: str
    render: Callable[[Mapping[str, str]], str]
    arguments: Sequence[PromptArgument] = ()


@described
class ProtocolRules(Value):
    """How the stdio transport answers what the SDK would silently drop."""

    supported_versions: Sequence[str] | None = None
    """`initialize` with any other version is refused (-32000); None accepts all."""
    close_on_unsupported_version: bool = False
    """Stop serving after refusing an `initialize` for its protocol version."""
    enforce_lifecycle: bool = False
    """Refuse requests (but `ping`) before the handshake completes, and a second `initialize`."""
    parse_error_id: bool = True
    """Send `"id": null` on errors that have no id (JSON-RPC 2.0); memdb omitted it."""
    blank_line_is_parse_error: bool = False
    strict_messages: bool = False
    """Refuse JSON-RPC messages with top-level keys the specification does not define."""


class Profile(ABC):
    """What every profile declares: its tools and resources, and how it shapes each outcome.
    The shaping methods are abstract, so a profile that misses one cannot be built."""

    name: str = ""
    server_name: str = "mnemodb"
    instructions: str | None = None
    rules: ProtocolRules = ProtocolRules()
    tools: Sequence[Tool] = ()
    resources: Sequence[Resource] = ()
    templates: Sequence[TemplateResource] = ()
    prompts: Sequence[Prompt] = ()
    json_schema_dialect: str | None = None
    """A `$schema` to state in every input schema, as the upstream's SDK did."""
    forbid_tasks: bool = False
    """Say `execution: {taskSupport: "forbidden"}` on every tool, as the upstream's SDK did."""

    # Each returns the call's result, or raises `ProtocolError` to answer with an error.

    @abstractmethod
    def success(self, tool: Tool, value: Any) -> ToolResult: ...

    @abstractmethod
    def failure(self, tool: Tool, error: Exception) -> ToolResult: ...

    @abstractmethod
    def invalid(self, tool: Tool, error: Invalid) -> ToolResult: ...

    @abstractmethod
    def timeout(self, tool: Tool, timeout_ms: int) -> ToolResult: ...

    @abstractmethod
    def unknown_tool(self, name: str) -> ToolResult: ...
