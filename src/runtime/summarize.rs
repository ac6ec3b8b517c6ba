//! Rolling summaries written by the model, when an `openai` runtime is configured. Any
//! failure falls back to the extractive summary, so a summary is never lost to an outage.

use std::sync::Arc;

use async_trait::async_trait;

use super::OpenAiRuntime;
use crate::config::{RuntimeConfig, RuntimeKind};
use crate::memory::{Event, ExtractiveSummarizer, Summarizer};

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
        let turns = self.fallback.condense(previous, events).await?;
        let prompt = format!(
            "Summary so far:\n{}\n\nNew turns:\n{turns}\n\nWrite 1-5 short lines (each starting with \"- \") \
             that record what the new turns add: facts, decisions, open questions. Plain text only.",
            previous.unwrap_or("(none)")
        );
        match self
            .runtime
            .complete(
                "You keep a concise running summary of a conversation.",
                &prompt,
            )
            .await
        {
            Ok(text) if !text.trim().is_empty() => Ok(text.trim().to_string()),
            Ok(_) => Ok(turns),
            Err(err) => {
                tracing::warn!(%err, "model summary failed; using the extractive one");
                Ok(turns)
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
