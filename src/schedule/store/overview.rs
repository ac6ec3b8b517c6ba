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

/// How one schedule's runs went over a window (see [`ScheduleStore::run_stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Runs that succeeded.
    pub succeeded: i64,
    /// Runs that failed (a time-out and an interruption count).
    pub failed: i64,
    /// How long its last finished run took, start to end.
    pub last_duration_ms: Option<i64>,
}

/// The window [`ScheduleStore::run_stats`] is read over by the overview: a week.
pub const STATS_WINDOW_MS: i64 = 7 * 86_400_000;

/// At most this many schedules' figures are read at once (a page of the overview).
const STATS_BATCH: usize = 200;

impl ScheduleStore {
    /// For each of `schedule_ids` (the operator's view, a page at a time), how its runs of
    /// occurrences since `since` went, and how long its last finished run took. A schedule
    /// without runs is left out.
    pub async fn run_stats(
        &self,
        schedule_ids: &[String],
        since: i64,
    ) -> Result<BTreeMap<String, RunStats>> {
        let mut stats: BTreeMap<String, RunStats> = BTreeMap::new();
        let conn = self.db.conn().await?;
        for batch in schedule_ids.chunks(STATS_BATCH) {
            // `?1` is `since` in the first query; the ids follow it in both.
            let ids = (2..batch.len() + 2)
                .map(|n| format!("?{n}"))
                .collect::<Vec<_>>()
                .join(", ");
            let params = || {
                let mut values = vec![libsql::Value::Integer(since)];
                values.extend(batch.iter().map(|id| libsql::Value::Text(id.clone())));
                libsql::params::Params::Positional(values)
            };
            let rows: Vec<Tally> = fetch_all(
                &conn,
                &format!(
                    "SELECT schedule_id,
                        sum(CASE WHEN status = 'succeeded' THEN 1 ELSE 0 END),
                        sum(CASE WHEN status IN ('failed', 'timed_out', 'interrupted')
                                 THEN 1 ELSE 0 END)
                     FROM schedule_runs WHERE scheduled_for >= ?1 AND schedule_id IN ({ids})
                     GROUP BY schedule_id"
                ),
                params(),
            )
            .await?;
            for Tally(id, succeeded, failed) in rows {
                let entry = stats.entry(id).or_default();
                entry.succeeded = succeeded;
                entry.failed = failed;
            }
            let rows: Vec<Count> = fetch_all(
                &conn,
                &format!(
                    "SELECT schedule_id, finished_at - started_at FROM schedule_runs r
                     WHERE schedule_id IN ({ids}) AND finished_at >= ?1 AND started_at IS NOT NULL
                     AND finished_at = (SELECT max(finished_at) FROM schedule_runs x
                                        WHERE x.schedule_id = r.schedule_id)"
                ),
                params(),
            )
            .await?;
            for Count(id, took) in rows {
                stats.entry(id).or_default().last_duration_ms = Some(took);
            }
        }
        Ok(stats)
    }
}

struct Tally(String, i64, i64);

impl FromRow for Tally {
    const COLUMNS: &'static str = "";

    fn from_row(row: &libsql::Row) -> std::result::Result<Self, crate::db::DbError> {
        Ok(Tally(row.get(0)?, row.get(1)?, row.get(2)?))
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
