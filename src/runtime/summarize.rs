//! Rolling summaries written by the model, when an `openai` runtime is configured. Any
//! failure falls back to the extractive summary, so a summary is never lost to an outage.

use std::sync::Arc;

use async_trait::async_trait;

use super::OpenAiRuntime;
use crate::config::{RuntimeConfig, RuntimeKind};
use crate::memory::{Event, ExtractiveSummarizer, Summarizer};
use crate::usage::ModelUsage;

pub struct ModelSummarizer {
    runtime: OpenAiRuntime,
    fallback: ExtractiveSummarizer,
}

#[async_trait]
impl Summarizer for ModelSummarizer {
    async fn condense(
        &self,
        previous: Option<&str>,
        events: &[Event],
    ) -> crate::memory::Result<String> {
        Ok(self.condense_with_usage(previous, events).await?.0)
    }

    async fn condense_with_usage(
        &self,
        previous: Option<&str>,
        events: &[Event],
    ) -> crate::memory::Result<(String, ModelUsage)> {
        let turns = self.fallback.condense(previous, events).await?;
        let prompt = format!(
            "Summary so far:\n{}\n\nNew turns:\n{turns}\n\nWrite 1-5 short lines (each starting with \"- \") \
             that record what the new turns add: facts, decisions, open questions. Plain text only.",
            previous.unwrap_or("(none)")
        );
        match self
            .runtime
            .complete_with_usage(
                "You keep a concise running summary of a conversation.",
                &prompt,
            )
            .await
        {
            Ok(done) => {
                let usage = ModelUsage {
                    prompt_tokens: done.prompt_tokens,
                    completion_tokens: done.completion_tokens,
                    cost: done.cost,
                };
                let text = done.text.trim();
                // An empty answer still cost what it cost.
                let text = if text.is_empty() {
                    turns
                } else {
                    text.to_string()
                };
                Ok((text, usage))
            }
            Err(err) => {
                tracing::warn!(%err, "model summary failed; using the extractive one");
                Ok((turns, ModelUsage::default()))
            }
        }
    }
}

/// The summarizer for this runtime configuration.
pub fn summarizer(config: &RuntimeConfig) -> Arc<dyn Summarizer> {
    if config.kind == RuntimeKind::Openai {
        match OpenAiRuntime::new(config) {
            Ok(runtime) => {
                return Arc::new(ModelSummarizer {
                    runtime,
                    fallback: ExtractiveSummarizer::default(),
                })
            }
            Err(err) => tracing::warn!(%err, "cannot use the model for summaries"),
        }
    }
    Arc::new(ExtractiveSummarizer::default())
}
