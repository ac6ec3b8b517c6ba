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
