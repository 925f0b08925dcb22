"""Nearest-neighbour search inside PostgreSQL, with pgvector: the PostgreSQL store's
`VectorIndex`.

Every vector is kept twice in `embedding` (`postgresql/embeddings.py`): as the bytes it was
given, and as a pgvector value (`vec`, NULL for a vector without direction). A search is
one query in the caller's read transaction, so it sees exactly that snapshot, and no
process holds a model's vectors in memory.

- **Exact** (the default, and always for small sets): the readable vectors of the model
  are scored by cosine distance (`<=>`) in a scan, best first, ties by node id, as the
  in-process exact index answers (`store/vectors.py`). `FETCH FIRST ... WITH TIES` keeps
  every vector tied with the last one, so the order among ties is decided over all of them.
- **Approximate** (HNSW), for a model with at least `exact_below` vectors readable by the
  caller: one partial HNSW index per (model, dimension), on the expression
  `vec::vector(<dim>)` with `vector_cosine_ops` and `WHERE model = '<model>' AND dim =
  <dim>` (models of every length share the one column; an HNSW index needs a fixed length).
  A scope filter is applied inside the index scan, and `hnsw.iterative_scan` lets the scan
  go on past `ef_search` candidates until enough readable ones were found, instead of
  returning the few of its first candidates that pass the filter. A filter that passes too
  small a share of the model's vectors goes exact instead: the scan would visit too many
  before it found `k`.

A search never waits for an index: while a model has none (or an unfinished one), it is
answered exactly, and a background thread builds the index with `CREATE INDEX
CONCURRENTLY`, which lets writers go on; a session advisory lock keeps processes from
building the same index twice, and an index left invalid by a build that died is dropped
and built again. A model of more than `HNSW_MAX_DIM` dimensions, a read-only store, a
search among given candidates and one asked to be `exact` are always exact; a model longer
than pgvector holds (`MAX_VECTOR_DIM`) is searched by the in-process index
(`store/vectors.py`).
"""

from __future__ import annotations

import hashlib
import logging
import struct
import threading
import time
from collections import Counter
from collections.abc import Collection, Sequence
from typing import Any

import psycopg

from mnemodb.model.errors import InvalidArgument
from mnemodb.store.base import ReadTx, ScopeSet, VectorHit
from mnemodb.store.postgresql.database import PostgresDatabase
from mnemodb.store.postgresql.embeddings import MAX_VECTOR_DIM, pgvector_text
from mnemodb.store.postgresql.nodes import put_scopes
from mnemodb.store.postgresql.sql import got, put
from mnemodb.store.vectors import APPROXIMATE_FROM, MatrixVectorIndex

__all__ = ["EXACT_BELOW", "HNSW_MAX_DIM", "PgVectorIndex"]

log = logging.getLogger(__name__)

EXACT_BELOW = 10_000
"""Readable vectors under which a search is exact. An exact scan of 384-dimensional vectors
took 1.4 ms at 1,000 readable, 3.6 ms at 5,000 and 5.4 ms at 10,000 (p50, k = 10), an HNSW
search 2-3 ms at any size: up to here exactness costs a few milliseconds at most
(bench/bench_pg_vectors.py)."""

HNSW_MAX_DIM = 2000
"""The longest `vector` pgvector's HNSW indexes."""

EF_SEARCH = 100
"""Candidates an HNSW scan keeps (at least `k`): recall against latency."""

MIN_SHARE = 0.02
"""The smallest share of a model's vectors a scope filter may pass for an HNSW scan; below
it, the scan would visit more vectors than an exact scan of the readable ones reads."""

MAX_SCAN_TUPLES = 200_000
"""The most vectors one iterative HNSW scan may visit before it stops short."""

_RECHECK_S = 5.0
"""How often a search looks again for an index still being built."""


def _literal(text: str) -> str:
    return "'" + put(text).replace("'", "''") + "'"


def index_name(model: str, dim: int) -> str:
    """The name of the HNSW index of `model`'s vectors of length `dim`."""
    digest = hashlib.sha256(f"{model}\x00{dim}".encode()).hexdigest()[:16]
    return f"embedding_hnsw_{digest}"


def _connection(tx: ReadTx) -> psycopg.Connection[Any]:
    conn = getattr(tx, "conn", None)
    if not isinstance(conn, psycopg.Connection):
        raise TypeError("PgVectorIndex searches through the PostgreSQL store's own transactions")
    return conn


