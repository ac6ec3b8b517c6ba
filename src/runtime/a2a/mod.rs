//! A2A agents as a runtime (`[runtime] kind = "a2a"`): the goal is sent to the agent as a
//! message over JSON-RPC, and the task it starts is followed by polling until it ends.
//!
//! Two versions of the protocol are spoken, as the official SDKs do:
//! - 1.0 (the current one): methods `SendMessage`, `GetTask`, `CancelTask`, the header
//!   `A2A-Version: 1.0`, roles and states as `ROLE_USER` and `TASK_STATE_COMPLETED`, parts
//!   as `{"text"}`, `{"raw", "mediaType", "filename"}`, `{"url"}` or `{"data"}`;
//! - 0.3: methods `message/send`, `tasks/get`, `tasks/cancel`, `"user"` and `"completed"`,
//!   parts with a `kind` (`{"kind": "file", "file": {"bytes", "mimeType", "name"}}`).
//!
//! `runtime.url` is either the agent's JSON-RPC endpoint, spoken to in 1.0, or its agent
//! card (a URL whose path ends in `.json`): the card's JSON-RPC interface is used, 1.x
//! before 0.x, in the version it declares. Answers are read in either shape.
//!
//! The message carries the goal, the run's input and its memory context as text parts
//! (each marked in its metadata), `contextId` = the run's id, and the run and schedule
//! ids in its metadata; it asks to be answered at once (`returnImmediately`, 0.3's
//! `blocking: false`), and the task is then polled with `GetTask`, first at once, then
//! after 2 ms, doubling up to 2 s, until it ends. The run's deadline (the executor's
//! timeout) drops the future: a guard then cancels the task. Whenever the task is left
//! before it ended (a deadline, a failure to read an answer) it is canceled, best effort,
//! in the background.
//!
//! A task that asks for input (`input-required`, `auth-required`) makes the run wait, as
//! a tool call that needs approval does ([`crate::approval`]), under the name
//! [`AGENT_INPUT`] with the agent's question: approved, the reason given (or "Approved: go
//! ahead.") is sent to the task as the user's answer and the task is followed again;
//! denied, or unanswered in time, the task is canceled and the run fails saying so.

mod wire;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION};
use serde_json::{json, Value};
use wire::{
    collect_parts, join_texts, parse_parts, parse_task, pick_interface, reason, Part, State, Task,
};

use super::request::JsonClient;
use super::{AgentRuntime, GoalOutcome, GoalRequest, RuntimeError};
use crate::approval::{ApprovalState, Resume, WaitFor};
use crate::config::RuntimeConfig;
use crate::memory::{Memory, NewEvent, Role};

/// How long a resolved agent card is used before it is read again.
const CARD_TTL: Duration = Duration::from_secs(300);
/// The first pause between polls (after one at once), doubled up to [`MAX_POLL`].
const FIRST_POLL: Duration = Duration::from_millis(2);
const MAX_POLL: Duration = Duration::from_secs(2);
/// The name an agent's request for input waits under, as a tool call's would.
pub const AGENT_INPUT: &str = "a2a_agent_input";

/// The task a resumed run's agent waited on.
fn waiting_task(resume: &Resume) -> Option<&str> {
    resume.saved.get("task_id")?.as_str()
}

/// How long the background cancel of an abandoned task may take.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(10);

/// The protocol version an endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    V1,
    V03,
}

#[derive(Debug, Clone, Copy)]
enum Method {
    Send,
    Get,
    Cancel,
}

