//! `/v1/macros`: tool chains learned from a user's scheduled runs.

use axum::extract::State;
use axum::Json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::api::auth::Caller;
use crate::api::error::{ApiError, Failures};
use crate::api::extract::ApiQuery;
use crate::api::types::UserQuery;
use crate::api::ApiState;
use crate::memory::MacroList;

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(list_macros))
}

/// The user's promoted macros (learned by the `macros` consolidation pass), most
/// confident first.
#[utoipa::path(get, path = "/v1/macros", tag = "macros", params(UserQuery),
    responses((status = 200, body = MacroList), Failures),
    security(("bearer" = [])))]
async fn list_macros(
    State(state): State<ApiState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<MacroList>, ApiError> {
    let user = caller.user_for(query.user.as_deref())?;
    Ok(Json(state.app.memory().macros(&user).await?))
}
