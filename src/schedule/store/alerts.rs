//! Alerts to a schedule's owner, on the schedule's channel through the outbox: its run has
//! not started `alert_late` after its time, `alert_failures` runs in a row failed, or no
//! run succeeded for `alert_silent`. An incident is a row of `schedule_alerts` while it
//! lasts: inserted once (told once, whichever worker sees it first) and deleted once (its
//! end told once). Failures open and close inside the transaction that records a run
//! ([`on_finish`]); lateness and silence open with time, found by [`ScheduleStore::check_alerts`],
//! which every worker runs every [`ALERT_CHECK_EVERY`].

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use serde::Serialize;

use super::ScheduleStore;
use crate::db::{clock::to_rfc3339, fetch_all, fetch_readable, query_first_row, FromRow, WriteTx};
use crate::notify::outbox::{enqueue_keyed_in, NewMessage, NotifyPlan, Priority};
use crate::notify::router::Recipient;
use crate::schedule::cadence::format_duration;
use crate::schedule::types::{Claim, RunStatus, Schedule, ScheduleStatus};
use crate::schedule::Result;

/// How often a worker looks for runs gone late and schedules gone silent.
pub const ALERT_CHECK_EVERY: Duration = Duration::from_secs(30);

/// What one look found (for the log and the tests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct AlertsChecked {
    /// Incidents opened and told.
    pub opened: usize,
    /// Incidents ended and told.
    pub ended: usize,
}

/// An incident as stored.
struct Incident {
    schedule_id: String,
    kind: String,
    since: i64,
}

impl FromRow for Incident {
    const COLUMNS: &'static str = "schedule_id, kind, since";

    fn from_row(row: &libsql::Row) -> std::result::Result<Self, crate::db::DbError> {
        Ok(Self {
            schedule_id: row.get(0)?,
            kind: row.get(1)?,
            since: row.get(2)?,
        })
    }
}

/// What the checker does with an open incident.
enum Next {
    /// It goes on.
    Keep,
    /// It ends, and the owner is told.
    Told,
    /// It ends without a word: the schedule was paused, ended or deleted, or its alert
    /// taken away.
    Quietly,
    /// The late occurrence was taken, and the next one is late too (a backlog draining
    /// under `catch_up = "all"` or `buffer_all`): the same incident, now about that one.
    MovedTo(i64),
}

/// Where silence is counted from: the last success, or when the schedule was added or
/// starts, whichever is latest (SQL over `schedules`).
const SILENT_SINCE: &str = "CASE WHEN starts_at > coalesce(last_success_at, created_at)
    THEN starts_at ELSE coalesce(last_success_at, created_at) END";

