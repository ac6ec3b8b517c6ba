//! The worker's peers on 127.0.0.1: an OpenAI-compatible endpoint whose model calls the
//! memory tools once and then answers with a text no other call gets, and a webhook that
//! records each delivery's idempotency key with the worker generation it came from.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

#[derive(Default)]
pub struct Sink {
    /// Bumped each time a worker starts: two deliveries of one key by one worker are a
    /// double send; by two, a redelivery after a kill (at least once, as documented).
    generation: AtomicU64,
    /// Per idempotency key, the generation of each delivery.
    deliveries: Mutex<HashMap<String, Vec<u64>>>,
    /// Chat completions answered (tool-loop turns and summaries).
    pub chat_calls: AtomicU64,
    answers: AtomicU64,
}

impl Sink {
    pub fn next_generation(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    pub fn deliveries(&self) -> HashMap<String, Vec<u64>> {
        self.deliveries.lock().unwrap().clone()
    }
}

async fn chat(State(sink): State<Arc<Sink>>, Json(body): Json<Value>) -> Json<Value> {
    sink.chat_calls.fetch_add(1, Ordering::SeqCst);
    let n = sink.answers.fetch_add(1, Ordering::SeqCst);
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let tool_results = messages.iter().filter(|m| m["role"] == "tool").count();
    let message = if body.get("tools").is_none() {
        // A summary request (no tools offered).
        json!({"role": "assistant", "content": format!("summary {n}")})
    } else if tool_results == 0 {
        // The model thinks for a while, so kills land in the middle of runs too.
        tokio::time::sleep(std::time::Duration::from_millis(n % 5 * 100)).await;
        let call = |id: &str, name: &str, args: Value| {
            json!({"id": id, "type": "function",
                   "function": {"name": name, "arguments": args.to_string()}})
        };
        json!({"role": "assistant", "content": null, "tool_calls": [
            call("c1", "memory_search", json!({"query": "crashloop fact"})),
            call("c2", "memory_save", json!({"content": format!("crashloop fact {n}")})),
        ]})
    } else {
        // Unique, so a run's output names the one answer its transcript must hold.
        json!({"role": "assistant", "content": format!("done {n}")})
    };
    Json(json!({
        "choices": [{"message": message}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2}
    }))
}

async fn hook(State(sink): State<Arc<Sink>>, headers: HeaderMap) -> &'static str {
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let generation = sink.generation.load(Ordering::SeqCst);
    sink.deliveries
        .lock()
        .unwrap()
        .entry(key)
        .or_default()
        .push(generation);
    "ok"
}

/// Starts both peers; returns their base URL.
pub async fn start() -> (String, Arc<Sink>) {
    let sink = Arc::new(Sink::default());
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/hook", post(hook))
        .with_state(sink.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), sink)
}
