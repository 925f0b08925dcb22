"""A profile's tools as callables: the listing and one `tools/call`, whichever transport asks.

Both transports go through here: the SDK's server (HTTP, and stdio for what the lean path
leaves to it) and the stdio transport's own path for tool calls (`stdio.py`). So a call is
validated, run within its time limit, shaped by the profile and logged the same way on
either, and the wire form is built once, as plain JSON-ready dicts. Calls run on a worker
thread, except a quick read on the stdio transport (`ToolCalls.call_here`). This
module imports nothing of the MCP SDK: a stdio server answers its first calls without
loading it.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.to_thread

from mnemodb.engine.tokens import current_grant
from mnemodb.model.errors import EngineError, OperationTimeout
from mnemodb.server.config import log_tool_call
from mnemodb.server.profile import Profile, ProtocolError, Tool, ToolResult
from mnemodb.server.schema import Invalid
from mnemodb.store import sqlite_path

if TYPE_CHECKING:
    from mnemodb.engine import Engine

__all__ = ["QUICK_READ_S", "QUICK_WRITE_S", "ToolCalls", "listed_tool", "run_in_worker"]

log = logging.getLogger("mnemodb.server")
T = TypeVar("T")

# Past the tool's own time limit, how long to wait for the worker thread before giving
# up on it. The store aborts and rolls back at the limit itself; this only catches
# work that is not inside a database statement.
_BACKSTOP_S = 6.0
# How long a read may run on the stdio transport's own thread before it is stopped and run
# again on a worker thread (`ToolCalls.call_here`): the longest a connection waits on one
# read before it can read its next message (a ping, a cancellation).
QUICK_READ_S = 0.05
# The same for a write's first try, until its first change commits. Longer: a write stopped
# there has done its work for nothing (it is rolled back and done again on a worker), and a
# client's cancellation never stopped a write midway anyway. At 50 ms, on two cores at a
# load of 13-15, 7 to 15 of 15 knowledge-graph calls of 100 relations at 10,000 entities
# were stopped and done twice, and cost more CPU than on a worker thread.
QUICK_WRITE_S = 0.5


def listed_tool(tool: Tool, profile: Profile) -> dict[str, Any]:
    """One entry of `tools/list`, as the SDK's `Tool` model puts it on the wire."""
    schema = tool.params.json_schema()
    if profile.json_schema_dialect is not None:
        schema["$schema"] = profile.json_schema_dialect
    entry: dict[str, Any] = {"name": tool.name}
    if tool.title is not None:
        entry["title"] = tool.title
    entry["description"] = tool.description
    entry["inputSchema"] = schema
    if profile.forbid_tasks:
        entry["execution"] = {"taskSupport": "forbidden"}
    if tool.output_schema is not None:
        entry["outputSchema"] = dict(tool.output_schema)
    if tool.annotations is not None:
        entry["annotations"] = tool.annotations.wire()
    return entry


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


