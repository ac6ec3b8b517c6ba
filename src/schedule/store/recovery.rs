//! Leases on running runs: renewal by the worker that holds one, another attempt of the
//! same occurrence, takeover of runs whose worker stopped renewing, and interruption of
//! what a stopping worker still holds.

use super::ScheduleStore;
use crate::db::run_to_completion;
use crate::db::{text_column, DbError};
use crate::schedule::types::{Claim, RunOrigin, RunOutcome, RunStatus, Schedule};
use crate::schedule::Result;

/// The columns of a running run [`HeldRun::from_row`] reads (`r`: the run, `e`: the event
/// that started it, if one did).
pub(super) const HELD_RUN: &str =
    "r.run_id, r.schedule_id, r.scheduled_for, r.attempt, r.origin, e.input, r.parent_run_id,
     r.memory_as_of";

/// How many columns [`HELD_RUN`] names: a query's own columns after them start here.
pub(super) const AFTER_HELD_RUN: i32 = 8;

/// A running run as recovery and shutdown find it.
pub(super) struct HeldRun {
    pub(super) run_id: String,
    pub(super) schedule_id: String,
    scheduled_for: i64,
    attempt: i64,
    origin: RunOrigin,
    input: Option<String>,
    parent_run_id: Option<String>,
    memory_as_of: Option<i64>,
}

impl HeldRun {
    pub(super) fn from_row(row: &libsql::Row) -> std::result::Result<Self, DbError> {
        Ok(Self {
            run_id: row.get(0)?,
            schedule_id: row.get(1)?,
            scheduled_for: row.get(2)?,
            attempt: row.get(3)?,
            origin: text_column(row, 4, "run origin")?,
            input: row.get(5)?,
            parent_run_id: row.get(6)?,
            memory_as_of: row.get(7)?,
        })
    }

    pub(super) fn into_claim(self, schedule: Schedule) -> Claim {
        Claim {
            run_id: self.run_id,
            schedule,
            scheduled_for: self.scheduled_for,
            attempt: self.attempt,
            origin: self.origin,
            input: self.input,
            resume: None,
            parent_run_id: self.parent_run_id,
            memory_as_of: self.memory_as_of,
        }
    }
}

impl ScheduleStore {
    /// Takes over runs whose worker stopped renewing its lease. Each comes back as a new
    /// attempt of the same occurrence while the schedule allows more attempts; the rest
    /// are recorded `interrupted`.
    pub async fn recover_expired(&self, worker_id: &str, lease_ms: i64) -> Result<Vec<Claim>> {
        let now = self.clock.now_ms();
        let conn = self.db.conn().await?;
        let mut rows = conn
            .query(
                &format!(
                    "SELECT {HELD_RUN}, s.max_attempts, r.cancel_requested_by
                     FROM schedule_runs r JOIN schedules s ON s.schedule_id = r.schedule_id
                     LEFT JOIN schedule_events e ON e.event_id = r.event_id
                     WHERE r.status = 'running' AND r.lease_expires_at < ?1"
                ),
                [now],
            )
            .await?;
        let mut expired = Vec::new();
        while let Some(row) = rows.next().await? {
            expired.push((
                HeldRun::from_row(&row)?,
                row.get::<i64>(AFTER_HELD_RUN)?,
                row.get::<Option<String>>(AFTER_HELD_RUN + 1)?,
            ));
        }
        drop(rows);
        let mut claims = Vec::new();
        for (held, max_attempts, cancel) in expired {
            let (run_id, schedule_id, attempt) =
                (held.run_id.clone(), held.schedule_id.clone(), held.attempt);
            if let Some(by) = cancel {
                // Asked to stop before its worker vanished: it stops here.
                let outcome = RunOutcome {
                    status: Some(RunStatus::Cancelled),
                    error: Some(format!("cancelled ({by}); its worker had stopped")),
                    ..Default::default()
                };
                let claim = held.into_claim(self.load(&schedule_id).await?);
                self.finish(&claim, None, &outcome, u32::MAX as i64).await?;
            } else if attempt < max_attempts {
                let taken = conn
                    .execute(
                        "UPDATE schedule_runs SET attempt = attempt + 1, worker_id = ?2,
                         lease_expires_at = ?3, started_at = ?4,
                         error = 'previous attempt lost its worker'
                         WHERE run_id = ?1 AND status = 'running' AND lease_expires_at < ?4",
                        libsql::params![run_id.as_str(), worker_id, now + lease_ms, now],
                    )
                    .await?;
                if taken == 1 {
                    tracing::warn!(%run_id, %schedule_id, "recovered a run whose worker stopped");
                    let schedule = self.load(&schedule_id).await?;
                    let mut claim = held.into_claim(schedule);
                    claim.attempt += 1;
                    claims.push(claim);
                }
            } else {
                let outcome = RunOutcome {
                    status: Some(RunStatus::Interrupted),
                    error: Some("the worker running it stopped and no attempts are left".into()),
                    ..Default::default()
                };
                let claim = held.into_claim(self.load(&schedule_id).await?);
                // Only one recovering worker wins this update; the others see no change.
                self.finish(&claim, None, &outcome, u32::MAX as i64).await?;
            }
        }
        Ok(claims)
    }

