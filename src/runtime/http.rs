//! The plain goal protocol: POST `{run_id, schedule_id, user_id, goal, session_id,
//! context, input?}` and read `{output, status?, turn_count?, cost?, artifacts?}`, where
//! `artifacts` is `[{"name", "type"?, "content_base64"}]`: files the run produced.

use async_trait::async_trait;
use serde::Deserialize;

use super::request::JsonClient;
use super::{AgentRuntime, GoalOutcome, GoalRequest, RuntimeError};
use crate::artifact::NewArtifact;
use crate::config::RuntimeConfig;
use crate::memory::{Memory, NewEvent, Role};

pub struct HttpRuntime {
    url: String,
    client: JsonClient,
}

#[derive(Deserialize)]
struct Answer {
    output: String,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    turn_count: Option<i64>,
    #[serde(default)]
    cost: Option<f64>,
    #[serde(default)]
    artifacts: Vec<AnswerArtifact>,
}

/// A file attached to an answer.
#[derive(Deserialize)]
struct AnswerArtifact {
    name: String,
    #[serde(default, rename = "type")]
    mime_type: Option<String>,
    content_base64: String,
}

/// The attached files, decoded; bad base64 is a reason naming the file.
/// The answer's artifacts, and a note for each that cannot be read (its content is not
/// base64): such an artifact is left out and the run stands, as for one the store refuses.
fn decode_artifacts(attached: Vec<AnswerArtifact>) -> (Vec<NewArtifact>, Vec<String>) {
    use base64::Engine;
    let mut artifacts = Vec::new();
    let mut notes = Vec::new();
    for (i, a) in attached.into_iter().enumerate() {
        match base64::engine::general_purpose::STANDARD.decode(a.content_base64.trim()) {
            Ok(content) => artifacts.push(NewArtifact {
                name: a.name,
                mime_type: a
                    .mime_type
                    .unwrap_or_else(|| crate::artifact::DEFAULT_MIME_TYPE.to_string()),
                content,
            }),
            Err(e) => notes.push(format!(
                "[artifact {i} `{}` not stored: content_base64 is not base64: {e}]",
                crate::input::printable(crate::text::truncate_chars(&a.name, 100))
            )),
        }
    }
    (artifacts, notes)
}

impl HttpRuntime {
    pub fn new(config: &RuntimeConfig) -> Result<Self, RuntimeError> {
        Ok(Self {
            url: config.url.clone(),
            client: JsonClient::new(config, None)?,
        })
    }
}

#[async_trait]
impl AgentRuntime for HttpRuntime {
    async fn run_goal(&self, request: &GoalRequest, _memory: &Memory) -> GoalOutcome {
        let mut outcome = GoalOutcome {
            transcript: super::opening_turns(request),
            ..Default::default()
        };
        let body = match serde_json::to_value(request) {
            Ok(body) => body,
            Err(e) => {
                outcome.error = Some(RuntimeError::Config(e.to_string()));
                return outcome;
            }
        };
        let answer = match self.client.post(&self.url, &body).await {
            Ok(value) => value,
            Err(err) => {
                outcome.error = Some(err);
                return outcome;
            }
        };
        let answer: Answer = match serde_json::from_value(answer) {
            Ok(a) => a,
            Err(e) => {
                outcome.error = Some(RuntimeError::BadAnswer {
                    url: self.url.clone(),
                    reason: format!("expected {{\"output\": …}}: {e}"),
                });
                return outcome;
            }
        };
        let turn_count = answer.turn_count.unwrap_or(1);
        let cost = answer.cost.unwrap_or(0.0);
        let sensible = (0..=1_000_000).contains(&turn_count)
            && cost.is_finite()
            && (0.0..=1e9).contains(&cost);
        if !sensible {
            outcome.error = Some(RuntimeError::BadAnswer {
                url: self.url.clone(),
                reason: format!(
                    "turn_count {turn_count} and cost {cost} must be non-negative counts and amounts"
                ),
            });
            return outcome;
        }
        outcome.turn_count = turn_count;
        outcome.cost = cost;
        let (artifacts, unreadable) = decode_artifacts(answer.artifacts);
        outcome.artifacts = artifacts;
        if !answer.output.trim().is_empty() {
            outcome
                .transcript
                .push(NewEvent::new(Role::Assistant, answer.output.clone()));
        }
        if let Some(status) = answer.status.as_deref() {
            if matches!(status, "failed" | "error" | "failure") {
                outcome.error = Some(RuntimeError::Reported(answer.output.clone()));
            }
        }
        if let Some(max) = request.max_cost {
            if outcome.cost > max {
                outcome.error = Some(RuntimeError::TooExpensive {
                    cost: outcome.cost,
                    max_cost: max,
                });
            }
        }
        outcome.output = answer.output;
        for note in unreadable {
            tracing::warn!(run_id = %request.run_id, %note, "an artifact of the answer is left out");
            if !outcome.output.is_empty() {
                outcome.output.push('\n');
            }
            outcome.output.push_str(&note);
        }
        outcome
    }
}
