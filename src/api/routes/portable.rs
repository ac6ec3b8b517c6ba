//! `/v1/export`: a user's memory as the archive `nightshift export` writes; `/v1/import`:
//! such an archive (or mem0's `get_all` output) restored, as `nightshift import` does.

use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access::Actor;
use crate::api::auth::Caller;
use crate::api::error::{ApiError, Failures};
use crate::api::extract::ApiQuery;
use crate::api::ApiState;
use crate::portable::{ExportScope, ImportFormat, ImportReport, ImportRequest, PortableError};

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(export))
        .routes(routes!(import))
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

/// `?format=`, `?user=`, `?dry_run=`.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ImportQuery {
    /// `nightshift` or `mem0`; detected from the body when absent. (A folder of Markdown
    /// notes is imported with the CLI.)
    pub format: Option<ImportFormat>,
    /// mem0: the user every item is imported for (else each item's own `user_id`).
    pub user: Option<String>,
    /// Check and count everything, write nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// Restore the body, an archive `GET /v1/export` or `nightshift export` wrote (or mem0's
/// `get_all` output), exactly as `nightshift import` does: ids kept, rows already present
/// counted, conflicts reported and skipped, bad or truncated input refused naming its
/// line with nothing written (400), one transaction per user, a user's limits kept (409).
/// An admin token only (403 for a user token). The body is read up to
/// `server.max_body_bytes` (413 past it): larger archives go through the CLI.
#[utoipa::path(post, path = "/v1/import", tag = "memory", params(ImportQuery),
    request_body(content = Vec<u8>, content_type = "application/octet-stream",
        description = "The archive (NDJSON) or mem0's JSON, as bytes; any Content-Type"),
    responses((status = 200, body = ImportReport), Failures),
    security(("bearer" = [])))]
async fn import(
    State(state): State<ApiState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<ImportQuery>,
    body: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Json<ImportReport>, ApiError> {
    let body = body.map_err(|rejection| {
        if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                rejection.status(),
                "too_large",
                "the body is larger than server.max_body_bytes; import larger archives with \
                 `nightshift import`",
            )
        } else {
            ApiError::bad_input(crate::input::printable(&rejection.body_text()).into_owned())
        }
    })?;
    // An archive is stored rows restored as they are (schedules with their state, note
    // histories, state counters): the operator's act, like `nightshift import`.
    caller.require_admin()?;
    if query.format == Some(ImportFormat::Markdown) {
        return Err(ApiError::bad_input(
            "format `markdown` reads a folder: import it with `nightshift import`",
        ));
    }
    let user = match query.user.as_deref() {
        Some(asked) => Some(caller.user_for(Some(asked))?),
        None => None,
    };
    // The library reads a file (twice: checked, then written): the body becomes one, in
    // the process's temp folder, removed when the request ends.
    // The body is already within the server's body limit: it is kept whole.
    let max = body.len();
    let file = tokio::task::spawn_blocking(move || crate::portable::spool(&body[..], max))
        .await
        .map_err(|e| {
            ApiError::new(
                axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                format!("the import's file writer failed: {e}"),
            )
        })??;
    let request = ImportRequest {
        path: file.path().to_path_buf(),
        format: query.format,
        user,
        dry_run: query.dry_run,
    };
    // On its own task: a client that goes away (or the request's time limit) must not
    // stop an import between a user's commit and the rebuild of that user's index.
    let portable = state.app.portable();
    let actor = caller.actor.clone();
    let report = tokio::spawn(async move {
        let report = portable.import(&actor, &request).await;
        drop(file);
        // The body was kept in a temporary file: its path says nothing to the caller,
        // and is the server's own.
        report.map_err(|err| match err {
            PortableError::File { reason, .. } => PortableError::File {
                what: "the request body".to_string(),
                reason,
            },
            other => other,
        })
    })
    .await
    .map_err(|e| {
        ApiError::new(
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!("the import failed: {e}"),
        )
    })??;
    Ok(Json(report))
}
