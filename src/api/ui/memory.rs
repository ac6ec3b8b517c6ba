//! `/ui/memory`: the memory browser. The users memory holds something for; one user's
//! notes (as one agent sees them, or the shared ones), sessions, state and artifacts; a
//! note's versions with a diff between any two and a restore; a session's events, summary
//! and state; an artifact's bytes. Every read is the library's, as the user (their
//! records only, by the same checks the API makes); the restore is recorded as the
//! dashboard's.

use super::extract::{UiForm, UiQuery};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::memory_views as views;
use super::session::UiSession;
use super::views::urlencode;
use super::{checked, failure, given, see_other};
use crate::access::Actor;
use crate::api::ApiState;
use crate::error::Error;
use crate::input::{check_id, check_user_id, InputError};
use crate::memory::{Memory, Origin};
use crate::state::{Scope, StateAccess, StateEntry};

/// Users on the list (the most recently active).
const USERS: usize = 200;
/// The overnight passes listed under them (the newest).
const PASSES: i64 = 20;
/// Notes, sessions and artifacts a user's page lists of each (the newest).
pub(super) const LISTED: usize = 100;
/// Events shown of a session (its last ones).
const EVENTS: usize = 100;

/// A form or query field as given: a blank one is not given.
/// The user's memory as `agent` sees it (its notes and the shared ones), or the shared
/// notes alone.
fn memory_of(state: &ApiState, agent: Option<&str>) -> Result<Memory, Error> {
    Ok(state.app.memory().as_agent(agent)?)
}

#[derive(Debug, Default, Deserialize)]
pub struct UsersQuery {
    user: Option<String>,
}

