//! The command line, as clap types.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "nightshift",
    version,
    about = "Durable memory and a sense of time for AI agents"
)]
pub struct Cli {
    /// Configuration file (TOML). Without one, built-in defaults are used.
    #[arg(
        long,
        global = true,
        env = "NIGHTSHIFT_CONFIG",
        hide_env_values = true,
        value_name = "PATH"
    )]
    pub config: Option<PathBuf>,
    /// Database location; overrides `[database] path`.
    #[arg(
        long,
        global = true,
        env = "NIGHTSHIFT_DB",
        hide_env_values = true,
        value_name = "PATH"
    )]
    pub db: Option<String>,
    /// Address the HTTP API of `run` listens on; overrides `[server] listen` ("" turns it
    /// off).
    #[arg(
        long,
        global = true,
        env = "NIGHTSHIFT_LISTEN",
        hide_env_values = true,
        value_name = "ADDR"
    )]
    pub listen: Option<String>,
    /// Print machine-readable JSON.
    #[arg(long, global = true)]
    pub json: bool,
    /// Log format on stderr.
    #[arg(
        long,
        global = true,
        env = "NIGHTSHIFT_LOG_FORMAT",
        hide_env_values = true,
        default_value = "human"
    )]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Human,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the worker until SIGTERM or SIGINT.
    Run,
    /// Serve MCP on stdin and stdout for one user, for an agent that spawns nightshift
    /// (logs go to stderr; stdout carries protocol messages only).
    Mcp {
        /// The user every tool call and resource read acts for.
        #[arg(long)]
        user: String,
    },
    /// Notes, conversations and search.
    #[command(subcommand)]
    Memory(MemoryCommand),
    /// The derived search index.
    #[command(subcommand)]
    Index(IndexCommand),
    /// Scoped key-value state: a JSON value per key; no prefix = a session's, `user:` = a
    /// user's, `app:` = everyone's (the operator writes), `temp:` = one run's.
    #[command(subcommand)]
    State(super::state::StateCommand),
    /// Files agents produced (reports, charts, CSVs), stored with a session.
    #[command(subcommand)]
    Artifact(super::artifact::ArtifactCommand),
    /// Write a user's memory (or every user's) as one versioned archive of
    /// newline-delimited JSON: sessions, events, notes and their versions, state,
    /// artifacts, schedules and runs (docs/export.md).
    Export(super::portable::ExportArgs),
    /// Restore an archive from `export` exactly (ids kept; present rows skipped, conflicts
    /// reported), or import notes from mem0's JSON or a folder of Markdown files.
    Import(super::portable::ImportArgs),
    /// Schedules: goals the worker runs through the agent runtime when due.
    #[command(subcommand)]
    Schedule(ScheduleCommand),
    /// Tool calls of scheduled runs that wait for a user's approval, and the answer.
    #[command(subcommand)]
    Approvals(super::approvals::ApprovalsCommand),
    /// Tool chains learned from scheduled runs (the `macros` consolidation pass).
    #[command(subcommand)]
    Macros(super::macros::MacrosCommand),
    /// Run consolidation passes now, or show past ones.
    Consolidate {
        /// Only this pass (repeatable): summaries, facts, expiry, prune, backfill,
        /// optimize, snapshot, macros. All when absent.
        #[arg(long = "pass", value_name = "NAME")]
        passes: Vec<String>,
        /// Only this user's sessions (summaries, facts and macros).
        #[arg(long)]
        user: Option<String>,
        /// List past passes with their counts instead.
        #[arg(long)]
        status: bool,
        /// With `--pass facts` alone: print the facts the pass would store (and what it
        /// would do with each), writing nothing.
        #[arg(long)]
        dry_run: bool,
        /// At most this many.
        #[arg(long, default_value_t = 20)]
        limit: i64,
    },
    /// The worker on one screen: workers, schedules, the next due, the last hour's runs,
    /// the outbox, the embedding backlog, the database's size.
    Status {
        /// Draw it again every SECS seconds (default 2) until Ctrl-C.
        #[arg(long, value_name = "SECS", num_args = 0..=1, default_missing_value = "2",
              value_parser = clap::value_parser!(u64).range(1..=3600))]
        watch: Option<u64>,
    },
    /// Workers registered on this database, their heartbeats and the leases they hold.
    Workers,
    /// Measure retrieval quality.
    #[command(subcommand)]
    Eval(EvalCommand),
    /// Notifications waiting, delivered, or dead.
    #[command(subcommand)]
    Outbox(OutboxCommand),
    /// The database schema.
    #[command(subcommand)]
    Db(DbCommand),
    /// The configuration file.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Tokens for the HTTP API and the MCP server.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Man pages, completions and docs/cli.md, made from this definition (packaging).
    #[command(subcommand, hide = true)]
    Generate(GenerateCommand),
}

