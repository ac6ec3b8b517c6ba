-- The whole schema of version 33 on PostgreSQL, in one migration: the engine came after
-- libSQL's first 33, so a PostgreSQL database starts here. Each later migration is
-- written for both engines, with the same number. Every table, column, key and index is
-- the libSQL schema's (migrations/0001 to 0033), with PostgreSQL's types: 64-bit
-- integers (all times are unix milliseconds UTC), double precision reals, bytea blobs.
-- Integer columns keep 0/1 where libSQL keeps booleans, so the stores' statements read
-- the same on both engines.

-- SQLite's two-argument max and min (null when either is null), so the stores' statements
-- read the same on both engines.
CREATE FUNCTION max(bigint, bigint) RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS 'SELECT greatest($1, $2)';
CREATE FUNCTION min(bigint, bigint) RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS 'SELECT least($1, $2)';
CREATE FUNCTION max(double precision, double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS 'SELECT greatest($1, $2)';
CREATE FUNCTION min(double precision, double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS 'SELECT least($1, $2)';

-- SQLite's json_extract for the one form the stores use, a field of an object
-- (`'$.name'`); any other path is an error rather than a guess.
CREATE FUNCTION json_extract(document text, path text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
    IF path !~ '^\$\.[A-Za-z_][A-Za-z0-9_]*$' THEN
        RAISE EXCEPTION 'json_extract: only a path of the form $.name is supported, not %', path;
    END IF;
    RETURN document::json ->> substr(path, 3);
END $$;

-- SQLite's randomblob and hex, for ids made in a statement ('run-' || lower(hex(
-- randomblob(16)))): random bytes from random UUIDs (122 random bits in each 16 bytes),
-- which the server draws from its strong random source.
CREATE FUNCTION randomblob(n integer) RETURNS bytea LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    bytes bytea := ''::bytea;
BEGIN
    WHILE length(bytes) < greatest(n, 1) LOOP
        bytes := bytes || uuid_send(gen_random_uuid());
    END LOOP;
    RETURN substr(bytes, 1, greatest(n, 1));
END $$;
CREATE FUNCTION hex(bytea) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS 'SELECT upper(encode($1, ''hex''))';

-- SQLite's unixepoch('subsec'): the time now, in seconds with a fraction.
CREATE FUNCTION unixepoch(modifier text) RETURNS double precision
    LANGUAGE plpgsql VOLATILE STRICT AS $$
BEGIN
    IF modifier NOT IN ('subsec', 'subsecond') THEN
        RAISE EXCEPTION 'unixepoch: only the subsec modifier is supported, not %', modifier;
    END IF;
    RETURN extract(epoch FROM clock_timestamp());
END $$;

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
INSERT INTO meta (key, value) VALUES ('schedules_version', '0');
INSERT INTO meta (key, value) VALUES ('state_version_floor', '0');
-- The key approve and deny links are signed with, shared by every worker of the
-- database; made here, never shown. Two random UUIDs (from the server's strong random
-- source) give 244 random bits.
INSERT INTO meta (key, value)
VALUES ('approval_link_key', replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''));

CREATE TABLE sessions (
    session_id      TEXT PRIMARY KEY,
    user_id         TEXT NOT NULL,
    kind            TEXT NOT NULL CHECK (kind IN ('conversation', 'memory', 'scheduled')),
    title           TEXT,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    last_sequence   BIGINT NOT NULL DEFAULT 0,
    -- Bumped (by trigger) whenever a vector of this session is removed, so an in-memory
    -- copy of the session's vectors knows it must reload rather than append.
    vector_removals BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX sessions_by_user ON sessions (user_id);
CREATE INDEX sessions_by_id ON sessions (substr(session_id, length(user_id) + 2));

CREATE TABLE events (
    session_id   TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    sequence     BIGINT NOT NULL,
    role         TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'tool', 'system')),
    content      TEXT NOT NULL,
    payload_json TEXT NOT NULL DEFAULT '{}',
    importance   DOUBLE PRECISION NOT NULL,
    created_at   BIGINT NOT NULL,
    name         TEXT,
    PRIMARY KEY (session_id, sequence)
);