impl ScheduleStore {
    /// Opens the incidents time has made (a run `alert_late` past its time, no success
    /// for `alert_silent`) and ends those time has ended (the late occurrence was taken),
    /// telling each once. Incidents of a schedule paused, ended or deleted, or whose alert
    /// was taken away, end without a word. Reads only the schedules past a threshold or
    /// with an incident open. Nothing to do without notifications.
    pub async fn check_alerts(&self) -> Result<AlertsChecked> {
        let Some((router, _)) = &self.notifications else {
            return Ok(AlertsChecked::default());
        };
        let now = self.clock.now_ms();
        let conn = self.db.conn().await?;
        let (schedules, unreadable) = fetch_readable::<Schedule>(
            &conn,
            &format!(
                "SELECT {} FROM schedules
                 WHERE schedule_id IN (SELECT schedule_id FROM schedule_alerts)
                 OR (status = 'active' AND alerts_json IS NOT NULL AND (
                     next_run_at <= ?1 - 1000 * CAST(json_extract(alerts_json, '$.late_secs') AS BIGINT)
                     OR {SILENT_SINCE}
                        <= ?1 - 1000 * CAST(json_extract(alerts_json, '$.silent_secs') AS BIGINT)))",
                Schedule::COLUMNS
            ),
            [now],
        )
        .await?;
        let open: Vec<Incident> = fetch_all(
            &conn,
            &format!("SELECT {} FROM schedule_alerts", Incident::COLUMNS),
            (),
        )
        .await?;
        drop(conn);
        // A schedule that cannot be read is paused by the scheduler's due read; its
        // incidents wait, and the others go on.
        for bad in &unreadable {
            tracing::warn!(schedule_id = %bad.id, reason = %bad.reason,
                "a stored schedule cannot be read; its alerts are not looked at");
        }
        let by_id: HashMap<&str, &Schedule> = schedules
            .iter()
            .map(|s| (s.schedule_id.as_str(), s))
            .collect();
        let is_open: HashSet<(&str, &str)> = open
            .iter()
            .map(|i| (i.schedule_id.as_str(), i.kind.as_str()))
            .collect();
        let mut checked = AlertsChecked::default();
        for incident in &open {
            if unreadable.iter().any(|bad| bad.id == incident.schedule_id) {
                continue;
            }
            let schedule = by_id.get(incident.schedule_id.as_str()).copied();
            let next = next_for(incident, schedule, now);
            if matches!(next, Next::Keep) {
                continue;
            }
            let conn = self.db.conn().await?;
            let tx = conn.write_tx().await?;
            match (next, schedule) {
                (Next::MovedTo(due), _) => {
                    tx.execute(
                        "UPDATE schedule_alerts SET since = ?4
                         WHERE schedule_id = ?1 AND kind = ?2 AND since = ?3",
                        libsql::params![
                            incident.schedule_id.as_str(),
                            incident.kind.as_str(),
                            incident.since,
                            due
                        ],
                    )
                    .await?;
                }
                (Next::Told, Some(schedule)) => {
                    if close(&tx, &incident.schedule_id, &incident.kind, incident.since).await? {
                        let text = self.late_ended(&tx, schedule, incident.since).await?;
                        let plan = router.plan(&recipient(schedule));
                        let told = Told::Ended("late", incident.since, text);
                        tell(&tx, &plan, schedule, told, now).await?;
                        checked.ended += 1;
                    }
                }
                _ => {
                    close(&tx, &incident.schedule_id, &incident.kind, incident.since).await?;
                }
            }
            tx.commit().await?;
        }
        for schedule in schedules
            .iter()
            .filter(|s| s.status == ScheduleStatus::Active)
        {
            let id = schedule.schedule_id.as_str();
            let late = schedule
                .alerts
                .late_secs
                .zip(schedule.next_run_at)
                .filter(|&(late, due)| now.saturating_sub(due) >= late.saturating_mul(1000));
            if let Some((late, due)) = late.filter(|_| !is_open.contains(&(id, "late"))) {
                let text = format!(
                    "its run due at {} has not started ({} after its time; alert_late = {})",
                    to_rfc3339(due),
                    format_duration((now - due) / 1000),
                    format_duration(late)
                );
                // Only if it is still waiting for that occurrence.
                let still = "EXISTS (SELECT 1 FROM schedules WHERE schedule_id = ?1
                             AND status = 'active' AND next_run_at = ?4)";
                let opened = self
                    .open_told(router, schedule, "late", due, still, text, now)
                    .await?;
                checked.opened += usize::from(opened);
            }
            let since = silent_since(schedule);
            let silent = schedule
                .alerts
                .silent_secs
                .filter(|&silent| now.saturating_sub(since) >= silent.saturating_mul(1000));
            if let Some(silent) = silent.filter(|_| !is_open.contains(&(id, "silent"))) {
                let text = format!(
                    "no run has succeeded since {} (alert_silent = {})",
                    to_rfc3339(since),
                    format_duration(silent)
                );
                // Only if no run has succeeded since it was read.
                let still = "EXISTS (SELECT 1 FROM schedules WHERE schedule_id = ?1
                             AND status = 'active'
                             AND (last_success_at IS NULL OR last_success_at <= ?4))";
                let opened = self
                    .open_told(router, schedule, "silent", since, still, text, now)
                    .await?;
                checked.opened += usize::from(opened);
            }
        }
        if checked != AlertsChecked::default() {
            tracing::info!(
                opened = checked.opened,
                ended = checked.ended,
                "schedule alerts told"
            );
            if let Some((_, sender)) = &self.notifications {
                sender.notify_one();
            }
        }
        Ok(checked)
    }

    /// Opens the incident `kind` of `schedule` since `since` if `still` (SQL over the
    /// parameters schedule id, kind, now, since) holds, and tells it, in one transaction;
    /// false when another worker opened it first, or it no longer holds.
    #[allow(clippy::too_many_arguments)]
    async fn open_told(
        &self,
        router: &crate::notify::router::Router,
        schedule: &Schedule,
        kind: &'static str,
        since: i64,
        still: &str,
        text: String,
        now: i64,
    ) -> Result<bool> {
        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        let opened = open(&tx, &schedule.schedule_id, kind, since, still, now).await?;
        if opened {
            let plan = router.plan(&recipient(schedule));
            tell(&tx, &plan, schedule, Told::Opened(kind, since, text), now).await?;
        }
        tx.commit().await?;
        Ok(opened)
    }

    /// What became of the occurrence due at `due` that was late: its run's start, or its
    /// skip and why.
    async fn late_ended(&self, tx: &WriteTx, schedule: &Schedule, due: i64) -> Result<String> {
        let run: Option<(String, Option<i64>, Option<String>)> = query_first_row(
            tx,
            "SELECT status, started_at, error FROM schedule_runs WHERE schedule_id = ?1
             AND coalesce(due_at, scheduled_for) = ?2 AND event_id IS NULL",
            libsql::params![schedule.schedule_id.as_str(), due],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .await?;
        let due_at = to_rfc3339(due);
        Ok(match run {
            Some((status, _, error)) if status == RunStatus::Skipped.as_str() => format!(
                "the occurrence due at {due_at} was skipped: {}",
                error.unwrap_or_default()
            ),
            Some((_, Some(started), _)) => format!(
                "its run due at {due_at} started at {} ({} after its time)",
                to_rfc3339(started),
                format_duration(started.saturating_sub(due).max(0) / 1000)
            ),
            _ => format!("the occurrence due at {due_at} is no longer waiting"),
        })
    }
}

