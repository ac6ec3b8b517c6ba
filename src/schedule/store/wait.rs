//! A run that waits for a person: the model asked for a tool call that needs approval.
//! [`ScheduleStore::wait_for_approval`] records, in one transaction, the run as `waiting`
//! (no worker holds it, so its slot is free), the approval with what the runtime kept to
//! go on, the transcript so far and the request in the outbox. [`ScheduleStore::resume_answered`]
//! hands answered ones (and ones nobody answered in time, as denials) back to a worker,
//! each exactly once: the run goes from `waiting` to `running` in the same transaction
//! that marks its approval resumed.

use super::recovery::{HeldRun, AFTER_HELD_RUN, HELD_RUN};
use super::{ScheduleStore, Transcript};
use crate::approval::{LinkAction, Resume, WaitFor};
use crate::db::clock::to_rfc3339;
use crate::db::{query_first_row, DbError};
use crate::notify::outbox::{enqueue_keyed_in, NewMessage, Priority};
use crate::notify::router::Recipient;
use crate::schedule::types::{Claim, RunOutcome};
use crate::schedule::{Result, ScheduleError};
use crate::text::truncate_chars;

/// Characters of a call's arguments a request message shows (the approval keeps all).
const ARGUMENTS_SHOWN: usize = 1000;

/// What a paused run was given to wait on.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    pub approval_id: String,
    pub expires_at: i64,
}

/// What became of a run that asked to wait.
#[derive(Debug, Clone, PartialEq)]
pub enum Paused {
    /// It waits for the approval.
    Waiting(Waiting),
    /// Someone asked to stop it first (who): it must be recorded cancelled instead.
    CancelAsked(String),
    /// This worker no longer holds it.
    NotHeld,
}

impl ScheduleStore {
    /// Pauses a run `worker` holds on `wait`: the run `waiting` with its counters so far,
    /// the approval (answered deny after `timeout_ms`), the transcript so far and the
    /// request to the user, together. `None` when the worker no longer holds the run.
    pub async fn wait_for_approval(
        &self,
        claim: &Claim,
        worker: &str,
        outcome: &RunOutcome,
        wait: &WaitFor,
        timeout_ms: i64,
        transcript: Option<&Transcript<'_>>,
    ) -> Result<Paused> {
        let now = self.clock.now_ms();
        let expires_at = now.saturating_add(timeout_ms);
        let approval_id = crate::ids::new_id("apr");
        let conn = self.db.conn().await?;
        let tx = conn.write_tx_writing_first().await?;
        let held = tx
            .execute(
                "UPDATE schedule_runs SET status = 'waiting', worker_id = NULL,
                 lease_expires_at = NULL, turn_count = ?3, prompt_tokens = ?4,
                 completion_tokens = ?5, cost = ?6
                 WHERE run_id = ?1 AND status = 'running' AND worker_id = ?2
                 AND cancel_requested_by IS NULL",
                libsql::params![
                    claim.run_id.as_str(),
                    worker,
                    outcome.turn_count,
                    outcome.prompt_tokens,
                    outcome.completion_tokens,
                    outcome.cost
                ],
            )
            .await?;
        if held == 0 {
            // Asked to stop while its model was asking for the call: it stops.
            let asked: Option<String> = crate::db::query_scalar(
                &tx,
                "SELECT cancel_requested_by FROM schedule_runs
                 WHERE run_id = ?1 AND status = 'running' AND worker_id = ?2",
                libsql::params![claim.run_id.as_str(), worker],
            )
            .await?;
            tx.rollback().await?;
            return Ok(asked.map_or(Paused::NotHeld, Paused::CancelAsked));
        }
        tx.execute(
            "INSERT INTO approvals (approval_id, run_id, schedule_id, user_id, tool_name,
             arguments, resume_json, created_at, expires_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            libsql::params![
                approval_id.as_str(),
                claim.run_id.as_str(),
                claim.schedule.schedule_id.as_str(),
                claim.schedule.user_id.as_str(),
                wait.tool_name.as_str(),
                wait.arguments.as_str(),
                wait.saved.to_string(),
                now,
                expires_at
            ],
        )
        .await?;
        let mut announced = false;
        if let Some((router, _)) = &self.notifications {
            let key = crate::approval::link_key_in(&tx).await?;
            let schedule = &claim.schedule;
            let plan = router.plan(&Recipient {
                user_id: &schedule.user_id,
                schedule_id: &schedule.schedule_id,
                channel_id: schedule.channel_id.as_deref(),
                channel_context_id: schedule.channel_context_id.as_deref(),
            });
            let name = schedule.name.as_deref().unwrap_or(&schedule.schedule_id);
            let link = |action| {
                plan.public_url.as_ref().map(|base| {
                    format!(
                        "{base}/approval-link/{}",
                        key.sign(&approval_id, action, expires_at)
                    )
                })
            };
            let (approve_url, deny_url) = (link(LinkAction::Approve), link(LinkAction::Deny));
            let mut text = format!(
                "Arguments: {}\n\n",
                truncate_chars(&wait.arguments, ARGUMENTS_SHOWN)
            );
            if let (Some(approve), Some(deny)) = (&approve_url, &deny_url) {
                text.push_str(&format!("Approve: {approve}\nDeny: {deny}\n\n"));
            }
            text.push_str(&format!(
                "Or answer with `nightshift approvals approve {approval_id}` (or deny). \
                 Unanswered by {}, it counts as denied.",
                to_rfc3339(expires_at)
            ));
            let payload = serde_json::json!({
                "event": "approval.requested",
                "approval_id": approval_id,
                "schedule_id": schedule.schedule_id,
                "schedule_name": schedule.name,
                "run_id": claim.run_id,
                "user_id": schedule.user_id,
                "status": "waiting",
                "tool_name": wait.tool_name,
                "arguments": truncate_chars(&wait.arguments, ARGUMENTS_SHOWN),
                "expires_at": to_rfc3339(expires_at),
                "approve_url": approve_url,
                "deny_url": deny_url,
                "run_url": plan.public_url.as_ref()
                    .map(|base| format!("{base}/v1/runs/{}", claim.run_id)),
                "summary": format!("{name} asks to call {}: approve or deny", wait.tool_name),
                "output": text,
            });
            enqueue_keyed_in(
                &tx,
                &plan,
                &format!("approval:{approval_id}"),
                NewMessage {
                    kind: "approval",
                    run_id: Some(&claim.run_id),
                    schedule_id: Some(&schedule.schedule_id),
                    user_id: &schedule.user_id,
                    priority: Priority::High,
                    payload,
                },
                now,
            )
            .await?;
            announced = true;
        }
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
        // Its live views show it waiting now.
        self.progress_moved(Some(&claim.run_id));
        if let Some((memory, stored)) = appended {
            memory.appended(&stored);
        }
        if announced {
            if let Some((_, sender)) = &self.notifications {
                sender.notify_one();
            }
        }
        Ok(Paused::Waiting(Waiting {
            approval_id,
            expires_at,
        }))
    }

