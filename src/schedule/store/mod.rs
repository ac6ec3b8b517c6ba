//! Schedules and runs in the database (seed 000's SchedulerStore), one concern a file:
//!
//! - [`create`](self::create): new schedules, one at a time or inside a caller's transaction;
//! - [`query`](self::query): reading schedules and runs, what is due, when to wake;
//! - [`control`](self::control): pause, resume, run now, delete — a user's own only;
//! - [`edit`](self::edit): changing a schedule in place, its id and history kept;
//! - [`claim`](self::claim): the claim that makes each occurrence run on exactly one worker;
//! - [`events`](self::events): runs started by triggers, chains and backfills;
//! - [`backfill`](self::backfill): queuing the occurrences of a past range;
//! - [`finish`](self::finish): recording a finished attempt, its transcript and messages;
//! - [`recovery`](self::recovery): leases — renewal, takeover, interruption at shutdown;
//! - [`wait`](self::wait): a run paused for an approval, and resumed once it is answered;
//! - [`cancel`](self::cancel): stopping a running or waiting run by hand;
//! - [`progress`](self::progress): a run's progress while it goes, for its live view;
//! - [`run_list`](self::run_list): runs across schedules, filtered and paged.

mod alert_messages;
mod alerts;
mod announce;
mod backfill;
mod calendars;
mod cancel;
mod claim;
mod control;
pub use control::MAX_PAUSE_NOTE_BYTES;
mod create;
mod edit;
mod events;
mod finish;
mod follow_up;
pub mod history;
mod imported;
pub mod lateness;
pub mod overview;
mod progress;
mod query;
mod recovery;
mod rerun;
mod run_list;
mod upcoming;
mod wait;
mod watch;

use std::sync::Arc;

pub use alerts::{AlertsChecked, ALERT_CHECK_EVERY};
pub use backfill::{Backfill, MAX_BACKFILL};
pub use edit::Edited;
pub use events::{
    PendingEvent, Triggered, MAX_CHAIN_LINKS, MAX_IDEMPOTENCY_KEY_BYTES, MAX_TRIGGER_INPUT_BYTES,
    MAX_WAITING_EVENTS,
};
pub use finish::Transcript;
pub use follow_up::{FollowUp, FollowUpOrigin};
pub use progress::{Follow, Moved, RunProgress, FOLLOW_POLL, FOLLOW_POLL_WAITING, PROGRESS_PAGE};
pub use query::{NextWake, ScheduleFilter};
pub use rerun::{Replay, ReplayAsk, ReplayedRun, Rerun, RerunMemory, MAX_REPLAY};
pub use run_list::{RunFilter, MAX_RUN_PAGE};
pub use wait::{Paused, Waiting};
pub use watch::Started;

use super::bounds::Bounds;
use super::types::{Run, Schedule, Upstream};
use super::validate::StoreLimits;
use super::{Result, ScheduleError};
use crate::access::Actor;
use crate::db::clock::Clock;
use crate::db::{json_column, text_column, Db, DbError, FromRow};
use crate::notify::router::Router;

#[derive(Clone)]
pub struct ScheduleStore {
    db: Db,
    clock: Arc<dyn Clock>,
    limits: StoreLimits,
    /// Where finished runs are announced (the outbox), and who to wake when one is.
    notifications: Option<(Arc<Router>, Arc<tokio::sync::Notify>)>,
    /// This process's scheduler loop, woken when a run is asked to stop.
    wake: Option<Arc<tokio::sync::Notify>>,
    /// Moved when this process records a run's progress or finishes a run (see
    /// `progress`).
    progress: Arc<tokio::sync::watch::Sender<progress::Moved>>,
}

/// A schedule (row of `schedules`) whose next occurrence must wait for the run it has
/// going: with `overlap = "buffer_one"` or `"buffer_all"`, or `catch_up = "all"`, a claim
/// would only find the
/// running run and give up, so the scheduler does not try (the claim checks again, inside
/// its transaction, for a run that started meanwhile).
const WAITS_BEHIND_RUNNING: &str =
    "((schedules.overlap IN ('buffer_one', 'buffer_all') OR schedules.catch_up = 'all')
     AND EXISTS (SELECT 1 FROM schedule_runs r
                 WHERE r.schedule_id = schedules.schedule_id AND r.status = 'running'))";

