//! Schedules and runs in the database (seed 000's SchedulerStore), including the claim
//! that makes each occurrence run on exactly one worker.

use std::sync::Arc;

use super::types::{
    CatchUp, Claim, NewSchedule, NotifyPolicy, Overlap, Run, RunOutcome, RunStatus, Schedule,
    ScheduleStatus,
};
use super::{Cadence, CadenceError};
use crate::db::clock::{to_rfc3339, Clock};
use crate::db::{
    finish_rows, query_first_row, query_scalar, run_to_completion, Db, DbError, WriteTx,
};
use crate::ids;
use crate::memory::{Memory, MemoryError, NewEvent};
use crate::notify::outbox::{enqueue_in, NewMessage, NotifyPlan, Priority};
use crate::notify::policy::run_message;
use crate::notify::router::Router;
use crate::text::truncate_chars;

/// Characters of output kept in `output_summary`.
const SUMMARY_CHARS: usize = 500;
/// Largest goal accepted, in bytes.
const MAX_GOAL_BYTES: usize = 16 * 1024;
/// Missed occurrences run at most, for `catch_up = "all"`.
const CATCH_UP_ALL_LIMIT: usize = 100;

#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    #[error("no schedule `{0}`")]
    NotFound(String),
    #[error("no run `{0}`")]
    RunNotFound(String),
    #[error("invalid {what}: {reason}")]
    Invalid { what: &'static str, reason: String },
    #[error(transparent)]
    Cadence(#[from] CadenceError),
    #[error("user `{user_id}` already has {limit} schedules (scheduler.max_per_user)")]
    TooMany { user_id: String, limit: i64 },
    #[error("cannot store the run's transcript: {0}")]
    Transcript(MemoryError),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<libsql::Error> for ScheduleError {
    fn from(err: libsql::Error) -> Self {
        ScheduleError::Db(DbError::Sql(err))
    }
}

pub type Result<T, E = ScheduleError> = std::result::Result<T, E>;

/// A finished run's conversation (its goal and the agent's turns), stored by
/// [`ScheduleStore::finish_with`] in the transaction that records the run: a run is never kept
/// without its transcript because a crash came between two transactions.
pub struct Transcript<'a> {
    pub memory: &'a Memory,
    pub user_id: &'a str,
    pub session_id: &'a str,
    pub events: &'a [NewEvent],
}

/// Limits the store enforces.
#[derive(Debug, Clone)]
pub struct StoreLimits {
    pub min_interval_secs: i64,
    pub max_per_user: i64,
    /// Finished runs kept per schedule; older ones go when a run is recorded.
    pub history_keep: i64,
}

/// Filters for [`ScheduleStore::list`].
#[derive(Debug, Clone, Default)]
pub struct ScheduleFilter {
    pub user_id: Option<String>,
    pub status: Option<ScheduleStatus>,
    pub limit: Option<i64>,
    pub offset: i64,
}

/// Changes for [`ScheduleStore::patch`]; `None` keeps a field.
#[derive(Debug, Clone, Default)]
pub struct SchedulePatch {
    pub name: Option<Option<String>>,
    pub goal: Option<String>,
    pub cadence: Option<(Cadence, Option<String>)>,
}

#[derive(Clone)]
pub struct ScheduleStore {
    db: Db,
    clock: Arc<dyn Clock>,
    limits: StoreLimits,
    /// Where finished runs are announced (the outbox), and who to wake when one is.
    notifications: Option<(Arc<Router>, Arc<tokio::sync::Notify>)>,
}

/// A schedule (row of `schedules`) whose next occurrence must wait for the run it has
/// going: with `overlap = "buffer_one"` or `catch_up = "all"` a claim would only find the
/// running run and give up, so the scheduler does not try (the claim checks again, inside
/// its transaction, for a run that started meanwhile).
const WAITS_BEHIND_RUNNING: &str =
    "((schedules.overlap = 'buffer_one' OR schedules.catch_up = 'all')
     AND EXISTS (SELECT 1 FROM schedule_runs r
                 WHERE r.schedule_id = schedules.schedule_id AND r.status = 'running'))";

const COLUMNS: &str =
    "schedule_id, user_id, name, goal, cadence_json, cadence_text, source, notify,
    overlap, catch_up, max_attempts, timeout_secs, max_turns, max_cost, status, status_reason,
    created_at, updated_at, next_run_at, last_run_at, last_run_status, consecutive_failures,
    channel_id, channel_context_id";

const RUN_COLUMNS: &str = "run_id, schedule_id, scheduled_for, attempt, status, worker_id,
    started_at, finished_at, output_summary, output, error, turn_count, prompt_tokens,
    completion_tokens, cost, notified";

fn parse_text<T: std::str::FromStr<Err = String>>(what: &'static str, text: &str) -> Result<T> {
    text.parse()
        .map_err(|reason| ScheduleError::Invalid { what, reason })
}

