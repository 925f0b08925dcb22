"""The registry of profiles: one table that the command line, the settings loader and
`serve` read, so that a profile is added by adding one entry."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from mnemodb.cli.main import PROFILES, build_parser
from mnemodb.engine import Engine
from mnemodb.server import config
from mnemodb.server.profile import Profile
from mnemodb.server.profiles import (
    AVAILABLE,
    DEFAULT_PROFILE,
    REGISTRY,
    ProfileOption,
    build_profile,
    profile_spec,
)


def test_one_list_of_names_with_the_default_first() -> None:
    assert AVAILABLE == tuple(REGISTRY) == PROFILES
    assert AVAILABLE[0] == DEFAULT_PROFILE == "native"
    assert all(name == spec.name for name, spec in REGISTRY.items())


def test_the_cli_offers_every_profile_and_every_profile_s_own_flags() -> None:
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    serve: argparse.ArgumentParser = commands.choices["serve"]
    actions = {flag: action for action in serve._actions for flag in action.option_strings}
    assert tuple(actions["--profile"].choices or ()) == AVAILABLE
    for spec in REGISTRY.values():
        for profile_option in spec.options:
            assert actions[profile_option.flag].dest == profile_option.dest


@pytest.mark.parametrize("name", AVAILABLE)
def test_every_profile_builds_by_its_name(name: str, tmp_path: Path) -> None:
    settings = config.load(argparse.Namespace(profile=name, db=str(tmp_path / "memory.db")), {})
    assert settings.profile == name
    for profile in (build_profile(name, settings), build_profile(name)):
        assert isinstance(profile, Profile)
        assert profile.name == name
        assert profile.tools


def test_an_unknown_profile_names_the_choices() -> None:
    with pytest.raises(
        ValueError, match=r"unknown profile 'nope' \(available: native, memdb, knowledge-graph, topodb\)"
    ):
        profile_spec("nope")
    with pytest.raises(ValueError, match="unknown profile"):
        build_profile("nope")


def test_what_each_profile_asks_of_the_server() -> None:
    assert [name for name, spec in REGISTRY.items() if spec.embeds_by_default] == ["native"]
    assert [name for name, spec in REGISTRY.items() if not spec.creates_db_directory] == ["topodb"]
    assert {name for name, spec in REGISTRY.items() if spec.prepare is not None} == {"knowledge-graph", "topodb"}
    assert {option.flag for spec in REGISTRY.values() for option in spec.options} == {
        "--spec",
        "--allow-unscoped-changes",
    }


def test_a_profile_option_knows_whether_it_was_given() -> None:
    switch = ProfileOption("--some-switch", "help", switch=True)
    valued = ProfileOption("--some-value", "help", metavar="V")
    assert (switch.dest, valued.dest) == ("some_switch", "some_value")
    assert not switch.given(argparse.Namespace(some_switch=False))
    assert switch.given(argparse.Namespace(some_switch=True))
    assert not valued.given(argparse.Namespace())
    assert valued.given(argparse.Namespace(some_value=""))
    parser = argparse.ArgumentParser()
    switch.add_to(parser)
    valued.add_to(parser)
    assert vars(parser.parse_args(["--some-switch", "--some-value", "x"])) == {"some_switch": True, "some_value": "x"}


def test_topodb_prepares_the_engine_with_its_index_spec(tmp_path: Path) -> None:
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps({"equality": [{"label": "Doc", "prop": "title"}], "text": []}))
    settings = config.load(
        argparse.Namespace(profile="topodb", db=str(tmp_path / "graph.redb"), spec=str(spec_file)), {}
    )
    prepare = REGISTRY["topodb"].prepare
    assert prepare is not None
    with Engine.open(settings.db_path) as engine:
        assert prepare(engine, settings)
        assert engine.nodes.spec == settings.spec
