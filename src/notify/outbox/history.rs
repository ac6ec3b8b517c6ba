//! The outbox over time, for the dashboard's chart: how many messages waited at the end of
//! each hour of the last day or week, and how many became dead letters in it. Read from
//! the messages' own times (written, delivered, dead), so the history needs no sampler
//! and costs four grouped reads however busy the outbox was.
//!
//! What the rows cannot tell: delivered messages older than
//! `consolidation.outbox_retention_days` are pruned (before then the depth counts too
//! few), a dead letter from before its time was recorded is left out of the depth, and a
//! retried dead letter counts as having waited since it was first written.

use super::{Outbox, OutboxError};
use crate::db::{fetch_all, query_scalar, IndexedCount};
use crate::schedule::store::history::HistorySpan;

const HOUR_MS: i64 = 3_600_000;

/// One hour of the outbox.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HourOfOutbox {
    /// The hour's start (Unix ms, on the hour).
    pub start: i64,
    /// Messages written in the hour.
    pub written: i64,
    /// Messages delivered in the hour.
    pub delivered: i64,
    /// Messages that became dead letters in the hour.
    pub dead: i64,
    /// Messages waiting for delivery at the hour's end (or now, for the current hour).
    pub waiting: i64,
}

/// Every hour of a span, oldest first, empty ones included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxHistory {
    pub span: HistorySpan,
    pub hours: Vec<HourOfOutbox>,
}

impl Outbox {
    /// The outbox hour by hour over `span`, up to `now` (the current hour is the last).
    pub async fn history(&self, now: i64, span: HistorySpan) -> Result<OutboxHistory, OutboxError> {
        let this_hour = now.div_euclid(HOUR_MS) * HOUR_MS;
        let since = this_hour - (span.hours() - 1) * HOUR_MS;
        let until = this_hour + HOUR_MS;
        let conn = self.db.conn().await?;
        // Waiting when the span began: written before it, and still pending, or delivered
        // or dead only since (three disjoint counts, each read by an index).
        let mut waiting_before = 0;
        for ended in ["status = 'pending'", "delivered_at >= ?1", "dead_at >= ?1"] {
            let n: i64 = query_scalar(
                &conn,
                &format!("SELECT count(*) FROM outbox WHERE {ended} AND created_at < ?1"),
                [since],
            )
            .await?
            .unwrap_or(0);
            waiting_before += n;
        }
        let per_hour = |column: &str, skip_unknown_death: bool| {
            let also = if skip_unknown_death {
                " AND NOT (status = 'dead' AND dead_at IS NULL)"
            } else {
                ""
            };
            format!(
                "SELECT ({column} - ?1) / ?2, count(*) FROM outbox
                 WHERE {column} >= ?1 AND {column} < ?3{also}
                 GROUP BY 1"
            )
        };
        let read = |sql: String| {
            let conn = &conn;
            async move {
                fetch_all::<IndexedCount>(conn, &sql, libsql::params![since, HOUR_MS, until]).await
            }
        };
        // A dead letter whose death is not known never leaves the depth: its writing is
        // left out too.
        let written = read(per_hour("created_at", true)).await?;
        let delivered = read(per_hour("delivered_at", false)).await?;
        let dead = read(per_hour("dead_at", false)).await?;
        let mut hours: Vec<HourOfOutbox> = (0..span.hours())
            .map(|i| HourOfOutbox {
                start: since + i * HOUR_MS,
                ..Default::default()
            })
            .collect();
        let mut add = |counts: Vec<IndexedCount>, field: fn(&mut HourOfOutbox) -> &mut i64| {
            for IndexedCount(index, n) in counts {
                if let Some(hour) = usize::try_from(index).ok().and_then(|i| hours.get_mut(i)) {
                    *field(hour) += n;
                }
            }
        };
        add(written, |h| &mut h.written);
        add(delivered, |h| &mut h.delivered);
        add(dead, |h| &mut h.dead);
        let mut waiting = waiting_before;
        for hour in &mut hours {
            waiting += hour.written - hour.delivered - hour.dead;
            // The reads are not one snapshot: a message delivered between two of them
            // could take the sum below none for a moment.
            hour.waiting = waiting.max(0);
        }
        Ok(OutboxHistory { span, hours })
    }
}
