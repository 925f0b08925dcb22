"""One module per profile, each mapping its upstream's tools onto the engine."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mnemodb.server.profile import Profile

if TYPE_CHECKING:
    from mnemodb.server.config import Settings

AVAILABLE = ("native", "memdb", "knowledge-graph", "topodb")


def build_profile(name: str, settings: Settings | None = None) -> Profile:
    """The profile called `name`, set up from the serve settings; ValueError names the choices
    for anything else."""
    if name == "native":
        from mnemodb.server.profiles import native

        return native.build()
    if name == "memdb":
        from mnemodb.server.profiles import memdb

        return memdb.build()
    if name == "knowledge-graph":
        from mnemodb.server.profiles import knowledge_graph

        return knowledge_graph.build()
    if name == "topodb":
        from mnemodb.server.profiles import topodb

        return topodb.build(
            db_path=settings.db_display if settings else "",
            allow_unscoped_changes=settings.allow_unscoped_changes if settings else False,
        )
    raise ValueError(f"unknown profile {name!r} (available: {', '.join(AVAILABLE)})")