CREATE TABLE session_state (
    session_id             TEXT PRIMARY KEY REFERENCES sessions (session_id) ON DELETE CASCADE,
    state_json             TEXT NOT NULL DEFAULT '{}',
    summary                TEXT,
    summary_epoch          BIGINT NOT NULL DEFAULT 0,
    summary_upper_sequence BIGINT NOT NULL DEFAULT 0,
    updated_at             BIGINT NOT NULL,
    facts_upper_sequence   BIGINT NOT NULL DEFAULT 0,
    facts_failed_sequence  BIGINT NOT NULL DEFAULT 0,
    facts_failures         BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE notes (
    note_id       TEXT PRIMARY KEY,
    user_id       TEXT NOT NULL,
    content       TEXT NOT NULL,
    tags_json     TEXT NOT NULL DEFAULT '[]',
    key           TEXT,
    category      TEXT,
    source        TEXT NOT NULL DEFAULT 'tool',
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    expires_at    BIGINT,
    superseded_by TEXT,
    fact_key      TEXT,
    agent_id      TEXT
);
CREATE INDEX notes_by_user ON notes (user_id, updated_at DESC);
CREATE INDEX notes_by_fact_key ON notes (user_id, fact_key) WHERE fact_key IS NOT NULL;
CREATE UNIQUE INDEX notes_by_user_key ON notes (user_id, coalesce(agent_id, ''), key)
    WHERE key IS NOT NULL;

CREATE TABLE chunks (
    chunk_id       BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    session_id     TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    user_id        TEXT NOT NULL,
    note_id        TEXT REFERENCES notes (note_id) ON DELETE CASCADE,
    scope          TEXT NOT NULL,
    text           TEXT NOT NULL,
    content_hash   TEXT NOT NULL,
    sequence_start BIGINT NOT NULL,
    sequence_end   BIGINT NOT NULL,
    created_at     BIGINT NOT NULL,
    metadata_json  TEXT NOT NULL DEFAULT '{}',
    context        TEXT NOT NULL DEFAULT ''
);
CREATE INDEX chunks_by_session_hash ON chunks (session_id, content_hash);
CREATE INDEX chunks_by_note ON chunks (note_id) WHERE note_id IS NOT NULL;
CREATE INDEX chunks_by_session ON chunks (session_id);

CREATE TABLE chunk_vectors (
    vector_id  BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    chunk_id   BIGINT NOT NULL UNIQUE REFERENCES chunks (chunk_id) ON DELETE CASCADE,
    session_id TEXT NOT NULL,
    model      TEXT NOT NULL,
    embedding  BYTEA NOT NULL
);
CREATE INDEX chunk_vectors_by_session ON chunk_vectors (session_id, model, vector_id);

-- A session's in-memory vectors and keyword blocks reload when one of its chunks or
-- vectors is removed or rewritten.
CREATE FUNCTION nightshift_vectors_removed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE sessions SET vector_removals = vector_removals + 1
        WHERE session_id = OLD.session_id;
    RETURN NULL;
END $$;
CREATE TRIGGER chunk_vectors_removed AFTER DELETE ON chunk_vectors
    FOR EACH ROW EXECUTE FUNCTION nightshift_vectors_removed();
CREATE TRIGGER chunks_removed AFTER DELETE ON chunks
    FOR EACH ROW EXECUTE FUNCTION nightshift_vectors_removed();

CREATE FUNCTION nightshift_chunks_rewritten() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE sessions SET vector_removals = vector_removals + 1
        WHERE session_id IN (OLD.session_id, NEW.session_id);
    RETURN NULL;
END $$;
CREATE TRIGGER chunks_rewritten AFTER UPDATE OF text, context, session_id ON chunks
    FOR EACH ROW EXECUTE FUNCTION nightshift_chunks_rewritten();

-- A session's removal count starts anywhere, so a session deleted and made again under
-- the same id is not mistaken for the one an in-memory copy was made of.
CREATE FUNCTION nightshift_sessions_count_from_anywhere() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE sessions SET vector_removals = floor(random() * 4611686018427387904)::bigint
        WHERE session_id = NEW.session_id;
    RETURN NULL;
END $$;
CREATE TRIGGER sessions_count_from_anywhere AFTER INSERT ON sessions
    FOR EACH ROW EXECUTE FUNCTION nightshift_sessions_count_from_anywhere();

CREATE TABLE note_tombstones (
    user_id      TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    deleted_at   BIGINT NOT NULL,
    PRIMARY KEY (user_id, content_hash)
);

CREATE TABLE maintenance_runs (
    run_id      TEXT PRIMARY KEY,
    pass        TEXT NOT NULL,
    worker_id   TEXT,
    started_at  BIGINT NOT NULL,
    finished_at BIGINT,
    status      TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed')),
    counts_json TEXT NOT NULL DEFAULT '{}',
    error       TEXT
);
CREATE INDEX maintenance_runs_recent ON maintenance_runs (started_at DESC);

CREATE TABLE maintenance_windows (
    job          TEXT NOT NULL,
    window_start BIGINT NOT NULL,
    worker_id    TEXT NOT NULL,
    claimed_at   BIGINT NOT NULL,
    PRIMARY KEY (job, window_start)
);

CREATE TABLE workers (
    worker_id    TEXT PRIMARY KEY,
    host         TEXT NOT NULL,
    pid          BIGINT NOT NULL,
    version      TEXT NOT NULL,
    started_at   BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL
);

CREATE TABLE embed_queue (
    chunk_id         BIGINT PRIMARY KEY REFERENCES chunks (chunk_id) ON DELETE CASCADE,
    enqueued_at      BIGINT NOT NULL,
    claim_token      TEXT,
    claim_expires_at BIGINT
);
CREATE INDEX embed_queue_by_claim ON embed_queue (claim_token) WHERE claim_token IS NOT NULL;

CREATE TABLE api_tokens (
    token_id     TEXT PRIMARY KEY,
    name         TEXT,
    scope        TEXT NOT NULL CHECK (scope IN ('user', 'admin')),
    user_id      TEXT,
    secret_hash  TEXT NOT NULL UNIQUE,
    created_at   BIGINT NOT NULL,
    last_used_at BIGINT,
    expires_at   BIGINT,
    revoked_at   BIGINT,
    CHECK ((scope = 'admin') = (user_id IS NULL))
);

CREATE TABLE schedules (
    schedule_id          TEXT PRIMARY KEY,
    user_id              TEXT NOT NULL,
    name                 TEXT,
    goal                 TEXT NOT NULL,
    cadence_json         TEXT NOT NULL,
    cadence_text         TEXT,
    source               TEXT NOT NULL DEFAULT 'tool' CHECK (source IN ('tool', 'config')),
    notify               TEXT NOT NULL DEFAULT 'always',
    overlap              TEXT NOT NULL DEFAULT 'skip'
                         CHECK (overlap IN ('skip', 'allow', 'buffer_one', 'buffer_all', 'cancel_other')),
    catch_up             TEXT NOT NULL DEFAULT 'once' CHECK (catch_up IN ('once', 'skip', 'all')),
    max_attempts         BIGINT NOT NULL DEFAULT 3,
    timeout_secs         BIGINT,
    max_turns            BIGINT,
    max_cost             DOUBLE PRECISION,
    status               TEXT NOT NULL DEFAULT 'active'
                         CHECK (status IN ('active', 'paused', 'completed', 'failed')),
    status_reason        TEXT,
    created_at           BIGINT NOT NULL,
    updated_at           BIGINT NOT NULL,
    next_run_at          BIGINT,
    last_run_at          BIGINT,
    last_run_status      TEXT,
    consecutive_failures BIGINT NOT NULL DEFAULT 0,
    channel_id           TEXT,
    channel_context_id   TEXT,
    starts_at            BIGINT,
    ends_at              BIGINT,
    max_runs             BIGINT,
    runs_started         BIGINT NOT NULL DEFAULT 0,
    skip_json            TEXT,
    jitter_secs          BIGINT,
    next_nominal_at      BIGINT,
    catch_up_window_secs BIGINT,
    after_schedule_id    TEXT,
    after_on             TEXT
                         CHECK (after_on IS NULL OR after_on IN ('succeeded', 'failed', 'finished')),
    calendars_json       TEXT,
    calendar_dates_json  TEXT,
    agent_id             TEXT,
    made_by_run          TEXT,
    tools_json           TEXT,
    approve_json         TEXT
);
CREATE INDEX schedules_by_user ON schedules (user_id, status);
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE status = 'active';
CREATE UNIQUE INDEX schedules_by_config_name ON schedules (name) WHERE source = 'config';
CREATE INDEX schedules_by_upstream ON schedules (after_schedule_id)
    WHERE after_schedule_id IS NOT NULL;
CREATE INDEX schedules_made_by_agent ON schedules (user_id) WHERE made_by_run IS NOT NULL;

-- Workers notice a changed schedule (any process's) by this counter, and at once by the
-- notification, which PostgreSQL sends at commit (once per transaction).
CREATE FUNCTION nightshift_schedules_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE meta SET value = (CAST(value AS BIGINT) + 1)::text WHERE key = 'schedules_version';
    PERFORM pg_notify('nightshift_schedules', '');
    RETURN NULL;
END $$;
CREATE TRIGGER schedules_changed AFTER INSERT OR UPDATE OR DELETE ON schedules
    FOR EACH ROW EXECUTE FUNCTION nightshift_schedules_changed();

CREATE TABLE schedule_events (
    event_id      TEXT PRIMARY KEY,
    schedule_id   TEXT NOT NULL REFERENCES schedules (schedule_id) ON DELETE CASCADE,
    kind          TEXT NOT NULL CHECK (kind IN ('trigger', 'chain', 'backfill')),
    event_key     TEXT NOT NULL,
    input         TEXT,
    scheduled_for BIGINT NOT NULL,
    created_at    BIGINT NOT NULL,
    run_id        TEXT,
    UNIQUE (schedule_id, event_key)
);
CREATE INDEX schedule_events_pending ON schedule_events (created_at) WHERE run_id IS NULL;
CREATE TRIGGER schedule_events_changed AFTER INSERT ON schedule_events
    FOR EACH ROW EXECUTE FUNCTION nightshift_schedules_changed();

CREATE TABLE calendars (
    name       TEXT PRIMARY KEY,
    dates_json TEXT NOT NULL
);

CREATE TABLE schedule_runs (
    run_id              TEXT PRIMARY KEY,
    schedule_id         TEXT NOT NULL REFERENCES schedules (schedule_id) ON DELETE CASCADE,
    scheduled_for       BIGINT NOT NULL,
    attempt             BIGINT NOT NULL DEFAULT 1,
    status              TEXT NOT NULL CHECK (status IN
                        ('running', 'waiting', 'succeeded', 'failed', 'timed_out', 'cancelled',
                         'interrupted', 'skipped')),
    worker_id           TEXT,
    lease_expires_at    BIGINT,
    started_at          BIGINT,
    finished_at         BIGINT,
    output_summary      TEXT,
    output              TEXT,
    error               TEXT,
    turn_count          BIGINT NOT NULL DEFAULT 0,
    prompt_tokens       BIGINT NOT NULL DEFAULT 0,
    completion_tokens   BIGINT NOT NULL DEFAULT 0,
    cost                DOUBLE PRECISION NOT NULL DEFAULT 0,
    notified            BIGINT NOT NULL DEFAULT 0,
    due_at              BIGINT,
    origin              TEXT NOT NULL DEFAULT 'cadence'
                        CHECK (origin IN ('cadence', 'trigger', 'chain', 'backfill')),
    event_id            TEXT,
    cancel_requested_by TEXT
);
CREATE UNIQUE INDEX schedule_runs_occurrence ON schedule_runs (schedule_id, scheduled_for)
    WHERE event_id IS NULL;
CREATE UNIQUE INDEX schedule_runs_by_event ON schedule_runs (event_id)
    WHERE event_id IS NOT NULL;
CREATE INDEX schedule_runs_history ON schedule_runs (schedule_id, scheduled_for DESC);
CREATE INDEX schedule_runs_running ON schedule_runs (lease_expires_at) WHERE status = 'running';
CREATE INDEX schedule_runs_running_by_schedule ON schedule_runs (schedule_id)
    WHERE status = 'running';

CREATE TABLE state_entries (
    scope       TEXT NOT NULL CHECK (scope IN ('session', 'user', 'app', 'temp')),
    scope_id    TEXT NOT NULL,
    key         TEXT NOT NULL,
    user_id     TEXT,
    session_id  TEXT REFERENCES sessions (session_id) ON DELETE CASCADE,
    run_id      TEXT REFERENCES schedule_runs (run_id) ON DELETE CASCADE,
    value_json  TEXT NOT NULL,
    version     BIGINT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (scope, scope_id, key),
    CHECK ((scope = 'session') = (session_id IS NOT NULL)),
    CHECK ((scope = 'temp') = (run_id IS NOT NULL)),
    CHECK ((scope = 'app') = (user_id IS NULL))
);
CREATE INDEX state_entries_by_session ON state_entries (session_id) WHERE session_id IS NOT NULL;
CREATE INDEX state_entries_by_run ON state_entries (run_id) WHERE run_id IS NOT NULL;
CREATE INDEX state_entries_by_user ON state_entries (user_id) WHERE user_id IS NOT NULL;

CREATE TABLE state_versions (
    scope    TEXT NOT NULL,
    scope_id TEXT NOT NULL,
    version  BIGINT NOT NULL,
    PRIMARY KEY (scope, scope_id)
);

CREATE TABLE artifact_contents (
    hash       TEXT PRIMARY KEY,
    size       BIGINT NOT NULL,
    in_folder  BIGINT NOT NULL CHECK (in_folder IN (0, 1)),
    data       BYTEA,
    created_at BIGINT NOT NULL,
    CHECK ((in_folder = 1) = (data IS NULL))
);

CREATE TABLE artifacts (
    artifact_id TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL,
    session_id  TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    run_id      TEXT,
    name        TEXT NOT NULL,
    mime_type   TEXT NOT NULL,
    size        BIGINT NOT NULL,
    hash        TEXT NOT NULL REFERENCES artifact_contents (hash),
    created_at  BIGINT NOT NULL
);
CREATE INDEX artifacts_by_user ON artifacts (user_id, created_at);
CREATE INDEX artifacts_by_session ON artifacts (session_id);
CREATE INDEX artifacts_by_hash ON artifacts (hash);
CREATE INDEX artifacts_by_run ON artifacts (run_id) WHERE run_id IS NOT NULL;

-- A content no artifact refers to any more goes with its last artifact.
CREATE FUNCTION nightshift_artifact_contents_unreferenced() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM artifacts WHERE hash = OLD.hash) THEN
        DELETE FROM artifact_contents WHERE hash = OLD.hash;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER artifact_contents_unreferenced AFTER DELETE ON artifacts
    FOR EACH ROW EXECUTE FUNCTION nightshift_artifact_contents_unreferenced();

CREATE TABLE macros (
    user_id              TEXT NOT NULL,
    trigger_tool         TEXT NOT NULL,
    trigger_args_pattern TEXT NOT NULL,
    next_tool            TEXT NOT NULL,
    next2_tool           TEXT NOT NULL DEFAULT '',
    next_args_json       TEXT NOT NULL DEFAULT '{}',
    support              DOUBLE PRECISION NOT NULL,
    trigger_runs         DOUBLE PRECISION NOT NULL,
    confidence           DOUBLE PRECISION NOT NULL,
    seen_count           BIGINT NOT NULL DEFAULT 0,
    use_count            BIGINT NOT NULL DEFAULT 0,
    promoted             BIGINT NOT NULL DEFAULT 0,
    first_seen_at        BIGINT NOT NULL,
    last_seen_at         BIGINT NOT NULL,
    updated_at           BIGINT NOT NULL,
    PRIMARY KEY (user_id, trigger_tool, trigger_args_pattern, next_tool, next2_tool)
);

CREATE TABLE macro_triggers (
    user_id              TEXT NOT NULL,
    trigger_tool         TEXT NOT NULL,
    trigger_args_pattern TEXT NOT NULL,
    runs                 DOUBLE PRECISION NOT NULL,
    last_seen_at         BIGINT NOT NULL,
    PRIMARY KEY (user_id, trigger_tool, trigger_args_pattern)
);

CREATE TABLE macro_cursors (
    user_id        TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    upper_sequence BIGINT NOT NULL,
    PRIMARY KEY (user_id, session_id)
);

-- A note's versions, searched by their words: PostgreSQL's own full-text search stands in
-- for libSQL's FTS5 table (an English stemmer, as FTS5's porter tokenizer; ranked by
-- ts_rank, where FTS5 ranks by bm25).
CREATE TABLE note_versions (
    version_id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    note_id    TEXT NOT NULL,
    version    BIGINT NOT NULL,
    user_id    TEXT NOT NULL,
    content    TEXT NOT NULL,
    tags_json  TEXT NOT NULL,
    key        TEXT,
    category   TEXT,
    source     TEXT NOT NULL,
    change     TEXT NOT NULL
               CHECK (change IN ('created', 'updated', 'superseded', 'deleted', 'restored')),
    changed_by TEXT NOT NULL,
    changed_at BIGINT NOT NULL,
    agent_id   TEXT,
    words      tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
    UNIQUE (note_id, version)
);
CREATE INDEX note_versions_by_user ON note_versions (user_id, changed_at);
CREATE INDEX note_versions_words ON note_versions USING gin (words);

