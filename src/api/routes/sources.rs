//! `/v1/sources/{name}`: deliveries from senders outside nightshift (`[sources.NAME]`),
//! proven by the sender's own signature instead of a nightshift token.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::api::error::{ApiError, Failures};
use crate::api::extract::ApiPath;
use crate::api::ApiState;
use crate::app::Received;
use crate::sources::SourceError;

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(receive))
}

/// A delivery from a configured source (GitHub, Stripe, Slack, a Standard Webhooks sender,
/// or a caller with the source's bearer token), checked by the source's scheme: 202 with
/// the runs it started, one per schedule the source names; 200 when the sender's delivery
/// id was seen before (nothing new starts) or for a handshake (Slack's URL check is
/// answered with its `challenge`; GitHub's ping starts nothing). An unknown source is 404;
/// a missing or wrong signature, or a timestamp outside the source's tolerance, is 401;
/// neither changes anything. Each source has the rate of one token.
#[utoipa::path(post, path = "/v1/sources/{name}", tag = "sources",
    params(("name" = String, Path, description = "The source's name in `[sources]`")),
    request_body(content = String, description = "The sender's body, as it signed it"),
    responses((status = 202, body = Received), (status = 200, body = Received), Failures))]
async fn receive(
    State(state): State<ApiState>,
    ApiPath(name): ApiPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<Received>), ApiError> {
    if !state.app.config().sources.contains_key(&name) {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            "no such source",
        ));
    }
    state
        .rate
        .check(&format!("source:{name}"))
        .map_err(|mut err| {
            err.message = "this source is over its rate (server.rate_per_token)".to_string();
            err
        })?;
    match state.app.receive_delivery(&name, &headers, &body).await {
        Ok(received) => {
            let status = if received.runs.is_empty() || received.all_seen_before() {
                StatusCode::OK
            } else {
                StatusCode::ACCEPTED
            };
            Ok((status, Json(received)))
        }
        Err(SourceError::Refused(reason)) => {
            tracing::warn!(source = %name, %reason, "delivery refused");
            Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "unauthenticated",
                format!("the delivery is refused: {reason}"),
            ))
        }
        Err(SourceError::TooLarge(reason)) => Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            reason,
        )),
        Err(err) => Err(err.into()),
    }
}
