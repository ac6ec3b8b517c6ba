//! The messages a finished run calls for, written into the outbox inside the transaction
//! that records the run: the run's result by the schedule's policy, a notice when it keeps
//! failing, and one when it was paused for it.

use super::ScheduleStore;
use crate::db::{clock::to_rfc3339, query_scalar, WriteTx};
use crate::notify::digest::{DigestItem, HeldLine, LINE_CHARS};
use crate::notify::outbox::{enqueue_in, NewMessage, NotifyPlan, Priority};
use crate::notify::policy::run_message;
use crate::schedule::types::{Claim, NotifyPolicy, RunOutcome, RunStatus};

use crate::schedule::Result;
use crate::text::truncate_chars;

impl ScheduleStore {
    /// Writes the messages a finished run calls for into the outbox, inside the
    /// transaction recording it. Returns whether any was written.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn announce(
        &self,
        tx: &WriteTx,
        claim: &Claim,
        plan: &NotifyPlan,
        status: RunStatus,
        outcome: &RunOutcome,
        output: Option<&str>,
        failures: i64,
        paused: bool,
        pause_reason: Option<&str>,
        now: i64,
    ) -> Result<bool> {
        let schedule = &claim.schedule;
        let name = schedule
            .name
            .clone()
            .unwrap_or_else(|| schedule.schedule_id.clone());
        // A message carries a bounded share of the output (the run keeps more, and the
        // whole answer up to its own limit): every channel gets a message it can take.
        let payload = |event: &str, summary: String, output: String| {
            let cut = output.chars().count() > plan.max_message_chars;
            let output = if cut {
                format!(
                    "{}\n[…]",
                    truncate_chars(&output, plan.max_message_chars.saturating_sub(4))
                )
            } else {
                output
            };
            let run_url = plan
                .public_url
                .as_ref()
                .map(|base| format!("{base}/v1/runs/{}", claim.run_id));
            serde_json::json!({
                "run_url": run_url,
                "output_truncated": cut,
                "event": event,
                "schedule_id": schedule.schedule_id,
                "schedule_name": schedule.name,
                "run_id": claim.run_id,
                "user_id": schedule.user_id,
                "status": status.as_str(),
                "scheduled_for": to_rfc3339(claim.scheduled_for),
                "summary": summary,
                "output": output,
            })
        };
        let message =
            |kind: &'static str, priority: Priority, payload: serde_json::Value| NewMessage {
                kind,
                run_id: Some(&claim.run_id),
                schedule_id: Some(&schedule.schedule_id),
                user_id: &schedule.user_id,
                priority,
                payload,
            };
        let mut written = false;
        // Only "on_change" compares with the last success: the others skip the read
        // (a round trip, inside the write transaction, on a server).
        let previous: Option<String> = if schedule.notify == NotifyPolicy::OnChange {
            query_scalar(
                tx,
                "SELECT output FROM schedule_runs WHERE schedule_id = ?1 AND status = 'succeeded'
                 AND run_id != ?2 ORDER BY scheduled_for DESC LIMIT 1",
                libsql::params![schedule.schedule_id.as_str(), claim.run_id.as_str()],
            )
            .await?
        } else {
            None
        };
        if let Some(text) = run_message(
            schedule.notify,
            status.is_success(),
            output,
            previous.as_deref(),
            &plan.marker,
        ) {
            let error = outcome.error.clone().unwrap_or_default();
            let summary = if status.is_success() {
                format!(
                    "{name}: {}",
                    truncate_chars(text.lines().next().unwrap_or("done"), 200)
                )
            } else {
                format!("{name}: run {status}: {}", truncate_chars(&error, 200))
            };
            let priority = if status.is_success() {
                Priority::Normal
            } else {
                Priority::High
            };
            if schedule.notify == NotifyPolicy::Digest {
                let line = if status.is_success() {
                    text.lines()
                        .find(|l| !l.trim().is_empty())
                        .unwrap_or("done")
                } else {
                    error.lines().next().unwrap_or_default()
                };
                let item = DigestItem {
                    run_id: claim.run_id.clone(),
                    schedule_name: name.clone(),
                    status: status.as_str().to_string(),
                    scheduled_for: to_rfc3339(claim.scheduled_for),
                    line: truncate_chars(line.trim(), LINE_CHARS).to_string(),
                    run_url: plan
                        .public_url
                        .as_ref()
                        .map(|base| format!("{base}/v1/runs/{}", claim.run_id)),
                };
                let held = HeldLine {
                    schedule_id: &schedule.schedule_id,
                    user_id: &schedule.user_id,
                    item: &item,
                };
                crate::notify::digest::hold_in(tx, plan, held, now).await?;
            } else {
                let mut payload = payload("run.finished", summary, text);
                // The files the run produced, stored before this transaction.
                let artifacts = crate::artifact::of_run_in(tx, &claim.run_id).await?;
                if !artifacts.is_empty() {
                    payload["artifacts"] =
                        crate::artifact::notice_json(&artifacts, plan.public_url.as_deref());
                }
                enqueue_in(tx, plan, message("run", priority, payload), now).await?;
            }
            written = true;
        }
        // A schedule with an `alert_failures` of its own is told by that alert instead.
        if !status.is_success()
            && failures == plan.failure_notice_after
            && schedule.alerts.failures.is_none()
        {
            let summary = format!("{name} has failed {failures} times in a row");
            let last = outcome.error.clone().unwrap_or_default();
            enqueue_in(
                tx,
                plan,
                message(
                    "failing",
                    Priority::High,
                    payload("schedule.failing", summary, last),
                ),
                now,
            )
            .await?;
            written = true;
        }
        if paused {
            let summary = format!(
                "{name} was paused: {}",
                pause_reason.unwrap_or("too many failures")
            );
            let last = outcome.error.clone().unwrap_or_default();
            enqueue_in(
                tx,
                plan,
                message(
                    "paused",
                    Priority::High,
                    payload("schedule.paused", summary, last),
                ),
                now,
            )
            .await?;
            written = true;
        }
        Ok(written)
    }
}
