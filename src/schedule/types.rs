//! The records the scheduler stores, and the small closed vocabularies they use.

use serde::{Deserialize, Serialize};

use super::bounds::Bounds;
use super::Cadence;

pub use crate::spec::{CatchUp, ChainOn, NotifyPolicy, Overlap};

text_enum!(
    ScheduleStatus { Active => "active", Paused => "paused", Completed => "completed", Failed => "failed" }
);
text_enum!(
    /// Where a run stands. `waiting`: paused on a tool call that waits for a person's
    /// approval, held by no worker.
    RunStatus {
        Running => "running",
        Waiting => "waiting",
        Succeeded => "succeeded",
        Failed => "failed",
        TimedOut => "timed_out",
        Cancelled => "cancelled",
        Interrupted => "interrupted",
        Skipped => "skipped",
    }
);
text_enum!(
    /// Who owns a schedule: the CLI/API (`tool`) or the config file (`config`).
    Source { Tool => "tool", Config => "config" }
);

text_enum!(
    /// What started a run: its cadence (or run now), a trigger, the run of the schedule it
    /// follows, or a backfill of a past range.
    RunOrigin { Cadence => "cadence", Trigger => "trigger", Chain => "chain", Backfill => "backfill" }
);

impl RunStatus {
    pub fn is_success(self) -> bool {
        self == RunStatus::Succeeded
    }

    /// Whether a run that ended this way starts the runs of a schedule following its own
    /// with `on`: a success or a failure (a time-out is one) does; a cancelled,
    /// interrupted or skipped run never ran to an end.
    pub fn starts_followers(self, on: ChainOn) -> bool {
        let failed = matches!(self, RunStatus::Failed | RunStatus::TimedOut);
        match on {
            ChainOn::Succeeded => self == RunStatus::Succeeded,
            ChainOn::Failed => failed,
            ChainOn::Finished => self == RunStatus::Succeeded || failed,
        }
    }
}

/// The schedule a schedule follows, and which of its runs start one.
#[derive(Debug, Clone, Eq, Serialize, utoipa::ToSchema)]
pub struct Upstream {
    pub schedule_id: String,
    pub on: ChainOn,
    /// The upstream's status as last read (`None`: it was deleted, or not read yet). Not
    /// part of the definition: two upstreams are the same whatever it says.
    pub status: Option<ScheduleStatus>,
}

impl PartialEq for Upstream {
    fn eq(&self, other: &Self) -> bool {
        self.schedule_id == other.schedule_id && self.on == other.on
    }
}

/// When a schedule's owner is told it needs them (see `store::alerts`): its run has not
/// started this long after its time, this many runs in a row failed, or no run succeeded
/// for this long. Each incident is told once, and its end once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Alerts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_secs: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failures: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub silent_secs: Option<i64>,
}

impl Alerts {
    pub fn is_empty(&self) -> bool {
        *self == Alerts::default()
    }
}

/// A schedule to create.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSchedule {
    pub user_id: String,
    pub name: Option<String>,
    pub goal: String,
    pub cadence: Cadence,
    /// The user's own words, when the cadence came from natural language.
    pub cadence_text: Option<String>,
    pub source: Source,
    pub notify: NotifyPolicy,
    pub overlap: Overlap,
    pub catch_up: CatchUp,
    pub max_attempts: i64,
    pub timeout_secs: Option<i64>,
    pub max_turns: Option<i64>,
    pub max_cost: Option<f64>,
    pub channel_id: Option<String>,
    pub channel_context_id: Option<String>,
    /// Its window, run limit and skipped dates.
    pub bounds: Bounds,
    /// Each occurrence runs a fixed offset in `[0, jitter_secs)` after its time.
    pub jitter_secs: Option<i64>,
    /// An occurrence missed longer ago than this is skipped, not run.
    pub catch_up_window_secs: Option<i64>,
    /// The schedule it follows.
    pub after: Option<Upstream>,
    /// The agent its runs act as: their memory tools and context see the user's shared
    /// notes and this agent's; none: the shared notes only.
    pub agent_id: Option<String>,
    /// Patterns narrowing the MCP tools its runs may use (see `mcp_client::ToolFilter`);
    /// empty: every tool the user is granted.
    pub tools: Vec<String>,
    /// Patterns over the tool names its runs' model sees choosing the calls that need a
    /// person's approval (see `mcp_client::ApproveFilter`); empty: none do.
    pub approve: Vec<String>,
    /// When its owner is told it needs them.
    pub alerts: Alerts,
}

impl NewSchedule {
    /// The first occurrence strictly after `after_ms` that its cadence and bounds give.
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        self.bounds.next_after(&self.cadence, after_ms)
    }

    pub fn new(user_id: impl Into<String>, goal: impl Into<String>, cadence: Cadence) -> Self {
        Self {
            user_id: user_id.into(),
            name: None,
            goal: goal.into(),
            cadence,
            cadence_text: None,
            source: Source::Tool,
            notify: NotifyPolicy::Always,
            overlap: Overlap::Skip,
            catch_up: CatchUp::Once,
            max_attempts: 3,
            timeout_secs: None,
            max_turns: None,
            max_cost: None,
            channel_id: None,
            channel_context_id: None,
            bounds: Bounds::default(),
            jitter_secs: None,
            catch_up_window_secs: None,
            after: None,
            agent_id: None,
            tools: Vec::new(),
            approve: Vec::new(),
            alerts: Alerts::default(),
        }
    }
}

