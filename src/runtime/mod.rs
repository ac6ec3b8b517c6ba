//! Agent runtimes: what runs a schedule's goal. `openai` drives any OpenAI-compatible
//! `/chat/completions` endpoint with nightshift's own tool loop and memory tools; `http`
//! posts the goal to an agent runtime's endpoint and reads its answer (and the files it
//! attached); `a2a` sends it to an A2A agent and follows the task it starts.

mod a2a;
mod hints;
mod http;
mod openai;
mod request;
mod schedule_tools;
mod summarize;
mod tools;

use std::sync::Arc;

use async_trait::async_trait;
use serde::Serialize;

pub use a2a::{A2aRuntime, AGENT_INPUT};
pub use http::HttpRuntime;
pub use openai::{Completion, OpenAiRuntime};
pub use schedule_tools::ScheduleTools;
pub use summarize::{summarizer, ModelSummarizer};

use crate::config::{RuntimeConfig, RuntimeKind};
use crate::memory::{Memory, NewEvent, Role};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RuntimeError {
    #[error("no agent runtime is configured ([runtime] kind)")]
    NotConfigured,
    #[error("cannot reach the runtime at {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("the runtime at {url} answered HTTP {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    #[error("the runtime at {url} sent an answer nightshift cannot read: {reason}")]
    BadAnswer { url: String, reason: String },
    #[error("stopped after {turns} turns (max_turns) without a final answer")]
    TooManyTurns { turns: i64 },
    #[error("the model asked for {calls} tool calls {scope}, over the limit of {limit} ({key})")]
    TooManyToolCalls {
        calls: usize,
        scope: &'static str,
        limit: usize,
        key: &'static str,
    },
    #[error(
        "no answer within the run's deadline of {secs}s (timeout_secs); the attempt was stopped"
    )]
    Deadline { secs: u64 },
    #[error("cost {cost:.6} went over max_cost {max_cost:.6}")]
    TooExpensive { cost: f64, max_cost: f64 },
    #[error("cancelled ({by}): the runtime call was stopped")]
    Cancelled { by: String },
    #[error("the runtime reported failure: {0}")]
    Reported(String),
    #[error("invalid runtime configuration: {0}")]
    Config(String),
    #[error("the A2A agent at {url} answered {method} with error {code}: {message}")]
    AgentError {
        url: String,
        method: &'static str,
        code: i64,
        message: String,
    },
    #[error("the A2A agent at {url} asked for input on task {task_id}, and {answer}; the task was canceled")]
    InputRefused {
        url: String,
        task_id: String,
        answer: String,
    },
    #[error("the A2A agent at {url} ended task {task_id} as {state}: {reason}")]
    TaskEnded {
        url: String,
        task_id: String,
        state: &'static str,
        reason: String,
    },
}

impl crate::error::Kind for RuntimeError {
    fn kind(&self) -> crate::error::ErrorKind {
        use crate::error::ErrorKind;
        match self {
            RuntimeError::NotConfigured | RuntimeError::Config(_) => ErrorKind::Config,
            RuntimeError::Unreachable { .. }
            | RuntimeError::Status { .. }
            | RuntimeError::Deadline { .. } => ErrorKind::Unavailable,
            RuntimeError::BadAnswer { .. }
            | RuntimeError::TooManyTurns { .. }
            | RuntimeError::TooManyToolCalls { .. }
            | RuntimeError::TooExpensive { .. }
            | RuntimeError::Reported(_)
            | RuntimeError::Cancelled { .. }
            | RuntimeError::AgentError { .. }
            | RuntimeError::TaskEnded { .. }
            | RuntimeError::InputRefused { .. } => ErrorKind::Internal,
        }
    }
}

