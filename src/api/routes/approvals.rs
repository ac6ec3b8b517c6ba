//! `/v1/approvals`: tool calls of a user's runs that wait for the user's approval, and
//! the answer to one (once, whichever door answers first).

use axum::extract::State;
use axum::Json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::api::auth::Caller;
use crate::api::error::{ApiError, Failures};
use crate::api::extract::{ApiJson, ApiPath, ApiQuery};
use crate::api::types::{ApprovalsQuery, DecisionBody, UserQuery};
use crate::api::ApiState;
use crate::approval::{Approval, ApprovalState, Decision, Door};
use crate::input::InputError;

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(list_approvals))
        .routes(routes!(show_approval))
        .routes(routes!(approve))
        .routes(routes!(deny))
}

/// The caller's approvals, newest first (`state=pending`: those waiting for an answer).
#[utoipa::path(get, path = "/v1/approvals", tag = "approvals", params(ApprovalsQuery),
    responses((status = 200, body = Vec<Approval>), Failures),
    security(("bearer" = [])))]
async fn list_approvals(
    State(state): State<ApiState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<ApprovalsQuery>,
) -> Result<Json<Vec<Approval>>, ApiError> {
    let actor = caller.actor_for(query.user.as_deref())?;
    let wanted = query
        .state
        .as_deref()
        .map(|s| {
            s.parse::<ApprovalState>()
                .map_err(|reason| InputError::new("state", reason))
        })
        .transpose()?;
    let list = state
        .app
        .approvals()
        .list(&actor, wanted, query.limit.unwrap_or(100))
        .await?;
    Ok(Json(list))
}

/// One approval: the call, its arguments, and its answer if it has one.
#[utoipa::path(get, path = "/v1/approvals/{approval_id}", tag = "approvals",
    params(("approval_id" = String, Path), UserQuery),
    responses((status = 200, body = Approval), Failures),
    security(("bearer" = [])))]
async fn show_approval(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(approval_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<Approval>, ApiError> {
    let actor = caller.actor_for(query.user.as_deref())?;
    Ok(Json(state.app.approvals().get(&actor, &approval_id).await?))
}

/// Approve the call: the run goes on and makes it. 409 when it was answered already.
#[utoipa::path(post, path = "/v1/approvals/{approval_id}/approve", tag = "approvals",
    params(("approval_id" = String, Path), UserQuery),
    request_body(content = Option<DecisionBody>),
    responses((status = 200, body = Approval), Failures),
    security(("bearer" = [])))]
async fn approve(
    state: State<ApiState>,
    caller: Caller,
    id: ApiPath<String>,
    query: ApiQuery<UserQuery>,
    body: Option<ApiJson<Option<DecisionBody>>>,
) -> Result<Json<Approval>, ApiError> {
    decide(state, caller, id, query, body, Decision::Approve).await
}

/// Deny the call: the run goes on, and its model is told the call was denied. 409 when
/// it was answered already.
#[utoipa::path(post, path = "/v1/approvals/{approval_id}/deny", tag = "approvals",
    params(("approval_id" = String, Path), UserQuery),
    request_body(content = Option<DecisionBody>),
    responses((status = 200, body = Approval), Failures),
    security(("bearer" = [])))]
async fn deny(
    state: State<ApiState>,
    caller: Caller,
    id: ApiPath<String>,
    query: ApiQuery<UserQuery>,
    body: Option<ApiJson<Option<DecisionBody>>>,
) -> Result<Json<Approval>, ApiError> {
    decide(state, caller, id, query, body, Decision::Deny).await
}

async fn decide(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(approval_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
    body: Option<ApiJson<Option<DecisionBody>>>,
    decision: Decision,
) -> Result<Json<Approval>, ApiError> {
    let actor = caller.actor_for(query.user.as_deref())?;
    // No body, `null` and `{}` all mean no reason.
    let reason = body.and_then(|ApiJson(b)| b).and_then(|b| b.reason);
    let decided = state
        .app
        .approvals()
        .decide(&actor, &approval_id, decision, Door::Api, reason.as_deref())
        .await?;
    Ok(Json(decided))
}
