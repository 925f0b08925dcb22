"""Access tokens (`Engine.tokens`) and the grants they give (`granted`), on a real file."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemodb.engine import Engine
from mnemodb.engine.errors import Conflict, Forbidden, InvalidArgument, NotFound
from mnemodb.engine.tokens import TOKEN_PREFIX, Grant, granted

TEAM_A = "01HV7N8Q3Y2J6W5X4Z9A0B1C2D"
TEAM_B = "01HV7N8Q3Y2J6W5X4Z9A0B1C2E"


@pytest.fixture
def eng(db_path: Path) -> Engine:
    with Engine.open(str(db_path)) as engine:
        yield engine  # type: ignore[misc]


def test_a_token_is_shown_once_and_only_its_hash_is_stored(eng: Engine, db_path: Path) -> None:
    token, secret = eng.tokens.create("ci", read_scopes=[TEAM_A], write_scope=TEAM_A)
    assert secret.startswith(TOKEN_PREFIX) and len(secret) > 40
    assert (token.name, token.read_scopes, token.write_scope, token.read_only) == ("ci", (TEAM_A,), TEAM_A, False)
    assert eng.tokens.verify(secret) == token
    assert eng.tokens.verify(secret + "x") is None
    assert eng.tokens.verify("not even the prefix") is None
    stored = b"".join(f.read_bytes() for f in db_path.parent.glob(db_path.name + "*"))
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
    assert eng.tokens.required() is False
    with pytest.raises(NotFound, match="no live token named or with id 'laptop'"):
        eng.tokens.revoke("laptop")


def test_a_grant_sets_the_default_scopes(eng: Engine) -> None:
    eng.store_memory("Team B's deploys run on Fridays", scope=TEAM_B)
    token, _ = eng.tokens.create("a", read_scopes=[TEAM_A], write_scope=TEAM_A)
    with granted(Grant.of(token)):
        stored = eng.store_memory("Team A's deploys run on Mondays").memory
        assert stored.scope == TEAM_A
        assert [h.memory.content for h in eng.search_memories("deploys")] == ["Team A's deploys run on Mondays"]
        assert (eng.read_scopes, eng.write_scope) == ((TEAM_A,), TEAM_A)
    assert (eng.read_scopes, eng.write_scope) == (("shared",), "shared")


def test_a_grant_refuses_other_scopes_before_reading_or_writing(eng: Engine) -> None:
    eng.store_memory("Team B's secret", scope=TEAM_B)
    token, _ = eng.tokens.create("a", read_scopes=[TEAM_A], write_scope=TEAM_A)
    seq = eng.current_seq()
    with granted(Grant.of(token)):
        with pytest.raises(Forbidden, match=f'scope "{TEAM_B}" is not readable with token "a"'):
            eng.search_memories("secret", scopes=[TEAM_B])
        with pytest.raises(Forbidden, match=f'scope "{TEAM_B}" is not writable with token "a"'):
            eng.store_memory("planted", scope=TEAM_B)
        with pytest.raises(Forbidden):
            eng.items.search("secret", scopes=[TEAM_A, TEAM_B])
    assert eng.current_seq() == seq
    assert eng.stats(scopes=[TEAM_B]).memories == 1


def test_a_read_only_grant_reads_and_never_writes(eng: Engine) -> None:
    eng.store_memory("Shared note", scope="shared")
    token, _ = eng.tokens.create("reader", read_only=True)
    seq = eng.current_seq()
    with granted(Grant.of(token)):
        assert [h.memory.content for h in eng.search_memories("note")] == ["Shared note"]
        with pytest.raises(Forbidden, match='token "reader" is read-only'):
            eng.store_memory("Another note")
    assert eng.current_seq() == seq


def test_a_read_only_grant_cannot_change_or_delete_what_it_reads(eng: Engine) -> None:
    """Not only new writes: every change opens the engine's one write path, which refuses."""
    from mnemodb.engine.items import Patch

    memory = eng.store_memory("Shared note", scope="shared").memory
    eng.create_entity("Ada", "person", ["likes tea"])
    token, _ = eng.tokens.create("reader", read_only=True)
    seq = eng.current_seq()
    with granted(Grant.of(token)):
        for change in (
            lambda: eng.items.revise(memory.id, Patch(content="Rewritten")),
            lambda: eng.items.forget([memory.id]),
            lambda: eng.graph.add_observations([("Ada", ["plays chess"])]),
            lambda: eng.delete_memory(memory.hash),
        ):
            with pytest.raises(Forbidden, match='token "reader" is read-only'):
                change()
    assert eng.current_seq() == seq
    assert eng.get_memory(memory.hash) is not None


def test_the_unscoped_change_log_is_not_readable_under_a_grant(eng: Engine) -> None:
    eng.store_memory("Team B's secret", scope=TEAM_B)
    token, _ = eng.tokens.create("a", read_scopes=[TEAM_A], write_scope=TEAM_A)
    assert len(eng.changes()) == 1
    with granted(Grant.of(token)), pytest.raises(Forbidden, match="the whole change log spans every scope"):
        eng.changes()
    with granted(Grant.of(token)):
        changes, _ = eng.items.changes(1, 10)
        assert changes == []
