"""A rule holds on every path to the write it governs, and derived-data upkeep is never
refused: the reproductions of the architecture review (A.2, import's cross-scope edge, is
tests/engine/test_export_import.py::test_an_edge_between_two_private_scopes_is_refused)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.helpers import open_engine_at
from mnemodb.engine.graph import NewEntity, NewRelation
from mnemodb.engine.properties import CreateNode, IndexSpec, Link
from mnemodb.engine.tokens import Grant, granted
from mnemodb.model.errors import Forbidden

A, B = "01HV7N8Q3Y2J6W5X4Z9A0B1C2D", "01HV7N8Q3Y2J6W5X4Z9A0B1C2E"
REFUSAL = f'a relation in scope "{B}" cannot touch an item in scope "{A}"'


def test_every_face_refuses_a_relation_the_grant_s_scope_rule_forbids(db_path: Path) -> None:
    """A token that reads A and writes B may not write, in B, a relation that touches A's
    item: B's readers would see it. The knowledge-graph face, the items face and the
    property-graph face all refuse it, and nothing is written."""
    with open_engine_at(db_path) as engine:
        [alice] = engine.graph.create_entities([NewEntity("alice")], scope=A)
        [hub] = engine.graph.create_entities([NewEntity("hub")], scope="shared")
        before = engine.current_seq()
        with granted(Grant("t", (A, B, "shared"), B, (B,))):
            with pytest.raises(Forbidden, match=REFUSAL):
                engine.graph.create_relations([NewRelation("alice", "hub", "knows")], scopes=[A, B, "shared"])
            with pytest.raises(Forbidden, match=REFUSAL):
                engine.items.relate(add=[("alice", "hub", "knows", {}, None)], scopes=[A, B, "shared"])
            with pytest.raises(Forbidden, match=REFUSAL):
                engine.nodes.submit([Link(alice.id, hub.id, "knows")])
        assert engine.current_seq() == before
        assert engine.graph.read().relations == ()


def test_a_read_only_token_searches_node_text_written_after_the_last_search(db_path: Path) -> None:
    """Catching the node-text index up is upkeep, not the caller's change: a read-only
    token's search does it (it was refused as a write), and logs nothing."""
    with open_engine_at(db_path) as engine:
        engine.nodes.use_spec(IndexSpec(equality=(("Entity", "name"),), text=(("Doc", "title"),)))
        engine.nodes.submit([CreateNode("Doc", {"title": "quarterly budget review"})])
        logged = engine.current_seq()
        with granted(Grant("reader", ("shared",), "shared", ())):
            hits = engine.nodes.search_text("budget")
        assert [node.props["title"] for node, _ in hits] == ["quarterly budget review"]
        assert engine.current_seq() == logged
