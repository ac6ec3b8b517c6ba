//! The worker at a glance, for `nightshift status`, `GET /v1/admin/status` and the
//! dashboard: workers, schedules, the last hour's runs, the outbox, the embedding backlog
//! and the database's size, read from the database now. Every user's schedules are in it:
//! the doors give it to the operator only.

use std::collections::BTreeMap;

use serde::Serialize;

use super::App;
use crate::db::clock::to_rfc3339;
use crate::db::{query_scalar, DbError};
use crate::error::Error;
use crate::registry::WorkerInfo;
use crate::schedule::view::{ScheduleView, LIST_NEXT_RUNS};

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Overview {
    /// When this was read (RFC 3339, UTC).
    pub at: String,
    /// Workers registered on this database, alive or gone.
    pub workers: Vec<WorkerInfo>,
    pub workers_alive: i64,
    pub schedules: ScheduleCounts,
    /// The active schedules due soonest, earliest first.
    pub next_due: Vec<ScheduleView>,
    pub runs_last_hour: RunCounts,
    pub outbox: OutboxCounts,
    /// Chunks waiting for a vector.
    pub embedding_backlog: i64,
    /// Why search runs on keywords alone, when it does.
    pub search_degraded: Option<String>,
    /// The database's size (its pages), when the database says.
    pub database_bytes: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ScheduleCounts {
    /// By status: `active`, `paused`, `completed`, `failed`.
    pub by_status: BTreeMap<String, i64>,
    /// Active schedules whose last run failed.
    pub failing: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct RunCounts {
    /// Runs started in the last hour, by status.
    pub by_status: BTreeMap<String, i64>,
    pub total: i64,
    /// How late they started (scheduled_for → started), 99th percentile.
    pub lateness_p99_ms: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct OutboxCounts {
    /// Waiting to be sent, or being retried.
    pub pending: i64,
    /// Given up on: `nightshift outbox retry` sends one again.
    pub dead: i64,
}

impl App {
    /// The overview at this moment.
    pub async fn overview(&self) -> Result<Overview, Error> {
        let now = self.clock().now_ms();
        let lease_ms = self.config().scheduler.lease_secs * 1000;
        let workers = crate::registry::list(self.db(), self.clock().as_ref(), lease_ms).await?;
        let schedules = self.schedules().overview(now).await?;
        let conn = self.db().conn().await?;
        let mut outbox = BTreeMap::new();
        for status in ["pending", "dead"] {
            let n: i64 = query_scalar(
                &conn,
                "SELECT count(*) FROM outbox WHERE status = ?1",
                [status],
            )
            .await
            .map_err(DbError::from)?
            .unwrap_or(0);
            outbox.insert(status, n);
        }
        let database_bytes = database_bytes(&conn).await;
        drop(conn);
        Ok(Overview {
            at: to_rfc3339(now),
            workers_alive: workers.iter().filter(|w| w.alive).count() as i64,
            workers,
            schedules: ScheduleCounts {
                by_status: schedules.by_status,
                failing: schedules.failing,
            },
            next_due: schedules
                .next_due
                .iter()
                .map(|s| ScheduleView::new(s, LIST_NEXT_RUNS))
                .collect(),
            runs_last_hour: RunCounts {
                total: schedules.runs_last_hour.values().sum(),
                by_status: schedules.runs_last_hour,
                lateness_p99_ms: schedules.lateness_p99_ms,
            },
            outbox: OutboxCounts {
                pending: outbox["pending"],
                dead: outbox["dead"],
            },
            embedding_backlog: self.memory().embedding_backlog().await?,
            search_degraded: self.memory().search_degraded().await?,
            database_bytes,
        })
    }
}

/// The database's size on disk. A server may not answer: then it is left out.
async fn database_bytes(conn: &crate::db::Conn) -> Option<i64> {
    if conn.is_postgres() {
        return query_scalar(conn, "SELECT pg_database_size(current_database())", ())
            .await
            .ok()
            .flatten();
    }
    let page_count: Option<i64> = query_scalar(conn, "PRAGMA page_count", ())
        .await
        .ok()
        .flatten();
    let page_size: Option<i64> = query_scalar(conn, "PRAGMA page_size", ())
        .await
        .ok()
        .flatten();
    page_count
        .zip(page_size)
        .map(|(n, size)| n.saturating_mul(size))
}
