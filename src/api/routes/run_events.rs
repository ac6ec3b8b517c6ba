//! `GET /v1/runs/{run_id}/events`: a run's progress live, as Server-Sent Events. Each event
//! is `id: SEQ`, `event: KIND` (status, turn, tool_call, tool_result, end) and one line of
//! JSON data; the stream ends after `end`. A client that lost its connection sends the
//! last id it saw as `Last-Event-ID` and gets what came after; one that already saw the
//! end gets 204, which tells a browser's `EventSource` to stop reconnecting. Another
//! user's run is a missing one (404). Streams open at once are bounded (see
//! `api::stream_slots`), and one whose token is revoked ends within [`REAUTHORIZE`].

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::api::auth::Caller;
use crate::api::error::{ApiError, Failures};
use crate::api::extract::{ApiPath, ApiQuery};
use crate::api::stream_slots::{Full, StreamSlot, PER_CALLER};
use crate::api::types::UserQuery;
use crate::api::ApiState;
use crate::input::InputError;
use crate::schedule::progress::{parse_last_event_id, ProgressEvent, ProgressKind};
use crate::schedule::store::Follow;

/// How often an open stream checks that its caller may still follow it (a revoked token,
/// a dashboard session logged out).
pub const REAUTHORIZE: Duration = Duration::from_secs(30);

/// Whether a stream's caller may still follow it.
pub type Allowed = Arc<dyn Fn() -> BoxFuture<'static, bool> + Send + Sync>;

pub fn router() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(run_events))
}

/// Follow a run live: its progress so far (after `Last-Event-ID`), then each status change,
/// turn, tool call and result as it happens, then its end; as `text/event-stream`. 204
/// when the client already saw the end.
#[utoipa::path(get, path = "/v1/runs/{run_id}/events", tag = "schedules",
    params(("run_id" = String, Path), UserQuery,
        ("Last-Event-ID" = Option<String>, Header,
         description = "The id of the last event seen, to resume after it (a whole number)")),
    responses(
        (status = 200, content_type = "text/event-stream", body = ProgressFrame,
         description = "One SSE event per progress event; its data is the event as JSON"),
        (status = 204, description = "The client already saw the run's end"),
        Failures),
    security(("bearer" = [])))]
async fn run_events(
    State(state): State<ApiState>,
    caller: Caller,
    ApiPath(run_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<UserQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let actor = caller.actor_for(query.user.as_deref())?;
    let after = last_seen(&headers, None)?;
    let slot = stream_slot(&state, actor.user_id().unwrap_or("operator"))?;
    let follow = state.app.schedules().follow(&actor, &run_id, after).await?;
    let allowed: Allowed = {
        let (tokens, token_id) = (state.app.tokens().clone(), caller.token_id.clone());
        Arc::new(move || {
            let (tokens, token_id) = (tokens.clone(), token_id.clone());
            Box::pin(async move { tokens.is_usable(&token_id).await.unwrap_or(false) })
        })
    };
    Ok(match follow {
        Some(follow) => stream(follow, slot, state.stop.clone(), allowed, |event| {
            serde_json::to_string(event).unwrap_or_default()
        })
        .into_response(),
        None => StatusCode::NO_CONTENT.into_response(),
    })
}

/// One event of the stream as an SSE client parses it: `id` (the event's seq), `event`
/// (its kind) and `data`, the [`ProgressEvent`] as JSON text. The document describes the
/// frame, not the event inside it, since that is what a generated client and a checker
/// read from a `text/event-stream` response (OpenAPI 3.1 has no item schema for streams).
pub struct ProgressFrame;

impl PartialSchema for ProgressFrame {
    fn schema() -> RefOr<Schema> {
        let id = ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some("^[0-9]+$"))
            .description(Some(
                "The event's seq; sent back as `Last-Event-ID`, the stream resumes after it",
            ));
        let data = ObjectBuilder::new()
            .schema_type(Type::String)
            .content_media_type("application/json")
            .content_schema(Some(Ref::from_schema_name(ProgressEvent::name())))
            .description(Some("The progress event, as JSON"));
        ObjectBuilder::new()
            .property("id", id)
            .property("event", ProgressKind::schema())
            .property("data", data)
            .required("id")
            .required("event")
            .required("data")
            .into()
    }
}

impl ToSchema for ProgressFrame {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((ProgressEvent::name().into(), ProgressEvent::schema()));
        <ProgressEvent as ToSchema>::schemas(schemas);
    }
}

/// The id of the last event the client saw: its `Last-Event-ID` header (a reconnecting
/// `EventSource` sends it), else `fallback` (a page's first connection), else 0.
pub fn last_seen(headers: &HeaderMap, fallback: Option<&str>) -> Result<i64, InputError> {
    let header = match headers.get("last-event-id") {
        None => None,
        Some(value) => Some(value.to_str().map_err(|_| {
            InputError::new("Last-Event-ID", "is not text: ids are whole numbers from 0")
        })?),
    };
    header.or(fallback).map_or(Ok(0), parse_last_event_id)
}

/// A place for one more of `caller`'s open streams, held while it is open: 503 (try
/// again) when the server's are taken, 429 when the caller holds its share.
pub fn stream_slot(state: &ApiState, caller: &str) -> Result<StreamSlot, ApiError> {
    state.streams.take(caller).map_err(|full| {
        let mut err = match full {
            Full::Server => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "too many event streams are open (at most half the connections the server \
                 holds); try again",
            ),
            Full::Caller => ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                format!(
                    "you have {PER_CALLER} event streams open, the most one caller may; close \
                     one first"
                ),
            ),
        };
        err.retry_after_secs = Some(1);
        err
    })
}

/// The SSE response following `follow` until the run's end, an error, `stop` (the server
/// shutting down: a client reconnects with its last id) or its caller no longer
/// `allowed`, holding `slot` while it is open; each event's data is `render`'s.
pub fn stream(
    follow: Follow,
    slot: StreamSlot,
    stop: CancellationToken,
    allowed: Allowed,
    render: fn(&ProgressEvent) -> String,
) -> impl IntoResponse {
    let state = (follow, stop, slot, allowed);
    let events = futures_util::stream::unfold(state, move |state| async move {
        let (mut follow, stop, slot, allowed) = state;
        let next = loop {
            tokio::select! {
                next = follow.next() => break next,
                _ = stop.cancelled() => return None,
                // A read cut short here loses nothing: the view moves on only with what
                // it sent.
                _ = tokio::time::sleep(REAUTHORIZE) => {
                    if !allowed().await {
                        return None;
                    }
                }
            }
        };
        match next {
            Ok(Some(event)) => Some((
                Ok::<_, Infallible>(sse_event(&event, render)),
                (follow, stop, slot, allowed),
            )),
            Ok(None) => None,
            Err(err) => {
                // A run deleted while followed: the client's next try is told it is gone.
                tracing::debug!(%err, "a run's live view ended early");
                None
            }
        }
    });
    Sse::new(events).keep_alive(KeepAlive::default())
}

fn sse_event(event: &ProgressEvent, render: fn(&ProgressEvent) -> String) -> Event {
    Event::default()
        .id(event.seq.to_string())
        .event(event.kind.as_str())
        .data(render(event))
}
