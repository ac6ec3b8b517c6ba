//! Schedules and runs as every front door shows them (the CLI's `--json`, the HTTP API, the
//! MCP tools): times as RFC 3339 in the schedule's own zone, the cadence in words, and the
//! next runs.

use chrono_tz::Tz;
use serde::Serialize;

use super::bounds::Bounds;
use super::cadence::{format_duration, render};
use super::types::{
    Alerts, CatchUp, ChainOn, NewSchedule, NotifyPolicy, Overlap, Run, RunOrigin, RunStatus,
    Schedule, ScheduleStatus, Source, Upstream,
};
use super::Cadence;

/// Next runs a listing shows per schedule; `show` shows [`SHOW_NEXT_RUNS`].
pub const LIST_NEXT_RUNS: usize = 1;
pub const SHOW_NEXT_RUNS: usize = 5;

/// Up to `count` runs as RFC 3339 in `tz`: `first_due`, then the occurrences after
/// `first_nominal` (each the one `next_after` the last) at the time `due` gives them.
fn next_runs(
    next_after: impl Fn(i64) -> Option<i64>,
    due: impl Fn(i64) -> i64,
    (first_due, first_nominal): (Option<i64>, Option<i64>),
    count: usize,
    tz: Tz,
) -> Vec<String> {
    let Some(first) = first_due.filter(|_| count > 0) else {
        return Vec::new();
    };
    let mut runs = vec![render(first, tz)];
    let mut t = first_nominal;
    while runs.len() < count {
        t = t.and_then(&next_after);
        let Some(nominal) = t else {
            break;
        };
        runs.push(render(due(nominal), tz));
    }
    runs
}

/// A schedule as understood before it is stored (`schedule add --dry-run`): the cadence in
/// words and its next runs.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct SchedulePreview {
    pub user_id: String,
    pub name: Option<String>,
    pub goal: String,
    pub cadence: Cadence,
    /// The caller's own words, when the cadence came from natural language.
    pub cadence_text: Option<String>,
    /// The cadence in plain words.
    pub description: String,
    /// The zone the runs below are shown in.
    pub timezone: String,
    /// The first occurrences after now.
    pub next_runs: Vec<String>,
}

