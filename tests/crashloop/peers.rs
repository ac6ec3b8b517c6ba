//! The worker's peers on 127.0.0.1: an OpenAI-compatible endpoint whose model calls the
//! memory tools once and then answers with a text no other call gets, and a webhook that
//! records each delivery's idempotency key with the worker generation it came from.
//!
//! The model counts what it is asked, per attempt of a run: a run's first turn names no
//! run, so the model reads which run of the user's schedule is running, and its attempt,
//! from the database (`catch_up = "all"` keeps one run a schedule going at a time), and
//! names it in the ids of the tool calls it answers with, which the run's second turn
//! sends back. [`Sink::attempts`] is what the checks hold the runs to.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use axum::{Json, Router};
use nightshift::db::{Db, DbOptions, DbTarget, Queryable};
use serde_json::{json, Value};
use tokio::sync::watch;

/// One attempt of a run, as the model saw it.
#[derive(Clone, Debug, Default)]
pub struct Attempt {
    /// The worker generation of each first turn the model was asked (one, unless the
    /// attempt was asked twice).
    pub asked: Vec<u64>,
    /// The answers that ended the attempt's tool loop (`done N`), as given.
    pub answers: Vec<String>,
}

/// A run and attempt number.
pub type AttemptKey = (String, i64);

pub struct Sink {
    db: Db,
    /// Bumped each time a worker starts: two deliveries of one key by one worker are a
    /// double send; by two, a redelivery after a kill (at least once, as documented).
    generation: AtomicU64,
    /// Per idempotency key, the generation of each delivery.
    deliveries: Mutex<HashMap<String, Vec<u64>>>,
    /// Chat completions answered (tool-loop turns and summaries).
    pub chat_calls: AtomicU64,
    answers: AtomicU64,
    /// Per run and attempt, what the model was asked.
    attempts: Mutex<HashMap<AttemptKey, Attempt>>,
    /// First turns for which no run of the user's schedule was running.
    strays: Mutex<Vec<String>>,
    /// Attempts of the current generation asked and not yet answered; its value, how
    /// many (so the driver can await a run in the middle of its work).
    open: Mutex<HashSet<AttemptKey>>,
    open_count: watch::Sender<usize>,
}

