//! The run tools: what one of the user's runs did so far, stopping it, running it again.

use rmcp::model::{CallToolResult, JsonObject};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::tool_def::{args, done, CallError, Effect, ToolDef};
use crate::access::Actor;
use crate::app::App;
use crate::error::Error;
use crate::input::InputError;
use crate::schedule::progress::ProgressEvent;
use crate::schedule::store::{Rerun, RerunMemory};
use crate::schedule::types::RunStatus;
use crate::schedule::view::RunView;

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunIdIn {
    /// The run's id (see schedule_runs).
    pub run_id: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RerunIn {
    /// The run's id (see schedule_runs).
    pub run_id: String,
    /// See memory as it was when the run started (its notes' versions and conversation of
    /// then), changing none; default false: memory as it is.
    #[serde(default)]
    pub memory_as_of_original: bool,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunEventsIn {
    /// The run's id (see schedule_runs).
    pub run_id: String,
    /// Only the events after this one (the last seen; default 0: from the start).
    #[schema(minimum = 0)]
    pub after: Option<i64>,
}

/// A run and its progress after the event asked for.
#[derive(Serialize, ToSchema)]
pub struct RunEventsOut {
    pub run: RunView,
    /// At most 200: ask again after the last for more.
    pub events: Vec<ProgressEvent>,
    /// The run ended, and these are all its events after the one asked for.
    pub ended: bool,
}

pub fn definitions() -> Vec<ToolDef> {
    vec![
        ToolDef::of::<RunEventsIn, RunEventsOut>(
            "schedule_run_events",
            "What a run did",
            Effect::Reads,
            "One of the user's runs as it stands, and its progress after an event: each status change, turn of the model, tool call and tool result, in order (at most 200; ask again after the last for more, or later for what came since).",
        ),
        ToolDef::of::<RunIdIn, RunView>(
            "schedule_run_cancel",
            "Cancel a run",
            Effect::Writes,
            "Stop one of the user's runs that is running or waiting for an approval; a run that already ended cannot be cancelled.",
        ),
        ToolDef::of::<RerunIn, Rerun>(
            "schedule_run_rerun",
            "Run a past run again",
            Effect::Writes,
            "Queue one of the user's ended runs to run again: its occurrence, with the input it had, as a new run whose parent_run_id names it; with memory_as_of_original it sees memory as it was when the run started, and changes none. A run still going, or a skipped one (which never ran), cannot be rerun.",
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
        "schedule_run_events" => {
            let input: RunEventsIn = args(arguments)?;
            let after = input.after.unwrap_or(0);
            if after < 0 {
                return Err(Error::from(InputError::new("after", "must be 0 or more")).into());
            }
            let read = app
                .schedules()
                .progress(&Actor::User(user.to_string()), &input.run_id, after)
                .await
                .map_err(Error::from)?;
            let ended = !matches!(read.run.status, RunStatus::Running | RunStatus::Waiting)
                && read.events.last().map_or(after, |e| e.seq) >= read.last_seq;
            let out = RunEventsOut {
                run: RunView::from(&read.run),
                events: read.events,
                ended,
            };
            let mut lines: Vec<String> = out
                .events
                .iter()
                .map(|e| format!("{}. {}", e.seq, e.describe()))
                .collect();
            lines.push(match (out.ended, out.events.is_empty()) {
                (true, _) => format!("The run ended: {}.", out.run.status),
                (false, true) => format!("Nothing new; the run is {}.", out.run.status),
                (false, false) => format!("The run is {}.", out.run.status),
            });
            done(lines.join("\n"), &out)
        }
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
            let input: RerunIn = args(arguments)?;
            let rerun = app
                .schedules()
                .rerun(
                    &Actor::User(user.to_string()),
                    &input.run_id,
                    RerunMemory::as_of_original(input.memory_as_of_original),
                )
                .await
                .map_err(Error::from)?;
            let seeing = match &rerun.memory_as_of {
                Some(at) => format!(" It sees memory as of {at}."),
                None => String::new(),
            };
            let text = format!(
                "Rerun of {} queued as {}; it starts when a worker takes it.{seeing}",
                rerun.parent_run_id, rerun.event_id
            );
            done(text, &rerun)
        }
        other => Err(CallError::UnknownTool(other.to_string())),
    }
}
