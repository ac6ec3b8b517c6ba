//! Schedules and the named calendars they skip: the dates read for a new schedule, and
//! brought up to date, with the next run worked out again, when the worker finds a
//! calendar changed.

use chrono::NaiveDate;

use super::ScheduleStore;
use crate::db::{fetch_all, FromRow};
use crate::schedule::calendar::dates_in;
use crate::schedule::types::{Schedule, ScheduleStatus};
use crate::schedule::{Result, ScheduleError};

impl ScheduleStore {
    /// The merged dates of the calendars `names`, as the worker wrote them; an unknown
    /// name is bad input.
    pub async fn calendar_dates(&self, names: &[String]) -> Result<Vec<NaiveDate>> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let conn = self.db.conn().await?;
        dates_in(&conn, names).await
    }

    /// Makes this process's configured calendars the ones every process reads (what
    /// `nightshift run` does as it starts), and brings the schedules naming a changed one
    /// up to date. Returns the calendars that changed and how many schedules did.
    pub async fn adopt_calendars(&self) -> Result<(Vec<String>, usize)> {
        let changed = crate::schedule::calendar::store(&self.db, &self.limits.calendars).await?;
        let refreshed = if changed.is_empty() {
            0
        } else {
            self.refresh_calendars(&changed).await?
        };
        Ok((changed, refreshed))
    }

    /// After the calendars `changed` were added, changed or removed: every active or
    /// paused schedule naming one gets their dates as they are now, and its next run is
    /// worked out again (a date removed gives back its occurrence; one added moves it on).
    /// A schedule naming a calendar that is gone keeps the dates it had, with a warning.
    /// Returns how many schedules changed.
    pub async fn refresh_calendars(&self, changed: &[String]) -> Result<usize> {
        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        super::lock_schedules(
            &tx,
            "calendars_json IS NOT NULL AND status IN ('active', 'paused')",
            (),
        )
        .await?;
        let schedules: Vec<Schedule> = fetch_all(
            &tx,
            &format!(
                "SELECT {} FROM schedules WHERE calendars_json IS NOT NULL
                 AND status IN ('active', 'paused')",
                Schedule::COLUMNS
            ),
            (),
        )
        .await?;
        let now = self.clock.now_ms();
        let mut refreshed = 0;
        for mut schedule in schedules {
            if !schedule
                .bounds
                .calendars
                .iter()
                .any(|c| changed.contains(c))
            {
                continue;
            }
            match dates_in(&tx, &schedule.bounds.calendars).await {
                Ok(dates) => schedule.bounds.calendar_dates = dates,
                Err(ScheduleError::Input(err)) => {
                    tracing::warn!(schedule_id = %schedule.schedule_id, %err, "a calendar this schedule skips is no longer configured; it keeps the dates it had");
                    continue;
                }
                Err(err) => {
                    tx.rollback().await?;
                    return Err(err);
                }
            }
            // From now when its next occurrence is ahead (an earlier one may be free
            // now), or from that occurrence when it is already due (kept unless it is a
            // calendar date now).
            let next = schedule.next_nominal().and_then(|nominal| {
                let from = if nominal > now { now } else { nominal - 1 };
                schedule.next_after(from)
            });
            let due = next.map(|at| schedule.due_at(at));
            let nominal = next.filter(|_| schedule.jitter_secs.is_some());
            let had_next = schedule.next_run_at.is_some();
            let ends = had_next && next.is_none() && schedule.status == ScheduleStatus::Active;
            tx.execute(
                "UPDATE schedules SET calendar_dates_json = ?2,
                 next_run_at = CASE WHEN ?5 THEN ?3 ELSE next_run_at END,
                 next_nominal_at = CASE WHEN ?5 THEN ?4 ELSE next_nominal_at END,
                 status = CASE WHEN ?6 THEN 'completed' ELSE status END,
                 status_reason = CASE WHEN ?6 THEN 'no occurrence left outside its calendars'
                                 ELSE status_reason END
                 WHERE schedule_id = ?1",
                libsql::params![
                    schedule.schedule_id.as_str(),
                    super::create::calendar_dates_json(&schedule.bounds),
                    due,
                    nominal,
                    had_next,
                    ends
                ],
            )
            .await?;
            refreshed += 1;
        }
        tx.commit().await?;
        Ok(refreshed)
    }
}
