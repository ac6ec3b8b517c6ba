//! The run control tools: stopping one of the user's runs, and running one again.

use rmcp::model::{CallToolResult, JsonObject};
use serde::Deserialize;
use utoipa::ToSchema;

use super::tool_def::{args, done, CallError, Effect, ToolDef};
use crate::access::Actor;
use crate::app::App;
use crate::error::Error;
use crate::schedule::store::Rerun;
use crate::schedule::types::RunStatus;
use crate::schedule::view::RunView;

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunIdIn {
    /// The run's id (see schedule_runs).
    pub run_id: String,
}

pub fn definitions() -> Vec<ToolDef> {
    vec![
        ToolDef::of::<RunIdIn, RunView>(
            "schedule_run_cancel",
            "Cancel a run",
            Effect::Writes,
            "Stop one of the user's runs that is running or waiting for an approval; a run that already ended cannot be cancelled.",
        ),
        ToolDef::of::<RunIdIn, Rerun>(
            "schedule_run_rerun",
            "Run a past run again",
            Effect::Writes,
            "Queue one of the user's ended runs to run again: its occurrence, with the input it had, as a new run whose parent_run_id names it. A run still going, or a skipped one (which never ran), cannot be rerun.",
        ),
    ]
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
        "schedule_run_rerun" => {
            let input: RunIdIn = args(arguments)?;
            let rerun = app
                .schedules()
                .rerun(&Actor::User(user.to_string()), &input.run_id)
                .await
                .map_err(Error::from)?;
            let text = format!(
                "Rerun of {} queued as {}; it starts when a worker takes it.",
                rerun.parent_run_id, rerun.event_id
            );
            done(text, &rerun)
        }
        other => Err(CallError::UnknownTool(other.to_string())),
    }
}
