//! The users memory holds something for: an operator's way in to one user's memory (the
//! dashboard lists them), with how much each has and when it last changed.

use std::collections::BTreeMap;

use serde::Serialize;

use super::agents::visible;
use super::{check_id, Memory, Note, Result};
use crate::db::{fetch_all, query_scalar, DbError, FromRow};

/// A user with notes or conversations, as an operator's list shows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UserMemory {
    pub user_id: String,
    /// Current notes, every agent's and the shared ones.
    pub notes: i64,
    /// Conversation and scheduled-run sessions.
    pub sessions: i64,
    /// When a note or a session last changed (UTC ms).
    pub last_active_at: i64,
}

/// One user's count of one kind of record, and its newest change.
struct Tally {
    user_id: String,
    count: i64,
    newest: i64,
}

impl FromRow for Tally {
    const COLUMNS: &'static str = "user_id, count(*), max(updated_at)";
    fn from_row(row: &libsql::Row) -> std::result::Result<Self, DbError> {
        Ok(Self {
            user_id: row.get(0)?,
            count: row.get(1)?,
            newest: row.get(2)?,
        })
    }
}

impl Memory {
    /// The users with notes or sessions, most recently active first (then by id): the
    /// first `limit` of them, and how many there are.
    pub async fn users(&self, limit: usize) -> Result<(Vec<UserMemory>, usize)> {
        let conn = self.db.conn().await?;
        let notes: Vec<Tally> = fetch_all(
            &conn,
            &format!(
                "SELECT {} FROM notes WHERE superseded_by IS NULL GROUP BY user_id",
                Tally::COLUMNS
            ),
            (),
        )
        .await?;
        let sessions: Vec<Tally> = fetch_all(
            &conn,
            &format!(
                "SELECT {} FROM sessions WHERE kind != 'memory' GROUP BY user_id",
                Tally::COLUMNS
            ),
            (),
        )
        .await?;
        let mut users: BTreeMap<String, UserMemory> = BTreeMap::new();
        let mut add = |tally: Tally, is_notes: bool| {
            let user = users
                .entry(tally.user_id.clone())
                .or_insert_with(|| UserMemory {
                    user_id: tally.user_id,
                    notes: 0,
                    sessions: 0,
                    last_active_at: i64::MIN,
                });
            if is_notes {
                user.notes = tally.count;
            } else {
                user.sessions = tally.count;
            }
            user.last_active_at = user.last_active_at.max(tally.newest);
        };
        notes.into_iter().for_each(|t| add(t, true));
        sessions.into_iter().for_each(|t| add(t, false));
        let total = users.len();
        let mut users: Vec<UserMemory> = users.into_values().collect();
        users.sort_by(|a, b| {
            b.last_active_at
                .cmp(&a.last_active_at)
                .then_with(|| a.user_id.cmp(&b.user_id))
        });
        users.truncate(limit);
        Ok((users, total))
    }

    /// The user's `limit` most recently changed notes the handle's agent sees (of a user
    /// with many, a page's worth), and how many it sees in all.
    pub async fn recent_notes(&self, user_id: &str, limit: usize) -> Result<(Vec<Note>, i64)> {
        check_id("user id", user_id)?;
        let conn = self.db.conn().await?;
        let condition = format!(
            "user_id = ?1 AND superseded_by IS NULL AND {}",
            visible("?2")
        );
        let total: i64 = query_scalar(
            &conn,
            &format!("SELECT count(*) FROM notes WHERE {condition}"),
            libsql::params![user_id, self.agent()],
        )
        .await?
        .unwrap_or(0);
        let notes = fetch_all(
            &conn,
            &format!(
                "SELECT {} FROM notes WHERE {condition}
                 ORDER BY updated_at DESC, note_id DESC LIMIT ?3",
                Note::COLUMNS
            ),
            libsql::params![user_id, self.agent(), limit as i64],
        )
        .await?;
        Ok((notes, total))
    }
}