class PgVectorIndex:
    """The `VectorIndex` of one PostgreSQL store (see the module's docstring).

    `exact_below`: readable vectors under which a search is exact (0: approximate whenever
    an index is ready). `build`: whether searches start index builds in the background
    (False: only `build_index` builds them). `exact_only`: never approximate."""

    def __init__(
        self,
        database: PostgresDatabase,
        *,
        exact_below: int = EXACT_BELOW,
        ef_search: int = EF_SEARCH,
        build: bool = True,
        exact_only: bool = False,
    ) -> None:
        self._database = database
        self.exact_below = exact_below
        self.ef_search = ef_search
        self._build = build and not database.read_only and not exact_only
        self._exact_only = exact_only
        self._ready: dict[tuple[str, int], bool] = {}
        self._checked: dict[tuple[str, int], float] = {}
        self._building: dict[tuple[str, int], threading.Thread] = {}
        self._lock = threading.Lock()
        self._fallback: MatrixVectorIndex | None = None
        self.searches: Counter[str] = Counter()
        """How many searches went each way ("exact", "hnsw", "in-process"): what an operator
        or a test reads."""

    # -- search ---------------------------------------------------------------------------

    def nearest(
        self,
        tx: ReadTx,
        model: str,
        query: Sequence[float],
        *,
        k: int,
        scopes: ScopeSet,
        candidates: Collection[str] | None = None,
        exact: bool = False,
    ) -> list[VectorHit]:
        hits = self._search(tx, model, query, k, scopes, candidates, explain=False, exact=exact)
        assert isinstance(hits, list)
        return hits

    def explain(self, tx: ReadTx, model: str, query: Sequence[float], *, k: int, scopes: ScopeSet) -> str:
        """The plan PostgreSQL runs for this search (EXPLAIN, not run): whether the HNSW index
        serves it. Empty when no statement would run."""
        plan = self._search(tx, model, query, k, scopes, None, explain=True, exact=False)
        return plan if isinstance(plan, str) else ""

    def _search(
        self,
        tx: ReadTx,
        model: str,
        query: Sequence[float],
        k: int,
        scopes: ScopeSet,
        candidates: Collection[str] | None,
        *,
        explain: bool,
        exact: bool,
    ) -> list[VectorHit] | str:
        conn = _connection(tx)
        row = conn.execute(
            "SELECT (SELECT dim FROM embedding WHERE model = %s ORDER BY node LIMIT 1), "
            "(SELECT COALESCE(SUM(n), 0) FROM embedding_count WHERE model = %s), "
            "(SELECT COALESCE(SUM(n), 0) FROM embedding_count WHERE model = %s AND scope = ANY(%s::text[]))",
            [put(model), put(model), put(model), put_scopes(scopes)],
        ).fetchone()
        assert row is not None
        dim, total, readable = row[0], int(row[1]), int(row[2])
        if dim is None:
            return []
        if dim != len(query):
            raise InvalidArgument(
                f"the query vector has {len(query)} dimensions but model {model!r} stores {dim}-dimensional vectors"
            )
        if k <= 0 or readable == 0 or (candidates is not None and not candidates):
            return []
        if dim > MAX_VECTOR_DIM:
            # Longer than pgvector holds (`vec` is NULL): the in-process exact index.
            if explain:
                return ""
            self._count("in-process")
            return self._in_process().nearest(tx, model, query, k=k, scopes=scopes, candidates=candidates, exact=exact)
        try:
            target = pgvector_text(struct.pack(f"<{dim}f", *query), dim)
        except (OverflowError, struct.error):
            target = None
        if target is None:
            return []  # no direction: a zero vector matches nothing
        # Model and length are written into the statement as literals: a parameter would not
        # let the planner prove the partial HNSW index's WHERE.
        where = f"b.model = {_literal(model)} AND b.dim = {int(dim)} AND b.vec IS NOT NULL"
        params: list[Any] = []
        if readable < total or candidates is not None:
            where += " AND b.scope = ANY(%s::text[])"
            params.append(put_scopes(scopes))
        if candidates is not None:
            where += " AND b.node IN (SELECT pk FROM node WHERE id = ANY(%s::text[]))"
            params.append(put_scopes(list(candidates)))
        approximate = not exact and candidates is None and self._approximate(conn, model, dim, total, readable)
        if not explain:
            self._count("hnsw" if approximate else "exact")
        if approximate:
            ef = min(1000, max(self.ef_search, k))
            # A filtered scan finds about one readable vector in total / readable: it may
            # visit enough for `ef` of them (pgvector's default stops at 20,000). A relaxed
            # scan returns them nearly in order: a few more than `k` are read, and sorted.
            visits = min(MAX_SCAN_TUPLES, max(20_000, ef * 2 * total // readable))
            conn.execute(
                "SELECT set_config('hnsw.ef_search', %s, true), "
                "set_config('hnsw.iterative_scan', 'relaxed_order', true), "
                "set_config('hnsw.max_scan_tuples', %s, true)",
                [str(ef), str(visits)],
            )
            # The distance on the very expression indexed.
            distance = f"(b.vec::vector({int(dim)})) <=> %s::vector"
            fetch = k + max(10, k // 4)
        else:
            distance = "b.vec <=> %s::vector"
            fetch = k + 1
        statement = (
            "SELECT t.node, t.distance, n.id FROM ("
            f"SELECT b.node, {distance} AS distance FROM embedding b WHERE {where} ORDER BY distance LIMIT %s"
            ") t JOIN node n ON n.pk = t.node"
        )
        if explain:
            return "\n".join(str(r[0]) for r in conn.execute("EXPLAIN " + statement, [target, *params, fetch]))
        rows = conn.execute(statement, [target, *params, fetch]).fetchall()
        ordered = sorted(rows, key=lambda r: (r[1], got(r[2])))
        if len(ordered) >= fetch and ordered[k - 1][1] == ordered[-1][1]:
            # Equal vectors across the cut: which of them come first goes by node id over
            # all of them, not over those the scan happened to return.
            last = ordered[k - 1][1]
            tied = conn.execute(
                f"SELECT b.node, b.vec <=> %s::vector AS distance, n.id FROM embedding b "
                f"JOIN node n ON n.pk = b.node WHERE {where} AND (b.vec <=> %s::vector) = %s",
                [target, *params, target, last],
            ).fetchall()
            ordered = sorted(
                [r for r in ordered if r[1] < last] + tied,
                key=lambda r: (r[1], got(r[2])),
            )
        return [VectorHit(int(r[0]), 1.0 - float(r[1])) for r in ordered[:k]]

    def _in_process(self) -> MatrixVectorIndex:
        with self._lock:
            if self._fallback is None:
                self._fallback = MatrixVectorIndex(approximate_from=None if self._exact_only else APPROXIMATE_FROM)
            return self._fallback

    def _count(self, path: str) -> None:
        with self._lock:
            self.searches[path] += 1

    # -- the approximate index ------------------------------------------------------------

    def _approximate(self, conn: psycopg.Connection[Any], model: str, dim: int, total: int, readable: int) -> bool:
        """Whether this search goes through the model's HNSW index (starting its build
        when the model is large enough and has none)."""
        if self._exact_only or dim > HNSW_MAX_DIM or readable < self.exact_below:
            return False
        if readable < total * MIN_SHARE:
            return False
        key = (model, dim)
        if self._ready.get(key):
            return True
        now = time.monotonic()
        if now - self._checked.get(key, -_RECHECK_S) < _RECHECK_S:
            return False
        self._checked[key] = now
        valid = _index_state(conn, index_name(model, dim))
        if valid:
            self._ready[key] = True
            return True
        if self._build:
            self._start_build(model, dim)
        return False

    def _start_build(self, model: str, dim: int) -> None:
        key = (model, dim)
        with self._lock:
            running = self._building.get(key)
            if running is not None and running.is_alive():
                return
            thread = threading.Thread(
                target=self._build_quietly, args=(model, dim), name="mnemodb-pg-hnsw", daemon=True
            )
            self._building[key] = thread
            thread.start()

    def _build_quietly(self, model: str, dim: int) -> None:
        try:
            self.build_index(model, dim)
        except Exception:  # a background build that fails leaves searches exact
            log.warning("building the vector index of model %r failed", model, exc_info=True)

    def build_index(self, model: str, dim: int | None = None, *, memory: str = "1GB") -> bool:
        """Build `model`'s HNSW index (of its vectors of length `dim`; None: the length its
        vectors have) unless it exists; True once it is ready. Writers go on meanwhile;
        another process building it already makes this return False at once. `memory` is
        the build's `maintenance_work_mem`: a build whose graph outgrows it slows down
        many times over (100,000 vectors of 384 dimensions take about 200 MB)."""
        if dim is None:
            with self._database.read() as conn:
                row = conn.execute(
                    "SELECT dim FROM embedding WHERE model = %s ORDER BY node LIMIT 1", [put(model)]
                ).fetchone()
            if row is None:
                return False
            dim = int(row[0])
        if dim > HNSW_MAX_DIM:
            return False
        name = index_name(model, dim)
        conn = self._database.connect()  # autocommit: CREATE INDEX CONCURRENTLY runs outside transactions
        try:
            digest = hashlib.sha256(f"mnemodb hnsw {self._database.schema} {name}".encode()).digest()
            lock = int.from_bytes(digest[:8], "big", signed=True)
            locked = conn.execute("SELECT pg_try_advisory_lock(%s)", [lock]).fetchone()
            if not locked or not locked[0]:
                return False
            state = _index_state(conn, name)
            if state is True:
                self._ready[(model, dim)] = True
                return True
            if state is False:
                conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")  # left invalid by a build that died
            conn.execute("SELECT set_config('maintenance_work_mem', %s, false)", [memory])
            started = time.monotonic()
            conn.execute(
                f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON embedding "
                f"USING hnsw ((vec::vector({int(dim)})) vector_cosine_ops) "
                f"WHERE model = {_literal(model)} AND dim = {int(dim)}"
            )
            log.info("built the vector index of model %r in %.1f s", model, time.monotonic() - started)
            self._ready[(model, dim)] = True
            self._checked.pop((model, dim), None)
            return True
        finally:
            conn.close()

    def wait_for_builds(self, timeout: float | None = None) -> None:
        """Wait for the index builds this object started (tests and tools)."""
        with self._lock:
            threads = list(self._building.values())
        for thread in threads:
            thread.join(timeout)


def _index_state(conn: psycopg.Connection[Any], name: str) -> bool | None:
    """Whether the index `name` of the current schema is ready (None: there is none)."""
    row = conn.execute(
        "SELECT i.indisvalid AND i.indisready FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "WHERE c.relname = %s AND c.relnamespace = to_regnamespace(current_schema())",
        [name],
    ).fetchone()
    return None if row is None else bool(row[0])
