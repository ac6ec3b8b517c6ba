//! Leases on running runs: renewal by the worker that holds one, another attempt of the
//! same occurrence, takeover of runs whose worker stopped renewing, and interruption of
//! what a stopping worker still holds.

use super::ScheduleStore;
use crate::db::run_to_completion;
use crate::schedule::types::{Claim, RunOutcome, RunStatus};
use crate::schedule::Result;

impl ScheduleStore {
    /// Takes over runs whose worker stopped renewing its lease. Each comes back as a new
    /// attempt of the same occurrence while the schedule allows more attempts; the rest
    /// are recorded `interrupted`.
    pub async fn recover_expired(&self, worker_id: &str, lease_ms: i64) -> Result<Vec<Claim>> {
        let now = self.clock.now_ms();
        let conn = self.db.conn().await?;
        let mut rows = conn
            .query(
                "SELECT r.run_id, r.schedule_id, r.scheduled_for, r.attempt, s.max_attempts
                 FROM schedule_runs r JOIN schedules s ON s.schedule_id = r.schedule_id
                 WHERE r.status = 'running' AND r.lease_expires_at < ?1",
                [now],
            )
            .await?;
        let mut expired = Vec::new();
        while let Some(row) = rows.next().await? {
            expired.push((
                row.get::<String>(0)?,
                row.get::<String>(1)?,
                row.get::<i64>(2)?,
                row.get::<i64>(3)?,
                row.get::<i64>(4)?,
            ));
        }
        drop(rows);
        let mut claims = Vec::new();
        for (run_id, schedule_id, scheduled_for, attempt, max_attempts) in expired {
            if attempt < max_attempts {
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
                    claims.push(Claim {
                        run_id,
                        schedule: self.load(&schedule_id).await?,
                        scheduled_for,
                        attempt: attempt + 1,
                    });
                }
            } else {
                let outcome = RunOutcome {
                    status: Some(RunStatus::Interrupted),
                    error: Some("the worker running it stopped and no attempts are left".into()),
                    ..Default::default()
                };
                let claim = Claim {
                    run_id,
                    schedule: self.load(&schedule_id).await?,
                    scheduled_for,
                    attempt,
                };
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
                "SELECT run_id, schedule_id, scheduled_for, attempt FROM schedule_runs
                 WHERE worker_id = ?1 AND status = 'running'",
                [worker_id],
            )
            .await?;
        let mut held = Vec::new();
        while let Some(row) = rows.next().await? {
            held.push((
                row.get::<String>(0)?,
                row.get::<String>(1)?,
                row.get::<i64>(2)?,
                row.get::<i64>(3)?,
            ));
        }
        drop(rows);
        let outcome = RunOutcome {
            status: Some(RunStatus::Interrupted),
            error: Some("the worker shut down before the run finished".into()),
            ..Default::default()
        };
        let mut interrupted = 0;
        for (run_id, schedule_id, scheduled_for, attempt) in held {
            let claim = Claim {
                run_id,
                schedule: self.load(&schedule_id).await?,
                scheduled_for,
                attempt,
            };
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
