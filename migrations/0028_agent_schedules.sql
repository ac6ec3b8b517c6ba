-- Schedules an agent made during a run (the schedule_follow_up tool): the run that made
-- each, so they can be told apart, counted against their own per-user cap, and traced.
ALTER TABLE schedules ADD COLUMN made_by_run TEXT;

CREATE INDEX schedules_made_by_agent ON schedules (user_id)
    WHERE made_by_run IS NOT NULL;