fn row_to_schedule(row: &libsql::Row) -> Result<Schedule> {
    let cadence_json: String = row.get(4)?;
    let cadence: Cadence =
        serde_json::from_str(&cadence_json).map_err(|e| ScheduleError::Invalid {
            what: "stored cadence",
            reason: e.to_string(),
        })?;
    let last: Option<String> = row.get(20)?;
    Ok(Schedule {
        schedule_id: row.get(0)?,
        user_id: row.get(1)?,
        name: row.get(2)?,
        goal: row.get(3)?,
        cadence,
        cadence_text: row.get(5)?,
        source: parse_text("source", &row.get::<String>(6)?)?,
        notify: parse_text("notify", &row.get::<String>(7)?)?,
        overlap: parse_text("overlap", &row.get::<String>(8)?)?,
        catch_up: parse_text("catch_up", &row.get::<String>(9)?)?,
        max_attempts: row.get(10)?,
        timeout_secs: row.get(11)?,
        max_turns: row.get(12)?,
        max_cost: row.get(13)?,
        status: parse_text("status", &row.get::<String>(14)?)?,
        status_reason: row.get(15)?,
        created_at: row.get(16)?,
        updated_at: row.get(17)?,
        next_run_at: row.get(18)?,
        last_run_at: row.get(19)?,
        last_run_status: last.map(|s| parse_text("run status", &s)).transpose()?,
        consecutive_failures: row.get(21)?,
        channel_id: row.get(22)?,
        channel_context_id: row.get(23)?,
    })
}

fn row_to_run(row: &libsql::Row) -> Result<Run> {
    Ok(Run {
        run_id: row.get(0)?,
        schedule_id: row.get(1)?,
        scheduled_for: row.get(2)?,
        attempt: row.get(3)?,
        status: parse_text("run status", &row.get::<String>(4)?)?,
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
    })
}

fn check_schedule(new: &NewSchedule) -> Result<()> {
    let invalid = |what, reason: &str| {
        Err(ScheduleError::Invalid {
            what,
            reason: reason.to_string(),
        })
    };
    if new.user_id.trim().is_empty() {
        return invalid("user id", "must not be empty");
    }
    if new.goal.trim().is_empty() {
        return invalid("goal", "must not be empty");
    }
    if new.goal.len() > MAX_GOAL_BYTES {
        return invalid("goal", &format!("is over {MAX_GOAL_BYTES} bytes"));
    }
    if new.name.as_deref().is_some_and(|n| n.trim().is_empty()) {
        return invalid("name", "must not be empty");
    }
    if !(1..=20).contains(&new.max_attempts) {
        return invalid("max_attempts", "must be 1..=20");
    }
    if new.timeout_secs.is_some_and(|t| t < 1) {
        return invalid("timeout_secs", "must be at least 1");
    }
    if new.max_turns.is_some_and(|t| t < 1) {
        return invalid("max_turns", "must be at least 1");
    }
    if new.max_cost.is_some_and(|c| c.is_nan() || c < 0.0) {
        return invalid("max_cost", "must not be negative");
    }
    Ok(())
}

/// What [`ScheduleStore::next_wake`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NextWake {
    /// The earliest due time of a schedule that can run now.
    pub due_at: Option<i64>,
    /// The earliest lease expiry of a running run.
    pub lease_expiry: Option<i64>,
}

impl ScheduleStore {
    pub fn new(db: Db, clock: Arc<dyn Clock>, limits: StoreLimits) -> Self {
        Self {
            db,
            clock,
            limits,
            notifications: None,
        }
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

    /// Validates and stores a schedule; its first run is the cadence's next occurrence.
    pub async fn create(&self, new: &NewSchedule) -> Result<Schedule> {
        check_schedule(new)?;
        let now = self.clock.now_ms();
        new.cadence.validate(now, self.limits.min_interval_secs)?;
        let next = new.cadence.next_after(now);
        let schedule_id = ids::new_id("sch");
        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        let count: i64 = query_scalar(
            &tx,
            "SELECT count(*) FROM schedules WHERE user_id = ?1 AND status IN ('active', 'paused')",
            [new.user_id.as_str()],
        )
        .await?
        .unwrap_or(0);
        if count >= self.limits.max_per_user {
            tx.rollback().await?;
            return Err(ScheduleError::TooMany {
                user_id: new.user_id.clone(),
                limit: self.limits.max_per_user,
            });
        }
        tx.execute(
            &format!(
                "INSERT INTO schedules ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,
                 ?12, ?13, ?14, 'active', NULL, ?15, ?15, ?16, NULL, NULL, 0, ?17, ?18)"
            ),
            libsql::params![
                schedule_id.as_str(),
                new.user_id.as_str(),
                new.name.as_deref(),
                new.goal.as_str(),
                serde_json::to_string(&new.cadence).expect("cadence serialises"),
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
                next,
                new.channel_id.as_deref(),
                new.channel_context_id.as_deref()
            ],
        )
        .await?;
        tx.commit().await?;
        self.get(&schedule_id).await
    }

    pub async fn get(&self, schedule_id: &str) -> Result<Schedule> {
        let conn = self.db.conn().await?;
        let mut rows = conn
            .query(
                &format!("SELECT {COLUMNS} FROM schedules WHERE schedule_id = ?1"),
                [schedule_id],
            )
            .await?;
        let Some(row) = rows.next().await? else {
            return Err(ScheduleError::NotFound(schedule_id.to_string()));
        };
        let schedule = row_to_schedule(&row)?;
        finish_rows(rows).await?;
        Ok(schedule)
    }

