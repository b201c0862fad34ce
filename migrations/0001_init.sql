-- cpersona-rs schema step 1: the tables of the store. Never edit this file once landed;
-- add a new numbered file instead (the engine pins its sha256).
--
-- Timestamps are integer UTC milliseconds (`*_ms`). The caller's original timestamp text is
-- kept verbatim beside its normalised instant where CPersona returns it.
-- Isolation columns follow CPersona: agent_id (hard boundary), project_id ('' = global pool),
-- channel ('' = channel-less).

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE memories (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id           TEXT    NOT NULL,
    project_id         TEXT    NOT NULL DEFAULT '',
    channel            TEXT    NOT NULL DEFAULT '',
    msg_id             TEXT    NOT NULL DEFAULT '',
    content            TEXT    NOT NULL,
    source             TEXT    NOT NULL DEFAULT '{}',
    metadata           TEXT    NOT NULL DEFAULT '{}',
    timestamp          TEXT    NOT NULL,
    timestamp_ms       INTEGER NOT NULL,
    created_at_ms      INTEGER NOT NULL,
    locked             INTEGER NOT NULL DEFAULT 0 CHECK (locked IN (0, 1)),
    recall_count       INTEGER NOT NULL DEFAULT 0,
    last_recalled_at_ms INTEGER,
    embedding          BLOB,
    embedding_model    TEXT    NOT NULL DEFAULT '',
    embedding_dim      INTEGER NOT NULL DEFAULT 0,
    embedding_format   TEXT    NOT NULL DEFAULT '' CHECK (embedding_format IN ('', 'f32', 'f16'))
);
CREATE INDEX idx_memories_agent ON memories(agent_id, created_at_ms DESC);
CREATE INDEX idx_memories_isolation ON memories(agent_id, project_id, created_at_ms DESC);
CREATE INDEX idx_memories_agent_channel ON memories(agent_id, channel, created_at_ms DESC);
CREATE INDEX idx_memories_span ON memories(agent_id, timestamp_ms, project_id, channel);
CREATE INDEX idx_memories_lost_embedding ON memories(id) WHERE embedding IS NULL;
CREATE UNIQUE INDEX idx_memories_dedup_content ON memories(agent_id, project_id, channel, content);
CREATE UNIQUE INDEX idx_memories_dedup_msg_id ON memories(agent_id, project_id, msg_id) WHERE msg_id != '';

CREATE TABLE episodes (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id         TEXT    NOT NULL,
    project_id       TEXT    NOT NULL DEFAULT '',
    channel          TEXT    NOT NULL DEFAULT '',
    summary          TEXT    NOT NULL,
    keywords         TEXT    NOT NULL DEFAULT '',
    start_time       TEXT,
    end_time         TEXT,
    start_ms         INTEGER,
    end_ms           INTEGER,
    resolved         INTEGER NOT NULL DEFAULT 0 CHECK (resolved IN (0, 1)),
    created_at_ms    INTEGER NOT NULL,
    embedding        BLOB,
    embedding_model  TEXT    NOT NULL DEFAULT '',
    embedding_dim    INTEGER NOT NULL DEFAULT 0,
    embedding_format TEXT    NOT NULL DEFAULT '' CHECK (embedding_format IN ('', 'f32', 'f16'))
);
CREATE INDEX idx_episodes_agent ON episodes(agent_id, created_at_ms DESC);
CREATE INDEX idx_episodes_isolation ON episodes(agent_id, project_id, created_at_ms DESC);
CREATE INDEX idx_episodes_agent_channel ON episodes(agent_id, channel, created_at_ms DESC);
CREATE INDEX idx_episodes_dedup_summary ON episodes(agent_id, project_id, channel, summary);
CREATE INDEX idx_episodes_lost_embedding ON episodes(id) WHERE embedding IS NULL;

CREATE TABLE profiles (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id      TEXT    NOT NULL,
    project_id    TEXT    NOT NULL DEFAULT '',
    user_id       TEXT    NOT NULL DEFAULT '',
    content       TEXT    NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    UNIQUE (agent_id, user_id)
);

-- The change log: one row per write to memories, episodes or profiles, appended by the
-- triggers below inside the writing transaction. `seq` never goes backwards and is never
-- reused (AUTOINCREMENT), so "rows changed since seq S" feeds index generations and the
-- live tail.
CREATE TABLE change_log (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    table_name TEXT    NOT NULL CHECK (table_name IN ('memories', 'episodes', 'profiles')),
    row_id     INTEGER NOT NULL,
    agent_id   TEXT    NOT NULL,
    op         TEXT    NOT NULL CHECK (op IN ('insert', 'update', 'delete'))
);
CREATE INDEX idx_change_log_agent ON change_log(agent_id);

