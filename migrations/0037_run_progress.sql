-- A run's progress while it goes: its status changes, each turn of the model, each tool
-- call and its result. `GET /v1/runs/{id}/events` streams these as Server-Sent Events;
-- `seq` counts from 1 within a run and is each event's id, so a client that lost its
-- connection resumes after the last it saw (`Last-Event-ID`). The run's end is read from
-- the run itself. Removed with the run.
CREATE TABLE run_progress (
    run_id TEXT NOT NULL REFERENCES schedule_runs (run_id) ON DELETE CASCADE,
    seq    INTEGER NOT NULL,
    kind   TEXT NOT NULL CHECK (kind IN ('status', 'turn', 'tool_call', 'tool_result')),
    body   TEXT NOT NULL,
    at     INTEGER NOT NULL,
    PRIMARY KEY (run_id, seq)
);

-- Runs across schedules, newest occurrence first (the dashboard's run list).
CREATE INDEX schedule_runs_by_time ON schedule_runs (scheduled_for DESC);
