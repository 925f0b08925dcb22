"""Access tokens (`Engine.tokens`) and the grants they give (`granted`), on a real database
of the chosen store (`stores.py`: a SQLite file by default)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from engine.helpers import open_engine_at, stored_bytes
from mnemodb.engine import Engine
from mnemodb.engine.graph import NewEntity, NewRelation
from mnemodb.engine.tokens import TOKEN_PREFIX, Grant, granted
from mnemodb.model.errors import Conflict, Forbidden, InvalidArgument, NotFound

TEAM_A = "01HV7N8Q3Y2J6W5X4Z9A0B1C2D"
TEAM_B = "01HV7N8Q3Y2J6W5X4Z9A0B1C2E"


@pytest.fixture
def eng(db_path: Path) -> Iterator[Engine]:
    with open_engine_at(db_path) as engine:
        yield engine


def test_a_token_is_shown_once_and_only_its_hash_is_stored(eng: Engine) -> None:
    token, secret = eng.tokens.create("ci", read_scopes=[TEAM_A], write_scope=TEAM_A)
    assert secret.startswith(TOKEN_PREFIX) and len(secret) > 40
    assert (token.name, token.read_scopes, token.write_scope, token.read_only) == ("ci", (TEAM_A,), TEAM_A, False)
    assert eng.tokens.verify(secret) == token
    assert eng.tokens.verify(secret + "x") is None
    assert eng.tokens.verify("not even the prefix") is None
    stored = stored_bytes(eng.store)
    assert token.id.encode() in stored  # the search looks where tokens are kept
    assert secret.encode() not in stored
    assert secret[len(TOKEN_PREFIX) :].encode() not in stored


def test_the_write_scope_is_always_readable(eng: Engine) -> None:
    token, _ = eng.tokens.create("writer", read_scopes=[TEAM_B], write_scope=TEAM_A)
    assert token.read_scopes == (TEAM_A, TEAM_B)
    default, _ = eng.tokens.create("default")
    assert (default.read_scopes, default.write_scope) == (("shared",), "shared")


def test_names_are_unique_among_live_tokens(eng: Engine) -> None:
    eng.tokens.create("agent")
    with pytest.raises(Conflict, match="a token named 'agent' exists"):
        eng.tokens.create("agent")
    eng.tokens.revoke("agent")
    eng.tokens.create("agent")
    assert [t.name for t in eng.tokens.list()] == ["agent"]
    assert [t.revoked_at is not None for t in eng.tokens.list(revoked=True)] == [True, False]


@pytest.mark.parametrize("name", ["", "   ", "a" * 101, "tab\there"])
def test_a_bad_name_is_refused(eng: Engine, name: str) -> None:
    with pytest.raises(InvalidArgument, match="a token name is 1 to 100 printable characters"):
        eng.tokens.create(name)
    assert eng.tokens.list() == []


def test_a_bad_scope_is_refused(eng: Engine) -> None:
    with pytest.raises(InvalidArgument, match="invalid scope"):
        eng.tokens.create("x", read_scopes=["team-a"])
    assert eng.tokens.list() == []


def test_revoking_stops_a_token_at_once(eng: Engine) -> None:
    assert eng.tokens.required() is False
    token, secret = eng.tokens.create("laptop")
    assert eng.tokens.required() is True
    revoked = eng.tokens.revoke(token.id)
    assert revoked.revoked_at is not None
    assert eng.tokens.verify(secret) is None
    with pytest.raises(NotFound, match="no live token named or with id 'laptop'"):
        eng.tokens.revoke("laptop")


def test_revoking_the_last_token_does_not_reopen_the_server(eng: Engine, db_path: Path) -> None:
    """With no live token left, requests without one would read every scope: that must be
    an operator's choice (`reopen`), not what revoking the last token happens to do."""
    first, _ = eng.tokens.create("laptop")
    second, _ = eng.tokens.create("ci")
    eng.tokens.revoke(first.id)
    with pytest.raises(Conflict, match="1 live token remains: revoke it first"):
        eng.tokens.reopen()
    eng.tokens.revoke(second.id)
    assert eng.tokens.required() is True
    eng.close()
    with open_engine_at(db_path) as again:  # a stored setting, not a process's memory
        assert again.tokens.required() is True
        again.tokens.reopen()
        assert again.tokens.required() is False
        again.tokens.create("phone")
        assert again.tokens.required() is True


