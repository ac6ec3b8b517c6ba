//! The seam where finished runs are announced (notifications go through the outbox,
//! written with the run; this is for the operator): today, a log line.

use async_trait::async_trait;

use crate::schedule::types::RunStatus;

/// A run as it was recorded, from what the worker already knows: announcing it costs no
/// database read (on a server, each read is a round trip).
#[derive(Debug, Clone)]
pub struct FinishedRun<'a> {
    pub schedule_id: &'a str,
    pub run_id: &'a str,
    pub status: RunStatus,
    pub attempt: i64,
    /// Why the schedule was paused by this run, if it was.
    pub paused: Option<String>,
}

#[async_trait]
pub trait RunListener: Send + Sync {
    /// Called once a run is recorded.
    async fn run_finished(&self, run: &FinishedRun<'_>);
}

/// Logs every finished run, and loudly when a schedule was paused for failing.
pub struct LogListener;

#[async_trait]
impl RunListener for LogListener {
    async fn run_finished(&self, run: &FinishedRun<'_>) {
        tracing::info!(
            schedule_id = %run.schedule_id,
            run_id = %run.run_id,
            status = %run.status,
            attempt = run.attempt,
            "run finished"
        );
        if let Some(reason) = &run.paused {
            tracing::warn!(schedule_id = %run.schedule_id, %reason, "schedule paused");
        }
    }
}