impl Sink {
    pub fn next_generation(&self) {
        let mut open = self.open.lock().unwrap();
        self.generation.fetch_add(1, Ordering::SeqCst);
        open.clear();
        self.open_count.send_replace(0);
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    pub fn deliveries(&self) -> HashMap<String, Vec<u64>> {
        self.deliveries.lock().unwrap().clone()
    }

    pub fn attempts(&self) -> HashMap<AttemptKey, Attempt> {
        self.attempts.lock().unwrap().clone()
    }

    pub fn strays(&self) -> Vec<String> {
        self.strays.lock().unwrap().clone()
    }

    /// Waits until the model is answering an attempt of the current worker (asked for
    /// it, its last answer not yet given), at most `limit`; whether one is.
    pub async fn wait_mid_run(&self, limit: Duration) -> bool {
        let mut open = self.open_count.subscribe();
        tokio::time::timeout(limit, open.wait_for(|n| *n > 0))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// The running run of `user`'s schedule and its attempt.
    async fn running(&self, user: &str) -> Option<AttemptKey> {
        let conn = self.db.conn().await.ok()?;
        let mut rows = conn
            .query_rows(
                "SELECT r.run_id, r.attempt FROM schedule_runs r
                 JOIN schedules s ON s.schedule_id = r.schedule_id
                 WHERE s.user_id = ?1 AND r.status = 'running' AND r.event_id IS NULL",
                [user],
            )
            .await
            .unwrap_or_else(|e| panic!("the model's look-up: {e}"));
        let row = rows.next().await.ok()??;
        Some((row.get(0).ok()?, row.get(1).ok()?))
    }

    /// A first turn of `key`, from generation `generation`.
    fn asked(&self, key: &AttemptKey, generation: u64) {
        self.attempts
            .lock()
            .unwrap()
            .entry(key.clone())
            .or_default()
            .asked
            .push(generation);
        let mut open = self.open.lock().unwrap();
        if generation == self.generation() && open.insert(key.clone()) {
            self.open_count.send_replace(open.len());
        }
    }

    /// The answer that ends `key`'s tool loop.
    fn answered(&self, key: &AttemptKey, answer: &str) {
        self.attempts
            .lock()
            .unwrap()
            .entry(key.clone())
            .or_default()
            .answers
            .push(answer.to_string());
        let mut open = self.open.lock().unwrap();
        if open.remove(key) {
            self.open_count.send_replace(open.len());
        }
    }
}

/// The user a run's system prompt names ("… for user `u1`. …").
fn user_of(messages: &[Value]) -> Option<String> {
    let system = messages.first()?["content"].as_str()?;
    let rest = system.split_once("for user `")?.1;
    Some(rest.split_once('`')?.0.to_string())
}

/// The run and attempt a tool call's id names (`RUN/ATTEMPT/N`).
fn key_of(tool_call_id: &str) -> Option<AttemptKey> {
    let mut parts = tool_call_id.split('/');
    let run = parts.next()?.to_string();
    let attempt = parts.next()?.parse().ok()?;
    Some((run, attempt))
}

async fn chat(State(sink): State<Arc<Sink>>, Json(body): Json<Value>) -> Json<Value> {
    let generation = sink.generation();
    sink.chat_calls.fetch_add(1, Ordering::SeqCst);
    let n = sink.answers.fetch_add(1, Ordering::SeqCst);
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let tool_results: Vec<&Value> = messages.iter().filter(|m| m["role"] == "tool").collect();
    let message = if body.get("tools").is_none() {
        // A summary request (no tools offered).
        json!({"role": "assistant", "content": format!("summary {n}")})
    } else if tool_results.is_empty() {
        let user = user_of(&messages).unwrap_or_default();
        let key = match sink.running(&user).await {
            Some(key) => {
                sink.asked(&key, generation);
                key
            }
            None => {
                sink.strays.lock().unwrap().push(format!(
                    "the model was asked for user {user:?} (worker generation {generation}) \
                     while no run of theirs was running"
                ));
                ("stray".to_string(), 0)
            }
        };
        // The model thinks for a while, so kills land in the middle of runs too.
        tokio::time::sleep(Duration::from_millis(n % 5 * 100)).await;
        let call = |i: u32, name: &str, args: Value| {
            json!({"id": format!("{}/{}/{i}", key.0, key.1), "type": "function",
                   "function": {"name": name, "arguments": args.to_string()}})
        };
        json!({"role": "assistant", "content": null, "tool_calls": [
            call(1, "memory_search", json!({"query": "crashloop fact"})),
            call(2, "memory_save", json!({"content": format!("crashloop fact {n}")})),
        ]})
    } else {
        // Unique, so a run's output names the one answer its transcript must hold.
        let answer = format!("done {n}");
        if let Some(key) = tool_results[0]["tool_call_id"].as_str().and_then(key_of) {
            sink.answered(&key, &answer);
        }
        json!({"role": "assistant", "content": answer})
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

/// Starts both peers, the model reading runs from `database`; returns their base URL.
pub async fn start(database: &str) -> (String, Arc<Sink>) {
    let target = DbTarget::parse(database).unwrap();
    let sink = Arc::new(Sink {
        db: Db::open(&target, DbOptions::default()).await.unwrap(),
        generation: AtomicU64::new(0),
        deliveries: Mutex::default(),
        chat_calls: AtomicU64::new(0),
        answers: AtomicU64::new(0),
        attempts: Mutex::default(),
        strays: Mutex::default(),
        open: Mutex::default(),
        open_count: watch::Sender::new(0),
    });
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/hook", post(hook))
        .with_state(sink.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), sink)
}