#[derive(Debug, Subcommand)]
pub enum GenerateCommand {
    /// A man page for every command, into DIR.
    Man { dir: PathBuf },
    /// Completions for bash, zsh and fish, into DIR.
    Completions { dir: PathBuf },
    /// The command line reference in Markdown.
    CliDoc { file: PathBuf },
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a token and print its secret, once: a user token (--user) acts as that user
    /// only; an admin token (--admin) as the operator.
    Create {
        /// A user token, acting as this user only.
        #[arg(long, required_unless_present = "admin", conflicts_with = "admin")]
        user: Option<String>,
        /// An admin token, acting as the operator.
        #[arg(long)]
        admin: bool,
        /// What it is for, shown by `token list`.
        #[arg(long)]
        name: Option<String>,
        /// Lifetime, like 90d or 12h (at most 10 years); none: until revoked.
        #[arg(long)]
        expires: Option<String>,
    },
    /// Every token: names, users, scopes, when made, last used and expiring; never secrets.
    List,
    /// Refuse a token from now on.
    Revoke { id: String },
}

/// `--agent`: whose view of a user's notes a command takes.
#[derive(Debug, Clone, Args)]
pub struct AgentArg {
    /// Act as this agent of the user: its own notes and the shared ones are seen, and
    /// notes saved are its own. Without it, only the shared notes (saved with no agent).
    #[arg(long)]
    pub agent: Option<String>,
}

impl AgentArg {
    /// The store acting for this agent.
    pub fn memory(
        &self,
        memory: &nightshift::memory::Memory,
    ) -> Result<nightshift::memory::Memory, nightshift::memory::MemoryError> {
        memory.as_agent(self.agent.as_deref())
    }
}

#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// Save a note for a user; prints its id.
    Save {
        /// The user whose memory or schedule this is.
        #[arg(long)]
        user: String,
        /// A tag to file the note under (repeatable).
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
        /// Save under a key: a note with the same key is replaced, keeping its id.
        #[arg(long)]
        key: Option<String>,
        /// A category to file the note under.
        #[arg(long)]
        category: Option<String>,
        #[command(flatten)]
        agent: AgentArg,
        /// The note's text, kept byte for byte (control characters included: a terminal
        /// shows them escaped, `--json` exactly); `-` reads it from standard input.
        text: String,
    },
    /// Hybrid keyword + vector search over a user's notes (and one conversation).
    Search {
        /// The user whose memory or schedule this is.
        #[arg(long)]
        user: String,
        /// Hits to return (default from `[search] default_top_k`).
        #[arg(long)]
        top_k: Option<usize>,
        /// Also search this conversation session of the user.
        #[arg(long)]
        session: Option<String>,
        #[command(flatten)]
        filter: Box<super::filters::NoteFilterArgs>,
        #[command(flatten)]
        window: super::filters::WindowArgs,
        #[command(flatten)]
        as_of: super::filters::AsOfArgs,
        #[command(flatten)]
        agent: AgentArg,
        query: String,
    },
    /// Replace a note's text, keeping its id.
    Update {
        /// The user whose memory or schedule this is.
        #[arg(long)]
        user: String,
        /// Replace the note's tags with these (repeatable); kept when absent.
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
        #[command(flatten)]
        agent: AgentArg,
        note_id: String,
        /// The new text, kept byte for byte; `-` reads it from standard input.
        text: String,
    },
    /// Delete a note.
    Delete {
        /// The user whose memory or schedule this is.
        #[arg(long)]
        user: String,
        #[command(flatten)]
        agent: AgentArg,
        note_id: String,
    },
    /// List a user's notes, most recently changed first.
    Notes {
        /// The user whose memory or schedule this is.
        #[arg(long)]
        user: String,
        #[command(flatten)]
        filter: Box<super::filters::NoteFilterArgs>,
        #[command(flatten)]
        as_of: super::filters::AsOfArgs,
        #[command(flatten)]
        agent: AgentArg,
    },
    /// Append events to a conversation session (created on first use).
    Append(AppendArgs),
    /// The last events of a session, oldest first.
    ///
    /// Text output shows control characters escaped (`\u{1b}`); `--json` gives the exact
    /// text.
    Recall {
        /// The conversation session.
        #[arg(long)]
        session: String,
        /// The user whose session it is; without it, the session of that id whoever's it
        /// is (refused when several users have one).
        #[arg(long)]
        user: Option<String>,
        /// At most this many (the last of those in the window).
        #[arg(long)]
        limit: Option<usize>,
        #[command(flatten)]
        window: super::filters::WindowArgs,
    },
    /// A user's sessions, most recently active first.
    Sessions {
        /// The user whose memory or schedule this is.
        #[arg(long)]
        user: String,
    },
    /// A session's rolling summary.
    Summary {
        /// The conversation session.
        #[arg(long)]
        session: String,
        /// The user whose session it is; without it, the session of that id whoever's it
        /// is (refused when several users have one).
        #[arg(long)]
        user: Option<String>,
    },
    /// What an agent should put in its prompt for a session, within a token budget.
    Context {
        /// The user whose memory or schedule this is.
        #[arg(long)]
        user: String,
        /// The conversation session.
        #[arg(long)]
        session: String,
        /// Tokens (1..=8000, default 2000).
        #[arg(long)]
        budget: Option<usize>,
        /// What relevant memories should be about (default: the last user turn).
        #[arg(long)]
        query: Option<String>,
        /// all, buffer_window, token_window or summary_buffer.
        #[arg(long, default_value = "all")]
        strategy: String,
        #[command(flatten)]
        agent: AgentArg,
    },
    /// Delete a session and everything derived from it.
    Forget {
        /// The conversation session.
        #[arg(long)]
        session: String,
        /// The user whose session it is; without it, the session of that id whoever's it
        /// is (refused when several users have one).
        #[arg(long)]
        user: Option<String>,
    },
    #[command(flatten)]
    Versions(super::versions::VersionsCommand),
}

