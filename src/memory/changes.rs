//! Memory change events: for users whose changes go to a channel, each change to their
//! memory (a note saved, updated, superseded, deleted, restored; a session forgotten; a
//! consolidation run that changed their notes, with its counts) is
//! written to `memory_changes` in the transaction that makes it, so no change is lost and
//! none is told that did not happen. The worker moves them into the outbox
//! (`notify::changes`).

use std::collections::HashSet;
use std::sync::Arc;

use super::{Memory, Result};
use crate::db::WriteTx;

/// Whose changes are recorded: everyone's, or some users'. Empty by default (off).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangeEvents {
    all: bool,
    users: Arc<HashSet<String>>,
}

impl ChangeEvents {
    pub fn new(all: bool, users: impl IntoIterator<Item = String>) -> Self {
        Self {
            all,
            users: Arc::new(users.into_iter().collect()),
        }
    }

    /// Whether any change is recorded at all.
    pub fn any(&self) -> bool {
        self.all || !self.users.is_empty()
    }

    pub fn wants(&self, user_id: &str) -> bool {
        self.all || self.users.contains(user_id)
    }

    /// The users as a JSON array, for a statement's `json_each`.
    fn users_json(&self) -> String {
        serde_json::to_string(&*self.users).unwrap_or_else(|_| "[]".into())
    }
}

/// The event of a note version `v`: what a subscriber needs to keep a copy in step.
const NOTE_EVENT: &str = "'note.' || v.change,
    json_object('event', 'note.' || v.change, 'user_id', v.user_id, 'note_id', v.note_id,
        'version', v.version, 'change', v.change, 'changed_by', v.changed_by,
        'changed_at', v.changed_at, 'content', v.content, 'tags', json(v.tags_json),
        'key', v.key, 'category', v.category, 'agent_id', v.agent_id,
        'summary', 'note ' || v.note_id || ' ' || v.change || ' by ' || v.changed_by)";

/// The statement's words for "a user in the JSON array parameter `param`", by engine.
fn user_in(param: &str, postgres: bool) -> String {
    if postgres {
        format!("user_id IN (SELECT value FROM json_array_elements_text(CAST({param} AS json)))")
    } else {
        format!("user_id IN (SELECT value FROM json_each({param}))")
    }
}

/// The columns of a note version `v` its event is made of, on PostgreSQL (see
/// [`note_events_postgres`]).
const NOTE_EVENT_COLUMNS: &str = "v.user_id, v.note_id, v.version, v.change, v.changed_by,
    v.changed_at, v.content, v.tags_json, v.key, v.category, v.agent_id";

/// On PostgreSQL a note's event is made here rather than by the statement: its text may
/// hold U+0000, which PostgreSQL's text (and so its JSON functions) cannot, and which the
/// engine stores escaped (`db::postgres::value`). `versions` selects
/// [`NOTE_EVENT_COLUMNS`]; each row becomes the event [`NOTE_EVENT`] makes on SQLite.
async fn note_events_postgres(
    tx: &WriteTx,
    versions: &str,
    params: impl libsql::params::IntoParams,
    now: i64,
) -> Result<()> {
    let mut rows = tx.query(versions, params).await?;
    let mut events = Vec::new();
    while let Some(row) = rows.next().await? {
        let (user_id, note_id, change, changed_by): (String, String, String, String) =
            (row.get(0)?, row.get(1)?, row.get(3)?, row.get(4)?);
        let tags_json: String = row.get(7)?;
        let payload = serde_json::json!({
            "event": format!("note.{change}"),
            "user_id": user_id,
            "note_id": note_id,
            "version": row.get::<i64>(2)?,
            "change": change,
            "changed_by": changed_by,
            "changed_at": row.get::<i64>(5)?,
            "content": row.get::<String>(6)?,
            "tags": serde_json::from_str::<serde_json::Value>(&tags_json)
                .unwrap_or(serde_json::Value::Null),
            "key": row.get::<Option<String>>(8)?,
            "category": row.get::<Option<String>>(9)?,
            "agent_id": row.get::<Option<String>>(10)?,
            "summary": format!("note {note_id} {change} by {changed_by}"),
        });
        events.push((user_id, format!("note.{change}"), payload.to_string()));
    }
    drop(rows);
    for (user_id, event, payload) in events {
        tx.execute(
            "INSERT INTO memory_changes (user_id, event, payload_json, created_at)
             VALUES (?1, ?2, ?3, ?4)",
            libsql::params![user_id, event, payload, now],
        )
        .await?;
    }
    Ok(())
}

impl Memory {
    /// The same store, recording the changes of the users `changes` names.
    pub fn with_change_events(mut self, changes: ChangeEvents) -> Self {
        self.changes = changes;
        self
    }

    /// Records the newest version of `note_id` as a change event, if its user wants them.
    pub(super) async fn note_changed(&self, tx: &WriteTx, note_id: &str, now: i64) -> Result<()> {
        if !self.changes.any() {
            return Ok(());
        }
        if tx.is_postgres() {
            return note_events_postgres(
                tx,
                &format!(
                    "SELECT {NOTE_EVENT_COLUMNS} FROM note_versions v
                     WHERE v.note_id = ?1 AND (?2 OR v.{})
                     ORDER BY v.version DESC LIMIT 1",
                    user_in("?3", true)
                ),
                libsql::params![note_id, self.changes.all, self.changes.users_json()],
                now,
            )
            .await;
        }
        tx.execute(
            &format!(
                "INSERT INTO memory_changes (user_id, event, payload_json, created_at)
                 SELECT v.user_id, {NOTE_EVENT}, ?2 FROM note_versions v
                 WHERE v.note_id = ?1
                   AND (?3 OR v.{})
                 ORDER BY v.version DESC LIMIT 1",
                user_in("?4", false)
            ),
            libsql::params![note_id, now, self.changes.all, self.changes.users_json()],
        )
        .await?;
        Ok(())
    }

