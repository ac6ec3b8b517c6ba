//! Any OpenAI-compatible `/chat/completions` endpoint, with nightshift running the tool
//! loop: the model may call the memory tools until it answers, within `max_turns` and
//! `max_cost`.

use std::collections::VecDeque;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::request::JsonClient;
use super::schedule_tools::{self, Asker, ScheduleTools};
use super::{hints, tools, AgentRuntime, GoalOutcome, GoalRequest, RuntimeError};
use crate::approval::{Resume, WaitFor};
use crate::config::RuntimeConfig;
use crate::mcp_client::{McpTools, Offered, ToolFilter};
use crate::memory::{Memory, NewEvent, Role};
use crate::traces::SpanScope;
use opentelemetry::context::FutureExt as _;
use opentelemetry::trace::SpanKind;
use opentelemetry::KeyValue;

/// A completion's text, the tokens its answer reports, and their cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub text: String,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub cost: f64,
}

pub struct OpenAiRuntime {
    url: String,
    model: String,
    client: JsonClient,
    prompt_price: f64,
    completion_price: f64,
    max_tool_calls_per_turn: usize,
    max_tool_calls_per_run: usize,
    max_tool_arguments_bytes: usize,
    macro_hint_min_confidence: f64,
    /// Tools from the configured MCP servers, offered to the users granted them.
    mcp: McpTools,
    /// The schedule tools, when the operator lets agents make schedules.
    schedules: Option<ScheduleTools>,
}

/// Most tokens one answer may report using; more (or fewer than none) makes it a bad
/// answer rather than a cost.
const MAX_TOKENS_PER_ANSWER: i64 = 100_000_000;

/// The usage an answer reports, checked: absent counts are 0, negative, fractional or
/// absurd ones are refused.
fn usage(answer: &Value) -> Result<(i64, i64), String> {
    let count = |name: &str| -> Result<i64, String> {
        match &answer["usage"][name] {
            serde_json::Value::Null => Ok(0),
            value => value
                .as_i64()
                .filter(|n| (0..=MAX_TOKENS_PER_ANSWER).contains(n))
                .ok_or_else(|| {
                    format!(
                        "usage.{name} is {value}, not a count from 0 to {MAX_TOKENS_PER_ANSWER}"
                    )
                }),
        }
    };
    Ok((count("prompt_tokens")?, count("completion_tokens")?))
}

impl OpenAiRuntime {
    pub fn new(config: &RuntimeConfig) -> Result<Self, RuntimeError> {
        let key = match &config.api_key_env {
            Some(var) => Some(std::env::var(var).map_err(|_| {
                RuntimeError::Config(format!(
                    "runtime.api_key_env names `{var}`, which is not set"
                ))
            })?),
            None => None,
        };
        Ok(Self {
            url: format!("{}/chat/completions", config.base_url.trim_end_matches('/')),
            model: config.model.clone(),
            client: JsonClient::new(config, key)?,
            prompt_price: config.prompt_price_per_mtok / 1e6,
            completion_price: config.completion_price_per_mtok / 1e6,
            max_tool_calls_per_turn: config.max_tool_calls_per_turn,
            max_tool_calls_per_run: config.max_tool_calls_per_run,
            max_tool_arguments_bytes: config.max_tool_arguments_bytes,
            macro_hint_min_confidence: config.macro_hint_min_confidence,
            mcp: McpTools::default(),
            schedules: None,
        })
    }

    /// The same runtime, offering the schedule tools (unless their policy is off).
    pub fn with_schedule_tools(mut self, tools: ScheduleTools) -> Self {
        self.schedules = Some(tools);
        self
    }

    /// The same runtime, offering the tools of the MCP servers each user is granted.
    pub fn with_mcp_tools(mut self, mcp: McpTools) -> Self {
        self.mcp = mcp;
        self
    }

    /// One completion without tools: the model's answer to `prompt` under `system`.
    pub async fn complete(&self, system: &str, prompt: &str) -> Result<String, RuntimeError> {
        Ok(self.complete_with_usage(system, prompt).await?.text)
    }

