"""The web inspector: what the assistants remember, seen, searched, corrected and curated in
a browser.

Server-rendered pages (Starlette and Jinja2) made interactive with htmx, and one
JavaScript island for the graph (cytoscape.js). Every asset is served from this package:
the inspector works offline and no request leaves the machine. It runs in the HTTP
server's process over the same engine as the MCP tools (`mnemodb serve --http` mounts it at
`/ui`; `mnemodb ui` serves it on loopback), so a token's grant decides what it shows and
may change exactly as it decides for tool calls.
"""

from mnemodb.server.inspector.app import UI_PATH, build_inspector

__all__ = ["UI_PATH", "build_inspector"]
