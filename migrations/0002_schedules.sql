-- Schedules and their runs. All times are INTEGER unix milliseconds UTC.

CREATE TABLE schedules (
    schedule_id          TEXT PRIMARY KEY,
    user_id              TEXT NOT NULL,
    name                 TEXT,
    goal                 TEXT NOT NULL,
    -- The resolved cadence (cron + zone, once, or interval) as JSON, and the text the
    -- user wrote when it came from natural language.
    cadence_json         TEXT NOT NULL,
    cadence_text         TEXT,
    source               TEXT NOT NULL DEFAULT 'tool' CHECK (source IN ('tool', 'config')),
    notify               TEXT NOT NULL DEFAULT 'always',
    overlap              TEXT NOT NULL DEFAULT 'skip' CHECK (overlap IN ('skip', 'allow', 'buffer_one')),
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
    channel_context_id   TEXT
);
CREATE INDEX schedules_by_user ON schedules (user_id, status);
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE status = 'active';
CREATE UNIQUE INDEX schedules_by_config_name ON schedules (name) WHERE source = 'config';

-- One row per occurrence: the UNIQUE constraint is what makes a second claim of the same
-- occurrence fail, whichever worker tries it.
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
    UNIQUE (schedule_id, scheduled_for)
);
CREATE INDEX schedule_runs_history ON schedule_runs (schedule_id, scheduled_for DESC);
CREATE INDEX schedule_runs_running ON schedule_runs (lease_expires_at) WHERE status = 'running';

-- Bumped on every change to schedules, so workers notice a change made by any process
-- (the CLI, another worker) with one cheap read.
INSERT INTO meta (key, value) VALUES ('schedules_version', '0');
CREATE TRIGGER schedules_changed_insert AFTER INSERT ON schedules BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'schedules_version';
END;
CREATE TRIGGER schedules_changed_update AFTER UPDATE ON schedules BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'schedules_version';
END;
CREATE TRIGGER schedules_changed_delete AFTER DELETE ON schedules BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'schedules_version';
END;
