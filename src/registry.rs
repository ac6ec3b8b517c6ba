//! The worker registry: who is running on this database, since when, how recently it
//! was alive, and what it holds. Below the worker (which registers and beats) and the
//! doors and the overview (which read it).

use serde::Serialize;

use crate::db::clock::Clock;
use crate::db::{Db, DbError};

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct WorkerInfo {
    pub worker_id: String,
    pub host: String,
    pub pid: i64,
    pub version: String,
    pub started_at: i64,
    pub heartbeat_at: i64,
    /// Heartbeat within the lease: still counted as running.
    pub alive: bool,
    /// Schedule runs it holds a lease on.
    pub running_runs: i64,
    /// Outbox messages it is sending.
    pub outbox_leases: i64,
}

fn host_name() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

pub async fn register(db: &Db, clock: &dyn Clock, worker_id: &str) -> Result<(), DbError> {
    let now = clock.now_ms();
    let conn = db.conn().await?;
    conn.execute(
        "INSERT INTO workers (worker_id, host, pid, version, started_at, heartbeat_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?5)
         ON CONFLICT (worker_id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at",
        libsql::params![
            worker_id,
            host_name(),
            std::process::id() as i64,
            env!("CARGO_PKG_VERSION"),
            now
        ],
    )
    .await?;
    Ok(())
}

pub async fn heartbeat(db: &Db, clock: &dyn Clock, worker_id: &str) -> Result<(), DbError> {
    let conn = db.conn().await?;
    let changed = conn
        .execute(
            "UPDATE workers SET heartbeat_at = ?2 WHERE worker_id = ?1",
            libsql::params![worker_id, clock.now_ms()],
        )
        .await?;
    if changed == 0 {
        // Removed while we were away (by hand, or a clean-up): come back.
        drop(conn);
        register(db, clock, worker_id).await?;
    }
    Ok(())
}

pub async fn unregister(db: &Db, worker_id: &str) -> Result<(), DbError> {
    let conn = db.conn().await?;
    conn.execute("DELETE FROM workers WHERE worker_id = ?1", [worker_id])
        .await?;
    Ok(())
}

/// Every registered worker, newest first.
pub async fn list(db: &Db, clock: &dyn Clock, lease_ms: i64) -> Result<Vec<WorkerInfo>, DbError> {
    let now = clock.now_ms();
    let conn = db.conn().await?;
    let mut rows = conn
        .query(
            "SELECT w.worker_id, w.host, w.pid, w.version, w.started_at, w.heartbeat_at,
                    (SELECT count(*) FROM schedule_runs r WHERE r.worker_id = w.worker_id AND r.status = 'running'),
                    (SELECT count(*) FROM outbox o WHERE o.lease_owner = w.worker_id AND o.status = 'pending'
                       AND o.lease_expires_at > ?1)
             FROM workers w ORDER BY w.started_at DESC, w.worker_id",
            [now],
        )
        .await?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().await? {
        let heartbeat_at: i64 = row.get(5)?;
        out.push(WorkerInfo {
            worker_id: row.get(0)?,
            host: row.get(1)?,
            pid: row.get(2)?,
            version: row.get(3)?,
            started_at: row.get(4)?,
            heartbeat_at,
            alive: now - heartbeat_at <= lease_ms,
            running_runs: row.get(6)?,
            outbox_leases: row.get(7)?,
        });
    }
    Ok(out)
}
