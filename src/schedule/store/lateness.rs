//! How late runs started, by the hour their occurrence was for, for the dashboard's
//! chart: p50 and p99 of each hour, read from a histogram the database counts (a bucket
//! per step of a roughly logarithmic scale), so a page costs one grouped read however
//! many runs there are. A percentile is known to its bucket: "at most 250 ms".

use super::history::HistorySpan;
use super::ScheduleStore;
use crate::db::{fetch_all, FromRow};
use crate::schedule::Result;

const HOUR_MS: i64 = 3_600_000;

/// The buckets' upper bounds, ms; a lateness at or past the last is in the last bucket,
/// "over an hour".
pub const BOUNDS_MS: [i64; 14] = [
    10, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000, 900_000, 3_600_000,
];

/// One hour's started runs and how late they were.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HourOfLateness {
    /// The hour's start (Unix ms, on the hour).
    pub start: i64,
    /// Runs of the hour's occurrences that started (not skipped, not backfilled).
    pub runs: i64,
    /// The bucket of the median run's lateness, and of the 99th percentile's.
    pub p50: Option<usize>,
    pub p99: Option<usize>,
}

/// Every hour of a span, oldest first, empty ones included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatenessHistory {
    pub span: HistorySpan,
    pub hours: Vec<HourOfLateness>,
}

/// A bucket in words: `≤ 250 ms`, `≤ 2.5 s`, `≤ 5 min`, `> 1 h`.
pub fn bucket_label(bucket: usize) -> String {
    let Some(&bound) = BOUNDS_MS.get(bucket) else {
        return "> 1 h".to_string();
    };
    let words = match bound {
        b if b < 1_000 => format!("{b} ms"),
        b if b < 60_000 => format!("{} s", b as f64 / 1000.0),
        b if b < 3_600_000 => format!("{} min", b / 60_000),
        _ => "1 h".to_string(),
    };
    format!("≤ {words}")
}

/// The bucket holding the `q` quantile (by rank: the ⌈q·n⌉-th smallest) of `counts`.
pub fn quantile_bucket(counts: &[i64], q: f64) -> Option<usize> {
    let total: i64 = counts.iter().sum();
    if total <= 0 {
        return None;
    }
    let rank = ((q * total as f64).ceil() as i64).clamp(1, total);
    let mut seen = 0;
    counts.iter().position(|&n| {
        seen += n;
        seen >= rank
    })
}

impl ScheduleStore {
    /// Every user's runs whose occurrences fall in the `span` up to `now`, the lateness
    /// of those that started, by hour (the operator's view: the callers check the actor).
    pub async fn lateness_history(&self, now: i64, span: HistorySpan) -> Result<LatenessHistory> {
        let this_hour = now.div_euclid(HOUR_MS) * HOUR_MS;
        let since = this_hour - (span.hours() - 1) * HOUR_MS;
        let bucket_sql: String = BOUNDS_MS
            .iter()
            .enumerate()
            .map(|(i, bound)| format!("WHEN late < {bound} THEN {i} "))
            .collect();
        let conn = self.db.conn().await?;
        let rows: Vec<BucketCount> = fetch_all(
            &conn,
            &format!(
                "SELECT hour, CASE {bucket_sql}ELSE {} END, count(*) FROM (
                   SELECT (scheduled_for - ?1) / ?2 AS hour,
                          started_at - coalesce(due_at, scheduled_for) AS late
                   FROM schedule_runs
                   WHERE scheduled_for >= ?1 AND scheduled_for < ?3
                     AND status != 'skipped' AND origin != 'backfill'
                     AND started_at IS NOT NULL) AS runs
                 GROUP BY 1, 2",
                BOUNDS_MS.len()
            ),
            libsql::params![since, HOUR_MS, this_hour + HOUR_MS],
        )
        .await?;
        let mut counts = vec![[0i64; BOUNDS_MS.len() + 1]; span.hours() as usize];
        for BucketCount(hour, bucket, n) in rows {
            let slot = usize::try_from(hour)
                .ok()
                .and_then(|h| counts.get_mut(h))
                .zip(usize::try_from(bucket).ok());
            if let Some((hour, bucket)) = slot {
                if let Some(count) = hour.get_mut(bucket) {
                    *count += n;
                }
            }
        }
        let hours = counts
            .iter()
            .enumerate()
            .map(|(i, counts)| HourOfLateness {
                start: since + i as i64 * HOUR_MS,
                runs: counts.iter().sum(),
                p50: quantile_bucket(counts, 0.5),
                p99: quantile_bucket(counts, 0.99),
            })
            .collect();
        Ok(LatenessHistory { span, hours })
    }
}

struct BucketCount(i64, i64, i64);

impl FromRow for BucketCount {
    const COLUMNS: &'static str = "";

    fn from_row(row: &libsql::Row) -> std::result::Result<Self, crate::db::DbError> {
        Ok(BucketCount(row.get(0)?, row.get(1)?, row.get(2)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn buckets_read_as_their_bounds() {
        assert_eq!(bucket_label(0), "≤ 10 ms");
        assert_eq!(bucket_label(6), "≤ 2.5 s");
        assert_eq!(bucket_label(11), "≤ 5 min");
        assert_eq!(bucket_label(13), "≤ 1 h");
        assert_eq!(bucket_label(14), "> 1 h");
    }

    proptest! {
        /// The quantile's bucket holds the ⌈q·n⌉-th smallest value, whatever the counts.
        #[test]
        fn the_quantile_is_the_ranked_values_bucket(
            counts in proptest::collection::vec(0i64..50, 15),
            q in 0.01f64..=1.0,
        ) {
            let values: Vec<usize> = counts
                .iter()
                .enumerate()
                .flat_map(|(bucket, &n)| std::iter::repeat_n(bucket, n as usize))
                .collect();
            let expected = if values.is_empty() {
                None
            } else {
                let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
                Some(values[rank - 1])
            };
            prop_assert_eq!(quantile_bucket(&counts, q), expected);
        }
    }
}
