//! What the running worker reports about itself: readiness (can it serve, and if not, why)
//! and the gauges `/metrics` reads from the database.

use std::time::Duration;

use serde::Serialize;

use super::App;
use crate::db::{migrate, query_first_row, query_scalar};
use crate::telemetry::Gauges;

/// How long the database has to answer a readiness read.
const READ_WITHIN: Duration = Duration::from_secs(1);
/// Change checks the scheduler loop may miss before the worker is not ready.
const MISSED_TICKS: u32 = 3;
const MIB: u64 = 1024 * 1024;
/// Free space under a local database below which the worker is not ready.
const MIN_FREE_BYTES: u64 = 64 * MIB;
/// Scheduler passes failed in a row after which the worker is not ready.
const FAILED_PASSES: u64 = 3;

/// One readiness check.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Check {
    /// `database`, `schema` or `scheduler`.
    pub name: String,
    pub ok: bool,
    pub detail: String,
}

/// Whether the worker can serve, with every check, the embedding backlog and whether
/// search runs on keywords alone (which does not make it unready).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Readiness {
    pub ready: bool,
    pub checks: Vec<Check>,
    /// Chunks waiting for a vector; `None` when the database did not say.
    pub embedding_backlog: Option<i64>,
    pub search_degraded: bool,
    pub degraded_reason: Option<String>,
}

impl App {
    /// Readiness: the database answers a read within a second, its schema is this
    /// binary's, and (when a worker runs in this process) the scheduler loop ticked within
    /// three change checks.
    pub async fn readiness(&self, worker_expected: bool) -> Readiness {
        let mut checks = Vec::new();
        let read = tokio::time::timeout(READ_WITHIN, async {
            let conn = self.db().conn().await?;
            query_first_row(&conn, "SELECT 1", (), |row| row.get::<i64>(0))
                .await
                .map_err(crate::db::DbError::from)
        })
        .await;
        let db_ok = matches!(read, Ok(Ok(_)));
        checks.push(Check {
            name: "database".into(),
            ok: db_ok,
            detail: match read {
                Ok(Ok(_)) => "answers".into(),
                Ok(Err(err)) => format!("does not answer: {err}"),
                Err(_) => format!("no answer within {}s", READ_WITHIN.as_secs()),
            },
        });
        if db_ok {
            let schema =
                tokio::time::timeout(READ_WITHIN, migrate::ensure_current(self.db())).await;
            checks.push(Check {
                name: "schema".into(),
                ok: matches!(schema, Ok(Ok(()))),
                detail: match schema {
                    Ok(Ok(())) => format!("version {}", migrate::latest_version()),
                    Ok(Err(err)) => err.to_string(),
                    Err(_) => "no answer within a second".into(),
                },
            });
        }
        if let Some(check) = self.disk_check() {
            checks.push(check);
        }
        if worker_expected {
            let allowed =
                Duration::from_millis(self.config().scheduler.change_check_ms) * MISSED_TICKS;
            let since = self.liveness().since_last_tick();
            let (failed, last_error) = self.liveness().failed_passes();
            checks.push(Check {
                name: "scheduler".into(),
                ok: since.is_some_and(|s| s <= allowed) && failed < FAILED_PASSES,
                detail: match (since, last_error) {
                    (Some(_), Some(err)) if failed >= FAILED_PASSES => {
                        format!("its last {failed} passes failed: {err}")
                    }
                    (Some(s), _) => format!(
                        "ticked {} ms ago (allowed {} ms)",
                        s.as_millis(),
                        allowed.as_millis()
                    ),
                    (None, _) => "has not ticked yet".into(),
                },
            });
        }
        let (backlog, degraded) = if db_ok {
            (
                self.memory().embedding_backlog().await.ok(),
                self.memory().search_degraded().await.ok().flatten(),
            )
        } else {
            (None, None)
        };
        Readiness {
            ready: checks.iter().all(|c| c.ok),
            checks,
            embedding_backlog: backlog,
            search_degraded: degraded.is_some(),
            degraded_reason: degraded,
        }
    }

    /// Free space where a local database (or a replica's file) lives: under
    /// [`MIN_FREE_BYTES`] every write is about to fail, so the worker is not ready. `None`
    /// for a database on a server, whose space is the server's.
    fn disk_check(&self) -> Option<Check> {
        let path = match self.db().target() {
            crate::db::DbTarget::Local(path) => path,
            crate::db::DbTarget::Replica { path, .. } => path,
            _ => return None,
        };
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty())?;
        let (ok, detail) = match rustix::fs::statvfs(dir) {
            Ok(stat) => {
                let free = stat.f_bavail.saturating_mul(stat.f_frsize);
                (
                    free >= MIN_FREE_BYTES,
                    format!(
                        "{} MiB free for {} (at least {} MiB wanted)",
                        free / MIB,
                        dir.display(),
                        MIN_FREE_BYTES / MIB
                    ),
                )
            }
            Err(err) => (
                false,
                format!("cannot tell the free space of {}: {err}", dir.display()),
            ),
        };
        Some(Check {
            name: "disk".into(),
            ok,
            detail,
        })
    }

    /// The gauges `/metrics` shows, read from the database now.
    pub async fn gauges(&self) -> Result<Gauges, crate::db::DbError> {
        let conn = self.db().conn().await?;
        let now = self.clock().now_ms();
        let due_backlog: i64 = query_scalar(
            &conn,
            "SELECT count(*) FROM schedules WHERE status = 'active' AND next_run_at <= ?1",
            [now],
        )
        .await?
        .unwrap_or(0);
        let leases_held: i64 = query_scalar(
            &conn,
            "SELECT count(*) FROM schedule_runs WHERE status = 'running'",
            (),
        )
        .await?
        .unwrap_or(0);
        let mut outbox = Vec::new();
        for status in ["pending", "delivered", "dead"] {
            let n: i64 = query_scalar(
                &conn,
                "SELECT count(*) FROM outbox WHERE status = ?1",
                [status],
            )
            .await?
            .unwrap_or(0);
            outbox.push((status.to_string(), n));
        }
        let embedding_queue: i64 = query_scalar(&conn, "SELECT count(*) FROM embed_queue", ())
            .await?
            .unwrap_or(0);
        Ok(Gauges {
            due_backlog,
            leases_held,
            outbox,
            embedding_queue,
            uptime: self.liveness().uptime(),
        })
    }
}
