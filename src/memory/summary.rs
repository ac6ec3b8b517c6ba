//! A session's rolling summary, written with an epoch compare-and-swap: a writer states
//! the epoch it read; if another writer got there first, the stale write is discarded
//! rather than overwriting the newer summary.

use serde::Serialize;

use super::{check_id, Memory, MemoryError, Result, SessionKey};
use crate::access::Actor;
use crate::db::finish_rows;

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct SummaryState {
    pub session_id: String,
    pub summary: Option<String>,
    /// Bumped by every applied write.
    pub epoch: i64,
    /// The last event sequence the summary covers.
    pub upper_sequence: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "lowercase")]
pub enum SummaryWrite {
    Applied {
        epoch: i64,
    },
    /// Someone wrote first; nothing was changed.
    Stale {
        current_epoch: i64,
    },
}

impl Memory {
    /// The rolling summary of a session the actor may see.
    pub async fn read_summary(&self, actor: &Actor, session_id: &str) -> Result<SummaryState> {
        check_id("session id", session_id)?;
        let key = self.session(session_id, actor.user_id()).await?.key();
        self.summary_state(&key).await
    }

    /// The rolling summary of a session the caller has already checked.
    pub(crate) async fn summary_state(&self, key: &SessionKey) -> Result<SummaryState> {
        let session_id = key.session_id();
        let conn = self.db.conn().await?;
        let mut rows = conn
            .query(
                "SELECT summary, summary_epoch, summary_upper_sequence, updated_at
                 FROM session_state WHERE session_id = ?1",
                [key.as_str()],
            )
            .await?;
        let Some(row) = rows.next().await? else {
            return Err(MemoryError::SessionNotFound(session_id.to_string()));
        };
        let state = SummaryState {
            session_id: session_id.to_string(),
            summary: row.get(0)?,
            epoch: row.get(1)?,
            upper_sequence: row.get(2)?,
            updated_at: row.get(3)?,
        };
        finish_rows(rows).await?;
        Ok(state)
    }

    /// Writes a summary of the session stored under `key` covering events up to
    /// `upper_sequence`, if the stored epoch is still `expected_epoch`.
    pub async fn write_summary(
        &self,
        key: &SessionKey,
        expected_epoch: i64,
        summary: &str,
        upper_sequence: i64,
    ) -> Result<SummaryWrite> {
        let session_id = key.session_id();
        check_id("session id", session_id)?;
        self.check_content("summary", summary)?;
        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        let mut rows = tx
            .query(
                "SELECT st.summary_epoch, s.last_sequence FROM session_state st
                 JOIN sessions s ON s.session_id = st.session_id WHERE st.session_id = ?1",
                [key.as_str()],
            )
            .await?;
        let Some(row) = rows.next().await? else {
            drop(rows);
            tx.rollback().await?;
            return Err(MemoryError::SessionNotFound(session_id.to_string()));
        };
        let (current_epoch, last_sequence): (i64, i64) = (row.get(0)?, row.get(1)?);
        finish_rows(rows).await?;
        if current_epoch != expected_epoch {
            tx.rollback().await?;
            return Ok(SummaryWrite::Stale { current_epoch });
        }
        if !(0..=last_sequence).contains(&upper_sequence) {
            tx.rollback().await?;
            return Err(MemoryError::invalid(
                "upper_sequence",
                format!("must be 0..={last_sequence} for this session, got {upper_sequence}"),
            ));
        }
        tx.execute(
            "UPDATE session_state
             SET summary = ?2, summary_epoch = ?3, summary_upper_sequence = ?4, updated_at = ?5
             WHERE session_id = ?1",
            libsql::params![
                key.as_str(),
                summary,
                expected_epoch + 1,
                upper_sequence,
                self.clock.now_ms()
            ],
        )
        .await?;
        tx.commit().await?;
        Ok(SummaryWrite::Applied {
            epoch: expected_epoch + 1,
        })
    }
}
