-- Macros: tool chains learned from what scheduled runs did (src/consolidate/macros.rs).
-- A row is a pair (trigger → next) or a chain of three (trigger → next → next2, next2_tool
-- not ''), per user. Counts are weighted: each later run of the user in which the trigger
-- occurs multiplies them by consolidation.macros_decay before adding that run, so they
-- follow what runs do now. A row is a candidate until its support and confidence reach
-- consolidation.macros_min_support and macros_min_confidence (promoted = 1).
CREATE TABLE macros (
    user_id              TEXT NOT NULL,
    trigger_tool         TEXT NOT NULL,
    -- The trigger call's argument names, sorted and comma-separated ('' for none).
    trigger_args_pattern TEXT NOT NULL,
    next_tool            TEXT NOT NULL,
    next2_tool           TEXT NOT NULL DEFAULT '',
    -- The next call's arguments: each name seen, with its value while every occurrence
    -- had the same one, null once they differed.
    next_args_json       TEXT NOT NULL DEFAULT '{}',
    -- Weighted runs in which the pair (or chain) occurred, and in which the trigger did.
    support              REAL NOT NULL,
    trigger_runs         REAL NOT NULL,
    confidence           REAL NOT NULL,
    -- Runs in which it occurred, unweighted; hints the runtime gave from it.
    seen_count           INTEGER NOT NULL DEFAULT 0,
    use_count            INTEGER NOT NULL DEFAULT 0,
    promoted             INTEGER NOT NULL DEFAULT 0,
    first_seen_at        INTEGER NOT NULL,
    last_seen_at         INTEGER NOT NULL,
    updated_at           INTEGER NOT NULL,
    PRIMARY KEY (user_id, trigger_tool, trigger_args_pattern, next_tool, next2_tool)
) WITHOUT ROWID;

-- Weighted runs in which each trigger occurred, per user: a pair first seen late starts
-- from the trigger's whole history, not from its own first run.
CREATE TABLE macro_triggers (
    user_id              TEXT NOT NULL,
    trigger_tool         TEXT NOT NULL,
    trigger_args_pattern TEXT NOT NULL,
    runs                 REAL NOT NULL,
    last_seen_at         INTEGER NOT NULL,
    PRIMARY KEY (user_id, trigger_tool, trigger_args_pattern)
) WITHOUT ROWID;

-- The last event sequence the macros pass has mined, per scheduled session. Moves in the
-- transaction that stores what was mined, so a pass run twice changes nothing.
CREATE TABLE macro_cursors (
    user_id        TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    upper_sequence INTEGER NOT NULL,
    PRIMARY KEY (user_id, session_id)
) WITHOUT ROWID;