def test_a_token_reads_its_read_scopes_and_writes_only_its_write_scopes(eng: Engine) -> None:
    token, _ = eng.tokens.create(
        "a", read_scopes=[TEAM_A, "shared"], write_scope=TEAM_B, write_scopes=[TEAM_B, "shared"]
    )
    assert (token.read_scopes, token.write_scope, token.write_scopes) == (
        (TEAM_B, "shared", TEAM_A),
        TEAM_B,
        (TEAM_B, "shared"),
    )
    reader, _ = eng.tokens.create("reader", read_scopes=[TEAM_A], write_scope=TEAM_B, read_only=True)
    assert (reader.read_scopes, reader.write_scopes, reader.read_only) == ((TEAM_B, TEAM_A), (), True)
    with pytest.raises(InvalidArgument, match="a read-only token writes no scope"):
        eng.tokens.create("odd", write_scopes=[TEAM_A], read_only=True)
    assert [t.write_scopes for t in eng.tokens.list()] == [(TEAM_B, "shared"), ()]


def test_a_grant_sets_the_default_scopes(eng: Engine) -> None:
    eng.memories.store("Team B's deploys run on Fridays", scope=TEAM_B)
    token, _ = eng.tokens.create("a", read_scopes=[TEAM_A], write_scope=TEAM_A)
    with granted(Grant.of(token)):
        stored = eng.memories.store("Team A's deploys run on Mondays").memory
        assert stored.scope == TEAM_A
        assert [h.memory.content for h in eng.memories.search("deploys")] == ["Team A's deploys run on Mondays"]
        assert (eng.read_scopes, eng.write_scope) == ((TEAM_A,), TEAM_A)
    assert (eng.read_scopes, eng.write_scope) == (("shared",), "shared")


def test_a_grant_refuses_other_scopes_before_reading_or_writing(eng: Engine) -> None:
    eng.memories.store("Team B's secret", scope=TEAM_B)
    token, _ = eng.tokens.create("a", read_scopes=[TEAM_A], write_scope=TEAM_A)
    seq = eng.current_seq()
    with granted(Grant.of(token)):
        with pytest.raises(Forbidden, match=f'scope "{TEAM_B}" is not readable with token "a"'):
            eng.memories.search("secret", scopes=[TEAM_B])
        with pytest.raises(Forbidden, match=f'scope "{TEAM_B}" is not writable with token "a"'):
            eng.memories.store("planted", scope=TEAM_B)
        with pytest.raises(Forbidden):
            eng.items.search("secret", scopes=[TEAM_A, TEAM_B])
    assert eng.current_seq() == seq
    assert eng.stats(scopes=[TEAM_B]).memories == 1


def test_a_read_only_grant_reads_and_never_writes(eng: Engine) -> None:
    eng.memories.store("Shared note", scope="shared")
    token, _ = eng.tokens.create("reader", read_only=True)
    seq = eng.current_seq()
    with granted(Grant.of(token)):
        assert [h.memory.content for h in eng.memories.search("note")] == ["Shared note"]
        with pytest.raises(Forbidden, match='token "reader" is read-only'):
            eng.memories.store("Another note")
    assert eng.current_seq() == seq


