-- A rerun: a past run's occurrence run again with the same input, as a new run linked to
-- the one it repeats (`schedule rerun`, `schedule replay`). The event that queues it and
-- the run it starts both name that run.
ALTER TABLE schedule_events ADD COLUMN parent_run_id TEXT;
ALTER TABLE schedule_runs ADD COLUMN parent_run_id TEXT;
CREATE INDEX schedule_events_by_parent ON schedule_events (parent_run_id)
    WHERE parent_run_id IS NOT NULL;
