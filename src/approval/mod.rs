//! Approvals: a tool call the schedule or its MCP server says needs a person's approval
//! (`approve` patterns) pauses its run as `waiting`. The call and what the runtime needs
//! to go on are kept with an [`Approval`]; the user answers through any door (the CLI, the
//! API, MCP, the dashboard, or a signed link in the request they were sent), once; a
//! request nobody answers within `scheduler.approval_timeout_secs` is answered deny. Any
//! worker then resumes the run with the decision as the tool's result.
//!
//! This module owns the record and the answer; pausing and resuming a run is the schedule
//! store's ([`crate::schedule::store`]), and what the model sees the runtime's.

mod link;
mod store;

use serde::Serialize;

use crate::db::clock::to_rfc3339;
use crate::db::DbError;
use crate::error::{ErrorKind, Kind};
use crate::input::InputError;

pub use link::{LinkAction, LinkClaims, LinkError, LinkKey};
pub use store::{link_key_in, ApprovalStore, MAX_LIST};

text_enum!(
    /// Where an approval stands: waiting for an answer, or answered (`expired`: nobody
    /// answered in time, which counts as a denial).
    ApprovalState { Pending => "pending", Approved => "approved", Denied => "denied", Expired => "expired" }
);

text_enum!(
    /// A person's answer.
    Decision { Approve => "approve", Deny => "deny" }
);

impl Decision {
    fn state(self) -> ApprovalState {
        match self {
            Decision::Approve => ApprovalState::Approved,
            Decision::Deny => ApprovalState::Denied,
        }
    }
}

/// Longest reason a person may give with an answer, in bytes.
pub const MAX_REASON_BYTES: usize = 2000;

/// A tool call waiting for (or given) an answer, as every door shows it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Approval {
    pub approval_id: String,
    pub run_id: String,
    pub schedule_id: String,
    pub user_id: String,
    /// The tool the model asked to call, as the model named it (`server__tool`).
    pub tool_name: String,
    /// The call's arguments, as the model wrote them (JSON text).
    pub arguments: String,
    pub state: ApprovalState,
    /// Who answered: `cli`, `api`, `mcp`, `dashboard`, `link`, or `timeout`.
    pub decided_by: Option<String>,
    pub reason: Option<String>,
    pub created_at: String,
    /// When an unanswered request is answered deny.
    pub expires_at: String,
    pub decided_at: Option<String>,
}

/// The columns [`Approval::from_row`] reads, in order.
pub(crate) const COLUMNS: &str = "approval_id, run_id, schedule_id, user_id, tool_name, \
    arguments, state, decided_by, reason, created_at, expires_at, decided_at";

impl crate::db::FromRow for Approval {
    const COLUMNS: &'static str = COLUMNS;

    fn from_row(row: &libsql::Row) -> Result<Self, DbError> {
        Ok(Approval {
            approval_id: row.get(0)?,
            run_id: row.get(1)?,
            schedule_id: row.get(2)?,
            user_id: row.get(3)?,
            tool_name: row.get(4)?,
            arguments: row.get(5)?,
            state: crate::db::text_column(row, 6, "approval state")?,
            decided_by: row.get(7)?,
            reason: row.get(8)?,
            created_at: to_rfc3339(row.get(9)?),
            expires_at: to_rfc3339(row.get(10)?),
            decided_at: row.get::<Option<i64>>(11)?.map(to_rfc3339),
        })
    }
}

/// The door an answer came through, recorded with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Door {
    Cli,
    Api,
    Mcp,
    Dashboard,
    Link,
}

impl Door {
    pub fn as_str(self) -> &'static str {
        match self {
            Door::Cli => "cli",
            Door::Api => "api",
            Door::Mcp => "mcp",
            Door::Dashboard => "dashboard",
            Door::Link => "link",
        }
    }
}

/// What a resumed run is told about the call it waited on: given to the runtime with
/// what it kept when it paused.
#[derive(Debug, Clone, PartialEq)]
pub struct Resume {
    pub approval_id: String,
    pub state: ApprovalState,
    pub decided_by: String,
    pub reason: Option<String>,
    /// What the runtime kept to go on (its own format).
    pub saved: serde_json::Value,
}

impl Resume {
    pub fn approved(&self) -> bool {
        self.state == ApprovalState::Approved
    }

    /// What the model reads as the result of a call it was not allowed to make.
    pub fn refusal(&self) -> serde_json::Value {
        let error = match self.state {
            ApprovalState::Expired => {
                "nobody answered the approval request in time, so the call was not made".to_string()
            }
            _ => format!(
                "the user denied this call ({}), so it was not made",
                self.decided_by
            ),
        };
        serde_json::json!({"error": error, "reason": self.reason})
    }
}

/// What a run that must wait hands over: the call, and what its runtime keeps to go on.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitFor {
    pub tool_name: String,
    pub arguments: String,
    pub saved: serde_json::Value,
}

#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    /// Missing, or not the actor's: never told apart.
    #[error("approval `{}` not found", crate::input::shown_id(.0))]
    NotFound(String),
    /// Answered already (by anyone, through any door): an answer counts once.
    #[error("approval `{id}` was already answered: {state} ({by})")]
    Decided {
        id: String,
        state: ApprovalState,
        by: String,
    },
    #[error(transparent)]
    Link(#[from] LinkError),
    #[error(transparent)]
    Input(#[from] InputError),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<libsql::Error> for ApprovalError {
    fn from(err: libsql::Error) -> Self {
        ApprovalError::Db(DbError::Sql(err))
    }
}

impl Kind for ApprovalError {
    fn kind(&self) -> ErrorKind {
        match self {
            ApprovalError::NotFound(_) => ErrorKind::NotFound,
            ApprovalError::Decided { .. } => ErrorKind::Conflict,
            ApprovalError::Link(_) => ErrorKind::NotFound,
            ApprovalError::Input(err) => err.kind(),
            ApprovalError::Db(err) => err.kind(),
        }
    }
}
