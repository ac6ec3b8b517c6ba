//! Reading schedules and runs: one, a filtered page, what is due, when to wake next.

use super::events::earliest_event_sql;
use super::{ScheduleStore, WAITS_BEHIND_RUNNING};
use crate::access::Actor;
use crate::db::{
    fetch_all, fetch_optional, fetch_readable, query_first_row, query_scalar, FromRow, Unreadable,
};
use crate::input;
use crate::schedule::types::{Run, Schedule, ScheduleStatus};
use crate::schedule::{Result, ScheduleError};

/// Most schedules or runs one page may hold.
pub const MAX_PAGE: i64 = 1000;

/// Filters for [`ScheduleStore::list`].
#[derive(Debug, Clone, Default)]
pub struct ScheduleFilter {
    /// Only this user's (a user actor sees only their own whatever this says).
    pub user_id: Option<String>,
    pub status: Option<ScheduleStatus>,
    /// Only those an agent made during a run (`schedule_follow_up`).
    pub made_by_agent: bool,
    /// At most this many (1..=1000); all when `None`.
    pub limit: Option<i64>,
    pub offset: i64,
}

/// What [`ScheduleStore::next_wake`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NextWake {
    /// The earliest due time of a schedule that can run now, or of an event waiting for
    /// a run of a schedule that can take it.
    pub due_at: Option<i64>,
    /// The earliest lease expiry of a running run.
    pub lease_expiry: Option<i64>,
}

impl ScheduleStore {
    /// A schedule by id, whoever owns it (for the worker's own use).
    pub(crate) async fn load(&self, schedule_id: &str) -> Result<Schedule> {
        let conn = self.db.conn().await?;
        fetch_optional(
            &conn,
            &format!(
                "SELECT {} FROM schedules WHERE schedule_id = ?1",
                Schedule::COLUMNS
            ),
            [schedule_id],
        )
        .await?
        .ok_or_else(|| ScheduleError::NotFound(schedule_id.to_string()))
    }

    /// Schedules matching the filter that the actor may see, newest first, and how many
    /// match in all.
    pub async fn list(
        &self,
        actor: &Actor,
        filter: &ScheduleFilter,
    ) -> Result<(Vec<Schedule>, i64)> {
        if let Some(limit) = filter.limit {
            input::check_range("limit", limit, 1..=MAX_PAGE)?;
        }
        input::check_range("offset", filter.offset, 0..=i64::MAX)?;
        let user = match (actor.user_id(), filter.user_id.as_deref()) {
            (Some(actor), Some(asked)) if actor != asked => return Ok((Vec::new(), 0)),
            (Some(actor), _) => Some(actor),
            (None, asked) => asked,
        };
        if let Some(user) = user {
            input::check_user_id(user)?;
        }
        let conn = self.db.conn().await?;
        let status = filter.status.map(|s| s.as_str());
        let made = if filter.made_by_agent {
            " AND made_by_run IS NOT NULL"
        } else {
            ""
        };
        let condition =
            format!("(?1 IS NULL OR user_id = ?1) AND (?2 IS NULL OR status = ?2){made}");
        let total: i64 = query_scalar(
            &conn,
            &format!("SELECT count(*) FROM schedules WHERE {condition}"),
            libsql::params![user, status],
        )
        .await?
        .unwrap_or(0);
        let schedules = fetch_all(
            &conn,
            &format!(
                "SELECT {} FROM schedules WHERE {condition}
                 ORDER BY created_at DESC, schedule_id DESC LIMIT ?3 OFFSET ?4",
                Schedule::COLUMNS
            ),
            libsql::params![
                user,
                status,
                filter.limit.unwrap_or(i64::MAX),
                filter.offset
            ],
        )
        .await?;
        Ok((schedules, total))
    }

    /// Every schedule of one source (config sync reads its own).
    pub(crate) async fn all_of_source(
        &self,
        source: crate::schedule::types::Source,
    ) -> Result<Vec<Schedule>> {
        let conn = self.db.conn().await?;
        Ok(fetch_all(
            &conn,
            &format!(
                "SELECT {} FROM schedules WHERE source = ?1 ORDER BY created_at",
                Schedule::COLUMNS
            ),
            [source.as_str()],
        )
        .await?)
    }

