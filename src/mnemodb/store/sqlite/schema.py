"""The SQLite schema, as an ordered list of migrations.

`PRAGMA user_version` holds the number of migrations applied. A migration is never
edited once released: a change to the schema is a new migration at the end.
Table names are singular on purpose: they never collide with the plural tables of a
memdb database, which lets a memdb file be migrated in place (see `legacy.py`).
"""

from __future__ import annotations

APPLICATION_ID = 0x4D4E454D  # "MNEM": marks a file as a mnemodb database

# The analyzer for memory and observation text. Porter stemming over unicode61 gave the
# best BM25 recall on the conversational-memory development split (see docs/design.md).
TEXT_TOKENIZER = "porter unicode61 remove_diacritics 2"

MIGRATIONS: tuple[str, ...] = (
    # 1: nodes, memories, tags, edges, the change log.
    f"""
    CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    ) WITHOUT ROWID;

    CREATE TABLE node (
        pk         INTEGER PRIMARY KEY AUTOINCREMENT,
        id         TEXT NOT NULL UNIQUE,
        scope      TEXT NOT NULL,
        label      TEXT NOT NULL,
        props      TEXT NOT NULL DEFAULT '{{}}',
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
    );
    CREATE INDEX node_label_scope ON node (label, scope, created_at);

    CREATE TABLE memory (
        node        INTEGER PRIMARY KEY REFERENCES node (pk) ON DELETE CASCADE,
        scope       TEXT NOT NULL,
        hash        TEXT NOT NULL,
        content     TEXT NOT NULL,
        summary     TEXT,
        importance  INTEGER NOT NULL DEFAULT 0 CHECK (importance BETWEEN 0 AND 10),
        memory_type TEXT NOT NULL DEFAULT 'general'
    );
    CREATE UNIQUE INDEX memory_scope_hash ON memory (scope, hash);

    CREATE TABLE memory_tag (
        node INTEGER NOT NULL REFERENCES memory (node) ON DELETE CASCADE,
        tag  TEXT NOT NULL,
        PRIMARY KEY (node, tag)
    ) WITHOUT ROWID;
    CREATE INDEX memory_tag_tag ON memory_tag (tag, node);

    CREATE VIRTUAL TABLE memory_fts USING fts5 (
        content, summary,
        content = 'memory', content_rowid = 'node',
        tokenize = '{TEXT_TOKENIZER}'
    );
    CREATE TRIGGER memory_fts_insert AFTER INSERT ON memory BEGIN
        INSERT INTO memory_fts (rowid, content, summary) VALUES (new.node, new.content, new.summary);
    END;
    CREATE TRIGGER memory_fts_delete AFTER DELETE ON memory BEGIN
        INSERT INTO memory_fts (memory_fts, rowid, content, summary)
        VALUES ('delete', old.node, old.content, old.summary);
    END;
    CREATE TRIGGER memory_fts_update AFTER UPDATE OF content, summary ON memory BEGIN
        INSERT INTO memory_fts (memory_fts, rowid, content, summary)
        VALUES ('delete', old.node, old.content, old.summary);
        INSERT INTO memory_fts (rowid, content, summary) VALUES (new.node, new.content, new.summary);
    END;

    CREATE TABLE edge (
        pk         INTEGER PRIMARY KEY AUTOINCREMENT,
        id         TEXT NOT NULL UNIQUE,
        src        INTEGER NOT NULL REFERENCES node (pk) ON DELETE CASCADE,
        dst        INTEGER NOT NULL REFERENCES node (pk) ON DELETE CASCADE,
        type       TEXT NOT NULL,
        scope      TEXT NOT NULL,
        props      TEXT NOT NULL DEFAULT '{{}}',
        valid_from INTEGER NOT NULL,
        valid_to   INTEGER,
        created_at INTEGER NOT NULL
    );
    CREATE INDEX edge_src ON edge (src, type);
    CREATE INDEX edge_dst ON edge (dst, type);

    CREATE TABLE change_log (
        seq    INTEGER PRIMARY KEY,
        at     INTEGER NOT NULL,
        scope  TEXT,
        op     TEXT NOT NULL,
        target TEXT,
        data   TEXT NOT NULL
    );
    """,
    # 2: entities with ordered observations, embeddings, access statistics.
    """
    CREATE TABLE entity (
        node        INTEGER PRIMARY KEY REFERENCES node (pk) ON DELETE CASCADE,
        scope       TEXT NOT NULL,
        name        TEXT NOT NULL,
        entity_type TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX entity_scope_name ON entity (scope, name);
    CREATE INDEX entity_type ON entity (entity_type);

    CREATE TABLE observation (
        pk         INTEGER PRIMARY KEY,
        entity     INTEGER NOT NULL REFERENCES entity (node) ON DELETE CASCADE,
        position   INTEGER NOT NULL,
        content    TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        UNIQUE (entity, content)
    );
    CREATE INDEX observation_order ON observation (entity, position);

    CREATE TABLE embedding (
        node       INTEGER NOT NULL REFERENCES node (pk) ON DELETE CASCADE,
        model      TEXT NOT NULL,
        dim        INTEGER NOT NULL,
        vector     BLOB NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (node, model)
    ) WITHOUT ROWID;
    CREATE INDEX embedding_model ON embedding (model, node);

    -- Written in batches off the read path; never in the change log.
    CREATE TABLE node_access (
        node    INTEGER PRIMARY KEY REFERENCES node (pk) ON DELETE CASCADE,
        count   INTEGER NOT NULL,
        last_at INTEGER NOT NULL
    );
    """,
    # 3: counters kept by triggers, so statistics cost the same at any size.
    """
    ALTER TABLE memory_tag ADD COLUMN scope TEXT NOT NULL DEFAULT '';
    UPDATE memory_tag SET scope = (SELECT m.scope FROM memory m WHERE m.node = memory_tag.node);
    DROP INDEX memory_tag_tag;
    CREATE INDEX memory_tag_tag ON memory_tag (tag, scope);

    CREATE TABLE tag_count (
        scope TEXT NOT NULL,
        tag   TEXT NOT NULL,
        n     INTEGER NOT NULL,
        PRIMARY KEY (scope, tag)
    ) WITHOUT ROWID;
    INSERT INTO tag_count (scope, tag, n) SELECT scope, tag, COUNT(*) FROM memory_tag GROUP BY scope, tag;
    CREATE TRIGGER tag_count_insert AFTER INSERT ON memory_tag BEGIN
        INSERT INTO tag_count (scope, tag, n) VALUES (new.scope, new.tag, 1)
        ON CONFLICT (scope, tag) DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER tag_count_delete AFTER DELETE ON memory_tag BEGIN
        UPDATE tag_count SET n = n - 1 WHERE scope = old.scope AND tag = old.tag;
        DELETE FROM tag_count WHERE scope = old.scope AND tag = old.tag AND n <= 0;
    END;

    CREATE TABLE scope_count (
        scope TEXT NOT NULL,
        kind  TEXT NOT NULL,
        n     INTEGER NOT NULL,
        PRIMARY KEY (scope, kind)
    ) WITHOUT ROWID;
    INSERT INTO scope_count (scope, kind, n) SELECT scope, 'memory', COUNT(*) FROM memory GROUP BY scope;
    CREATE TRIGGER memory_count_insert AFTER INSERT ON memory BEGIN
        INSERT INTO scope_count (scope, kind, n) VALUES (new.scope, 'memory', 1)
        ON CONFLICT (scope, kind) DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER memory_count_delete AFTER DELETE ON memory BEGIN
        UPDATE scope_count SET n = n - 1 WHERE scope = old.scope AND kind = 'memory';
    END;
    """,
    # 4: the knowledge-graph face: substring search over entities, case-insensitive type
    # filters, and the fields of upstream files mnemodb has no column for.
    """
    ALTER TABLE entity ADD COLUMN extra TEXT;
    ALTER TABLE edge ADD COLUMN extra TEXT;
    CREATE INDEX entity_type_nocase ON entity (entity_type COLLATE NOCASE, scope);
    CREATE INDEX edge_type_nocase ON edge (type COLLATE NOCASE);

    -- One row per entity (rowid = node pk): name, type and observations joined by spaces
    -- (what queries match), and the observations as a JSON array, unindexed (what scores
    -- read, without a second query). Trigrams find any substring of three characters or more.
    CREATE VIRTUAL TABLE entity_text USING fts5 (name, type, obs, items UNINDEXED, tokenize = 'trigram');
    INSERT INTO entity_text (rowid, name, type, obs, items)
        SELECT e.node, e.name, e.entity_type,
               COALESCE((SELECT group_concat(content, ' ') FROM
                   (SELECT content FROM observation o WHERE o.entity = e.node ORDER BY position)), ''),
               COALESCE((SELECT json_group_array(content) FROM
                   (SELECT content FROM observation o WHERE o.entity = e.node ORDER BY position)), '[]')
        FROM entity e;
    CREATE TRIGGER entity_text_delete AFTER DELETE ON entity BEGIN
        DELETE FROM entity_text WHERE rowid = old.node;
    END;
    """,
    # 5: the property-graph face: text of the properties an index spec declares, and
    # change-log lookups by target (the past of one node) and by operation.
    """
    CREATE VIRTUAL TABLE node_text USING fts5 (text, tokenize = 'unicode61 remove_diacritics 2');
    CREATE TRIGGER node_text_delete AFTER DELETE ON node BEGIN
        DELETE FROM node_text WHERE rowid = old.pk;
    END;
    CREATE INDEX change_log_target ON change_log (target, seq);
    CREATE INDEX change_log_op ON change_log (op, seq);
    """,
    # 6: embeddings in a rowid table. A vector of 384 float32 is larger than a WITHOUT ROWID
    # row may keep in its page, so each one spilled to an overflow page of its own: 4.4 KiB
    # on disk for 1.5 KiB of vector.
    """
    CREATE TABLE embedding_rows (
        node       INTEGER NOT NULL REFERENCES node (pk) ON DELETE CASCADE,
        model      TEXT NOT NULL,
        dim        INTEGER NOT NULL,
        vector     BLOB NOT NULL,
        updated_at INTEGER NOT NULL,
        UNIQUE (node, model)
    );
    INSERT INTO embedding_rows (node, model, dim, vector, updated_at)
        SELECT node, model, dim, vector, updated_at FROM embedding;
    DROP TABLE embedding;
    ALTER TABLE embedding_rows RENAME TO embedding;
    CREATE INDEX embedding_model ON embedding (model, node);
    """,
    # 7: a memory's context, for memories stored as turns of a conversation: the two turns
    # before it in its scope (`context_from` is the one just before, when it was stored
    # within 30 minutes, `model.rules.TURN_CONTEXT_WINDOW_MS`; its own `context_from` is the one before that). An answer
    # often names little of what it answers; the turns before it name the rest. The
    # context is a third column of memory_fts: the native search matches it at reduced
    # weight, the other faces search content and summary only (a column filter). Indexed
    # in the same row as the memory's words, not in a table of its own: on the LoCoMo
    # development split that is worth R@10 70 against 64 (one turn back; two: 73).
    f"""
    ALTER TABLE memory ADD COLUMN context TEXT;
    ALTER TABLE memory ADD COLUMN context_from INTEGER;
    CREATE INDEX memory_context_from ON memory (context_from) WHERE context_from IS NOT NULL;
    -- The context follows the turns it was taken from: edited with them, gone with them
    -- (a forgotten memory's words must not live on in its neighbours' index entries).
    CREATE TRIGGER memory_context_follows AFTER UPDATE OF content ON memory BEGIN
        UPDATE memory SET context = (
            SELECT trim(coalesce(pp.content, '') || ' ' || p.content)
            FROM memory p LEFT JOIN memory pp ON pp.node = p.context_from WHERE p.node = memory.context_from
        ) WHERE context_from = new.node
             OR context_from IN (SELECT node FROM memory WHERE context_from = new.node);
    END;
    CREATE TRIGGER memory_context_forgets AFTER DELETE ON memory BEGIN
        UPDATE memory SET context = (SELECT p.content FROM memory p WHERE p.node = memory.context_from)
            WHERE context_from IN (SELECT node FROM memory WHERE context_from = old.node);
        UPDATE memory SET context = NULL, context_from = NULL WHERE context_from = old.node;
    END;
    DROP TRIGGER memory_fts_insert;
    DROP TRIGGER memory_fts_delete;
    DROP TRIGGER memory_fts_update;
    DROP TABLE memory_fts;
    CREATE VIRTUAL TABLE memory_fts USING fts5 (
        content, summary, context,
        content = 'memory', content_rowid = 'node',
        tokenize = '{TEXT_TOKENIZER}'
    );
    INSERT INTO memory_fts (memory_fts) VALUES ('rebuild');
    CREATE TRIGGER memory_fts_insert AFTER INSERT ON memory BEGIN
        INSERT INTO memory_fts (rowid, content, summary, context)
        VALUES (new.node, new.content, new.summary, new.context);
    END;
    CREATE TRIGGER memory_fts_delete AFTER DELETE ON memory BEGIN
        INSERT INTO memory_fts (memory_fts, rowid, content, summary, context)
        VALUES ('delete', old.node, old.content, old.summary, old.context);
    END;
    CREATE TRIGGER memory_fts_update AFTER UPDATE OF content, summary, context ON memory BEGIN
        INSERT INTO memory_fts (memory_fts, rowid, content, summary, context)
        VALUES ('delete', old.node, old.content, old.summary, old.context);
        INSERT INTO memory_fts (rowid, content, summary, context)
        VALUES (new.node, new.content, new.summary, new.context);
    END;
    """,
    # 8: a generation number per embedding model, raised by every change to its vectors
    # (deletes by cascade included). A search keeps a model's matrix in memory and reads it
    # again only when the number moved: vectors written by the background embedder do not
    # enter the change log (they are derived from text that does), so the log cannot say.
    """
    CREATE TABLE embedding_generation (
        model      TEXT PRIMARY KEY,
        generation INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TRIGGER embedding_generation_insert AFTER INSERT ON embedding BEGIN
        INSERT INTO embedding_generation (model, generation) VALUES (new.model, 1)
            ON CONFLICT (model) DO UPDATE SET generation = generation + 1;
    END;
    CREATE TRIGGER embedding_generation_update AFTER UPDATE ON embedding BEGIN
        INSERT INTO embedding_generation (model, generation) VALUES (new.model, 1)
            ON CONFLICT (model) DO UPDATE SET generation = generation + 1;
    END;
    CREATE TRIGGER embedding_generation_delete AFTER DELETE ON embedding BEGIN
        INSERT INTO embedding_generation (model, generation) VALUES (old.model, 1)
            ON CONFLICT (model) DO UPDATE SET generation = generation + 1;
    END;
    INSERT INTO embedding_generation (model, generation) SELECT DISTINCT model, 1 FROM embedding;
    """,
    # 9: each vector remembers the generation that wrote it, and each model counts its
    # removals, so a search brings its matrix up to date by reading only the vectors written
    # since (and, after removals, the list of nodes that still have one) instead of all of
    # them: 0.55 s at 100k vectors after every write otherwise.
    # And each node counts its changes (`version`), each vector the count it was made at
    # (`node_version`): a vector is stale when they differ. Times cannot tell, as an edit in
    # the millisecond the vector's text was read has the same time.
    """
    ALTER TABLE node ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
    CREATE TRIGGER node_version AFTER UPDATE OF props, updated_at ON node BEGIN
        UPDATE node SET version = version + 1 WHERE pk = new.pk;
    END;
    ALTER TABLE embedding ADD COLUMN node_version INTEGER NOT NULL DEFAULT 0;
    UPDATE embedding SET node_version = -1
        WHERE updated_at < (SELECT n.updated_at FROM node n WHERE n.pk = embedding.node);
    ALTER TABLE embedding ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE embedding_generation ADD COLUMN removals INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX embedding_model_generation ON embedding (model, generation);
    DROP TRIGGER embedding_generation_insert;
    DROP TRIGGER embedding_generation_update;
    DROP TRIGGER embedding_generation_delete;
    CREATE TRIGGER embedding_generation_insert AFTER INSERT ON embedding BEGIN
        INSERT INTO embedding_generation (model, generation) VALUES (new.model, 1)
            ON CONFLICT (model) DO UPDATE SET generation = generation + 1;
        UPDATE embedding SET generation = (SELECT generation FROM embedding_generation WHERE model = new.model)
            WHERE rowid = new.rowid;
    END;
    -- Not fired by its own update of `generation`, which is not among the columns watched.
    CREATE TRIGGER embedding_generation_update AFTER UPDATE OF node, model, dim, vector, node_version ON embedding
    BEGIN
        INSERT INTO embedding_generation (model, generation) VALUES (new.model, 1)
            ON CONFLICT (model) DO UPDATE SET generation = generation + 1;
        UPDATE embedding SET generation = (SELECT generation FROM embedding_generation WHERE model = new.model)
            WHERE rowid = new.rowid;
    END;
    CREATE TRIGGER embedding_generation_delete AFTER DELETE ON embedding BEGIN
        INSERT INTO embedding_generation (model, generation, removals) VALUES (old.model, 1, 1)
            ON CONFLICT (model) DO UPDATE SET generation = generation + 1, removals = removals + 1;
    END;
    """,
    # 10: access tokens for the HTTP server. Only a hash of each token is kept; the token
    # itself is shown once, when it is made. A revoked token stays listed, marked.
    """
    CREATE TABLE access_token (
        id          TEXT PRIMARY KEY,
        name        TEXT NOT NULL,
        hash        TEXT NOT NULL UNIQUE,
        read_scopes TEXT NOT NULL,
        write_scope TEXT NOT NULL,
        read_only   INTEGER NOT NULL,
        created_at  INTEGER NOT NULL,
        revoked_at  INTEGER
    );
    CREATE UNIQUE INDEX access_token_live_name ON access_token (name) WHERE revoked_at IS NULL;
    """,
    # 11: a token's write scopes, apart from the scopes it reads (a JSON list; empty for a
    # read-only token). Tokens of schema 10 wrote only their default write scope. And a
    # database that has ever had a token keeps the HTTP server closed to requests without
    # one after the last is revoked, until an operator reopens it.
    """
    ALTER TABLE access_token ADD COLUMN write_scopes TEXT NOT NULL DEFAULT '[]';
    UPDATE access_token SET write_scopes = json_array(write_scope) WHERE NOT read_only;
    INSERT OR REPLACE INTO meta (key, value) SELECT 'http_access', 'tokens' WHERE EXISTS (SELECT 1 FROM access_token);
    """,
    # 12: entities by words, as memories are found: the text of the substring index
    # (its content table), stemmed, for ranked word search. Trigrams alone let a question's
    # "I" or "tom" match every name holding an "i" or "customer". Kept by the store where it
    # keeps `entity_text` (an external-content index needs the old text to forget a row,
    # so it goes before `entity_text` forgets it). FTS5's 'rebuild' cannot read another
    # FTS5 table ("SQL logic error"): the rows are copied in instead.
    f"""
    CREATE VIRTUAL TABLE entity_words USING fts5 (
        name, type, obs, content = 'entity_text', tokenize = '{TEXT_TOKENIZER}'
    );
    INSERT INTO entity_words (rowid, name, type, obs) SELECT rowid, name, type, obs FROM entity_text;
    DROP TRIGGER entity_text_delete;
    CREATE TRIGGER entity_text_delete AFTER DELETE ON entity BEGIN
        INSERT INTO entity_words (entity_words, rowid, name, type, obs)
            SELECT 'delete', rowid, name, type, obs FROM entity_text WHERE rowid = old.node;
        DELETE FROM entity_text WHERE rowid = old.node;
    END;
    """,
    # 13: names people give scopes, so that nobody has to make up a ULID: `team-a` stands
    # for its scope wherever a scope is named. One name per scope, unique ignoring case.
    """
    CREATE TABLE scope_name (
        name       TEXT NOT NULL PRIMARY KEY COLLATE NOCASE,
        scope      TEXT NOT NULL UNIQUE,
        created_at INTEGER NOT NULL
    ) WITHOUT ROWID;
    """,
    # 14: who made each change, and archived memories.
    # Every entry records the name of the grant it was made under (`actor`; NULL without
    # one). The log is read a page at a time, newest first, filtered by scope, op, actor
    # and time: each index leads one kind of filter in time order (the rowid, seq, breaks
    # ties), so a page reads about as many rows as it returns, however long the log.
    # A memory may be archived (`archived_at`): kept, but left out of searches and
    # listings unless asked. The archived memories per scope are counted (kind
    # 'archived'), so a search knows without a scan when none is there to leave out.
    """
    ALTER TABLE change_log ADD COLUMN actor TEXT;
    CREATE INDEX change_log_at ON change_log (at);
    CREATE INDEX change_log_scope_at ON change_log (scope, at);
    CREATE INDEX change_log_scope_op_at ON change_log (scope, op, at);
    CREATE INDEX change_log_scope_actor_at ON change_log (scope, actor, at);
    CREATE INDEX change_log_op_at ON change_log (op, at);
    CREATE INDEX change_log_actor_at ON change_log (actor, at);

    ALTER TABLE memory ADD COLUMN archived_at INTEGER;
    CREATE TRIGGER memory_archived_insert AFTER INSERT ON memory WHEN new.archived_at IS NOT NULL BEGIN
        INSERT INTO scope_count (scope, kind, n) VALUES (new.scope, 'archived', 1)
        ON CONFLICT (scope, kind) DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER memory_archived_update AFTER UPDATE OF archived_at ON memory
    WHEN (old.archived_at IS NULL) != (new.archived_at IS NULL) BEGIN
        INSERT INTO scope_count (scope, kind, n)
        VALUES (new.scope, 'archived', CASE WHEN new.archived_at IS NULL THEN -1 ELSE 1 END)
        ON CONFLICT (scope, kind) DO UPDATE SET n = n + excluded.n;
    END;
    CREATE TRIGGER memory_archived_delete AFTER DELETE ON memory WHEN old.archived_at IS NOT NULL BEGIN
        UPDATE scope_count SET n = n - 1 WHERE scope = old.scope AND kind = 'archived';
    END;
    """,
    # 15: entity names looked up ignoring case (an `about` name, "ada" for Ada) by index: a
    # NOCASE comparison cannot use `entity_scope_name`, whose names compare as bytes, and
    # scanned every entity of the scope (7 ms of CPU a new name at 100,000 entities).
    """
    CREATE INDEX entity_scope_name_nocase ON entity (scope, name COLLATE NOCASE);
    """,
    # 16: the change log packed (`model.packed_changes`): an entry's data keeps what its row
    # does not already say, in an array by shape, not an object with every key written out.
    # At 100,000 memories the log was 35 % of the file, each entry repeating the memory's
    # id, scope and hash; a new edge's entry was 180 bytes, 70 packed. `packed_change` is
    # the store's (`changes.define_log_functions`); it leaves packed data as it is. And
    # `change_log_op` goes: a page filtered by op walks `change_log_op_at` or
    # `change_log_scope_op_at`, and nothing reads ops in seq order.
    """
    UPDATE change_log SET data = packed_change(at, scope, target, data) WHERE data LIKE '{%';
    DROP INDEX change_log_op;
    """,
    # 17: the actor indexes hold only entries made under a grant. Without tokens no entry
    # has an actor, yet every entry was written to both (2 of the log's 7 indexes: 0.002 ms
    # of the 0.025 ms SQLite spends on a new relation, and their pages). A page filtered by
    # a grant's name walks them as before (`actor = ?` implies NOT NULL); one asking for
    # the entries made without a grant walks `change_log_scope_at` or `change_log_at`.
    """
    DROP INDEX change_log_scope_actor_at;
    DROP INDEX change_log_actor_at;
    CREATE INDEX change_log_scope_actor_at ON change_log (scope, actor, at) WHERE actor IS NOT NULL;
    CREATE INDEX change_log_actor_at ON change_log (actor, at) WHERE actor IS NOT NULL;
    """,
    # 18: entity names alone under trigrams, for substring lookups on names (a `name:`
    # field, and a native search's names written as one word). A column filter on
    # `entity_text` still reads the trigram lists of types and observations: at 10,000
    # entities of one observation each, 0.33 ms a three-word lookup there, 0.15 ms here.
    # Kept by triggers from `entity` itself (an external-content index needs the old name
    # to forget a row). Its rows are small, so each write leaves the index little merge
    # work: merging two segments of a level, not four, keeps it as few segments as
    # `entity_text` (a lookup reads every segment). Built in one segment ('optimize').
    """
    CREATE VIRTUAL TABLE entity_name_text USING fts5 (
        name, content = 'entity', content_rowid = 'node', tokenize = 'trigram'
    );
    INSERT INTO entity_name_text (entity_name_text, rank) VALUES ('automerge', 2);
    INSERT INTO entity_name_text (entity_name_text) VALUES ('rebuild');
    INSERT INTO entity_name_text (entity_name_text) VALUES ('optimize');
    CREATE TRIGGER entity_name_text_insert AFTER INSERT ON entity BEGIN
        INSERT INTO entity_name_text (rowid, name) VALUES (new.node, new.name);
    END;
    CREATE TRIGGER entity_name_text_delete AFTER DELETE ON entity BEGIN
        INSERT INTO entity_name_text (entity_name_text, rowid, name) VALUES ('delete', old.node, old.name);
    END;
    CREATE TRIGGER entity_name_text_update AFTER UPDATE OF name ON entity BEGIN
        INSERT INTO entity_name_text (entity_name_text, rowid, name) VALUES ('delete', old.node, old.name);
        INSERT INTO entity_name_text (rowid, name) VALUES (new.node, new.name);
    END;
    """,
    # 19: the highest importance of a scope's memories that are not archived, by index
    # (`most_important`): it bounds what a memory a search has not yet scored can score,
    # so a search that needs only its first places stops widening its pool sooner. At
    # 100,000 memories the native search widened 121 of 200 word queries to its whole pool.
    """
    CREATE INDEX memory_scope_importance ON memory (scope, importance) WHERE archived_at IS NULL;
    """,
    # 20: the full-text indexes merged by the store's own steps (`segments.merge`) as soon
    # as one level holds two segments, not four: a search reads every segment for each
    # term. Only 'merge' commands read this setting; the writes' own merging is unchanged.
    """
    INSERT INTO memory_fts (memory_fts, rank) VALUES ('usermerge', 2);
    INSERT INTO entity_text (entity_text, rank) VALUES ('usermerge', 2);
    INSERT INTO entity_words (entity_words, rank) VALUES ('usermerge', 2);
    INSERT INTO entity_name_text (entity_name_text, rank) VALUES ('usermerge', 2);
    INSERT INTO node_text (node_text, rank) VALUES ('usermerge', 2);
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)
