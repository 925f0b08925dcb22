"""A detailed look-up of references that name nothing (native `get` of a missing item, the
cheapest read a client makes) reads the references and nothing else; one of an item reads
its relations, their ends and its access statistics in one statement however many
neighbours it has. On a real SQLite file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.test_graph_read_statements import _chain, _statements
from engine.test_items import ent, rel
from mnemodb.engine import Engine
from mnemodb.model.records import Entity
from mnemodb.store.base import EntityKey
from mnemodb.store.sqlite import SqliteStore
from support import START_MS, Clock

MISSING_ID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
MISSING_HASH = "ab" * 32


@pytest.fixture
def lite(tmp_path: Path, clock: Clock) -> Iterator[Engine]:
    with Engine(SqliteStore(tmp_path / "missing.db"), clock=clock, access_interval=3600) as opened:
        yield opened


def test_a_name_that_names_nothing_is_one_statement(lite: Engine) -> None:
    _chain(lite)
    lite.items.get_in_full(["Bob"])  # a connection's first read of entities loads the text index's settings
    read, statements = _statements(lite, lambda: lite.items.get_in_full(["Nobody"]))
    assert read.found == [None]
    assert (read.edges, read.ends, read.edge_ends, read.access) == ([], {}, {}, {})
    selects = [s for s in statements if s.startswith("SELECT")]
    assert len(selects) == 1 and "'Nobody'" in selects[0]


def test_references_that_name_nothing_read_no_relations_nor_access(lite: Engine) -> None:
    _chain(lite)
    refs = ["Nobody", MISSING_ID, MISSING_HASH]
    lite.items.get_in_full(["Bob"])  # as above
    read, statements = _statements(lite, lambda: lite.items.get_in_full(refs))
    assert read.found == [None, None, None]
    assert (read.edges, read.ends, read.edge_ends, read.access) == ([], {}, {}, {})
    # Each statement looks up a reference (the id as a node's and a relation's): no
    # relations of anything, no ends, no access statistics.
    selects = [s for s in statements if s.startswith("SELECT")]
    assert selects and all(any(f"'{ref}'" in s for ref in refs) for s in selects)


def test_a_missing_reference_beside_a_found_one_changes_nothing_of_it(lite: Engine) -> None:
    _chain(lite)
    alone = lite.items.get_in_full(["Bob"])
    beside = lite.items.get_in_full(["Nobody", "Bob", MISSING_ID])
    assert beside.found == [None, alone.found[0], None]
    assert (beside.edges, beside.ends, beside.edge_ends) == (alone.edges, alone.ends, alone.edge_ends)


@pytest.mark.parametrize("neighbours", [2, 31, 32, 40])
def test_the_ends_and_access_of_a_look_up_are_read_whatever_its_number_of_neighbours(
    lite: Engine, neighbours: int
) -> None:
    # The relations, their other ends and the item's access statistics: one statement
    # however many neighbours there are.
    ent(lite, "Hub")
    for n in range(neighbours):
        ent(lite, f"Spoke {n}")
        rel(lite, "Hub", f"Spoke {n}", "links")
    lite.items.get(["Hub", "Spoke 0"])
    lite.access.flush()
    read, statements = _statements(lite, lambda: lite.items.get_in_full(["Hub"]))
    hub = read.found[0]
    assert isinstance(hub, Entity)
    assert {i.name for i in read.ends.values() if isinstance(i, Entity | EntityKey)} == {
        "Hub",
        *(f"Spoke {n}" for n in range(neighbours)),
    }
    assert len(read.edges) == neighbours
    assert read.access == {hub.pk: (1, START_MS)}
    (select,) = [s for s in statements if s.startswith("SELECT")]
    assert "e.src = (SELECT node FROM entity WHERE name = 'Hub'" in select and "JOIN node_access" in select
