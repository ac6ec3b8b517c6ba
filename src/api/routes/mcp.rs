//! `/mcp`: the MCP server's streamable HTTP transport, behind the API's tokens, rate and
//! limits. A user token acts as its user; an admin token is refused, since an MCP session
//! acts for one user. A session id works only with the token that opened it, so an id
//! seen in a log is no way into someone else's session.

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

/// Sessions remembered before the oldest are forgotten. A forgotten session stays usable
/// by any token, each request still acting for its own token's user only.
const MAX_SESSIONS: usize = 10_000;
/// How long an idle session's owner is remembered once the table is full.
const SESSION_IDLE: Duration = Duration::from_secs(3600);

/// Which token opened each session, and when each was last used.
#[derive(Default)]
struct SessionOwners(Mutex<HashMap<String, (String, Instant)>>);

impl SessionOwners {
    /// False when the session belongs to another token.
    fn allows(&self, session: &str, token_id: &str) -> bool {
        let mut owners = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match owners.get_mut(session) {
            Some((owner, used)) if owner == token_id => {
                *used = Instant::now();
                true
            }
            Some(_) => false,
            None => true,
        }
    }

    fn opened(&self, session: String, token_id: String) {
        let mut owners = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if owners.len() >= MAX_SESSIONS {
            owners.retain(|_, (_, used)| used.elapsed() < SESSION_IDLE);
            if owners.len() >= MAX_SESSIONS {
                owners.clear();
            }
        }
        owners.insert(session, (token_id, Instant::now()));
    }

    fn closed(&self, session: &str) {
        let mut owners = self.0.lock().unwrap_or_else(|e| e.into_inner());
        owners.remove(session);
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
    if let Some(session) = &session {
        if !gate.owners.allows(session, &caller.token_id) {
            // As if it did not exist: the answer says nothing of another token's session.
            return ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such MCP session")
                .into_response();
        }
    }
    parts.extensions.insert(SessionUser(user.clone()));
    let ending = parts.method == Method::DELETE;
    let token_id = caller.token_id.clone();
    let mut response = next.run(Request::from_parts(parts, body)).await;
    // rmcp answers an ended session 202; the official SDK clients expect 200 or 204 and
    // warn otherwise. Nothing is left to happen later, so 204 says it truly.
    if ending && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_its_opening_tokens() {
        let owners = SessionOwners::default();
        assert!(
            owners.allows("s1", "a"),
            "an unknown session is rmcp's to refuse"
        );
        owners.opened("s1".into(), "a".into());
        assert!(owners.allows("s1", "a"));
        assert!(!owners.allows("s1", "b"));
        owners.closed("s1");
        assert!(owners.allows("s1", "b"));
    }
}
