//! What wraps every request: a request id (answered in `X-Request-Id` and carried by the
//! request's log line), metrics by route and status, and JSON for every error answer, the
//! ones made outside a handler too (an unknown route, a method the route has not, a timeout).

use std::time::Instant;

use axum::body::Body;
use axum::extract::{MatchedPath, Request};
use axum::http::{header, HeaderName, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tower::{BoxError, ServiceBuilder};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};

use super::error::ApiError;

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Gives each request an id (unless the client sent one) and answers with it.
pub fn request_ids() -> ServiceBuilder<
    tower::layer::util::Stack<
        PropagateRequestIdLayer,
        tower::layer::util::Stack<SetRequestIdLayer<MakeRequestUuid>, tower::layer::util::Identity>,
    >,
> {
    ServiceBuilder::new()
        .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
        .layer(PropagateRequestIdLayer::new(REQUEST_ID))
}

/// A body announced larger than `max` is refused before any of it is read; one that
/// does not say its length is cut off by the extractors' own limit as it is read.
pub async fn refuse_large_bodies(
    axum::extract::State(max): axum::extract::State<usize>,
    request: Request,
    next: Next,
) -> Response {
    let announced = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|len| len > max as u64) {
        return ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            format!("the body is larger than server.max_body_bytes ({max})"),
        )
        .into_response();
    }
    next.run(request).await
}

/// An unknown route.
pub async fn no_route() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such route")
}

/// The limits' errors: over time or over capacity is 503; anything else is a fault.
pub async fn overloaded(err: BoxError) -> ApiError {
    if err.is::<tower::timeout::error::Elapsed>() {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "the request took longer than server.request_timeout_secs",
        )
    } else if err.is::<tower::load_shed::error::Overloaded>() {
        let mut err = ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "the server is at capacity (server.max_concurrent_requests); try again",
        );
        err.retry_after_secs = Some(1);
        err
    } else {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!("internal error: {err}"),
        )
    }
}

/// Logs the request with its id, counts it by route and status, and turns an error
/// answer that is not JSON into one.
pub async fn observe(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".to_string());
    let request_id = request
        .headers()
        .get(&REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let response = next.run(request).await;
    let response = ensure_json_error(response).await;
    let status = response.status();
    let took = started.elapsed();
    crate::telemetry::http_request(&route, method.as_str(), status.as_u16(), took);
    if status.is_server_error() {
        tracing::warn!(%request_id, %method, %route, status = status.as_u16(), took_ms = took.as_millis() as u64, "request");
    } else {
        tracing::info!(%request_id, %method, %route, status = status.as_u16(), took_ms = took.as_millis() as u64, "request");
    }
    response
}

/// Bytes of a non-JSON error body kept as the JSON error's message (the MCP transport
/// explains its refusals in plain text).
const MAX_TEXT_ERROR: usize = 1024;

/// An error answer whose body is neither JSON nor a dashboard page (axum's own 405, say)
/// becomes the API's JSON error with the same status, keeping a short plain-text
/// explanation as its message.
async fn ensure_json_error(response: Response) -> Response {
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    // JSON already, or the dashboard's own HTML error page.
    let keep = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json") || v.starts_with("text/html"));
    if keep {
        return response;
    }
    let (parts, body): (_, Body) = response.into_parts();
    let text = axum::body::to_bytes(body, MAX_TEXT_ERROR)
        .await
        .ok()
        .and_then(|bytes| String::from_utf8(bytes.to_vec()).ok())
        .map(|text| crate::input::printable(text.trim()).into_owned())
        .filter(|text| !text.is_empty());
    let (code, fallback) = match status {
        StatusCode::METHOD_NOT_ALLOWED => ("method_not_allowed", "this route has no such method"),
        StatusCode::PAYLOAD_TOO_LARGE => {
            ("too_large", "the body is larger than server.max_body_bytes")
        }
        StatusCode::NOT_FOUND => ("not_found", "no such route"),
        s if s.is_server_error() => ("unavailable", "the server cannot answer now"),
        _ => ("bad_input", "the request was not understood"),
    };
    let message = text.unwrap_or_else(|| fallback.to_string());
    let mut fixed = ApiError::new(status, code, message).into_response();
    for (name, value) in parts.headers.iter() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            fixed.headers_mut().insert(name.clone(), value.clone());
        }
    }
    fixed
}
