-- Approvals: a run whose model asks for a tool call that needs a person's approval waits
-- (status 'waiting') with the call and everything needed to go on kept here, until the
-- user approves or denies it, or `approval_timeout_secs` answers deny.

-- SQLite cannot change a CHECK in place: schedule_runs is rebuilt to take 'waiting'. The
-- state of running runs (`temp:` keys refer to their run) would go with the old table
-- (ON DELETE CASCADE); it is set aside and put back.
CREATE TABLE state_entries_aside AS SELECT * FROM state_entries WHERE run_id IS NOT NULL;
CREATE TABLE schedule_runs_aside AS SELECT * FROM schedule_runs;
DROP TABLE schedule_runs;
CREATE TABLE schedule_runs (
    run_id            TEXT PRIMARY KEY,
    schedule_id       TEXT NOT NULL REFERENCES schedules (schedule_id) ON DELETE CASCADE,
    scheduled_for     INTEGER NOT NULL,
    attempt           INTEGER NOT NULL DEFAULT 1,
    status            TEXT NOT NULL CHECK (status IN
                      ('running', 'waiting', 'succeeded', 'failed', 'timed_out', 'cancelled',
                       'interrupted', 'skipped')),
    worker_id         TEXT,
    lease_expires_at  INTEGER,
    started_at        INTEGER,
    finished_at       INTEGER,
    output_summary    TEXT,
    output            TEXT,
    error             TEXT,
    turn_count        INTEGER NOT NULL DEFAULT 0,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    cost              REAL NOT NULL DEFAULT 0,
    notified          INTEGER NOT NULL DEFAULT 0,
    due_at            INTEGER,
    origin            TEXT NOT NULL DEFAULT 'cadence'
                      CHECK (origin IN ('cadence', 'trigger', 'chain', 'backfill')),
    event_id          TEXT
);
INSERT INTO schedule_runs SELECT * FROM schedule_runs_aside;
DROP TABLE schedule_runs_aside;
INSERT INTO state_entries SELECT * FROM state_entries_aside WHERE true
    ON CONFLICT DO NOTHING;
DROP TABLE state_entries_aside;
CREATE UNIQUE INDEX schedule_runs_occurrence ON schedule_runs (schedule_id, scheduled_for)
    WHERE event_id IS NULL;
CREATE UNIQUE INDEX schedule_runs_by_event ON schedule_runs (event_id)
    WHERE event_id IS NOT NULL;
CREATE INDEX schedule_runs_history ON schedule_runs (schedule_id, scheduled_for DESC);
CREATE INDEX schedule_runs_running ON schedule_runs (lease_expires_at) WHERE status = 'running';
CREATE INDEX schedule_runs_running_by_schedule ON schedule_runs (schedule_id)
    WHERE status = 'running';

-- One row per call waiting for (or given) an answer. `resume_json` is what the runtime
-- kept to go on from the call (its conversation so far, its counters, the calls after
-- this one in the same turn); it goes once the run has resumed.
CREATE TABLE approvals (
    approval_id  TEXT PRIMARY KEY,
    run_id       TEXT NOT NULL REFERENCES schedule_runs (run_id) ON DELETE CASCADE,
    schedule_id  TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    tool_name    TEXT NOT NULL,
    arguments    TEXT NOT NULL,
    state        TEXT NOT NULL DEFAULT 'pending'
                 CHECK (state IN ('pending', 'approved', 'denied', 'expired')),
    decided_by   TEXT,
    reason       TEXT,
    resume_json  TEXT,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    decided_at   INTEGER,
    resumed_at   INTEGER
);
CREATE INDEX approvals_by_user ON approvals (user_id, created_at DESC);
CREATE INDEX approvals_by_run ON approvals (run_id);
CREATE INDEX approvals_pending ON approvals (expires_at) WHERE state = 'pending';
CREATE INDEX approvals_to_resume ON approvals (decided_at)
    WHERE state != 'pending' AND resumed_at IS NULL;

-- The key approve and deny links are signed with, shared by every worker of the
-- database; made here, never shown.
INSERT INTO meta (key, value) VALUES ('approval_link_key', lower(hex(randomblob(32))));

-- The outbox takes approval requests (kind 'approval'): rebuilt as in migration 21.
CREATE TABLE outbox_rebuilt (
    message_id         TEXT PRIMARY KEY,
    idempotency_key    TEXT NOT NULL UNIQUE,
    kind               TEXT NOT NULL
                       CHECK (kind IN ('run', 'failing', 'paused', 'memory', 'approval')),
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