    /// Schedules matching the filter, newest first, and how many match in all.
    pub async fn list(&self, filter: &ScheduleFilter) -> Result<(Vec<Schedule>, i64)> {
        let conn = self.db.conn().await?;
        let status = filter.status.map(|s| s.as_str());
        let condition = "(?1 IS NULL OR user_id = ?1) AND (?2 IS NULL OR status = ?2)";
        let total: i64 = query_scalar(
            &conn,
            &format!("SELECT count(*) FROM schedules WHERE {condition}"),
            libsql::params![filter.user_id.as_deref(), status],
        )
        .await?
        .unwrap_or(0);
        let mut rows = conn
            .query(
                &format!(
                    "SELECT {COLUMNS} FROM schedules WHERE {condition}
                     ORDER BY created_at DESC, schedule_id DESC LIMIT ?3 OFFSET ?4"
                ),
                libsql::params![
                    filter.user_id.as_deref(),
                    status,
                    filter.limit.unwrap_or(-1),
                    filter.offset
                ],
            )
            .await?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().await? {
            out.push(row_to_schedule(&row)?);
        }
        Ok((out, total))
    }

    /// Active and paused schedules of a user.
    pub async fn count(&self, user_id: &str) -> Result<i64> {
        let conn = self.db.conn().await?;
        Ok(query_scalar(
            &conn,
            "SELECT count(*) FROM schedules WHERE user_id = ?1 AND status IN ('active', 'paused')",
            [user_id],
        )
        .await?
        .unwrap_or(0))
    }

    /// Changes name, goal or cadence; a new cadence is validated and reschedules.
    pub async fn patch(&self, schedule_id: &str, patch: &SchedulePatch) -> Result<Schedule> {
        let current = self.get(schedule_id).await?;
        let now = self.clock.now_ms();
        let mut next = current.clone();
        if let Some(name) = &patch.name {
            next.name = name.clone();
        }
        if let Some(goal) = &patch.goal {
            next.goal = goal.clone();
        }
        if let Some((cadence, text)) = &patch.cadence {
            cadence.validate(now, self.limits.min_interval_secs)?;
            next.cadence = cadence.clone();
            next.cadence_text = text.clone();
            next.next_run_at = cadence.next_after(now);
        }
        let mut as_new = NewSchedule::new(
            next.user_id.clone(),
            next.goal.clone(),
            next.cadence.clone(),
        );
        as_new.name = next.name.clone();
        check_schedule(&as_new)?;
        let conn = self.db.conn().await?;
        conn.execute(
            "UPDATE schedules SET name = ?2, goal = ?3, cadence_json = ?4, cadence_text = ?5,
             next_run_at = ?6, updated_at = ?7 WHERE schedule_id = ?1",
            libsql::params![
                schedule_id,
                next.name.as_deref(),
                next.goal.as_str(),
                serde_json::to_string(&next.cadence).expect("cadence serialises"),
                next.cadence_text.as_deref(),
                next.next_run_at,
                now
            ],
        )
        .await?;
        self.get(schedule_id).await
    }

    pub async fn pause(&self, schedule_id: &str, reason: Option<&str>) -> Result<Schedule> {
        let conn = self.db.conn().await?;
        let changed = conn
            .execute(
                "UPDATE schedules SET status = 'paused', status_reason = ?2, updated_at = ?3
                 WHERE schedule_id = ?1 AND status IN ('active', 'paused')",
                libsql::params![schedule_id, reason, self.clock.now_ms()],
            )
            .await?;
        if changed == 0 {
            self.get(schedule_id).await?;
            return Err(ScheduleError::Invalid {
                what: "state",
                reason: format!("schedule `{schedule_id}` has finished and cannot be paused"),
            });
        }
        self.get(schedule_id).await
    }

    /// Resumes a paused schedule from now: occurrences missed while paused do not run.
    pub async fn resume(&self, schedule_id: &str) -> Result<Schedule> {
        let schedule = self.get(schedule_id).await?;
        if schedule.status != ScheduleStatus::Paused {
            return Err(ScheduleError::Invalid {
                what: "state",
                reason: format!(
                    "schedule `{schedule_id}` is {}, not paused",
                    schedule.status
                ),
            });
        }
        let now = self.clock.now_ms();
        let next = schedule.cadence.next_after(now);
        let conn = self.db.conn().await?;
        conn.execute(
            "UPDATE schedules SET status = ?2, status_reason = NULL, consecutive_failures = 0,
             next_run_at = ?3, updated_at = ?4 WHERE schedule_id = ?1 AND status = 'paused'",
            libsql::params![
                schedule_id,
                if next.is_some() {
                    "active"
                } else {
                    "completed"
                },
                next,
                now
            ],
        )
        .await?;
        self.get(schedule_id).await
    }

    /// Makes a schedule due now (its regular cadence continues afterwards).
    pub async fn run_now(&self, schedule_id: &str) -> Result<Schedule> {
        let schedule = self.get(schedule_id).await?;
        if schedule.status != ScheduleStatus::Active {
            return Err(ScheduleError::Invalid {
                what: "state",
                reason: format!(
                    "schedule `{schedule_id}` is {}; resume it first",
                    schedule.status
                ),
            });
        }
        let now = self.clock.now_ms();
        let conn = self.db.conn().await?;
        conn.execute(
            "UPDATE schedules SET next_run_at = min(coalesce(next_run_at, ?2), ?2), updated_at = ?2
             WHERE schedule_id = ?1",
            libsql::params![schedule_id, now],
        )
        .await?;
        self.get(schedule_id).await
    }

