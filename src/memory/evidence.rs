//! Where a fact was said: the conversation turns behind each note the facts pass keeps
//! (`fact_evidence`), so a profile says not only what stands but when, and in which
//! turn, the user said it.

use serde::Serialize;

use super::{check_id, Memory, Result, SessionKey};
use crate::db::{fetch_all, DbError, FromRow};

/// Most turns told per fact: the latest.
pub const EVIDENCE_PER_FACT: usize = 3;

/// One turn a fact was said in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct FactEvidence {
    pub session_id: String,
    pub sequence: i64,
    /// When the turn was said (its event's time), UTC milliseconds.
    pub said_at: i64,
}

impl FromRow for FactEvidence {
    const COLUMNS: &'static str = "session_id, sequence, said_at";

    fn from_row(row: &libsql::Row) -> Result<Self, DbError> {
        Ok(FactEvidence {
            session_id: SessionKey::id_of(&row.get::<String>(0)?).to_string(),
            sequence: row.get(1)?,
            said_at: row.get(2)?,
        })
    }
}

impl Memory {
    /// Records that the user's note `note_id` was said in turn `sequence` of the session
    /// `key` (at that turn's time); recording it again changes nothing. Nothing is
    /// recorded unless both the note and the turn are the session's user's.
    pub async fn add_fact_evidence(
        &self,
        note_id: &str,
        key: &SessionKey,
        sequence: i64,
    ) -> Result<()> {
        check_id("note id", note_id)?;
        let conn = self.db.conn().await?;
        conn.execute(
            // The SELECT's WHERE also keeps SQLite from reading ON CONFLICT as a join's.
            "INSERT INTO fact_evidence (note_id, user_id, session_id, sequence, said_at)
             SELECT n.note_id, n.user_id, e.session_id, e.sequence, e.created_at
             FROM notes n JOIN events e ON e.session_id = ?2 AND e.sequence = ?3
             WHERE n.note_id = ?1 AND n.user_id = ?4
             ON CONFLICT (note_id, session_id, sequence) DO NOTHING",
            libsql::params![note_id, key.as_str(), sequence, key.user_id()],
        )
        .await?;
        Ok(())
    }

    /// The latest turns (at most [`EVIDENCE_PER_FACT`]) the user's note `note_id` was
    /// said in, latest first; with `as_of` (UTC ms), those said by then.
    pub async fn fact_evidence(
        &self,
        user_id: &str,
        note_id: &str,
        as_of: Option<i64>,
    ) -> Result<Vec<FactEvidence>> {
        check_id("user id", user_id)?;
        check_id("note id", note_id)?;
        let conn = self.db.conn().await?;
        Ok(fetch_all(
            &conn,
            &format!(
                "SELECT {} FROM fact_evidence
                 WHERE note_id = ?1 AND user_id = ?2 AND said_at <= ?3
                 ORDER BY said_at DESC, session_id DESC, sequence DESC LIMIT ?4",
                FactEvidence::COLUMNS
            ),
            libsql::params![
                note_id,
                user_id,
                as_of.unwrap_or(i64::MAX),
                EVIDENCE_PER_FACT as i64
            ],
        )
        .await?)
    }
}
