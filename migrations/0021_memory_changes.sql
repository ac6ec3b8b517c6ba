-- Memory change events: each change to a user's memory (a note saved, updated, deleted,
-- superseded or restored; a session forgotten) is written here in the transaction that
-- makes it, for users whose changes go to a channel ([notify] memory_changes_channel,
-- [users.U] memory_changes_channel). The worker moves each into the outbox (one message
-- per change, its idempotency key `memory:CHANGE_ID`) and deletes it in one transaction.
CREATE TABLE memory_changes (
    change_id    INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id      TEXT NOT NULL,
    event        TEXT NOT NULL,
    payload_json TEXT NOT NULL,
    created_at   INTEGER NOT NULL
);
CREATE INDEX memory_changes_by_user ON memory_changes (user_id);

-- The outbox takes these messages too (kind 'memory'): SQLite cannot change a CHECK in
-- place, so the table is rebuilt with every row, and its indexes made again.
CREATE TABLE outbox_rebuilt (
    message_id         TEXT PRIMARY KEY,
    idempotency_key    TEXT NOT NULL UNIQUE,
    kind               TEXT NOT NULL CHECK (kind IN ('run', 'failing', 'paused', 'memory')),
    run_id             TEXT,
    schedule_id        TEXT,
    user_id            TEXT NOT NULL,
    channel_id         TEXT NOT NULL,
    channel_context_id TEXT,
    priority           TEXT NOT NULL CHECK (priority IN ('low', 'normal', 'high')),
    payload_json       TEXT NOT NULL,
    status             TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'dead')),
    attempts           INTEGER NOT NULL DEFAULT 0,
    progress           INTEGER NOT NULL DEFAULT 0,
    next_attempt_at    INTEGER NOT NULL,
    expires_at         INTEGER NOT NULL,
    last_error         TEXT,
    lease_owner        TEXT,
    lease_expires_at   INTEGER,
    created_at         INTEGER NOT NULL,
    delivered_at       INTEGER
);
INSERT INTO outbox_rebuilt (message_id, idempotency_key, kind, run_id, schedule_id, user_id,
    channel_id, channel_context_id, priority, payload_json, status, attempts, progress,
    next_attempt_at, expires_at, last_error, lease_owner, lease_expires_at, created_at,
    delivered_at)
SELECT message_id, idempotency_key, kind, run_id, schedule_id, user_id,
    channel_id, channel_context_id, priority, payload_json, status, attempts, progress,
    next_attempt_at, expires_at, last_error, lease_owner, lease_expires_at, created_at,
    delivered_at
FROM outbox;
DROP TABLE outbox;
ALTER TABLE outbox_rebuilt RENAME TO outbox;
CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE status = 'pending';
CREATE INDEX outbox_by_status ON outbox (status, created_at);
CREATE INDEX outbox_pending_by_channel ON outbox (channel_id) WHERE status = 'pending';