/// What becomes of `incident`, with its schedule as it is now (`None`: deleted).
fn next_for(incident: &Incident, schedule: Option<&Schedule>, now: i64) -> Next {
    let Some(schedule) = schedule else {
        return Next::Quietly;
    };
    let alerts = schedule.alerts;
    let configured = match incident.kind.as_str() {
        "late" => alerts.late_secs.is_some(),
        "failures" => alerts.failures.is_some(),
        _ => alerts.silent_secs.is_some(),
    };
    if !configured || schedule.status == ScheduleStatus::Paused {
        return Next::Quietly;
    }
    let active = schedule.status == ScheduleStatus::Active;
    if incident.kind != "late" {
        // Failures and silence end at a success (`on_finish`); a schedule that ended
        // has no more runs to succeed.
        return if active { Next::Keep } else { Next::Quietly };
    }
    if active && schedule.next_run_at == Some(incident.since) {
        return Next::Keep;
    }
    // The late occurrence was taken (or the schedule ended with it): told, unless the
    // next one is late already, which the same incident goes on about.
    match (active, schedule.next_run_at, alerts.late_secs) {
        (true, Some(next), Some(late)) if now.saturating_sub(next) >= late.saturating_mul(1000) => {
            Next::MovedTo(next)
        }
        _ => Next::Told,
    }
}

/// Where silence is counted from (see [`SILENT_SINCE`]).
fn silent_since(schedule: &Schedule) -> i64 {
    let base = schedule.last_success_at.unwrap_or(schedule.created_at);
    schedule
        .bounds
        .starts_at
        .map_or(base, |starts| starts.max(base))
}

/// Inside the transaction that records a run of `claim`'s schedule that ended as
/// `status`, after `failures` failed runs in a row: a success ends the schedule's
/// failures and silence incidents; a failure that makes `alert_failures` in a row opens
/// one. Returns whether it wrote a message.
pub(super) async fn on_finish(
    tx: &WriteTx,
    plan: &NotifyPlan,
    claim: &Claim,
    status: RunStatus,
    failures: i64,
    error: Option<&str>,
    now: i64,
) -> Result<bool> {
    let schedule = &claim.schedule;
    let alerts = schedule.alerts;
    // Any success ends them, whatever the alerts were when the run was claimed.
    if status.is_success() {
        let mut rows = tx
            .query(
                "DELETE FROM schedule_alerts WHERE schedule_id = ?1
                 AND kind IN ('failures', 'silent') RETURNING kind, since",
                [schedule.schedule_id.as_str()],
            )
            .await?;
        let mut ended = Vec::new();
        while let Some(row) = rows.next().await? {
            ended.push((row.get::<String>(0)?, row.get::<i64>(1)?));
        }
        drop(rows);
        for (kind, since) in &ended {
            let text = match kind.as_str() {
                "failures" => "a run succeeded again".to_string(),
                _ => format!(
                    "a run succeeded again, the first since {}",
                    to_rfc3339(*since)
                ),
            };
            let kind = if kind == "failures" {
                "failures"
            } else {
                "silent"
            };
            tell(tx, plan, schedule, Told::Ended(kind, *since, text), now).await?;
        }
        return Ok(!ended.is_empty());
    }
    let reached = alerts
        .failures
        .is_some_and(|n| failures >= n && status != RunStatus::Cancelled && !status.is_success());
    if !reached || !open(tx, &schedule.schedule_id, "failures", now, "true", now).await? {
        return Ok(false);
    }
    let text = format!(
        "{failures} runs in a row failed; the last: {}",
        crate::text::truncate_chars(error.unwrap_or("no error given"), 500)
    );
    tell(tx, plan, schedule, Told::Opened("failures", now, text), now).await?;
    Ok(true)
}

