-- Named calendars: the dates `nightshift run` found in its configuration, written when it
-- starts. A schedule keeps the names it skips and, beside them, their dates as they were
-- when it was stored or the calendars last changed (the worker brings them up to date then,
-- and works the next run out again), so reading a schedule needs no join.
CREATE TABLE calendars (
    name       TEXT PRIMARY KEY,
    dates_json TEXT NOT NULL
);
ALTER TABLE schedules ADD COLUMN calendars_json TEXT;
ALTER TABLE schedules ADD COLUMN calendar_dates_json TEXT;
