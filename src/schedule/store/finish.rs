//! Recording a finished attempt: the run row, the schedule's counters and status, the
//! run's transcript and the messages it calls for, in one transaction.

use super::ScheduleStore;
use crate::db::query_scalar;
use crate::memory::{Memory, NewEvent};
use crate::notify::router::Recipient;
use crate::schedule::types::{Claim, RunOutcome, RunStatus};
use crate::schedule::{Cadence, Result, ScheduleError};
use crate::text::{cut_with_note, truncate_chars};

/// Characters of output kept in `output_summary`.
const SUMMARY_CHARS: usize = 500;

/// A finished run's conversation (its goal and the agent's turns), stored by
/// [`ScheduleStore::finish_with`] in the transaction that records the run: a run is never kept
/// without its transcript because a crash came between two transactions.
pub struct Transcript<'a> {
    pub memory: &'a Memory,
    pub user_id: &'a str,
    pub session_id: &'a str,
    pub events: &'a [NewEvent],
}

impl ScheduleStore {
    /// Records a finished attempt and updates the schedule, in one transaction. `worker`
    /// is the worker that must still hold the run (`None`: whoever holds it). Returns
    /// false when the run was no longer this worker's to finish.
    pub async fn finish(
        &self,
        claim: &Claim,
        worker: Option<&str>,
        outcome: &RunOutcome,
        pause_after_failures: i64,
    ) -> Result<bool> {
        self.finish_with(claim, worker, outcome, pause_after_failures, None)
            .await
    }

