"""Ranked word search in SQL: FTS5's tokens and bm25, without FTS5.

SQLite keeps memory and entity text in FTS5 tables and ranks matches with FTS5's bm25.
PostgreSQL must find the same rows in the same order with the same scores, so text is
analysed in Python exactly as FTS5 analyses it (`mnemodb.store.fts5_tokens`) and the
ranking is computed in SQL from what the analysis leaves in a word-index table.

A word index (`WordIndex`) is four tables, made by `word_index_ddl`:

* `<name>`: one row per indexed thing (`node`, its `scope`), with `ntok` (its tokens in
  every column, FTS5's document length), `lex` (its distinct lexemes, as UTF-8 bytes: a
  stemmed token need not be valid UTF-8, see `fts5_tokens`), and per column `tf_<col>`
  (how often each lexeme of `lex` occurs in that column, aligned with `lex`). A GIN
  index on `lex` finds the rows holding a word.
* `<name>_seq`: per row and column, `seq_<col>`: the column's tokens in order, each as
  its 1-based place in `lex`. What a query term analysed into several tokens (which FTS5
  matches as a phrase of adjacent tokens) is checked against. A table of its own, read
  by phrases only: in the word table it made every row about twice as wide to scan.
* `<name>_df`: per lexeme, how many rows hold it in any column (`df_any`) and in each
  column set of `WordIndex.modes` (`df_1`, `df_2`, ...): bm25's document frequencies.
* `<name>_stats`: one row, the number of rows `n` and their tokens in total `tokens`.

Triggers on the word table keep the other two right on insert, update and delete
(cascades included). Rows are written only by `index_row` (and removed by it, by
`forget_row`, `clear` or a cascade from the owner).

The score is FTS5's `bm25()` negated, so that higher is better: for each query phrase,
idf = ln((N - nHit + 0.5) / (nHit + 0.5)), 1e-6 when not positive; tf = the phrase's
occurrences in the searched columns, each weighted by its column's weight; score +=
idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * D / avgdl)) with k1 = 1.2, b = 0.75, D
the row's tokens in all columns and avgdl the table's tokens over its rows. N and nHit
count the whole table, whoever may read it; nHit counts the rows holding the phrase in
the searched columns (FTS5 keeps a query's column filter when it counts a phrase's rows).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

from mnemodb.model.value import Value

# The unicode61 fold itself (no porter), for indexes FTS5 keeps unstemmed.
from mnemodb.store.fts5_tokens import index_tokens, unstemmed_tokens

__all__ = ["DDL", "WordIndex", "analyse", "clear", "forget_row", "index_row", "ranked", "word_index_ddl"]

# Nothing shared: each index brings its own tables and trigger (`word_index_ddl`).
DDL = ""


@dataclass(frozen=True, eq=False, repr=False)
class WordIndex(Value):
    """What one word index holds.

    `name`: its table (the others are `<name>_df` and `<name>_stats`). `owner`: what a row's
    `node` references, as `table (column)`; the row goes when the owner's row does.
    `columns`: the indexed text fields, in the order `index_row` takes them and `ranked`
    weighs them (each must be an SQL identifier). `modes`: the column sets searches filter
    on, other than all columns, each kept with its own document frequencies (a search on a
    set not listed here is still exact but counts its frequencies by scanning).
    `stemmed`: porter stemming after the unicode61 fold (FTS5's `porter unicode61
    remove_diacritics 2`), or the fold alone (`unicode61 remove_diacritics 2`)."""

    name: str
    owner: str
    columns: tuple[str, ...]
    modes: tuple[tuple[str, ...], ...] = ()
    stemmed: bool = True

    def df_column(self, columns: Sequence[str]) -> str | None:
        """The `<name>_df` column counting rows with a word in `columns`, if one is kept."""
        wanted = set(columns)
        if wanted == set(self.columns):
            return "df_any"
        for i, mode in enumerate(self.modes, start=1):
            if set(mode) == wanted:
                return f"df_{i}"
        return None


def analyse(index: WordIndex, text: str | None) -> list[bytes]:
    """The tokens FTS5 would index for `text` in `index`, in order, duplicates kept, each
    as the bytes FTS5 stores. A query term goes through the same analysis: more than one
    token makes it a phrase (adjacent tokens), none makes it match nothing."""
    if not text:
        return []
    if index.stemmed:
        words = index_tokens(text)
    else:
        words = unstemmed_tokens(text)
    return [_indexable(w.encode("utf-8", "surrogateescape")) for w in words]


# A GIN index entry holds at most about a third of a page, and FTS5 indexes a token of any
# length (a pasted hash or key thousands of characters long): a longer token is kept as a
# digest, under a first byte no token's UTF-8 can start with, so it matches exactly the
# same token and nothing else.
_LONGEST_KEPT = 512
_DIGEST_MARK = b"\xff"


def _indexable(token: bytes) -> bytes:
    if len(token) <= _LONGEST_KEPT:
        return token
    return _DIGEST_MARK + hashlib.sha256(token).digest()


def word_index_ddl(index: WordIndex) -> str:
    """The tables, indexes and trigger of one word index (see the module docstring). Goes
    in the owning module's `DDL`, after the owner table."""
    t = index.name
    tf_columns = ", ".join(f"tf_{c}" for c in index.columns)
    per_column = "\n".join(f"    tf_{c} int[] NOT NULL," for c in index.columns)
    sequences = "\n".join(f",\n    seq_{c} int[] NOT NULL" for c in index.columns).replace("\n,", ",")
    df_modes = "".join(f",\n    df_{i} int NOT NULL" for i in range(1, len(index.modes) + 1))
    letters = [f"u{i}" for i in range(len(index.columns))]
    unnest_new = f"unnest(NEW.lex, {', '.join(f'NEW.tf_{c}' for c in index.columns)}) AS u(lex, {', '.join(letters)})"
    unnest_old = unnest_new.replace("NEW.", "OLD.")

    def in_mode(mode: Sequence[str]) -> str:
        return "(" + " OR ".join(f"u.{letters[index.columns.index(c)]} > 0" for c in mode) + ")::int"

    mode_names = [f"df_{i}" for i in range(1, len(index.modes) + 1)]
    mode_flags = [in_mode(m) for m in index.modes]
    counted = ["df_any", *mode_names]
    added = ", ".join(["u.lex", "1", *mode_flags])
    taken = ", ".join(["u.lex", "-1", *(f"-{f}" for f in mode_flags)])
    sums = ", ".join(f"sum(x.{n})" for n in counted)
    changed = " OR ".join(f"sum(x.{n}) <> 0" for n in counted)
    add = ", ".join(f"{n} = d.{n} + excluded.{n}" for n in counted)
    return f"""
CREATE TABLE {t} (
    node  bigint PRIMARY KEY REFERENCES {index.owner} ON DELETE CASCADE,
    scope text COLLATE "C" NOT NULL,
    ntok  int NOT NULL,
    lex   bytea[] NOT NULL,
{per_column.rstrip(",")}
);
-- No pending list: every search scans it whole until a vacuum merges it (10k fresh
-- memories: search p50 14 ms with it, 5.6 ms without; a write pays the merge at once).
CREATE INDEX {t}_lex ON {t} USING gin (lex) WITH (fastupdate = off);
CREATE TABLE {t}_seq (
    node bigint PRIMARY KEY REFERENCES {t} (node) ON DELETE CASCADE{sequences}
);
CREATE TABLE {t}_df (
    lex    bytea PRIMARY KEY,
    df_any int NOT NULL{df_modes}
);
CREATE TABLE {t}_stats (
    one    boolean PRIMARY KEY DEFAULT true CHECK (one),
    n      bigint NOT NULL,
    tokens bigint NOT NULL
);
INSERT INTO {t}_stats (n, tokens) VALUES (0, 0);
-- Document frequencies and totals follow the rows ({tf_columns} say where each word is).
-- Lexemes in sorted order: writers are serialised, but sorted upserts cannot deadlock anyway.
CREATE FUNCTION {t}_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- One upsert of the differences (NEW is null on delete, OLD on insert): the words
    -- an edit leaves where they were are not written at all.
    INSERT INTO {t}_df AS d ({", ".join(["lex", *counted])})
        SELECT x.lex, {sums} FROM (
            SELECT {added} FROM {unnest_new}
            UNION ALL SELECT {taken} FROM {unnest_old}
        ) AS x (lex, {", ".join(counted)})
        GROUP BY x.lex HAVING {changed} ORDER BY x.lex
        ON CONFLICT (lex) DO UPDATE SET {add};
    UPDATE {t}_stats SET
        n = n + CASE TG_OP WHEN 'INSERT' THEN 1 WHEN 'DELETE' THEN -1 ELSE 0 END,
        tokens = tokens + coalesce(NEW.ntok, 0) - coalesce(OLD.ntok, 0);
    IF TG_OP <> 'INSERT' THEN
        DELETE FROM {t}_df WHERE lex = ANY(OLD.lex) AND df_any <= 0;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER {t}_count AFTER INSERT OR UPDATE OR DELETE ON {t}
    FOR EACH ROW EXECUTE FUNCTION {t}_count();
"""


def index_row(
    conn: psycopg.Connection[Any], index: WordIndex, pk: int, scope: str, texts: Sequence[str | None]
) -> None:
    """Make `pk`'s row hold the words of `texts` (one per column of `index`, None for no
    text), replacing what it held. `scope` is stored as given: pass it through `put`.
    A row is kept even for texts without a word, as FTS5 keeps one (it counts in N)."""
    if len(texts) != len(index.columns):
        raise ValueError(f"{index.name} indexes {len(index.columns)} columns, not {len(texts)}")
    analysed = [analyse(index, text) for text in texts]
    lex = sorted({token for tokens in analysed for token in tokens})
    place = {token: i for i, token in enumerate(lex, start=1)}
    values: list[Any] = [pk, scope, sum(len(tokens) for tokens in analysed), lex]
    sequences: list[Any] = [pk]
    for tokens in analysed:
        counts = [0] * len(lex)
        for token in tokens:
            counts[place[token] - 1] += 1
        values.append(counts)
        sequences.append([place[token] for token in tokens])
    names = ["node", "scope", "ntok", "lex", *(f"tf_{c}" for c in index.columns)]
    casts = ["%s", "%s", "%s", "%s::bytea[]", *("%s::int[]" for _ in index.columns)]
    seq_names = ["node", *(f"seq_{c}" for c in index.columns)]
    # One statement for both rows; the side table's key check runs at its end, when the
    # word row is there.
    conn.execute(
        f"WITH w AS (INSERT INTO {index.name} ({', '.join(names)}) VALUES ({', '.join(casts)}) "
        f"ON CONFLICT (node) DO UPDATE SET {', '.join(f'{n} = excluded.{n}' for n in names[1:])} RETURNING node) "
        f"INSERT INTO {index.name}_seq ({', '.join(seq_names)}) "
        f"SELECT w.node, {', '.join('%s::int[]' for _ in index.columns)} FROM w "
        f"ON CONFLICT (node) DO UPDATE SET {', '.join(f'{n} = excluded.{n}' for n in seq_names[1:])}",
        [*values, *sequences[1:]],
    )


def forget_row(conn: psycopg.Connection[Any], index: WordIndex, pk: int) -> None:
    """Remove `pk`'s row (its owner's deletion does the same by cascade)."""
    conn.execute(f"DELETE FROM {index.name} WHERE node = %s", [pk])


def clear(conn: psycopg.Connection[Any], index: WordIndex) -> None:
    """Remove every row (the counters follow, row by row)."""
    conn.execute(f"DELETE FROM {index.name}")


def _phrase_hits(word: str, seq: str, column: str, phrase: str) -> str:
    """SQL: how many times the phrase (an SQL `bytea[]` of adjacent tokens) starts in a
    column: places p where the column's p-th, (p+1)-th ... tokens (`seq`'s row of the
    side table) are the phrase's first, second ... token (places in `word`'s `lex`)."""
    return (
        f"(SELECT count(*) FROM generate_subscripts({seq}.seq_{column}, 1) AS p(p) "
        f"WHERE NOT EXISTS (SELECT 1 FROM unnest({phrase}) WITH ORDINALITY AS t(tok, j) "
        f"WHERE {seq}.seq_{column}[p.p + t.j - 1] IS DISTINCT FROM array_position({word}.lex, t.tok)))::int"
    )


# FTS5's constants, as float8 (a numeric constant would make the arithmetic numeric).
_K1 = "1.2::float8"
_B = "0.75::float8"


def ranked(
    conn: psycopg.Connection[Any],
    index: WordIndex,
    terms: Sequence[str],
    *,
    limit: int,
    columns: Sequence[str] | None = None,
    weights: Sequence[float] | None = None,
    join: str = "",
    condition: str = "TRUE",
    params: Sequence[Any] = (),
    extra: str = "",
    extra_join: str = "",
) -> list[tuple[Any, ...]]:
    """Rows of `index` matching any of `terms`, best first (ties by ascending pk), at
    most `limit`: `(pk, score, *extra)` tuples, score = FTS5's bm25 negated, as FTS5
    computes it for the query `"term1" OR "term2" ...` with a filter on `columns`.

    Each term is analysed as the index analyses text (`analyse`); a term of several
    tokens is a phrase (its tokens adjacent in one column), a term of none matches
    nothing. `columns` (default: all) are the columns a term must be found in;
    `weights`, aligned with `columns` (default 1.0 each), are bm25's column weights.

    The candidates are the index rows `w` holding a query word, joined with `join` (SQL
    after `FROM <index> w`, e.g. `JOIN entity e ON e.node = w.node`) and kept when
    `condition` (SQL over `w` and the joined tables, e.g. `w.scope = ANY(%s)`) holds;
    `params` fill the `%s` of `join` then `condition`, in that order. `extra` (SQL
    select-list items, without a leading comma) is read for the returned rows only, from
    `r` (the ranked rows: `r.node`, `r.score`) joined with `extra_join` (e.g. `JOIN node n
    ON n.pk = r.node`); neither takes parameters. One statement, one round trip."""
    if limit <= 0:
        return []
    searched = tuple(index.columns if columns is None else columns)
    unknown = [c for c in searched if c not in index.columns]
    if unknown or not searched:
        raise ValueError(f"not columns of {index.name}: {unknown or 'none'}")
    weight = [1.0] * len(searched) if weights is None else [float(w) for w in weights]
    if len(weight) != len(searched):
        raise ValueError("one weight per searched column")
    phrases = [(i, analyse(index, term)) for i, term in enumerate(terms, start=1)]
    phrases = [(i, tokens) for i, tokens in phrases if tokens]
    if not phrases:
        return []
    df = index.df_column(searched)
    # Single words of a column set with kept frequencies take the quick way (frequencies
    # from the df table, counts from the tf arrays); phrases, and words of other sets,
    # count their rows and occurrences from the token sequences.
    quick = [(i, tokens[0]) for i, tokens in phrases if len(tokens) == 1 and df is not None]
    slow = [(i, tokens) for i, tokens in phrases if len(tokens) > 1 or df is None]

    t = index.name
    sql: list[str] = []
    args: list[Any] = []
    # Every CTE is MATERIALIZED: inlined, the planner may evaluate the frequencies once
    # per candidate row, and a plan that depends on statistics is not one to count on.
    sql.append(
        "WITH st AS MATERIALIZED (SELECT n::float8 AS n, "
        f"CASE WHEN n > 0 THEN tokens::float8 / n::float8 ELSE 1::float8 END AS avgdl FROM {t}_stats)"
    )

    def idf(nhit: str) -> str:
        raw = f"ln((st.n - {nhit} + 0.5::float8) / ({nhit} + 0.5::float8))"
        return f"CASE WHEN {raw} > 0 THEN {raw} ELSE 1e-6::float8 END"

    def tf(counts: Sequence[str]) -> str:
        # Weights written as literals (repr is exact), so that the caller's parameters
        # are the only ones between the word table and the words.
        return " + ".join(f"'{w!r}'::float8 * {n}" for w, n in zip(weight, counts, strict=True))

    parts: list[str] = []
    if quick:
        sql.append(
            ", q1 AS MATERIALIZED (SELECT u.i, u.tok, "
            f"{idf(f'coalesce(d.{df}, 0)::float8')} AS idf "
            f"FROM unnest(%s::int[], %s::bytea[]) AS u(i, tok) CROSS JOIN st LEFT JOIN {t}_df d ON d.lex = u.tok)"
        )
        args += [[i for i, _ in quick], [tok for _, tok in quick]]
        # Straight from the word table (one GIN lookup for every word), each word's place
        # in a row's `lex` found once (OFFSET 0 keeps the lateral query from being
        # flattened into one call per use); no wide intermediate rows.
        counts = [f"w.tf_{col}[z.k]" for col in searched]
        sql.append(
            f", p1 AS MATERIALIZED (SELECT w.node, w.ntok, q1.i, q1.idf, h.f FROM {t} w {join} CROSS JOIN q1 "
            "CROSS JOIN LATERAL (SELECT array_position(w.lex, q1.tok) AS k OFFSET 0) z "
            f"CROSS JOIN LATERAL (SELECT {tf(counts)} AS f, {' + '.join(counts)} AS hits) h "
            f"WHERE ({condition}) AND w.lex && %s::bytea[] AND z.k IS NOT NULL AND h.hits > 0)"
        )
        args += [*params, sorted({tok for _, tok in quick})]
        parts.append("SELECT node, ntok, i, idf, f FROM p1")
    if slow:
        # Phrases (and words of column sets without kept frequencies) read the candidates'
        # token sequences.
        sql.append(
            f", c AS MATERIALIZED (SELECT w.node, w.ntok, w.lex{''.join(f', x.seq_{c}' for c in searched)} "
            f"FROM {t} w {join} JOIN {t}_seq x ON x.node = w.node WHERE ({condition}) AND w.lex && %s::bytea[])"
        )
        args += [*params, sorted({tok for _, tokens in slow for tok in tokens})]
        rows = ", ".join("(%s::int, %s::bytea[])" for _ in slow)
        in_w2 = " + ".join(_phrase_hits("w2", "x2", col, "v.toks") for col in searched)
        sql.append(
            f", q2 AS MATERIALIZED (SELECT v.i, v.toks, {idf('y.nhit::float8')} AS idf "
            f"FROM (VALUES {rows}) AS v(i, toks) CROSS JOIN st CROSS JOIN LATERAL "
            f"(SELECT count(*) AS nhit FROM {t} w2 JOIN {t}_seq x2 ON x2.node = w2.node "
            f"WHERE w2.lex @> v.toks AND {in_w2} > 0) y)"
        )
        args += [value for i, tokens in slow for value in (i, tokens)]
        counts = [f"h0.h_{col}" for col in searched]
        per_column = ", ".join(f"{_phrase_hits('c', 'c', col, 'q2.toks')} AS h_{col}" for col in searched)
        sql.append(
            ", p2 AS MATERIALIZED (SELECT c.node, c.ntok, q2.i, q2.idf, h.f FROM c CROSS JOIN q2 "
            f"CROSS JOIN LATERAL (SELECT {per_column}) h0 "
            f"CROSS JOIN LATERAL (SELECT {tf(counts)} AS f, {' + '.join(counts)} AS hits) h "
            "WHERE c.lex @> q2.toks AND h.hits > 0)"
        )
        parts.append("SELECT node, ntok, i, idf, f FROM p2")
    # FTS5's arithmetic, in its order: the phrases' terms are added up in query order.
    term = (
        f"p.idf * ((p.f * ({_K1} + 1.0::float8)) / "
        f"(p.f + {_K1} * (1::float8 - {_B} + {_B} * p.ntok::float8 / st.avgdl)))"
    )
    sql.append(
        f", s AS MATERIALIZED (SELECT p.node, sum({term} ORDER BY p.i) AS score "
        f"FROM ({' UNION ALL '.join(parts)}) p CROSS JOIN st GROUP BY p.node)"
    )
    sql.append(", r AS MATERIALIZED (SELECT node, score FROM s ORDER BY score DESC, node LIMIT %s)")
    args.append(limit)
    sql.append(
        f" SELECT r.node, r.score{', ' + extra if extra else ''} FROM r {extra_join} ORDER BY r.score DESC, r.node"
    )
    return [tuple(row) for row in conn.execute("".join(sql), args).fetchall()]
