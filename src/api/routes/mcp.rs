//! `/mcp`: the MCP server's streamable HTTP transport, behind the API's tokens, rate and
//! limits. A user token acts as its user; an admin token is refused, since an MCP session
//! acts for one user. A session id works only with the token that opened it, so an id
//! seen in a log is no way into someone else's session; sessions are bounded in number,
//! overall and per token.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderName, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio_util::sync::CancellationToken;

use crate::access::Actor;
use crate::api::auth::authenticate;
use crate::api::error::ApiError;
use crate::api::ApiState;
use crate::mcp::SessionUser;

const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");

/// Sessions open at once, and per token.
const MAX_SESSIONS: usize = 10_000;
const MAX_SESSIONS_PER_TOKEN: usize = 64;
/// rmcp ends a session idle for its keep-alive (300 s); its owner is forgotten after twice
/// that, when nothing can reach it any more.
const SESSION_IDLE: Duration = Duration::from_secs(600);
/// rmcp's own answer for an unknown session, given for another token's too, so the two
/// cannot be told apart.
const NO_SESSION: &str = "Not Found: Session not found";

/// Which token opened each session, and when each was last used. Every session is opened
/// through this gate, so an id it does not know is refused: a session id alone, seen in a
/// log or guessed, opens nothing.
#[derive(Default)]
struct SessionOwners(Mutex<HashMap<String, (String, Instant)>>);

impl SessionOwners {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, Instant)>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// True when `token_id` opened the session (which counts as a use).
    fn owns(&self, session: &str, token_id: &str) -> bool {
        match self.lock().get_mut(session) {
            Some((owner, used)) if owner == token_id => {
                *used = Instant::now();
                true
            }
            _ => false,
        }
    }

    /// Whether `token_id` may open another session, after forgetting idle ones.
    fn has_room(&self, token_id: &str) -> bool {
        let mut owners = self.lock();
        if owners.len() >= MAX_SESSIONS
            || owners.values().filter(|(o, _)| o == token_id).count() >= MAX_SESSIONS_PER_TOKEN
        {
            owners.retain(|_, (_, used)| used.elapsed() < SESSION_IDLE);
        }
        owners.len() < MAX_SESSIONS
            && owners.values().filter(|(o, _)| o == token_id).count() < MAX_SESSIONS_PER_TOKEN
    }

    fn opened(&self, session: String, token_id: String) {
        self.lock().insert(session, (token_id, Instant::now()));
    }

    fn closed(&self, session: &str) {
        self.lock().remove(session);
    }
}

#[derive(Clone)]
struct Gate {
    api: ApiState,
    owners: Arc<SessionOwners>,
}

/// The `/mcp` routes on `state`; their event streams close when `stop` is cancelled.
pub fn router(state: &ApiState, stop: CancellationToken) -> axum::Router<ApiState> {
    let gate = Gate {
        api: state.clone(),
        owners: Arc::default(),
    };
    axum::Router::new()
        .nest_service("/mcp", crate::mcp::http_service(&state.app, stop))
        .layer(axum::middleware::from_fn_with_state(gate, authorize))
}

async fn authorize(State(gate): State<Gate>, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    let caller = match authenticate(&gate.api, &parts).await {
        Ok(caller) => caller,
        Err(err) => return err.into_response(),
    };
    let Actor::User(user) = &caller.actor else {
        return ApiError::forbidden(
            "an MCP session acts for one user: use a user token (nightshift token create \
             --user USER), not an admin token",
        )
        .into_response();
    };
    let session = parts
        .headers
        .get(&SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    // Only an `initialize` opens a session: a request without a session id that is not
    // one (a sessionless client's) must not be refused for the token's open sessions.
    let (opens, body) = if session.is_none() && parts.method == Method::POST {
        let limit = gate.api.app.config().server.max_body_bytes;
        match axum::body::to_bytes(body, limit).await {
            Ok(bytes) => (is_initialize(&bytes), axum::body::Body::from(bytes)),
            Err(_) => {
                return ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "too_large",
                    "the body is larger than server.max_body_bytes",
                )
                .into_response()
            }
        }
    } else {
        (false, body)
    };
    match &session {
        Some(session) if !gate.owners.owns(session, &caller.token_id) => {
            return ApiError::new(StatusCode::NOT_FOUND, "not_found", NO_SESSION).into_response();
        }
        None if opens && !gate.owners.has_room(&caller.token_id) => {
            let mut err = ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "too many MCP sessions are open; end some with DELETE /mcp",
            );
            err.retry_after_secs = Some(10);
            return err.into_response();
        }
        _ => {}
    }
    parts.extensions.insert(SessionUser(user.clone()));
    let ending = parts.method == Method::DELETE;
    let sent_json = parts
        .headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let token_id = caller.token_id.clone();
    let mut response = next.run(Request::from_parts(parts, body)).await;
    // rmcp answers an ended session 202; the official SDK clients expect 200 or 204 and
    // warn otherwise. Nothing is left to happen later, so 204 says it truly.
    if ending && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    // rmcp answers 415 for a JSON body it cannot decode (truncated, a batch of numbers) as
    // for one that is not JSON at all; the first is a bad request, and says so.
    if sent_json && response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        *response.status_mut() = StatusCode::BAD_REQUEST;
    }
    if let Some(opened) = response
        .headers()
        .get(&SESSION_ID)
        .and_then(|v| v.to_str().ok())
    {
        if session.as_deref() != Some(opened) {
            gate.owners.opened(opened.to_string(), token_id);
        }
    }
    if let (true, Some(session)) = (ending && response.status().is_success(), &session) {
        gate.owners.closed(session);
    }
    response
}

/// Whether a JSON-RPC body is an `initialize` request (alone, or in a batch).
fn is_initialize(body: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Call {
        method: Option<String>,
    }
    let initialize = |call: &Call| call.method.as_deref() == Some("initialize");
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(serde_json::Value::Array(calls)) => calls
            .into_iter()
            .filter_map(|c| serde_json::from_value::<Call>(c).ok())
            .any(|c| initialize(&c)),
        Ok(value) => serde_json::from_value::<Call>(value).is_ok_and(|c| initialize(&c)),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_its_opening_tokens_only() {
        let owners = SessionOwners::default();
        assert!(
            !owners.owns("s1", "a"),
            "an id the gate never saw opens nothing"
        );
        owners.opened("s1".into(), "a".into());
        assert!(owners.owns("s1", "a"));
        assert!(!owners.owns("s1", "b"));
        owners.closed("s1");
        assert!(!owners.owns("s1", "a"));
    }

    #[test]
    fn only_an_initialize_opens_a_session() {
        assert!(is_initialize(
            br#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#
        ));
        assert!(is_initialize(
            br#"[{"method":"ping"},{"method":"initialize"}]"#
        ));
        for other in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#[..],
            br#"{"method":5}"#,
            br#"not json"#,
            br#""#,
            br#"[1, 2]"#,
        ] {
            assert!(!is_initialize(other), "{}", String::from_utf8_lossy(other));
        }
    }

    #[test]
    fn a_token_holds_a_bounded_number_of_sessions() {
        let owners = SessionOwners::default();
        for i in 0..MAX_SESSIONS_PER_TOKEN {
            assert!(owners.has_room("a"));
            owners.opened(format!("s{i}"), "a".into());
        }
        assert!(
            !owners.has_room("a"),
            "live sessions are not forgotten to make room"
        );
        assert!(owners.has_room("b"));
        owners.closed("s0");
        assert!(owners.has_room("a"));
    }
}
