-- Substring search over skill names through an index: an FTS5 trigram
-- table mirrors skills.name (external content, no second copy of the
-- text), kept in step by triggers in the same transaction as every change.
-- Queries of three or more characters use the trigram index; shorter ones
-- read the (small) index table, never employees.
CREATE VIRTUAL TABLE skills_fts USING fts5 (
    name,
    content = 'skills',
    content_rowid = 'id',
    tokenize = 'trigram'
);

INSERT INTO skills_fts (rowid, name) SELECT id, name FROM skills;

CREATE TRIGGER skills_fts_insert AFTER INSERT ON skills BEGIN
    INSERT INTO skills_fts (rowid, name) VALUES (new.id, new.name);
END;

CREATE TRIGGER skills_fts_delete AFTER DELETE ON skills BEGIN
    INSERT INTO skills_fts (skills_fts, rowid, name) VALUES ('delete', old.id, old.name);
END;

CREATE TRIGGER skills_fts_update AFTER UPDATE OF id, name ON skills BEGIN
    INSERT INTO skills_fts (skills_fts, rowid, name) VALUES ('delete', old.id, old.name);
    INSERT INTO skills_fts (rowid, name) VALUES (new.id, new.name);
END;
