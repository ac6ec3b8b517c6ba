-- Schedules an agent made during a run (the schedule_follow_up tool): the run that made
-- each, so they can be told apart, counted against their own per-user cap, and traced.
ALTER TABLE schedules ADD COLUMN made_by_run TEXT;

-- Which tools from MCP servers a schedule's runs may use: a JSON array of patterns over
-- `server__tool` names (`*` any run of characters, `!` takes away); NULL: all granted.
ALTER TABLE schedules ADD COLUMN tools_json TEXT;

CREATE INDEX schedules_made_by_agent ON schedules (user_id)
    WHERE made_by_run IS NOT NULL;
