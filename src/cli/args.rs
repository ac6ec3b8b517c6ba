//! The command line, as clap types.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use super::schedule_args::{AddArgs, EditArgs, ScheduleCommand};

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
    Locomo(EvalArgs),
    /// Recall@k on long user–assistant chats (the `nightshift-chats` format that
    /// `scripts/make_chats_dev.py` writes), per kind of question, in a scratch database
    /// with the configured embedding and search settings.
    Chats(EvalArgs),
}

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// The dev set.
    pub file: PathBuf,
    /// Cut-offs, comma-separated.
    #[arg(long, default_value = "5,10")]
    pub k: String,
    /// Also measure each stage of search on the same data in one run: the fusion
    /// without the speaker cue, fusion only, + rerank (late interaction), + multi-hop.
    #[arg(long)]
    pub ablate: bool,
    /// Also measure the configured search with one setting changed, for each value, on
    /// the same data in one run (`search.` keys only; repeatable; at most 64 values).
    #[arg(long, value_name = "search.KEY=V1,V2", conflicts_with = "ablate",
          value_parser = nightshift::eval::parse_variation)]
    pub vary: Vec<nightshift::eval::Variation>,
}
