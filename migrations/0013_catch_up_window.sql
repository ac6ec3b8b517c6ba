-- catch_up_window_secs: an occurrence missed longer ago than this is recorded as skipped
-- instead of run, whatever the catch-up policy (NULL: no window).
ALTER TABLE schedules ADD COLUMN catch_up_window_secs INTEGER;
