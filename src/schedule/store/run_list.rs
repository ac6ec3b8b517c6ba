//! Runs across schedules, filtered and paged: "what failed last night?" in one question.
//! The operator lists everyone's runs; a user only their own (another user's filter names
//! nothing of theirs).

use super::ScheduleStore;
use crate::access::Actor;
use crate::db::{fetch_all, query_scalar, FromRow};
use crate::input;
use crate::schedule::types::{Run, RunStatus};
use crate::schedule::Result;

/// The most runs one page lists.
pub const MAX_RUN_PAGE: i64 = 200;

/// Which runs a list holds: each filter given narrows it. Times are the occurrences'
/// (`scheduled_for`), from `since` to `until`, both included (a date as `until` is its
/// last moment, so a date as both keeps that whole day).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunFilter {
    pub status: Option<RunStatus>,
    pub user_id: Option<String>,
    pub schedule_id: Option<String>,
    pub since: Option<i64>,
    pub until: Option<i64>,
    /// 1 to [`MAX_RUN_PAGE`].
    pub limit: i64,
    pub offset: i64,
}

impl RunFilter {
    /// The filter read from text, as a query string gives it: each field given must be
    /// valid as it is (an empty one too is refused, naming it).
    pub fn parse(
        status: Option<&str>,
        user: Option<&str>,
        schedule: Option<&str>,
        since: Option<&str>,
        until: Option<&str>,
    ) -> Result<Self> {
        let status = status
            .map(|s| {
                s.parse::<RunStatus>()
                    .map_err(|reason| input::InputError::new("status", reason))
            })
            .transpose()?;
        if let Some(user) = user {
            input::check_id("user", user)?;
        }
        if let Some(schedule) = schedule {
            input::check_id("schedule", schedule)?;
        }
        let since = crate::memory::parse_time_opt("since", since, false)?;
        let until = crate::memory::parse_time_opt("until", until, true)?;
        Ok(Self {
            status,
            user_id: user.map(str::to_string),
            schedule_id: schedule.map(str::to_string),
            since,
            until,
            limit: 50,
            offset: 0,
        })
    }
}

impl ScheduleStore {
    /// The runs `filter` selects that `actor` may see, newest occurrence first, a page at a
    /// time; and how many it selects in all.
    pub async fn list_runs(&self, actor: &Actor, filter: &RunFilter) -> Result<(Vec<Run>, i64)> {
        if !(1..=MAX_RUN_PAGE).contains(&filter.limit) {
            return Err(input::InputError::new(
                "limit",
                format!("must be 1..={MAX_RUN_PAGE}, got {}", filter.limit),
            )
            .into());
        }
        if filter.offset < 0 {
            return Err(input::InputError::new("offset", "must not be negative").into());
        }
        // A user's list is theirs whatever user it names: another's names nothing.
        let user = match (actor.user_id(), filter.user_id.as_deref()) {
            (Some(own), Some(named)) if own != named => return Ok((Vec::new(), 0)),
            (Some(own), _) => Some(own),
            (None, named) => named,
        };
        // Only the filters given, so each can use its index (`?N IS NULL OR …` would read
        // every run, their outputs with them, to count them).
        let mut conditions = Vec::new();
        let mut values: Vec<libsql::Value> = Vec::new();
        let mut given = |condition: &str, value: libsql::Value| {
            values.push(value);
            conditions.push(condition.replace("?N", &format!("?{}", values.len())));
        };
        if let Some(user) = user {
            given(
                "schedule_id IN (SELECT schedule_id FROM schedules WHERE user_id = ?N)",
                user.into(),
            );
        }
        if let Some(status) = filter.status {
            given("status = ?N", status.as_str().into());
        }
        if let Some(schedule_id) = filter.schedule_id.as_deref() {
            given("schedule_id = ?N", schedule_id.into());
        }
        if let Some(since) = filter.since {
            given("scheduled_for >= ?N", since.into());
        }
        if let Some(until) = filter.until {
            given("scheduled_for <= ?N", until.into());
        }
        let conditions = if conditions.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", conditions.join(" AND "))
        };
        let params = || libsql::params::Params::Positional(values.clone());
        let conn = self.db.conn().await?;
        let runs = fetch_all(
            &conn,
            &format!(
                "SELECT {} FROM schedule_runs {conditions}
                 ORDER BY scheduled_for DESC, run_id DESC LIMIT {} OFFSET {}",
                Run::COLUMNS,
                filter.limit,
                filter.offset
            ),
            params(),
        )
        .await?;
        let total = query_scalar(
            &conn,
            &format!("SELECT count(*) FROM schedule_runs {conditions}"),
            params(),
        )
        .await?
        .unwrap_or(0);
        Ok((runs, total))
    }
}