/// What a runtime is asked to do.
#[derive(Debug, Clone, Serialize)]
pub struct GoalRequest {
    pub run_id: String,
    pub schedule_id: String,
    pub user_id: String,
    pub goal: String,
    /// `scheduled:{schedule_id}`: where the run's transcript is kept.
    pub session_id: String,
    /// The user's relevant notes and the schedule session's summary.
    pub context: String,
    /// What the event that started the run carried (a trigger's input, the output of the
    /// run of the schedule it follows); absent for a run of the cadence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    /// The agent the run acts as (the schedule's `agent`): the memory it reaches is the
    /// user's shared notes and this agent's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Which MCP tools the schedule lets its runs use (see [`crate::mcp_client::ToolFilter`]);
    /// empty: every tool the user is granted.
    #[serde(skip)]
    pub tools: Vec<String>,
    /// Which tool calls wait for the user's approval (the schedule's `approve` patterns;
    /// see [`crate::mcp_client::McpTools::needs_approval`]).
    #[serde(skip)]
    pub approve: Vec<String>,
    /// A run resumed after its approval was answered: the answer and what the runtime
    /// kept when it paused. Only the first attempt resumes; a retry starts over.
    #[serde(skip)]
    pub resume: Option<crate::approval::Resume>,
    #[serde(skip)]
    pub max_turns: i64,
    #[serde(skip)]
    pub max_cost: Option<f64>,
    /// Where the runtime tells of the run while it goes (each turn, each tool call and
    /// its result), for its live view.
    #[serde(skip)]
    pub progress: crate::schedule::progress::Progress,
    /// A rerun that sees memory as it was at this instant (Unix ms): its context was
    /// assembled as of then, and its memory tools read then and change nothing.
    #[serde(skip)]
    pub memory_as_of: Option<i64>,
}

/// The run's first turns, as its transcript keeps them: the goal, then its input.
fn opening_turns(request: &GoalRequest) -> Vec<NewEvent> {
    let mut turns = vec![NewEvent::new(Role::User, request.goal.clone())];
    if let Some(input) = &request.input {
        turns.push(NewEvent::new(Role::User, input.clone()));
    }
    turns
}

/// What a run produced, successful or not: usage is recorded either way.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GoalOutcome {
    pub output: String,
    pub turn_count: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub cost: f64,
    /// The conversation, to be stored in the schedule's session.
    pub transcript: Vec<NewEvent>,
    /// Why the run failed, if it did.
    pub error: Option<RuntimeError>,
    /// Files the run produced, stored with its session after it (within
    /// `[artifacts]`'s limits; one over them is skipped with a note in the output).
    pub artifacts: Vec<crate::artifact::NewArtifact>,
    /// The run must wait for the user's approval of a tool call: what it asked, and what
    /// the runtime keeps to go on once it is answered.
    pub wait: Option<crate::approval::WaitFor>,
}

#[async_trait]
pub trait AgentRuntime: Send + Sync {
    /// Runs one goal. Failures come back inside the outcome so usage is never lost.
    async fn run_goal(&self, request: &GoalRequest, memory: &Memory) -> GoalOutcome;
}

/// A runtime that fails every run, for a worker with no `[runtime]`.
pub struct NoRuntime;

#[async_trait]
impl AgentRuntime for NoRuntime {
    async fn run_goal(&self, _request: &GoalRequest, _memory: &Memory) -> GoalOutcome {
        GoalOutcome {
            error: Some(RuntimeError::NotConfigured),
            ..Default::default()
        }
    }
}

/// The runtime the configuration asks for.
pub fn from_config(
    config: &RuntimeConfig,
    mcp: crate::mcp_client::McpTools,
    schedules: ScheduleTools,
) -> Result<Arc<dyn AgentRuntime>, RuntimeError> {
    Ok(match config.kind {
        RuntimeKind::None => Arc::new(NoRuntime),
        RuntimeKind::Openai => Arc::new(
            OpenAiRuntime::new(config)?
                .with_mcp_tools(mcp)
                .with_schedule_tools(schedules),
        ),
        RuntimeKind::Http => Arc::new(HttpRuntime::new(config)?),
        RuntimeKind::A2a => Arc::new(A2aRuntime::new(config)?),
    })
}
