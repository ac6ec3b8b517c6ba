-- The durable notification outbox. A message is written in the same transaction that
-- records its run, so a crash cannot lose it; a sender delivers it with retries.

CREATE TABLE outbox (
    message_id         TEXT PRIMARY KEY,
    -- Sent to channels that deduplicate (webhooks) and unique here: one message per
    -- run and kind, however often a run is recorded.
    idempotency_key    TEXT NOT NULL UNIQUE,
    kind               TEXT NOT NULL CHECK (kind IN ('run', 'failing', 'paused')),
    run_id             TEXT,
    schedule_id        TEXT,
    user_id            TEXT NOT NULL,
    channel_id         TEXT NOT NULL,
    channel_context_id TEXT,
    priority           TEXT NOT NULL CHECK (priority IN ('low', 'normal', 'high')),
    payload_json       TEXT NOT NULL,
    status             TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'dead')),
    attempts           INTEGER NOT NULL DEFAULT 0,
    -- Parts already accepted, for channels that split long messages.
    progress           INTEGER NOT NULL DEFAULT 0,
    next_attempt_at    INTEGER NOT NULL,
    expires_at         INTEGER NOT NULL,
    last_error         TEXT,
    lease_owner        TEXT,
    lease_expires_at   INTEGER,
    created_at         INTEGER NOT NULL,
    delivered_at       INTEGER
);
CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE status = 'pending';
CREATE INDEX outbox_by_status ON outbox (status, created_at);
