-- Named calendars: dates kept once in the configuration, written here by each process as
-- it opens the database, and the names a schedule refers to. A schedule's row is read with
-- its calendars' dates (see Schedule's columns), so it skips them as they are now.
CREATE TABLE calendars (
    name       TEXT PRIMARY KEY,
    dates_json TEXT NOT NULL
);
ALTER TABLE schedules ADD COLUMN calendars_json TEXT;
