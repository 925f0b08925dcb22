"""The `native` profile: mnemodb's own nine tools, the default.

Designed for a model reading tool descriptions, not copied from anyone: few tools with
distinct verbs, each saying when to use it and when another is the right one; references
that take whatever the model has at hand (an id, a content hash, an entity's name);
results that are previews sized for a context window, paged with opaque cursors and
capped by `max_chars`; and time-aware reads that leave out superseded memories and
closed relations unless asked. Together the tools reach everything the three
compatibility profiles can do (docs/compatibility.md: "Native tools for every upstream tool").

The package, by concern: `shapes` (previews, change-log entries, cursors and `max_chars`),
`params` (parameters, annotations and output schemas), `handlers` (the tool bodies),
`tools` (the tool table), `text` (the instructions and prompts, as prose) and `profile`
(resources, prompts and the profile).
"""

from __future__ import annotations

from mnemodb.server.profiles.native.handlers import NativeTools
from mnemodb.server.profiles.native.profile import NativeProfile, build
from mnemodb.server.profiles.native.shapes import change_shape, item_shape, make_cursor, read_cursor, relation_shape
from mnemodb.server.profiles.native.tools import tools

__all__ = [
    "NativeProfile",
    "NativeTools",
    "build",
    "change_shape",
    "item_shape",
    "make_cursor",
    "read_cursor",
    "relation_shape",
    "tools",
]
