"""What every page of the inspector shares: its templates, rendering, the engine called off
the event loop, form and query parsing with clear refusals."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlencode

import anyio.to_thread
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from mnemodb.engine.tokens import current_grant
from mnemodb.model.errors import (
    Conflict,
    EngineError,
    Forbidden,
    InvalidArgument,
    NotFound,
    OperationTimeout,
    StoreUnavailable,
)
from mnemodb.model.times import epoch_ms, iso_utc

if TYPE_CHECKING:
    from mnemodb.engine import Engine

__all__ = [
    "CSRF_FIELD",
    "CSRF_HEADER",
    "Page",
    "call",
    "engine_of",
    "form_text",
    "is_htmx",
    "query_int",
    "query_time",
    "readable_scopes",
    "status_of",
    "templates",
]

T = TypeVar("T")

CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf"
BASE = "/ui"


def _when(ms: int | None) -> str:
    return "" if ms is None else iso_utc(ms)


def _day(ms: int | None) -> str:
    return "" if ms is None else iso_utc(ms)[:10]


templates = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)


def url_with(params: Mapping[str, str], **overrides: Any) -> str:
    """`params` as a query string, with `overrides` set (None removes one); blanks dropped."""
    merged: dict[str, Any] = {k: v for k, v in params.items() if v}
    for key, value in overrides.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return urlencode(merged)


templates.globals["url_with"] = url_with
templates.filters["when"] = _when
templates.filters["day"] = _day


def engine_of(request: Request) -> Engine:
    """The engine the inspector serves."""
    engine: Engine = request.app.state.engine
    return engine


def readable_scopes(engine: Engine) -> list[str]:
    """The scopes a page reads and offers: a grant's read scopes; without one (the operator
    on loopback), every scope that holds memories, and the default ones."""
    grant = current_grant()
    if grant is not None:
        return list(grant.read_scopes)
    return sorted({*engine.read_scopes, engine.write_scope, *engine.memories_per_scope()})


def status_of(exc: EngineError) -> int:
    """The HTTP status for an engine's refusal."""
    for kind, status in (
        (StoreUnavailable, 503),
        (Forbidden, 403),
        (NotFound, 404),
        (Conflict, 409),
        (OperationTimeout, 504),
        (InvalidArgument, 400),
    ):
        if isinstance(exc, kind):
            return status
    return 500


def is_htmx(request: Request) -> bool:
    """A request htmx made for part of a page (it wants the fragment, not the whole page)."""
    return request.headers.get("hx-request") == "true" and request.headers.get("hx-boosted") != "true"


class Page:
    """One response rendered from a template, with what every template needs."""

    def __init__(self, request: Request, template: str, *, status: int = 200) -> None:
        self.request = request
        self.template = template
        self.status = status

    def context(self, values: Mapping[str, Any]) -> dict[str, Any]:
        state = self.request.scope.get("state", {})
        grant = state.get("grant")
        return {
            "base": BASE,
            "csrf": state.get("csrf", ""),
            "grant": grant,
            "signed_in": bool(state.get("signed_in")),
            "path": self.request.url.path,
            "query": self.request.query_params,
            # What the change that led here did, told once (`_back` adds it to the URL).
            "done": self.request.query_params.get("done"),
            **values,
        }

    def render(self, **values: Any) -> Response:
        body = templates.get_template(self.template).render(self.context(values))
        return HTMLResponse(body, status_code=self.status)


async def call(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`function(*args, **kwargs)` on a worker thread: the engine blocks on the database.
    The request's grant goes with it (context variables are copied to the thread)."""
    return await anyio.to_thread.run_sync(functools.partial(function, *args, **kwargs))


def query_int(request: Request, name: str, default: int | None, *, low: int, high: int) -> int | None:
    """An integer query parameter within [low, high]; `default` when absent or blank."""
    raw = request.query_params.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidArgument(f"{name} must be a whole number, not {raw!r}") from None
    if not low <= value <= high:
        raise InvalidArgument(f"{name} must be from {low} to {high}, not {value}")
    return value


def parse_time(raw: str, name: str, *, end_of_day: bool = False) -> int | None:
    """A date (`2026-12-04`) or date and time (`2026-12-04T10:00`, UTC unless it says
    otherwise) as ms since the epoch; None for a blank value. A bare date used as the end of
    a range means the end of that day."""
    raw = raw.strip()
    if not raw:
        return None
    try:
        moment = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidArgument(f"{name} must be a date like 2026-12-04 or 2026-12-04T10:00, not {raw!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    ms = epoch_ms(moment)
    if end_of_day and len(raw) == 10:
        ms += 86_400_000 - 1
    return ms


def query_time(request: Request, name: str, *, end_of_day: bool = False) -> int | None:
    return parse_time(request.query_params.get(name, ""), name, end_of_day=end_of_day)


def form_text(form: Mapping[str, Any], name: str, *, required: bool = False) -> str | None:
    """A text field of a posted form; None when absent (InvalidArgument when `required`)."""
    value = form.get(name)
    if value is None or not isinstance(value, str):
        if required:
            raise InvalidArgument(f"the form has no {name!r} field")
        return None
    return value
