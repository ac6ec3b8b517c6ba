//! `/v1/state`: scoped key-value state. A user token reaches its user's state (and a
//! session's, with `?session=`) and reads `app:` keys; an admin token also writes `app:`
//! keys, and a user's state with `?user=`.

use axum::extract::State;
use axum::Json;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access::Actor;
use crate::api::auth::Caller;
use crate::api::error::{ApiError, Failures};
use crate::api::extract::{ApiJson, ApiPath, ApiQuery};
use crate::api::ApiState;
use crate::state::{StateAccess, StateDeleted, StateEntry, StateList, StateWrite};

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(list_state))
        .routes(routes!(get_state, set_state, delete_state))
}

/// Whose state, and from which session.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct StateQuery {
    /// With an admin token: the user whose state is meant (without it, `app:` keys only).
    pub user: Option<String>,
    /// The session whose keys without a prefix are meant.
    pub session: Option<String>,
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct StateListQuery {
    pub user: Option<String>,
    pub session: Option<String>,
    /// Only keys that start with this (all when absent).
    pub prefix: Option<String>,
}

#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct StateDeleteQuery {
    pub user: Option<String>,
    pub session: Option<String>,
    /// Delete only if the key is at this version now.
    pub expected_version: Option<i64>,
}

fn access(
    caller: &Caller,
    user: Option<&str>,
    session: Option<String>,
) -> Result<StateAccess, ApiError> {
    Ok(match (&caller.actor, user) {
        (Actor::Operator, None) => StateAccess::operator(None, session),
        (Actor::Operator, Some(_)) => StateAccess::operator(Some(caller.user_for(user)?), session),
        (Actor::User(_), _) => StateAccess::user(caller.user_for(user)?, session),
    })
}

/// The keys visible to the caller, by key: the session's, the user's, the app's.
#[utoipa::path(get, path = "/v1/state", tag = "state", params(StateListQuery),
    responses((status = 200, body = StateList), Failures),
    security(("bearer" = [])))]
async fn list_state(
    State(state): State<ApiState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<StateListQuery>,
) -> Result<Json<StateList>, ApiError> {
    let access = access(&caller, query.user.as_deref(), query.session)?;
    let prefix = query.prefix.unwrap_or_default();
    Ok(Json(state.app.state().list(&access, &prefix).await?))
}

/// One key's value and version.
#[utoipa::path(get, path = "/v1/state/{key}", tag = "state",
    params(("key" = String, Path, example = "user:theme"), StateQuery),
    responses((status = 200, body = StateEntry), Failures),
    security(("bearer" = [])))]
async fn get_state(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(key): ApiPath<String>,
    ApiQuery(query): ApiQuery<StateQuery>,
) -> Result<Json<StateEntry>, ApiError> {
    let access = access(&caller, query.user.as_deref(), query.session)?;
    Ok(Json(state.app.state().get(&access, &key).await?))
}

/// Set a key to a JSON value; with `expected_version`, only if no one wrote it since
/// (409 otherwise).
#[utoipa::path(put, path = "/v1/state/{key}", tag = "state",
    params(("key" = String, Path, example = "user:theme"), StateQuery),
    request_body = StateWrite,
    responses((status = 200, body = StateEntry), Failures),
    security(("bearer" = [])))]
async fn set_state(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(key): ApiPath<String>,
    ApiQuery(query): ApiQuery<StateQuery>,
    ApiJson(body): ApiJson<StateWrite>,
) -> Result<Json<StateEntry>, ApiError> {
    let access = access(&caller, query.user.as_deref(), query.session)?;
    let entry = state
        .app
        .state()
        .set(&access, &key, &body.value, body.expected_version)
        .await?;
    Ok(Json(entry))
}

/// Delete a key.
#[utoipa::path(delete, path = "/v1/state/{key}", tag = "state",
    params(("key" = String, Path, example = "user:theme"), StateDeleteQuery),
    responses((status = 200, body = StateDeleted), Failures),
    security(("bearer" = [])))]
async fn delete_state(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(key): ApiPath<String>,
    ApiQuery(query): ApiQuery<StateDeleteQuery>,
) -> Result<Json<StateDeleted>, ApiError> {
    let access = access(&caller, query.user.as_deref(), query.session)?;
    let deleted = state
        .app
        .state()
        .delete(&access, &key, query.expected_version)
        .await?;
    Ok(Json(deleted))
}
