"""What a stdio connection answers without the MCP SDK: the handshake, ping and the tools.

Nearly every message a client sends over stdio is `initialize`, `tools/list` or
`tools/call`. Answering those here, from the profile and `ToolCalls`, means a server
replies to `initialize` before the SDK (half a second of imports) is loaded, and a tool
call costs the engine's work plus one JSON decode and one encode, not the SDK's
validation, dispatch and re-serialisation of the result. Everything else (resources,
prompts, completion, logging, the 2026-07-28 era, and any message this path is not sure
to answer exactly as the SDK would) goes to the SDK, which `stdio.py` loads on demand.

The answers must be the SDK's own, field for field: `tests/server/test_lean_stdio.py`
compares them with the SDK's for every profile and every handshake-era version (for
which the SDK sends a listing and a tool result as they are).
"""

from __future__ import annotations

from typing import Any

from mnemodb import __version__
from mnemodb.server.calls import ToolCalls
from mnemodb.server.profile import Profile

__all__ = ["HANDSHAKE_VERSIONS", "LATEST_HANDSHAKE_VERSION", "LeanServer", "negotiated_version"]

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The handshake-era protocol versions the SDK negotiates (its `HANDSHAKE_PROTOCOL_VERSIONS`)."""
LATEST_HANDSHAKE_VERSION = "2025-11-25"


def negotiated_version(requested: Any) -> str:
    """The version the SDK answers an `initialize` asking for `requested` with."""
    return requested if requested in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE_VERSION


def server_capabilities(profile: Profile) -> dict[str, Any]:
    """The capabilities the SDK's server declares for the handlers `build_server` registers."""
    has_resources = bool(profile.resources or profile.templates)
    capabilities: dict[str, Any] = {}
    if profile.prompts or profile.templates:
        capabilities["completions"] = {}
    capabilities["logging"] = {}
    if profile.prompts:
        capabilities["prompts"] = {"listChanged": False}
    if has_resources:
        subscribe = any(r.subscribable for r in profile.resources)
        capabilities["resources"] = {"listChanged": False, "subscribe": subscribe}
    capabilities["tools"] = {"listChanged": False}
    return capabilities


def server_info(profile: Profile) -> dict[str, Any]:
    return {"name": profile.server_name, "title": f"mnemodb ({profile.name} profile)", "version": __version__}


class LeanServer:
    """The SDK-free answers of one profile's stdio connections."""

    def __init__(self, profile: Profile, calls: ToolCalls) -> None:
        self.profile = profile
        self.calls = calls
        self._capabilities = server_capabilities(profile)
        self._info = server_info(profile)
        self._listing = {"tools": calls.listing}

    def initialize(self, requested: Any) -> tuple[str, dict[str, Any]]:
        """(negotiated version, the `initialize` result) for a client asking for `requested`."""
        version = negotiated_version(requested)
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": self._capabilities,
            "serverInfo": self._info,
        }
        if self.profile.instructions is not None:
            result["instructions"] = self.profile.instructions
        return version, result

    def tools_list(self) -> dict[str, Any]:
        """The `tools/list` result."""
        return self._listing
