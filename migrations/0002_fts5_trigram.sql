-- cpersona-rs schema step 2: FTS5 with the trigram tokenizer over memories and episodes,
-- as external-content tables kept in step by triggers. Never edit this file once landed.
--
-- The update triggers are column-scoped and guarded on a real change (CPersona bug-012):
-- a write that leaves the text alone must not rewrite postings.

CREATE VIRTUAL TABLE memories_fts USING fts5(
    content, content = memories, content_rowid = id, tokenize = 'trigram');
CREATE TRIGGER memories_fts_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER memories_fts_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', old.id, old.content);
END;
CREATE TRIGGER memories_fts_au AFTER UPDATE OF content ON memories WHEN old.content <> new.content BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO memories_fts(rowid, content) VALUES (new.id, new.content);
END;

CREATE VIRTUAL TABLE episodes_fts USING fts5(
    summary, keywords, content = episodes, content_rowid = id, tokenize = 'trigram');
CREATE TRIGGER episodes_fts_ai AFTER INSERT ON episodes BEGIN
    INSERT INTO episodes_fts(rowid, summary, keywords) VALUES (new.id, new.summary, new.keywords);
END;
CREATE TRIGGER episodes_fts_ad AFTER DELETE ON episodes BEGIN
    INSERT INTO episodes_fts(episodes_fts, rowid, summary, keywords)
    VALUES ('delete', old.id, old.summary, old.keywords);
END;
CREATE TRIGGER episodes_fts_au AFTER UPDATE OF summary, keywords ON episodes
WHEN old.summary <> new.summary OR old.keywords <> new.keywords BEGIN
    INSERT INTO episodes_fts(episodes_fts, rowid, summary, keywords)
    VALUES ('delete', old.id, old.summary, old.keywords);
    INSERT INTO episodes_fts(rowid, summary, keywords) VALUES (new.id, new.summary, new.keywords);
END;

-- Rows written before this step (none on a fresh store) are indexed once here.
INSERT INTO memories_fts(memories_fts) VALUES ('rebuild');
INSERT INTO episodes_fts(episodes_fts) VALUES ('rebuild');
