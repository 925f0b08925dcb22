"""The words of the properties an index spec declares (the property-graph face's text
search): one row of the word index `NODE_TEXT` per node with declared text, folded as
FTS5's `unicode61 remove_diacritics 2` folds it, without stemming, ranked by bm25 as FTS5
ranks it (see `words`). Mixed into the PostgreSQL store's read and write transactions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from mnemodb.store.base import ScoredPk
from mnemodb.store.postgresql import words
from mnemodb.store.postgresql.nodes import put_scopes

__all__ = ["DDL", "NODE_TEXT", "NodeTextReads", "NodeTextWrites"]

NODE_TEXT = words.WordIndex(name="node_text", owner="node (pk)", columns=("text",), stemmed=False)

DDL = words.word_index_ddl(NODE_TEXT)


class NodeTextReads:
    conn: psycopg.Connection[Any]

    def node_text_search(self, terms: Sequence[str], scopes: Sequence[str], limit: int) -> list[ScoredPk]:
        """Nodes whose declared text matches any of `terms`, best first (the score is
        FTS5's bm25 negated)."""
        if not terms or limit <= 0:
            return []
        rows = words.ranked(
            self.conn, NODE_TEXT, terms, limit=limit, condition="w.scope = ANY(%s)", params=[put_scopes(scopes)]
        )
        return [ScoredPk(int(r[0]), float(r[1])) for r in rows]


class NodeTextWrites(NodeTextReads):
    def set_node_text(self, pk: int, text: str | None) -> None:
        if not text:
            words.forget_row(self.conn, NODE_TEXT, pk)
            return
        # Only for a node that exists: text kept for a free pk would show up on the node
        # that takes it later (a load keeps free pks). The row keeps the node's scope, so
        # a search filters on the index row alone.
        row = self.conn.execute("SELECT scope FROM node WHERE pk = %s", [pk]).fetchone()
        if row is None:
            words.forget_row(self.conn, NODE_TEXT, pk)
            return
        words.index_row(self.conn, NODE_TEXT, pk, row[0], [text])

    def clear_node_text(self) -> None:
        words.clear(self.conn, NODE_TEXT)
