//! `/v1/admin`: the operator's routes (an admin token only): the outbox, workers,
//! consolidation and the database.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::api::auth::Caller;
use crate::api::error::{ApiError, Failures};
use crate::api::extract::{ApiJson, ApiPath, ApiQuery};
use crate::api::types::{ConsolidateBody, LimitQuery, OutboxQuery};
use crate::api::ApiState;
use crate::app::db_status::DbStatus;
use crate::app::overview::Overview;
use crate::consolidate::{Pass, PassReport};
use crate::notify::outbox::Message;
use crate::registry::WorkerInfo;

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(outbox))
        .routes(routes!(retry))
        .routes(routes!(workers))
        .routes(routes!(consolidation_status, consolidate))
        .routes(routes!(db_status))
        .routes(routes!(status))
}

/// The worker at a glance: workers, schedules, the next due, the last hour's runs, the
/// outbox, the embedding backlog, the database's size (what `nightshift status` shows).
#[utoipa::path(get, path = "/v1/admin/status", tag = "admin",
    responses((status = 200, body = Overview), Failures),
    security(("bearer" = [])))]
async fn status(State(state): State<ApiState>, caller: Caller) -> Result<Json<Overview>, ApiError> {
    caller.require_admin()?;
    Ok(Json(state.app.overview().await?))
}

/// Notification messages, newest first.
#[utoipa::path(get, path = "/v1/admin/outbox", tag = "admin", params(OutboxQuery),
    responses((status = 200, body = Vec<Message>), Failures),
    security(("bearer" = [])))]
async fn outbox(
    State(state): State<ApiState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<OutboxQuery>,
) -> Result<Json<Vec<Message>>, ApiError> {
    caller.require_admin()?;
    let messages = state
        .app
        .outbox()
        .list(query.status.as_deref(), query.limit.unwrap_or(50))
        .await?;
    Ok(Json(messages))
}

/// Send a dead letter again: attempts reset, a new lifetime.
#[utoipa::path(post, path = "/v1/admin/outbox/{message_id}/retry", tag = "admin",
    params(("message_id" = String, Path)),
    responses((status = 200, body = Message), Failures),
    security(("bearer" = [])))]
async fn retry(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(message_id): ApiPath<String>,
) -> Result<Json<Message>, ApiError> {
    caller.require_admin()?;
    crate::input::check_id("message id", &message_id)?;
    let now = state.app.clock().now_ms();
    let message = state
        .app
        .outbox()
        .retry(&message_id, now, &state.app.config().notify)
        .await?;
    state.app.outbox_wake().notify_one();
    Ok(Json(message))
}

/// Workers registered on this database, their heartbeats and what they hold.
#[utoipa::path(get, path = "/v1/admin/workers", tag = "admin",
    responses((status = 200, body = Vec<WorkerInfo>), Failures),
    security(("bearer" = [])))]
async fn workers(
    State(state): State<ApiState>,
    caller: Caller,
) -> Result<Json<Vec<WorkerInfo>>, ApiError> {
    caller.require_admin()?;
    let lease_ms = state.app.config().scheduler.lease_secs * 1000;
    let workers =
        crate::registry::list(state.app.db(), state.app.clock().as_ref(), lease_ms).await?;
    Ok(Json(workers))
}

/// Past consolidation passes with their counts, newest first.
#[utoipa::path(get, path = "/v1/admin/consolidation", tag = "admin", params(LimitQuery),
    responses((status = 200, body = Vec<PassReport>), Failures),
    security(("bearer" = [])))]
async fn consolidation_status(
    State(state): State<ApiState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<LimitQuery>,
) -> Result<Json<Vec<PassReport>>, ApiError> {
    caller.require_admin()?;
    let limit = crate::input::check_range("limit", query.limit.unwrap_or(20), 1..=1000)?;
    Ok(Json(state.app.consolidator(None).status(limit).await?))
}

/// Start consolidation passes now (all by default); they run in the background and show
/// in the consolidation status as they finish.
#[utoipa::path(post, path = "/v1/admin/consolidation", tag = "admin",
    request_body(content = Option<ConsolidateBody>, description = "Optional"),
    responses((status = 202, description = "Started"), Failures),
    security(("bearer" = [])))]
async fn consolidate(
    State(state): State<ApiState>,
    caller: Caller,
    body: Option<ApiJson<ConsolidateBody>>,
) -> Result<StatusCode, ApiError> {
    caller.require_admin()?;
    let body = body.map(|ApiJson(b)| b).unwrap_or_default();
    let passes: Vec<Pass> = if body.passes.is_empty() {
        Pass::ALL.to_vec()
    } else {
        body.passes
            .iter()
            .map(|p| p.parse())
            .collect::<Result<_, _>>()?
    };
    if let Some(user) = &body.user {
        crate::input::check_user_id(user)?;
    }
    let consolidator = state.app.consolidator(None);
    tokio::spawn(async move {
        if let Err(err) = consolidator.run(&passes, body.user.as_deref(), None).await {
            tracing::error!(%err, "consolidation started through the API failed");
        }
    });
    Ok(StatusCode::ACCEPTED)
}

/// The schema, what the database holds, and where embedding stands.
#[utoipa::path(get, path = "/v1/admin/db", tag = "admin",
    responses((status = 200, body = DbStatus), Failures),
    security(("bearer" = [])))]
async fn db_status(
    State(state): State<ApiState>,
    caller: Caller,
) -> Result<Json<DbStatus>, ApiError> {
    caller.require_admin()?;
    let backend = state.app.config().embedding.backend.as_str();
    Ok(Json(
        crate::app::db_status::db_status(state.app.db(), backend).await?,
    ))
}
