"""Every profile mnemodb serves, in one table: `REGISTRY` maps a profile's name to its
`ProfileSpec`, which says how its settings are read, which serve flags are its own, how
its tools are built and what the engine needs before it serves.

The command line, the settings loader and `serve` read this table and know no profile by
name: adding a profile is adding its module and one entry here (docs/design.md, "Adding
a profile").
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING

from mnemodb.model.value import Value, described
from mnemodb.server.settings import Settings, UpstreamVariables, given, load_standard_settings

if TYPE_CHECKING:
    from mnemodb.engine import Engine
    from mnemodb.server.profile import Profile

SettingsLoader = Callable[[str, argparse.Namespace, Mapping[str, str]], Settings]
"""(the profile's name, the parsed serve flags, the environment) -> its settings."""


@described
class ProfileOption(Value):
    """A serve flag only one profile reads; given with another profile, it is refused."""

    flag: str
    help: str
    metavar: str | None = None
    switch: bool = False
    """A flag without a value (`store_true`)."""

    @property
    def dest(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")

    def given(self, args: argparse.Namespace) -> bool:
        return given(args, self.dest)

    def add_to(self, parser: argparse.ArgumentParser) -> None:
        if self.switch:
            parser.add_argument(self.flag, action="store_true", help=self.help)
        else:
            parser.add_argument(self.flag, metavar=self.metavar, help=self.help)


@described
class ProfileSpec(Value):
    """What mnemodb needs to know to serve a profile."""

    name: str
    build: Callable[[Settings | None], Profile]
    """The profile's tools, set up from the serve settings (None: as documented, with
    every setting at its default)."""
    load_settings: SettingsLoader
    """The settings from the parsed serve flags and the environment (`config.load` adds
    the embedder's and the HTTP transport's, which every profile shares)."""
    options: tuple[ProfileOption, ...] = ()
    """Serve flags only this profile reads."""
    prepare: Callable[[Engine, Settings], bool] | None = None
    """Run on the opened engine before serving; False (the reason logged) stops the start."""
    embeds_by_default: bool = False
    """Whether the `auto` embedder takes the local model: only where search uses vectors."""
    creates_db_directory: bool = True
    """Whether a database whose directory is missing is made rather than refused."""


def _native(settings: Settings | None) -> Profile:
    from mnemodb.server.profiles import native

    return native.build()


def _memdb(settings: Settings | None) -> Profile:
    from mnemodb.server.profiles import memdb

    return memdb.build()


def _knowledge_graph(settings: Settings | None) -> Profile:
    from mnemodb.server.profiles import knowledge_graph

    return knowledge_graph.build()


def _knowledge_graph_settings(name: str, args: argparse.Namespace, env: Mapping[str, str]) -> Settings:
    from mnemodb.server.profiles import knowledge_graph

    return knowledge_graph.load_settings(name, args, env)


def _import_memory_file(engine: Engine, settings: Settings) -> bool:
    from mnemodb.interop.server_memory import prepare_knowledge_graph_store

    return prepare_knowledge_graph_store(settings, engine)


def _topodb(settings: Settings | None) -> Profile:
    from mnemodb.server.profiles import topodb

    return topodb.build(
        db_path=settings.db_display if settings else "",
        allow_unscoped_changes=settings.allow_unscoped_changes if settings else False,
    )


def _topodb_settings(name: str, args: argparse.Namespace, env: Mapping[str, str]) -> Settings:
    from mnemodb.server.profiles.topodb import settings

    return settings.load_settings(name, args, env)


def _topodb_index_spec(engine: Engine, settings: Settings) -> bool:
    from mnemodb.server.profiles.topodb.settings import apply_index_spec

    return apply_index_spec(engine, settings)


# Profile modules are imported only when used: the command line reads this table for its
# --profile choices, and a command should not pay for loading every tool table.
REGISTRY: Mapping[str, ProfileSpec] = {
    spec.name: spec
    for spec in (
        ProfileSpec(
            "native",
            build=_native,
            load_settings=load_standard_settings,
            embeds_by_default=True,
        ),
        ProfileSpec(
            "memdb",
            build=_memdb,
            load_settings=partial(
                load_standard_settings,
                upstream=UpstreamVariables(
                    db="MEMDB_PATH", tool_timeout_ms="MEMDB_TOOL_TIMEOUT_MS", log_level="MEMDB_LOG_LEVEL"
                ),
                default_db=".memdb/memory.db",
            ),
        ),
        ProfileSpec(
            "knowledge-graph",
            build=_knowledge_graph,
            load_settings=_knowledge_graph_settings,
            prepare=_import_memory_file,
        ),
        ProfileSpec(
            "topodb",
            build=_topodb,
            load_settings=_topodb_settings,
            options=(
                ProfileOption(
                    "--spec",
                    'topodb: index spec file, {"equality": [{"label", "prop"}], "text": [...]}; replaces the '
                    "stored spec (default: keep the stored one; a new database indexes Entity.name and "
                    "Memory.content)",
                    metavar="SPEC_JSON",
                ),
                ProfileOption(
                    "--allow-unscoped-changes",
                    "topodb: serve get_changes, which reads the change log of every scope",
                    switch=True,
                ),
            ),
            prepare=_topodb_index_spec,
            # topodb-mcp refuses a database whose directory is missing rather than making it.
            creates_db_directory=False,
        ),
    )
}

DEFAULT_PROFILE = "native"
AVAILABLE = tuple(REGISTRY)
"""The profiles' names, the default first."""


def profile_spec(name: str) -> ProfileSpec:
    """The spec of the profile called `name`; ValueError names the choices for anything else."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown profile {name!r} (available: {', '.join(AVAILABLE)})") from None


def build_profile(name: str, settings: Settings | None = None) -> Profile:
    """The profile called `name`, set up from the serve settings; ValueError names the choices
    for anything else."""
    return profile_spec(name).build(settings)


__all__ = [
    "AVAILABLE",
    "DEFAULT_PROFILE",
    "REGISTRY",
    "ProfileOption",
    "ProfileSpec",
    "build_profile",
    "profile_spec",
]