def test_a_read_only_grant_cannot_change_or_delete_what_it_reads(eng: Engine) -> None:
    """Not only new writes: every change opens the engine's one write path, which refuses."""
    from mnemodb.engine.items import Patch

    memory = eng.memories.store("Shared note", scope="shared").memory
    eng.graph.create_entities([NewEntity("Ada", "person", ("likes tea",))])
    token, _ = eng.tokens.create("reader", read_only=True)
    seq = eng.current_seq()
    with granted(Grant.of(token)):
        for change in (
            lambda: eng.items.revise(memory.id, Patch(content="Rewritten")),
            lambda: eng.items.forget([memory.id]),
            lambda: eng.graph.add_observations([("Ada", ["plays chess"])]),
            lambda: eng.memories.delete(memory.hash),
        ):
            with pytest.raises(Forbidden, match='token "reader" is read-only'):
                change()
    assert eng.current_seq() == seq
    assert eng.memories.get(memory.hash) is not None


def test_the_unscoped_change_log_is_not_readable_under_a_grant(eng: Engine) -> None:
    eng.memories.store("Team B's secret", scope=TEAM_B)
    token, _ = eng.tokens.create("a", read_scopes=[TEAM_A], write_scope=TEAM_A)
    assert len(eng.changes()) == 1
    with granted(Grant.of(token)), pytest.raises(Forbidden, match="the whole change log spans every scope"):
        eng.changes()
    with granted(Grant.of(token)):
        changes, _ = eng.items.changes(1, 10)
        assert changes == []


def _seed_team_a(eng: Engine) -> dict[str, str]:
    """Team A's memory, entities, relations and a property-graph node; returns their ids."""
    memory = eng.memories.store("Team A deploys on Mondays", ["deploys"], scope=TEAM_A).memory
    other = eng.memories.store("Team A rolls back on Tuesdays", scope=TEAM_A).memory
    ada, bob = eng.graph.create_entities(
        [NewEntity("Ada", "person", ("leads team A",)), NewEntity("Bob", "person", ("joined team A",))],
        scope=TEAM_A,
        scopes=[TEAM_A],
    )
    with granted(None):
        eng.graph.create_relations([NewRelation("Ada", "Bob", "mentors")], scope=TEAM_A, scopes=[TEAM_A])
    [(edge, _)], _ = eng.items.relate(add=[(memory.id, other.id, "precedes", {}, None)], scope=TEAM_A, scopes=[TEAM_A])
    return {
        "memory": memory.id,
        "hash": memory.hash,
        "other_hash": other.hash,
        "ada": ada.id,
        "bob": bob.id,
        "edge": edge.id,
    }


