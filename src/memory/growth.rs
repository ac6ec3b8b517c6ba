//! How one user's memory grew, a day at a time, for the dashboard's chart: their notes at
//! the end of each day (from the notes' versions, so a note deleted or superseded since
//! counts on the days it stood) and their chunks (the conversation and note passages
//! search reads; those of a deleted note or conversation leave no trace, so the chunks
//! are the ones kept now, by the day each was written).

use super::{check_id, Memory, Result};
use crate::db::{fetch_all, IndexedCount};

const DAY_MS: i64 = 86_400_000;
/// How many days a growth chart covers.
pub const GROWTH_DAYS: i64 = 30;

/// One day of a user's memory (UTC days).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DayOfMemory {
    /// The day's start (Unix ms, midnight UTC).
    pub start: i64,
    /// Current notes at the day's end (every agent's and the shared ones), or now for today.
    pub notes: i64,
    /// Chunks written by the day's end that are still kept.
    pub chunks: i64,
    /// Notes that came into being on the day (written, or restored) less those deleted or
    /// superseded on it.
    pub notes_change: i64,
    /// Chunks written on the day.
    pub chunks_written: i64,
}

impl Memory {
    /// `user`'s notes and chunks over the last [`GROWTH_DAYS`] days up to `now`, oldest
    /// first, every day there (today the last).
    pub async fn growth(&self, user: &str, now: i64) -> Result<Vec<DayOfMemory>> {
        check_id("user_id", user)?;
        let today = now.div_euclid(DAY_MS) * DAY_MS;
        let since = today - (GROWTH_DAYS - 1) * DAY_MS;
        let until = today + DAY_MS;
        let conn = self.db.conn().await?;
        // A version counts +1 when it makes its note current and -1 when it ends it
        // (deleted, superseded): its liveness less the one before it. Day -1 gathers
        // everything before the span.
        let notes: Vec<IndexedCount> = fetch_all(
            &conn,
            "SELECT CASE WHEN changed_at < ?2 THEN -1 ELSE (changed_at - ?2) / ?3 END,
                    CAST(sum(delta) AS BIGINT)
             FROM (SELECT changed_at,
                          live - coalesce(lag(live) OVER (PARTITION BY note_id ORDER BY version), 0)
                              AS delta
                   FROM (SELECT note_id, version, changed_at,
                                CASE WHEN change IN ('deleted', 'superseded') THEN 0 ELSE 1 END
                                    AS live
                         FROM note_versions WHERE user_id = ?1) AS versions) AS deltas
             WHERE changed_at < ?4
             GROUP BY 1",
            libsql::params![user, since, DAY_MS, until],
        )
        .await?;
        let chunks: Vec<IndexedCount> = fetch_all(
            &conn,
            "SELECT CASE WHEN created_at < ?2 THEN -1 ELSE (created_at - ?2) / ?3 END, count(*)
             FROM chunks WHERE user_id = ?1 AND created_at < ?4
             GROUP BY 1",
            libsql::params![user, since, DAY_MS, until],
        )
        .await?;
        Ok(tally(since, &notes, &chunks))
    }
}

/// The days from `since`, each with its counts and the running totals (day -1 is the
/// total before the span).
fn tally(since: i64, notes: &[IndexedCount], chunks: &[IndexedCount]) -> Vec<DayOfMemory> {
    let mut days: Vec<DayOfMemory> = (0..GROWTH_DAYS)
        .map(|i| DayOfMemory {
            start: since + i * DAY_MS,
            ..Default::default()
        })
        .collect();
    let mut before = [0i64; 2];
    for (series, counts) in [notes, chunks].into_iter().enumerate() {
        for &IndexedCount(day, n) in counts {
            match usize::try_from(day).ok().and_then(|i| days.get_mut(i)) {
                Some(d) if series == 0 => d.notes_change += n,
                Some(d) => d.chunks_written += n,
                None if day < 0 => before[series] += n,
                None => {}
            }
        }
    }
    let [mut notes, mut chunks] = before;
    for day in &mut days {
        notes += day.notes_change;
        chunks += day.chunks_written;
        day.notes = notes;
        day.chunks = chunks;
    }
    days
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_run_on_from_before_the_span() {
        let since = 1_800_000_000_000;
        let days = tally(
            since,
            &[IndexedCount(-1, 5), IndexedCount(0, 2), IndexedCount(3, -1)],
            &[IndexedCount(-1, 40), IndexedCount(3, 10)],
        );
        assert_eq!(days.len(), GROWTH_DAYS as usize);
        assert_eq!((days[0].notes, days[0].chunks), (7, 40));
        assert_eq!((days[2].notes, days[2].chunks), (7, 40));
        assert_eq!((days[3].notes, days[3].chunks), (6, 50));
        assert_eq!(days[3].notes_change, -1);
        assert_eq!(days.last().map(|d| (d.notes, d.chunks)), Some((6, 50)));
        assert_eq!(days[1].start, since + DAY_MS);
    }
}