CREATE TABLE memory_changes (
    change_id    BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    user_id      TEXT NOT NULL,
    event        TEXT NOT NULL,
    payload_json TEXT NOT NULL,
    created_at   BIGINT NOT NULL
);
CREATE INDEX memory_changes_by_user ON memory_changes (user_id);

CREATE TABLE vector_blocks (
    session_id       TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    model            TEXT NOT NULL,
    after_vector_id  BIGINT NOT NULL,
    last_vector_id   BIGINT NOT NULL,
    removals         BIGINT NOT NULL,
    dimensions       BIGINT NOT NULL,
    row_count        BIGINT NOT NULL,
    chunk_ids        BYTEA NOT NULL,
    steps            BYTEA NOT NULL,
    codes            BYTEA NOT NULL,
    PRIMARY KEY (session_id, model, after_vector_id)
);

CREATE TABLE keyword_blocks (
    session_id     TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    field          BIGINT NOT NULL,
    after_chunk_id BIGINT NOT NULL,
    last_chunk_id  BIGINT NOT NULL,
    removals       BIGINT NOT NULL,
    format         BIGINT NOT NULL,
    row_count      BIGINT NOT NULL,
    postings       BYTEA NOT NULL,
    PRIMARY KEY (session_id, field, after_chunk_id)
);