impl FromRow for Schedule {
    const COLUMNS: &'static str =
        "schedule_id, user_id, name, goal, cadence_json, cadence_text, source, notify,
        overlap, catch_up, max_attempts, timeout_secs, max_turns, max_cost, status, status_reason,
        created_at, updated_at, next_run_at, last_run_at, last_run_status, consecutive_failures,
        channel_id, channel_context_id, starts_at, ends_at, max_runs, skip_json, runs_started,
        jitter_secs, next_nominal_at, catch_up_window_secs, after_schedule_id, after_on,
        (SELECT u.status FROM schedules u WHERE u.schedule_id = schedules.after_schedule_id),
        calendars_json, calendar_dates_json, agent_id, made_by_run, tools_json, approve_json,
        alerts_json, last_success_at";

    fn from_row(row: &libsql::Row) -> Result<Self, DbError> {
        let last: Option<String> = row.get(20)?;
        Ok(Schedule {
            schedule_id: row.get(0)?,
            user_id: row.get(1)?,
            name: row.get(2)?,
            goal: row.get(3)?,
            cadence: json_column(row, 4, "cadence")?,
            cadence_text: row.get(5)?,
            source: text_column(row, 6, "schedule source")?,
            notify: text_column(row, 7, "notify policy")?,
            overlap: text_column(row, 8, "overlap policy")?,
            catch_up: text_column(row, 9, "catch-up policy")?,
            max_attempts: row.get(10)?,
            timeout_secs: row.get(11)?,
            max_turns: row.get(12)?,
            max_cost: row.get(13)?,
            status: text_column(row, 14, "schedule status")?,
            status_reason: row.get(15)?,
            created_at: row.get(16)?,
            updated_at: row.get(17)?,
            next_run_at: row.get(18)?,
            last_run_at: row.get(19)?,
            last_run_status: last
                .map(|s| {
                    s.parse().map_err(|reason| DbError::Corrupt {
                        what: "run status".into(),
                        reason,
                    })
                })
                .transpose()?,
            consecutive_failures: row.get(21)?,
            channel_id: row.get(22)?,
            channel_context_id: row.get(23)?,
            bounds: Bounds {
                starts_at: row.get(24)?,
                ends_at: row.get(25)?,
                max_runs: row.get(26)?,
                skip: match row.get::<Option<String>>(27)? {
                    Some(_) => json_column(row, 27, "skipped dates")?,
                    None => Vec::new(),
                },
                calendars: match row.get::<Option<String>>(35)? {
                    Some(_) => json_column(row, 35, "calendars")?,
                    None => Vec::new(),
                },
                calendar_dates: match row.get::<Option<String>>(36)? {
                    Some(_) => json_column(row, 36, "calendar dates")?,
                    None => Vec::new(),
                },
            },
            runs_started: row.get(28)?,
            jitter_secs: row.get(29)?,
            next_nominal_at: row.get(30)?,
            catch_up_window_secs: row.get(31)?,
            after: match row.get::<Option<String>>(32)? {
                Some(schedule_id) => Some(Upstream {
                    schedule_id,
                    on: text_column(row, 33, "chain condition")?,
                    // None: it was deleted.
                    status: match row.get::<Option<String>>(34)? {
                        Some(_) => Some(text_column(row, 34, "schedule status")?),
                        None => None,
                    },
                }),
                None => None,
            },
            agent_id: row.get(37)?,
            made_by_run: row.get(38)?,
            tools: match row.get::<Option<String>>(39)? {
                Some(_) => json_column(row, 39, "tool patterns")?,
                None => Vec::new(),
            },
            approve: match row.get::<Option<String>>(40)? {
                Some(_) => json_column(row, 40, "approval patterns")?,
                None => Vec::new(),
            },
            alerts: match row.get::<Option<String>>(41)? {
                Some(_) => json_column(row, 41, "alert settings")?,
                None => Default::default(),
            },
            last_success_at: row.get(42)?,
        })
    }
}

