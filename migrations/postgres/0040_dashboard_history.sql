-- The dashboard's viewer keeps a time zone of their own: the instants its pages show on
-- hover are in it (unset: UTC). An unknown name is never stored.
ALTER TABLE ui_sessions ADD COLUMN time_zone TEXT;

-- When a message became a dead letter, for the outbox's history (its depth and dead
-- letters over time). Unset on older dead letters and on a retried one. (A later
-- migration that rebuilds `outbox` must carry this column and the indexes below.)
ALTER TABLE outbox ADD COLUMN dead_at BIGINT;
CREATE INDEX outbox_by_dead_at ON outbox (dead_at) WHERE dead_at IS NOT NULL;
CREATE INDEX outbox_by_delivered_at ON outbox (delivered_at) WHERE delivered_at IS NOT NULL;
CREATE INDEX outbox_by_created_at ON outbox (created_at);

-- A user's chunks over time (the dashboard's memory chart), counted from the index alone.
CREATE INDEX chunks_by_user_time ON chunks (user_id, created_at);

-- A user's notes over time, from their versions' liveness alone (never their text).
CREATE INDEX note_versions_liveness ON note_versions (user_id, note_id, version, change, changed_at);