    pub async fn delete(&self, schedule_id: &str) -> Result<()> {
        let conn = self.db.conn().await?;
        let deleted = conn
            .execute(
                "DELETE FROM schedules WHERE schedule_id = ?1",
                [schedule_id],
            )
            .await?;
        if deleted == 0 {
            return Err(ScheduleError::NotFound(schedule_id.to_string()));
        }
        Ok(())
    }

    /// Active schedules due at `now` that can be claimed now, earliest first: one whose
    /// next occurrence waits for its running run (see [`WAITS_BEHIND_RUNNING`]) is left
    /// out until that run finishes.
    pub async fn due(&self, now: i64, limit: i64) -> Result<Vec<Schedule>> {
        let conn = self.db.conn().await?;
        let mut rows = conn
            .query(
                &format!(
                    "SELECT {COLUMNS} FROM schedules WHERE status = 'active' AND next_run_at <= ?1
                     AND NOT {WAITS_BEHIND_RUNNING}
                     ORDER BY next_run_at LIMIT ?2"
                ),
                libsql::params![now, limit],
            )
            .await?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().await? {
            out.push(row_to_schedule(&row)?);
        }
        Ok(out)
    }

    /// When the scheduler next has something to do, in one read: the earliest
    /// `next_run_at` of any active schedule that is not waiting for its running run (that
    /// one is looked at again when the run finishes), and the earliest lease expiry among
    /// running runs (when recovery may next be needed).
    pub async fn next_wake(&self) -> Result<NextWake> {
        let conn = self.db.conn().await?;
        let next = query_first_row(
            &conn,
            &format!(
                "SELECT (SELECT min(next_run_at) FROM schedules
                         WHERE status = 'active' AND NOT {WAITS_BEHIND_RUNNING}),
                        (SELECT min(lease_expires_at) FROM schedule_runs
                         WHERE status = 'running')"
            ),
            (),
            |row| {
                Ok(NextWake {
                    due_at: row.get(0)?,
                    lease_expiry: row.get(1)?,
                })
            },
        )
        .await?;
        Ok(next.expect("a SELECT without FROM yields one row"))
    }

    /// A counter that moves whenever any process changes any schedule. Through an
    /// embedded replica it is read after pulling the server's changes, so another
    /// process's change is seen at the next check, not after the next sync.
    pub async fn version(&self) -> Result<i64> {
        self.db.catch_up().await?;
        let conn = self.db.conn().await?;
        let value: Option<String> = query_scalar(
            &conn,
            "SELECT value FROM meta WHERE key = 'schedules_version'",
            (),
        )
        .await?;
        Ok(value.and_then(|v| v.parse().ok()).unwrap_or(0))
    }

    /// Claims the occurrence `schedule.next_run_at` for `worker_id`, in one transaction:
    /// moves `next_run_at` on only if it is still what this worker saw, and inserts the
    /// run row, unique per occurrence. `None` when another worker got there first, or the
    /// occurrence was skipped by policy (recorded as a `skipped` run).
    pub async fn claim(
        &self,
        schedule: &Schedule,
        worker_id: &str,
        lease_ms: i64,
    ) -> Result<Option<Claim>> {
        let Some(scheduled_for) = schedule.next_run_at else {
            return Ok(None);
        };
        let now = self.clock.now_ms();
        let conn = self.db.conn().await?;
        // Its first statement moves the occurrence on: a write.
        let tx = conn.write_tx_writing_first().await?;
        let AfterClaim { next, passed_over } = after_claim(schedule, scheduled_for, now);
        // Moving the occurrence on comes first: a worker that lost the race to another, or
        // a schedule whose occurrence waits for its running run, finds out in this one
        // statement. Waiting: with buffer_one, or catch_up = "all" (every occurrence runs,
        // one after another), an occurrence due while the previous one runs stays pending
        // and runs when that run finishes; with buffer_one, further occurrences missed
        // meanwhile fold into it.
        let moved = tx
            .execute(
                &format!(
                    "UPDATE schedules SET next_run_at = ?3, status = ?4, updated_at = ?5
                     WHERE schedule_id = ?1 AND next_run_at = ?2 AND status = 'active'
                     AND NOT {WAITS_BEHIND_RUNNING}"
                ),
                libsql::params![
                    schedule.schedule_id.as_str(),
                    scheduled_for,
                    next,
                    // A one-shot stays active until its run finishes (then completed or failed).
                    "active",
                    now
                ],
            )
            .await?;
        if moved == 0 {
            tx.rollback().await?;
            return Ok(None);
        }
        if let Some(passed) = passed_over {
            record_skipped(
                &tx,
                &schedule.schedule_id,
                passed.first,
                worker_id,
                now,
                &passed.reason(),
            )
            .await?;
        }
        // Only overlap = "skip" needs to know about a run still going (buffer_one and
        // catch_up = "all" were left out above; "allow" runs anyway).
        let running: i64 = if schedule.overlap == Overlap::Skip && schedule.catch_up != CatchUp::All
        {
            query_scalar(
                &tx,
                "SELECT count(*) FROM schedule_runs WHERE schedule_id = ?1 AND status = 'running'",
                [schedule.schedule_id.as_str()],
            )
            .await?
            .unwrap_or(0)
        } else {
            0
        };
        let run_id = ids::new_id("run");
        let skip_reason = if running > 0 && schedule.overlap == Overlap::Skip {
            Some("the previous run was still running (overlap = skip)")
        } else if schedule.catch_up == CatchUp::Skip && missed(schedule, scheduled_for, now) {
            Some("missed while no worker was running (catch_up = skip)")
        } else {
            None
        };
        if let Some(reason) = skip_reason {
            record_skipped(
                &tx,
                &schedule.schedule_id,
                scheduled_for,
                worker_id,
                now,
                reason,
            )
            .await?;
            if next.is_none() {
                tx.execute(
                    "UPDATE schedules SET status = 'completed', status_reason = ?2 WHERE schedule_id = ?1",
                    libsql::params![schedule.schedule_id.as_str(), reason],
                )
                .await?;
            }
            tx.commit().await?;
            return Ok(None);
        }
        let inserted = tx
            .execute(
                "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, attempt, status,
                 worker_id, lease_expires_at, started_at) VALUES (?1, ?2, ?3, 1, 'running', ?4, ?5, ?6)
                 ON CONFLICT (schedule_id, scheduled_for) DO NOTHING",
                libsql::params![
                    run_id.as_str(),
                    schedule.schedule_id.as_str(),
                    scheduled_for,
                    worker_id,
                    now + lease_ms,
                    now
                ],
            )
            .await?;
        if inserted == 0 {
            // This occurrence already has a run (it was claimed before): never again.
            tx.commit().await?;
            return Ok(None);
        }
        tx.commit().await?;
        let mut schedule = schedule.clone();
        schedule.next_run_at = next;
        Ok(Some(Claim {
            run_id,
            schedule,
            scheduled_for,
            attempt: 1,
        }))
    }

    /// Takes over runs whose worker stopped renewing its lease. Each comes back as a new
    /// attempt of the same occurrence while the schedule allows more attempts; the rest
    /// are recorded `interrupted`.
    pub async fn recover_expired(&self, worker_id: &str, lease_ms: i64) -> Result<Vec<Claim>> {
        let now = self.clock.now_ms();
        let conn = self.db.conn().await?;
        let mut rows = conn
            .query(
                "SELECT r.run_id, r.schedule_id, r.scheduled_for, r.attempt, s.max_attempts
                 FROM schedule_runs r JOIN schedules s ON s.schedule_id = r.schedule_id
                 WHERE r.status = 'running' AND r.lease_expires_at < ?1",
                [now],
            )
            .await?;
        let mut expired = Vec::new();
        while let Some(row) = rows.next().await? {
            expired.push((
                row.get::<String>(0)?,
                row.get::<String>(1)?,
                row.get::<i64>(2)?,
                row.get::<i64>(3)?,
                row.get::<i64>(4)?,
            ));
        }
        drop(rows);
        let mut claims = Vec::new();
        for (run_id, schedule_id, scheduled_for, attempt, max_attempts) in expired {
            if attempt < max_attempts {
                let taken = conn
                    .execute(
                        "UPDATE schedule_runs SET attempt = attempt + 1, worker_id = ?2,
                         lease_expires_at = ?3, started_at = ?4,
                         error = 'previous attempt lost its worker'
                         WHERE run_id = ?1 AND status = 'running' AND lease_expires_at < ?4",
                        libsql::params![run_id.as_str(), worker_id, now + lease_ms, now],
                    )
                    .await?;
                if taken == 1 {
                    tracing::warn!(%run_id, %schedule_id, "recovered a run whose worker stopped");
                    claims.push(Claim {
                        run_id,
                        schedule: self.get(&schedule_id).await?,
                        scheduled_for,
                        attempt: attempt + 1,
                    });
                }
            } else {
                let outcome = RunOutcome {
                    status: Some(RunStatus::Interrupted),
                    error: Some("the worker running it stopped and no attempts are left".into()),
                    ..Default::default()
                };
                let claim = Claim {
                    run_id,
                    schedule: self.get(&schedule_id).await?,
                    scheduled_for,
                    attempt,
                };
                // Only one recovering worker wins this update; the others see no change.
                self.finish(&claim, None, &outcome, u32::MAX as i64).await?;
            }
        }
        Ok(claims)
    }

    /// Starts another attempt of a run this worker holds; false when it no longer does.
    pub async fn next_attempt(&self, run_id: &str, worker_id: &str, lease_ms: i64) -> Result<bool> {
        self.update_held_run(
            "attempt = attempt + 1, lease_expires_at = ?3",
            run_id,
            worker_id,
            lease_ms,
        )
        .await
    }

    /// Pushes a running run's lease forward; false when this worker no longer holds it.
    pub async fn renew_lease(&self, run_id: &str, worker_id: &str, lease_ms: i64) -> Result<bool> {
        self.update_held_run("lease_expires_at = ?3", run_id, worker_id, lease_ms)
            .await
    }

    /// Applies `set` (with `?3` the new lease expiry) to a run `worker_id` holds; false
    /// when it no longer does. The write runs to its end even when the caller stops
    /// waiting: a lease renewal races the run it belongs to, and the run its deadline or
    /// a hard stop (see [`run_to_completion`]).
    async fn update_held_run(
        &self,
        set: &'static str,
        run_id: &str,
        worker_id: &str,
        lease_ms: i64,
    ) -> Result<bool> {
        let db = self.db.clone();
        let sql = format!(
            "UPDATE schedule_runs SET {set} WHERE run_id = ?1 AND worker_id = ?2 AND status = 'running'"
        );
        let params = libsql::params![run_id, worker_id, self.clock.now_ms() + lease_ms];
        run_to_completion(async move {
            let conn = db.conn().await?;
            // Ahead of this process's other writes: a renewal that waited out a long queue
            // would come after the lease it renews.
            Ok(conn.execute_ahead(&sql, params).await? == 1)
        })
        .await
    }

    /// Records a finished attempt and updates the schedule, in one transaction. `worker`
    /// is the worker that must still hold the run (`None`: whoever holds it). Returns
    /// false when the run was no longer this worker's to finish.
    pub async fn finish(
        &self,
        claim: &Claim,
        worker: Option<&str>,
        outcome: &RunOutcome,
        pause_after_failures: i64,
    ) -> Result<bool> {
        self.finish_with(claim, worker, outcome, pause_after_failures, None)
            .await
    }

    /// As [`ScheduleStore::finish`], storing the run's transcript in the same
    /// transaction. A transcript that cannot be stored fails it all
    /// ([`ScheduleError::Transcript`]), nothing written.
    pub async fn finish_with(
        &self,
        claim: &Claim,
        worker: Option<&str>,
        outcome: &RunOutcome,
        pause_after_failures: i64,
        transcript: Option<&Transcript<'_>>,
    ) -> Result<bool> {
        let now = self.clock.now_ms();
        let status = outcome.status.unwrap_or(RunStatus::Failed);
        let summary = outcome
            .output
            .as_deref()
            .map(|o| truncate_chars(o.trim(), SUMMARY_CHARS).to_string());
        let conn = self.db.conn().await?;
        // Its first statement records the run: a write.
        let tx = conn.write_tx_writing_first().await?;
        let updated = tx
            .execute(
                "UPDATE schedule_runs SET status = ?2, finished_at = ?3, output_summary = ?4,
                 output = ?5, error = ?6, turn_count = ?7, prompt_tokens = ?8,
                 completion_tokens = ?9, cost = ?10, lease_expires_at = NULL
                 WHERE run_id = ?1 AND status = 'running' AND (?11 IS NULL OR worker_id = ?11)",
                libsql::params![
                    claim.run_id.as_str(),
                    status.as_str(),
                    now,
                    summary,
                    outcome.output.as_deref(),
                    outcome.error.as_deref(),
                    outcome.turn_count,
                    outcome.prompt_tokens,
                    outcome.completion_tokens,
                    outcome.cost,
                    worker
                ],
            )
            .await?;
        if updated == 0 {
            tx.rollback().await?;
            return Ok(false);
        }
        let one_shot = matches!(claim.schedule.cadence, Cadence::Once { .. });
        let (failures, new_status, reason): (i64, Option<&str>, Option<String>) =
            if status.is_success() {
                (0, one_shot.then_some("completed"), None)
            } else {
                let failures: i64 = query_scalar(
                    &tx,
                    "SELECT consecutive_failures + 1 FROM schedules WHERE schedule_id = ?1",
                    [claim.schedule.schedule_id.as_str()],
                )
                .await?
                .unwrap_or(1);
                if one_shot {
                    (
                        failures,
                        Some("failed"),
                        Some(format!("the one-shot run ended {status}")),
                    )
                } else if failures >= pause_after_failures {
                    (
                        failures,
                        Some("paused"),
                        Some(format!("paused after {failures} consecutive failed runs")),
                    )
                } else {
                    (failures, None, None)
                }
            };
        let mut announced = false;
        if let Some((router, _)) = &self.notifications {
            let plan = router.plan(&claim.schedule);
            announced = self
                .announce(
                    &tx,
                    claim,
                    &plan,
                    status,
                    outcome,
                    failures,
                    new_status.is_some_and(|s| s == "paused"),
                    reason.as_deref(),
                    now,
                )
                .await?;
        }
        tx.execute(
            "UPDATE schedules SET last_run_at = ?2, last_run_status = ?3, consecutive_failures = ?4,
             status = CASE WHEN ?5 IS NOT NULL AND status = 'active' THEN ?5 ELSE status END,
             status_reason = CASE WHEN ?5 IS NOT NULL AND status = 'active' THEN ?6 ELSE status_reason END,
             updated_at = ?2
             WHERE schedule_id = ?1",
            libsql::params![
                claim.schedule.schedule_id.as_str(),
                now,
                status.as_str(),
                failures,
                new_status,
                reason
            ],
        )
        .await?;
        let mut appended = None;
        if let Some(transcript) = transcript {
            let stored = transcript
                .memory
                .append_in(
                    &tx,
                    transcript.user_id,
                    transcript.session_id,
                    transcript.events,
                )
                .await
                .map_err(ScheduleError::Transcript)?;
            appended = Some((transcript.memory, stored));
        }
        tx.commit().await?;
        if let Some((memory, stored)) = appended {
            memory.appended(&stored);
        }
        // Pruned after the commit, on its own: on a server a statement inside the
        // transaction holds the write lock (shared by every worker) for a network round
        // trip, and a statement on its own only while the server runs it. A prune lost to
        // a crash here is done by the schedule's next finished run.
        if let Err(err) = conn
            .execute(
                "DELETE FROM schedule_runs WHERE schedule_id = ?1 AND status != 'running'
                 AND run_id NOT IN (SELECT run_id FROM schedule_runs WHERE schedule_id = ?1
                                    ORDER BY scheduled_for DESC LIMIT ?2)",
                libsql::params![
                    claim.schedule.schedule_id.as_str(),
                    self.limits.history_keep
                ],
            )
            .await
        {
            tracing::warn!(schedule_id = %claim.schedule.schedule_id, %err, "cannot prune the schedule's run history");
        }
        if announced {
            if let Some((_, sender)) = &self.notifications {
                sender.notify_one();
            }
        }
        Ok(true)
    }

    /// Writes the messages a finished run calls for into the outbox, inside the
    /// transaction recording it. Returns whether any was written.
    #[allow(clippy::too_many_arguments)]
    async fn announce(
        &self,
        tx: &libsql::Connection,
        claim: &Claim,
        plan: &NotifyPlan,
        status: RunStatus,
        outcome: &RunOutcome,
        failures: i64,
        paused: bool,
        pause_reason: Option<&str>,
        now: i64,
    ) -> Result<bool> {
        let schedule = &claim.schedule;
        let name = schedule
            .name
            .clone()
            .unwrap_or_else(|| schedule.schedule_id.clone());
        let payload = |event: &str, summary: String, output: String| {
            serde_json::json!({
                "event": event,
                "schedule_id": schedule.schedule_id,
                "schedule_name": schedule.name,
                "run_id": claim.run_id,
                "user_id": schedule.user_id,
                "status": status.as_str(),
                "scheduled_for": to_rfc3339(claim.scheduled_for),
                "summary": summary,
                "output": output,
            })
        };
        let message =
            |kind: &'static str, priority: Priority, payload: serde_json::Value| NewMessage {
                kind,
                run_id: &claim.run_id,
                schedule_id: &schedule.schedule_id,
                user_id: &schedule.user_id,
                priority,
                payload,
            };
        let mut written = false;
        // Only "on_change" compares with the last success: the others skip the read
        // (a round trip, inside the write transaction, on a server).
        let previous: Option<String> = if schedule.notify == NotifyPolicy::OnChange {
            query_scalar(
                tx,
                "SELECT output FROM schedule_runs WHERE schedule_id = ?1 AND status = 'succeeded'
                 AND run_id != ?2 ORDER BY scheduled_for DESC LIMIT 1",
                libsql::params![schedule.schedule_id.as_str(), claim.run_id.as_str()],
            )
            .await?
        } else {
            None
        };
        if let Some(text) = run_message(
            schedule.notify,
            status,
            outcome.output.as_deref(),
            previous.as_deref(),
            &plan.marker,
        ) {
            let error = outcome.error.clone().unwrap_or_default();
            let summary = if status.is_success() {
                format!(
                    "{name}: {}",
                    truncate_chars(text.lines().next().unwrap_or("done"), 200)
                )
            } else {
                format!("{name}: run {status}: {}", truncate_chars(&error, 200))
            };
            let priority = if status.is_success() {
                Priority::Normal
            } else {
                Priority::High
            };
            enqueue_in(
                tx,
                plan,
                message("run", priority, payload("run.finished", summary, text)),
                now,
            )
            .await?;
            written = true;
        }
        if !status.is_success() && failures == plan.failure_notice_after {
            let summary = format!("{name} has failed {failures} times in a row");
            let last = outcome.error.clone().unwrap_or_default();
            enqueue_in(
                tx,
                plan,
                message(
                    "failing",
                    Priority::High,
                    payload("schedule.failing", summary, last),
                ),
                now,
            )
            .await?;
            written = true;
        }
        if paused {
            let summary = format!(
                "{name} was paused: {}",
                pause_reason.unwrap_or("too many failures")
            );
            let last = outcome.error.clone().unwrap_or_default();
            enqueue_in(
                tx,
                plan,
                message(
                    "paused",
                    Priority::High,
                    payload("schedule.paused", summary, last),
                ),
                now,
            )
            .await?;
            written = true;
        }
        Ok(written)
    }

    /// A schedule's runs, newest occurrence first.
    pub async fn runs(&self, schedule_id: &str, limit: i64) -> Result<Vec<Run>> {
        self.get(schedule_id).await?;
        let conn = self.db.conn().await?;
        let mut rows = conn
            .query(
                &format!(
                    "SELECT {RUN_COLUMNS} FROM schedule_runs WHERE schedule_id = ?1
                     ORDER BY scheduled_for DESC LIMIT ?2"
                ),
                libsql::params![schedule_id, limit],
            )
            .await?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().await? {
            out.push(row_to_run(&row)?);
        }
        Ok(out)
    }

    pub async fn run(&self, run_id: &str) -> Result<Run> {
        let conn = self.db.conn().await?;
        let mut rows = conn
            .query(
                &format!("SELECT {RUN_COLUMNS} FROM schedule_runs WHERE run_id = ?1"),
                [run_id],
            )
            .await?;
        let Some(row) = rows.next().await? else {
            return Err(ScheduleError::RunNotFound(run_id.to_string()));
        };
        let run = row_to_run(&row)?;
        finish_rows(rows).await?;
        Ok(run)
    }

    /// Marks runs this worker still holds as interrupted and releases them (shutdown).
    /// Their schedules are updated as for any failed run: a one-shot ends `failed`.
    pub async fn interrupt_held(&self, worker_id: &str, pause_after_failures: i64) -> Result<u64> {
        let conn = self.db.conn().await?;
        let mut rows = conn
            .query(
                "SELECT run_id, schedule_id, scheduled_for, attempt FROM schedule_runs
                 WHERE worker_id = ?1 AND status = 'running'",
                [worker_id],
            )
            .await?;
        let mut held = Vec::new();
        while let Some(row) = rows.next().await? {
            held.push((
                row.get::<String>(0)?,
                row.get::<String>(1)?,
                row.get::<i64>(2)?,
                row.get::<i64>(3)?,
            ));
        }
        drop(rows);
        let outcome = RunOutcome {
            status: Some(RunStatus::Interrupted),
            error: Some("the worker shut down before the run finished".into()),
            ..Default::default()
        };
        let mut interrupted = 0;
        for (run_id, schedule_id, scheduled_for, attempt) in held {
            let claim = Claim {
                run_id,
                schedule: self.get(&schedule_id).await?,
                scheduled_for,
                attempt,
            };
            if self
                .finish(&claim, Some(worker_id), &outcome, pause_after_failures)
                .await?
            {
                interrupted += 1;
            }
        }
        Ok(interrupted)
    }
}

