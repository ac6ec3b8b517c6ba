-- A rerun may see memory as it was when the run it repeats ran
-- (`schedule rerun --memory-as-of-original`): the instant is kept on the event that
-- queues it and on the run it starts, so the run's context, its memory tools and its
-- record all read it. Unset: memory as it is.
ALTER TABLE schedule_events ADD COLUMN memory_as_of BIGINT;
ALTER TABLE schedule_runs ADD COLUMN memory_as_of BIGINT;

-- The dashboard's runs per hour by status: the hours' runs counted from the index alone.
CREATE INDEX schedule_runs_by_time_status ON schedule_runs (scheduled_for, status);
