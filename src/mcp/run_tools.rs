//! The run control tools: stopping one of the user's runs.

use rmcp::model::{CallToolResult, JsonObject};
use serde::Deserialize;
use utoipa::ToSchema;

use super::tool_def::{args, done, CallError, Effect, ToolDef};
use crate::access::Actor;
use crate::app::App;
use crate::error::Error;
use crate::schedule::types::RunStatus;
use crate::schedule::view::RunView;

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunIdIn {
    /// The run's id (see schedule_runs).
    pub run_id: String,
}

pub fn definitions() -> Vec<ToolDef> {
    vec![ToolDef::of::<RunIdIn, RunView>(
        "schedule_run_cancel",
        "Cancel a run",
        Effect::Writes,
        "Stop one of the user's runs that is running or waiting for an approval; a run that already ended cannot be cancelled.",
    )]
}

/// Runs the run tool `name` for `user`.
pub async fn call(
    app: &App,
    user: &str,
    name: &str,
    arguments: Option<JsonObject>,
) -> Result<CallToolResult, CallError> {
    match name {
        "schedule_run_cancel" => {
            let input: RunIdIn = args(arguments)?;
            let run = app
                .schedules()
                .cancel_run(&Actor::User(user.to_string()), &input.run_id, "mcp")
                .await
                .map_err(Error::from)?;
            let view = RunView::from(&run);
            let text = match view.status {
                RunStatus::Running => format!("{} is being stopped.", view.run_id),
                status => format!("{} {status}.", view.run_id),
            };
            done(text, &view)
        }
        other => Err(CallError::UnknownTool(other.to_string())),
    }
}
