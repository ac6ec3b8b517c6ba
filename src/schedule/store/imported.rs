//! The checks a schedule written by an import passes before its transaction commits: the
//! same rules as a schedule made through any door (its fields, how often its cadence
//! fires, whose schedule it follows and whether that makes a cycle, how many schedules
//! its user has). An archive is a user's own file: edited, it must not buy what the API
//! refuses.

use super::ScheduleStore;
use crate::db::{fetch_readable, query_scalar, FromRow, WriteTx};
use crate::input::InputError;
use crate::schedule::types::{NewSchedule, Schedule, ScheduleStatus};
use crate::schedule::{Cadence, Result, ScheduleError};

impl ScheduleStore {
    /// Reads the schedule `schedule_id` back inside `tx` as the scheduler will, and checks
    /// it as a new schedule is checked. Its chain is checked here too, so call it once all
    /// of a user's schedules are written (a follower may come before what it follows).
    pub(crate) async fn check_imported(
        &self,
        tx: &WriteTx,
        schedule_id: &str,
        now: i64,
    ) -> Result<Schedule> {
        let (mut read, unreadable) = fetch_readable::<Schedule>(
            tx,
            &format!(
                "SELECT {} FROM schedules WHERE schedule_id = ?1",
                Schedule::COLUMNS
            ),
            [schedule_id],
        )
        .await?;
        if let Some(bad) = unreadable.first() {
            return Err(InputError::new("schedule", bad.reason.clone()).into());
        }
        let schedule = read
            .pop()
            .ok_or_else(|| ScheduleError::NotFound(schedule_id.to_string()))?;
        crate::schedule::validate::check_fields(&NewSchedule::from(&schedule))?;
        let live = matches!(
            schedule.status,
            ScheduleStatus::Active | ScheduleStatus::Paused
        );
        // A one-shot's time may have passed (it ran, or it runs when resumed): only how
        // often a recurring cadence fires is held to the minimum.
        if live && !matches!(schedule.cadence, Cadence::Once { .. }) {
            schedule
                .cadence
                .validate(now, self.limits.min_interval_secs)
                .map_err(|source| ScheduleError::Cadence {
                    field: "cadence_json",
                    source,
                })?;
        }
        if let Some(upstream) = &schedule.after {
            super::events::check_upstream(
                tx,
                &schedule.user_id,
                Some(schedule_id),
                &upstream.schedule_id,
            )
            .await?;
        }
        Ok(schedule)
    }

    /// Refuses a user who holds more live schedules than `scheduler.max_per_user` once
    /// the import's rows are written.
    pub(crate) async fn check_imported_count(&self, tx: &WriteTx, user_id: &str) -> Result<()> {
        let count: i64 = query_scalar(
            tx,
            "SELECT count(*) FROM schedules WHERE user_id = ?1 AND status IN ('active', 'paused')",
            [user_id],
        )
        .await?
        .unwrap_or(0);
        if count > self.limits.max_per_user {
            return Err(ScheduleError::TooMany {
                user_id: user_id.to_string(),
                limit: self.limits.max_per_user,
            });
        }
        Ok(())
    }
}
