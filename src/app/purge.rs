//! Erasing a user: everything nightshift holds of them — conversations, notes and their
//! versions, the search index, state, artifacts, macros, schedules and their runs,
//! notifications waiting, API tokens — in one transaction, and a count of what went, table
//! by table. Nothing of any other user is touched: every statement names the user.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::access::Actor;
use crate::db::{query_scalar, Db, DbError};
use crate::input::{self, InputError};

/// What purging a user removed (or, for a dry run, would remove), by table.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct UserPurged {
    pub user_id: String,
    /// False for a dry run: the counts are what would go.
    pub purged: bool,
    pub removed: BTreeMap<String, i64>,
}

/// The user's rows in each table, counted before anything goes (some leave by cascade).
const COUNTS: &[(&str, &str)] = &[
    (
        "sessions",
        "SELECT count(*) FROM sessions WHERE user_id = ?1 AND kind != 'memory'",
    ),
    (
        "events",
        "SELECT count(*) FROM events WHERE session_id IN
         (SELECT session_id FROM sessions WHERE user_id = ?1)",
    ),
    (
        "summaries",
        "SELECT count(*) FROM session_state WHERE session_id IN
         (SELECT session_id FROM sessions WHERE user_id = ?1)",
    ),
    ("notes", "SELECT count(*) FROM notes WHERE user_id = ?1"),
    (
        "note_versions",
        "SELECT count(*) FROM note_versions WHERE user_id = ?1",
    ),
    (
        "note_tombstones",
        "SELECT count(*) FROM note_tombstones WHERE user_id = ?1",
    ),
    (
        "fact_evidence",
        "SELECT count(*) FROM fact_evidence WHERE user_id = ?1",
    ),
    ("chunks", "SELECT count(*) FROM chunks WHERE user_id = ?1"),
    (
        "vectors",
        "SELECT count(*) FROM chunk_vectors WHERE chunk_id IN
         (SELECT chunk_id FROM chunks WHERE user_id = ?1)",
    ),
    (
        "state_keys",
        "SELECT count(*) FROM state_entries WHERE user_id = ?1",
    ),
    (
        "artifacts",
        "SELECT count(*) FROM artifacts WHERE user_id = ?1",
    ),
    ("macros", "SELECT count(*) FROM macros WHERE user_id = ?1"),
    (
        "schedules",
        "SELECT count(*) FROM schedules WHERE user_id = ?1",
    ),
    (
        "schedule_runs",
        "SELECT count(*) FROM schedule_runs WHERE schedule_id IN
         (SELECT schedule_id FROM schedules WHERE user_id = ?1)",
    ),
    (
        "approvals",
        "SELECT count(*) FROM approvals WHERE user_id = ?1",
    ),
    ("outbox", "SELECT count(*) FROM outbox WHERE user_id = ?1"),
    (
        "digest_lines",
        "SELECT count(*) FROM digest_items WHERE user_id = ?1",
    ),
    (
        "api_tokens",
        "SELECT count(*) FROM api_tokens WHERE user_id = ?1",
    ),
];

/// The deletes, children before parents; cascades take what is not named (events,
/// summaries, vectors, the embedding queue, runs and their events).
const DELETES: &[&str] = &[
    "DELETE FROM state_entries WHERE user_id = ?1",
    "DELETE FROM artifacts WHERE user_id = ?1",
    "DELETE FROM chunks WHERE user_id = ?1",
    // Named, not left to the cascades: a server's foreign keys are its own setting.
    "DELETE FROM fact_evidence WHERE user_id = ?1",
    "DELETE FROM notes WHERE user_id = ?1",
    "DELETE FROM note_versions WHERE user_id = ?1",
    "DELETE FROM note_tombstones WHERE user_id = ?1",
    "DELETE FROM sessions WHERE user_id = ?1",
    "DELETE FROM macros WHERE user_id = ?1",
    "DELETE FROM macro_triggers WHERE user_id = ?1",
    "DELETE FROM macro_cursors WHERE user_id = ?1",
    // Its runs' approvals would go with them; named, so none outlives a purge.
    "DELETE FROM approvals WHERE user_id = ?1",
    "DELETE FROM schedules WHERE user_id = ?1",
    "DELETE FROM outbox WHERE user_id = ?1",
    // Not tied to runs (a line outlives its run): named, so no digest goes out after.
    "DELETE FROM digest_items WHERE user_id = ?1",
    "DELETE FROM api_tokens WHERE user_id = ?1",
    "DELETE FROM memory_changes WHERE user_id = ?1",
];

#[derive(Debug, thiserror::Error)]
pub enum PurgeError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl crate::error::Kind for PurgeError {
    fn kind(&self) -> crate::error::ErrorKind {
        match self {
            PurgeError::Input(_) => crate::error::ErrorKind::BadInput,
            PurgeError::Db(err) => err.kind(),
        }
    }
}

impl From<libsql::Error> for PurgeError {
    fn from(err: libsql::Error) -> Self {
        PurgeError::Db(DbError::Sql(err))
    }
}

/// Removes everything of `user_id` (or with `dry_run`, counts it). The operator may purge
/// any user; a user only themselves.
pub async fn purge_user(
    db: &Db,
    actor: &Actor,
    user_id: &str,
    dry_run: bool,
) -> Result<UserPurged, PurgeError> {
    input::check_user_id(user_id)?;
    if !actor.may_act_for(user_id) {
        return Err(InputError::new("user", "a user may purge only themselves").into());
    }
    let conn = db.conn().await?;
    let tx = conn.write_tx().await?;
    let mut removed = BTreeMap::new();
    for (table, sql) in COUNTS {
        let n: i64 = query_scalar(&tx, sql, [user_id]).await?.unwrap_or(0);
        removed.insert(table.to_string(), n);
    }
    if dry_run {
        tx.rollback().await?;
    } else {
        for sql in DELETES {
            tx.execute(sql, [user_id]).await?;
        }
        // The version counters of the user's own scope and of their sessions' (a session
        // key is the user id, U+001F, then the session id).
        tx.execute(
            "DELETE FROM state_versions WHERE (scope = 'user' AND scope_id = ?1)
             OR (scope = 'session' AND substr(scope_id, 1, length(?2)) = ?2)",
            [user_id.to_string(), format!("{user_id}\u{1f}")],
        )
        .await?;
        tx.commit().await?;
        tracing::info!(user_id, ?removed, "purged a user");
    }
    Ok(UserPurged {
        user_id: user_id.to_string(),
        purged: !dry_run,
        removed,
    })
}
