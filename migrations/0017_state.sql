-- Scoped key-value state: one JSON value per key, the key's prefix deciding its scope.
-- A key without a prefix belongs to a session (and goes with it); `user:` keys to all of
-- one user's sessions; `app:` keys to every user (written by an admin only); `temp:` keys
-- to one run, cleared when the run ends and, after a crash, by the expiry pass.
CREATE TABLE state_entries (
    scope       TEXT NOT NULL CHECK (scope IN ('session', 'user', 'app', 'temp')),
    -- The session's id, the user's id, '' for app state, the run's id for temp state.
    scope_id    TEXT NOT NULL,
    -- As the caller wrote it, prefix included.
    key         TEXT NOT NULL,
    -- The user the entry belongs to; NULL for app state.
    user_id     TEXT,
    session_id  TEXT REFERENCES sessions (session_id) ON DELETE CASCADE,
    run_id      TEXT REFERENCES schedule_runs (run_id) ON DELETE CASCADE,
    value_json  TEXT NOT NULL,
    -- Taken from one counter for all state, so a version is never reused: a key deleted
    -- and set again does not come back at a version a compare-and-set saw before.
    version     INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (scope, scope_id, key),
    CHECK ((scope = 'session') = (session_id IS NOT NULL)),
    CHECK ((scope = 'temp') = (run_id IS NOT NULL)),
    CHECK ((scope = 'app') = (user_id IS NULL))
);
CREATE INDEX state_entries_by_session ON state_entries (session_id) WHERE session_id IS NOT NULL;
CREATE INDEX state_entries_by_run ON state_entries (run_id) WHERE run_id IS NOT NULL;
CREATE INDEX state_entries_by_user ON state_entries (user_id) WHERE user_id IS NOT NULL;
