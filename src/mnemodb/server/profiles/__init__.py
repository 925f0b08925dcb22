"""One module per profile, each mapping its upstream's tools onto the engine."""

from __future__ import annotations

from mnemodb.server.profile import Profile

AVAILABLE = ("memdb", "knowledge-graph")
PLANNED = ("native", "topodb")


def build_profile(name: str) -> Profile:
    """The profile called `name`; ValueError names the choices for anything else."""
    if name == "memdb":
        from mnemodb.server.profiles import memdb

        return memdb.build()
    if name == "knowledge-graph":
        from mnemodb.server.profiles import knowledge_graph

        return knowledge_graph.build()
    if name in PLANNED:
        raise ValueError(f"profile {name!r} is not available in this version (available: {', '.join(AVAILABLE)})")
    raise ValueError(f"unknown profile {name!r} (available: {', '.join(AVAILABLE)})")
