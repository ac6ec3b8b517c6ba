//! A scripted OpenAI-compatible `/chat/completions` peer on 127.0.0.1:0: each request's
//! body is kept, and the handler answers the n-th request (from 1) as the test says.

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

type Handler = Arc<dyn Fn(usize, Value) -> Response + Send + Sync>;

/// The headers of each request a peer received, in order.
pub type SeenHeaders = Arc<Mutex<Vec<axum::http::HeaderMap>>>;

#[derive(Clone)]
struct Peer {
    seen: Arc<Mutex<Vec<Value>>>,
    headers: SeenHeaders,
    handler: Handler,
}

async fn answer(
    State(peer): State<Peer>,
    headers: axum::http::HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let n = {
        let mut seen = peer.seen.lock().unwrap();
        seen.push(body.clone());
        peer.headers.lock().unwrap().push(headers);
        seen.len()
    };
    (peer.handler)(n, body)
}

/// Serves `handler` at `path`; returns the base URL and the bodies it received.
pub async fn serve(
    path: &str,
    handler: impl Fn(usize, Value) -> Response + Send + Sync + 'static,
) -> (String, Arc<Mutex<Vec<Value>>>) {
    let (url, seen, _) = serve_keeping_headers(path, handler).await;
    (url, seen)
}

/// As [`serve`], also keeping each request's headers.
pub async fn serve_keeping_headers(
    path: &str,
    handler: impl Fn(usize, Value) -> Response + Send + Sync + 'static,
) -> (String, Arc<Mutex<Vec<Value>>>, SeenHeaders) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let headers = SeenHeaders::default();
    let peer = Peer {
        seen: seen.clone(),
        headers: headers.clone(),
        handler: Arc::new(handler),
    };
    let app = Router::new().route(path, post(answer)).with_state(peer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), seen, headers)
}

/// An answer that asks for one tool call.
pub fn tool_call(id: &str, name: &str, arguments: Value) -> Response {
    Json(
        json!({"choices": [{"message": {"role": "assistant", "content": null,
        "tool_calls": [{"id": id, "type": "function",
            "function": {"name": name, "arguments": arguments.to_string()}}]}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1}}),
    )
    .into_response()
}

/// A final answer.
pub fn final_answer(text: &str) -> Response {
    Json(
        json!({"choices": [{"message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1}}),
    )
    .into_response()
}

/// The content of the last `tool` message in a request body.
pub fn last_tool_result(body: &Value) -> String {
    body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "tool"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// The function names a request offered the model.
pub fn offered_tools(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}
