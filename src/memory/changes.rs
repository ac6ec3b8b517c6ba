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

/// [`NOTE_EVENT`] on PostgreSQL.
const NOTE_EVENT_POSTGRES: &str = "'note.' || v.change,
    json_build_object('event', 'note.' || v.change, 'user_id', v.user_id, 'note_id', v.note_id,
        'version', v.version, 'change', v.change, 'changed_by', v.changed_by,
        'changed_at', v.changed_at, 'content', v.content, 'tags', CAST(v.tags_json AS json),
        'key', v.key, 'category', v.category, 'agent_id', v.agent_id,
        'summary', 'note ' || v.note_id || ' ' || v.change || ' by ' || v.changed_by)::text";

/// The statement's words for "a user in the JSON array parameter `param`", by engine.
fn user_in(param: &str, postgres: bool) -> String {
    if postgres {
        format!("user_id IN (SELECT value FROM json_array_elements_text(CAST({param} AS json)))")
    } else {
        format!("user_id IN (SELECT value FROM json_each({param}))")
    }
}

/// The note event's columns, by engine.
fn note_event(postgres: bool) -> &'static str {
    if postgres {
        NOTE_EVENT_POSTGRES
    } else {
        NOTE_EVENT
    }
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
        let postgres = tx.is_postgres();
        tx.execute(
            &format!(
                "INSERT INTO memory_changes (user_id, event, payload_json, created_at)
                 SELECT v.user_id, {}, ?2 FROM note_versions v
                 WHERE v.note_id = ?1
                   AND (?3 OR v.{})
                 ORDER BY v.version DESC LIMIT 1",
                note_event(postgres),
                user_in("?4", postgres)
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
        let postgres = tx.is_postgres();
        tx.execute(
            &format!(
                "INSERT INTO memory_changes (user_id, event, payload_json, created_at)
                 SELECT v.user_id, {}, ?1 FROM note_versions v
                 WHERE v.change = 'deleted' AND v.changed_at = ?1 AND v.changed_by = ?2
                   AND v.note_id IN (SELECT note_id FROM notes
                                     WHERE expires_at IS NOT NULL AND expires_at <= ?1)
                   AND (?3 OR v.{})
                 ORDER BY v.version_id",
                note_event(postgres),
                user_in("?4", postgres)
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
