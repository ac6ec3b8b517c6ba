-- Each session's vectors packed as one-byte codes in blocks of consecutive vector ids, so
-- a search loads a large session's vectors from a few hundred rows instead of a row per
-- vector. Derived from chunk_vectors, like them: a block made before a removal from its
-- session (`removals` behind `sessions.vector_removals`) is ignored and made again, and
-- each block names the last vector id of the block before it, so a chain with a gap is
-- read only up to the gap (the vector rows after it are read instead).
CREATE TABLE vector_blocks (
    session_id       TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    model            TEXT NOT NULL,
    after_vector_id  INTEGER NOT NULL,
    last_vector_id   INTEGER NOT NULL,
    removals         INTEGER NOT NULL,
    dimensions       INTEGER NOT NULL,
    row_count        INTEGER NOT NULL,
    chunk_ids        BLOB NOT NULL,
    steps            BLOB NOT NULL,
    codes            BLOB NOT NULL,
    PRIMARY KEY (session_id, model, after_vector_id)
);
