//! The overview's charts over a week, worked out at most once a minute. Over a day they
//! cost a few milliseconds; over a week at 100,000 runs each reads every run of it (about
//! 125 ms in all), and an open overview brings itself up to date every few seconds. One
//! working out at a time: a burst of refreshes waits for the first and shares its figures.

use tokio::sync::Mutex;

use crate::app::App;
use crate::schedule::store::history::{HistorySpan, RunHistory};
use crate::schedule::store::lateness::LatenessHistory;
use crate::schedule::ScheduleError;

/// How long a week's figures are shown before they are worked out again.
pub const MAX_AGE_MS: i64 = 60_000;

/// A week's runs per hour and lateness, and when they were worked out.
#[derive(Clone)]
pub struct WeekFigures {
    pub runs: RunHistory,
    pub lateness: LatenessHistory,
    /// When (Unix ms).
    pub at: i64,
}

#[derive(Default)]
pub struct WeekCharts {
    last: Mutex<Option<WeekFigures>>,
}

impl WeekCharts {
    /// The week's figures as of at most [`MAX_AGE_MS`] before `now`.
    pub async fn get(&self, app: &App, now: i64) -> Result<WeekFigures, ScheduleError> {
        let mut last = self.last.lock().await;
        if let Some(figures) = last
            .as_ref()
            .filter(|f| f.at <= now && now - f.at < MAX_AGE_MS)
        {
            return Ok(figures.clone());
        }
        let store = app.schedules();
        let figures = WeekFigures {
            runs: store.run_history(now, HistorySpan::Week).await?,
            lateness: store.lateness_history(now, HistorySpan::Week).await?,
            at: now,
        };
        *last = Some(figures.clone());
        Ok(figures)
    }
}
