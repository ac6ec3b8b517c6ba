//! Stopping a run by hand. A run waiting for an approval is recorded `cancelled` at once
//! (no worker holds it; its approval can no longer be answered). A running run is marked
//! with who asked: the worker holding it stops the runtime call and records it
//! `cancelled`, once — woken at once in this process, at its next change check in
//! another (the schedules' change counter moves); a run whose worker vanished is recorded
//! `cancelled` by recovery instead of being tried again. A run that ended is a conflict.

use super::recovery::{HeldRun, HELD_RUN};
use super::ScheduleStore;
use crate::access::Actor;
use crate::db::query_first_row;
use crate::input::{self, Lines};
use crate::schedule::types::{Run, RunOutcome, RunStatus};
use crate::schedule::{Result, ScheduleError};

/// Longest name of who cancels (a door's name).
const MAX_BY_BYTES: usize = 64;

impl ScheduleStore {
    /// Stops one of the actor's runs (see the module's doc); `by` says through which door.
    /// The run as it stands after: `cancelled`, or `running` with `cancel_requested_by`
    /// set until its worker stops it.
    pub async fn cancel_run(&self, actor: &Actor, run_id: &str, by: &str) -> Result<Run> {
        input::check_text("by", by, MAX_BY_BYTES, Lines::One)?;
        // A run may move between running and waiting while this looks: each step is
        // conditional on the state it saw, and a step that found it moved looks again.
        for _ in 0..8 {
            let run = self.run(actor, run_id).await?;
            match run.status {
                RunStatus::Waiting => {
                    let claim = self.claim_of(run_id).await?;
                    let outcome = RunOutcome {
                        status: Some(RunStatus::Cancelled),
                        error: Some(format!("cancelled ({by}) while waiting for an approval")),
                        ..Default::default()
                    };
                    // Whoever holds it: none.
                    if self.finish(&claim, None, &outcome, i64::MAX).await? {
                        self.note_cancel(run_id, by).await?;
                        return self.run(actor, run_id).await;
                    }
                }
                RunStatus::Running => {
                    if let Some(run) = self.request_cancel(actor, run_id, by).await? {
                        return Ok(run);
                    }
                }
                ended => {
                    return Err(ScheduleError::State(format!(
                        "run `{run_id}` already ended as {ended}; only a running or waiting \
                         run can be cancelled"
                    )))
                }
            }
        }
        Err(ScheduleError::State(format!(
            "run `{run_id}` kept changing while it was being cancelled; try again"
        )))
    }

    /// Who asked to stop the run `run_id`, if someone did.
    pub async fn cancel_asked(&self, run_id: &str) -> Result<Option<String>> {
        let conn = self.db.conn().await?;
        Ok(crate::db::query_scalar(
            &conn,
            "SELECT cancel_requested_by FROM schedule_runs WHERE run_id = ?1",
            [run_id],
        )
        .await?)
    }

    /// Marks a running run as asked to stop, and tells every worker to look; `None` when
    /// it was no longer running.
    async fn request_cancel(&self, actor: &Actor, run_id: &str, by: &str) -> Result<Option<Run>> {
        let conn = self.db.conn().await?;
        let tx = conn.write_tx_writing_first().await?;
        let marked = tx
            .execute(
                "UPDATE schedule_runs SET cancel_requested_by = coalesce(cancel_requested_by, ?2)
                 WHERE run_id = ?1 AND status = 'running'",
                libsql::params![run_id, by],
            )
            .await?;
        crate::db::tell_workers_to_look(&tx).await?;
        tx.commit().await?;
        if let Some(wake) = &self.wake {
            wake.notify_one();
        }
        if marked == 0 {
            return Ok(None);
        }
        Ok(Some(self.run(actor, run_id).await?))
    }

    /// Records who cancelled a run that is already recorded `cancelled`.
    async fn note_cancel(&self, run_id: &str, by: &str) -> Result<()> {
        let conn = self.db.conn().await?;
        conn.execute(
            "UPDATE schedule_runs SET cancel_requested_by = coalesce(cancel_requested_by, ?2)
             WHERE run_id = ?1",
            libsql::params![run_id, by],
        )
        .await?;
        Ok(())
    }

    /// The running runs `worker` holds that someone asked to stop, with who asked.
    pub async fn cancels_requested(&self, worker: &str) -> Result<Vec<(String, String)>> {
        let conn = self.db.conn().await?;
        let mut rows = conn
            .query(
                "SELECT run_id, cancel_requested_by FROM schedule_runs
                 WHERE worker_id = ?1 AND status = 'running' AND cancel_requested_by IS NOT NULL",
                [worker],
            )
            .await?;
        let mut asked = Vec::new();
        while let Some(row) = rows.next().await? {
            asked.push((row.get(0)?, row.get(1)?));
        }
        Ok(asked)
    }

    /// The claim a run's record stands for, to finish it.
    pub(super) async fn claim_of(&self, run_id: &str) -> Result<crate::schedule::types::Claim> {
        let conn = self.db.conn().await?;
        let held = query_first_row(
            &conn,
            &format!(
                "SELECT {HELD_RUN} FROM schedule_runs r
                 LEFT JOIN schedule_events e ON e.event_id = r.event_id WHERE r.run_id = ?1"
            ),
            [run_id],
            |row| Ok(HeldRun::from_row(row)),
        )
        .await?
        .ok_or_else(|| ScheduleError::RunNotFound(run_id.to_string()))??;
        let schedule = self.load(&held.schedule_id).await?;
        Ok(held.into_claim(schedule))
    }
}