#[derive(Debug, Args)]
pub struct AppendArgs {
    /// The user whose memory or schedule this is.
    #[arg(long)]
    pub user: String,
    /// The conversation session: the user's own (another user's of the same id is another
    /// session); `memory:…`, `memory@…` and `scheduled:…` ids are nightshift's own.
    #[arg(long)]
    pub session: String,
    /// Role of the single event given as TEXT.
    #[arg(long, required_unless_present = "file", conflicts_with = "file")]
    pub role: Option<String>,
    /// A JSONL file of events, one {"role": …, "content": …} per line; `-` for stdin.
    /// Each content is kept byte for byte, whatever it holds (ANSI colours, NUL, any escape).
    #[arg(long, conflicts_with = "text")]
    pub file: Option<PathBuf>,
    /// The event's text, kept byte for byte (control characters included: a terminal
    /// shows them escaped, `--json` exactly); `-` reads it from standard input.
    #[arg(required_unless_present = "file")]
    pub text: Option<String>,
    /// Who said the single event given as TEXT (search prefers a speaker its query names).
    #[arg(long, conflicts_with = "file")]
    pub name: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum IndexCommand {
    /// Rebuild chunks and vectors from sessions and notes.
    Rebuild,
}

#[derive(Debug, Subcommand)]
pub enum DbCommand {
    /// Apply pending migrations.
    Migrate,
    /// Schema version, migrations and what the database holds.
    Status,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Validate a configuration file (default: --config / NIGHTSHIFT_CONFIG).
    Check { path: Option<PathBuf> },
}

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
        id: String,
        /// At most this many (1..=1000).
        #[arg(long, default_value_t = 20)]
        limit: i64,
        /// Only if the schedule belongs to this user.
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
    /// always, on_failure, on_change, never or conditional.
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

#[derive(Debug, Subcommand)]
pub enum OutboxCommand {
    /// Messages, newest first.
    List {
        /// pending, delivered or dead.
        #[arg(long)]
        status: Option<String>,
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: i64,
    },
    /// Send a dead letter again.
    Retry { id: String },
}

#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// Recall@k on a LoCoMo-format file, in a scratch database with the configured
    /// embedding and search settings.
    Locomo {
        file: PathBuf,
        /// Cut-offs, comma-separated.
        #[arg(long, default_value = "5,10")]
        k: String,
        /// Also measure each stage of search on the same data in one run: the fusion
        /// without the speaker cue, fusion only, + rerank (late interaction), + multi-hop.
        #[arg(long)]
        ablate: bool,
    },
}
