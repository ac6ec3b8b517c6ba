//! The active schedules with a run due before a time, soonest first: what the dashboard's
//! week reads (by the `schedules_due` index, however many schedules there are).

use super::ScheduleStore;
use crate::db::{fetch_all, query_scalar, FromRow};
use crate::schedule::types::Schedule;
use crate::schedule::Result;

impl ScheduleStore {
    /// The first `limit` active schedules whose next run is due before `until` (UTC ms),
    /// soonest first, and how many there are.
    pub async fn due_before(&self, until: i64, limit: i64) -> Result<(Vec<Schedule>, i64)> {
        let conn = self.db.conn().await?;
        let condition = "status = 'active' AND next_run_at IS NOT NULL AND next_run_at < ?1";
        let total: i64 = query_scalar(
            &conn,
            &format!("SELECT count(*) FROM schedules WHERE {condition}"),
            [until],
        )
        .await?
        .unwrap_or(0);
        let schedules = fetch_all(
            &conn,
            &format!(
                "SELECT {} FROM schedules WHERE {condition}
                 ORDER BY next_run_at, schedule_id LIMIT ?2",
                Schedule::COLUMNS
            ),
            libsql::params![until, limit.max(0)],
        )
        .await?;
        Ok((schedules, total))
    }
}
