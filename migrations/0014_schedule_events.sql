-- Runs that start from events, not from the cadence: a trigger (with its input and an
-- optional idempotency key), an upstream schedule's run finishing (a chain), an
-- occurrence of a past range (a backfill). Each waits here until one worker claims it;
-- `event_key` makes it unique per schedule (the idempotency key, the upstream run's id,
-- the occurrence's time), so the same event twice starts one run.
CREATE TABLE schedule_events (
    event_id      TEXT PRIMARY KEY,
    schedule_id   TEXT NOT NULL REFERENCES schedules (schedule_id) ON DELETE CASCADE,
    kind          TEXT NOT NULL CHECK (kind IN ('trigger', 'chain', 'backfill')),
    event_key     TEXT NOT NULL,
    input         TEXT,
    -- The time the run is recorded for: when it was triggered, or the backfilled
    -- occurrence's time.
    scheduled_for INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    -- Set by the claim that starts its run.
    run_id        TEXT,
    UNIQUE (schedule_id, event_key)
);
CREATE INDEX schedule_events_pending ON schedule_events (created_at) WHERE run_id IS NULL;
CREATE TRIGGER schedule_events_changed AFTER INSERT ON schedule_events BEGIN
    UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'schedules_version';
END;

-- A schedule may follow another: it runs when the upstream's run ends as `after_on` says.
ALTER TABLE schedules ADD COLUMN after_schedule_id TEXT;
ALTER TABLE schedules ADD COLUMN after_on TEXT
    CHECK (after_on IS NULL OR after_on IN ('succeeded', 'failed', 'finished'));
CREATE INDEX schedules_by_upstream ON schedules (after_schedule_id)
    WHERE after_schedule_id IS NOT NULL;

-- Runs say what started them. An occurrence of the cadence (or a backfilled one) is unique
-- by its time; a triggered or chained run by its event, so a trigger at the very instant
-- of an occurrence takes nothing from it. SQLite cannot change a table's UNIQUE: the
-- table is rebuilt (nothing refers to it), its rows set aside and put back.
CREATE TABLE schedule_runs_aside AS SELECT * FROM schedule_runs;
DROP TABLE schedule_runs;
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
    origin            TEXT NOT NULL DEFAULT 'cadence'
                      CHECK (origin IN ('cadence', 'trigger', 'chain', 'backfill')),
    event_id          TEXT
);
INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, attempt, status, worker_id,
    lease_expires_at, started_at, finished_at, output_summary, output, error, turn_count,
    prompt_tokens, completion_tokens, cost, notified, due_at)
SELECT run_id, schedule_id, scheduled_for, attempt, status, worker_id,
    lease_expires_at, started_at, finished_at, output_summary, output, error, turn_count,
    prompt_tokens, completion_tokens, cost, notified, due_at
FROM schedule_runs_aside;
DROP TABLE schedule_runs_aside;
CREATE UNIQUE INDEX schedule_runs_occurrence ON schedule_runs (schedule_id, scheduled_for)
    WHERE event_id IS NULL;
CREATE UNIQUE INDEX schedule_runs_by_event ON schedule_runs (event_id)
    WHERE event_id IS NOT NULL;
CREATE INDEX schedule_runs_history ON schedule_runs (schedule_id, scheduled_for DESC);
CREATE INDEX schedule_runs_running ON schedule_runs (lease_expires_at) WHERE status = 'running';
CREATE INDEX schedule_runs_running_by_schedule ON schedule_runs (schedule_id)
    WHERE status = 'running';