impl FromRow for Run {
    const COLUMNS: &'static str = "run_id, schedule_id, scheduled_for, attempt, status, worker_id,
        started_at, finished_at, output_summary, output, error, turn_count, prompt_tokens,
        completion_tokens, cost, notified, origin, cancel_requested_by, parent_run_id,
        memory_as_of";

    fn from_row(row: &libsql::Row) -> Result<Self, DbError> {
        Ok(Run {
            run_id: row.get(0)?,
            schedule_id: row.get(1)?,
            scheduled_for: row.get(2)?,
            attempt: row.get(3)?,
            status: text_column(row, 4, "run status")?,
            worker_id: row.get(5)?,
            started_at: row.get(6)?,
            finished_at: row.get(7)?,
            output_summary: row.get(8)?,
            output: row.get(9)?,
            error: row.get(10)?,
            turn_count: row.get(11)?,
            prompt_tokens: row.get(12)?,
            completion_tokens: row.get(13)?,
            cost: row.get(14)?,
            notified: row.get::<i64>(15)? != 0,
            origin: text_column(row, 16, "run origin")?,
            cancel_requested_by: row.get(17)?,
            parent_run_id: row.get(18)?,
            memory_as_of: row.get(19)?,
        })
    }
}

/// Ends `tx` as `result` says: committed when it is `Ok` and `keep` (a dry run keeps
/// nothing), rolled back otherwise; the result is passed on.
pub(super) async fn settle<T>(tx: crate::db::WriteTx, result: Result<T>, keep: bool) -> Result<T> {
    match result {
        Ok(value) if keep => {
            tx.commit().await?;
            Ok(value)
        }
        Ok(value) => {
            tx.rollback().await?;
            Ok(value)
        }
        Err(err) => {
            tx.rollback().await?;
            Err(err)
        }
    }
}

/// On PostgreSQL, locks the rows of the schedules `condition` selects (SQL over
/// `schedules`, with `params`) until `tx` ends. A claim of an occurrence there holds its
/// schedule's row and no write lock (see `claim`): a transaction that reads a schedule to
/// change it, or locks another row before the schedule's, takes the row first, so it sees
/// every claim that committed and none slips in between, and the two always lock in the
/// same order. Elsewhere the write lock already orders them.
pub(super) async fn lock_schedules(
    tx: &crate::db::WriteTx,
    condition: &str,
    params: impl libsql::params::IntoParams,
) -> Result<()> {
    if tx.is_postgres() {
        tx.execute(
            &format!("SELECT schedule_id FROM schedules WHERE {condition} FOR NO KEY UPDATE"),
            params,
        )
        .await?;
    }
    Ok(())
}

impl ScheduleStore {
    pub fn new(db: Db, clock: Arc<dyn Clock>, limits: StoreLimits) -> Self {
        Self {
            db,
            clock,
            limits,
            notifications: None,
            wake: None,
            progress: Arc::new(tokio::sync::watch::channel(progress::Moved::default()).0),
        }
    }

    /// Wakes this process's scheduler loop when a run is asked to stop.
    pub fn with_scheduler_wake(mut self, wake: Arc<tokio::sync::Notify>) -> Self {
        self.wake = Some(wake);
        self
    }

    /// Records a notification in the outbox with every finished run, in the same
    /// transaction, and wakes `sender` after the commit.
    pub fn with_notifications(
        mut self,
        router: Arc<Router>,
        sender: Arc<tokio::sync::Notify>,
    ) -> Self {
        self.notifications = Some((router, sender));
        self
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    pub fn limits(&self) -> &StoreLimits {
        &self.limits
    }

    pub(crate) fn db(&self) -> &Db {
        &self.db
    }

    /// A schedule the actor may act on; another user's is reported exactly like one that
    /// does not exist.
    pub async fn get(&self, actor: &Actor, schedule_id: &str) -> Result<Schedule> {
        let schedule = self.load(schedule_id).await?;
        if !actor.may_act_for(&schedule.user_id) {
            return Err(ScheduleError::NotFound(schedule_id.to_string()));
        }
        Ok(schedule)
    }
}