/// Opens an incident if `still` (SQL over ?1 the schedule's id, ?2 the kind, ?3 now, ?4
/// since) holds; false when it is open already, or `still` no longer holds.
async fn open(
    tx: &WriteTx,
    schedule_id: &str,
    kind: &str,
    since: i64,
    still: &str,
    now: i64,
) -> Result<bool> {
    let inserted = tx
        .execute(
            &format!(
                "INSERT INTO schedule_alerts (schedule_id, kind, opened_at, since)
                 SELECT ?1, ?2, ?3, ?4 WHERE {still} ON CONFLICT DO NOTHING"
            ),
            libsql::params![schedule_id, kind, now, since],
        )
        .await?;
    Ok(inserted == 1)
}

/// Ends an incident; false when it had ended already.
async fn close(tx: &WriteTx, schedule_id: &str, kind: &str, since: i64) -> Result<bool> {
    let deleted = tx
        .execute(
            "DELETE FROM schedule_alerts WHERE schedule_id = ?1 AND kind = ?2 AND since = ?3",
            libsql::params![schedule_id, kind, since],
        )
        .await?;
    Ok(deleted == 1)
}

fn recipient(schedule: &Schedule) -> Recipient<'_> {
    Recipient {
        user_id: &schedule.user_id,
        schedule_id: &schedule.schedule_id,
        channel_id: schedule.channel_id.as_deref(),
        channel_context_id: schedule.channel_context_id.as_deref(),
    }
}

/// A message about an incident: its kind, since when, and what to say.
enum Told {
    Opened(&'static str, i64, String),
    Ended(&'static str, i64, String),
}

/// Writes the message about an incident into the outbox. An alert is urgent (quiet hours
/// do not hold it); its end is not.
async fn tell(
    tx: &WriteTx,
    plan: &NotifyPlan,
    schedule: &Schedule,
    told: Told,
    now: i64,
) -> Result<()> {
    let name = schedule.name.as_deref().unwrap_or(&schedule.schedule_id);
    let (kind, since, text, ended) = match told {
        Told::Opened(kind, since, text) => (kind, since, text, false),
        Told::Ended(kind, since, text) => (kind, since, text, true),
    };
    let (event, priority, summary) = if ended {
        let what = match kind {
            "late" => "no longer late",
            "failures" => "no longer failing",
            _ => "no longer silent",
        };
        (
            "schedule.recovered",
            Priority::Normal,
            format!("{name}: {what}"),
        )
    } else {
        let what = match kind {
            "late" => "a run is late",
            "failures" => "runs keep failing",
            _ => "no run has succeeded for too long",
        };
        (
            match kind {
                "late" => "schedule.late",
                "failures" => "schedule.failures",
                _ => "schedule.silent",
            },
            Priority::High,
            format!("{name}: {what}"),
        )
    };
    let payload = serde_json::json!({
        "event": event,
        "alert": kind,
        "schedule_id": schedule.schedule_id,
        "schedule_name": schedule.name,
        "user_id": schedule.user_id,
        "since": to_rfc3339(since),
        "summary": summary,
        "output": text,
    });
    // Told once by the incident's row, written in the same transaction: the key need
    // only be new (an incident may open again at the same instant on a clock held still).
    let key = format!(
        "alert:{}:{kind}:{}",
        schedule.schedule_id,
        crate::ids::new_id(if ended { "ended" } else { "opened" })
    );
    let message = NewMessage {
        kind: "alert",
        run_id: None,
        schedule_id: Some(&schedule.schedule_id),
        user_id: &schedule.user_id,
        priority,
        payload,
    };
    enqueue_keyed_in(tx, plan, &key, message, now).await?;
    Ok(())
}
