"""Stored vectors, the generations a cached search compares, and what the background
embedder still has to do. Mixed into the PostgreSQL store's read and write transactions.

A vector is kept as given, little-endian float32 bytes (`vector`, which every read
returns), and once more as a pgvector value (`vec`), which the store's vector search
(`postgresql/vectors.py`) scores and indexes. `vec` is NULL where pgvector cannot hold the
bytes or where they have no direction (a zero vector, or a value that is not finite):
such a vector matches nothing, as in the exact in-process search.

Two counters per model are kept by triggers, as the SQLite store's migrations 8 and 9 keep
them: the model's **generation** grows with every vector set or removed (a cascade from a
deleted node included), each vector remembers the generation that wrote it, and the model
counts its **removals**. A search holding a model's vectors in memory reads only those
written since the generation it has, and the list of nodes that still have one only after
removals. Background embedders write vectors outside the change log (they are derived
from text that is logged), so the log cannot tell a cache what moved.

Each vector also remembers the node `version` it was made from (`node_version`): it is
stale once the node's version has grown past it. Times cannot tell, as an edit in the same
millisecond the vector's text was read carries the same time.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import Any

import psycopg

from mnemodb.store.base import Coverage, EmbeddingChanges, StoredVector
from mnemodb.store.postgresql.nodes import put_scopes
from mnemodb.store.postgresql.sql import got, put

__all__ = ["DDL", "MAX_VECTOR_DIM", "EmbeddingReads", "EmbeddingWrites", "pgvector_text"]

MAX_VECTOR_DIM = 16000
"""The longest vector pgvector's `vector` type holds."""

# `scope` is the node's (a node never changes scope), copied so that a search filters
# by it on this table alone and the per-scope counts survive the node's deletion.
# `vector` (the bytes, read whole, rarely) is moved out of line before `vec` (scored by
# every exact search), so a scan of `vec` does not read the bytes.
DDL = """
CREATE TABLE embedding (
    node         bigint NOT NULL REFERENCES node (pk) ON DELETE CASCADE,
    model        text COLLATE "C" NOT NULL,
    dim          bigint NOT NULL,
    vector       bytea NOT NULL,
    updated_at   bigint NOT NULL,
    node_version bigint NOT NULL DEFAULT 0,
    generation   bigint NOT NULL DEFAULT 0,
    scope        text COLLATE "C" NOT NULL,
    vec          vector,
    PRIMARY KEY (node, model)
);
ALTER TABLE embedding ALTER COLUMN vector SET STORAGE EXTERNAL;
ALTER TABLE embedding ALTER COLUMN vec SET STORAGE MAIN;
CREATE INDEX embedding_model ON embedding (model, node);
CREATE INDEX embedding_model_generation ON embedding (model, generation);
CREATE INDEX embedding_model_scope ON embedding (model, scope);

CREATE TABLE embedding_generation (
    model      text COLLATE "C" PRIMARY KEY,
    generation bigint NOT NULL,
    removals   bigint NOT NULL DEFAULT 0
);

-- A vector written takes the model's next generation. BEFORE: the row carries the number
-- itself, with no second update of its own.
CREATE FUNCTION embedding_generation_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO embedding_generation AS g (model, generation) VALUES (NEW.model, 1)
        ON CONFLICT (model) DO UPDATE SET generation = g.generation + 1
        RETURNING g.generation INTO NEW.generation;
    RETURN NEW;
END $$;
CREATE TRIGGER embedding_generation_insert BEFORE INSERT ON embedding
    FOR EACH ROW EXECUTE FUNCTION embedding_generation_write();
CREATE TRIGGER embedding_generation_update BEFORE UPDATE OF node, model, dim, vector, node_version ON embedding
    FOR EACH ROW EXECUTE FUNCTION embedding_generation_write();

CREATE FUNCTION embedding_generation_remove() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO embedding_generation AS g (model, generation, removals) VALUES (OLD.model, 1, 1)
        ON CONFLICT (model) DO UPDATE SET generation = g.generation + 1, removals = g.removals + 1;
    RETURN OLD;
END $$;
CREATE TRIGGER embedding_generation_delete AFTER DELETE ON embedding
    FOR EACH ROW EXECUTE FUNCTION embedding_generation_remove();

-- How many vectors each model has in each scope: what the vector search reads to choose
-- between an exact scan and its approximate index, without counting rows.
CREATE TABLE embedding_count (
    model text COLLATE "C" NOT NULL,
    scope text COLLATE "C" NOT NULL,
    n     bigint NOT NULL,
    PRIMARY KEY (model, scope)
);
CREATE FUNCTION embedding_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO embedding_count AS c (model, scope, n) VALUES (NEW.model, NEW.scope, 1)
            ON CONFLICT (model, scope) DO UPDATE SET n = c.n + 1;
    ELSE
        UPDATE embedding_count SET n = n - 1 WHERE model = OLD.model AND scope = OLD.scope;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER embedding_count AFTER INSERT OR DELETE ON embedding
    FOR EACH ROW EXECUTE FUNCTION embedding_count();
"""


