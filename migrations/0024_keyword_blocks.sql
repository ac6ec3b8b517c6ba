-- The keyword leg's own index (src/memory/keywords.rs): each session's chunks held in
-- memory as inverted postings, loaded from these blocks of 4,096 consecutive chunks and
-- topped up from the chunk rows after the last block. Derived from chunks, like
-- vector_blocks from chunk_vectors: a block made before a removal from its session
-- (`removals` behind `sessions.vector_removals`) or by another `format` is ignored and
-- made again, and each block names the last chunk id of the block before it.
CREATE TABLE keyword_blocks (
    session_id     TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    after_chunk_id INTEGER NOT NULL,
    last_chunk_id  INTEGER NOT NULL,
    removals       INTEGER NOT NULL,
    format         INTEGER NOT NULL,
    row_count      INTEGER NOT NULL,
    postings       BLOB NOT NULL,
    PRIMARY KEY (session_id, after_chunk_id)
);

-- A session's chunks in id order, for reading only those added since a copy was made.
CREATE INDEX chunks_by_session ON chunks (session_id);

-- vector_removals now counts every change that can make an in-memory copy of a session's
-- chunks stale, not only removed vectors: a chunk removed before it had a vector, or
-- rewritten in place. (A removed chunk's vector bumps it too; counting twice is harmless.)
CREATE TRIGGER chunks_removed AFTER DELETE ON chunks BEGIN
    UPDATE sessions SET vector_removals = vector_removals + 1
        WHERE session_id = old.session_id;
END;
CREATE TRIGGER chunks_rewritten AFTER UPDATE OF text, context, session_id ON chunks BEGIN
    UPDATE sessions SET vector_removals = vector_removals + 1
        WHERE session_id IN (old.session_id, new.session_id);
END;

-- A session forgotten and made again under its id (an import can even bring back its
-- created_at) must not look like the session an in-memory copy was made of: each new
-- session's count starts at a random point, not at 0, so no later count of the old one
-- is met again.
CREATE TRIGGER sessions_count_from_anywhere AFTER INSERT ON sessions BEGIN
    UPDATE sessions SET vector_removals = abs(random() % 4611686018427387904)
        WHERE session_id = new.session_id;
END;