CREATE TRIGGER memories_log_ai AFTER INSERT ON memories BEGIN
    INSERT INTO change_log(table_name, row_id, agent_id, op) VALUES ('memories', new.id, new.agent_id, 'insert');
END;
-- Recall counters are not logged: a recall must not make generations stale.
CREATE TRIGGER memories_log_au AFTER UPDATE OF agent_id, project_id, channel, msg_id, content,
    source, metadata, timestamp, timestamp_ms, created_at_ms, locked, embedding, embedding_model,
    embedding_dim, embedding_format ON memories BEGIN
    INSERT INTO change_log(table_name, row_id, agent_id, op) VALUES ('memories', new.id, new.agent_id, 'update');
END;
CREATE TRIGGER memories_log_ad AFTER DELETE ON memories BEGIN
    INSERT INTO change_log(table_name, row_id, agent_id, op) VALUES ('memories', old.id, old.agent_id, 'delete');
END;
CREATE TRIGGER episodes_log_ai AFTER INSERT ON episodes BEGIN
    INSERT INTO change_log(table_name, row_id, agent_id, op) VALUES ('episodes', new.id, new.agent_id, 'insert');
END;
CREATE TRIGGER episodes_log_au AFTER UPDATE ON episodes BEGIN
    INSERT INTO change_log(table_name, row_id, agent_id, op) VALUES ('episodes', new.id, new.agent_id, 'update');
END;
CREATE TRIGGER episodes_log_ad AFTER DELETE ON episodes BEGIN
    INSERT INTO change_log(table_name, row_id, agent_id, op) VALUES ('episodes', old.id, old.agent_id, 'delete');
END;
CREATE TRIGGER profiles_log_ai AFTER INSERT ON profiles BEGIN
    INSERT INTO change_log(table_name, row_id, agent_id, op) VALUES ('profiles', new.id, new.agent_id, 'insert');
END;
CREATE TRIGGER profiles_log_au AFTER UPDATE ON profiles BEGIN
    INSERT INTO change_log(table_name, row_id, agent_id, op) VALUES ('profiles', new.id, new.agent_id, 'update');
END;
CREATE TRIGGER profiles_log_ad AFTER DELETE ON profiles BEGIN
    INSERT INTO change_log(table_name, row_id, agent_id, op) VALUES ('profiles', old.id, old.agent_id, 'delete');
END;

-- The embedding queue: rows whose embedding is still owed (the embedder failed or did not
-- match the store). The text is read from the row itself when the queue drains, so an edit
-- made meanwhile is embedded, not the stale text.
CREATE TABLE embedding_queue (
    table_name     TEXT    NOT NULL CHECK (table_name IN ('memories', 'episodes')),
    row_id         INTEGER NOT NULL,
    agent_id       TEXT    NOT NULL,
    enqueued_at_ms INTEGER NOT NULL,
    attempts       INTEGER NOT NULL DEFAULT 0,
    last_error     TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (table_name, row_id)
) WITHOUT ROWID;
CREATE INDEX idx_embedding_queue_agent ON embedding_queue(agent_id);
CREATE TRIGGER memories_queue_ad AFTER DELETE ON memories BEGIN
    DELETE FROM embedding_queue WHERE table_name = 'memories' AND row_id = old.id;
END;
CREATE TRIGGER episodes_queue_ad AFTER DELETE ON episodes BEGIN
    DELETE FROM embedding_queue WHERE table_name = 'episodes' AND row_id = old.id;
END;

-- Calibration (derived, safe to delete): one row per agent ('' = global).
CREATE TABLE calibration (
    agent_id        TEXT    PRIMARY KEY,
    payload         TEXT    NOT NULL DEFAULT '{}',
    embedding_model TEXT    NOT NULL DEFAULT '',
    embedding_dim   INTEGER NOT NULL DEFAULT 0,
    scoring_version TEXT    NOT NULL DEFAULT '',
    calibrated_at_ms INTEGER NOT NULL
) WITHOUT ROWID;

