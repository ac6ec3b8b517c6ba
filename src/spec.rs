//! What a caller asks for, before it is checked: a schedule as the CLI's flags, a config
//! file's `[[schedules]]` entry or an API body describe it, and the closed vocabularies
//! its policies use. Kept below every other module (the configuration uses it), with no
//! dependency of its own.

use serde::{Deserialize, Serialize};

text_enum!(
    /// What happens when an occurrence is due while the previous run still runs.
    Overlap {
        Skip => "skip",
        Allow => "allow",
        BufferOne => "buffer_one",
        BufferAll => "buffer_all",
        CancelOther => "cancel_other",
    }
);
text_enum!(
    /// What happens to occurrences missed while no worker ran.
    CatchUp { Once => "once", Skip => "skip", All => "all" }
);
text_enum!(
    /// Which ends of an upstream schedule's run start a run of the schedule that follows it.
    ChainOn { Succeeded => "succeeded", Failed => "failed", Finished => "finished" }
);
text_enum!(
    /// When the user is told about a run. `digest` folds every run's result into one
    /// message a day, at the user's `digest_at`.
    NotifyPolicy {
        Always => "always",
        OnFailure => "on_failure",
        OnChange => "on_change",
        Never => "never",
        Conditional => "conditional",
        Digest => "digest",
    }
);

/// A schedule as a caller describes it. Exactly one of `cron` (with `tz`), `every`, `at`,
/// `when` gives the cadence; `tz` is also the zone `at` and `when` are read in and every
/// time is shown in. Unset policies take their defaults.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"goal": "Summarise what changed in my notes today", "every": "1h"}))]
pub struct ScheduleSpec {
    /// Whose schedule it is. Required in the config file; a user's token or `--user`
    /// gives it elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Required in the config file, where it identifies the entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub goal: String,
    /// A 5-field cron expression (minute hour day-of-month month day-of-week).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    /// An IANA time zone (default `scheduler.default_timezone`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tz: Option<String>,
    /// A fixed interval such as `30s`, `15m`, `2h`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<String>,
    /// One run at an instant: RFC 3339, or `YYYY-MM-DD HH:MM` in `tz`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// Natural language: "every weekday at 9am", "in 2 hours".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// Where to tell the user: `ID` or `ID:CONTEXT`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify: Option<NotifyPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap: Option<Overlap>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catch_up: Option<CatchUp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
    /// No run before this: an instant, or a date (its first moment) in `tz`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starts_at: Option<String>,
    /// No run after this: an instant, or a date (its last moment) in `tz`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ends_at: Option<String>,
    /// Runs started at most; then the schedule is completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_runs: Option<i64>,
    /// Dates (`2026-12-25`) and cron expressions (`* * 24-26 12 *`) in `tz` whose
    /// occurrences are skipped (not run, not missed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skip: Vec<String>,
    /// Start each run up to this long after its time (`30s`, `5m`), a fixed offset per
    /// occurrence that every worker agrees on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<String>,
    /// An occurrence missed longer ago than this (`6h`) is recorded as skipped, not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catch_up_window: Option<String>,
    /// Named calendars (`[calendars.NAME]` in the configuration) whose dates are skipped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calendars: Vec<String>,
    /// No cadence of its own: it runs only when triggered, or after the schedule it
    /// follows (`after`). Given instead of `cron`, `every`, `at` and `when`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub triggered: bool,
    /// The id of a schedule of the same user this one follows: each of its runs that
    /// ends as `on` says starts one run of this one, with its output as input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// Which of the upstream's runs start one (default `succeeded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on: Option<ChainOn>,
    /// The agent its runs act as: their memory tools and context see the user's shared
    /// notes and this agent's own (none: the shared notes only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Which tools of the user's MCP servers its runs may use: patterns over
    /// `server__tool` names, `*` for any run of characters, `!` to take tools away
    /// (`["files__*", "!files__write_*"]`). None: every tool the user is granted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Which of its runs' tool calls need a person's approval: patterns over the tool
    /// names the model sees (`server__tool`, `memory_delete`), `*` for any run of
    /// characters, `!` to take calls away (`["files__write_*", "!files__write_draft"]`).
    /// None: no call needs approval (a server's own `approve` patterns still apply).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approve: Vec<String>,
    /// Tell the owner when a run has not started this long after its time (`15m`), and
    /// again when it has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alert_late: Option<String>,
    /// Tell the owner when this many runs in a row failed, and again at the next success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alert_failures: Option<i64>,
    /// Tell the owner when no run succeeded for this long (`2d`), and again at the next
    /// success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alert_silent: Option<String>,
}

impl ScheduleSpec {
    /// How many of the ways of giving a cadence are used (one is right; none when the
    /// schedule follows another).
    pub fn cadences_given(&self) -> usize {
        [&self.cron, &self.every, &self.at, &self.when]
            .iter()
            .filter(|c| c.is_some())
            .count()
            + usize::from(self.triggered)
    }
}

text_enum!(
    /// An optional setting a schedule edit can take away (back to its default).
    ClearField {
        Name => "name",
        Channel => "channel",
        TimeoutSecs => "timeout_secs",
        MaxTurns => "max_turns",
        MaxCost => "max_cost",
        StartsAt => "starts_at",
        EndsAt => "ends_at",
        MaxRuns => "max_runs",
        Skip => "skip",
        Jitter => "jitter",
        CatchUpWindow => "catch_up_window",
        After => "after",
        Calendars => "calendars",
        Agent => "agent",
        Tools => "tools",
        Approve => "approve",
        AlertLate => "alert_late",
        AlertFailures => "alert_failures",
        AlertSilent => "alert_silent",
    }
);

/// A change to a schedule: the fields given replace the schedule's, the rest stay. At most
/// one of `cron`, `every`, `at`, `when` replaces the cadence; `tz` alone moves the present
/// cadence to another zone. `clear` takes optional settings away.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"every": "2h", "tz": "Europe/Paris"}))]
pub struct SchedulePatch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tz: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify: Option<NotifyPolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap: Option<Overlap>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catch_up: Option<CatchUp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starts_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ends_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_runs: Option<i64>,
    /// Replaces the skipped dates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catch_up_window: Option<String>,
    /// Replaces the named calendars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calendars: Option<Vec<String>>,
    /// `true`: no cadence of its own from now on (runs only when triggered or after its
    /// upstream); counts as giving a cadence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub triggered: Option<bool>,
    /// Follow this schedule (with `on`, default `succeeded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on: Option<ChainOn>,
    /// Act as this agent from now on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Replaces the tool patterns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Replaces the approval patterns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approve: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alert_late: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alert_failures: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alert_silent: Option<String>,
    /// Optional settings to take away.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clear: Vec<ClearField>,
}

impl SchedulePatch {
    /// How many of the ways of giving a cadence are used (none or one is right).
    pub fn cadences_given(&self) -> usize {
        [&self.cron, &self.every, &self.at, &self.when]
            .iter()
            .filter(|c| c.is_some())
            .count()
            + usize::from(self.triggered == Some(true))
    }

    /// Whether it changes nothing at all.
    pub fn is_empty(&self) -> bool {
        *self == SchedulePatch::default()
    }
}