impl Dialect {
    fn method(self, method: Method) -> &'static str {
        match (self, method) {
            (Dialect::V1, Method::Send) => "SendMessage",
            (Dialect::V1, Method::Get) => "GetTask",
            (Dialect::V1, Method::Cancel) => "CancelTask",
            (Dialect::V03, Method::Send) => "message/send",
            (Dialect::V03, Method::Get) => "tasks/get",
            (Dialect::V03, Method::Cancel) => "tasks/cancel",
        }
    }

    /// `SendMessage`'s params answering a task that asked for input: `text`, in the task's
    /// context (the run's id).
    fn reply_params(
        self,
        request: &GoalRequest,
        message_id: &str,
        task_id: &str,
        text: &str,
    ) -> Value {
        let mut params = self.message_params(request, message_id, vec![("answer", text.into())]);
        params["message"]["taskId"] = json!(task_id);
        params
    }

    /// `SendMessage`'s params: the goal, its input and context as text parts.
    fn send_params(self, request: &GoalRequest, message_id: &str) -> Value {
        let mut texts = vec![("goal", request.goal.clone())];
        if let Some(input) = &request.input {
            texts.push(("input", format!("Input (what started this run):\n{input}")));
        }
        if !request.context.trim().is_empty() {
            texts.push((
                "context",
                format!(
                    "Context (what nightshift remembers for this user and schedule):\n{}",
                    request.context
                ),
            ));
        }
        self.message_params(request, message_id, texts)
    }

    /// `SendMessage`'s params: a user message of `texts` (each marked with what it is) in
    /// the run's context, asking to be answered at once.
    fn message_params(
        self,
        request: &GoalRequest,
        message_id: &str,
        texts: Vec<(&str, String)>,
    ) -> Value {
        let parts: Vec<Value> = texts
            .into_iter()
            .map(|(what, text)| {
                let mut part = json!({"text": text, "metadata": {"nightshift": what}});
                if self == Dialect::V03 {
                    part["kind"] = json!("text");
                }
                part
            })
            .collect();
        let mut message = json!({
            "messageId": message_id,
            "contextId": request.run_id,
            "role": if self == Dialect::V1 { "ROLE_USER" } else { "user" },
            "parts": parts,
            "metadata": {"nightshift": {
                "runId": request.run_id,
                "scheduleId": request.schedule_id,
            }},
        });
        let configuration = match self {
            Dialect::V1 => json!({"returnImmediately": true, "historyLength": 0}),
            Dialect::V03 => {
                message["kind"] = json!("message");
                json!({"blocking": false, "historyLength": 0})
            }
        };
        json!({"message": message, "configuration": configuration})
    }
}

/// Where the JSON-RPC requests go, and in which version.
#[derive(Debug, Clone)]
struct Endpoint {
    url: String,
    dialect: Dialect,
}

pub struct A2aRuntime {
    /// The configured URL: the endpoint, or the agent card when `card`.
    url: String,
    card: bool,
    client: JsonClient,
    auth_header_file: Option<String>,
    resolved: Mutex<Option<(Endpoint, Instant)>>,
    ids: Arc<AtomicU64>,
}

impl A2aRuntime {
    pub fn new(config: &RuntimeConfig) -> Result<Self, RuntimeError> {
        let parsed = reqwest::Url::parse(&config.url)
            .map_err(|e| RuntimeError::Config(format!("runtime.url is not a URL: {e}")))?;
        Ok(Self {
            url: config.url.clone(),
            card: parsed.path().ends_with(".json"),
            client: JsonClient::new(config, None)?,
            auth_header_file: config.auth_header_file.clone(),
            resolved: Mutex::new(None),
            ids: Arc::new(AtomicU64::new(1)),
        })
    }