-- Overflow-tree nodes and blocks (offsets into the parent's text, never text). Filled by a
-- later step; the tables exist so the schema is complete.
CREATE TABLE record_nodes (
    parent_kind     TEXT    NOT NULL CHECK (parent_kind IN ('mem', 'ep')),
    parent_id       INTEGER NOT NULL,
    node_index      INTEGER NOT NULL,
    start_char      INTEGER NOT NULL,
    end_char        INTEGER NOT NULL,
    token_count     INTEGER NOT NULL,
    window_tokens   INTEGER NOT NULL,
    embedding       BLOB,
    embedding_model TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (parent_kind, parent_id, node_index)
) WITHOUT ROWID;
CREATE TABLE record_blocks (
    parent_kind     TEXT    NOT NULL CHECK (parent_kind IN ('mem', 'ep')),
    parent_id       INTEGER NOT NULL,
    block_index     INTEGER NOT NULL,
    agent_id        TEXT    NOT NULL,
    project_id      TEXT    NOT NULL DEFAULT '',
    channel         TEXT    NOT NULL DEFAULT '',
    start_char      INTEGER NOT NULL,
    end_char        INTEGER NOT NULL,
    forced_boundary INTEGER NOT NULL DEFAULT 0,
    embedding_bits  BLOB,
    embedding_i8    BLOB,
    embedding_model TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (parent_kind, parent_id, block_index)
) WITHOUT ROWID;
CREATE INDEX idx_record_blocks_axes ON record_blocks(agent_id, project_id, channel);
CREATE TRIGGER memories_derived_ad AFTER DELETE ON memories BEGIN
    DELETE FROM record_nodes WHERE parent_kind = 'mem' AND parent_id = old.id;
    DELETE FROM record_blocks WHERE parent_kind = 'mem' AND parent_id = old.id;
END;
CREATE TRIGGER memories_derived_au AFTER UPDATE OF content ON memories WHEN old.content <> new.content BEGIN
    DELETE FROM record_nodes WHERE parent_kind = 'mem' AND parent_id = old.id;
    DELETE FROM record_blocks WHERE parent_kind = 'mem' AND parent_id = old.id;
END;
CREATE TRIGGER episodes_derived_ad AFTER DELETE ON episodes BEGIN
    DELETE FROM record_nodes WHERE parent_kind = 'ep' AND parent_id = old.id;
    DELETE FROM record_blocks WHERE parent_kind = 'ep' AND parent_id = old.id;
END;

-- Associations: entities with aliases and mentions, and relations between entities and
-- records. Filled by a later step.
CREATE TABLE entities (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id    TEXT    NOT NULL,
    project_id  TEXT    NOT NULL DEFAULT '',
    channel     TEXT    NOT NULL DEFAULT '',
    name        TEXT    NOT NULL,
    normalized  TEXT    NOT NULL,
    declared_by TEXT    NOT NULL DEFAULT '',
    created_at_ms INTEGER NOT NULL,
    UNIQUE (agent_id, project_id, channel, normalized)
);
CREATE TABLE entity_aliases (
    entity_id  INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    alias      TEXT    NOT NULL,
    normalized TEXT    NOT NULL,
    PRIMARY KEY (entity_id, normalized)
) WITHOUT ROWID;
CREATE INDEX idx_entity_aliases_normalized ON entity_aliases(normalized);
CREATE TABLE entity_mentions (
    entity_id     INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
    ref           TEXT    NOT NULL,
    declared_by   TEXT    NOT NULL DEFAULT '',
    created_at_ms INTEGER NOT NULL,
    PRIMARY KEY (entity_id, ref)
) WITHOUT ROWID;
CREATE INDEX idx_entity_mentions_ref ON entity_mentions(ref);
CREATE TABLE relations (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id       TEXT    NOT NULL,
    project_id     TEXT    NOT NULL DEFAULT '',
    channel        TEXT    NOT NULL DEFAULT '',
    subject_kind   TEXT    NOT NULL CHECK (subject_kind IN ('entity', 'mem', 'ep')),
    subject_id     INTEGER NOT NULL,
    predicate      TEXT    NOT NULL,
    object_kind    TEXT    NOT NULL CHECK (object_kind IN ('entity', 'mem', 'ep')),
    object_id      INTEGER NOT NULL,
    anchor_ref     TEXT    NOT NULL DEFAULT '',
    declared_by    TEXT    NOT NULL DEFAULT '',
    declared_at_ms INTEGER NOT NULL,
    UNIQUE (agent_id, project_id, channel, subject_kind, subject_id, predicate, object_kind, object_id, anchor_ref)
);
CREATE INDEX idx_relations_subject ON relations(subject_kind, subject_id);
CREATE INDEX idx_relations_object ON relations(object_kind, object_id);
CREATE TRIGGER memories_assoc_ad AFTER DELETE ON memories BEGIN
    DELETE FROM entity_mentions WHERE ref = 'mem:' || old.id;
    DELETE FROM relations WHERE (subject_kind = 'mem' AND subject_id = old.id)
        OR (object_kind = 'mem' AND object_id = old.id);
END;
CREATE TRIGGER episodes_assoc_ad AFTER DELETE ON episodes BEGIN
    DELETE FROM entity_mentions WHERE ref = 'ep:' || old.id;
    DELETE FROM relations WHERE (subject_kind = 'ep' AND subject_id = old.id)
        OR (object_kind = 'ep' AND object_id = old.id);
END;
