//! New schedules: validated, counted against the user's limit, and stored with their first
//! run, in one transaction (or inside a caller's, for config sync's all-or-nothing).

use super::ScheduleStore;
use crate::access::Actor;
use crate::db::{query_scalar, WriteTx};
use crate::ids;
use crate::input::InputError;
use crate::schedule::types::{NewSchedule, Schedule};
use crate::schedule::validate::check_new;
use crate::schedule::{Result, ScheduleError};

const INSERT: &str = "INSERT INTO schedules (schedule_id, user_id, name, goal, cadence_json,
    cadence_text, source, notify, overlap, catch_up, max_attempts, timeout_secs, max_turns,
    max_cost, status, status_reason, created_at, updated_at, next_run_at, last_run_at,
    last_run_status, consecutive_failures, channel_id, channel_context_id, starts_at, ends_at,
    max_runs, skip_json, jitter_secs, next_nominal_at, catch_up_window_secs, after_schedule_id,
    after_on, calendars_json, calendar_dates_json, agent_id, tools_json, approve_json,
    alerts_json)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, 'active', NULL, ?15,
    ?15, ?16, NULL, NULL, 0, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29,
    ?30, ?31, ?32, ?33)";

impl ScheduleStore {
    /// Validates and stores a schedule for the actor; its first run is the cadence's next
    /// occurrence. A user may create schedules only for themselves.
    pub async fn create(&self, actor: &Actor, new: &NewSchedule) -> Result<Schedule> {
        if !actor.may_act_for(&new.user_id) {
            return Err(
                InputError::new("user", "a user may create schedules only for themselves").into(),
            );
        }
        let now = self.clock.now_ms();
        check_new(new, now, &self.limits)?;
        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        let schedule_id = match self.create_in(&tx, new, now).await {
            Ok(id) => id,
            Err(err) => {
                tx.rollback().await?;
                return Err(err);
            }
        };
        tx.commit().await?;
        self.load(&schedule_id).await
    }

    /// Stores an already validated schedule inside the caller's transaction; returns its
    /// id. Refused when the user is at their limit.
    pub(crate) async fn create_in(
        &self,
        tx: &WriteTx,
        new: &NewSchedule,
        now: i64,
    ) -> Result<String> {
        // The calendars' dates as the worker wrote them, checked with them.
        let with_dates;
        let new = if new.bounds.calendars.is_empty() {
            new
        } else {
            let mut resolved = new.clone();
            resolved.bounds.calendar_dates =
                crate::schedule::calendar::dates_in(tx, &new.bounds.calendars).await?;
            crate::schedule::validate::check_cadence(&resolved, now, &self.limits)?;
            with_dates = resolved;
            &with_dates
        };
        let count: i64 = query_scalar(
            tx,
            "SELECT count(*) FROM schedules WHERE user_id = ?1 AND status IN ('active', 'paused')",
            [new.user_id.as_str()],
        )
        .await?
        .unwrap_or(0);
        if count >= self.limits.max_per_user {
            return Err(ScheduleError::TooMany {
                user_id: new.user_id.clone(),
                limit: self.limits.max_per_user,
            });
        }
        if let Some(upstream) = &new.after {
            super::events::check_upstream(tx, &new.user_id, None, &upstream.schedule_id).await?;
        }
        let schedule_id = ids::new_id("sch");
        let (due, nominal) = next_due(&schedule_id, new, new.next_after(now));
        let cadence_json = serde_json::to_string(&new.cadence)
            .map_err(|e| InputError::new("cadence", format!("cannot be stored: {e}")))?;
        tx.execute(
            INSERT,
            libsql::params![
                schedule_id.as_str(),
                new.user_id.as_str(),
                new.name.as_deref(),
                new.goal.as_str(),
                cadence_json,
                new.cadence_text.as_deref(),
                new.source.as_str(),
                new.notify.as_str(),
                new.overlap.as_str(),
                new.catch_up.as_str(),
                new.max_attempts,
                new.timeout_secs,
                new.max_turns,
                new.max_cost,
                now,
                due,
                new.channel_id.as_deref(),
                new.channel_context_id.as_deref(),
                new.bounds.starts_at,
                new.bounds.ends_at,
                new.bounds.max_runs,
                skip_json(&new.bounds)?,
                new.jitter_secs,
                nominal,
                new.catch_up_window_secs,
                new.after.as_ref().map(|a| a.schedule_id.as_str()),
                new.after.as_ref().map(|a| a.on.as_str()),
                calendars_json(&new.bounds)?,
                calendar_dates_json(&new.bounds),
                new.agent_id.as_deref(),
                tools_json(&new.tools)?,
                approve_json(&new.approve)?,
                alerts_json(&new.alerts)?
            ],
        )
        .await?;
        Ok(schedule_id)
    }