    /// The Authorization header from `auth_header_file`, read now (so a rotated secret is
    /// used by the next run); its value is marked sensitive and never shown.
    fn auth_headers(&self) -> Result<HeaderMap, RuntimeError> {
        let mut headers = HeaderMap::new();
        let Some(file) = &self.auth_header_file else {
            return Ok(headers);
        };
        let path = crate::config::credential_path(file);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            RuntimeError::Config(format!(
                "cannot read runtime.auth_header_file {}: {e}",
                path.display()
            ))
        })?;
        let mut value = HeaderValue::from_str(text.trim()).map_err(|_| {
            RuntimeError::Config(format!(
                "runtime.auth_header_file {} does not hold one line of visible ASCII (an \
                 Authorization header value such as `Bearer …`)",
                path.display()
            ))
        })?;
        if value.is_empty() {
            return Err(RuntimeError::Config(format!(
                "runtime.auth_header_file {} is empty",
                path.display()
            )));
        }
        value.set_sensitive(true);
        headers.insert(AUTHORIZATION, value);
        Ok(headers)
    }

    /// The endpoint: the configured URL, or the one the agent card names (read again after
    /// [`CARD_TTL`]).
    async fn endpoint(&self, headers: &HeaderMap) -> Result<Endpoint, RuntimeError> {
        if !self.card {
            return Ok(Endpoint {
                url: self.url.clone(),
                dialect: Dialect::V1,
            });
        }
        if let Some((endpoint, at)) = self.resolved.lock().unwrap().as_ref() {
            if at.elapsed() < CARD_TTL {
                return Ok(endpoint.clone());
            }
        }
        let card = self.client.send(&self.url, None, headers).await?;
        let endpoint =
            pick_interface(&self.url, &card).map_err(|reason| RuntimeError::BadAnswer {
                url: self.url.clone(),
                reason: format!("agent card: {reason}"),
            })?;
        *self.resolved.lock().unwrap() = Some((endpoint.clone(), Instant::now()));
        Ok(endpoint)
    }

    async fn follow(
        &self,
        request: &GoalRequest,
        outcome: &mut GoalOutcome,
    ) -> Result<(), RuntimeError> {
        let mut headers = self.auth_headers()?;
        let endpoint = self.endpoint(&headers).await?;
        if endpoint.dialect == Dialect::V1 {
            headers.insert(
                HeaderName::from_static("a2a-version"),
                HeaderValue::from_static("1.0"),
            );
        }
        let peer = Peer {
            client: self.client.clone(),
            endpoint,
            headers,
            ids: self.ids.clone(),
        };
        let message_id = crate::ids::new_id(&request.run_id);
        let params = match request
            .resume
            .as_ref()
            .and_then(|r| Some((r, waiting_task(r)?)))
        {
            // The task waited for the user: an approval (with its reason, if given) is
            // the answer sent to it; a denial cancels it.
            Some((resume, task_id)) => {
                if !resume.approved() {
                    drop(CancelGuard(Some((peer.clone(), task_id.to_string()))));
                    let answer = match resume.state {
                        ApprovalState::Expired => "nobody answered in time".to_string(),
                        _ => format!(
                            "the user denied it ({}){}",
                            resume.decided_by,
                            resume
                                .reason
                                .as_deref()
                                .map(|r| format!(": {}", reason(r)))
                                .unwrap_or_default()
                        ),
                    };
                    return Err(RuntimeError::InputRefused {
                        url: peer.endpoint.url.clone(),
                        task_id: crate::input::printable(task_id).into_owned(),
                        answer,
                    });
                }
                let text = resume.reason.as_deref().unwrap_or("Approved: go ahead.");
                outcome
                    .transcript
                    .push(NewEvent::new(Role::User, text.to_string()));
                peer.endpoint
                    .dialect
                    .reply_params(request, &message_id, task_id, text)
            }
            None => peer.endpoint.dialect.send_params(request, &message_id),
        };
        let answer = peer.call(Method::Send, params).await?;
        let mut task = match peer.read_send_result(&answer)? {
            Sent::Message(parts) => {
                let mut texts = Vec::new();
                collect_parts(&parts, None, 0, &mut texts, outcome);
                outcome.output = join_texts(&texts, &outcome.output);
                return Ok(());
            }
            Sent::Task(task) => task,
        };
        // From here until the task ends, leaving (a deadline dropping this future, an
        // error) cancels it.
        let mut guard = CancelGuard(Some((peer.clone(), task.id.clone())));
        let mut pause = Duration::ZERO;
        loop {
            match task.state {
                State::Completed | State::Failed | State::Canceled | State::Rejected => break,
                State::InputRequired | State::AuthRequired => {
                    // The user answers, as for a tool call that needs approval; the task
                    // stays open at the agent meanwhile.
                    guard.0 = None;
                    outcome.output = task.status_text.clone();
                    outcome.wait = Some(WaitFor {
                        tool_name: AGENT_INPUT.to_string(),
                        arguments: json!({
                            "state": task.state.name(),
                            "question": reason(&task.status_text),
                            "task_id": crate::input::printable(&task.id),
                        })
                        .to_string(),
                        saved: json!({"task_id": task.id, "turns": outcome.turn_count}),
                    });
                    return Ok(());
                }
                State::Submitted | State::Working => {}
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).clamp(FIRST_POLL, MAX_POLL);
            let answer = peer
                .call(Method::Get, json!({"id": task.id, "historyLength": 1}))
                .await?;
            let next = parse_task(&answer).map_err(|reason| peer.bad(Method::Get, reason))?;
            if next.id != task.id {
                return Err(peer.bad(
                    Method::Get,
                    format!(
                        "asked for task `{}`, answered task `{}`",
                        crate::input::printable(&task.id),
                        crate::input::printable(&next.id)
                    ),
                ));
            }
            task = next;
        }
        guard.0 = None;
        let mut texts = Vec::new();
        for (i, artifact) in task.artifacts.iter().enumerate() {
            collect_parts(
                &artifact.parts,
                Some(artifact.name.as_deref()),
                i,
                &mut texts,
                outcome,
            );
        }
        if texts.is_empty() && !task.status_text.is_empty() {
            texts.push(task.status_text.clone());
        }
        if texts.is_empty() && task.state == State::Completed && !task.agent_text.is_empty() {
            texts.push(task.agent_text.clone());
        }
        outcome.output = join_texts(&texts, &outcome.output);
        if task.state == State::Completed {
            return Ok(());
        }
        Err(RuntimeError::TaskEnded {
            url: peer.endpoint.url.clone(),
            task_id: crate::input::printable(&task.id).into_owned(),
            state: task.state.name(),
            reason: if task.status_text.is_empty() {
                "the agent gave no reason".to_string()
            } else {
                reason(&task.status_text)
            },
        })
    }
}