def pgvector_text(vector: bytes, dim: int) -> str | None:
    """Little-endian float32 bytes as pgvector's text form, exact (the shortest decimal of
    each float32 reads back as that float32); None when pgvector cannot hold them, or they
    have no direction: what `embedding.vec` keeps."""
    if dim <= 0 or dim > MAX_VECTOR_DIM or len(vector) != dim * 4:
        return None
    values = struct.unpack(f"<{dim}f", vector)
    if not all(math.isfinite(v) for v in values) or not any(values):
        return None
    return "[" + ",".join(map(repr, values)) + "]"


class EmbeddingReads:
    conn: psycopg.Connection[Any]

    def embedding_dim(self, model: str, *, excluding: int | None = None) -> int | None:
        """The length of `model`'s vectors (None when it has none), not counting node `excluding`'s."""
        row = self.conn.execute(
            "SELECT dim FROM embedding WHERE model = %s AND node IS DISTINCT FROM %s::bigint LIMIT 1",
            [put(model), excluding],
        ).fetchone()
        return None if row is None else int(row[0])

    def embeddings_of_model(self, model: str, *, since: int | None = None) -> list[StoredVector]:
        """(node pk, node id, scope, float32 bytes) of every `model` vector, oldest node
        first; with `since`, of those written after that generation."""
        later = "" if since is None else "AND b.generation > %s "
        return [
            StoredVector(r[0], got(r[1]), got(r[2]), bytes(r[3]))
            for r in self.conn.execute(
                "SELECT b.node, n.id, n.scope, b.vector FROM embedding b JOIN node n ON n.pk = b.node "
                f"WHERE b.model = %s {later}ORDER BY b.node",
                [put(model)] if since is None else [put(model), since],
            )
        ]

    def embedded_nodes(self, model: str) -> list[int]:
        """The pks of the nodes with a `model` vector, in pk order."""
        return [
            r[0] for r in self.conn.execute("SELECT node FROM embedding WHERE model = %s ORDER BY node", [put(model)])
        ]

    def embedding_changes(self, model: str) -> EmbeddingChanges:
        """(`model`'s generation, how many of its vectors were ever removed)."""
        row = self.conn.execute(
            "SELECT generation, removals FROM embedding_generation WHERE model = %s", [put(model)]
        ).fetchone()
        return EmbeddingChanges(0, 0) if row is None else EmbeddingChanges(int(row[0]), int(row[1]))

    def unembedded(self, model: str, labels: Sequence[str], limit: int, *, after: int = 0) -> list[int]:
        """Nodes of `labels` past pk `after` with no `model` vector, or with one made before
        their last change, in pk order."""
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT n.pk FROM node n LEFT JOIN embedding b ON b.node = n.pk AND b.model = %s "
                "WHERE n.pk > %s AND n.label = ANY(%s::text[]) "
                "AND (b.node IS NULL OR b.node_version < n.version) ORDER BY n.pk LIMIT %s",
                [put(model), after, put_scopes(labels), max(limit, 0)],
            )
        ]

    def embedding_coverage(self, model: str, labels: Sequence[str]) -> Coverage:
        """(nodes of `labels` whose `model` vector is current, nodes of `labels`)."""
        row = self.conn.execute(
            "SELECT COUNT(*), COUNT(b.node) FILTER (WHERE b.node_version >= n.version) "
            "FROM node n LEFT JOIN embedding b ON b.node = n.pk AND b.model = %s "
            "WHERE n.label = ANY(%s::text[])",
            [put(model), put_scopes(labels)],
        ).fetchone()
        assert row is not None
        return Coverage(int(row[1]), int(row[0]))


class EmbeddingWrites(EmbeddingReads):
    def set_embedding(
        self, pk: int, model: str, vector: bytes, dim: int, at: int, *, node_version: int | None = None
    ) -> None:
        # Without `node_version`, the vector is of the node as it is now (a client's own).
        made_at = "n.version" if node_version is None else "%s::bigint"
        made_params = [] if node_version is None else [node_version]
        vec = pgvector_text(vector, dim)
        # An update, else an insert (writers are serialised, so nothing comes between):
        # one trigger, one generation per write, where an upsert would fire both.
        updated = self.conn.execute(
            f"UPDATE embedding b SET dim = %s, vector = %s, updated_at = %s, node_version = {made_at}, "
            "vec = %s::vector FROM node n WHERE n.pk = b.node AND b.node = %s AND b.model = %s",
            [dim, vector, at, *made_params, vec, pk, put(model)],
        )
        if updated.rowcount:
            return
        # From the node's row: nothing is written for a node that does not exist.
        self.conn.execute(
            "INSERT INTO embedding (node, model, dim, vector, updated_at, node_version, scope, vec) "
            f"SELECT n.pk, %s, %s, %s, %s, {made_at}, n.scope, %s::vector FROM node n WHERE n.pk = %s",
            [put(model), dim, vector, at, *made_params, vec, pk],
        )

    def delete_embeddings(self, pk: int) -> None:
        """Remove every vector of the node; the models' generations and removals grow."""
        self.conn.execute("DELETE FROM embedding WHERE node = %s", [pk])
