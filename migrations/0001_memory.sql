-- Memory core: sessions and their events are the source of truth; chunks, chunks_fts and
-- chunk_vectors are a derived index that `nightshift index rebuild` can recreate at any time.
-- All times are INTEGER unix milliseconds UTC.

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE sessions (
    session_id      TEXT PRIMARY KEY,
    user_id         TEXT NOT NULL,
    kind            TEXT NOT NULL CHECK (kind IN ('conversation', 'memory', 'scheduled')),
    title           TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    last_sequence   INTEGER NOT NULL DEFAULT 0,
    -- Bumped (by trigger) whenever a vector of this session is removed, so an in-memory
    -- copy of the session's vectors knows it must reload rather than append.
    vector_removals INTEGER NOT NULL DEFAULT 0
);
-- Not (user_id, updated_at): every append moves updated_at, and a user has few sessions.
CREATE INDEX sessions_by_user ON sessions (user_id);

CREATE TABLE events (
    session_id   TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    sequence     INTEGER NOT NULL,
    role         TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool', 'system')),
    content      TEXT NOT NULL,
    payload_json TEXT NOT NULL DEFAULT '{}',
    importance   REAL NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (session_id, sequence)
) WITHOUT ROWID;

CREATE TABLE session_state (
    session_id             TEXT PRIMARY KEY REFERENCES sessions (session_id) ON DELETE CASCADE,
    state_json             TEXT NOT NULL DEFAULT '{}',
    summary                TEXT,
    summary_epoch          INTEGER NOT NULL DEFAULT 0,
    summary_upper_sequence INTEGER NOT NULL DEFAULT 0,
    updated_at             INTEGER NOT NULL
);

CREATE TABLE notes (
    note_id    TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    content    TEXT NOT NULL,
    tags_json  TEXT NOT NULL DEFAULT '[]',
    key        TEXT,
    category   TEXT,
    source     TEXT NOT NULL DEFAULT 'tool',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    expires_at INTEGER
);
CREATE INDEX notes_by_user ON notes (user_id, updated_at DESC);
CREATE UNIQUE INDEX notes_by_user_key ON notes (user_id, key) WHERE key IS NOT NULL;

CREATE TABLE chunks (
    chunk_id       INTEGER PRIMARY KEY,
    session_id     TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    user_id        TEXT NOT NULL,
    note_id        TEXT REFERENCES notes (note_id) ON DELETE CASCADE,
    -- A short token derived from session_id, indexed by FTS5 so a keyword search can be
    -- narrowed to the sessions in scope inside the full-text index itself.
    scope          TEXT NOT NULL,
    text           TEXT NOT NULL,
    content_hash   TEXT NOT NULL,
    sequence_start INTEGER NOT NULL,
    sequence_end   INTEGER NOT NULL,
    created_at     INTEGER NOT NULL,
    metadata_json  TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX chunks_by_session_hash ON chunks (session_id, content_hash);
CREATE INDEX chunks_by_note ON chunks (note_id) WHERE note_id IS NOT NULL;

CREATE VIRTUAL TABLE chunks_fts USING fts5 (
    text,
    scope,
    content = 'chunks',
    content_rowid = 'chunk_id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts (rowid, text, scope) VALUES (new.chunk_id, new.text, new.scope);
END;
CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts (chunks_fts, rowid, text, scope)
        VALUES ('delete', old.chunk_id, old.text, old.scope);
END;
CREATE TRIGGER chunks_fts_update AFTER UPDATE OF text, scope ON chunks BEGIN
    INSERT INTO chunks_fts (chunks_fts, rowid, text, scope)
        VALUES ('delete', old.chunk_id, old.text, old.scope);
    INSERT INTO chunks_fts (rowid, text, scope) VALUES (new.chunk_id, new.text, new.scope);
END;

-- vector_id grows with every insert, so an in-memory copy can load just the rows added
-- since it last looked, whatever order chunks are embedded in. (A rowid can be reused only
-- after the largest one is deleted, and every delete makes copies reload in full.)
CREATE TABLE chunk_vectors (
    vector_id  INTEGER PRIMARY KEY,
    chunk_id   INTEGER NOT NULL UNIQUE REFERENCES chunks (chunk_id) ON DELETE CASCADE,
    session_id TEXT NOT NULL,
    model      TEXT NOT NULL,
    embedding  BLOB NOT NULL
);
CREATE INDEX chunk_vectors_by_session ON chunk_vectors (session_id, model, vector_id);

CREATE TRIGGER chunk_vectors_removed AFTER DELETE ON chunk_vectors BEGIN
    UPDATE sessions SET vector_removals = vector_removals + 1
        WHERE session_id = old.session_id;
END;
