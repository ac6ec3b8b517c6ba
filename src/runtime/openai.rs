//! Any OpenAI-compatible `/chat/completions` endpoint, with nightshift running the tool
//! loop: the model may call the memory tools until it answers, within `max_turns` and
//! `max_cost`.

use async_trait::async_trait;
use serde_json::json;

use super::request::JsonClient;
use super::schedule_tools::{self, Asker, ScheduleTools};
use super::{hints, tools, AgentRuntime, GoalOutcome, GoalRequest, RuntimeError};
use crate::config::RuntimeConfig;
use crate::mcp_client::{McpTools, ToolFilter};
use crate::memory::{Memory, NewEvent, Role};

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
fn usage(answer: &serde_json::Value) -> Result<(i64, i64), String> {
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
            cost: prompt_tokens as f64 * self.prompt_price
                + completion_tokens as f64 * self.completion_price,
        })
    }

    fn bad(&self, reason: impl Into<String>) -> RuntimeError {
        RuntimeError::BadAnswer {
            url: self.url.clone(),
            reason: reason.into(),
        }
    }
}

#[async_trait]
impl AgentRuntime for OpenAiRuntime {
    async fn run_goal(&self, request: &GoalRequest, memory: &Memory) -> GoalOutcome {
        let mut outcome = GoalOutcome {
            transcript: super::opening_turns(request),
            ..Default::default()
        };
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
        let mcp = self
            .mcp
            .offered(&request.user_id, &ToolFilter::new(request.tools.clone()))
            .await;
        for reason in &mcp.unavailable {
            // The run goes on with the tools it has; the model and the transcript know why
            // the others are missing.
            messages.push(json!({"role": "system", "content": reason}));
            outcome
                .transcript
                .push(NewEvent::new(Role::System, reason.clone()));
        }
        let mut tools = tools::definitions();
        if let Some(list) = tools.as_array_mut() {
            if let Some(schedules) = &self.schedules {
                list.extend(schedules.definitions());
            }
            list.extend(mcp.definitions.iter().cloned());
        }
        let mut tool_calls = 0usize;
        loop {
            if outcome.turn_count >= request.max_turns {
                outcome.error = Some(RuntimeError::TooManyTurns {
                    turns: outcome.turn_count,
                });
                return outcome;
            }
            outcome.turn_count += 1;
            let body = json!({"model": self.model, "messages": messages, "tools": tools});
            let answer = match self.client.post(&self.url, &body).await {
                Ok(answer) => answer,
                Err(err) => {
                    outcome.error = Some(err);
                    return outcome;
                }
            };
            let (prompt, completion) = match usage(&answer) {
                Ok(usage) => usage,
                Err(reason) => {
                    outcome.error = Some(self.bad(reason));
                    return outcome;
                }
            };
            outcome.prompt_tokens = outcome.prompt_tokens.saturating_add(prompt);
            outcome.completion_tokens = outcome.completion_tokens.saturating_add(completion);
            outcome.cost = outcome.prompt_tokens as f64 * self.prompt_price
                + outcome.completion_tokens as f64 * self.completion_price;
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
                .filter(serde_json::Value::is_object)
            else {
                outcome.error = Some(self.bad("no choices[0].message"));
                return outcome;
            };
            let content = message["content"].as_str().unwrap_or_default().to_string();
            let calls = message["tool_calls"]
                .as_array()
                .cloned()
                .unwrap_or_default();
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
            tool_calls += calls.len();
            if tool_calls > self.max_tool_calls_per_run {
                outcome.error = Some(RuntimeError::TooManyToolCalls {
                    calls: tool_calls,
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
            messages.push(message);
            for call in &calls {
                let id = call["id"].as_str().unwrap_or_default();
                let name = call["function"]["name"].as_str().unwrap_or_default();
                let arguments = call["function"]["arguments"].as_str().unwrap_or("{}");
                let scope = tools::ToolScope {
                    user_id: &request.user_id,
                    session_id: &request.session_id,
                    run_id: &request.run_id,
                };
                let schedule_tools = self.schedules.as_ref().filter(|s| {
                    !s.definitions().is_empty() && schedule_tools::NAMES.contains(&name)
                });
                let result = if let Some(schedules) = schedule_tools {
                    let asker = Asker {
                        user_id: &request.user_id,
                        schedule_id: &request.schedule_id,
                        run_id: &request.run_id,
                    };
                    match serde_json::from_str::<serde_json::Value>(arguments) {
                        _ if arguments.len() > self.max_tool_arguments_bytes => json!({
                            "error": "arguments are over runtime.max_tool_arguments_bytes"
                        }),
                        Ok(args) => schedules.call(&asker, name, &args).await,
                        Err(e) => json!({"error": format!("arguments are not JSON: {e}")}),
                    }
                    .to_string()
                } else if self.mcp.owns(name) {
                    if arguments.len() > self.max_tool_arguments_bytes {
                        json!({"error": format!(
                            "arguments are {} bytes, over the limit of {} bytes \
                             (runtime.max_tool_arguments_bytes)",
                            arguments.len(),
                            self.max_tool_arguments_bytes
                        )})
                        .to_string()
                    } else {
                        self.mcp.call(&request.user_id, &mcp, name, arguments).await
                    }
                } else {
                    tools::call(
                        memory,
                        &scope,
                        name,
                        arguments,
                        self.max_tool_arguments_bytes,
                    )
                    .await
                };
                let mut event = NewEvent::new(Role::Tool, result.clone());
                event.payload = Some(json!({"tool_call_id": id, "name": name}));
                outcome.transcript.push(event);
                messages.push(json!({"role": "tool", "tool_call_id": id, "content": result}));
            }
            let hint = hints::after_calls(
                memory,
                &request.user_id,
                &calls,
                self.macro_hint_min_confidence,
            );
            if let Some(hint) = hint.await {
                messages.push(json!({"role": "system", "content": hint}));
            }
        }
    }
}
