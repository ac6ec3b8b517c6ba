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

use super::alert_messages::tell_all;
use super::ScheduleStore;
use crate::db::{clock::to_rfc3339, fetch_all, fetch_readable, query_first_row, FromRow, WriteTx};
use crate::notify::outbox::NotifyPlan;
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
        // Late incidents whose occurrence was taken, and incidents to open: each told
        // with the others of the same person and channel, one message for several
        // (after an outage, one for everything it held up, not one per schedule).
        let mut ending: Vec<(&Schedule, i64)> = Vec::new();
        let mut opening: Vec<ToOpen> = Vec::new();
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
                    // Told below, with the others of the same person and channel.
                    ending.push((schedule, incident.since));
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
                opening.push(ToOpen {
                    schedule,
                    kind: "late",
                    since: due,
                    // Only if it is still waiting for that occurrence.
                    still: "EXISTS (SELECT 1 FROM schedules WHERE schedule_id = ?1
                            AND status = 'active' AND next_run_at = ?4)",
                    text,
                });
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
                opening.push(ToOpen {
                    schedule,
                    kind: "silent",
                    since,
                    // Only if no run has succeeded since it was read.
                    still: "EXISTS (SELECT 1 FROM schedules WHERE schedule_id = ?1
                            AND status = 'active'
                            AND (last_success_at IS NULL OR last_success_at <= ?4))",
                    text,
                });
            }
        }
        for group in by_recipient(ending, |(schedule, _)| *schedule) {
            checked.ended += self.end_told(router, &group, now).await?;
        }
        for group in by_recipient(opening, |item| item.schedule) {
            checked.opened += self.open_told(router, &group, now).await?;
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

    /// Opens the incidents of one person and channel that still hold, and tells them in
    /// one message (or the one alone), in one transaction. Returns how many opened: those
    /// another worker opened first are not told again.
    async fn open_told(
        &self,
        router: &crate::notify::router::Router,
        group: &[ToOpen<'_>],
        now: i64,
    ) -> Result<usize> {
        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        let mut opened = Vec::new();
        for item in group {
            let id = &item.schedule.schedule_id;
            if open(&tx, id, item.kind, item.since, item.still, now).await? {
                opened.push((item.schedule, item.kind, item.since, item.text.clone()));
            }
        }
        if let Some((schedule, ..)) = opened.first() {
            let plan = router.plan(&recipient(schedule));
            tell_all(&tx, &plan, opened.clone(), false, now).await?;
        }
        tx.commit().await?;
        Ok(opened.len())
    }

    /// Ends the late incidents of one person and channel whose occurrence was taken, and
    /// tells them in one message (or the one alone), in one transaction. Returns how
    /// many ended: those another worker ended first are not told again.
    async fn end_told(
        &self,
        router: &crate::notify::router::Router,
        group: &[(&Schedule, i64)],
        now: i64,
    ) -> Result<usize> {
        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        let mut ended = Vec::new();
        for &(schedule, since) in group {
            if close(&tx, &schedule.schedule_id, "late", since).await? {
                let text = self.late_ended(&tx, schedule, since).await?;
                ended.push((schedule, "late", since, text));
            }
        }
        if let Some((schedule, ..)) = ended.first() {
            let plan = router.plan(&recipient(schedule));
            tell_all(&tx, &plan, ended.clone(), true, now).await?;
        }
        tx.commit().await?;
        Ok(ended.len())
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

/// An incident this look found, to open if it still holds.
struct ToOpen<'a> {
    schedule: &'a Schedule,
    kind: &'static str,
    since: i64,
    /// SQL that must still hold when it opens (see [`open`]).
    still: &'static str,
    /// What the message says of it.
    text: String,
}

/// Who a schedule's messages go to: its user, channel and channel context.
type RecipientKey = (String, Option<String>, Option<String>);

/// `items` in groups of one person and channel, in the order first met.
fn by_recipient<T>(items: Vec<T>, schedule: impl Fn(&T) -> &Schedule) -> Vec<Vec<T>> {
    let mut groups: Vec<(RecipientKey, Vec<T>)> = Vec::new();
    for item in items {
        let s = schedule(&item);
        let key = (
            s.user_id.clone(),
            s.channel_id.clone(),
            s.channel_context_id.clone(),
        );
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, group)) => group.push(item),
            None => groups.push((key, vec![item])),
        }
    }
    groups.into_iter().map(|(_, group)| group).collect()
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
            tell_all(tx, plan, vec![(schedule, kind, *since, text)], true, now).await?;
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
    tell_all(
        tx,
        plan,
        vec![(schedule, "failures", now, text)],
        false,
        now,
    )
    .await?;
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
