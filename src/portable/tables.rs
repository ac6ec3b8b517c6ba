//! What an archive holds, table by table: the line `type`, the columns (every stored column
//! but derived counters), the key that names a row, how a user's rows are selected (in the
//! archive's order). A row's owner is checked when it comes back by its `user_id`,
//! `session_id` and `schedule_id` columns (see `import`).

#[derive(Debug)]
pub(crate) struct Table {
    /// The line's `type`.
    pub kind: &'static str,
    pub table: &'static str,
    pub columns: &'static [&'static str],
    /// The columns naming one row (its primary key).
    pub key: &'static [&'static str],
    /// `WHERE … ORDER BY …` selecting one user's rows (`?1`) in archive order.
    pub select: &'static str,
    /// Columns holding text a user wrote: checked by the write paths' text rule.
    pub texts: &'static [&'static str],
    /// Columns holding conversation content: checked by the write paths' content rule
    /// (kept byte for byte, control characters and NUL included).
    pub contents: &'static [&'static str],
}

/// Columns added after archives of this version were first written, by line type: a line
/// without one reads it as null (what the database holds for rows from before the column).
pub(crate) const ADDED_LATER: &[(&str, &str)] = &[
    ("note", "agent_id"),
    ("note_version", "agent_id"),
    ("schedule", "agent_id"),
    ("schedule", "made_by_run"),
    ("schedule", "tools_json"),
    ("event", "name"),
];

/// Names, by line type: a string or null, one line within `input::MAX_NAME_BYTES`, as the
/// write paths require.
pub(crate) const NAMES: &[(&str, &str)] = &[("event", "name"), ("schedule", "name")];

/// Every exported table, in archive (and import) order: parents before children.
pub(crate) const TABLES: &[Table] = &[
    Table {
        kind: "session",
        table: "sessions",
        // vector_removals is a counter for the derived vector cache: not exported.
        columns: &[
            "session_id",
            "user_id",
            "kind",
            "title",
            "created_at",
            "updated_at",
            "last_sequence",
        ],
        key: &["session_id"],
        select: "WHERE user_id = ?1 ORDER BY session_id",
        texts: &["title"],
        contents: &[],
    },
    Table {
        kind: "event",
        table: "events",
        columns: &[
            "session_id",
            "sequence",
            "role",
            "content",
            "payload_json",
            "importance",
            "created_at",
            "name",
        ],
        key: &["session_id", "sequence"],
        select: "WHERE session_id IN (SELECT session_id FROM sessions WHERE user_id = ?1)
                 ORDER BY session_id, sequence",
        texts: &[],
        contents: &["content"],
    },
    Table {
        kind: "summary",
        table: "session_state",
        columns: &[
            "session_id",
            "state_json",
            "summary",
            "summary_epoch",
            "summary_upper_sequence",
            "updated_at",
        ],
        key: &["session_id"],
        select: "WHERE session_id IN (SELECT session_id FROM sessions WHERE user_id = ?1)
                 ORDER BY session_id",
        texts: &[],
        contents: &["summary"],
    },
    Table {
        kind: "note",
        table: "notes",
        columns: &[
            "note_id",
            "user_id",
            "content",
            "tags_json",
            "key",
            "category",
            "source",
            "fact_key",
            "superseded_by",
            "created_at",
            "updated_at",
            "expires_at",
            "agent_id",
        ],
        key: &["note_id"],
        select: "WHERE user_id = ?1 ORDER BY note_id",
        texts: &["tags_json", "key", "category"],
        contents: &["content"],
    },
    Table {
        kind: "note_version",
        table: "note_versions",
        columns: &[
            "note_id",
            "version",
            "user_id",
            "content",
            "tags_json",
            "key",
            "category",
            "source",
            "change",
            "changed_by",
            "changed_at",
            "agent_id",
        ],
        key: &["note_id", "version"],
        select: "WHERE user_id = ?1 ORDER BY note_id, version",
        texts: &["tags_json", "key", "category"],
        contents: &["content"],
    },
    Table {
        kind: "tombstone",
        table: "note_tombstones",
        columns: &["user_id", "content_hash", "deleted_at"],
        key: &["user_id", "content_hash"],
        select: "WHERE user_id = ?1 ORDER BY content_hash",
        texts: &[],
        contents: &[],
    },
    Table {
        kind: "schedule",
        table: "schedules",
        columns: &[
            "schedule_id",
            "user_id",
            "name",
            "goal",
            "cadence_json",
            "cadence_text",
            "source",
            "notify",
            "overlap",
            "catch_up",
            "max_attempts",
            "timeout_secs",
            "max_turns",
            "max_cost",
            "status",
            "status_reason",
            "created_at",
            "updated_at",
            "next_run_at",
            "last_run_at",
            "last_run_status",
            "consecutive_failures",
            "channel_id",
            "channel_context_id",
            "starts_at",
            "ends_at",
            "max_runs",
            "runs_started",
            "skip_json",
            "jitter_secs",
            "next_nominal_at",
            "catch_up_window_secs",
            "after_schedule_id",
            "after_on",
            "calendars_json",
            "calendar_dates_json",
            "agent_id",
            "made_by_run",
            "tools_json",
        ],
        key: &["schedule_id"],
        select: "WHERE user_id = ?1 ORDER BY schedule_id",
        texts: &["goal"],
        contents: &[],
    },
    Table {
        kind: "run",
        table: "schedule_runs",
        columns: &[
            "run_id",
            "schedule_id",
            "scheduled_for",
            "attempt",
            "status",
            "worker_id",
            "lease_expires_at",
            "started_at",
            "finished_at",
            "output_summary",
            "output",
            "error",
            "turn_count",
            "prompt_tokens",
            "completion_tokens",
            "cost",
            "notified",
            "due_at",
            "origin",
            "event_id",
        ],
        key: &["run_id"],
        select: "WHERE schedule_id IN (SELECT schedule_id FROM schedules WHERE user_id = ?1)
                 ORDER BY run_id",
        texts: &[],
        contents: &[],
    },
    Table {
        kind: "approval",
        table: "approvals",
        // resume_json goes too: a waiting run comes back able to go on.
        columns: &[
            "approval_id",
            "run_id",
            "schedule_id",
            "user_id",
            "tool_name",
            "arguments",
            "state",
            "decided_by",
            "reason",
            "resume_json",
            "created_at",
            "expires_at",
            "decided_at",
            "resumed_at",
        ],
        key: &["approval_id"],
        select: "WHERE user_id = ?1 ORDER BY approval_id",
        texts: &[],
        contents: &[],
    },
    Table {
        kind: "state",
        table: "state_entries",
        // run_id is set only for temp state, which is not exported.
        columns: &[
            "scope",
            "scope_id",
            "key",
            "user_id",
            "session_id",
            "value_json",
            "version",
            "created_at",
            "updated_at",
        ],
        key: &["scope", "scope_id", "key"],
        select: "WHERE user_id = ?1 AND scope IN ('user', 'session')
                 ORDER BY scope, scope_id, key",
        texts: &["key"],
        contents: &[],
    },
    Table {
        kind: "artifact",
        table: "artifacts",
        columns: &[
            "artifact_id",
            "user_id",
            "session_id",
            "run_id",
            "name",
            "mime_type",
            "size",
            "hash",
            "created_at",
        ],
        key: &["artifact_id"],
        select: "WHERE user_id = ?1 ORDER BY artifact_id",
        texts: &["name", "mime_type"],
        contents: &[],
    },
];

/// The table of a line `type`.
pub(crate) fn table_of(kind: &str) -> Option<&'static Table> {
    TABLES.iter().find(|t| t.kind == kind)
}
