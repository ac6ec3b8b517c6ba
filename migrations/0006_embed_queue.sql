-- The background embedding queue. A write stores its chunks (found by keywords at once) and
-- queues them here; the embedder claims a batch with a lease, so two workers never embed the
-- same chunk, writes their vectors and removes the rows in one transaction. A worker that
-- dies leaves its claim to expire and the batch is taken again.
CREATE TABLE embed_queue (
    chunk_id         INTEGER PRIMARY KEY REFERENCES chunks (chunk_id) ON DELETE CASCADE,
    enqueued_at      INTEGER NOT NULL,
    claim_token      TEXT,
    claim_expires_at INTEGER
);
CREATE INDEX embed_queue_by_claim ON embed_queue (claim_token) WHERE claim_token IS NOT NULL;

-- Contextual chunks: each conversation chunk carries the tail of the event before it in its
-- session. A reply ("yes, every Tuesday") means little alone; the embedder reads the
-- context with the text, and the keyword index holds it in a column of its own, weighted
-- below the text (search.context_weight). Notes have no context.
ALTER TABLE chunks ADD COLUMN context TEXT NOT NULL DEFAULT '';

DROP TRIGGER chunks_fts_insert;
DROP TRIGGER chunks_fts_delete;
DROP TRIGGER chunks_fts_update;
DROP TABLE chunks_fts;

CREATE VIRTUAL TABLE chunks_fts USING fts5 (
    text,
    scope,
    context,
    content = 'chunks',
    content_rowid = 'chunk_id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts (rowid, text, scope, context)
        VALUES (new.chunk_id, new.text, new.scope, new.context);
END;
CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts (chunks_fts, rowid, text, scope, context)
        VALUES ('delete', old.chunk_id, old.text, old.scope, old.context);
END;
CREATE TRIGGER chunks_fts_update AFTER UPDATE OF text, scope, context ON chunks BEGIN
    INSERT INTO chunks_fts (chunks_fts, rowid, text, scope, context)
        VALUES ('delete', old.chunk_id, old.text, old.scope, old.context);
    INSERT INTO chunks_fts (rowid, text, scope, context)
        VALUES (new.chunk_id, new.text, new.scope, new.context);
END;

INSERT INTO chunks_fts (chunks_fts) VALUES ('rebuild');