    /// Deletes a schedule inside the caller's transaction (config sync).
    pub(crate) async fn delete_in(&self, tx: &WriteTx, schedule_id: &str) -> Result<()> {
        tx.execute(
            "DELETE FROM schedules WHERE schedule_id = ?1",
            [schedule_id],
        )
        .await?;
        Ok(())
    }
}

/// The skipped dates as stored: a JSON array, or NULL when there are none.
pub(super) fn skip_json(bounds: &crate::schedule::bounds::Bounds) -> Result<Option<String>> {
    if bounds.skip.is_empty() {
        return Ok(None);
    }
    serde_json::to_string(&bounds.skip)
        .map(Some)
        .map_err(|e| InputError::new("skip", format!("cannot be stored: {e}")).into())
}

/// The calendars' names as stored: a JSON array, or NULL when there are none.
pub(super) fn calendars_json(bounds: &crate::schedule::bounds::Bounds) -> Result<Option<String>> {
    if bounds.calendars.is_empty() {
        return Ok(None);
    }
    serde_json::to_string(&bounds.calendars)
        .map(Some)
        .map_err(|e| InputError::new("calendars", format!("cannot be stored: {e}")).into())
}

/// The tool patterns as stored: NULL when there are none.
pub(super) fn tools_json(tools: &[String]) -> Result<Option<String>> {
    if tools.is_empty() {
        return Ok(None);
    }
    serde_json::to_string(tools)
        .map(Some)
        .map_err(|e| InputError::new("tools", format!("cannot be stored: {e}")).into())
}

/// The approval patterns as stored: NULL when there are none.
pub(super) fn approve_json(approve: &[String]) -> Result<Option<String>> {
    if approve.is_empty() {
        return Ok(None);
    }
    serde_json::to_string(approve)
        .map(Some)
        .map_err(|e| InputError::new("approve", format!("cannot be stored: {e}")).into())
}

/// The alert settings as stored: NULL when there are none.
pub(super) fn alerts_json(alerts: &crate::schedule::types::Alerts) -> Result<Option<String>> {
    if alerts.is_empty() {
        return Ok(None);
    }
    serde_json::to_string(alerts)
        .map(Some)
        .map_err(|e| InputError::new("alerts", format!("cannot be stored: {e}")).into())
}

/// The calendars' dates as stored with the schedule, or NULL when it names none.
pub(super) fn calendar_dates_json(bounds: &crate::schedule::bounds::Bounds) -> Option<String> {
    (!bounds.calendars.is_empty())
        .then(|| serde_json::to_string(&bounds.calendar_dates).expect("dates serialize"))
}

/// When the occurrence `nominal` of a schedule is due, and the nominal time to store
/// beside it when jitter moved it (`next_nominal_at`).
pub(super) fn next_due(
    schedule_id: &str,
    new: &NewSchedule,
    nominal: Option<i64>,
) -> (Option<i64>, Option<i64>) {
    match nominal {
        Some(at) if new.jitter_secs.is_some() => (
            Some(crate::schedule::jitter::due_at(
                schedule_id,
                at,
                new.jitter_secs,
            )),
            Some(at),
        ),
        other => (other, None),
    }
}
