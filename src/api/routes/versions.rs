//! A note's versions (`/v1/notes/{id}/history`, `/v1/notes/{id}/restore`) and erasing a
//! user (`/v1/admin/users/{user}/purge`, an admin token only).

use axum::extract::State;
use axum::Json;
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access::Actor;
use crate::api::auth::Caller;
use crate::api::error::{ApiError, Failures};
use crate::api::extract::{ApiJson, ApiPath, ApiQuery};
use crate::api::types::NoteScopeQuery;
use crate::api::ApiState;
use crate::app::purge::UserPurged;
use crate::memory::{Note, NoteVersion, Origin};

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(history))
        .routes(routes!(as_of))
        .routes(routes!(restore))
        .routes(routes!(purge))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RestoreBody {
    /// The version to bring back (see the note's history).
    pub version: i64,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PurgeBody {
    /// Count what would go, and remove nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// `?as_of=`: the instant the notes are wanted as of.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AsOfQuery {
    /// With an admin token: the user to act for.
    pub user: Option<String>,
    /// Act as this agent of the user: its own notes and the shared ones (without: the
    /// shared notes only).
    pub agent: Option<String>,
    /// UTC ms, RFC 3339, or a date (its last moment).
    pub as_of: String,
}

/// The user's notes as they were at `as_of`: each note's version valid then.
#[utoipa::path(get, path = "/v1/versions", tag = "notes", params(AsOfQuery),
    responses((status = 200, body = Vec<NoteVersion>), Failures),
    security(("bearer" = [])))]
async fn as_of(
    State(state): State<ApiState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<AsOfQuery>,
) -> Result<Json<Vec<NoteVersion>>, ApiError> {
    let user = caller.user_for(query.user.as_deref())?;
    let at = crate::memory::parse_time("as_of", &query.as_of, true)?;
    let memory = state.app.memory().as_agent(query.agent.as_deref())?;
    Ok(Json(memory.notes_as_of(&user, at).await?))
}

/// Every version of one of the user's notes, oldest first (a deleted note's too, until
/// its retention ends).
#[utoipa::path(get, path = "/v1/notes/{note_id}/history", tag = "notes",
    params(("note_id" = String, Path), NoteScopeQuery),
    responses((status = 200, body = Vec<NoteVersion>), Failures),
    security(("bearer" = [])))]
async fn history(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(note_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<NoteScopeQuery>,
) -> Result<Json<Vec<NoteVersion>>, ApiError> {
    let user = caller.user_for(query.user.as_deref())?;
    Ok(Json(
        query
            .memory(state.app.memory())?
            .note_history(&user, &note_id)
            .await?,
    ))
}

/// Bring a version of a note back as its newest version: same id, searchable again.
#[utoipa::path(post, path = "/v1/notes/{note_id}/restore", tag = "notes",
    params(("note_id" = String, Path), NoteScopeQuery),
    request_body = RestoreBody,
    responses((status = 200, body = Note), Failures),
    security(("bearer" = [])))]
async fn restore(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(note_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<NoteScopeQuery>,
    ApiJson(body): ApiJson<RestoreBody>,
) -> Result<Json<Note>, ApiError> {
    let user = caller.user_for(query.user.as_deref())?;
    let note = query
        .memory(&state.app.memory().by(Origin::Api))?
        .restore_note(&user, &note_id, body.version)
        .await?;
    Ok(Json(note))
}

/// Erase everything of a user, history included, and say what went (admin).
#[utoipa::path(post, path = "/v1/admin/users/{user_id}/purge", tag = "admin",
    params(("user_id" = String, Path)),
    request_body = PurgeBody,
    responses((status = 200, body = UserPurged), Failures),
    security(("bearer" = [])))]
async fn purge(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(user_id): ApiPath<String>,
    ApiJson(body): ApiJson<PurgeBody>,
) -> Result<Json<UserPurged>, ApiError> {
    caller.require_admin()?;
    let purged = state
        .app
        .purge_user(&Actor::Operator, &user_id, body.dry_run)
        .await?;
    Ok(Json(purged))
}