    /// The id of the config schedule named `name`, when it is in the database.
    pub async fn config_schedule_id(&self, name: &str) -> Result<Option<String>> {
        let conn = self.db.conn().await?;
        Ok(query_scalar(
            &conn,
            "SELECT schedule_id FROM schedules WHERE source = 'config' AND name = ?1",
            [name],
        )
        .await?)
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

    /// Active schedules due at `now` that can be claimed now, earliest first: one whose
    /// next occurrence waits for its running run (see [`WAITS_BEHIND_RUNNING`]) is left
    /// out until that run finishes.
    pub async fn due(&self, now: i64, limit: i64) -> Result<Vec<Schedule>> {
        let conn = self.db.conn().await?;
        let (due, unreadable) = fetch_readable::<Schedule>(
            &conn,
            &format!(
                "SELECT {} FROM schedules WHERE status = 'active' AND next_run_at <= ?1
                 AND NOT {WAITS_BEHIND_RUNNING}
                 ORDER BY next_run_at LIMIT ?2",
                Schedule::COLUMNS
            ),
            libsql::params![now, limit],
        )
        .await?;
        drop(conn);
        for bad in &unreadable {
            self.pause_unreadable(bad).await?;
        }
        Ok(due)
    }

    /// Pauses a schedule whose stored row cannot be read, with the reason, so the other
    /// schedules keep running and the scheduler does not come back to it every pass; the
    /// operator sees it in `schedule list` and the log, and mends or deletes it.
    async fn pause_unreadable(&self, bad: &Unreadable) -> Result<()> {
        tracing::error!(table = "schedules", schedule_id = %bad.id, reason = %bad.reason,
            "a stored schedule cannot be read; paused it");
        let reason = format!("paused: its stored row cannot be read ({})", bad.reason);
        let conn = self.db.conn().await?;
        conn.execute(
            "UPDATE schedules SET status = 'paused', status_reason = ?2, updated_at = ?3
             WHERE schedule_id = ?1 AND status = 'active'",
            libsql::params![bad.id.as_str(), reason, self.clock.now_ms()],
        )
        .await?;
        Ok(())
    }

    /// When the scheduler next has something to do, in one read: the earliest
    /// `next_run_at` of any active schedule that is not waiting for its running run (that
    /// one is looked at again when the run finishes) or approval request running out, and the earliest lease expiry among
    /// running runs (when recovery may next be needed).
    pub async fn next_wake(&self) -> Result<NextWake> {
        let conn = self.db.conn().await?;
        let next = query_first_row(
            &conn,
            &format!(
                "SELECT (SELECT min(t) FROM (
                            SELECT min(next_run_at) AS t FROM schedules
                            WHERE status = 'active' AND NOT {WAITS_BEHIND_RUNNING}
                            UNION ALL SELECT {}
                            UNION ALL SELECT min(expires_at) FROM approvals
                            WHERE state = 'pending') AS due),
                        (SELECT min(lease_expires_at) FROM schedule_runs
                         WHERE status = 'running')",
                earliest_event_sql()
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
        Ok(next.unwrap_or(NextWake {
            due_at: None,
            lease_expiry: None,
        }))
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

    /// A schedule's runs, newest occurrence first (1..=1000 of them).
    pub async fn runs(&self, actor: &Actor, schedule_id: &str, limit: i64) -> Result<Vec<Run>> {
        input::check_range("limit", limit, 1..=MAX_PAGE)?;
        self.get(actor, schedule_id).await?;
        let conn = self.db.conn().await?;
        Ok(fetch_all(
            &conn,
            &format!(
                "SELECT {} FROM schedule_runs WHERE schedule_id = ?1
                 ORDER BY scheduled_for DESC LIMIT ?2",
                Run::COLUMNS
            ),
            libsql::params![schedule_id, limit],
        )
        .await?)
    }

    /// One run, if its schedule is the actor's.
    pub async fn run(&self, actor: &Actor, run_id: &str) -> Result<Run> {
        let conn = self.db.conn().await?;
        let run: Run = fetch_optional(
            &conn,
            &format!(
                "SELECT {} FROM schedule_runs r WHERE run_id = ?1
                 AND (?2 IS NULL OR EXISTS (SELECT 1 FROM schedules s
                      WHERE s.schedule_id = r.schedule_id AND s.user_id = ?2))",
                Run::COLUMNS
            ),
            libsql::params![run_id, actor.user_id()],
        )
        .await?
        .ok_or_else(|| ScheduleError::RunNotFound(run_id.to_string()))?;
        Ok(run)
    }
}
