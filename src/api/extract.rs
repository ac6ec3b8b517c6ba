//! Request extractors whose rejections are the API's JSON errors (axum's own answer in
//! plain text, which no client or OpenAPI schema expects).

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, OptionalFromRequest, Request};
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use serde::de::DeserializeOwned;

use super::error::ApiError;

/// A JSON body, read as its document describes it (`strict_json`): a record is an
/// object, an integer field takes `3.0`.
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let value =
            match <axum::Json<serde_json::Value> as FromRequest<S>>::from_request(req, state).await
            {
                Ok(axum::Json(value)) => value,
                Err(rejection) => return Err(json_rejection(rejection)),
            };
        crate::strict_json::from_value(value)
            .map(ApiJson)
            .map_err(|err| {
                let path = err.path().to_string();
                let at = if path == "." {
                    String::new()
                } else {
                    format!("{path}: ")
                };
                let message = format!("invalid body: {at}{}", err.into_inner());
                ApiError::bad_input(crate::input::printable(&message).into_owned())
            })
    }
}

/// An optional JSON body: none when the request has no body at all.
impl<S: Send + Sync, T: DeserializeOwned> OptionalFromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Option<Self>, ApiError> {
        let headers = req.headers();
        let has_body = match headers.get(header::CONTENT_LENGTH) {
            Some(length) => length.as_bytes() != b"0",
            None => headers.contains_key(header::TRANSFER_ENCODING),
        };
        if !has_body {
            return Ok(None);
        }
        <Self as FromRequest<S>>::from_request(req, state)
            .await
            .map(Some)
    }
}

fn json_rejection(rejection: JsonRejection) -> ApiError {
    let status = rejection.status();
    let text = crate::input::printable(&rejection.body_text()).into_owned();
    match status {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::new(
            status,
            "too_large",
            "the body is larger than server.max_body_bytes",
        ),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::new(
            status,
            "unsupported_media_type",
            "send the body as JSON (Content-Type: application/json)",
        ),
        _ => ApiError::bad_input(text),
    }
}

/// Query parameters.
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(value)) => Ok(ApiQuery(value)),
            Err(rejection) => Err(query_rejection(rejection)),
        }
    }
}

fn query_rejection(rejection: QueryRejection) -> ApiError {
    ApiError::bad_input(crate::input::printable(&rejection.body_text()).into_owned())
}

/// A path parameter.
pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(value)) => Ok(ApiPath(value)),
            Err(rejection) => Err(ApiError::bad_input(
                crate::input::printable(&rejection.body_text()).into_owned(),
            )),
        }
    }
}
