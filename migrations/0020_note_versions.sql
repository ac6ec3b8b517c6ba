-- Note versions: every change to a note (created, updated, superseded by consolidation,
-- deleted, restored) keeps the note as it stood after the change, with who or what made
-- it. A deleted note's versions stay (out of search) until the expiry pass purges them
-- after memory.deleted_note_retention_days; purging a user removes them at once.
CREATE TABLE note_versions (
    version_id INTEGER PRIMARY KEY,
    note_id    TEXT NOT NULL,
    version    INTEGER NOT NULL,
    user_id    TEXT NOT NULL,
    content    TEXT NOT NULL,
    tags_json  TEXT NOT NULL,
    key        TEXT,
    category   TEXT,
    source     TEXT NOT NULL,
    change     TEXT NOT NULL
               CHECK (change IN ('created', 'updated', 'superseded', 'deleted', 'restored')),
    -- cli, api, mcp, run:RUN_ID, consolidation:PASS, library; `before versions` for the
    -- state a note was in when versions began.
    changed_by TEXT NOT NULL,
    changed_at INTEGER NOT NULL,
    UNIQUE (note_id, version)
);
CREATE INDEX note_versions_by_user ON note_versions (user_id, changed_at);

-- The versions' text for `--as-of` searches: what a note said at a past moment is found
-- by keywords among the versions valid then.
CREATE VIRTUAL TABLE note_versions_fts USING fts5 (
    content,
    content = 'note_versions',
    content_rowid = 'version_id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER note_versions_fts_insert AFTER INSERT ON note_versions BEGIN
    INSERT INTO note_versions_fts (rowid, content) VALUES (new.version_id, new.content);
END;
CREATE TRIGGER note_versions_fts_delete AFTER DELETE ON note_versions BEGIN
    INSERT INTO note_versions_fts (note_versions_fts, rowid, content)
        VALUES ('delete', old.version_id, old.content);
END;

-- The notes there are now, as their first version.
INSERT INTO note_versions (note_id, version, user_id, content, tags_json, key, category,
    source, change, changed_by, changed_at)
SELECT note_id, 1, user_id, content, tags_json, key, category, source,
    CASE WHEN superseded_by IS NULL THEN 'created' ELSE 'superseded' END,
    'before versions', updated_at
FROM notes;
