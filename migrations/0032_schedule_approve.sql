-- Which of a schedule's runs' tool calls need a person's approval: a JSON array of
-- patterns over the tool names the model sees (`server__tool`, `memory_delete`; `*` any
-- run of characters, `!` takes away); NULL: none do.
ALTER TABLE schedules ADD COLUMN approve_json TEXT;
