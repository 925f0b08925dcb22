"""The one replay of the change log, on entries the op builders make: an item at each
time, its two projections, and entries whose text was redacted (which every reader of
the log must still read)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from mnemodb.model import ops
from mnemodb.model.history import as_item, as_node, replay, steps
from mnemodb.model.ids import content_hash
from mnemodb.model.records import Change, Entity, Memory

Item = Memory | Entity

MEMORY = Memory(7, "01HV7N8Q3Y2J6W5X4Z9A0B1C2D", "shared", "first text", content_hash("first text"), ("a",), 3,
                "note", None, {"p": 1}, 100, 100)  # fmt: skip
ENTITY = Entity(8, "01HV7N8Q3Y2J6W5X4Z9A0B1C2E", "shared", "Ada", "", ("writes code",), {}, 100, 100)


def log(*entries: tuple[int, ops.Op]) -> list[Change]:
    return [Change(seq, at, *op) for seq, (at, op) in enumerate(entries, 1)]


def item_at(changes: Sequence[Change], at: int, now: Item) -> Item:
    """`now` as the replay of `changes` shows it at `at`, of the same kind."""
    past = replay(changes, at)
    assert past is not None
    item = as_item(past, now)
    assert type(item) is type(now)
    return item


def memory_at(changes: Sequence[Change], at: int) -> Memory:
    return cast(Memory, item_at(changes, at, MEMORY))


def entity_at(changes: Sequence[Change], at: int) -> Entity:
    return cast(Entity, item_at(changes, at, ENTITY))


def memory_log() -> list[Change]:
    return log(
        (100, ops.memory_created(MEMORY)),
        (200, ops.node_updated("shared", MEMORY.id, {"content": "second text", "importance": 9})),
        (300, ops.tags_added("shared", MEMORY.id, ["b", "a"])),
        (400, ops.props_set("shared", MEMORY.id, {"p": None, "q": 2, "memory_type": "decision"})),
        (500, ops.node_removed("shared", MEMORY.id)),
    )


def test_a_memory_at_each_time() -> None:
    changes = memory_log()
    assert replay(changes, 99) is None
    items = [memory_at(changes, at) for at in (100, 250, 350, 450)]
    assert [(m.content, m.importance, m.tags, m.memory_type, m.props) for m in items] == [
        ("first text", 3, ("a",), "note", {"p": 1}),
        ("second text", 9, ("a",), "note", {"p": 1}),
        ("second text", 9, ("a", "b"), "note", {"p": 1}),
        ("second text", 9, ("a", "b"), "decision", {"q": 2}),
    ]
    assert items[1].hash == content_hash("second text")
    assert replay(changes, 600) is None  # removed


def test_the_node_view_shows_the_fields_that_are_not_defaults_then_the_properties() -> None:
    past = replay(memory_log(), 450)
    assert past is not None
    node = as_node(past, 7)
    assert node.props == {"content": "second text", "importance": 9, "memory_type": "decision", "q": 2}
    assert (node.created_at, node.updated_at) == (100, 400)


def test_an_entity_gains_and_loses_observations_and_a_type() -> None:
    changes = log(
        (100, ops.entity_created(ENTITY)),
        (200, ops.observations_added(ENTITY, ["likes tea", "writes code"])),
        (300, ops.node_updated("shared", ENTITY.id, {"entity_type": "person"})),
        (400, ops.observations_removed(ENTITY, ["writes code"])),
    )
    states = [entity_at(changes, at) for at in (150, 250, 350, 450)]
    assert [(e.entity_type, e.observations) for e in states] == [
        ("", ("writes code",)),
        ("", ("writes code", "likes tea")),
        ("person", ("writes code", "likes tea")),
        ("person", ("likes tea",)),
    ]
    past = replay(changes, 350)
    assert past is not None
    assert as_node(past, 8).props == {"name": "Ada", "entityType": "person"}


def test_an_imported_item_counts_from_its_own_creation_time() -> None:
    """Imported at 900 but created at 100: at 500 it existed, as created."""
    changes = log((900, ops.memory_created(MEMORY)))
    assert replay(changes, 500) is None
    past = replay(changes, 500, created_at=100)
    assert past is not None and past.created_at == 100


def test_redacted_entries_still_replay() -> None:
    """Redaction keeps every entry's shape: the replay reads it, with the texts gone."""
    redacted = [Change(c.seq, c.at, c.scope, c.op, c.target, ops.redacted(c.op, c.data)) for c in memory_log()[:4]]
    past = replay(redacted, 450)
    assert past is not None and past.memory is not None
    assert (past.memory["content"], past.memory["tags"], past.props) == ("", (), {})


def test_steps_give_the_item_after_each_entry_as_replay_does() -> None:
    changes = memory_log()
    told = list(steps(changes))
    assert [change for change, _ in told] == changes
    for i, (change, past) in enumerate(told):
        assert past == replay(changes[: i + 1], change.at), change.op
    assert told[-1][1] is None  # removed
