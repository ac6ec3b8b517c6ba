//! `/v1/sessions`: conversations — append, recall, summary, context, forget.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::api::auth::Caller;
use crate::api::error::{ApiError, Failures};
use crate::api::extract::{ApiJson, ApiPath, ApiQuery};
use crate::api::types::{AppendBody, ContextBody, NoteScopeQuery, RecallQuery, UserQuery};
use crate::api::ApiState;
use crate::memory::{
    AppendedEvents, Context, ContextRequest, Event, Session, SessionForgotten, Strategy,
    SummaryState,
};

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(list_sessions))
        .routes(routes!(forget))
        .routes(routes!(append, recall))
        .routes(routes!(summary))
        .routes(routes!(context))
}

/// The user's sessions, most recently active first.
#[utoipa::path(get, path = "/v1/sessions", tag = "sessions", params(UserQuery),
    responses((status = 200, body = Vec<Session>), Failures),
    security(("bearer" = [])))]
async fn list_sessions(
    State(state): State<ApiState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<Vec<Session>>, ApiError> {
    let user = caller.user_for(query.user.as_deref())?;
    Ok(Json(state.app.memory().sessions(&user).await?))
}

/// Append events to one of the user's conversation sessions (created on first use; the
/// same id under another user is another session): all or none, with consecutive
/// sequences. `memory:…`, `memory@…` and `scheduled:…` ids are nightshift's own (400).
#[utoipa::path(post, path = "/v1/sessions/{session_id}/events", tag = "sessions",
    params(("session_id" = String, Path), UserQuery),
    request_body = AppendBody,
    responses((status = 201, body = AppendedEvents), Failures),
    security(("bearer" = [])))]
async fn append(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(session_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
    ApiJson(body): ApiJson<AppendBody>,
) -> Result<(StatusCode, Json<AppendedEvents>), ApiError> {
    let user = caller.user_for(query.user.as_deref())?;
    let sequences = state
        .app
        .memory()
        .append(&user, &session_id, &body.events)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(AppendedEvents {
            session_id,
            sequences,
        }),
    ))
}

/// The last events of a session, oldest first.
#[utoipa::path(get, path = "/v1/sessions/{session_id}/events", tag = "sessions",
    params(("session_id" = String, Path), RecallQuery),
    responses((status = 200, body = Vec<Event>), Failures),
    security(("bearer" = [])))]
async fn recall(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(session_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<RecallQuery>,
) -> Result<Json<Vec<Event>>, ApiError> {
    let actor = caller.actor_for(query.user.as_deref())?;
    let limit = query
        .limit
        .unwrap_or(state.app.config().memory.recall_limit);
    let window = query.window()?;
    Ok(Json(
        state
            .app
            .memory()
            .recall_in(&actor, &session_id, limit, &window)
            .await?,
    ))
}

/// A session's rolling summary.
#[utoipa::path(get, path = "/v1/sessions/{session_id}/summary", tag = "sessions",
    params(("session_id" = String, Path), UserQuery),
    responses((status = 200, body = SummaryState), Failures),
    security(("bearer" = [])))]
async fn summary(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(session_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<SummaryState>, ApiError> {
    let actor = caller.actor_for(query.user.as_deref())?;
    Ok(Json(
        state.app.memory().read_summary(&actor, &session_id).await?,
    ))
}

/// What an agent should put in its prompt for a session, within a token budget.
#[utoipa::path(post, path = "/v1/sessions/{session_id}/context", tag = "sessions",
    params(("session_id" = String, Path), NoteScopeQuery),
    request_body = ContextBody,
    responses((status = 200, body = Context), Failures),
    security(("bearer" = [])))]
async fn context(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(session_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<NoteScopeQuery>,
    ApiJson(body): ApiJson<ContextBody>,
) -> Result<Json<Context>, ApiError> {
    let user = caller.user_for(query.user.as_deref())?;
    let request = ContextRequest {
        user_id: user,
        session_id,
        budget_tokens: body.budget,
        query: body.query,
        strategy: body.strategy.unwrap_or(Strategy::All),
    };
    Ok(Json(
        query.memory(state.app.memory())?.context(&request).await?,
    ))
}

/// Delete a session and everything derived from it.
#[utoipa::path(delete, path = "/v1/sessions/{session_id}", tag = "sessions",
    params(("session_id" = String, Path), UserQuery),
    responses((status = 200, body = SessionForgotten), Failures),
    security(("bearer" = [])))]
async fn forget(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(session_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<SessionForgotten>, ApiError> {
    let actor = caller.actor_for(query.user.as_deref())?;
    state.app.memory().forget(&actor, &session_id).await?;
    Ok(Json(SessionForgotten {
        session_id,
        forgotten: true,
    }))
}
