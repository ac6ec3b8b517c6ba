-- The keyword index (src/memory/keywords.rs) now answers every query, a query of stop
-- words alone from an index of the stop words kept apart (loaded only for sessions
-- searched that way), so FTS5's copy of every chunk's words has no reader left: it goes,
-- with its triggers, and an append writes fewer pages. `chunks.scope` only fed FTS5; new
-- chunks leave it empty.
DROP TRIGGER chunks_fts_insert;
DROP TRIGGER chunks_fts_delete;
DROP TRIGGER chunks_fts_update;
DROP TABLE chunks_fts;

-- Keyword blocks by field: 0 the words but stop words (what every block held until
-- now), 1 the stop words.
CREATE TABLE keyword_blocks_by_field (
    session_id     TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    field          INTEGER NOT NULL,
    after_chunk_id INTEGER NOT NULL,
    last_chunk_id  INTEGER NOT NULL,
    removals       INTEGER NOT NULL,
    format         INTEGER NOT NULL,
    row_count      INTEGER NOT NULL,
    postings       BLOB NOT NULL,
    PRIMARY KEY (session_id, field, after_chunk_id)
);
INSERT INTO keyword_blocks_by_field (session_id, field, after_chunk_id, last_chunk_id,
                                     removals, format, row_count, postings)
    SELECT session_id, 0, after_chunk_id, last_chunk_id, removals, format, row_count, postings
    FROM keyword_blocks;
DROP TABLE keyword_blocks;
ALTER TABLE keyword_blocks_by_field RENAME TO keyword_blocks;
