//! The `schedule` commands' arguments, as clap types.

use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum ScheduleCommand {
    /// Create a schedule; give exactly one of --cron, --every, --at, --when.
    Add(Box<AddArgs>),
    /// Change a schedule in place, keeping its id and runs: the flags given replace its
    /// settings; a new cadence (or --tz alone) works out its next runs again.
    Edit(Box<EditArgs>),
    /// List schedules, newest first (every user's, without --user).
    List {
        #[arg(long)]
        user: Option<String>,
        /// active, paused, completed or failed.
        #[arg(long)]
        status: Option<String>,
        /// Only the schedules agents made during runs (with --status paused: the paused
        /// ones, those made under agent_schedules = "confirm" among them).
        #[arg(long)]
        made_by_agent: bool,
        /// At most this many (1..=1000).
        #[arg(long)]
        limit: Option<i64>,
        /// Skip this many first.
        #[arg(long, default_value_t = 0)]
        offset: i64,
    },
    /// One schedule, with its next runs in its own time zone.
    Show {
        id: String,
        /// Only if the schedule belongs to this user.
        #[arg(long)]
        user: Option<String>,
    },
    /// Stop running a schedule until resumed.
    Pause {
        id: String,
        /// Why, shown by `list` and `show`.
        #[arg(long, alias = "reason")]
        note: Option<String>,
        /// Only if the schedule belongs to this user.
        #[arg(long)]
        user: Option<String>,
    },
    /// Resume a paused schedule from now (a one-shot whose time passed runs now).
    Resume {
        id: String,
        /// Only if the schedule belongs to this user.
        #[arg(long)]
        user: Option<String>,
    },
    /// Delete a schedule and its run history.
    Delete {
        id: String,
        /// Only if the schedule belongs to this user.
        #[arg(long)]
        user: Option<String>,
    },
    /// A schedule's runs, newest first.
    Runs {
        /// The schedule (without it, every schedule's runs: what failed last night is
        /// `schedule runs --status failed --since 2026-11-26`).
        id: Option<String>,
        /// At most this many (1..=1000 for one schedule's; 1..=200 across schedules or
        /// with a filter).
        #[arg(long, default_value_t = 20)]
        limit: i64,
        /// Only runs that ended (or stand) so: running, waiting, succeeded, failed,
        /// timed_out, cancelled, interrupted, skipped.
        #[arg(long)]
        status: Option<String>,
        /// Only occurrences from this instant (UTC ms, RFC 3339, or a date: its first
        /// moment).
        #[arg(long)]
        since: Option<String>,
        /// Only occurrences until this instant, included (a date: its last moment).
        #[arg(long)]
        until: Option<String>,
        /// Only this user's runs (their schedule's, with an id).
        #[arg(long)]
        user: Option<String>,
    },
    /// Follow a run as it goes: each status change, turn, tool call and result, one line
    /// each (a JSON object each with --json) as it happens, then its end.
    Follow {
        /// The run's id (see `schedule runs`).
        run_id: String,
        /// Start after this event (the last one seen; 0: from the start).
        #[arg(long, default_value = "0")]
        after: String,
        /// Only if the run's schedule belongs to this user.
        #[arg(long)]
        user: Option<String>,
    },
    /// Stop a run: one waiting for an approval at once, a running one by the worker that
    /// holds it (its runtime call dropped). Exit 5 for a run that already ended.
    Cancel {
        /// The run's id (see `schedule runs`).
        run_id: String,
        /// Only if the run's schedule belongs to this user.
        #[arg(long)]
        user: Option<String>,
    },
    /// Run a past run's occurrence again with the input it had, as a new run linked to it
    /// (its `parent_run_id`). Exit 5 for a run still going; a skipped run never ran
    /// (backfill it instead).
    Rerun {
        /// The run's id (see `schedule runs`).
        run_id: String,
        /// See memory as it was when the run started: its context and memory tools read
        /// the notes' versions and the conversation of then, and it changes no memory.
        #[arg(long)]
        memory_as_of_original: bool,
        /// Only if the run's schedule belongs to this user.
        #[arg(long)]
        user: Option<String>,
    },
    /// Rerun every run of a past range, oldest first (at most 1000): each as `schedule
    /// rerun` does; a run already rerun is not queued again.
    Replay {
        id: String,
        /// The range's start: an instant, or a date (its first moment) in the schedule's zone.
        #[arg(long)]
        from: String,
        /// The range's end: an instant, or a date (its last moment).
        #[arg(long)]
        to: String,
        /// Only runs that ended so: succeeded, failed, timed_out, cancelled or interrupted.
        #[arg(long)]
        status: Option<String>,
        /// List what would run again, and queue nothing.
        #[arg(long)]
        dry_run: bool,
        /// Each run sees memory as it was when the run it repeats started (see `schedule
        /// rerun`).
        #[arg(long)]
        memory_as_of_original: bool,
        /// Only if the schedule belongs to this user.
        #[arg(long)]
        user: Option<String>,
    },
    /// Make a schedule due now; a running worker picks it up within a second.
    RunNow {
        id: String,
        /// Only if the schedule belongs to this user.
        #[arg(long)]
        user: Option<String>,
    },
    /// Run the occurrences of a past range, oldest first (at most 1000): each runs once as
    /// that occurrence; those that already have a run are not run again.
    Backfill {
        id: String,
        /// The range's start: an instant, or a date (its first moment) in the schedule's zone.
        #[arg(long)]
        from: String,
        /// The range's end: an instant, or a date (its last moment); not in the future.
        #[arg(long)]
        to: String,
        /// List what would run, and queue nothing.
        #[arg(long)]
        dry_run: bool,
        /// Only if the schedule belongs to this user.
        #[arg(long)]
        user: Option<String>,
    },
    /// Start a run now with an input the runtime receives beside the goal (a webhook's
    /// payload, another system's event). Runs of one schedule's triggers go one after
    /// another unless its overlap is allow.
    Trigger {
        id: String,
        /// The input: text, @FILE for a file's contents, or - for standard input (at most
        /// 64 KiB).
        #[arg(long, value_name = "TEXT|@FILE|-")]
        input: Option<String>,
        /// The same key twice starts one run, across workers and restarts.
        #[arg(long, value_name = "KEY")]
        idempotency_key: Option<String>,
        /// Only if the schedule belongs to this user.
        #[arg(long)]
        user: Option<String>,
    },
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// The user whose memory or schedule this is.
    #[arg(long)]
    pub user: String,
    /// What the agent should do.
    #[arg(long)]
    pub goal: String,
    #[command(flatten)]
    pub fields: ScheduleFlags,
    /// Check it and show how it was understood, with its next five runs; create nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct EditArgs {
    pub id: String,
    /// Only if the schedule belongs to this user.
    #[arg(long)]
    pub user: Option<String>,
    /// What the agent should do.
    #[arg(long)]
    pub goal: Option<String>,
    #[command(flatten)]
    pub fields: ScheduleFlags,
    /// Take an optional setting away: name, channel, timeout_secs, max_turns, max_cost,
    /// starts_at, ends_at, max_runs, skip, calendars, jitter, catch_up_window, after,
    /// agent, tools, approve, alert_late, alert_failures or alert_silent (repeatable).
    #[arg(long, value_name = "FIELD")]
    pub clear: Vec<String>,
}

