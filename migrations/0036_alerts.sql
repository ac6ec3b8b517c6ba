-- Alerts to a schedule's owner: a run not started this long after its time (`late`), this
-- many runs in a row failed (`failures`), no run succeeded for this long (`silent`). A
-- schedule's settings are `alerts_json`; an incident is a row of `schedule_alerts` while
-- it lasts, so it is told once when it opens and once when it ends, whichever worker
-- sees it first. `last_success_at` is what `silent` counts from.
ALTER TABLE schedules ADD COLUMN alerts_json TEXT;
ALTER TABLE schedules ADD COLUMN last_success_at INTEGER;
UPDATE schedules SET last_success_at = (SELECT max(finished_at) FROM schedule_runs r
    WHERE r.schedule_id = schedules.schedule_id AND r.status = 'succeeded');
CREATE TABLE schedule_alerts (
    schedule_id TEXT NOT NULL REFERENCES schedules (schedule_id) ON DELETE CASCADE,
    kind        TEXT NOT NULL CHECK (kind IN ('late', 'failures', 'silent')),
    opened_at   INTEGER NOT NULL,
    -- What the incident is about: the late occurrence's due time; the time silence is
    -- counted from.
    since       INTEGER NOT NULL,
    PRIMARY KEY (schedule_id, kind)
);

-- The outbox takes alerts and their recoveries (kind 'alert'): rebuilt as in migration 21.
CREATE TABLE outbox_rebuilt (
    message_id         TEXT PRIMARY KEY,
    idempotency_key    TEXT NOT NULL UNIQUE,
    kind               TEXT NOT NULL
                       CHECK (kind IN ('run', 'failing', 'paused', 'memory', 'approval', 'alert')),
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
