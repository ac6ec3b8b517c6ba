-- Consolidation: fact provenance and supersession on notes, tombstones for deleted facts,
-- per-session cursors, and a record of every maintenance pass.

-- A note replaced by a newer version of the same fact keeps its row as history and
-- points at its successor; it leaves the search index.
ALTER TABLE notes ADD COLUMN superseded_by TEXT;
-- For extracted facts: what the fact is about ("preference:coffee"), so a changed fact
-- supersedes the old one instead of standing beside it.
ALTER TABLE notes ADD COLUMN fact_key TEXT;
CREATE INDEX notes_by_fact_key ON notes (user_id, fact_key) WHERE fact_key IS NOT NULL;

-- What a user deleted, as a hash of its normalised text (never the text itself), so
-- consolidation does not learn it again.
CREATE TABLE note_tombstones (
    user_id      TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    deleted_at   INTEGER NOT NULL,
    PRIMARY KEY (user_id, content_hash)
) WITHOUT ROWID;

-- The last event sequence fact extraction has read, per session. Advances only when the
-- pass succeeded for that session.
ALTER TABLE session_state ADD COLUMN facts_upper_sequence INTEGER NOT NULL DEFAULT 0;

CREATE TABLE maintenance_runs (
    run_id      TEXT PRIMARY KEY,
    pass        TEXT NOT NULL,
    worker_id   TEXT,
    started_at  INTEGER NOT NULL,
    finished_at INTEGER,
    status      TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed')),
    counts_json TEXT NOT NULL DEFAULT '{}',
    error       TEXT
);
CREATE INDEX maintenance_runs_recent ON maintenance_runs (started_at DESC);

-- One worker per job window: the first to insert a window's row runs it.
CREATE TABLE maintenance_windows (
    job          TEXT NOT NULL,
    window_start INTEGER NOT NULL,
    worker_id    TEXT NOT NULL,
    claimed_at   INTEGER NOT NULL,
    PRIMARY KEY (job, window_start)
) WITHOUT ROWID;
