-- The running run of a schedule, found without reading its history: the scheduler leaves
-- out of its due list every schedule whose next occurrence must wait for a running one
-- (overlap = 'buffer_one' or catch_up = 'all'), instead of trying, and failing, to claim
-- it in a write transaction on every pass.
CREATE INDEX schedule_runs_running_by_schedule ON schedule_runs (schedule_id)
    WHERE status = 'running';