    /// As [`ScheduleStore::finish`], storing the run's transcript in the same
    /// transaction. A transcript that cannot be stored fails it all
    /// ([`ScheduleError::Transcript`]), nothing written.
    pub async fn finish_with(
        &self,
        claim: &Claim,
        worker: Option<&str>,
        outcome: &RunOutcome,
        pause_after_failures: i64,
        transcript: Option<&Transcript<'_>>,
    ) -> Result<bool> {
        let now = self.clock.now_ms();
        let status = outcome.status.unwrap_or(RunStatus::Failed);
        // A runtime's answer is kept up to a documented size, the rest cut with a note.
        let output = outcome
            .output
            .as_deref()
            .map(|o| cut_with_note(o, self.limits.max_output_bytes));
        let summary = output
            .as_deref()
            .map(|o| truncate_chars(o.trim(), SUMMARY_CHARS).to_string());
        let conn = self.db.conn().await?;
        // Its first statement records the run: a write.
        let tx = conn.write_tx_writing_first().await?;
        // The schedule's row before the run's, in the order a claim takes them: a claim
        // inserting this very occurrence (a backfilled one) waits for this run's row.
        super::lock_schedules(
            &tx,
            "schedule_id = ?1",
            [claim.schedule.schedule_id.as_str()],
        )
        .await?;
        // Usage recorded while the run waited for an approval is kept if this attempt
        // lost its own (a cancel drops it): counters only grow.
        // A waiting run is finished here only by a cancel.
        let updated = tx
            .execute(
                "UPDATE schedule_runs SET status = ?2, finished_at = ?3, output_summary = ?4,
                 output = ?5, error = ?6, turn_count = max(turn_count, ?7),
                 prompt_tokens = max(prompt_tokens, ?8),
                 completion_tokens = max(completion_tokens, ?9), cost = max(cost, ?10),
                 lease_expires_at = NULL
                 WHERE run_id = ?1 AND (?11 IS NULL OR worker_id = ?11)
                 AND (status = 'running' OR (status = 'waiting' AND ?2 = 'cancelled'))",
                libsql::params![
                    claim.run_id.as_str(),
                    status.as_str(),
                    now,
                    summary,
                    output.as_deref(),
                    outcome.error.as_deref(),
                    outcome.turn_count,
                    outcome.prompt_tokens,
                    outcome.completion_tokens,
                    outcome.cost,
                    worker
                ],
            )
            .await?;
        if updated == 0 {
            tx.rollback().await?;
            return Ok(false);
        }
        // The run's `temp:` state ends with it, whatever its outcome.
        crate::state::clear_run(&tx, &claim.run_id).await?;
        // A call it waited on can no longer be answered, nor the run resumed.
        tx.execute(
            "UPDATE approvals SET
                 state = CASE WHEN state = 'pending' THEN 'denied' ELSE state END,
                 decided_by = CASE WHEN state = 'pending' THEN 'cancel' ELSE decided_by END,
                 decided_at = coalesce(decided_at, ?2), resumed_at = ?2, resume_json = NULL
             WHERE run_id = ?1 AND resumed_at IS NULL",
            libsql::params![claim.run_id.as_str(), now],
        )
        .await?;
        // A run an event started never ends its schedule: only the cadence's own
        // occurrences do.
        let one_shot =
            claim.is_occurrence() && matches!(claim.schedule.cadence, Cadence::Once { .. });
        // The claim left no next occurrence: this was the schedule's last run.
        let last = claim.is_occurrence()
            && !matches!(claim.schedule.cadence, Cadence::Triggered { .. })
            && claim.schedule.next_run_at.is_none();
        let (failures, new_status, reason): (i64, Option<&str>, Option<String>) =
            if status == RunStatus::Cancelled {
                // Someone stopped it: not a failure of the schedule's. A one-shot has
                // nothing left to run.
                let failures: i64 = query_scalar(
                    &tx,
                    "SELECT consecutive_failures FROM schedules WHERE schedule_id = ?1",
                    [claim.schedule.schedule_id.as_str()],
                )
                .await?
                .unwrap_or(0);
                (
                    failures,
                    (one_shot || last).then_some("completed"),
                    (one_shot || last).then(|| "its last run was cancelled".to_string()),
                )
            } else if status.is_success() {
                (
                    0,
                    last.then_some("completed"),
                    (last && !one_shot).then(|| ended(&claim.schedule)),
                )
            } else {
                let failures: i64 = query_scalar(
                    &tx,
                    "SELECT consecutive_failures + 1 FROM schedules WHERE schedule_id = ?1",
                    [claim.schedule.schedule_id.as_str()],
                )
                .await?
                .unwrap_or(1);
                if one_shot {
                    (
                        failures,
                        Some("failed"),
                        Some(format!("the one-shot run ended {status}")),
                    )
                } else if last {
                    (failures, Some("completed"), Some(ended(&claim.schedule)))
                } else if failures >= pause_after_failures {
                    (
                        failures,
                        Some("paused"),
                        Some(format!("paused after {failures} consecutive failed runs")),
                    )
                } else {
                    (failures, None, None)
                }
            };
        let mut announced = false;
        // A cancelled run is not announced: whoever cancelled it knows.
        if let Some((router, _)) = self
            .notifications
            .as_ref()
            .filter(|_| status != RunStatus::Cancelled)
        {
            let plan = router.plan(&Recipient {
                user_id: &claim.schedule.user_id,
                schedule_id: &claim.schedule.schedule_id,
                channel_id: claim.schedule.channel_id.as_deref(),
                channel_context_id: claim.schedule.channel_context_id.as_deref(),
            });
            announced = self
                .announce(
                    &tx,
                    claim,
                    &plan,
                    status,
                    outcome,
                    output.as_deref(),
                    failures,
                    new_status.is_some_and(|s| s == "paused"),
                    reason.as_deref(),
                    now,
                )
                .await?;
            let alerted = super::alerts::on_finish(
                &tx,
                &plan,
                claim,
                status,
                failures,
                outcome.error.as_deref(),
                now,
            )
            .await?;
            announced |= alerted;
        }
        tx.execute(
            // The last run ends the schedule only if it still has no next occurrence: an
            // edit may have given it a new cadence while this run went on.
            "UPDATE schedules SET last_run_at = ?2, last_run_status = ?3, consecutive_failures = ?4,
             last_success_at = CASE WHEN ?3 = 'succeeded' THEN ?2 ELSE last_success_at END,
             status = CASE WHEN ?5 IS NOT NULL AND status = 'active'
                           AND (?7 = 0 OR (next_run_at IS NULL
                                AND json_extract(cadence_json, '$.kind') != 'triggered'))
                      THEN ?5 ELSE status END,
             status_reason = CASE WHEN ?5 IS NOT NULL AND status = 'active'
                           AND (?7 = 0 OR (next_run_at IS NULL
                                AND json_extract(cadence_json, '$.kind') != 'triggered'))
                      THEN ?6 ELSE status_reason END,
             updated_at = ?2
             WHERE schedule_id = ?1",
            libsql::params![
                claim.schedule.schedule_id.as_str(),
                now,
                status.as_str(),
                failures,
                new_status,
                reason,
                last
            ],
        )
        .await?;
        super::events::start_followers(
            &tx,
            claim,
            status,
            output
                .as_deref()
                .filter(|o| !o.trim().is_empty())
                .or(outcome.error.as_deref()),
            now,
        )
        .await?;
        let mut appended = None;
        if let Some(transcript) = transcript {
            let stored = transcript
                .memory
                .append_in(
                    &tx,
                    transcript.user_id,
                    transcript.session_id,
                    transcript.events,
                )
                .await
                .map_err(ScheduleError::Transcript)?;
            appended = Some((transcript.memory, stored));
        }
        tx.commit().await?;
        // Its live views end now.
        self.progress_moved(Some(&claim.run_id));
        if let Some((memory, stored)) = appended {
            memory.appended(&stored);
        }
        // Pruned after the commit, on its own: on a server a statement inside the
        // transaction holds the write lock (shared by every worker) for a network round
        // trip, and a statement on its own only while the server runs it. A prune lost to
        // a crash here is done by the schedule's next finished run.
        drop(conn);
        if let Err(err) = self.prune_runs(Some(&claim.schedule.schedule_id)).await {
            tracing::warn!(schedule_id = %claim.schedule.schedule_id, %err, "cannot prune the schedule's run history");
        }
        if announced {
            if let Some((_, sender)) = &self.notifications {
                sender.notify_one();
            }
        }
        Ok(true)
    }