/// Records the occurrence `scheduled_for` as skipped by policy, for `reason`; an
/// occurrence that already has a run keeps it.
async fn record_skipped(
    tx: &WriteTx,
    schedule_id: &str,
    scheduled_for: i64,
    worker_id: &str,
    now: i64,
    reason: &str,
) -> Result<()> {
    tx.execute(
        "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, status, worker_id,
         started_at, finished_at, error) VALUES (?1, ?2, ?3, 'skipped', ?4, ?5, ?5, ?6)
         ON CONFLICT (schedule_id, scheduled_for) DO NOTHING",
        libsql::params![
            ids::new_id("run"),
            schedule_id,
            scheduled_for,
            worker_id,
            now,
            reason
        ],
    )
    .await?;
    Ok(())
}

/// True when `scheduled_for` was missed: a later occurrence is already due.
fn missed(schedule: &Schedule, scheduled_for: i64, now: i64) -> bool {
    schedule
        .cadence
        .next_after(scheduled_for)
        .is_some_and(|following| following <= now)
}

/// What claiming an occurrence does to the schedule, by its catch-up policy.
struct AfterClaim {
    /// Where `next_run_at` goes.
    next: Option<i64>,
    /// Missed occurrences passed over without a run of their own (`catch_up = "all"`
    /// beyond its limit).
    passed_over: Option<PassedOver>,
}

