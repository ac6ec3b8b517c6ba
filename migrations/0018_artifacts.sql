-- Artifacts: files an agent produced, stored with a session. Content is stored once per
-- blake3 hash: in `data` when small, else in the content-addressed folder (data NULL,
-- in_folder 1). The file is written before its row and removed after it; the expiry
-- pass removes folder files no row references (past a grace period) and content rows no
-- artifact references.
CREATE TABLE artifact_contents (
    hash       TEXT PRIMARY KEY,
    size       INTEGER NOT NULL,
    in_folder  INTEGER NOT NULL CHECK (in_folder IN (0, 1)),
    data       BLOB,
    created_at INTEGER NOT NULL,
    CHECK ((in_folder = 1) = (data IS NULL))
);

CREATE TABLE artifacts (
    artifact_id TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL,
    -- Forgetting a session deletes its artifacts.
    session_id  TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    -- The scheduled run that produced it, when one did (runs are pruned; the id stays).
    run_id      TEXT,
    name        TEXT NOT NULL,
    mime_type   TEXT NOT NULL,
    size        INTEGER NOT NULL,
    hash        TEXT NOT NULL REFERENCES artifact_contents (hash),
    created_at  INTEGER NOT NULL
);

CREATE INDEX artifacts_by_user ON artifacts (user_id, created_at);
CREATE INDEX artifacts_by_session ON artifacts (session_id);
CREATE INDEX artifacts_by_hash ON artifacts (hash);
CREATE INDEX artifacts_by_run ON artifacts (run_id) WHERE run_id IS NOT NULL;

-- Content no artifact references any more goes with its last artifact, whether it was
-- deleted or its session was forgotten (a cascade fires this too): inline bytes leave
-- the database at once; a folder file is removed by its deleter or the expiry pass.
CREATE TRIGGER artifact_contents_unreferenced AFTER DELETE ON artifacts
WHEN NOT EXISTS (SELECT 1 FROM artifacts WHERE hash = OLD.hash)
BEGIN
    DELETE FROM artifact_contents WHERE hash = OLD.hash;
END;