CREATE TABLE ui_sessions (
    secret_hash TEXT PRIMARY KEY,
    token_id    TEXT NOT NULL REFERENCES api_tokens (token_id) ON DELETE CASCADE,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL
);
CREATE INDEX ui_sessions_by_token ON ui_sessions (token_id);
CREATE INDEX ui_sessions_by_expiry ON ui_sessions (expires_at);

CREATE TABLE approvals (
    approval_id  TEXT PRIMARY KEY,
    run_id       TEXT NOT NULL REFERENCES schedule_runs (run_id) ON DELETE CASCADE,
    schedule_id  TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    tool_name    TEXT NOT NULL,
    arguments    TEXT NOT NULL,
    state        TEXT NOT NULL DEFAULT 'pending'
                 CHECK (state IN ('pending', 'approved', 'denied', 'expired')),
    decided_by   TEXT,
    reason       TEXT,
    resume_json  TEXT,
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    decided_at   BIGINT,
    resumed_at   BIGINT
);
CREATE INDEX approvals_by_user ON approvals (user_id, created_at DESC);
CREATE INDEX approvals_by_run ON approvals (run_id);
CREATE INDEX approvals_pending ON approvals (expires_at) WHERE state = 'pending';
CREATE INDEX approvals_to_resume ON approvals (decided_at)
    WHERE state != 'pending' AND resumed_at IS NULL;

CREATE TABLE outbox (
    message_id         TEXT PRIMARY KEY,
    idempotency_key    TEXT NOT NULL UNIQUE,
    kind               TEXT NOT NULL
                       CHECK (kind IN ('run', 'failing', 'paused', 'memory', 'approval')),
    run_id             TEXT,
    schedule_id        TEXT,
    user_id            TEXT NOT NULL,
    channel_id         TEXT NOT NULL,
    channel_context_id TEXT,
    priority           TEXT NOT NULL CHECK (priority IN ('low', 'normal', 'high')),
    payload_json       TEXT NOT NULL,
    status             TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'dead')),
    attempts           BIGINT NOT NULL DEFAULT 0,
    progress           BIGINT NOT NULL DEFAULT 0,
    next_attempt_at    BIGINT NOT NULL,
    expires_at         BIGINT NOT NULL,
    last_error         TEXT,
    lease_owner        TEXT,
    lease_expires_at   BIGINT,
    created_at         BIGINT NOT NULL,
    delivered_at       BIGINT
);
CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE status = 'pending';
CREATE INDEX outbox_by_status ON outbox (status, created_at);
CREATE INDEX outbox_pending_by_channel ON outbox (channel_id) WHERE status = 'pending';
