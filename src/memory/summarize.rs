//! Rolling summaries (seed 000, with DESIGN.md's corrections). When a session's
//! unsummarized turns are at least `min_turns` and use more than `trigger_ratio` of the
//! token budget, the oldest of them are condensed into the summary until what is left
//! fits `target_ratio`. Incremental from the stored upper sequence; written with the epoch
//! compare-and-swap; capped by keeping the newest content.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::Serialize;

use super::{Event, Memory, Result, SessionKey, SummaryWrite};
use crate::text::truncate_chars;
use crate::usage::ModelUsage;

/// About four characters make a token.
pub fn estimate_tokens(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

#[derive(Debug, Clone, PartialEq)]
pub struct SummaryPolicy {
    pub budget_tokens: usize,
    pub min_turns: usize,
    pub trigger_ratio: f64,
    pub target_ratio: f64,
    /// Longest summary kept, in characters; the oldest lines go first.
    pub max_summary_chars: usize,
}

impl Default for SummaryPolicy {
    fn default() -> Self {
        Self {
            budget_tokens: 2000,
            min_turns: 4,
            trigger_ratio: 0.80,
            target_ratio: 0.50,
            max_summary_chars: 4000,
        }
    }
}

/// Condenses turns into summary lines.
#[async_trait]
pub trait Summarizer: Send + Sync {
    /// New summary text for `events` (oldest first), given the summary so far.
    async fn condense(&self, previous: Option<&str>, events: &[Event]) -> Result<String>;

    /// As [`Summarizer::condense`], with what the model it called used (nothing, for a
    /// summarizer that calls none).
    async fn condense_with_usage(
        &self,
        previous: Option<&str>,
        events: &[Event],
    ) -> Result<(String, ModelUsage)> {
        Ok((
            self.condense(previous, events).await?,
            ModelUsage::default(),
        ))
    }
}

/// One line per turn, saying who said what and when, cut on character boundaries. Needs
/// no model.
pub struct ExtractiveSummarizer {
    pub line_chars: usize,
}

impl Default for ExtractiveSummarizer {
    fn default() -> Self {
        Self { line_chars: 200 }
    }
}

#[async_trait]
impl Summarizer for ExtractiveSummarizer {
    async fn condense(&self, _previous: Option<&str>, events: &[Event]) -> Result<String> {
        let lines: Vec<String> = events
            .iter()
            .map(|e| {
                let when = DateTime::<Utc>::from_timestamp_millis(e.created_at)
                    .map(|t| t.format("%Y-%m-%d %H:%M").to_string())
                    .unwrap_or_default();
                let text = crate::text::normalize_whitespace(&e.content);
                let cut = truncate_chars(&text, self.line_chars);
                let ellipsis = if cut.len() < text.len() { "…" } else { "" };
                let who = match &e.name {
                    Some(name) => format!("{} ({name})", e.role.as_str()),
                    None => e.role.as_str().to_string(),
                };
                format!("- [{when}] {who}: {cut}{ellipsis}")
            })
            .collect();
        Ok(lines.join("\n"))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum SummarizeOutcome {
    /// Under the trigger: nothing to do.
    NotNeeded {
        unsummarized_turns: usize,
        unsummarized_tokens: usize,
    },
    /// Condensed turns up to `upper_sequence`.
    Written {
        epoch: i64,
        upper_sequence: i64,
        condensed_turns: usize,
        /// What the summarizer's model used (recorded in the pass's counts).
        #[serde(skip)]
        usage: ModelUsage,
    },
    /// Another summarizer wrote first; this one's work was discarded.
    Stale { current_epoch: i64 },
}

/// Keeps the newest `max_chars` of a summary, starting at a line boundary.
fn cap_keeping_newest(summary: &str, max_chars: usize) -> String {
    let total = summary.chars().count();
    if total <= max_chars {
        return summary.to_string();
    }
    let skip = total - max_chars;
    let start = summary
        .char_indices()
        .nth(skip)
        .map_or(summary.len(), |(i, _)| i);
    let tail = &summary[start..];
    match tail.find('\n') {
        Some(i) if i + 1 < tail.len() => tail[i + 1..].to_string(),
        _ => tail.to_string(),
    }
}

impl Memory {
    /// Summarizes a session if its unsummarized turns call for it.
    pub async fn summarize_session(
        &self,
        key: &SessionKey,
        policy: &SummaryPolicy,
        summarizer: &dyn Summarizer,
    ) -> Result<SummarizeOutcome> {
        let state = self.summary_state(key).await?;
        let events = self.events_after(key, state.upper_sequence).await?;
        let summary_tokens = state.summary.as_deref().map_or(0, estimate_tokens);
        let unsummarized_tokens: usize = events.iter().map(|e| estimate_tokens(&e.content)).sum();
        let budget = policy.budget_tokens.max(1);
        let over =
            (summary_tokens + unsummarized_tokens) as f64 > policy.trigger_ratio * budget as f64;
        if events.len() < policy.min_turns || !over {
            return Ok(SummarizeOutcome::NotNeeded {
                unsummarized_turns: events.len(),
                unsummarized_tokens,
            });
        }
        // Condense the oldest turns until the rest fits the target (always at least one).
        let target = (policy.target_ratio * budget as f64) as usize;
        let mut remaining = unsummarized_tokens;
        let mut take = 0;
        while take < events.len() && (take == 0 || remaining > target) {
            remaining -= estimate_tokens(&events[take].content);
            take += 1;
        }
        let condensed = &events[..take];
        let (addition, usage) = summarizer
            .condense_with_usage(state.summary.as_deref(), condensed)
            .await?;
        let combined = match &state.summary {
            Some(previous) if !previous.is_empty() => format!("{previous}\n{addition}"),
            _ => addition,
        };
        let summary = cap_keeping_newest(&combined, policy.max_summary_chars);
        let upper = condensed
            .last()
            .map_or(state.upper_sequence, |e| e.sequence);
        match self
            .write_summary(key, state.epoch, &summary, upper)
            .await?
        {
            SummaryWrite::Applied { epoch } => Ok(SummarizeOutcome::Written {
                epoch,
                upper_sequence: upper,
                condensed_turns: take,
                usage,
            }),
            SummaryWrite::Stale { current_epoch } => Ok(SummarizeOutcome::Stale { current_epoch }),
        }
    }

    /// Events of the session stored under `key` after `sequence`, oldest first.
    pub async fn events_after(&self, key: &SessionKey, sequence: i64) -> Result<Vec<Event>> {
        let conn = self.db.conn().await?;
        Ok(crate::db::fetch_all(
            &conn,
            &format!(
                "SELECT {} FROM events WHERE session_id = ?1 AND sequence > ?2 ORDER BY sequence",
                <Event as crate::db::FromRow>::COLUMNS
            ),
            libsql::params![key.as_str(), sequence],
        )
        .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_keeps_the_newest_lines() {
        let summary = (0..100)
            .map(|i| format!("- line {i}"))
            .collect::<Vec<_>>()
            .join("\n");
        let capped = cap_keeping_newest(&summary, 50);
        assert!(capped.chars().count() <= 50);
        assert!(capped.ends_with("- line 99"));
        assert!(
            capped.starts_with("- line"),
            "starts at a line boundary: {capped}"
        );
        assert_eq!(cap_keeping_newest("short", 50), "short");
    }

    #[test]
    fn tokens_are_estimated_from_characters() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(estimate_tokens("日本語日本語日本"), 2);
    }
}
