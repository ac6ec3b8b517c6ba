//! `/v1/export`: a user's memory as the archive `nightshift export` writes.

use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access::Actor;
use crate::api::auth::Caller;
use crate::api::error::{ApiError, Failures};
use crate::api::extract::ApiQuery;
use crate::api::ApiState;
use crate::portable::ExportScope;

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(export))
}

/// `?user=` (an admin token's user) or `?all=true` (every user, admin only).
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ExportQuery {
    /// With an admin token: the user to export.
    pub user: Option<String>,
    /// With an admin token: every user.
    #[serde(default)]
    pub all: bool,
}

/// The user's memory (notes with their versions, sessions and events, summaries, state,
/// artifacts, schedules and runs) as one versioned NDJSON archive, the same bytes
/// `nightshift export` writes; `nightshift import` restores it.
#[utoipa::path(get, path = "/v1/export", tag = "memory", params(ExportQuery),
    responses((status = 200, description = "The archive", content_type = "application/x-ndjson",
        body = String), Failures),
    security(("bearer" = [])))]
async fn export(
    State(state): State<ApiState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<ExportQuery>,
) -> Result<Response, ApiError> {
    let (actor, scope) = if query.all {
        caller.require_admin()?;
        if query.user.is_some() {
            return Err(ApiError::bad_input("give `user` or `all`, not both"));
        }
        (Actor::Operator, ExportScope::All)
    } else {
        let user = caller.user_for(query.user.as_deref())?;
        (caller.actor.clone(), ExportScope::User(user))
    };
    let app = &state.app;
    let mut archive = Vec::new();
    app.portable()
        .export(&actor, &scope, app.clock().now_ms(), &mut archive)
        .await?;
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/x-ndjson"),
            ),
            (
                header::CONTENT_DISPOSITION,
                HeaderValue::from_static("attachment; filename=\"nightshift-export.ndjson\""),
            ),
        ],
        archive,
    )
        .into_response())
}
