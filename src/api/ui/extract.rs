//! The dashboard's query strings and forms, read as axum reads them but refused as a page
//! (the dashboard's own error page, naming what was wrong, with the status axum gives),
//! not as the plain text axum answers with.

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use super::views;

/// A page's query string.
pub struct UiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for UiQuery<T> {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Response> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(value)) => Ok(UiQuery(value)),
            Err(rejection) => Err(refused(rejection.status(), &rejection.body_text())),
        }
    }
}

/// A form a page posts.
pub struct UiForm<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for UiForm<T> {
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Response> {
        match axum::extract::Form::<T>::from_request(request, state).await {
            Ok(axum::extract::Form(value)) => Ok(UiForm(value)),
            Err(rejection) => Err(refused(rejection.status(), &rejection.body_text())),
        }
    }
}

fn refused(status: axum::http::StatusCode, why: &str) -> Response {
    (status, views::error(&crate::input::printable(why))).into_response()
}
