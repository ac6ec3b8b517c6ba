//! Runs per hour by status, for the dashboard's chart: the last day or week of
//! occurrences, counted in the database an hour at a time.

use super::ScheduleStore;
use crate::db::{fetch_all, FromRow};
use crate::schedule::Result;

const HOUR_MS: i64 = 3_600_000;

/// How far back a history goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
pub enum HistorySpan {
    /// The last 24 hours.
    #[serde(rename = "24h")]
    Day,
    /// The last 7 days.
    #[serde(rename = "7d")]
    Week,
}

impl HistorySpan {
    pub fn hours(self) -> i64 {
        match self {
            HistorySpan::Day => 24,
            HistorySpan::Week => 7 * 24,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            HistorySpan::Day => "24h",
            HistorySpan::Week => "7d",
        }
    }
}

/// One hour's runs by how they stand.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HourOfRuns {
    /// The hour's start (Unix ms, on the hour).
    pub start: i64,
    pub succeeded: i64,
    /// Failed, timed out or interrupted.
    pub failed: i64,
    pub cancelled: i64,
    pub skipped: i64,
    /// Running or waiting for an approval.
    pub going: i64,
}

impl HourOfRuns {
    pub fn total(&self) -> i64 {
        self.succeeded + self.failed + self.cancelled + self.skipped + self.going
    }
}

/// The runs of every occurrence in a span, an hour at a time, oldest first; every hour is
/// there, empty ones included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunHistory {
    pub span: HistorySpan,
    pub hours: Vec<HourOfRuns>,
}

impl ScheduleStore {
    /// Every user's runs whose occurrences fall in the `span` up to `now`, by hour (the
    /// operator's view: the callers check the actor). The current hour is the last.
    pub async fn run_history(&self, now: i64, span: HistorySpan) -> Result<RunHistory> {
        let this_hour = now.div_euclid(HOUR_MS) * HOUR_MS;
        let since = this_hour - (span.hours() - 1) * HOUR_MS;
        let conn = self.db.conn().await?;
        let rows: Vec<HourCount> = fetch_all(
            &conn,
            "SELECT (scheduled_for - ?1) / ?2, status, count(*) FROM schedule_runs
             WHERE scheduled_for >= ?1 AND scheduled_for < ?3
             GROUP BY 1, 2",
            libsql::params![since, HOUR_MS, this_hour + HOUR_MS],
        )
        .await?;
        let mut hours: Vec<HourOfRuns> = (0..span.hours())
            .map(|i| HourOfRuns {
                start: since + i * HOUR_MS,
                ..Default::default()
            })
            .collect();
        for HourCount(index, status, n) in rows {
            let Some(hour) = usize::try_from(index).ok().and_then(|i| hours.get_mut(i)) else {
                continue;
            };
            match status.as_str() {
                "succeeded" => hour.succeeded += n,
                "failed" | "timed_out" | "interrupted" => hour.failed += n,
                "cancelled" => hour.cancelled += n,
                "skipped" => hour.skipped += n,
                _ => hour.going += n,
            }
        }
        Ok(RunHistory { span, hours })
    }
}

struct HourCount(i64, String, i64);

impl FromRow for HourCount {
    const COLUMNS: &'static str = "";

    fn from_row(row: &libsql::Row) -> std::result::Result<Self, crate::db::DbError> {
        Ok(HourCount(row.get(0)?, row.get(1)?, row.get(2)?))
    }
}