#[async_trait]
impl AgentRuntime for A2aRuntime {
    async fn run_goal(&self, request: &GoalRequest, _memory: &Memory) -> GoalOutcome {
        // A resumed run's first turns are in its transcript already; each exchange with
        // the agent is a turn.
        let (transcript, turns) = match &request.resume {
            Some(resume) => (
                Vec::new(),
                resume.saved["turns"]
                    .as_i64()
                    .unwrap_or(1)
                    .saturating_add(1),
            ),
            None => (super::opening_turns(request), 1),
        };
        let mut outcome = GoalOutcome {
            transcript,
            turn_count: turns,
            ..Default::default()
        };
        if let Err(err) = self.follow(request, &mut outcome).await {
            outcome.error = Some(err);
        }
        if !outcome.output.trim().is_empty() {
            outcome
                .transcript
                .push(NewEvent::new(Role::Assistant, outcome.output.clone()));
        }
        outcome
    }
}

/// One endpoint as a JSON-RPC peer.
#[derive(Clone)]
struct Peer {
    client: JsonClient,
    endpoint: Endpoint,
    headers: HeaderMap,
    ids: Arc<AtomicU64>,
}

/// What `SendMessage` answered: a task to follow, or a message that is the whole answer.
enum Sent {
    Task(Task),
    Message(Vec<Part>),
}

impl Peer {
    fn bad(&self, method: Method, reason: impl Into<String>) -> RuntimeError {
        RuntimeError::BadAnswer {
            url: self.endpoint.url.clone(),
            reason: format!(
                "{}: {}",
                self.endpoint.dialect.method(method),
                reason.into()
            ),
        }
    }