class ToolCalls:
    """The tools of one profile over one engine. `on_tool_call(tool, outcome, seconds)` hears
    of every call of a known tool (outcome: ok, invalid, error, timeout, cancelled)."""

    def __init__(
        self,
        profile: Profile,
        engine: Engine,
        *,
        tool_timeout_ms: int = 15_000,
        on_tool_call: Callable[[str, str, float], None] | None = None,
    ) -> None:
        self.profile = profile
        self.engine = engine
        self.tool_timeout_ms = tool_timeout_ms
        self.on_tool_call = on_tool_call
        self.tools = {tool.name: tool for tool in profile.tools}
        self.listing: list[dict[str, Any]] = [listed_tool(tool, profile) for tool in profile.tools]
        self.overran: set[str] = set()
        """Reads whose last try in `call_here` ran past `QUICK_READ_S`: `call_here` leaves
        the next call of each to `call` rather than try it again, until one is done there in
        under half that time. A try that is stopped has done its work for nothing: on a busy
        machine, 47-50 of 60 knowledge-graph searches at 100,000 entities (2 MB replies,
        `bench/kg_search.py`) were tried here, stopped and done again on a worker."""
        self.subscribed: set[str] = set()
        """Resource URIs a client subscribed to: each hears of every successful writing call.
        A stdio server has one client; the 2026-07-28 era has no resources/subscribe at all."""

    def writes(self, name: str) -> bool:
        """Whether a successful call of the tool may have changed what resources show."""
        tool = self.tools.get(name)
        return tool is not None and tool.annotations is not None and tool.annotations.read_only_hint is False

    async def call(self, name: str, arguments: Any, finish: Callable[[ToolResult], T]) -> T:
        """`finish` of the result of calling tool `name`, in its wire form (an encoder, say,
        which then runs on the worker thread for a successful call). Raises `ProtocolError`
        where the profile answers with a JSON-RPC error instead."""
        profile = self.profile
        tool = self.tools.get(name)
        if tool is None:
            log.info("unknown tool %r", name)
            return finish(profile.unknown_tool(name))
        engine = self.engine
        started = time.perf_counter()
        outcome = "error"

        def work() -> T:
            # The result is shaped to its wire form (and finished) here, on the worker thread
            # and within the time limit: a large one (a whole graph) would otherwise hold up
            # every other request on the event loop while it is built.
            return finish(profile.success(tool, tool.run(engine, validated)))

        try:
            validated = tool.params.validate(arguments)
            result = await run_in_worker(engine, work, self.tool_timeout_ms)
            outcome = "ok"
            quick = QUICK_READ_S if tool.changes_nothing else QUICK_WRITE_S
            if name in self.overran and time.perf_counter() - started < quick / 2:
                self.overran.discard(name)
        except BaseException as exc:
            outcome = "error" if isinstance(exc, Exception) else "cancelled"
            outcome, result = self._settled(tool, exc, finish)
        finally:
            self._heard(tool, outcome, started)
        return result

    def call_here(
        self, name: str, arguments: Any, finish: Callable[[ToolResult], T], *, writes: bool = False
    ) -> T | None:
        """`call`, run on this thread, for a tool that changes nothing (or, with `writes`,
        any tool) and is done within `QUICK_READ_S` (a write: `QUICK_WRITE_S`; or its own
        limit, if shorter): `finish` of its result. None when the call must go through
        `call` instead: a tool that writes (without `writes`), an unknown one, a call that
        ran out of that time before any change of it was committed, which the store stopped
        and rolled back, or a tool whose last try here did (`overran`).

        A write is tried here under its short limit until its first change commits
        (`Engine.change`); from then on it runs under the tool's whole limit, since a call
        that has written cannot be run again, and a timeout past that point is the call's.
        A stopped try has rolled back its one open transaction: the engine keeps nothing
        of a change in memory outside its transaction, so running it again is safe. Writes
        skip the thread hand-off for the same reason reads do (a bulk `relate` of 100
        relations and a single `remember` each measured less server CPU this way).

        For the stdio transport, where one client waits on each answer: handing a call to a
        worker thread and back costs more than a point read itself (a trivial read's server
        CPU 0.45 -> 0.25 ms, measured over stdio), and a read stopped at `QUICK_READ_S` has
        changed nothing, so running it again on a worker thread is safe. The limit only
        bounds database statements; what a read does outside them is bounded by its input's
        limits, as on the worker thread."""
        tool = self.tools.get(name)
        if tool is None or not (writes or tool.changes_nothing) or name in self.overran:
            return None
        profile, engine = self.profile, self.engine
        limit = self.tool_timeout_ms / 1000 if self.tool_timeout_ms > 0 else None
        quick = QUICK_READ_S if tool.changes_nothing else QUICK_WRITE_S
        # Within the tool's own limit, if shorter: then a stopped call has timed out.
        second_try = limit is None or limit > quick
        started = time.perf_counter()
        outcome = "error"
        bounds = engine.time_limit(limit, statements_within=quick)
        try:
            validated = tool.params.validate(arguments)
            with bounds:
                result = finish(profile.success(tool, tool.run(engine, validated)))
            outcome = "ok"
        except OperationTimeout as exc:
            if second_try and not bounds.changed:
                outcome = "deferred"
                self.overran.add(name)
                return None
            outcome, result = self._settled(tool, exc, finish)
        except BaseException as exc:
            outcome = "error" if isinstance(exc, Exception) else "cancelled"
            told = _as_told(exc, engine) if isinstance(exc, EngineError) else exc
            outcome, result = self._settled(tool, told, finish)
        finally:
            if outcome != "deferred":
                self._heard(tool, outcome, started)
        return result

    def _settled(self, tool: Tool, exc: BaseException, finish: Callable[[ToolResult], T]) -> tuple[str, T]:
        """The outcome of a call that raised `exc`, and its finished answer; re-raises what
        is no tool result (a `ProtocolError`, a cancellation)."""
        profile = self.profile
        if isinstance(exc, Invalid):
            return "invalid", finish(profile.invalid(tool, exc))
        if isinstance(exc, OperationTimeout):
            return "timeout", finish(profile.timeout(tool, self.tool_timeout_ms))
        if isinstance(exc, ProtocolError):
            raise exc
        if isinstance(exc, Exception):
            return "error", finish(profile.failure(tool, exc))
        raise exc

    def _heard(self, tool: Tool, outcome: str, started: float) -> None:
        elapsed = time.perf_counter() - started
        log_tool_call(log, tool.name, outcome, elapsed * 1000)
        if self.on_tool_call is not None:
            self.on_tool_call(tool.name, outcome, elapsed)
