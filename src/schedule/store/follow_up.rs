//! Schedules an agent makes during a run (the `schedule_follow_up` tool): a one-shot for
//! the run's user, notifying where the run's own schedule does and acting as the same
//! agent, at least the minimum interval ahead (a run cannot keep itself busy), counted
//! against a cap of its own, and recorded with the run that made it. The operator's
//! policy decides whether it runs when due or waits, paused, for the user to resume it.

use super::ScheduleStore;
use crate::access::Actor;
use crate::db::query_scalar;
use crate::input::{self, InputError};
use crate::schedule::agent_policy::AgentSchedules;
use crate::schedule::types::{NewSchedule, Schedule};
use crate::schedule::{Cadence, Result, ScheduleError};

/// What an agent asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct FollowUp {
    pub goal: String,
    /// When it runs (UTC ms).
    pub at: i64,
    pub name: Option<String>,
}

/// The run that asks, and the operator's rules for it.
#[derive(Debug, Clone)]
pub struct FollowUpOrigin<'a> {
    pub user_id: &'a str,
    /// The schedule the run belongs to: the follow-up notifies as it does.
    pub schedule_id: &'a str,
    pub run_id: &'a str,
    pub policy: AgentSchedules,
    pub max_per_user: i64,
}

impl ScheduleStore {
    /// Makes `follow_up` for the origin's user. Refused when the policy is off, the time
    /// is under the minimum interval ahead or over ten years, the text breaks the rules a
    /// schedule's goal and name follow, or the user holds `max_per_user` live schedules
    /// agents made (or `scheduler.max_per_user` of any kind).
    pub async fn create_follow_up(
        &self,
        origin: &FollowUpOrigin<'_>,
        follow_up: &FollowUp,
    ) -> Result<Schedule> {
        if origin.policy == AgentSchedules::Off {
            return Err(ScheduleError::State(
                "the operator does not let agents make schedules (scheduler.agent_schedules)"
                    .to_string(),
            ));
        }
        let actor = Actor::User(origin.user_id.to_string());
        let parent = self.get(&actor, origin.schedule_id).await?;
        let now = self.clock.now_ms();
        let earliest = now.saturating_add(self.limits.min_interval_secs.saturating_mul(1000));
        if follow_up.at < earliest {
            return Err(InputError::new(
                "at",
                format!(
                    "a follow-up runs at least {}s ahead (scheduler.min_interval_secs)",
                    self.limits.min_interval_secs
                ),
            )
            .into());
        }
        let tz = match &parent.cadence {
            Cadence::Cron { tz, .. }
            | Cadence::Once { tz, .. }
            | Cadence::Interval { tz, .. }
            | Cadence::Triggered { tz } => tz.clone(),
        };
        let mut new = NewSchedule::new(
            origin.user_id,
            follow_up.goal.clone(),
            Cadence::Once {
                at: follow_up.at,
                tz,
            },
        );
        new.name = follow_up.name.clone();
        new.notify = parent.notify;
        new.channel_id = parent.channel_id.clone();
        new.channel_context_id = parent.channel_context_id.clone();
        new.agent_id = parent.agent_id.clone();
        new.tools = parent.tools.clone();
        // Its calls need the approval its parent's would: a follow-up is no way around it.
        new.approve = parent.approve.clone();
        new.timeout_secs = parent.timeout_secs;
        new.max_turns = parent.max_turns;
        new.max_cost = parent.max_cost;
        crate::schedule::validate::check_new(&new, now, &self.limits)?;
        input::check_id("run", origin.run_id)?;

        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        let made: i64 = query_scalar(
            &tx,
            "SELECT count(*) FROM schedules WHERE user_id = ?1 AND made_by_run IS NOT NULL
             AND status IN ('active', 'paused')",
            [origin.user_id],
        )
        .await?
        .unwrap_or(0);
        if made >= origin.max_per_user {
            tx.rollback().await?;
            return Err(ScheduleError::State(format!(
                "agents already made {made} live schedules for this user \
                 (scheduler.max_agent_schedules_per_user is {})",
                origin.max_per_user
            )));
        }
        let schedule_id = match self.create_in(&tx, &new, now).await {
            Ok(id) => id,
            Err(err) => {
                tx.rollback().await?;
                return Err(err);
            }
        };
        let confirm = origin.policy == AgentSchedules::Confirm;
        tx.execute(
            "UPDATE schedules SET made_by_run = ?2,
                 status = CASE WHEN ?3 THEN 'paused' ELSE status END,
                 status_reason = CASE WHEN ?3 THEN ?4 ELSE status_reason END
             WHERE schedule_id = ?1",
            libsql::params![
                schedule_id.as_str(),
                origin.run_id,
                confirm,
                format!(
                    "made by run {}; waits for the user to confirm it (resume)",
                    origin.run_id
                )
            ],
        )
        .await?;
        tx.commit().await?;
        self.load(&schedule_id).await
    }
}
