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
/// or a caller with the source's bearer token), checked by the source's scheme: 202 when
/// it started runs, one per schedule the source names (all or none); 200 when it was seen
/// before (nothing new starts) or is a handshake (Slack's URL check is answered with its
/// `challenge`; GitHub's ping starts nothing). 404 for an unknown source; 401 for a
/// missing or wrong signature or a timestamp outside the source's tolerance; 400 or 413
/// for a body that cannot be an input; none of them changes anything. A signed delivery
/// spends the source's rate (that of one token).
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
    let delivery = state
        .app
        .check_delivery(&name, &headers, &body)
        .map_err(|err| refusal(&name, err))?;
    // Only a delivery its sender signed spends the source's rate: a stranger's forgeries
    // cannot crowd out the sender's own.
    state
        .rate
        .check(&format!("source:{name}"))
        .map_err(|mut err| {
            err.message = "this source is over its rate (server.rate_per_token)".to_string();
            err
        })?;
    let received = state
        .app
        .start_delivery(delivery)
        .await
        .map_err(|err| refusal(&name, err))?;
    let status = if received.runs_started > 0 {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(received)))
}

/// The answer to a delivery that failed. A sender's delivery log is read by people who
/// need not be nightshift's users: what is about the worker (a secret it cannot read, the
/// state of a user's schedule) is logged and answered in general words.
fn refusal(name: &str, err: SourceError) -> ApiError {
    match err {
        SourceError::Refused(reason) => {
            tracing::warn!(source = %name, %reason, "delivery refused");
            ApiError::new(
                StatusCode::UNAUTHORIZED,
                "unauthenticated",
                format!("the delivery is refused: {reason}"),
            )
        }
        SourceError::TooLarge(reason) => {
            ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "too_large", reason)
        }
        SourceError::NotFound | SourceError::BadInput(_) => err.into(),
        SourceError::Secret { .. } => {
            tracing::error!(source = %name, error = %err, "cannot check a delivery");
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "this source cannot check deliveries now; its operator is told why",
            )
        }
        SourceError::NotSynced(_) | SourceError::Schedule(_) => {
            let kind = crate::error::Kind::kind(&err);
            tracing::warn!(source = %name, error = %err, "delivery not started");
            let (status, code) = ApiError::status_of(kind);
            let mut answer = ApiError::new(
                status,
                code,
                "a schedule of this source cannot take a run now; nothing was started, try again later",
            );
            if status == StatusCode::SERVICE_UNAVAILABLE {
                answer.retry_after_secs = Some(5);
            }
            answer
        }
    }
}
