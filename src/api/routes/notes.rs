//! `/v1/notes`: a user's notes.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::api::auth::Caller;
use crate::api::error::{ApiError, Failures};
use crate::api::extract::{ApiJson, ApiPath, ApiQuery};
use crate::api::types::{NoteScopeQuery, NotesQuery, SaveNoteBody, UpdateNoteBody};
use crate::api::ApiState;
use crate::memory::{NewNote, Note, NoteDeleted, Origin, SaveOutcome};

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(save_note, list_notes))
        .routes(routes!(get_note, update_note, delete_note))
}

/// Save a note; with a key, the note saved under it is replaced (same id).
#[utoipa::path(post, path = "/v1/notes", tag = "notes", params(NoteScopeQuery),
    request_body = SaveNoteBody,
    responses(
        (status = 201, description = "A new note", body = SaveOutcome),
        (status = 200, description = "The note with the same key, replaced", body = SaveOutcome),
        Failures),
    security(("bearer" = [])))]
async fn save_note(
    State(state): State<ApiState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<NoteScopeQuery>,
    ApiJson(body): ApiJson<SaveNoteBody>,
) -> Result<(StatusCode, Json<SaveOutcome>), ApiError> {
    let user = caller.user_for(query.user.as_deref())?;
    let note = NewNote {
        content: body.text,
        tags: body.tags,
        key: body.key,
        category: body.category,
        ..Default::default()
    };
    let outcome = query
        .memory(&state.app.memory().by(Origin::Api))?
        .save_note(&user, &note)
        .await?;
    let status = if outcome.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(outcome)))
}

/// The user's notes passing the query's filters, most recently changed first.
#[utoipa::path(get, path = "/v1/notes", tag = "notes", params(NotesQuery),
    responses((status = 200, body = Vec<Note>), Failures),
    security(("bearer" = [])))]
async fn list_notes(
    State(state): State<ApiState>,
    caller: Caller,
    ApiQuery(mut query): ApiQuery<NotesQuery>,
) -> Result<Json<Vec<Note>>, ApiError> {
    let user = caller.user_for(query.user.as_deref())?;
    let filter = query.filter()?;
    let memory = state.app.memory().as_agent(query.agent.as_deref())?;
    Ok(Json(memory.notes_matching(&user, &filter).await?))
}

/// One of the user's notes.
#[utoipa::path(get, path = "/v1/notes/{note_id}", tag = "notes",
    params(("note_id" = String, Path), NoteScopeQuery),
    responses((status = 200, body = Note), Failures),
    security(("bearer" = [])))]
async fn get_note(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(note_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<NoteScopeQuery>,
) -> Result<Json<Note>, ApiError> {
    let user = caller.user_for(query.user.as_deref())?;
    crate::input::check_id("note id", &note_id)?;
    Ok(Json(
        query
            .memory(state.app.memory())?
            .note(&user, &note_id)
            .await?,
    ))
}

/// Replace a note's text (and its tags, when given), keeping its id.
#[utoipa::path(patch, path = "/v1/notes/{note_id}", tag = "notes",
    params(("note_id" = String, Path), NoteScopeQuery),
    request_body = UpdateNoteBody,
    responses((status = 200, body = Note), Failures),
    security(("bearer" = [])))]
async fn update_note(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(note_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<NoteScopeQuery>,
    ApiJson(body): ApiJson<UpdateNoteBody>,
) -> Result<Json<Note>, ApiError> {
    let user = caller.user_for(query.user.as_deref())?;
    let note = query
        .memory(&state.app.memory().by(Origin::Api))?
        .update_note(&user, &note_id, &body.text, body.tags.as_deref())
        .await?;
    Ok(Json(note))
}

/// Delete a note with its index rows and vectors.
#[utoipa::path(delete, path = "/v1/notes/{note_id}", tag = "notes",
    params(("note_id" = String, Path), NoteScopeQuery),
    responses((status = 200, body = NoteDeleted), Failures),
    security(("bearer" = [])))]
async fn delete_note(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(note_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<NoteScopeQuery>,
) -> Result<Json<NoteDeleted>, ApiError> {
    let user = caller.user_for(query.user.as_deref())?;
    query
        .memory(&state.app.memory().by(Origin::Api))?
        .delete_note(&user, &note_id)
        .await?;
    Ok(Json(NoteDeleted {
        note_id,
        deleted: true,
    }))
}