    /// Deletes finished runs beyond the newest `history_keep` of one schedule, or of every
    /// schedule (the consolidation's prune pass). Returns how many went.
    pub async fn prune_runs(&self, schedule_id: Option<&str>) -> Result<u64> {
        let conn = self.db.conn().await?;
        let deleted = match schedule_id {
            Some(schedule_id) => {
                let deleted = conn
                    .execute(
                        "DELETE FROM schedule_runs WHERE schedule_id = ?1 AND status NOT IN ('running', 'waiting')
                         AND run_id NOT IN (SELECT run_id FROM schedule_runs WHERE schedule_id = ?1
                             ORDER BY coalesce(started_at, scheduled_for) DESC LIMIT ?2)",
                        libsql::params![schedule_id, self.limits.history_keep],
                    )
                    .await?;
                if deleted > 0 {
                    conn.execute(
                        "DELETE FROM schedule_events WHERE schedule_id = ?1 AND run_id IS NOT NULL
                         AND NOT EXISTS (SELECT 1 FROM schedule_runs r
                                         WHERE r.run_id = schedule_events.run_id)",
                        [schedule_id],
                    )
                    .await?;
                }
                deleted
            }
            None => {
                let deleted = conn
                    .execute(
                        // A waiting run is not finished: it stays, however old.
                        "DELETE FROM schedule_runs WHERE status NOT IN ('running', 'waiting')
                         AND run_id IN (
                             SELECT run_id FROM (
                                 SELECT run_id, row_number() OVER (
                                     PARTITION BY schedule_id
                                     ORDER BY coalesce(started_at, scheduled_for) DESC) AS n
                                 FROM schedule_runs) AS ranked
                             WHERE n > ?1)",
                        [self.limits.history_keep],
                    )
                    .await?;
                // An event is kept as long as its run: its key answers a repeat until then.
                conn.execute(
                    "DELETE FROM schedule_events WHERE run_id IS NOT NULL
                     AND NOT EXISTS (SELECT 1 FROM schedule_runs r
                                     WHERE r.run_id = schedule_events.run_id)",
                    (),
                )
                .await?;
                deleted
            }
        };
        Ok(deleted)
    }
}

/// Why a recurring schedule ended with its last run.
fn ended(schedule: &crate::schedule::types::Schedule) -> String {
    match (schedule.bounds.max_runs, schedule.bounds.ends_at) {
        (Some(max), _) if schedule.runs_started + 1 >= max => {
            format!("ran the {max} runs max_runs allows")
        }
        (_, Some(_)) => "no occurrence left before ends_at".to_string(),
        _ => "no occurrence left".to_string(),
    }
}
