-- Two more overlap policies, buffer_all and cancel_other: the overlap CHECK of schedules
-- changes, which in SQLite means rebuilding the table. schedule_runs refers to it (ON
-- DELETE CASCADE), so its rows are set aside first and put back after, and dropping the
-- old table deletes nothing else. Indexes and the change-counting triggers are made again.

CREATE TABLE schedule_runs_aside AS SELECT * FROM schedule_runs;
DROP TABLE schedule_runs;

CREATE TABLE schedules_rebuilt (
    schedule_id          TEXT PRIMARY KEY,
    user_id              TEXT NOT NULL,
    name                 TEXT,
    goal                 TEXT NOT NULL,
    cadence_json         TEXT NOT NULL,
    cadence_text         TEXT,
    source               TEXT NOT NULL DEFAULT 'tool' CHECK (source IN ('tool', 'config')),
    notify               TEXT NOT NULL DEFAULT 'always',
    overlap              TEXT NOT NULL DEFAULT 'skip'
                         CHECK (overlap IN ('skip', 'allow', 'buffer_one', 'buffer_all', 'cancel_other')),
    catch_up             TEXT NOT NULL DEFAULT 'once' CHECK (catch_up IN ('once', 'skip', 'all')),
    max_attempts         INTEGER NOT NULL DEFAULT 3,
    timeout_secs         INTEGER,
    max_turns            INTEGER,
    max_cost             REAL,
    status               TEXT NOT NULL DEFAULT 'active'
                         CHECK (status IN ('active', 'paused', 'completed', 'failed')),
    status_reason        TEXT,
    created_at           INTEGER NOT NULL,
    updated_at           INTEGER NOT NULL,
    next_run_at          INTEGER,
    last_run_at          INTEGER,
    last_run_status      TEXT,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    channel_id           TEXT,
    channel_context_id   TEXT,
    starts_at            INTEGER,
    ends_at              INTEGER,
    max_runs             INTEGER,
    runs_started         INTEGER NOT NULL DEFAULT 0,
    skip_json            TEXT,
    jitter_secs          INTEGER,
    next_nominal_at      INTEGER
);
INSERT INTO schedules_rebuilt (schedule_id, user_id, name, goal, cadence_json, cadence_text,
    source, notify, overlap, catch_up, max_attempts, timeout_secs, max_turns, max_cost, status,
    status_reason, created_at, updated_at, next_run_at, last_run_at, last_run_status,
    consecutive_failures, channel_id, channel_context_id, starts_at, ends_at, max_runs,
    runs_started, skip_json, jitter_secs, next_nominal_at)
SELECT schedule_id, user_id, name, goal, cadence_json, cadence_text,
    source, notify, overlap, catch_up, max_attempts, timeout_secs, max_turns, max_cost, status,
    status_reason, created_at, updated_at, next_run_at, last_run_at, last_run_status,
    consecutive_failures, channel_id, channel_context_id, starts_at, ends_at, max_runs,
    runs_started, skip_json, jitter_secs, next_nominal_at
FROM schedules;
DROP TABLE schedules;
ALTER TABLE schedules_rebuilt RENAME TO schedules;
CREATE INDEX schedules_by_user ON schedules (user_id, status);
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE status = 'active';
CREATE UNIQUE INDEX schedules_by_config_name ON schedules (name) WHERE source = 'config';
CREATE TRIGGER schedules_changed_insert AFTER INSERT ON schedules BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'schedules_version';
END;
CREATE TRIGGER schedules_changed_update AFTER UPDATE ON schedules BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'schedules_version';
END;
CREATE TRIGGER schedules_changed_delete AFTER DELETE ON schedules BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'schedules_version';
END;

CREATE TABLE schedule_runs (
    run_id            TEXT PRIMARY KEY,
    schedule_id       TEXT NOT NULL REFERENCES schedules (schedule_id) ON DELETE CASCADE,
    scheduled_for     INTEGER NOT NULL,
    attempt           INTEGER NOT NULL DEFAULT 1,
    status            TEXT NOT NULL CHECK (status IN
                      ('running', 'succeeded', 'failed', 'timed_out', 'cancelled', 'interrupted', 'skipped')),
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
    UNIQUE (schedule_id, scheduled_for)
);
INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, attempt, status, worker_id,
    lease_expires_at, started_at, finished_at, output_summary, output, error, turn_count,
    prompt_tokens, completion_tokens, cost, notified, due_at)
SELECT run_id, schedule_id, scheduled_for, attempt, status, worker_id,
    lease_expires_at, started_at, finished_at, output_summary, output, error, turn_count,
    prompt_tokens, completion_tokens, cost, notified, due_at
FROM schedule_runs_aside;
DROP TABLE schedule_runs_aside;
CREATE INDEX schedule_runs_history ON schedule_runs (schedule_id, scheduled_for DESC);
CREATE INDEX schedule_runs_running ON schedule_runs (lease_expires_at) WHERE status = 'running';
CREATE INDEX schedule_runs_running_by_schedule ON schedule_runs (schedule_id)
    WHERE status = 'running';