    /// As [`OpenAiRuntime::complete`], with the tokens the answer reports and their cost.
    pub async fn complete_with_usage(
        &self,
        system: &str,
        prompt: &str,
    ) -> Result<Completion, RuntimeError> {
        let body = json!({
            "model": self.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": prompt},
            ],
        });
        let answer = self.client.post(&self.url, &body).await?;
        let (prompt_tokens, completion_tokens) =
            usage(&answer).map_err(|reason| self.bad(reason))?;
        let text = answer["choices"][0]["message"]["content"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| self.bad("no choices[0].message.content"))?;
        Ok(Completion {
            text,
            prompt_tokens,
            completion_tokens,
            cost: self.cost(prompt_tokens, completion_tokens),
        })
    }

    fn bad(&self, reason: impl Into<String>) -> RuntimeError {
        RuntimeError::BadAnswer {
            url: self.url.clone(),
            reason: reason.into(),
        }
    }
}

/// What the loop keeps when a call waits for approval, to go on from that call once it is
/// answered (stored with the approval as JSON).
#[derive(Debug, Serialize, Deserialize)]
struct Paused {
    messages: Vec<Value>,
    /// This turn's calls not made yet; the first is the one waiting.
    pending: Vec<Value>,
    /// All of this turn's calls, for the macro hint after them.
    turn_calls: Vec<Value>,
    turn_count: i64,
    prompt_tokens: i64,
    completion_tokens: i64,
    tool_calls: usize,
}

/// The tool loop's place: the conversation, the calls of this turn still to make.
struct Place {
    messages: Vec<Value>,
    pending: VecDeque<Value>,
    turn_calls: Vec<Value>,
    tool_calls: usize,
}

impl OpenAiRuntime {
    /// Where a fresh run starts: the system prompt with its context, the goal, its input,
    /// and why any granted MCP server offers no tools.
    fn opening(&self, request: &GoalRequest, mcp: &Offered, outcome: &mut GoalOutcome) -> Place {
        outcome.transcript = super::opening_turns(request);
        let system = format!(
            "You are carrying out a scheduled task for user `{}`. Use the memory tools to look \
             up or record what matters. Answer with the result of the task.\n\n{}",
            request.user_id, request.context
        );
        let mut messages = vec![
            json!({"role": "system", "content": system}),
            json!({"role": "user", "content": request.goal}),
        ];
        // What started the run, after the goal it is input to.
        if let Some(input) = &request.input {
            messages.push(json!({"role": "user", "content": input}));
        }
        for reason in &mcp.unavailable {
            // The run goes on with the tools it has; the model and the transcript know why
            // the others are missing.
            messages.push(json!({"role": "system", "content": reason}));
            outcome
                .transcript
                .push(NewEvent::new(Role::System, reason.clone()));
        }
        Place {
            messages,
            pending: VecDeque::new(),
            turn_calls: Vec::new(),
            tool_calls: 0,
        }
    }

    /// Where a resumed run goes on: the place it kept, its counters restored, the answer
    /// noted in the transcript. `None` when what it kept cannot be read (it starts over).
    fn resumed(&self, resume: &Resume, outcome: &mut GoalOutcome) -> Option<Place> {
        let paused: Paused = serde_json::from_value(resume.saved.clone())
            .map_err(|err| tracing::warn!(approval_id = %resume.approval_id, %err, "what the paused run kept cannot be read; starting it over"))
            .ok()
            .filter(|p: &Paused| !p.pending.is_empty())?;
        outcome.turn_count = paused.turn_count;
        outcome.prompt_tokens = paused.prompt_tokens;
        outcome.completion_tokens = paused.completion_tokens;
        outcome.cost = self.cost(paused.prompt_tokens, paused.completion_tokens);
        let by = match resume.decided_by.as_str() {
            "" => String::new(),
            by => format!(" ({by})"),
        };
        outcome.transcript.push(NewEvent::new(
            Role::System,
            format!(
                "approval {} of the call to {}: {}{by}",
                resume.approval_id,
                paused.pending[0]["function"]["name"]
                    .as_str()
                    .unwrap_or_default(),
                resume.state
            ),
        ));
        Some(Place {
            messages: paused.messages,
            pending: paused.pending.into(),
            turn_calls: paused.turn_calls,
            tool_calls: paused.tool_calls,
        })
    }

