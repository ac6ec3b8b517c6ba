-- The dashboard's viewer keeps a time zone of their own: the instants its pages show on
-- hover are in it (unset: UTC). An unknown name is never stored.
ALTER TABLE ui_sessions ADD COLUMN time_zone TEXT;

-- When a message became a dead letter, for the outbox's history (its depth and dead
-- letters over time). Unset on older dead letters and on a retried one. (A later
-- migration that rebuilds `outbox` must carry this column and the indexes below.)
ALTER TABLE outbox ADD COLUMN dead_at BIGINT;
CREATE INDEX outbox_by_dead_at ON outbox (dead_at) WHERE dead_at IS NOT NULL;
CREATE INDEX outbox_by_delivered_at ON outbox (delivered_at) WHERE delivered_at IS NOT NULL;
CREATE INDEX outbox_by_created_at ON outbox (created_at);

-- A user's chunks over time (the dashboard's memory chart), counted from the index alone.
CREATE INDEX chunks_by_user_time ON chunks (user_id, created_at);

-- A user's notes over time, from their versions' liveness alone (never their text).
CREATE INDEX note_versions_liveness ON note_versions (user_id, note_id, version, change, changed_at);

-- The dashboard's reads of runs and schedules at 100,000 runs: each answered from an
-- index alone. The overview's last hour (started since) and its lateness p99; the
-- lateness and runs-per-hour charts (which the old (scheduled_for, status) index served
-- in part); the runs list, newest first with its tie broken by id; the schedules list,
-- newest first.
CREATE INDEX schedule_runs_by_start ON schedule_runs (started_at, origin, status, due_at, scheduled_for);
DROP INDEX schedule_runs_by_time_status;
CREATE INDEX schedule_runs_by_time_status ON schedule_runs (scheduled_for, status, origin, started_at, due_at);
DROP INDEX schedule_runs_by_time;
CREATE INDEX schedule_runs_by_time ON schedule_runs (scheduled_for, run_id);
CREATE INDEX schedules_by_created ON schedules (created_at, schedule_id);
