//! The note history tools: a note's versions and bringing one back, for the session's user.

use rmcp::model::{CallToolResult, JsonObject};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::tool_def::{args, done, CallError, Effect, ToolDef};
use crate::app::App;
use crate::error::Error;
use crate::memory::{Note, NoteVersion, Origin};

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryHistoryIn {
    pub note_id: String,
    /// Act as this agent of the user: its own notes and the shared ones (without: the
    /// shared notes only).
    pub agent: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryRestoreIn {
    pub note_id: String,
    /// The version to bring back (see memory_history).
    pub version: i64,
    /// Act as this agent of the user: its own notes and the shared ones (without: the
    /// shared notes only).
    pub agent: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct VersionsOut {
    pub versions: Vec<NoteVersion>,
}

pub fn definitions() -> Vec<ToolDef> {
    vec![
        ToolDef::of::<MemoryHistoryIn, VersionsOut>("memory_history", "A note's history", Effect::Reads,
            "Every version of one of the user's notes, oldest first: what it said, what changed it and when (a deleted note's too, for a while)."),
        ToolDef::of::<MemoryRestoreIn, Note>("memory_restore", "Restore a note", Effect::Writes,
            "Bring a version of one of the user's notes back as its newest version: same id, searchable again, even after it was deleted."),
    ]
}

/// Runs the history tool `name` for `user`.
pub async fn call(
    app: &App,
    user: &str,
    name: &str,
    arguments: Option<JsonObject>,
) -> Result<CallToolResult, CallError> {
    let memory = app.memory().by(Origin::Mcp);
    match name {
        "memory_history" => {
            let input: MemoryHistoryIn = args(arguments)?;
            let versions = memory
                .as_agent(input.agent.as_deref())
                .map_err(Error::from)?
                .note_history(user, &input.note_id)
                .await
                .map_err(Error::from)?;
            let text = versions
                .iter()
                .map(|v| {
                    format!(
                        "v{} {} by {}: {}",
                        v.version, v.change, v.changed_by, v.content
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            done(text, &VersionsOut { versions })
        }
        "memory_restore" => {
            let input: MemoryRestoreIn = args(arguments)?;
            let note = memory
                .as_agent(input.agent.as_deref())
                .map_err(Error::from)?
                .restore_note(user, &input.note_id, input.version)
                .await
                .map_err(Error::from)?;
            done(
                format!(
                    "Restored note {} to version {}.",
                    note.note_id, input.version
                ),
                &note,
            )
        }
        other => Err(CallError::UnknownTool(other.to_string())),
    }
}