    /// Takes up to `limit` waiting runs whose approval is answered, or was not answered
    /// in time (answered deny here, by `timeout`), each as `running` under `worker`'s
    /// lease, with the answer and what its runtime kept. A run another worker took first
    /// is left to it. Reads only, when there is nothing to take.
    pub async fn resume_answered(
        &self,
        worker: &str,
        lease_ms: i64,
        limit: usize,
    ) -> Result<Vec<Claim>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let now = self.clock.now_ms();
        let conn = self.db.conn().await?;
        let mut rows = conn
            .query(
                &format!(
                    "SELECT {HELD_RUN}, a.approval_id, a.resume_json
                     FROM approvals a JOIN schedule_runs r ON r.run_id = a.run_id
                     LEFT JOIN schedule_events e ON e.event_id = r.event_id
                     WHERE a.approval_id IN (
                         SELECT approval_id FROM approvals
                         WHERE state != 'pending' AND resumed_at IS NULL
                         UNION ALL
                         SELECT approval_id FROM approvals
                         WHERE state = 'pending' AND expires_at <= ?1)
                     AND r.status = 'waiting'
                     LIMIT ?2"
                ),
                libsql::params![now, limit as i64],
            )
            .await?;
        let mut answered = Vec::new();
        while let Some(row) = rows.next().await? {
            let held = HeldRun::from_row(&row)?;
            let approval_id: String = row.get(AFTER_HELD_RUN)?;
            let saved: Option<String> = row.get(AFTER_HELD_RUN + 1)?;
            answered.push((held, approval_id, saved));
        }
        drop(rows);
        let mut claims = Vec::new();
        for (held, approval_id, saved) in answered {
            let tx = conn.write_tx_writing_first().await?;
            let taken = tx
                .execute(
                    "UPDATE schedule_runs SET status = 'running', worker_id = ?2,
                     lease_expires_at = ?3 WHERE run_id = ?1 AND status = 'waiting'",
                    libsql::params![held.run_id.as_str(), worker, now + lease_ms],
                )
                .await?;
            // The answer as it stands in this transaction: a person's answer that came
            // first stands; a request still pending and out of time is denied here.
            let answer = query_first_row(
                &tx,
                "UPDATE approvals SET
                     state = CASE WHEN state = 'pending' THEN 'expired' ELSE state END,
                     decided_by = CASE WHEN state = 'pending' THEN 'timeout' ELSE decided_by END,
                     decided_at = coalesce(decided_at, ?2),
                     resumed_at = ?2, resume_json = NULL
                 WHERE approval_id = ?1 AND resumed_at IS NULL
                 AND (state != 'pending' OR expires_at <= ?2)
                 RETURNING state, decided_by, reason",
                libsql::params![approval_id.as_str(), now],
                |row| {
                    Ok((
                        row.get::<String>(0)?,
                        row.get::<Option<String>>(1)?,
                        row.get::<Option<String>>(2)?,
                    ))
                },
            )
            .await?;
            let (1, Some((state, decided_by, reason))) = (taken, answer) else {
                tx.rollback().await?;
                continue;
            };
            tx.commit().await?;
            let resume = Resume {
                approval_id,
                state: state.parse().map_err(|reason| DbError::Corrupt {
                    what: "approval state".into(),
                    reason,
                })?,
                decided_by: decided_by.unwrap_or_default(),
                reason,
                // Unreadable, the runtime starts the goal over (as after a lost worker).
                saved: saved
                    .and_then(|s| serde_json::from_str(&s).ok())
                    .unwrap_or(serde_json::Value::Null),
            };
            tracing::info!(run_id = %held.run_id, approval_id = %resume.approval_id, state = %resume.state, "resuming a run after its approval was answered");
            let schedule = self.load(&held.schedule_id).await?;
            let mut claim = held.into_claim(schedule);
            claim.resume = Some(resume);
            claims.push(claim);
        }
        Ok(claims)
    }
}
