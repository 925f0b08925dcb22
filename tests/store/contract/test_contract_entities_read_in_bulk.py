"""Entities read many at a time: each keeps its own observations, whatever they hold.

A search reads thousands of entities in one call, and the SQLite store decodes their
observation arrays together; these check that no entity gets a neighbour's observations
and that text JSON treats specially comes back as written."""

from __future__ import annotations

from mnemodb.store.base import Store
from store.contract.rows import add_entity

AWKWARD = (
    'a "quoted" word',
    "back\\slash and a trailing \\",
    "line\nbreak\ttab",
    "\x1f unit separator",
    "],[ brackets that look like the array's own",
    "Ünïcödé, 中文, emoji 🚀",
    "",
)


def test_many_entities_read_together_each_keep_their_observations(store: Store) -> None:
    written: dict[int, tuple[str, ...]] = {}
    with store.write() as tx:
        for i in range(300):
            # Every entity a different number of observations (none for every seventh).
            observations = tuple(f"{AWKWARD[(i + k) % len(AWKWARD)]} #{i}.{k}" for k in range(i % 7))
            written[add_entity(tx, f"E{i}", "thing", observations)] = observations
    with store.read() as tx:
        found = tx.entities_by_pk([*reversed(written), *written][:450])
    assert {pk: entity.observations for pk, entity in found.items()} == written
    assert {entity.name for entity in found.values()} == {f"E{i}" for i in range(300)}
