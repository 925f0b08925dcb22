"""MetaReads/MetaWrites and TokenReads/TokenWrites: settings, access tokens, scope names."""

from __future__ import annotations

import pytest

from mnemodb.model.ids import new_ulid
from mnemodb.model.records import Token
from mnemodb.store.base import ScopeName, Store
from store.contract.rows import T0, B, C


def test_meta_is_none_until_set_and_replaced_when_set_again(store: Store) -> None:
    with store.write() as tx:
        assert tx.get_meta("colour") is None
        tx.set_meta("colour", "red")
        tx.set_meta("colour", "blue")
        tx.set_meta("empty", "")
    with store.read() as tx:
        assert tx.get_meta("colour") == "blue"
        assert tx.get_meta("empty") == ""
        assert tx.get_meta("COLOUR") is None


def _token(name: str, *, write_scopes: tuple[str, ...] = (B,), at: int = T0) -> Token:
    return Token(new_ulid(), name, (B, C), B, write_scopes, at)


def test_a_token_is_found_by_its_hash_until_revoked(store: Store) -> None:
    token = _token("laptop")
    read_only = _token("reader", write_scopes=())
    with store.write() as tx:
        tx.insert_token(token, "hash-1")
        tx.insert_token(read_only, "hash-2")
    with store.read() as tx:
        assert tx.token_by_hash("hash-1") == token
        found = tx.token_by_hash("hash-2")
        assert tx.token_by_hash("hash-3") is None
        assert tx.live_token_count() == 2
    assert found == read_only and found is not None and found.read_only
    with store.write() as tx:
        tx.revoke_token(token.id, T0 + 5)
        tx.revoke_token(new_ulid(), T0 + 5)  # no such token: nothing changes
    with store.read() as tx:
        assert tx.token_by_hash("hash-1") is None
        assert tx.live_token_count() == 1
        assert tx.tokens() == [read_only]
        listed = tx.tokens(revoked=True)
    assert [t.id for t in listed] == [token.id, read_only.id]
    assert listed[0].revoked_at == T0 + 5 and listed[1].revoked_at is None


def test_tokens_oldest_first(store: Store) -> None:
    tokens = [_token(f"t{i}", at=T0 + i) for i in range(4)]
    with store.write() as tx:
        for token in reversed(tokens):
            tx.insert_token(token, f"hash-{token.name}")
    with store.read() as tx:
        assert tx.tokens() == tokens


def test_scope_names_ignore_case_and_list_by_name(store: Store) -> None:
    with store.write() as tx:
        tx.name_scope("team-b", B, T0)
        tx.name_scope("Alpha", C, T0 + 1)
    with store.read() as tx:
        assert tx.scope_named("team-b") == B
        assert tx.scope_named("TEAM-B") == B
        assert tx.scope_named("alpha") == C
        assert tx.scope_named("nobody") is None
        assert tx.scope_names() == [ScopeName("Alpha", C, T0 + 1), ScopeName("team-b", B, T0)]


def test_a_taken_scope_name_is_refused_with_value_error(store: Store) -> None:
    with store.write() as tx:
        tx.name_scope("team-b", B, T0)
        with pytest.raises(ValueError):
            tx.name_scope("TEAM-B", C, T0)
        # The transaction goes on.
        tx.set_meta("after", "yes")
    with store.read() as tx:
        assert tx.scope_named("team-b") == B
        assert tx.get_meta("after") == "yes"
        assert len(tx.scope_names()) == 1
