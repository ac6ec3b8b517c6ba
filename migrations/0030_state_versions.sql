-- State versions counted per scope instance (a user's, a session's, a run's, the app's)
-- instead of by one counter all state shared, whose numbers told a user how much every
-- other user wrote. Each scope starts past the shared counter as it stands now, so no
-- version handed out before is handed out again for a key deleted and set anew.
CREATE TABLE state_versions (
    scope    TEXT NOT NULL,
    scope_id TEXT NOT NULL,
    version  INTEGER NOT NULL,
    PRIMARY KEY (scope, scope_id)
) WITHOUT ROWID;

INSERT INTO meta (key, value)
SELECT 'state_version_floor',
       CAST(coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'state_version'), 0)
            AS TEXT)
WHERE true
ON CONFLICT (key) DO NOTHING;