impl From<&Schedule> for NewSchedule {
    /// A stored schedule's definition (what an edit starts from).
    fn from(s: &Schedule) -> Self {
        Self {
            user_id: s.user_id.clone(),
            name: s.name.clone(),
            goal: s.goal.clone(),
            cadence: s.cadence.clone(),
            cadence_text: s.cadence_text.clone(),
            source: s.source,
            notify: s.notify,
            overlap: s.overlap,
            catch_up: s.catch_up,
            max_attempts: s.max_attempts,
            timeout_secs: s.timeout_secs,
            max_turns: s.max_turns,
            max_cost: s.max_cost,
            channel_id: s.channel_id.clone(),
            channel_context_id: s.channel_context_id.clone(),
            bounds: s.bounds.clone(),
            jitter_secs: s.jitter_secs,
            catch_up_window_secs: s.catch_up_window_secs,
            after: s.after.clone(),
            agent_id: s.agent_id.clone(),
            tools: s.tools.clone(),
            approve: s.approve.clone(),
            alerts: s.alerts,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Schedule {
    pub schedule_id: String,
    pub user_id: String,
    pub name: Option<String>,
    pub goal: String,
    pub cadence: Cadence,
    pub cadence_text: Option<String>,
    pub source: Source,
    pub notify: NotifyPolicy,
    pub overlap: Overlap,
    pub catch_up: CatchUp,
    pub max_attempts: i64,
    pub timeout_secs: Option<i64>,
    pub max_turns: Option<i64>,
    pub max_cost: Option<f64>,
    pub status: ScheduleStatus,
    pub status_reason: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub next_run_at: Option<i64>,
    pub last_run_at: Option<i64>,
    pub last_run_status: Option<RunStatus>,
    pub consecutive_failures: i64,
    pub channel_id: Option<String>,
    pub channel_context_id: Option<String>,
    pub bounds: Bounds,
    /// Runs started since `bounds.max_runs` was set.
    pub runs_started: i64,
    pub jitter_secs: Option<i64>,
    /// The nominal time (the identity) of the occurrence due at `next_run_at`, when
    /// jitter moved it; `None`: the same as `next_run_at`.
    pub next_nominal_at: Option<i64>,
    pub catch_up_window_secs: Option<i64>,
    /// The schedule it follows.
    pub after: Option<Upstream>,
    /// The agent its runs act as (see [`NewSchedule::agent_id`]).
    pub agent_id: Option<String>,
    /// The run whose agent made it (`schedule_follow_up`); `None`: made through a door
    /// or the config.
    pub made_by_run: Option<String>,
    /// See [`NewSchedule::tools`].
    pub tools: Vec<String>,
    /// See [`NewSchedule::approve`].
    pub approve: Vec<String>,
    /// See [`NewSchedule::alerts`].
    pub alerts: Alerts,
    /// When a run of it last succeeded (what `alerts.silent_secs` counts from).
    pub last_success_at: Option<i64>,
}

impl Schedule {
    /// The first occurrence strictly after `after_ms` that its cadence and bounds give
    /// (nominal: before jitter).
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        self.bounds.next_after(&self.cadence, after_ms)
    }

    /// The nominal time of the next occurrence: its identity.
    pub fn next_nominal(&self) -> Option<i64> {
        self.next_nominal_at.or(self.next_run_at)
    }

    /// When the occurrence `nominal` is due, with the schedule's jitter.
    pub fn due_at(&self, nominal: i64) -> i64 {
        super::jitter::due_at(&self.schedule_id, nominal, self.jitter_secs)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Run {
    pub run_id: String,
    pub schedule_id: String,
    pub scheduled_for: i64,
    pub attempt: i64,
    pub status: RunStatus,
    pub worker_id: Option<String>,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
    pub output_summary: Option<String>,
    pub output: Option<String>,
    pub error: Option<String>,
    pub turn_count: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub cost: f64,
    pub notified: bool,
    pub origin: RunOrigin,
    /// Who asked to stop it (`cli`, `api`, `mcp`, `dashboard`), when someone did.
    pub cancel_requested_by: Option<String>,
    /// The run this one repeats (`schedule rerun`, `schedule replay`).
    pub parent_run_id: Option<String>,
    /// A rerun that sees memory as it was at this instant (Unix ms): the run it repeats
    /// started then.
    pub memory_as_of: Option<i64>,
}

/// What a finished attempt produced.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunOutcome {
    pub status: Option<RunStatus>,
    pub output: Option<String>,
    pub error: Option<String>,
    pub turn_count: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub cost: f64,
}

/// An occurrence this worker has claimed and must run.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    pub run_id: String,
    pub schedule: Schedule,
    pub scheduled_for: i64,
    pub attempt: i64,
    pub origin: RunOrigin,
    /// What the event that started it carried (a trigger's input, the upstream run's
    /// output), given to the runtime beside the goal.
    pub input: Option<String>,
    /// A run resumed after its approval was answered: the answer, and what the runtime
    /// kept to go on from the call it waited on.
    pub resume: Option<crate::approval::Resume>,
    /// The run this one repeats (a rerun: see `store::rerun`).
    pub parent_run_id: Option<String>,
    /// Memory as it was at this instant is what the run sees (a rerun asked so).
    pub memory_as_of: Option<i64>,
}

impl Claim {
    /// A claim of the schedule's own occurrence `scheduled_for`.
    pub fn of_cadence(
        run_id: String,
        schedule: Schedule,
        scheduled_for: i64,
        attempt: i64,
    ) -> Self {
        Self {
            run_id,
            schedule,
            scheduled_for,
            attempt,
            origin: RunOrigin::Cadence,
            input: None,
            resume: None,
            parent_run_id: None,
            memory_as_of: None,
        }
    }

    /// Whether the run is one of the cadence's occurrences, whose end may end a schedule
    /// with no occurrence left; a run an event started never ends its schedule.
    pub fn is_occurrence(&self) -> bool {
        self.origin == RunOrigin::Cadence
    }
}
