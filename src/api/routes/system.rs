//! The routes an operator's tools use without a token: liveness, readiness, metrics, and
//! the OpenAPI document. Loopback by default; see `docs/operations.md` on restricting
//! them when listening wider.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::api::ApiState;
use crate::app::status::Readiness;

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(healthz))
        .routes(routes!(readyz))
        .routes(routes!(metrics))
        .routes(routes!(openapi))
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Alive {
    pub alive: bool,
    pub version: String,
}

/// The process answers.
#[utoipa::path(get, path = "/healthz", tag = "system",
    responses((status = 200, body = Alive)))]
async fn healthz() -> Json<Alive> {
    Json(Alive {
        alive: true,
        version: env!("CARGO_PKG_VERSION").to_string(),
    })
}

/// 200 when the worker can serve: the database answers within a second, its schema is
/// this binary's, and the scheduler loop ticks. 503 otherwise, saying which check failed.
#[utoipa::path(get, path = "/readyz", tag = "system",
    responses(
        (status = 200, body = Readiness),
        (status = 503, description = "Not ready: the failed check says why", body = Readiness)))]
async fn readyz(State(state): State<ApiState>) -> (StatusCode, Json<Readiness>) {
    let readiness = state.app.readiness(state.worker_expected).await;
    let status = if readiness.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(readiness))
}

/// Metrics in the Prometheus text format.
#[utoipa::path(get, path = "/metrics", tag = "system",
    responses((status = 200, description = "Prometheus text format", content_type = "text/plain", body = String)))]
async fn metrics(State(state): State<ApiState>) -> Response {
    match state.app.gauges().await {
        Ok(gauges) => crate::telemetry::set_gauges(&gauges),
        Err(err) => tracing::warn!(%err, "cannot read the gauges for /metrics"),
    }
    let text = crate::telemetry::render().unwrap_or_default();
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response()
}

/// This API's OpenAPI 3.1 document, generated from its handlers.
#[utoipa::path(get, path = "/v1/openapi.json", tag = "system",
    responses((status = 200, description = "The OpenAPI document", content_type = "application/json", body = Object)))]
async fn openapi(State(state): State<ApiState>) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        state.openapi.as_ref().clone(),
    )
        .into_response()
}