/// The users with memory; with `?user=`, that user's page.
pub async fn users(
    State(state): State<ApiState>,
    session: UiSession,
    UiQuery(query): UiQuery<UsersQuery>,
) -> Response {
    if let Some(user) = given(&query.user) {
        return match check_user_id(user) {
            Ok(()) => see_other(&format!("/ui/memory/{}", urlencode(user))),
            Err(err) => failure(err),
        };
    }
    let (users, total) = match state.app.memory().users(USERS).await {
        Ok(found) => found,
        Err(err) => return failure(err),
    };
    match state.app.consolidator(None).status(PASSES).await {
        Ok(passes) => {
            let now = session.now(&state);
            views::users(&users, total, &passes, &session.csrf, now).into_response()
        }
        Err(err) => failure(err),
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct AgentQuery {
    /// Notes as this agent of the user sees them (blank: the shared notes only).
    agent: Option<String>,
}

/// One user's memory.
pub async fn user(
    State(state): State<ApiState>,
    session: UiSession,
    Path(user): Path<String>,
    UiQuery(query): UiQuery<AgentQuery>,
) -> Response {
    match user_memory(&state, &user, given(&query.agent)).await {
        Ok(memory) => {
            let now = session.now(&state);
            views::user(&memory, &session.csrf, now).into_response()
        }
        Err(err) => failure(err),
    }
}

async fn user_memory(
    state: &ApiState,
    user: &str,
    agent: Option<&str>,
) -> Result<views::UserMemoryPage, Error> {
    check_user_id(user)?;
    let (notes, note_count) = memory_of(state, agent)?.recent_notes(user, LISTED).await?;
    let sessions = state.app.memory().sessions(user).await?;
    let access = StateAccess::operator(Some(user.to_string()), None);
    let entries = state.app.state().list(&access, "").await?.entries;
    let actor = Actor::User(user.to_string());
    let artifacts = state.app.artifacts().list(&actor, user, None).await?;
    let growth = state
        .app
        .memory()
        .growth(user, state.app.clock().now_ms())
        .await?;
    Ok(views::UserMemoryPage {
        growth,
        user: user.to_string(),
        agent: agent.map(str::to_string),
        notes,
        note_count,
        sessions,
        state: scoped(entries, Scope::User),
        artifacts,
    })
}

/// The entries of one scope: a user's list holds the app's keys too, which are no
/// user's memory.
fn scoped(entries: Vec<StateEntry>, scope: Scope) -> Vec<StateEntry> {
    entries.into_iter().filter(|e| e.scope == scope).collect()
}

#[derive(Debug, Default, Deserialize)]
pub struct NoteQuery {
    agent: Option<String>,
    /// The versions to compare (numbers; by default the newest and the one before).
    from: Option<String>,
    to: Option<String>,
}

/// A note's versions and a diff between two of them.
pub async fn note(
    State(state): State<ApiState>,
    session: UiSession,
    Path((user, note_id)): Path<(String, String)>,
    UiQuery(query): UiQuery<NoteQuery>,
) -> Response {
    let agent = given(&query.agent);
    let history = async {
        check_user_id(&user)?;
        check_id("note id", &note_id)?;
        let versions = memory_of(&state, agent)?
            .note_history(&user, &note_id)
            .await?;
        let exists = |n: i64| versions.iter().any(|v| v.version == n);
        let no_such = |field, n| InputError::new(field, format!("this note has no version {n}"));
        let newest = versions.last().map_or(1, |v| v.version);
        let to = version_number("to", given(&query.to))?.unwrap_or(newest);
        if !exists(to) {
            return Err(no_such("to", to).into());
        }
        // By default the version before `to`, when there is one.
        let from = match version_number("from", given(&query.from))? {
            Some(from) if exists(from) => Some(from),
            Some(from) => return Err(no_such("from", from).into()),
            None => Some(to - 1).filter(|&n| exists(n)),
        };
        Ok::<_, Error>((versions, from, to))
    };
    match history.await {
        Ok((versions, from, to)) => {
            let page = views::NotePage {
                user: &user,
                agent,
                note_id: &note_id,
                versions: &versions,
                from,
                to,
            };
            let now = session.now(&state);
            views::note(&page, &session.csrf, now).into_response()
        }
        Err(err) => failure(err),
    }
}

/// A version number from a form: a whole number from 1, or nothing.
fn version_number(field: &'static str, text: Option<&str>) -> Result<Option<i64>, InputError> {
    let Some(text) = text else { return Ok(None) };
    match text.parse::<i64>() {
        Ok(n) if n >= 1 => Ok(Some(n)),
        _ => Err(InputError::new(
            field,
            "must be a version number (1 or more)",
        )),
    }
}

#[derive(Debug, Default, Deserialize)]
pub struct RestoreForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    agent: String,
}

/// Brings a version of a note back as its newest.
pub async fn restore(
    State(state): State<ApiState>,
    session: UiSession,
    headers: HeaderMap,
    Path((user, note_id)): Path<(String, String)>,
    UiForm(form): UiForm<RestoreForm>,
) -> Response {
    if let Err(refused) = checked(&state, &session, &headers, &form.csrf) {
        return refused.into_response();
    }
    let agent = given(&Some(form.agent)).map(str::to_string);
    let restored = async {
        check_user_id(&user)?;
        check_id("note id", &note_id)?;
        let version = version_number("version", given(&Some(form.version)))?
            .ok_or_else(|| InputError::new("version", "is missing"))?;
        memory_of(&state, agent.as_deref())?
            .by(Origin::Dashboard)
            .restore_note(&user, &note_id, version)
            .await?;
        Ok::<_, Error>(())
    };
    match restored.await {
        Ok(()) => see_other(&views::note_path(&user, &note_id, agent.as_deref())),
        Err(err) => failure(err),
    }
}

/// A session's events, summary and state.
pub async fn session_page(
    State(state): State<ApiState>,
    session: UiSession,
    Path((user, session_id)): Path<(String, String)>,
) -> Response {
    let page = async {
        check_user_id(&user)?;
        check_id("session id", &session_id)?;
        let memory = state.app.memory();
        let found = memory.session(&session_id, Some(&user)).await?;
        let actor = Actor::User(user.clone());
        let events = memory.recall(&actor, &session_id, EVENTS).await?;
        let summary = memory.read_summary(&actor, &session_id).await?;
        let access = StateAccess::operator(Some(user.clone()), Some(session_id.clone()));
        let entries = state.app.state().list(&access, "").await?.entries;
        Ok::<_, Error>(views::SessionPage {
            session: found,
            events,
            shown: EVENTS,
            summary,
            state: scoped(entries, Scope::Session),
        })
    };
    match page.await {
        Ok(page) => {
            let now = session.now(&state);
            views::session(&page, &session.csrf, now).into_response()
        }
        Err(err) => failure(err),
    }
}

/// An artifact's bytes, as a download.
pub async fn artifact(
    State(state): State<ApiState>,
    _session: UiSession,
    Path((user, artifact_id)): Path<(String, String)>,
) -> Response {
    let found = async {
        check_user_id(&user)?;
        let actor = Actor::User(user.clone());
        Ok::<_, Error>(state.app.artifacts().get(&actor, &artifact_id).await?)
    };
    let (artifact, content) = match found.await {
        Ok(found) => found,
        Err(err) => return failure(err),
    };
    crate::api::routes::artifacts::download(&artifact, content)
}
