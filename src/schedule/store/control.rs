//! What a user (or the operator) does to a schedule by hand: pause, resume, run now,
//! delete. Each acts only on a schedule the actor may see.

use super::ScheduleStore;
use crate::access::Actor;
use crate::input::{self, Lines};
use crate::schedule::types::{Schedule, ScheduleStatus};
use crate::schedule::{Cadence, Result, ScheduleError};

/// Longest note kept with a pause, in bytes.
pub const MAX_PAUSE_NOTE_BYTES: usize = 1024;

impl ScheduleStore {
    /// Stops running a schedule until it is resumed, with an optional note saying why.
    pub async fn pause(
        &self,
        actor: &Actor,
        schedule_id: &str,
        note: Option<&str>,
    ) -> Result<Schedule> {
        if let Some(note) = note {
            input::check_text("note", note, MAX_PAUSE_NOTE_BYTES, Lines::Many)?;
        }
        let schedule = self.get(actor, schedule_id).await?;
        if !matches!(
            schedule.status,
            ScheduleStatus::Active | ScheduleStatus::Paused
        ) {
            return Err(ScheduleError::State(format!(
                "schedule `{schedule_id}` is {} and cannot be paused",
                schedule.status
            )));
        }
        let conn = self.db.conn().await?;
        let changed = conn
            .execute(
                "UPDATE schedules SET status = 'paused', status_reason = ?2, updated_at = ?3
                 WHERE schedule_id = ?1 AND status IN ('active', 'paused')",
                libsql::params![schedule_id, note, self.clock.now_ms()],
            )
            .await?;
        if changed == 0 {
            return Err(ScheduleError::State(format!(
                "schedule `{schedule_id}` finished meanwhile and cannot be paused"
            )));
        }
        self.load(schedule_id).await
    }

    /// Resumes a paused schedule. A recurring one continues from now (occurrences missed
    /// while paused do not run); a one-shot whose time passed while it was paused runs
    /// now, as it would have after downtime: a reminder is never dropped unseen.
    pub async fn resume(&self, actor: &Actor, schedule_id: &str) -> Result<Schedule> {
        let schedule = self.get(actor, schedule_id).await?;
        if schedule.status != ScheduleStatus::Paused {
            return Err(ScheduleError::State(format!(
                "schedule `{schedule_id}` is {}, not paused",
                schedule.status
            )));
        }
        let now = self.clock.now_ms();
        let ran_all = schedule
            .bounds
            .max_runs
            .is_some_and(|max| schedule.runs_started >= max);
        let next = match &schedule.cadence {
            // It has run all the runs max_runs allows.
            _ if ran_all => None,
            // Its occurrence keeps its time (and identity); due at once when it passed.
            Cadence::Once { at, .. } if schedule.last_run_at.is_none() => Some(*at),
            _ => schedule.next_after(now),
        };
        let due = next.map(|at| schedule.due_at(at));
        let nominal = next.filter(|_| schedule.jitter_secs.is_some());
        // A schedule with no times of its own has no next run, and stays for its events.
        let triggered = matches!(schedule.cadence, Cadence::Triggered { .. });
        let conn = self.db.conn().await?;
        conn.execute(
            "UPDATE schedules SET status = ?2, status_reason = ?5, consecutive_failures = 0,
             next_run_at = ?3, next_nominal_at = ?6, updated_at = ?4
             WHERE schedule_id = ?1 AND status = 'paused'",
            libsql::params![
                schedule_id,
                if next.is_some() || triggered {
                    "active"
                } else {
                    "completed"
                },
                due,
                now,
                (next.is_none() && !triggered).then_some("resumed with no occurrence left to run"),
                nominal
            ],
        )
        .await?;
        self.load(schedule_id).await
    }

    /// Makes a schedule due now (its regular cadence continues afterwards).
    pub async fn run_now(&self, actor: &Actor, schedule_id: &str) -> Result<Schedule> {
        let schedule = self.get(actor, schedule_id).await?;
        if schedule.status != ScheduleStatus::Active {
            return Err(ScheduleError::State(format!(
                "schedule `{schedule_id}` is {}; resume it first",
                schedule.status
            )));
        }
        if matches!(schedule.cadence, Cadence::Triggered { .. }) {
            return Err(ScheduleError::State(format!(
                "schedule `{schedule_id}` has no times of its own: start a run with `schedule trigger`"
            )));
        }
        let now = self.clock.now_ms();
        let conn = self.db.conn().await?;
        // Due now. Which occurrence that is: a one-shot's own (it has one occurrence, which
        // must not run twice); an occurrence whose time has passed (only jitter held it
        // back) stays itself; otherwise an occurrence of its own, at now.
        let changed = conn
            .execute(
                "UPDATE schedules SET next_run_at = min(coalesce(next_run_at, ?2), ?2),
                 next_nominal_at = CASE
                     WHEN json_extract(cadence_json, '$.kind') = 'once'
                         THEN coalesce(next_nominal_at, next_run_at)
                     WHEN coalesce(next_nominal_at, next_run_at, ?2) > ?2 THEN NULL
                     ELSE coalesce(next_nominal_at, next_run_at) END,
                 updated_at = ?2
                 WHERE schedule_id = ?1
                 AND NOT (json_extract(cadence_json, '$.kind') = 'once' AND next_run_at IS NULL)",
                libsql::params![schedule_id, now],
            )
            .await?;
        if changed == 0 {
            return Err(ScheduleError::State(format!(
                "schedule `{schedule_id}` is a one-shot whose run has already started"
            )));
        }
        self.load(schedule_id).await
    }

    /// Deletes a schedule and its run history.
    pub async fn delete(&self, actor: &Actor, schedule_id: &str) -> Result<()> {
        let conn = self.db.conn().await?;
        let deleted = conn
            .execute(
                "DELETE FROM schedules WHERE schedule_id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR user_id = ?2)",
                libsql::params![schedule_id, actor.user_id()],
            )
            .await?;
        if deleted == 0 {
            return Err(ScheduleError::NotFound(schedule_id.to_string()));
        }
        Ok(())
    }
}