impl SchedulePreview {
    /// `new` as it would run from `now_ms`, with up to `count` next runs.
    pub fn new(new: &NewSchedule, now_ms: i64, count: usize) -> Self {
        Self {
            user_id: new.user_id.clone(),
            name: new.name.clone(),
            goal: new.goal.clone(),
            cadence: new.cadence.clone(),
            cadence_text: new.cadence_text.clone(),
            description: with_upstream(
                describe(&new.cadence, &new.bounds, new.jitter_secs, None),
                new.after.as_ref(),
                false,
            ),
            timezone: new.cadence.zone().name().to_string(),
            // Before it has an id its jitter's offsets are not known: nominal times.
            next_runs: next_runs(
                |t| new.next_after(t),
                |t| t,
                (new.next_after(now_ms), new.next_after(now_ms)),
                new.bounds.max_runs.map_or(count, |m| count.min(m as usize)),
                new.cadence.zone(),
            ),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ScheduleView {
    pub schedule_id: String,
    pub user_id: String,
    pub name: Option<String>,
    pub goal: String,
    pub cadence: Cadence,
    /// The caller's own words, when the cadence came from natural language.
    pub cadence_text: Option<String>,
    /// The cadence in plain words.
    pub description: String,
    /// The zone every time below is shown in.
    pub timezone: String,
    pub source: Source,
    pub notify: NotifyPolicy,
    pub overlap: Overlap,
    pub catch_up: CatchUp,
    pub max_attempts: i64,
    pub timeout_secs: Option<i64>,
    pub max_turns: Option<i64>,
    pub max_cost: Option<f64>,
    pub status: ScheduleStatus,
    /// Why it is paused, completed or failed (a pause's note).
    pub status_reason: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub next_run_at: Option<String>,
    pub last_run_at: Option<String>,
    pub last_run_status: Option<RunStatus>,
    pub consecutive_failures: i64,
    pub channel_id: Option<String>,
    pub channel_context_id: Option<String>,
    /// No occurrence before this.
    pub starts_at: Option<String>,
    /// No occurrence after this.
    pub ends_at: Option<String>,
    /// Runs started at most (counted from when the limit was set).
    pub max_runs: Option<i64>,
    /// Runs the limit still allows.
    pub runs_left: Option<i64>,
    /// Each run starts up to this many seconds after its time, the same for every worker.
    pub jitter_secs: Option<i64>,
    /// An occurrence missed longer ago than this many seconds is skipped, not run.
    pub catch_up_window_secs: Option<i64>,
    /// Dates and cron expressions whose occurrences are skipped, in the schedule's zone.
    pub skip: Vec<String>,
    /// Named calendars whose dates are skipped.
    pub calendars: Vec<String>,
    /// The next occurrences, first `next_run_at`.
    pub next_runs: Vec<String>,
    /// The schedule this one follows.
    pub after: Option<UpstreamView>,
    /// The agent its runs act as; absent: the user's shared notes only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The run whose agent made this schedule (its `schedule_follow_up` tool); absent:
    /// made by a person or the config.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub made_by_run: Option<String>,
    /// Patterns narrowing the MCP tools its runs may use; absent: every tool its user is
    /// granted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Patterns choosing which of its runs' tool calls need a person's approval; absent:
    /// none do.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub approve: Vec<String>,
    /// When its owner is told it needs them; absent: never.
    #[serde(skip_serializing_if = "Alerts::is_empty")]
    pub alerts: Alerts,
}

/// The schedule a schedule follows, as `show` tells it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct UpstreamView {
    pub schedule_id: String,
    /// Which of its runs start one: succeeded, failed or finished.
    pub on: ChainOn,
    /// Its status, or `deleted`: a paused or finished upstream starts nothing.
    pub upstream_status: String,
}

impl UpstreamView {
    fn new(upstream: &Upstream) -> Self {
        Self {
            schedule_id: upstream.schedule_id.clone(),
            on: upstream.on,
            upstream_status: upstream
                .status
                .map_or("deleted", |s| s.as_str())
                .to_string(),
        }
    }
}

impl ScheduleView {
    /// The schedule with up to `preview` next runs.
    pub fn new(schedule: &Schedule, preview: usize) -> Self {
        let tz = schedule.cadence.zone();
        let runs_left = schedule
            .bounds
            .max_runs
            .map(|max| (max - schedule.runs_started).max(0));
        // A next run worked out before its date joined a calendar will be skipped.
        let first = match schedule.next_nominal() {
            Some(nominal) if schedule.bounds.on_calendar(nominal, tz) => {
                let next = schedule.next_after(nominal);
                (next.map(|t| schedule.due_at(t)), next)
            }
            _ => (schedule.next_run_at, schedule.next_nominal()),
        };
        let next_runs = next_runs(
            |t| schedule.next_after(t),
            |t| schedule.due_at(t),
            first,
            runs_left.map_or(preview, |left| preview.min(left as usize)),
            tz,
        );
        let show = |ms: i64| render(ms, tz);
        Self {
            schedule_id: schedule.schedule_id.clone(),
            user_id: schedule.user_id.clone(),
            name: schedule.name.clone(),
            goal: schedule.goal.clone(),
            cadence: schedule.cadence.clone(),
            cadence_text: schedule.cadence_text.clone(),
            description: with_upstream(
                describe(
                    &schedule.cadence,
                    &schedule.bounds,
                    schedule.jitter_secs,
                    runs_left,
                ),
                schedule.after.as_ref(),
                true,
            ),
            timezone: tz.name().to_string(),
            source: schedule.source,
            notify: schedule.notify,
            overlap: schedule.overlap,
            catch_up: schedule.catch_up,
            max_attempts: schedule.max_attempts,
            timeout_secs: schedule.timeout_secs,
            max_turns: schedule.max_turns,
            max_cost: schedule.max_cost,
            status: schedule.status,
            status_reason: schedule.status_reason.clone(),
            created_at: show(schedule.created_at),
            updated_at: show(schedule.updated_at),
            next_run_at: first.0.map(show),
            last_run_at: schedule.last_run_at.map(show),
            last_run_status: schedule.last_run_status,
            consecutive_failures: schedule.consecutive_failures,
            channel_id: schedule.channel_id.clone(),
            channel_context_id: schedule.channel_context_id.clone(),
            starts_at: schedule.bounds.starts_at.map(show),
            ends_at: schedule.bounds.ends_at.map(show),
            max_runs: schedule.bounds.max_runs,
            runs_left,
            jitter_secs: schedule.jitter_secs,
            catch_up_window_secs: schedule.catch_up_window_secs,
            skip: schedule.bounds.skip.clone(),
            calendars: schedule.bounds.calendars.clone(),
            next_runs,
            after: schedule.after.as_ref().map(UpstreamView::new),
            agent: schedule.agent_id.clone(),
            made_by_run: schedule.made_by_run.clone(),
            tools: schedule.tools.clone(),
            approve: schedule.approve.clone(),
            alerts: schedule.alerts,
        }
    }
}

/// The cadence in words, with its bounds: "at 09:00 on Monday to Friday (Europe/Lisbon);
/// from …; until …; skips 2026-12-25; 3 of 10 runs left".
fn describe(
    cadence: &Cadence,
    bounds: &Bounds,
    jitter_secs: Option<i64>,
    runs_left: Option<i64>,
) -> String {
    let tz = cadence.zone();
    let mut words = cadence.describe();
    if let Some(jitter) = jitter_secs {
        words.push_str(&format!(
            "; up to {} late by jitter",
            format_duration(jitter)
        ));
    }
    if let Some(start) = bounds.starts_at {
        words.push_str(&format!("; from {}", render(start, tz)));
    }
    if let Some(end) = bounds.ends_at {
        words.push_str(&format!("; until {}", render(end, tz)));
    }
    if !bounds.skip.is_empty() {
        words.push_str(&format!("; skips {}", bounds.skip.join(", ")));
    }
    if !bounds.calendars.is_empty() {
        words.push_str(&format!(
            "; skips the dates of {}",
            bounds.calendars.join(", ")
        ));
    }
    if let Some(max) = bounds.max_runs {
        let left = runs_left.unwrap_or(max);
        words.push_str(&format!("; {left} of {max} runs left"));
    }
    words
}

/// The cadence's words, and the schedule it follows: "…; after sch-… succeeds (paused)".
/// `stored`: the upstream's status was read with the schedule (a preview's was not).
fn with_upstream(mut words: String, upstream: Option<&Upstream>, stored: bool) -> String {
    let Some(upstream) = upstream else {
        return words;
    };
    let when = match upstream.on {
        ChainOn::Succeeded => "succeeds",
        ChainOn::Failed => "fails",
        ChainOn::Finished => "finishes",
    };
    words.push_str(&format!(
        "; after each run of {} that {when}",
        upstream.schedule_id
    ));
    match upstream.status {
        Some(ScheduleStatus::Active) => {}
        Some(status) => words.push_str(&format!(" (it is {status})")),
        None if stored => words.push_str(" (it was deleted)"),
        None => {}
    }
    words
}

/// A page of schedules and how many match in all.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ScheduleList {
    pub schedules: Vec<ScheduleView>,
    pub total: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct RunView {
    pub run_id: String,
    pub schedule_id: String,
    pub scheduled_for: String,
    pub attempt: i64,
    pub status: RunStatus,
    pub worker_id: Option<String>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub output_summary: Option<String>,
    pub output: Option<String>,
    pub error: Option<String>,
    pub turn_count: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub cost: f64,
    pub notified: bool,
    /// What started it: cadence, trigger, chain or backfill.
    pub origin: RunOrigin,
    /// Who asked to stop it, when someone did (`cli`, `api`, `mcp`, `dashboard`): a
    /// running run with this set is being stopped.
    pub cancel_requested_by: Option<String>,
    /// The run this one repeats, for a rerun (`schedule rerun`, `schedule replay`).
    pub parent_run_id: Option<String>,
    /// A rerun that saw memory as it was at this instant (UTC), the start of the run it
    /// repeats (`--memory-as-of-original`).
    pub memory_as_of: Option<String>,
}

impl From<&Run> for RunView {
    fn from(run: &Run) -> Self {
        let show = |ms: i64| render(ms, Tz::UTC);
        Self {
            run_id: run.run_id.clone(),
            schedule_id: run.schedule_id.clone(),
            scheduled_for: show(run.scheduled_for),
            attempt: run.attempt,
            status: run.status,
            worker_id: run.worker_id.clone(),
            started_at: run.started_at.map(show),
            finished_at: run.finished_at.map(show),
            output_summary: run.output_summary.clone(),
            output: run.output.clone(),
            error: run.error.clone(),
            turn_count: run.turn_count,
            prompt_tokens: run.prompt_tokens,
            completion_tokens: run.completion_tokens,
            cost: run.cost,
            notified: run.notified,
            cancel_requested_by: run.cancel_requested_by.clone(),
            parent_run_id: run.parent_run_id.clone(),
            memory_as_of: run.memory_as_of.map(show),
            origin: run.origin,
        }
    }
}

/// What deleting a schedule answers.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ScheduleDeleted {
    pub schedule_id: String,
    pub deleted: bool,
}
