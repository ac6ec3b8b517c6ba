//! MCP resources: what an agent may read without a tool call. The user's notes and
//! schedules as JSON (the REST API's shapes), and each conversation session's rolling
//! summary as text. Session ids are percent-encoded in URIs, as they may hold any text.

use percent_encoding::{percent_decode_str, utf8_percent_encode, NON_ALPHANUMERIC};
use rmcp::model::{ReadResourceResult, Resource, ResourceContents, ResourceTemplate};
use rmcp::ErrorData as McpError;

use crate::access::Actor;
use crate::app::App;
use crate::error::{Error, ErrorKind};
use crate::schedule::store::ScheduleFilter;
use crate::schedule::view::{ScheduleList, ScheduleView, LIST_NEXT_RUNS};

pub const NOTES: &str = "nightshift://notes";
pub const SCHEDULES: &str = "nightshift://schedules";
const SESSION_PREFIX: &str = "nightshift://sessions/";
const SUMMARY_SUFFIX: &str = "/summary";
const SUMMARY_TEMPLATE: &str = "nightshift://sessions/{session_id}/summary";

/// Resources per `resources/list` page.
pub const PER_PAGE: usize = 200;
/// Sessions listed (the most recently active); older ones are read by their URI.
const SESSIONS_LISTED: usize = 100;
/// Schedules a `nightshift://schedules` read holds (the newest).
const SCHEDULES_READ: i64 = 1000;

const JSON: &str = "application/json";

/// The URI of a session's summary.
pub fn summary_uri(session_id: &str) -> String {
    format!(
        "{SESSION_PREFIX}{}{SUMMARY_SUFFIX}",
        utf8_percent_encode(session_id, NON_ALPHANUMERIC)
    )
}

/// The user's resources: notes, schedules, then the summaries of the most recently active
/// sessions (conversations and scheduled runs' transcripts).
pub async fn list(app: &App, user: &str) -> Result<Vec<Resource>, Error> {
    let mut resources = vec![
        Resource::new(NOTES, "notes")
            .with_title("Saved notes")
            .with_description(
                "The notes this user shares with all their agents, most recently changed first.",
            )
            .with_mime_type(JSON),
        Resource::new(SCHEDULES, "schedules")
            .with_title("Schedules")
            .with_description("This user's schedules, newest first, with their next runs.")
            .with_mime_type(JSON),
    ];
    for session in app
        .memory()
        .sessions(user)
        .await?
        .into_iter()
        .take(SESSIONS_LISTED)
    {
        let title = session
            .title
            .clone()
            .unwrap_or_else(|| session.session_id.clone());
        resources.push(
            Resource::new(
                summary_uri(&session.session_id),
                format!("summary of {title}"),
            )
            .with_description("The conversation's rolling summary.")
            .with_mime_type("text/plain"),
        );
    }
    Ok(resources)
}

pub fn templates() -> Vec<ResourceTemplate> {
    vec![ResourceTemplate::new(SUMMARY_TEMPLATE, "session summary")
        .with_title("A conversation's summary")
        .with_description("The rolling summary of one of this user's conversation sessions.")
        .with_mime_type("text/plain")]
}

/// Reads `uri` for `user`. An unknown URI, or a session that is not the user's, is "not
/// found" alike: the answer never says another user's session exists.
pub async fn read(app: &App, user: &str, uri: &str) -> Result<ReadResourceResult, McpError> {
    let contents = match uri {
        NOTES => {
            let notes = app
                .memory()
                .notes(user)
                .await
                .map_err(|e| failed(e.into()))?;
            json(uri, &notes)?
        }
        SCHEDULES => {
            let actor = Actor::user(user).map_err(|e| failed(e.into()))?;
            let filter = ScheduleFilter {
                user_id: Some(user.to_string()),
                status: None,
                limit: Some(SCHEDULES_READ),
                ..Default::default()
            };
            let (schedules, total) = app
                .schedules()
                .list(&actor, &filter)
                .await
                .map_err(|e| failed(e.into()))?;
            let list = ScheduleList {
                schedules: schedules
                    .iter()
                    .map(|s| ScheduleView::new(s, LIST_NEXT_RUNS))
                    .collect(),
                total,
            };
            json(uri, &list)?
        }
        _ => {
            let session_id = uri
                .strip_prefix(SESSION_PREFIX)
                .and_then(|rest| rest.strip_suffix(SUMMARY_SUFFIX))
                .and_then(|encoded| percent_decode_str(encoded).decode_utf8().ok())
                .ok_or_else(|| not_found(uri))?;
            let actor = Actor::user(user).map_err(|e| failed(e.into()))?;
            let state = app
                .memory()
                .read_summary(&actor, &session_id)
                .await
                .map_err(|e| match Error::from(e) {
                    err if matches!(err.kind(), ErrorKind::NotFound | ErrorKind::BadInput) => {
                        not_found(uri)
                    }
                    err => failed(err),
                })?;
            let text = state
                .summary
                .unwrap_or_else(|| "(no summary yet: the session is still short)".to_string());
            ResourceContents::text(text, uri)
        }
    };
    Ok(ReadResourceResult::new(vec![contents]))
}

fn json<T: serde::Serialize>(uri: &str, value: &T) -> Result<ResourceContents, McpError> {
    let text = serde_json::to_string(value)
        .map_err(|e| McpError::internal_error(format!("cannot encode {uri}: {e}"), None))?;
    Ok(ResourceContents::text(text, uri).with_mime_type(JSON))
}

fn not_found(uri: &str) -> McpError {
    McpError::resource_not_found(
        format!("no such resource: {}", crate::input::printable(uri)),
        None,
    )
}

fn failed(err: Error) -> McpError {
    McpError::internal_error(crate::input::printable(&err.to_string()).into_owned(), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_uris_round_trip_any_session_id() {
        for id in ["plain", "a/b c", "ünï 🌙", "x/summary", "%41"] {
            let uri = summary_uri(id);
            let encoded = uri
                .strip_prefix(SESSION_PREFIX)
                .and_then(|r| r.strip_suffix(SUMMARY_SUFFIX))
                .unwrap();
            assert!(!encoded.contains('/'), "{uri}");
            assert_eq!(percent_decode_str(encoded).decode_utf8().unwrap(), id);
        }
    }
}