    /// Calls `method` and returns its `result`, once the envelope is checked: JSON-RPC
    /// 2.0, the request's own id, a result or an error.
    async fn call(&self, method: Method, params: Value) -> Result<Value, RuntimeError> {
        let id = json!(self.ids.fetch_add(1, Ordering::Relaxed));
        let name = self.endpoint.dialect.method(method);
        let body = json!({"jsonrpc": "2.0", "id": id, "method": name, "params": params});
        let answer = self
            .client
            .send(&self.endpoint.url, Some(&body), &self.headers)
            .await?;
        let Value::Object(mut answer) = answer else {
            return Err(self.bad(method, "the answer is not a JSON-RPC response object"));
        };
        if answer.get("jsonrpc") != Some(&json!("2.0")) {
            return Err(self.bad(method, "the answer's `jsonrpc` is not \"2.0\""));
        }
        let answered_id = answer.get("id").cloned().unwrap_or(Value::Null);
        if let Some(error) = answer.get("error") {
            // A request the agent could not read is answered with id null.
            if answered_id == id || answered_id.is_null() {
                return Err(self.rpc_error(method, error));
            }
        }
        if answered_id != id {
            return Err(self.bad(
                method,
                format!(
                    "the answer is to request id {}, not {id}",
                    crate::text::truncate_chars(&answered_id.to_string(), 80)
                ),
            ));
        }
        match answer.remove("result") {
            Some(result) => Ok(result),
            None => Err(self.bad(method, "the answer has neither `result` nor `error`")),
        }
    }

    fn rpc_error(&self, method: Method, error: &Value) -> RuntimeError {
        let code = error.get("code").and_then(Value::as_i64);
        let message = error.get("message").and_then(Value::as_str);
        let (Some(code), Some(message)) = (code, message) else {
            return self.bad(method, "an `error` without an integer code and a message");
        };
        let mut message = reason(message);
        if code == -32601 && self.endpoint.dialect == Dialect::V1 {
            message.push_str(
                " (an agent of protocol 0.3 does not know the 1.0 method names: point \
                 runtime.url at its agent card, …/.well-known/agent-card.json)",
            );
        }
        RuntimeError::AgentError {
            url: self.endpoint.url.clone(),
            method: self.endpoint.dialect.method(method),
            code,
            message,
        }
    }

    /// `SendMessage`'s result: 1.0's `{"task"}` or `{"message"}`, or 0.3's task or
    /// message itself (told apart by `kind`).
    fn read_send_result(&self, result: &Value) -> Result<Sent, RuntimeError> {
        let bad = |reason: String| self.bad(Method::Send, reason);
        let (kind, value) = if let Some(task) = result.get("task") {
            ("task", task)
        } else if let Some(message) = result.get("message") {
            ("message", message)
        } else {
            match result.get("kind").and_then(Value::as_str) {
                Some("task") => ("task", result),
                Some("message") => ("message", result),
                _ => return Err(bad("the result is neither a task nor a message".to_string())),
            }
        };
        if kind == "task" {
            return parse_task(value).map(Sent::Task).map_err(bad);
        }
        parse_parts(value.get("parts"))
            .map(Sent::Message)
            .map_err(|reason| bad(format!("message: {reason}")))
    }
}

/// Cancels the task it holds when dropped, in the background: a run stopped by its
/// deadline (or any way out before the task ended) leaves no task working.
struct CancelGuard(Option<(Peer, String)>);

impl Drop for CancelGuard {
    fn drop(&mut self) {
        let Some((peer, task_id)) = self.0.take() else {
            return;
        };
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        handle.spawn(async move {
            let cancel = peer.call(Method::Cancel, json!({"id": task_id}));
            let url = peer.endpoint.url.clone();
            match tokio::time::timeout(CANCEL_TIMEOUT, cancel).await {
                Ok(Ok(_)) => tracing::info!(agent = %url, %task_id, "A2A task canceled"),
                Ok(Err(err)) => {
                    tracing::warn!(agent = %url, %task_id, %err, "cannot cancel the A2A task")
                }
                Err(_) => {
                    tracing::warn!(agent = %url, %task_id, "canceling the A2A task timed out")
                }
            }
        });
    }
}
