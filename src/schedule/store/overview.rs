//! The schedules at a glance, for an operator: how many in each state, which keep failing,
//! what is due next, and how the last hour's runs went.

use std::collections::BTreeMap;

use super::ScheduleStore;
use crate::db::{fetch_all, query_scalar, Conn, FromRow};
use crate::schedule::types::Schedule;
use crate::schedule::Result;

/// The window the run figures cover.
pub const RUNS_WINDOW_MS: i64 = 3_600_000;

/// Schedules due next that an overview lists.
const NEXT_DUE: i64 = 5;

/// Counts of rows by a text column.
pub type Counts = BTreeMap<String, i64>;

/// What [`ScheduleStore::overview`] reads.
#[derive(Debug, Clone)]
pub struct ScheduleOverview {
    /// Schedules by status (every status, zeros included).
    pub by_status: Counts,
    /// Active schedules whose last run failed.
    pub failing: i64,
    /// The active schedules due soonest, earliest first.
    pub next_due: Vec<Schedule>,
    /// The runs started in the last hour, by status.
    pub runs_last_hour: Counts,
    /// How late those runs started (from when they were due: scheduled_for, moved by
    /// jitter), 99th percentile.
    pub lateness_p99_ms: Option<i64>,
}

impl ScheduleStore {
    /// Every schedule's state at `now`, whoever owns it: for the operator only (the
    /// callers check that the actor is the operator).
    pub async fn overview(&self, now: i64) -> Result<ScheduleOverview> {
        let conn = self.db.conn().await?;
        let mut by_status = counts(
            &conn,
            "SELECT status, count(*) FROM schedules GROUP BY status",
            (),
        )
        .await?;
        for status in crate::schedule::types::ScheduleStatus::ALL {
            by_status.entry(status.to_string()).or_insert(0);
        }
        let failing = query_scalar(
            &conn,
            "SELECT count(*) FROM schedules WHERE status = 'active' AND consecutive_failures > 0",
            (),
        )
        .await?
        .unwrap_or(0);
        let next_due = fetch_all(
            &conn,
            &format!(
                "SELECT {} FROM schedules WHERE status = 'active' AND next_run_at IS NOT NULL
                 ORDER BY next_run_at, schedule_id LIMIT ?1",
                Schedule::COLUMNS
            ),
            [NEXT_DUE],
        )
        .await?;
        let since = now.saturating_sub(RUNS_WINDOW_MS);
        let runs_last_hour = counts(
            &conn,
            "SELECT status, count(*) FROM schedule_runs WHERE started_at >= ?1 GROUP BY status",
            [since],
        )
        .await?;
        let started: i64 = runs_last_hour.values().sum();
        // The 99th percentile by rank, read in the database: the row 1 % from the top.
        let lateness_p99_ms = if started == 0 {
            None
        } else {
            query_scalar(
                &conn,
                "SELECT max(started_at - coalesce(due_at, scheduled_for), 0) FROM schedule_runs
                 WHERE started_at >= ?1 AND origin != 'backfill' ORDER BY started_at - coalesce(due_at, scheduled_for) DESC
                 LIMIT 1 OFFSET ?2",
                libsql::params![since, started / 100],
            )
            .await?
        };
        Ok(ScheduleOverview {
            by_status,
            failing,
            next_due,
            runs_last_hour,
            lateness_p99_ms,
        })
    }
}

struct Count(String, i64);

impl FromRow for Count {
    const COLUMNS: &'static str = "";

    fn from_row(row: &libsql::Row) -> std::result::Result<Self, crate::db::DbError> {
        Ok(Count(row.get(0)?, row.get(1)?))
    }
}

async fn counts(
    conn: &Conn,
    sql: &str,
    params: impl libsql::params::IntoParams + Send,
) -> std::result::Result<Counts, crate::db::DbError> {
    let rows: Vec<Count> = fetch_all(conn, sql, params).await?;
    Ok(rows.into_iter().map(|Count(k, v)| (k, v)).collect())
}
