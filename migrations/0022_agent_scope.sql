-- Agent scope: a note may belong to one of a user's agents (agent_id) and is then seen
-- only by that agent; a note without one is shared by all of the user's agents. An
-- agent's notes are indexed in their own memory session (`memory@LEN:AGENT:USER`), so a
-- search narrows to the shared notes and one agent's by the sessions it reads.
ALTER TABLE notes ADD COLUMN agent_id TEXT;
ALTER TABLE note_versions ADD COLUMN agent_id TEXT;

-- A key names one note per user and agent (the shared notes count as one agent, '').
DROP INDEX notes_by_user_key;
CREATE UNIQUE INDEX notes_by_user_key ON notes (user_id, coalesce(agent_id, ''), key)
    WHERE key IS NOT NULL;

-- The agent a schedule's runs act as: their memory tools and context see its notes.
ALTER TABLE schedules ADD COLUMN agent_id TEXT;