    fn cost(&self, prompt_tokens: i64, completion_tokens: i64) -> f64 {
        prompt_tokens as f64 * self.prompt_price + completion_tokens as f64 * self.completion_price
    }

    /// Whether `call` must wait for the user's approval: a tool the run is offered whose
    /// name the schedule's or its server's `approve` patterns match. A call that would
    /// fail anyway (an unknown tool, arguments over the limit) fails without asking.
    fn needs_approval(&self, request: &GoalRequest, mcp: &Offered, call: &Value) -> bool {
        let name = call["function"]["name"].as_str().unwrap_or_default();
        let arguments = call["function"]["arguments"].as_str().unwrap_or("{}");
        // Refused outright in a run seeing memory as it was: nobody need approve it.
        if let Some(at) = request.memory_as_of {
            if tools::refused_as_of(name, at).is_some() {
                return false;
            }
        }
        let offered = tools::NAMES.contains(&name)
            || mcp.names.iter().any(|n| n == name)
            || self.schedule_tools(name).is_some();
        offered
            && arguments.len() <= self.max_tool_arguments_bytes
            && self.mcp.needs_approval(name, &request.approve)
    }

    /// The schedule tools, when `name` is one of them and they are offered.
    fn schedule_tools(&self, name: &str) -> Option<&ScheduleTools> {
        self.schedules
            .as_ref()
            .filter(|s| !s.definitions().is_empty() && schedule_tools::NAMES.contains(&name))
    }

    /// The span of one call of the model (`chat`, after the GenAI conventions).
    fn chat_span(&self) -> SpanScope {
        SpanScope::start(
            format!("chat {}", self.model),
            SpanKind::Client,
            vec![
                KeyValue::new("gen_ai.operation.name", "chat"),
                KeyValue::new("gen_ai.provider.name", "openai"),
                KeyValue::new("gen_ai.request.model", self.model.clone()),
            ],
        )
    }

    /// [`Self::call_tool`] in its span (`execute_tool`, after the GenAI conventions): what
    /// the tool does (a search, an MCP call) nests under it.
    async fn traced_call(
        &self,
        request: &GoalRequest,
        memory: &Memory,
        mcp: &Offered,
        call: &Value,
    ) -> String {
        let name = call["function"]["name"].as_str().unwrap_or_default();
        let span = SpanScope::start(
            format!("execute_tool {name}"),
            SpanKind::Internal,
            vec![
                KeyValue::new("gen_ai.operation.name", "execute_tool"),
                KeyValue::new("gen_ai.tool.name", name.to_string()),
                KeyValue::new(
                    "gen_ai.tool.call.id",
                    call["id"].as_str().unwrap_or_default().to_string(),
                ),
                KeyValue::new("gen_ai.tool.type", "function"),
            ],
        );
        let result = self
            .call_tool(request, memory, mcp, call)
            .with_context(span.context().clone())
            .await;
        // Every tool answers an error as `{"error": …}`.
        if let Some(error) = serde_json::from_str::<Value>(&result)
            .ok()
            .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_string))
        {
            span.fail("tool_error", error);
        }
        span.end();
        result
    }

    /// Makes one call the model asked for; the result (or the error) as JSON for it.
    async fn call_tool(
        &self,
        request: &GoalRequest,
        memory: &Memory,
        mcp: &Offered,
        call: &Value,
    ) -> String {
        let name = call["function"]["name"].as_str().unwrap_or_default();
        let arguments = call["function"]["arguments"].as_str().unwrap_or("{}");
        if let Some(at) = request.memory_as_of {
            if let Some(refused) = tools::refused_as_of(name, at) {
                return json!({ "error": refused }).to_string();
            }
        }
        if let Some(schedules) = self.schedule_tools(name) {
            let asker = Asker {
                user_id: &request.user_id,
                schedule_id: &request.schedule_id,
                run_id: &request.run_id,
            };
            return match serde_json::from_str::<Value>(arguments) {
                _ if arguments.len() > self.max_tool_arguments_bytes => json!({
                    "error": "arguments are over runtime.max_tool_arguments_bytes"
                }),
                Ok(args) => schedules.call(&asker, name, &args).await,
                Err(e) => json!({"error": format!("arguments are not JSON: {e}")}),
            }
            .to_string();
        }
        if self.mcp.owns(name) {
            if arguments.len() > self.max_tool_arguments_bytes {
                return json!({"error": format!(
                    "arguments are {} bytes, over the limit of {} bytes \
                     (runtime.max_tool_arguments_bytes)",
                    arguments.len(),
                    self.max_tool_arguments_bytes
                )})
                .to_string();
            }
            return self.mcp.call(&request.user_id, mcp, name, arguments).await;
        }
        let scope = tools::ToolScope {
            user_id: &request.user_id,
            session_id: &request.session_id,
            run_id: &request.run_id,
            memory_as_of: request.memory_as_of,
        };
        tools::call(
            memory,
            &scope,
            name,
            arguments,
            self.max_tool_arguments_bytes,
        )
        .await
    }
}