def test_a_scope_a_token_only_reads_is_never_changed(eng: Engine) -> None:
    """A token that reads A and writes B (as a JWT `read:A write:B`) changes nothing in A,
    by any face: not a new item, an edit, a deletion, a relation or its end, observations,
    properties, vectors, nor in a batch, where the whole batch is refused."""
    from mnemodb.engine.items import Note, Patch
    from mnemodb.engine.properties import CloseEdge, CreateNode, Link, RemoveNode, SetEmbedding, SetProps
    from mnemodb.model.records import NewMemory

    ids = _seed_team_a(eng)
    token, _ = eng.tokens.create("a", read_scopes=[TEAM_A], write_scope=TEAM_B)
    before = (eng.current_seq(), list(eng.export())[1:])
    not_writable = f'scope "{TEAM_A}" is not writable with token "a"'
    changes: list[Callable[[], object]] = [
        lambda: eng.memories.store("planted", scope=TEAM_A),
        lambda: eng.memories.store_many([NewMemory("planted")], scope=TEAM_A),
        lambda: eng.memories.update(ids["hash"], importance=9),
        lambda: eng.memories.delete(ids["hash"]),
        lambda: eng.memories.delete_many([ids["hash"]]),
        lambda: eng.memories.relate(ids["hash"], ids["other_hash"], "follows", scope=TEAM_A),
        lambda: eng.memories.unrelate(ids["hash"], ids["other_hash"], "precedes"),
        lambda: eng.items.relate(close=[((ids["hash"], "precedes", ids["other_hash"]), None)]),
        lambda: eng.items.relate(add=[(ids["memory"], ids["ada"], "about", {}, None)], scope=TEAM_A),
        lambda: eng.items.remember(entities=[NewEntity("Cy")], scope=TEAM_A),
        lambda: eng.graph.add_observations([("Ada", ["plays chess"])]),
        lambda: eng.graph.create_entities([NewEntity("Cy")], scope=TEAM_A),
        lambda: eng.graph.create_relations([NewRelation("Bob", "Ada", "reports to")], scope=TEAM_A),
        lambda: eng.graph.delete_entities(["Bob"]),
        lambda: eng.graph.delete_observations([("Ada", ["leads team A"])]),
        lambda: eng.graph.delete_relations([NewRelation("Ada", "Bob", "mentors")]),
        lambda: eng.items.revise(ids["memory"], Patch(content="Rewritten")),
        lambda: eng.items.forget([ids["memory"]]),
        lambda: eng.items.forget([("Ada", "mentors", "Bob")]),
        lambda: eng.items.relate(add=[("Ada", "Bob", "trusts", {}, None)], scope=TEAM_A),
        lambda: eng.items.relate(close=[(ids["edge"], None)]),
        lambda: eng.items.remember([Note(NewMemory("planted"))], scope=TEAM_A),
        # Found by name in a scope it reads, then changed: the entity is A's.
        lambda: eng.items.remember(entities=[NewEntity("Ada", "", ("plays chess",))]),
        lambda: eng.items.remember([Note(NewMemory("about Ada"), about=("Ada",))], scope=TEAM_A),
        lambda: eng.nodes.submit([CloseEdge(ids["edge"])]),
        lambda: eng.nodes.submit([CreateNode("Task", {"title": "planted"}, TEAM_A)]),
        lambda: eng.nodes.submit([SetProps(ids["ada"], {"role": "planted"})]),
        lambda: eng.nodes.submit([RemoveNode(ids["bob"])]),
        lambda: eng.nodes.submit([SetEmbedding(ids["ada"], "m", (1.0, 0.0))]),
        lambda: eng.nodes.submit([Link(ids["ada"], ids["bob"], "knows", {}, TEAM_A, None)]),
    ]
    with granted(Grant.of(token)):
        for index, change in enumerate(changes):
            with pytest.raises(Forbidden, match=not_writable):
                change()
            assert (eng.current_seq(), list(eng.export())[1:]) == before, f"change {index} wrote something"
    assert (eng.current_seq(), list(eng.export())[1:]) == before


def test_deleting_an_item_may_not_take_a_relation_in_a_scope_the_token_only_reads(eng: Engine) -> None:
    """The relation would go with the item (by cascade): a change to the scope it lives in."""
    shared = eng.memories.store("The shared calendar", scope="shared").memory
    own = eng.memories.store("Team B's launch", scope=TEAM_B).memory
    eng.items.relate(add=[(shared.id, own.id, "lists", {}, None)], scope="shared", scopes=["shared", TEAM_B])
    token, _ = eng.tokens.create("b", read_scopes=["shared"], write_scope=TEAM_B)
    seq = eng.current_seq()
    with granted(Grant.of(token)), pytest.raises(Forbidden, match="relations in scopes it may not write touch it"):
        eng.items.forget([own.id])
    assert eng.current_seq() == seq
    assert eng.memories.get(own.hash, scopes=[TEAM_B]) is not None


def test_no_token_administers_access(eng: Engine) -> None:
    """Making, revoking and reopening access are the operator's: refused under any grant,
    a writing one included."""
    made, _ = eng.tokens.create("ops")
    with granted(Grant("writer", ("shared",), "shared", ("shared",))):
        with pytest.raises(Forbidden, match='token "writer" may not administer access'):
            eng.tokens.create("another")
        with pytest.raises(Forbidden, match="may not administer access"):
            eng.tokens.revoke(made.id)
        with pytest.raises(Forbidden, match="may not administer access"):
            eng.tokens.reopen()
    assert [t.name for t in eng.tokens.list()] == ["ops"]
