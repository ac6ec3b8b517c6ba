//! Changing a schedule in place: its id, its run history and a run in progress stay. The
//! next run is worked out again only when the cadence changed; a finished schedule given a
//! new cadence is active again.

use super::ScheduleStore;
use crate::access::Actor;
use crate::db::{fetch_optional, query_scalar, FromRow, WriteTx};
use crate::input::InputError;
use crate::schedule::types::{NewSchedule, Schedule, ScheduleStatus, Source};
use crate::schedule::validate::{check_cadence, check_fields};
use crate::schedule::{Result, ScheduleError};

/// A schedule's new definition, as an edit worked it out from the stored one.
pub struct Edited {
    pub new: NewSchedule,
    /// The cadence, its zone or its bounds changed: the next run is worked out again.
    pub cadence_changed: bool,
}

const UPDATE: &str = "UPDATE schedules SET name = ?2, goal = ?3, cadence_json = ?4,
    cadence_text = ?5, notify = ?6, overlap = ?7, catch_up = ?8, max_attempts = ?9,
    timeout_secs = ?10, max_turns = ?11, max_cost = ?12, channel_id = ?13,
    channel_context_id = ?14, updated_at = ?15, starts_at = ?18, ends_at = ?19,
    max_runs = ?20, skip_json = ?21, jitter_secs = ?22, catch_up_window_secs = ?24,
    after_schedule_id = ?27, after_on = ?28, calendars_json = ?29, calendar_dates_json = ?30,
    agent_id = ?31, tools_json = ?32, approve_json = ?33, alerts_json = ?34,
    next_nominal_at = CASE WHEN ?16 THEN ?23 ELSE next_nominal_at END,
    runs_started = CASE WHEN CAST(?20 AS BIGINT) IS NULL OR max_runs IS NULL THEN 0 ELSE runs_started END,
    next_run_at = CASE WHEN ?16 THEN ?17 ELSE next_run_at END,
    consecutive_failures = CASE WHEN ?25 AND status IN ('completed', 'failed') THEN 0
                                ELSE consecutive_failures END,
    status_reason = CASE WHEN ?25 AND status IN ('completed', 'failed') THEN NULL
                         WHEN ?26 AND status = 'active' THEN 'ran the runs max_runs allows'
                         ELSE status_reason END,
    status = CASE WHEN ?25 AND status IN ('completed', 'failed') THEN 'active'
                  WHEN ?26 AND status = 'active' THEN 'completed'
                  ELSE status END
    WHERE schedule_id = ?1";

impl ScheduleStore {
    /// Changes a schedule the actor may act on, in one transaction: `edit` is given the
    /// schedule as stored and returns its new definition, which is checked as a new
    /// schedule's would be (the cadence only when it changed) before anything is written.
    /// A schedule from the config file is changed there, not here.
    pub async fn edit(
        &self,
        actor: &Actor,
        schedule_id: &str,
        edit: impl FnOnce(&Schedule) -> Result<Edited>,
    ) -> Result<Schedule> {
        let now = self.clock.now_ms();
        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        let applied = async {
            super::lock_schedules(&tx, "schedule_id = ?1", [schedule_id]).await?;
            let current: Schedule = fetch_optional(
                &tx,
                &format!(
                    "SELECT {} FROM schedules WHERE schedule_id = ?1",
                    Schedule::COLUMNS
                ),
                [schedule_id],
            )
            .await?
            .filter(|s: &Schedule| actor.may_act_for(&s.user_id))
            .ok_or_else(|| ScheduleError::NotFound(schedule_id.to_string()))?;
            if current.source == Source::Config {
                return Err(ScheduleError::State(format!(
                    "schedule `{schedule_id}` comes from the config file: change it there"
                )));
            }
            let edited = edit(&current)?;
            if edited.new.user_id != current.user_id {
                return Err(InputError::new("user", "a schedule keeps its user").into());
            }
            self.update_in(&tx, &current, &edited, now).await
        }
        .await;
        super::settle(tx, applied, true).await?;
        self.load(schedule_id).await
    }

    /// Writes `edited` over `current` inside the caller's transaction (an edit, or config
    /// sync): checked first, and refused when it would make a finished schedule active
    /// again for a user at their limit.
    pub(crate) async fn update_in(
        &self,
        tx: &WriteTx,
        current: &Schedule,
        edited: &Edited,
        now: i64,
    ) -> Result<()> {
        let mut new = edited.new.clone();
        // The calendars' dates as the worker wrote them (none without calendars).
        new.bounds.calendar_dates =
            crate::schedule::calendar::dates_in(tx, &new.bounds.calendars).await?;
        let new = &new;
        check_fields(new)?;
        if edited.cadence_changed {
            check_cadence(new, now, &self.limits)?;
        }
        // Runs it has made that still count against its limit (a limit set anew counts
        // from now): at the limit, no new timing gives it another run.
        let counted = match (new.bounds.max_runs, current.bounds.max_runs) {
            (Some(_), Some(_)) => current.runs_started,
            _ => 0,
        };
        let ran_all = new.bounds.max_runs.is_some_and(|max| counted >= max);
        let reactivated = edited.cadence_changed
            && !ran_all
            && matches!(
                current.status,
                ScheduleStatus::Completed | ScheduleStatus::Failed
            );
        if reactivated {
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
        }
        if let Some(upstream) = new
            .after
            .as_ref()
            .filter(|a| Some(*a) != current.after.as_ref())
        {
            super::events::check_upstream(
                tx,
                &new.user_id,
                Some(&current.schedule_id),
                &upstream.schedule_id,
            )
            .await?;
        }
        let cadence_json = serde_json::to_string(&new.cadence)
            .map_err(|e| InputError::new("cadence", format!("cannot be stored: {e}")))?;
        let next = new.next_after(now).filter(|_| !ran_all);
        let (due, nominal) = super::create::next_due(&current.schedule_id, new, next);
        tx.execute(
            UPDATE,
            libsql::params![
                current.schedule_id.as_str(),
                new.name.as_deref(),
                new.goal.as_str(),
                cadence_json,
                new.cadence_text.as_deref(),
                new.notify.as_str(),
                new.overlap.as_str(),
                new.catch_up.as_str(),
                new.max_attempts,
                new.timeout_secs,
                new.max_turns,
                new.max_cost,
                new.channel_id.as_deref(),
                new.channel_context_id.as_deref(),
                now,
                edited.cadence_changed,
                due,
                new.bounds.starts_at,
                new.bounds.ends_at,
                new.bounds.max_runs,
                super::create::skip_json(&new.bounds)?,
                new.jitter_secs,
                nominal,
                new.catch_up_window_secs,
                reactivated,
                edited.cadence_changed && ran_all,
                new.after.as_ref().map(|a| a.schedule_id.as_str()),
                new.after.as_ref().map(|a| a.on.as_str()),
                super::create::calendars_json(&new.bounds)?,
                super::create::calendar_dates_json(&new.bounds),
                new.agent_id.as_deref(),
                super::create::tools_json(&new.tools)?,
                super::create::approve_json(&new.approve)?,
                super::create::alerts_json(&new.alerts)?
            ],
        )
        .await?;
        Ok(())
    }
}