    /// Records the deletions the expiry pass just wrote as versions (at `now`, by
    /// `changed_by`), for the users who want them.
    pub(super) async fn expiries_changed(
        &self,
        tx: &WriteTx,
        changed_by: &str,
        now: i64,
    ) -> Result<()> {
        if !self.changes.any() {
            return Ok(());
        }
        if tx.is_postgres() {
            return note_events_postgres(
                tx,
                &format!(
                    "SELECT {NOTE_EVENT_COLUMNS} FROM note_versions v
                     WHERE v.change = 'deleted' AND v.changed_at = ?1 AND v.changed_by = ?2
                       AND v.note_id IN (SELECT note_id FROM notes
                                         WHERE expires_at IS NOT NULL AND expires_at <= ?1)
                       AND (?3 OR v.{})
                     ORDER BY v.version_id",
                    user_in("?4", true)
                ),
                libsql::params![now, changed_by, self.changes.all, self.changes.users_json()],
                now,
            )
            .await;
        }
        tx.execute(
            &format!(
                "INSERT INTO memory_changes (user_id, event, payload_json, created_at)
                 SELECT v.user_id, {NOTE_EVENT}, ?1 FROM note_versions v
                 WHERE v.change = 'deleted' AND v.changed_at = ?1 AND v.changed_by = ?2
                   AND v.note_id IN (SELECT note_id FROM notes
                                     WHERE expires_at IS NOT NULL AND expires_at <= ?1)
                   AND (?3 OR v.{})
                 ORDER BY v.version_id",
                user_in("?4", false)
            ),
            libsql::params![now, changed_by, self.changes.all, self.changes.users_json()],
        )
        .await?;
        Ok(())
    }

    /// Records that `session_id` of `user_id` was forgotten, if the user wants changes.
    pub(super) async fn session_forgotten(
        &self,
        tx: &WriteTx,
        user_id: &str,
        session_id: &str,
        now: i64,
    ) -> Result<()> {
        if !self.changes.wants(user_id) {
            return Ok(());
        }
        let payload = serde_json::json!({
            "event": "session.forgotten",
            "user_id": user_id,
            "session_id": session_id,
            "changed_by": self.origin().label(),
            "changed_at": now,
            "summary": format!("session {session_id} forgotten"),
        });
        tx.execute(
            "INSERT INTO memory_changes (user_id, event, payload_json, created_at)
             VALUES (?1, 'session.forgotten', ?2, ?3)",
            libsql::params![user_id, payload.to_string(), now],
        )
        .await?;
        Ok(())
    }

    /// Records, for each user who wants changes and whose notes the consolidation passes
    /// `passes` changed between `started_at` and `finished_at`, one `consolidation.finished`
    /// event with that user's own counts (notes created, superseded, deleted): counts of
    /// the whole run would tell one user about others. One statement: all or none.
    /// Returns how many were recorded.
    pub async fn consolidation_finished(
        &self,
        passes: &[&str],
        started_at: i64,
        finished_at: i64,
    ) -> Result<u64> {
        if !self.changes.any() {
            return Ok(0);
        }
        let passes = serde_json::to_string(passes).unwrap_or_else(|_| "[]".into());
        let conn = self.db.conn().await?;
        let postgres = conn.is_postgres();
        let sql = if postgres {
            "INSERT INTO memory_changes (user_id, event, payload_json, created_at)
             SELECT user_id, 'consolidation.finished',
               json_build_object('event', 'consolidation.finished', 'user_id', user_id,
                 'passes', CAST(?3 AS json), 'started_at', CAST(?1 AS BIGINT),
                 'finished_at', CAST(?2 AS BIGINT),
                 'counts', json_build_object(
                    'notes_created', count(*) FILTER (WHERE change = 'created'),
                    'notes_superseded', count(*) FILTER (WHERE change = 'superseded'),
                    'notes_deleted', count(*) FILTER (WHERE change = 'deleted')),
                 'summary', 'consolidation changed ' || count(*) || ' note versions')::text,
               ?2
             FROM note_versions
             WHERE changed_by LIKE 'consolidation:%' AND changed_at >= ?1 AND changed_at <= ?2
               AND (?4 OR user_id IN (SELECT value FROM json_array_elements_text(CAST(?5 AS json))))
             GROUP BY user_id ORDER BY user_id"
        } else {
            "INSERT INTO memory_changes (user_id, event, payload_json, created_at)
             SELECT user_id, 'consolidation.finished',
               json_object('event', 'consolidation.finished', 'user_id', user_id,
                 'passes', json(?3), 'started_at', ?1, 'finished_at', ?2,
                 'counts', json_object(
                    'notes_created', sum(change = 'created'),
                    'notes_superseded', sum(change = 'superseded'),
                    'notes_deleted', sum(change = 'deleted')),
                 'summary', 'consolidation changed ' || count(*) || ' note versions'),
               ?2
             FROM note_versions
             WHERE changed_by LIKE 'consolidation:%' AND changed_at >= ?1 AND changed_at <= ?2
               AND (?4 OR user_id IN (SELECT value FROM json_each(?5)))
             GROUP BY user_id ORDER BY user_id"
        };
        Ok(conn
            .execute(
                sql,
                libsql::params![
                    started_at,
                    finished_at,
                    passes,
                    self.changes.all,
                    self.changes.users_json()
                ],
            )
            .await?)
    }
}
