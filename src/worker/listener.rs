//! The seam where finished runs are announced. Notifications to channels hook in here;
//! today the announcement is a log line.

use async_trait::async_trait;

use crate::schedule::types::{Run, Schedule, ScheduleStatus};

#[async_trait]
pub trait RunListener: Send + Sync {
    /// Called once a run is recorded, with the schedule as it is after the run.
    async fn run_finished(&self, schedule: &Schedule, run: &Run);
}

/// Logs every finished run, and loudly when a schedule was paused for failing.
pub struct LogListener;

#[async_trait]
impl RunListener for LogListener {
    async fn run_finished(&self, schedule: &Schedule, run: &Run) {
        tracing::info!(
            schedule_id = %schedule.schedule_id,
            run_id = %run.run_id,
            status = %run.status,
            attempt = run.attempt,
            "run finished"
        );
        if schedule.status == ScheduleStatus::Paused {
            tracing::warn!(
                schedule_id = %schedule.schedule_id,
                reason = schedule.status_reason.as_deref().unwrap_or_default(),
                "schedule paused"
            );
        }
    }
}
