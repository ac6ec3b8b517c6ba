//! `/v1/search`: hybrid search over a user's notes and, optionally, one conversation.

use axum::extract::State;
use axum::Json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::api::auth::Caller;
use crate::api::error::{ApiError, Failures};
use crate::api::extract::{ApiJson, ApiQuery};
use crate::api::types::{NoteScopeQuery, SearchBody};
use crate::api::ApiState;
use crate::memory::{SearchRequest, SearchResponse};

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(search))
}

/// The best notes and events for a query, best first; `degraded` says when the vector
/// leg was left out, and why.
#[utoipa::path(post, path = "/v1/search", tag = "memory", params(NoteScopeQuery),
    request_body = SearchBody,
    responses((status = 200, body = SearchResponse), Failures),
    security(("bearer" = [])))]
async fn search(
    State(state): State<ApiState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<NoteScopeQuery>,
    ApiJson(mut body): ApiJson<SearchBody>,
) -> Result<Json<SearchResponse>, ApiError> {
    let user = caller.user_for(query.user.as_deref())?;
    let (filter, window) = body.filters()?;
    let request = SearchRequest {
        user_id: user,
        query: body.query,
        top_k: body.top_k,
        session_id: body.session,
        filter,
        window,
        as_of: crate::memory::parse_time_opt("as_of", body.as_of.as_deref(), true)?,
        ..Default::default()
    };
    let results = query
        .memory(state.app.memory())?
        .search_detailed(&request)
        .await?;
    Ok(Json(results.into()))
}
