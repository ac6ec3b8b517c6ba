//! Every error the API answers, as JSON `{"error": {"code", "message"}}` with the status a
//! client expects. Library errors map by kind, once; the API's own (no token, wrong scope,
//! too large, too many) are made here.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::error::{Error, ErrorKind};

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ErrorDetail {
    /// `bad_input`, `unauthenticated`, `forbidden`, `not_found`, `conflict`,
    /// `too_large`, `unsupported_media_type`, `rate_limited`, `unavailable`, `internal`…
    pub code: String,
    pub message: String,
}

/// The body of every error answer.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// The statuses any route may answer besides its own success, for the OpenAPI document.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
pub enum Failures {
    /// The request is malformed or a value is out of range; the message names the field.
    #[response(status = 400)]
    BadInput(ErrorBody),
    /// No token, or a token that is unknown, revoked or expired.
    #[response(status = 401)]
    Unauthenticated(ErrorBody),
    /// The token may not do this (a user token on an admin route).
    #[response(status = 403)]
    Forbidden(ErrorBody),
    /// No such thing, or not the caller's.
    #[response(status = 404)]
    NotFound(ErrorBody),
    /// Valid, but not in the present state.
    #[response(status = 409)]
    Conflict(ErrorBody),
    /// The body is larger than `server.max_body_bytes`.
    #[response(status = 413)]
    TooLarge(ErrorBody),
    /// The body is not JSON.
    #[response(status = 415)]
    UnsupportedMediaType(ErrorBody),
    /// Over the token's rate; `Retry-After` says when to come back.
    #[response(status = 429)]
    RateLimited(ErrorBody),
    #[response(status = 500)]
    Internal(ErrorBody),
    /// The database is out of reach, the server is at capacity, or the request ran out of
    /// time.
    #[response(status = 503)]
    Unavailable(ErrorBody),
}

#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub retry_after_secs: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            retry_after_secs: None,
        }
    }

    pub fn bad_input(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_input", message)
    }

    pub fn unauthenticated() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthenticated",
            "give a valid token: Authorization: Bearer nst_… (`nightshift token create`)",
        )
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    pub fn rate_limited(retry_after_secs: u64) -> Self {
        Self {
            retry_after_secs: Some(retry_after_secs),
            ..Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                "this token is over its rate (server.rate_per_token)",
            )
        }
    }

    /// The status and code an error of `kind` is answered with.
    pub fn status_of(kind: ErrorKind) -> (StatusCode, &'static str) {
        match kind {
            ErrorKind::BadInput => (StatusCode::BAD_REQUEST, "bad_input"),
            ErrorKind::NotFound => (StatusCode::NOT_FOUND, "not_found"),
            ErrorKind::Forbidden => (StatusCode::FORBIDDEN, "forbidden"),
            ErrorKind::Conflict => (StatusCode::CONFLICT, "conflict"),
            ErrorKind::Unavailable => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            ErrorKind::Config | ErrorKind::Internal => {
                (StatusCode::INTERNAL_SERVER_ERROR, "internal")
            }
        }
    }
}

impl<E: Into<Error>> From<E> for ApiError {
    fn from(err: E) -> Self {
        let err: Error = err.into();
        let (status, code) = Self::status_of(err.kind());
        if status.is_server_error() {
            tracing::error!(error = %err, "request failed");
        }
        Self::new(status, code, err.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code.to_string(),
                message: self.message,
            },
        };
        let mut response = (self.status, axum::Json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"nightshift\""),
            );
        }
        if let Some(secs) = self.retry_after_secs {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
        }
        response
    }
}
