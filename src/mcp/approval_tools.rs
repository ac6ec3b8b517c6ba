//! The approval tools: the session's user's tool calls that wait for an answer, and the
//! answer (once, whichever door answers first).

use rmcp::model::{CallToolResult, JsonObject};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::tool_def::{args, done, CallError, Effect, ToolDef};
use crate::access::Actor;
use crate::app::App;
use crate::approval::{Approval, ApprovalState, Decision, Door};
use crate::error::Error;
use crate::input::InputError;

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalListIn {
    /// Only approvals in this state: pending (the default), approved, denied, expired or
    /// all.
    pub state: Option<String>,
    /// 1..=1000 (default 50).
    pub limit: Option<i64>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalDecideIn {
    pub approval_id: String,
    /// approve or deny.
    pub decision: String,
    /// Kept with the answer (a denial's is shown to the run's model).
    pub reason: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct ApprovalsOut {
    pub approvals: Vec<Approval>,
}

pub fn definitions() -> Vec<ToolDef> {
    vec![
        ToolDef::of::<ApprovalListIn, ApprovalsOut>("approval_list", "Approvals waiting", Effect::Reads,
            "The user's scheduled runs' tool calls that wait for the user's approval (state pending, the default), or those already answered: the tool, its arguments, when the request runs out."),
        ToolDef::of::<ApprovalDecideIn, Approval>("approval_decide", "Answer an approval", Effect::Writes,
            "Approve or deny one waiting tool call of the user's scheduled runs; the run then goes on (a denied call is not made). Only when the user has said so: an answer counts once."),
    ]
}

/// Runs the approval tool `name` for `user`.
pub async fn call(
    app: &App,
    user: &str,
    name: &str,
    arguments: Option<JsonObject>,
) -> Result<CallToolResult, CallError> {
    let actor = Actor::User(user.to_string());
    match name {
        "approval_list" => {
            let input: ApprovalListIn = args(arguments)?;
            let state = match input.state.as_deref() {
                None => Some(ApprovalState::Pending),
                Some("all") => None,
                Some(s) => Some(s.parse::<ApprovalState>().map_err(|_| {
                    Error::from(InputError::new(
                        "state",
                        format!(
                            "`{}` is not one of pending, approved, denied, expired, all",
                            crate::input::printable(s)
                        ),
                    ))
                })?),
            };
            let approvals = app
                .approvals()
                .list(&actor, state, input.limit.unwrap_or(50))
                .await
                .map_err(Error::from)?;
            let text = if approvals.is_empty() {
                "No approvals.".to_string()
            } else {
                approvals
                    .iter()
                    .map(|a| {
                        format!(
                            "{} {} {}({}) until {}",
                            a.approval_id, a.state, a.tool_name, a.arguments, a.expires_at
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            done(text, &ApprovalsOut { approvals })
        }
        "approval_decide" => {
            let input: ApprovalDecideIn = args(arguments)?;
            let decision: Decision = input
                .decision
                .parse()
                .map_err(|reason| Error::from(InputError::new("decision", reason)))?;
            let approval = app
                .approvals()
                .decide(
                    &actor,
                    &input.approval_id,
                    decision,
                    Door::Mcp,
                    input.reason.as_deref(),
                )
                .await
                .map_err(Error::from)?;
            done(
                format!("{} {}.", approval.approval_id, approval.state),
                &approval,
            )
        }
        other => Err(CallError::UnknownTool(other.to_string())),
    }
}
