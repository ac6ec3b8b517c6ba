-- The runs of `notify = "digest"` schedules waiting for their day's digest: one line per
-- run, written in the transaction that records the run, due at the user's next
-- `digest_at`. The sender folds a schedule's due lines into one outbox message and deletes
-- them in one transaction. No reference to the run: a line outlives its run or schedule
-- being removed, so what happened is still told.
CREATE TABLE digest_items (
    run_id      TEXT PRIMARY KEY,
    schedule_id TEXT NOT NULL,
    user_id     TEXT NOT NULL,
    -- `ID` or `ID:CONTEXT`, as the run's own message would have gone.
    channel     TEXT NOT NULL,
    due_at      INTEGER NOT NULL,
    item_json   TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);

CREATE INDEX digest_items_due ON digest_items (due_at);

-- The outbox takes digests (kind 'digest'): rebuilt as in migration 21.
CREATE TABLE outbox_rebuilt (
    message_id         TEXT PRIMARY KEY,
    idempotency_key    TEXT NOT NULL UNIQUE,
    kind               TEXT NOT NULL
                       CHECK (kind IN ('run', 'failing', 'paused', 'memory', 'approval', 'alert', 'digest')),
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
INSERT INTO outbox_rebuilt SELECT * FROM outbox;
DROP TABLE outbox;
ALTER TABLE outbox_rebuilt RENAME TO outbox;
CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE status = 'pending';
CREATE INDEX outbox_by_status ON outbox (status, created_at);
CREATE INDEX outbox_pending_by_channel ON outbox (channel_id) WHERE status = 'pending';
