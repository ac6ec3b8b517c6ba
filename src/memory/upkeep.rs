//! Upkeep of memory's own tables, for the overnight passes: expired notes, idle sessions,
//! the facts pass's per-session cursor, and the full-text index's optimisation. Memory's
//! tables are written only here and in the rest of this module.

use super::{Memory, Result, SessionKey};
use crate::db::query_first_row;

/// Where the facts pass stands in one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FactsCursor {
    /// Every event up to this sequence has been read for facts.
    pub upper_sequence: i64,
    /// The event that failed last, and how many times in a row.
    pub failed_sequence: i64,
    pub failures: i64,
}

impl Memory {
    /// Deletes notes whose time ran out (with their chunks and vectors).
    pub async fn expire_notes(&self, now: i64) -> Result<u64> {
        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        super::versions::record_expiries(&tx, self.origin(), now).await?;
        self.expiries_changed(&tx, &self.origin().label(), now)
            .await?;
        let expired = tx
            .execute(
                "DELETE FROM notes WHERE expires_at IS NOT NULL AND expires_at <= ?1",
                [now],
            )
            .await?;
        tx.commit().await?;
        Ok(expired)
    }

    /// Deletes conversation and scheduled-run sessions idle since before `cutoff`, with
    /// everything derived from them.
    pub async fn remove_idle_sessions(&self, cutoff: i64) -> Result<u64> {
        let conn = self.db.conn().await?;
        Ok(conn
            .execute(
                "DELETE FROM sessions WHERE kind != 'memory' AND updated_at < ?1",
                [cutoff],
            )
            .await?)
    }

    pub async fn facts_cursor(&self, key: &SessionKey) -> Result<FactsCursor> {
        let conn = self.db.conn().await?;
        Ok(query_first_row(
            &conn,
            "SELECT facts_upper_sequence, facts_failed_sequence, facts_failures
             FROM session_state WHERE session_id = ?1",
            [key.as_str()],
            |row| {
                Ok(FactsCursor {
                    upper_sequence: row.get(0)?,
                    failed_sequence: row.get(1)?,
                    failures: row.get(2)?,
                })
            },
        )
        .await?
        .unwrap_or_default())
    }

    /// Every event up to `upper_sequence` has been read for facts; a failure recorded for
    /// an event before that is forgotten (one after it is kept, to be tried again).
    pub async fn advance_facts_cursor(&self, key: &SessionKey, upper_sequence: i64) -> Result<()> {
        let conn = self.db.conn().await?;
        conn.execute(
            "UPDATE session_state SET facts_upper_sequence = max(facts_upper_sequence, ?2),
             facts_failures = CASE WHEN facts_failed_sequence <= ?2 THEN 0 ELSE facts_failures END,
             facts_failed_sequence = CASE WHEN facts_failed_sequence <= ?2 THEN 0
                                          ELSE facts_failed_sequence END
             WHERE session_id = ?1",
            libsql::params![key.as_str(), upper_sequence],
        )
        .await?;
        Ok(())
    }

    /// Records that the event `sequence` failed the facts pass; returns how many times in
    /// a row it has.
    pub async fn record_facts_failure(&self, key: &SessionKey, sequence: i64) -> Result<i64> {
        let conn = self.db.conn().await?;
        conn.execute(
            "UPDATE session_state SET
             facts_failures = CASE WHEN facts_failed_sequence = ?2 THEN facts_failures + 1 ELSE 1 END,
             facts_failed_sequence = ?2 WHERE session_id = ?1",
            libsql::params![key.as_str(), sequence],
        )
        .await?;
        Ok(self.facts_cursor(key).await?.failures)
    }

    /// Merges the segments of the note versions' full-text index (as-of search).
    pub async fn optimize_index(&self) -> Result<()> {
        let conn = self.db.conn().await?;
        // PostgreSQL's index of them (GIN) is kept by the server's own vacuum.
        if conn.is_postgres() {
            return Ok(());
        }
        conn.execute(
            "INSERT INTO note_versions_fts (note_versions_fts) VALUES ('optimize')",
            (),
        )
        .await?;
        Ok(())
    }
}
