//! `[scheduler]`, `[runtime]` and `[consolidation]`: how runs are scheduled and sent to
//! an agent runtime, and the overnight passes that consolidate memory.

use serde::{Deserialize, Serialize};

use super::AgentSchedules;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SchedulerConfig {
    /// No cadence may run more often than this.
    pub min_interval_secs: i64,
    /// Schedules one user may have.
    pub max_per_user: i64,
    /// Runs at once in this worker.
    pub max_concurrent: usize,
    /// How long a claimed run stays this worker's without a heartbeat.
    pub lease_secs: i64,
    /// Runs kept per schedule; older ones are pruned.
    pub history_keep: i64,
    /// Deadline of one attempt when a schedule sets none.
    pub default_timeout_secs: i64,
    /// First retry delay; doubled for each further attempt.
    pub retry_base_secs: i64,
    /// Consecutive failed occurrences after which a schedule is paused.
    pub pause_after_failures: i64,
    /// On SIGTERM, how long running work may take to finish before it is interrupted.
    pub shutdown_grace_secs: i64,
    /// How often the worker checks the database for changes made by other processes.
    pub change_check_ms: u64,
    /// Zone for schedules created without `--tz` (an IANA name).
    pub default_timezone: String,
    /// Largest runtime answer kept with a run, in bytes; the rest is cut with a note.
    pub max_output_bytes: usize,
    /// Jitter of schedules that set none, when it is shorter than their gap (0: none).
    pub default_jitter_secs: i64,
    /// What a run's agent may do with `schedule_follow_up`: make active schedules, make
    /// them paused until the user confirms (resumes) them, or nothing.
    pub agent_schedules: AgentSchedules,
    /// Live schedules agents may have made for one user (besides `max_per_user`).
    pub max_agent_schedules_per_user: i64,
    /// How long a tool call waits for a person's approval before it counts as denied.
    pub approval_timeout_secs: i64,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        Self {
            min_interval_secs: 60,
            max_per_user: 50,
            max_concurrent: 4,
            lease_secs: 60,
            history_keep: 50,
            default_timeout_secs: 600,
            retry_base_secs: 30,
            pause_after_failures: 5,
            shutdown_grace_secs: 30,
            change_check_ms: 500,
            default_timezone: "UTC".to_string(),
            max_output_bytes: 65_536,
            default_jitter_secs: 0,
            agent_schedules: AgentSchedules::Active,
            max_agent_schedules_per_user: 10,
            approval_timeout_secs: 86_400,
        }
    }
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RuntimeKind {
    /// No runtime: due runs fail with a clear error.
    None,
    /// Any OpenAI-compatible `/chat/completions` endpoint; nightshift runs the tool loop.
    Openai,
    /// An agent runtime's own goal endpoint: POST a JSON goal, read a JSON answer.
    Http,
    /// An A2A agent (JSON-RPC): the goal is sent as a message, its task followed to the end.
    A2a,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RuntimeConfig {
    pub kind: RuntimeKind,
    /// `openai`: the API base, e.g. `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    /// `openai`: the model name sent with each request.
    pub model: String,
    /// `openai`: the environment variable holding the API key (none sent when unset).
    pub api_key_env: Option<String>,
    /// `http`: the goal endpoint. `a2a`: the agent's JSON-RPC endpoint, or its agent card
    /// (a URL whose path ends in `.json`, such as `…/.well-known/agent-card.json`).
    pub url: String,
    /// `a2a`: a file holding the value of the Authorization header sent to the agent
    /// (e.g. `Bearer …`); relative paths are looked up in `$CREDENTIALS_DIRECTORY` when
    /// set. Read at each run; never logged.
    pub auth_header_file: Option<String>,
    /// Whole-request timeout, seconds.
    pub timeout_secs: u64,
    pub connect_timeout_secs: u64,
    /// Retries of one request on connection errors, 429 and 5xx (Retry-After honoured).
    pub max_retries: u32,
    /// Prices per million tokens, for the recorded cost.
    pub prompt_price_per_mtok: f64,
    pub completion_price_per_mtok: f64,
    /// Tokens of notes and summary put in the prompt.
    pub context_budget_tokens: usize,
    /// Tool-loop turns when a schedule sets no `max_turns`.
    pub default_max_turns: i64,
    /// Largest answer read from the runtime, in bytes; a larger one fails the attempt.
    pub max_response_bytes: usize,
    /// Tool calls the model may ask for in one turn, and in one run.
    pub max_tool_calls_per_turn: usize,
    pub max_tool_calls_per_run: usize,
    /// Largest arguments of one tool call, in bytes of JSON; larger ones are answered
    /// with a tool error instead of running.
    pub max_tool_arguments_bytes: usize,
    /// `openai`: after a turn's calls, the next request carries a hint naming the call
    /// the user's runs usually make next, from a macro at least this confident (0: no
    /// hints).
    pub macro_hint_min_confidence: f64,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            kind: RuntimeKind::None,
            base_url: String::new(),
            model: String::new(),
            api_key_env: None,
            url: String::new(),
            auth_header_file: None,
            timeout_secs: 120,
            connect_timeout_secs: 10,
            max_retries: 3,
            prompt_price_per_mtok: 0.0,
            completion_price_per_mtok: 0.0,
            context_budget_tokens: 2000,
            default_max_turns: 8,
            max_response_bytes: 8 * 1024 * 1024,
            max_tool_calls_per_turn: 16,
            max_tool_calls_per_run: 64,
            max_tool_arguments_bytes: 65_536,
            macro_hint_min_confidence: 0.8,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ConsolidationConfig {
    /// Run the overnight passes from the worker.
    pub enabled: bool,
    /// When, as a 5-field cron expression in `timezone`.
    pub cron: String,
    pub timezone: String,
    /// A session quiet this long gets its rolling summary brought up to date.
    pub quiet_minutes: i64,
    /// Rolling summaries: the token budget of a session's history, the turns and share
    /// of it that trigger a summary, the share left after, and the longest summary.
    pub summary_budget_tokens: usize,
    pub summary_min_turns: usize,
    pub summary_trigger_ratio: f64,
    pub summary_target_ratio: f64,
    pub max_summary_chars: usize,
    /// Extracted facts expire after this many days (0: never).
    pub fact_retention_days: i64,
    /// Sessions idle this many days are deleted (0: conversations are kept).
    pub conversation_retention_days: i64,
    /// Delivered notifications are kept this many days.
    pub outbox_retention_days: i64,
    /// Where `VACUUM INTO` snapshots go (none when unset), and how many are kept.
    pub snapshot_dir: Option<String>,
    pub snapshot_keep: usize,
    /// Macros (tool chains learned from scheduled runs): the weighted runs a chain needs
    /// and the share of its trigger's runs it must follow to be promoted.
    pub macros_min_support: u32,
    pub macros_min_confidence: f64,
    /// Each run of a user in which a trigger occurs multiplies its counts (and its
    /// chains') by this first: 1 never forgets.
    pub macros_decay: f64,
    /// A chain whose weighted support falls below this is forgotten.
    pub macros_floor: f64,
    /// Told to the model that extracts facts (what to look for, what to leave out).
    pub extraction_instructions: Option<String>,
    /// The categories of facts the facts pass stores; others are left out and counted.
    pub fact_categories: Vec<String>,
}

impl Default for ConsolidationConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            cron: "0 3 * * *".to_string(),
            timezone: "UTC".to_string(),
            quiet_minutes: 30,
            summary_budget_tokens: 2000,
            summary_min_turns: 4,
            summary_trigger_ratio: 0.8,
            summary_target_ratio: 0.5,
            max_summary_chars: 4000,
            fact_retention_days: 0,
            conversation_retention_days: 0,
            outbox_retention_days: 7,
            snapshot_dir: None,
            snapshot_keep: 7,
            macros_min_support: 3,
            macros_min_confidence: 0.6,
            macros_decay: 0.95,
            macros_floor: 0.5,
            extraction_instructions: None,
            fact_categories: crate::fact_category::CATEGORIES.map(String::from).to_vec(),
        }
    }
}
