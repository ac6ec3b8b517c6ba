//! The state tools: scoped key-value state for the session's user. No prefix is one of
//! the user's sessions' (named by `session`), `user:` the user's, `app:` everyone's (read
//! only here: only the operator writes it). `temp:` keys belong to a run, never to an MCP
//! client.

use rmcp::model::{CallToolResult, JsonObject};
use serde::Deserialize;
use utoipa::ToSchema;

use super::tool_def::{args, done, CallError, Effect, ToolDef};
use crate::app::App;
use crate::error::Error;
use crate::state::{StateAccess, StateDeleted, StateEntry, StateList};

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StateGetIn {
    /// `KEY` (a session's: give `session`), `user:KEY`, `app:KEY`.
    pub key: String,
    pub session: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StateSetIn {
    pub key: String,
    /// Any JSON value.
    #[schema(value_type = Value)]
    pub value: serde_json::Value,
    /// Write only if the key is at this version now (0: only if it does not exist).
    pub expected_version: Option<i64>,
    pub session: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StateDeleteIn {
    pub key: String,
    /// Delete only if the key is at this version now.
    pub expected_version: Option<i64>,
    pub session: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StateListIn {
    /// Only keys that start with this (all when absent).
    pub prefix: Option<String>,
    pub session: Option<String>,
}

pub fn definitions() -> Vec<ToolDef> {
    vec![
        ToolDef::of::<StateGetIn, StateEntry>("state_get", "Read state", Effect::Reads,
            "Read a state value: KEY is one session's (give session), user:KEY is shared by all of the user's sessions, app:KEY by everyone."),
        ToolDef::of::<StateSetIn, StateEntry>("state_set", "Set state", Effect::Writes,
            "Set a state key to any JSON value; returns its new version. With expected_version (0: must not exist) it writes only if no one changed the key since."),
        ToolDef::of::<StateDeleteIn, StateDeleted>("state_delete", "Delete state", Effect::Deletes,
            "Delete a state key (optionally only at expected_version)."),
        ToolDef::of::<StateListIn, StateList>("state_list", "List state", Effect::Reads,
            "The state keys visible here that start with a prefix (all when absent), with their values and versions."),
    ]
}

/// Runs the state tool `name` for `user`.
pub async fn call(
    app: &App,
    user: &str,
    name: &str,
    arguments: Option<JsonObject>,
) -> Result<CallToolResult, CallError> {
    let state = app.state();
    match name {
        "state_get" => {
            let input: StateGetIn = args(arguments)?;
            let access = StateAccess::user(user, input.session);
            let entry = state.get(&access, &input.key).await.map_err(Error::from)?;
            done(
                format!(
                    "{} = {} (version {})",
                    entry.key, entry.value, entry.version
                ),
                &entry,
            )
        }
        "state_set" => {
            let input: StateSetIn = args(arguments)?;
            let access = StateAccess::user(user, input.session);
            let entry = state
                .set(&access, &input.key, &input.value, input.expected_version)
                .await
                .map_err(Error::from)?;
            done(
                format!("Set {} (version {}).", entry.key, entry.version),
                &entry,
            )
        }
        "state_delete" => {
            let input: StateDeleteIn = args(arguments)?;
            let access = StateAccess::user(user, input.session);
            let deleted = state
                .delete(&access, &input.key, input.expected_version)
                .await
                .map_err(Error::from)?;
            done(format!("Deleted {}.", deleted.key), &deleted)
        }
        "state_list" => {
            let input: StateListIn = args(arguments)?;
            let access = StateAccess::user(user, input.session);
            let list = state
                .list(&access, input.prefix.as_deref().unwrap_or_default())
                .await
                .map_err(Error::from)?;
            let text = if list.entries.is_empty() {
                "No state keys.".to_string()
            } else {
                list.entries
                    .iter()
                    .map(|e| format!("{} = {} (version {})", e.key, e.value, e.version))
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            done(text, &list)
        }
        other => Err(CallError::UnknownTool(other.to_string())),
    }
}
