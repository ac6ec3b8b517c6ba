//! Where a fact was said: the conversation turns behind each note the facts pass keeps
//! (`fact_evidence`), so a profile says not only what stands but when, and in which
//! turn, the user said it. A note whose text is changed by hand loses them: they were
//! evidence of the old text.

use std::collections::HashMap;

use serde::Serialize;

use super::in_list::placeholders;
use super::{check_id, Memory, Result, SessionKey};
use crate::db::{fetch_all, DbError, FromRow};

/// Most turns told per fact: the latest.
pub const EVIDENCE_PER_FACT: usize = 3;

/// One turn a fact was said in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct FactEvidence {
    pub session_id: String,
    pub sequence: i64,
    /// When the turn was said (its event's time, never later than when it was
    /// recorded), UTC milliseconds.
    pub said_at: i64,
}

/// A note's evidence row, as read for several notes at once.
struct NoteEvidence {
    note_id: String,
    evidence: FactEvidence,
}

impl FromRow for NoteEvidence {
    const COLUMNS: &'static str = "note_id, session_id, sequence, said_at";

    fn from_row(row: &libsql::Row) -> Result<Self, DbError> {
        Ok(NoteEvidence {
            note_id: row.get(0)?,
            evidence: FactEvidence {
                session_id: SessionKey::id_of(&row.get::<String>(1)?).to_string(),
                sequence: row.get(2)?,
                said_at: row.get(3)?,
            },
        })
    }
}

impl Memory {
    /// Records that the user's note `note_id` was said in turn `sequence` of the session
    /// `key`, at that turn's time (or now, for a turn stamped later: a clock ahead must
    /// not make a fact look newer than what is said after it); recording it again
    /// changes nothing. Nothing is recorded unless the note and the turn are the
    /// session's user's, and the note is of this handle's scope: a turn of an agent's
    /// private session is evidence only for that agent's notes.
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
             SELECT n.note_id, n.user_id, e.session_id, e.sequence,
                    CASE WHEN e.created_at > ?5 THEN ?5 ELSE e.created_at END
             FROM notes n JOIN events e ON e.session_id = ?2 AND e.sequence = ?3
             WHERE n.note_id = ?1 AND n.user_id = ?4
               AND coalesce(n.agent_id, '') = coalesce(?6, '')
             ON CONFLICT (note_id, session_id, sequence) DO NOTHING",
            libsql::params![
                note_id,
                key.as_str(),
                sequence,
                key.user_id(),
                self.clock.now_ms(),
                self.agent()
            ],
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
        check_id("note id", note_id)?;
        let mut found = self
            .evidence_of(user_id, &[note_id.to_string()], as_of)
            .await?;
        Ok(found.remove(note_id).unwrap_or_default())
    }

    /// [`Memory::fact_evidence`] of several of the user's notes, in one read.
    pub(super) async fn evidence_of(
        &self,
        user_id: &str,
        note_ids: &[String],
        as_of: Option<i64>,
    ) -> Result<HashMap<String, Vec<FactEvidence>>> {
        check_id("user id", user_id)?;
        let mut by_note: HashMap<String, Vec<FactEvidence>> = HashMap::new();
        if note_ids.is_empty() {
            return Ok(by_note);
        }
        let mut params: Vec<libsql::Value> = vec![
            user_id.into(),
            as_of.unwrap_or(i64::MAX).into(),
            (EVIDENCE_PER_FACT as i64).into(),
        ];
        params.extend(note_ids.iter().map(|id| libsql::Value::from(id.as_str())));
        let rows: Vec<NoteEvidence> = fetch_all(
            &self.db.conn().await?,
            &evidence_sql(note_ids.len()),
            params,
        )
        .await?;
        for row in rows {
            by_note.entry(row.note_id).or_default().push(row.evidence);
        }
        Ok(by_note)
    }
}

/// The latest `?3` evidence rows of each of `count` notes (`?4`…) of user `?1` said by
/// `?2`.
pub(super) fn evidence_sql(count: usize) -> String {
    format!(
        "SELECT {columns} FROM (
             SELECT {columns}, ROW_NUMBER() OVER (PARTITION BY note_id
                 ORDER BY said_at DESC, session_id DESC, sequence DESC) AS latest
             FROM fact_evidence
             WHERE {user} AND said_at <= ?2 AND note_id IN ({})
         ) AS ranked WHERE latest <= ?3
         ORDER BY note_id, latest",
        placeholders(4, count),
        columns = NoteEvidence::COLUMNS,
        user = super::in_list::of_user("user_id"),
    )
}