    /// Starts another attempt of a run this worker holds; false when it no longer does.
    pub async fn next_attempt(&self, run_id: &str, worker_id: &str, lease_ms: i64) -> Result<bool> {
        self.update_held_run(
            "attempt = attempt + 1, lease_expires_at = ?3",
            run_id,
            worker_id,
            lease_ms,
        )
        .await
    }

    /// Pushes a running run's lease forward; false when this worker no longer holds it.
    pub async fn renew_lease(&self, run_id: &str, worker_id: &str, lease_ms: i64) -> Result<bool> {
        self.update_held_run("lease_expires_at = ?3", run_id, worker_id, lease_ms)
            .await
    }

    /// Applies `set` (with `?3` the new lease expiry) to a run `worker_id` holds; false
    /// when it no longer does. The write runs to its end even when the caller stops
    /// waiting: a lease renewal races the run it belongs to, and the run its deadline or
    /// a hard stop (see [`run_to_completion`]).
    async fn update_held_run(
        &self,
        set: &'static str,
        run_id: &str,
        worker_id: &str,
        lease_ms: i64,
    ) -> Result<bool> {
        let db = self.db.clone();
        let sql = format!(
            "UPDATE schedule_runs SET {set} WHERE run_id = ?1 AND worker_id = ?2 AND status = 'running'"
        );
        let params = libsql::params![run_id, worker_id, self.clock.now_ms() + lease_ms];
        run_to_completion(async move {
            let conn = db.conn().await?;
            // Ahead of this process's other writes: a renewal that waited out a long queue
            // would come after the lease it renews.
            Ok(conn.execute_ahead(&sql, params).await? == 1)
        })
        .await
    }

    /// Marks runs this worker still holds as interrupted and releases them (shutdown).
    /// Their schedules are updated as for any failed run: a one-shot ends `failed`.
    pub async fn interrupt_held(&self, worker_id: &str, pause_after_failures: i64) -> Result<u64> {
        let conn = self.db.conn().await?;
        let mut rows = conn
            .query(
                &format!(
                    "SELECT {HELD_RUN}, r.cancel_requested_by FROM schedule_runs r
                     LEFT JOIN schedule_events e ON e.event_id = r.event_id
                     WHERE r.worker_id = ?1 AND r.status = 'running'"
                ),
                [worker_id],
            )
            .await?;
        let mut held = Vec::new();
        while let Some(row) = rows.next().await? {
            held.push((
                HeldRun::from_row(&row)?,
                row.get::<Option<String>>(AFTER_HELD_RUN)?,
            ));
        }
        drop(rows);
        let mut interrupted = 0;
        for (run, cancel) in held {
            // One someone asked to stop is cancelled, not interrupted (not a failure).
            let outcome = match cancel {
                Some(by) => RunOutcome {
                    status: Some(RunStatus::Cancelled),
                    error: Some(format!("cancelled ({by}) as the worker shut down")),
                    ..Default::default()
                },
                None => RunOutcome {
                    status: Some(RunStatus::Interrupted),
                    error: Some("the worker shut down before the run finished".into()),
                    ..Default::default()
                },
            };
            let schedule = self.load(&run.schedule_id).await?;
            let claim = run.into_claim(schedule);
            if self
                .finish(&claim, Some(worker_id), &outcome, pause_after_failures)
                .await?
            {
                interrupted += 1;
            }
        }
        Ok(interrupted)
    }
}
