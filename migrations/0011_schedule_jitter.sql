-- Jitter (see src/schedule/jitter.rs): each occurrence of a schedule with jitter_secs is
-- due a fixed offset after its nominal time. next_run_at stays the time it is due (what
-- the loop waits for); next_nominal_at is that occurrence's nominal time, its identity
-- (NULL: the same as next_run_at). A run records when it was due, to measure lateness
-- from it (NULL: its scheduled_for).
ALTER TABLE schedules ADD COLUMN jitter_secs INTEGER;
ALTER TABLE schedules ADD COLUMN next_nominal_at INTEGER;
ALTER TABLE schedule_runs ADD COLUMN due_at INTEGER;
