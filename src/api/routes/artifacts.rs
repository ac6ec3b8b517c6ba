//! `/v1/artifacts`: files agents produced. Another user's artifact answers 404, exactly
//! as one that does not exist.

use axum::extract::State;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::api::auth::Caller;
use crate::api::error::{ApiError, Failures};
use crate::api::extract::{ApiPath, ApiQuery};
use crate::api::types::UserQuery;
use crate::api::ApiState;
use crate::artifact::{Artifact, ArtifactDeleted};

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(list_artifacts, put_artifact))
        .routes(routes!(get_artifact, delete_artifact))
        .routes(routes!(get_artifact_content))
}

/// `?user=&session=`: whose artifacts, and of which session.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ArtifactListQuery {
    /// With an admin token: the user to act for.
    pub user: Option<String>,
    /// Only this session's artifacts.
    pub session: Option<String>,
}

/// `?user=&session=&name=&type=`: where an uploaded artifact goes, and what it is.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ArtifactPutQuery {
    /// With an admin token: the user to act for.
    pub user: Option<String>,
    /// The session it belongs to (created on first use).
    pub session: String,
    /// Its file name (1 to 255 characters, no `/`).
    pub name: String,
    /// Its MIME type; the request's `Content-Type` when absent.
    #[serde(rename = "type")]
    #[param(rename = "type")]
    pub mime_type: Option<String>,
}

/// Store the request's body as an artifact (201). The body is read up to
/// `server.max_body_bytes` (413 past it); an artifact over `artifacts.max_artifact_bytes`
/// is 400, one past `artifacts.max_bytes_per_user` 409.
#[utoipa::path(post, path = "/v1/artifacts", tag = "artifacts", params(ArtifactPutQuery),
    request_body(content = Option<Vec<u8>>, content_type = "application/octet-stream",
        description = "The file's bytes; none is an empty file"),
    responses((status = 201, body = Artifact), Failures),
    security(("bearer" = [])))]
async fn put_artifact(
    State(state): State<ApiState>,
    caller: Caller,
    headers: axum::http::HeaderMap,
    ApiQuery(query): ApiQuery<ArtifactPutQuery>,
    body: Result<axum::body::Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<(axum::http::StatusCode, Json<Artifact>), ApiError> {
    let user = caller.user_for(query.user.as_deref())?;
    let body = body.map_err(|rejection| {
        if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                rejection.status(),
                "too_large",
                "the body is larger than server.max_body_bytes",
            )
        } else {
            ApiError::bad_input(crate::input::printable(&rejection.body_text()).into_owned())
        }
    })?;
    let mime_type = match query.mime_type {
        Some(mime_type) => mime_type,
        None => headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or(crate::artifact::DEFAULT_MIME_TYPE)
            .to_string(),
    };
    let artifact = crate::artifact::NewArtifact {
        name: query.name,
        mime_type,
        content: body.to_vec(),
    };
    let stored = state
        .app
        .artifacts()
        .put(&user, &query.session, None, &artifact)
        .await?;
    Ok((axum::http::StatusCode::CREATED, Json(stored)))
}

/// The user's artifacts, newest first.
#[utoipa::path(get, path = "/v1/artifacts", tag = "artifacts", params(ArtifactListQuery),
    responses((status = 200, body = Vec<Artifact>), Failures),
    security(("bearer" = [])))]
async fn list_artifacts(
    State(state): State<ApiState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<ArtifactListQuery>,
) -> Result<Json<Vec<Artifact>>, ApiError> {
    let user = caller.user_for(query.user.as_deref())?;
    let actor = caller.actor_for(Some(&user))?;
    let artifacts = state
        .app
        .artifacts()
        .list(&actor, &user, query.session.as_deref())
        .await?;
    Ok(Json(artifacts))
}

/// An artifact's metadata.
#[utoipa::path(get, path = "/v1/artifacts/{artifact_id}", tag = "artifacts",
    params(("artifact_id" = String, Path), UserQuery),
    responses((status = 200, body = Artifact), Failures),
    security(("bearer" = [])))]
async fn get_artifact(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(artifact_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<Artifact>, ApiError> {
    let actor = caller.actor_for(query.user.as_deref())?;
    Ok(Json(
        state.app.artifacts().metadata(&actor, &artifact_id).await?,
    ))
}

/// An artifact's bytes, with its MIME type and its name as the attachment's file name.
#[utoipa::path(get, path = "/v1/artifacts/{artifact_id}/content", tag = "artifacts",
    params(("artifact_id" = String, Path), UserQuery),
    responses((status = 200, description = "The bytes, as the artifact's MIME type",
        content_type = "*/*", body = Vec<u8>), Failures),
    security(("bearer" = [])))]
async fn get_artifact_content(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(artifact_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Response, ApiError> {
    let actor = caller.actor_for(query.user.as_deref())?;
    let (artifact, content) = state.app.artifacts().get(&actor, &artifact_id).await?;
    Ok(download(&artifact, content))
}

/// An artifact's bytes as a download: its MIME type, an attachment under its name, and
/// never sniffed as something else.
pub fn download(artifact: &Artifact, content: Vec<u8>) -> Response {
    let content_type = HeaderValue::from_str(&artifact.mime_type)
        .unwrap_or_else(|_| HeaderValue::from_static(crate::artifact::DEFAULT_MIME_TYPE));
    let disposition = HeaderValue::from_str(&content_disposition(&artifact.name))
        .unwrap_or_else(|_| HeaderValue::from_static("attachment"));
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CONTENT_DISPOSITION, disposition),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
        ],
        content,
    )
        .into_response()
}

/// `attachment` with the name twice (RFC 6266): an ASCII fallback with anything unsafe
/// replaced by `_`, and the exact name percent-encoded as UTF-8.
pub fn content_disposition(name: &str) -> String {
    let fallback = crate::artifact::ascii_file_name(name);
    let encoded =
        percent_encoding::utf8_percent_encode(name, percent_encoding::NON_ALPHANUMERIC).to_string();
    format!("attachment; filename=\"{fallback}\"; filename*=UTF-8''{encoded}")
}

/// Delete an artifact (its content too, when no other artifact shares it).
#[utoipa::path(delete, path = "/v1/artifacts/{artifact_id}", tag = "artifacts",
    params(("artifact_id" = String, Path), UserQuery),
    responses((status = 200, body = ArtifactDeleted), Failures),
    security(("bearer" = [])))]
async fn delete_artifact(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(artifact_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
) -> Result<Json<ArtifactDeleted>, ApiError> {
    let actor = caller.actor_for(query.user.as_deref())?;
    Ok(Json(
        state.app.artifacts().delete(&actor, &artifact_id).await?,
    ))
}