/// What `schedule add` and `schedule edit` both take.
#[derive(Debug, Args)]
pub struct ScheduleFlags {
    /// A 5-field cron expression (minute hour day-of-month month day-of-week).
    #[arg(long, group = "cadence")]
    pub cron: Option<String>,
    /// An IANA time zone for --cron, --at and --when (default scheduler.default_timezone).
    #[arg(long)]
    pub tz: Option<String>,
    /// A fixed interval such as 30s, 15m, 2h.
    #[arg(long, group = "cadence")]
    pub every: Option<String>,
    /// One run at an instant (RFC 3339, or YYYY-MM-DD HH:MM in --tz).
    #[arg(long, group = "cadence")]
    pub at: Option<String>,
    /// Natural language, e.g. "every weekday at 9am", "in 2 hours".
    #[arg(long, group = "cadence")]
    pub when: Option<String>,
    /// A name to know it by.
    #[arg(long)]
    pub name: Option<String>,
    /// Where to tell the user: ID or ID:CONTEXT.
    #[arg(long)]
    pub channel: Option<String>,
    /// always, on_failure, on_change, never, conditional or digest (one message a day).
    #[arg(long)]
    pub notify: Option<String>,
    /// skip, allow, buffer_one, buffer_all or cancel_other.
    #[arg(long)]
    pub overlap: Option<String>,
    /// once, skip or all.
    #[arg(long)]
    pub catch_up: Option<String>,
    /// Attempts of one occurrence before it fails (1..=20, default 3).
    #[arg(long)]
    pub max_attempts: Option<i64>,
    /// Deadline of one attempt, seconds (default scheduler.default_timeout_secs).
    #[arg(long)]
    pub timeout_secs: Option<i64>,
    /// Most tool-loop turns of one run (default runtime.default_max_turns).
    #[arg(long)]
    pub max_turns: Option<i64>,
    /// Most a run may cost, by the configured prices.
    #[arg(long)]
    pub max_cost: Option<f64>,
    /// No run before this: an instant, or a date (its first moment) in --tz.
    #[arg(long)]
    pub starts_at: Option<String>,
    /// No run after this: an instant, or a date (its last moment) in --tz.
    #[arg(long)]
    pub ends_at: Option<String>,
    /// Runs started at most (1..=1000000); then the schedule is completed.
    #[arg(long)]
    pub max_runs: Option<i64>,
    /// A date (2026-12-25) or cron expression ("* * 24-26 12 *") whose occurrences are
    /// skipped, in --tz (repeatable; on edit, replaces the list).
    #[arg(long, value_name = "DATE|CRON")]
    pub skip: Vec<String>,
    /// Start each run up to this long after its time (30s, 5m), a fixed offset per
    /// occurrence that every worker agrees on.
    #[arg(long)]
    pub jitter: Option<String>,
    /// An occurrence missed longer ago than this (6h) is recorded as skipped, not run.
    #[arg(long)]
    pub catch_up_window: Option<String>,
    /// A calendar configured as [calendars.NAME] whose dates are skipped (repeatable; on
    /// edit, replaces the list).
    #[arg(long = "calendar", value_name = "NAME")]
    pub calendars: Vec<String>,
    /// Which MCP tools its runs may use: a pattern over SERVER__tool names, `*` for any
    /// run of characters, `!` first to take tools away (repeatable; on edit, replaces the
    /// list). Without: every tool the user is granted.
    #[arg(long = "tool", value_name = "PATTERN")]
    pub tools: Vec<String>,
    /// Which of its runs' tool calls need a person's approval: a pattern over the tool
    /// names the model sees (SERVER__tool, memory_delete), `*` for any run of characters,
    /// `!` first to take calls away (repeatable; on edit, replaces the list). Without:
    /// none do, unless their MCP server's own `approve` says so.
    #[arg(long = "approve", value_name = "PATTERN")]
    pub approve: Vec<String>,
    /// Tell its owner when a run has not started this long after its time (15m), and
    /// again when it has.
    #[arg(long)]
    pub alert_late: Option<String>,
    /// Tell its owner when this many runs in a row failed, and again at the next success.
    #[arg(long)]
    pub alert_failures: Option<i64>,
    /// Tell its owner when no run succeeded for this long (2d), and again at the next
    /// success.
    #[arg(long)]
    pub alert_silent: Option<String>,
    /// No cadence of its own: runs only when triggered (`schedule trigger`) or after the
    /// schedule given by --after.
    #[arg(long, group = "cadence")]
    pub triggered: bool,
    /// Follow this schedule (the same user's): each of its runs that ends as --on says
    /// starts one run of this one, with its output as input. No cadence needed.
    #[arg(long, value_name = "SCHEDULE_ID")]
    pub after: Option<String>,
    /// succeeded (default), failed or finished: which runs of --after start one.
    #[arg(long, value_name = "WHEN")]
    pub on: Option<String>,
    /// The agent its runs act as: their memory tools and context see the user's shared
    /// notes and this agent's own (without: the shared notes only).
    #[arg(long)]
    pub agent: Option<String>,
}