#[async_trait]
impl AgentRuntime for OpenAiRuntime {
    async fn run_goal(&self, request: &GoalRequest, memory: &Memory) -> GoalOutcome {
        let mut outcome = GoalOutcome::default();
        // A run seeing memory as it was reads that memory and acts on nothing: no MCP
        // server's tools, no schedule tools.
        let mcp = if request.memory_as_of.is_some() {
            Offered::default()
        } else {
            self.mcp
                .offered(&request.user_id, &ToolFilter::new(request.tools.clone()))
                .await
        };
        // The answer a resumed run waited for: it decides the first call still to make.
        let mut answer = request.resume.as_ref();
        let mut place = match answer.and_then(|resume| self.resumed(resume, &mut outcome)) {
            Some(place) => place,
            None => {
                answer = None;
                self.opening(request, &mcp, &mut outcome)
            }
        };
        let mut tools = tools::definitions_for(request.memory_as_of);
        if let Some(list) = tools
            .as_array_mut()
            .filter(|_| request.memory_as_of.is_none())
        {
            if let Some(schedules) = &self.schedules {
                list.extend(schedules.definitions());
            }
            list.extend(mcp.definitions.iter().cloned());
        }
        loop {
            // This turn's calls, in order. One that needs approval pauses the run here,
            // keeping the place; the answer makes it (or tells the model it may not).
            while let Some(call) = place.pending.front().cloned() {
                let name = call["function"]["name"].as_str().unwrap_or_default();
                let arguments = call["function"]["arguments"].as_str().unwrap_or("{}");
                let result = match answer.take() {
                    Some(resume) if !resume.approved() => resume.refusal().to_string(),
                    Some(_) => {
                        request.progress.tool_call(name, arguments).await;
                        self.traced_call(request, memory, &mcp, &call).await
                    }
                    None if self.needs_approval(request, &mcp, &call) => {
                        let paused = Paused {
                            messages: std::mem::take(&mut place.messages),
                            pending: place.pending.drain(..).collect(),
                            turn_calls: std::mem::take(&mut place.turn_calls),
                            turn_count: outcome.turn_count,
                            prompt_tokens: outcome.prompt_tokens,
                            completion_tokens: outcome.completion_tokens,
                            tool_calls: place.tool_calls,
                        };
                        outcome.wait = Some(WaitFor {
                            tool_name: name.to_string(),
                            arguments: arguments.to_string(),
                            saved: serde_json::to_value(&paused).unwrap_or(Value::Null),
                        });
                        return outcome;
                    }
                    None => {
                        request.progress.tool_call(name, arguments).await;
                        self.traced_call(request, memory, &mcp, &call).await
                    }
                };
                request.progress.tool_result(name, &result).await;
                place.pending.pop_front();
                let id = call["id"].as_str().unwrap_or_default();
                let mut event = NewEvent::new(Role::Tool, result.clone());
                event.payload = Some(json!({"tool_call_id": id, "name": name}));
                outcome.transcript.push(event);
                place
                    .messages
                    .push(json!({"role": "tool", "tool_call_id": id, "content": result}));
            }
            // Hints read today's macros: not for a run seeing memory as it was.
            if !place.turn_calls.is_empty() && request.memory_as_of.is_none() {
                let calls = std::mem::take(&mut place.turn_calls);
                let hint = hints::after_calls(
                    memory,
                    &request.user_id,
                    &calls,
                    self.macro_hint_min_confidence,
                );
                if let Some(hint) = hint.await {
                    place
                        .messages
                        .push(json!({"role": "system", "content": hint}));
                }
            }
            if outcome.turn_count >= request.max_turns {
                outcome.error = Some(RuntimeError::TooManyTurns {
                    turns: outcome.turn_count,
                });
                return outcome;
            }
            outcome.turn_count += 1;
            let body = json!({"model": self.model, "messages": place.messages, "tools": tools});
            let chat = self.chat_span();
            let answer = match self
                .client
                .post(&self.url, &body)
                .with_context(chat.context().clone())
                .await
            {
                Ok(answer) => answer,
                Err(err) => {
                    chat.fail("runtime", err.to_string());
                    chat.end();
                    outcome.error = Some(err);
                    return outcome;
                }
            };
            let (prompt, completion) = match usage(&answer) {
                Ok(usage) => usage,
                Err(reason) => {
                    chat.fail("bad_answer", reason.to_string());
                    chat.end();
                    outcome.error = Some(self.bad(reason));
                    return outcome;
                }
            };
            chat.set("gen_ai.usage.input_tokens", prompt);
            chat.set("gen_ai.usage.output_tokens", completion);
            if let Some(model) = answer["model"].as_str() {
                chat.set("gen_ai.response.model", model.to_string());
            }
            if let Some(reason) = answer["choices"][0]["finish_reason"].as_str() {
                chat.set(
                    "gen_ai.response.finish_reasons",
                    opentelemetry::Value::Array(
                        vec![opentelemetry::StringValue::from(reason.to_string())].into(),
                    ),
                );
            }
            chat.end();
            outcome.prompt_tokens = outcome.prompt_tokens.saturating_add(prompt);
            outcome.completion_tokens = outcome.completion_tokens.saturating_add(completion);
            outcome.cost = self.cost(outcome.prompt_tokens, outcome.completion_tokens);
            if let Some(max_cost) = request.max_cost {
                if outcome.cost > max_cost {
                    outcome.error = Some(RuntimeError::TooExpensive {
                        cost: outcome.cost,
                        max_cost,
                    });
                    return outcome;
                }
            }
            let Some(message) = answer["choices"]
                .get(0)
                .map(|c| c["message"].clone())
                .filter(Value::is_object)
            else {
                outcome.error = Some(self.bad("no choices[0].message"));
                return outcome;
            };
            let content = message["content"].as_str().unwrap_or_default().to_string();
            let calls = message["tool_calls"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            request
                .progress
                .turn(outcome.turn_count, &content, &calls)
                .await;
            if calls.is_empty() {
                if !content.is_empty() {
                    outcome
                        .transcript
                        .push(NewEvent::new(Role::Assistant, content.clone()));
                }
                outcome.output = content;
                return outcome;
            }
            if calls.len() > self.max_tool_calls_per_turn {
                outcome.error = Some(RuntimeError::TooManyToolCalls {
                    calls: calls.len(),
                    scope: "in one turn",
                    limit: self.max_tool_calls_per_turn,
                    key: "runtime.max_tool_calls_per_turn",
                });
                return outcome;
            }
            place.tool_calls += calls.len();
            if place.tool_calls > self.max_tool_calls_per_run {
                outcome.error = Some(RuntimeError::TooManyToolCalls {
                    calls: place.tool_calls,
                    scope: "in one run",
                    limit: self.max_tool_calls_per_run,
                    key: "runtime.max_tool_calls_per_run",
                });
                return outcome;
            }
            let mut assistant = NewEvent::new(
                Role::Assistant,
                if content.is_empty() {
                    "(tool calls)".to_string()
                } else {
                    content
                },
            );
            assistant.payload = Some(json!({"tool_calls": calls}));
            outcome.transcript.push(assistant);
            place.messages.push(message);
            place.pending = calls.iter().cloned().collect();
            place.turn_calls = calls;
        }
    }
}