/// Missed occurrences `catch_up = "all"` passes over, all but the last
/// [`CATCH_UP_ALL_LIMIT`]: recorded as one `skipped` run at the first of them, so the
/// schedule's history accounts for every occurrence.
struct PassedOver {
    first: i64,
    last: i64,
    count: usize,
}

impl PassedOver {
    fn reason(&self) -> String {
        format!(
            "{} missed occurrence(s) from {} to {} passed over: catch_up = all runs at most \
             the last {CATCH_UP_ALL_LIMIT}",
            self.count,
            to_rfc3339(self.first),
            to_rfc3339(self.last)
        )
    }
}

/// Where `next_run_at` goes once `scheduled_for` is claimed, by the catch-up policy.
fn after_claim(schedule: &Schedule, scheduled_for: i64, now: i64) -> AfterClaim {
    let cadence = &schedule.cadence;
    match schedule.catch_up {
        CatchUp::All => {
            // Each missed occurrence runs in turn, but never more than the last 100.
            let mut recent = std::collections::VecDeque::with_capacity(CATCH_UP_ALL_LIMIT);
            let mut passed_over: Option<PassedOver> = None;
            let mut at = cadence.next_after(scheduled_for);
            while let Some(missed) = at.filter(|&t| t <= now) {
                if recent.len() == CATCH_UP_ALL_LIMIT {
                    let oldest = recent.pop_front().expect("the limit is above 0");
                    let passed = passed_over.get_or_insert(PassedOver {
                        first: oldest,
                        last: oldest,
                        count: 0,
                    });
                    passed.last = oldest;
                    passed.count += 1;
                }
                recent.push_back(missed);
                at = cadence.next_after(missed);
            }
            AfterClaim {
                next: recent.front().copied().or(at),
                passed_over,
            }
        }
        // Missed occurrences fold into this one; the next is the first one after now.
        CatchUp::Once | CatchUp::Skip => AfterClaim {
            next: cadence.next_after(now.max(scheduled_for)),
            passed_over: None,
        },
    }
}
