-- A schedule's window, run limit and skipped dates (see src/schedule/bounds.rs): no
-- occurrence before starts_at or after ends_at; at most max_runs started, counted in
-- runs_started from when the limit was set; skip is a JSON array of dates and cron
-- expressions in the schedule's zone, NULL when there are none.
ALTER TABLE schedules ADD COLUMN starts_at INTEGER;
ALTER TABLE schedules ADD COLUMN ends_at INTEGER;
ALTER TABLE schedules ADD COLUMN max_runs INTEGER;
ALTER TABLE schedules ADD COLUMN runs_started INTEGER NOT NULL DEFAULT 0;
ALTER TABLE schedules ADD COLUMN skip_json TEXT;
