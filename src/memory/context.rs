//! Context assembly (seeds 001 and 004): what an agent should put in its prompt for a
//! session — the user's profile (their standing facts, first), the rolling summary,
//! recent turns, salient turns (importance ≥ 0.85) and memories relevant to the query —
//! deduplicated and never over the token budget.

use std::collections::HashSet;
use std::str::FromStr;

use serde::Serialize;

use super::summarize::estimate_tokens;
use super::{check_id, Memory, MemoryError, Result, SearchRequest};

/// Turns of recent history offered.
const RECENT_TURNS: usize = 10;
/// Importance at which a turn is salient whatever its age.
const SALIENT_IMPORTANCE: f64 = 0.85;
/// Score a search hit needs to count as relevant: fused (0..1), times `1 +
/// search.speaker_weight` for a turn of a speaker the query names.
const RELEVANCE_THRESHOLD: f64 = 0.3;
/// The share of the budget the user's profile may take, in percent.
const PROFILE_SHARE_PERCENT: usize = 15;
pub const DEFAULT_BUDGET: usize = 2000;
pub const MAX_BUDGET: usize = crate::input::MAX_CONTEXT_BUDGET;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Summary, recent turns, salient turns and relevant memories.
    All,
    /// The last ten turns.
    BufferWindow,
    /// As many recent turns as fit.
    TokenWindow,
    /// The summary, then as many recent turns as fit.
    SummaryBuffer,
}

impl FromStr for Strategy {
    type Err = MemoryError;

    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "all" => Strategy::All,
            "buffer_window" => Strategy::BufferWindow,
            "token_window" => Strategy::TokenWindow,
            "summary_buffer" => Strategy::SummaryBuffer,
            other => {
                return Err(MemoryError::invalid(
                    "strategy",
                    format!(
                        "`{other}` is not one of all, buffer_window, token_window, summary_buffer"
                    ),
                ))
            }
        })
    }
}

#[derive(Debug, Clone)]
pub struct ContextRequest {
    pub user_id: String,
    pub session_id: String,
    /// Tokens, 1..=8000; 2000 when `None`.
    pub budget_tokens: Option<usize>,
    /// What relevant memories should be about; the last user turn when `None`.
    pub query: Option<String>,
    pub strategy: Strategy,
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ContextItem {
    /// `profile`, `summary`, `recent`, `salient` or `relevant`.
    pub kind: &'static str,
    pub text: String,
    pub tokens: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<super::Role>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sequence: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note_id: Option<String>,
    /// For a profile fact the facts pass learned: when the user last said it (UTC ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub said_at: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Context {
    pub user_id: String,
    pub session_id: String,
    pub strategy: Strategy,
    pub budget_tokens: usize,
    pub used_tokens: usize,
    pub items: Vec<ContextItem>,
}

#[derive(PartialEq)]
enum Added {
    Yes,
    Duplicate,
    NoRoom,
}

struct Filler {
    budget: usize,
    used: usize,
    seen: HashSet<String>,
    items: Vec<ContextItem>,
}

impl Filler {
    /// Adds an item when it fits and says nothing already said.
    fn add(&mut self, item: ContextItem) -> Added {
        let key = said(&item.text);
        if self.seen.contains(&key) {
            return Added::Duplicate;
        }
        if self.used + item.tokens > self.budget {
            return Added::NoRoom;
        }
        self.used += item.tokens;
        self.seen.insert(key);
        self.items.push(item);
        Added::Yes
    }
}

/// What an item says, as duplicates are told apart: its words, lower-cased.
fn said(text: &str) -> String {
    crate::text::normalize_whitespace(&text.to_lowercase())
}

impl Memory {
    pub async fn context(&self, request: &ContextRequest) -> Result<Context> {
        let started = std::time::Instant::now();
        let context = self.assemble_context(request, None).await;
        crate::telemetry::context(started.elapsed());
        context
    }

    /// The context as it would have been assembled at `at` (Unix ms): the turns recorded
    /// by then, the rolling summary only when it covers none after them, and relevant
    /// notes as their versions stood then (keyword search: vectors are of the notes as
    /// they are now).
    pub async fn context_as_of(&self, request: &ContextRequest, at: i64) -> Result<Context> {
        crate::input::check_instant("as of", at)?;
        self.assemble_context(request, Some(at)).await
    }

    async fn assemble_context(
        &self,
        request: &ContextRequest,
        as_of: Option<i64>,
    ) -> Result<Context> {
        check_id("user id", &request.user_id)?;
        check_id("session id", &request.session_id)?;
        // Another user's session is reported exactly like a missing one.
        let key = self
            .session(&request.session_id, Some(&request.user_id))
            .await?
            .key();
        let budget = crate::input::check_range(
            "budget",
            request.budget_tokens.unwrap_or(DEFAULT_BUDGET),
            1..=MAX_BUDGET,
        )?;
        if let Some(query) = &request.query {
            crate::input::check_text(
                "query",
                query,
                crate::input::MAX_QUERY_BYTES,
                crate::input::Lines::Many,
            )?;
        }
        let mut filler = Filler {
            budget,
            used: 0,
            seen: HashSet::new(),
            items: Vec::new(),
        };
        let strategy = request.strategy;
        let profile = if strategy == Strategy::All {
            self.add_profile(&mut filler, &request.user_id, as_of)
                .await?
        } else {
            Vec::new()
        };
        let recent = self
            .last_events_until(&key, RECENT_TURNS * 4, as_of.unwrap_or(i64::MAX))
            .await?;
        // As of an instant, a summary that covers later turns says what was not known then.
        let last_then = recent.last().map_or(0, |e| e.sequence);
        let summary_state = match strategy {
            Strategy::All | Strategy::SummaryBuffer => Some(self.summary_state(&key).await?),
            _ => None,
        };
        let summary = summary_state
            .filter(|state| as_of.is_none() || state.upper_sequence <= last_then)
            .and_then(|state| state.summary);

        if matches!(strategy, Strategy::All | Strategy::SummaryBuffer) {
            if let Some(summary) = summary {
                // The summary gets a share of the budget (its newest part when longer),
                // so recent turns and memories keep room.
                let share = if strategy == Strategy::All {
                    budget * 3 / 10
                } else {
                    budget / 2
                };
                let room = share.max(1) * 4;
                let text = keep_tail(&summary, room);
                if !text.is_empty() {
                    let _ = filler.add(ContextItem {
                        kind: "summary",
                        tokens: estimate_tokens(&text),
                        text,
                        role: None,
                        sequence: None,
                        note_id: None,
                        said_at: None,
                    });
                }
            }
        }

        // Recent turns, newest first until the budget or the window ends; shown oldest first.
        let window = match strategy {
            Strategy::All | Strategy::BufferWindow => RECENT_TURNS,
            Strategy::TokenWindow | Strategy::SummaryBuffer => recent.len(),
        };
        // With everything wanted, a fifth of the budget is kept for salient and relevant
        // memories.
        let recent_limit = if strategy == Strategy::All {
            budget - budget / 5
        } else {
            budget
        };
        let full_budget = std::mem::replace(&mut filler.budget, recent_limit.max(filler.used));
        let mut chosen = Vec::new();
        for event in recent.iter().rev().take(window) {
            let item = ContextItem {
                kind: "recent",
                tokens: estimate_tokens(&event.content),
                text: event.content.clone(),
                role: Some(event.role),
                sequence: Some(event.sequence),
                note_id: None,
                said_at: None,
            };
            match filler.add(item) {
                Added::Yes => chosen.push(filler.items.pop().expect("just added")),
                Added::Duplicate => {}
                Added::NoRoom => break,
            }
        }
        // Recent turns read in conversation order.
        chosen.reverse();
        filler.items.extend(chosen);
        filler.budget = full_budget;
        // A profile fact a recent turn says word for word is left to the turn (the facts
        // pass cuts facts from the user's own words); the others count as said from now.
        let mut freed = 0;
        filler.items.retain(|item| {
            let repeated = item.kind == "profile" && filler.seen.contains(&said(&item.text));
            if repeated {
                freed += item.tokens;
            }
            !repeated
        });
        filler.used -= freed;
        filler.seen.extend(profile);

        if strategy == Strategy::All {
            for event in recent
                .iter()
                .filter(|e| e.importance >= SALIENT_IMPORTANCE)
                .rev()
            {
                let _ = filler.add(ContextItem {
                    kind: "salient",
                    tokens: estimate_tokens(&event.content),
                    text: event.content.clone(),
                    role: Some(event.role),
                    sequence: Some(event.sequence),
                    note_id: None,
                    said_at: None,
                });
            }
            let query = request.query.clone().or_else(|| {
                recent
                    .iter()
                    .rev()
                    .find(|e| e.role == super::Role::User)
                    .map(|e| e.content.clone())
            });
            if let Some(query) = query.filter(|q| !q.trim().is_empty()) {
                let hits = match as_of {
                    Some(at) => {
                        let top_k = self.search.default_top_k;
                        self.search_as_of_hits(&request.user_id, &query, at, top_k)
                            .await?
                            .hits
                    }
                    None => {
                        let request = SearchRequest {
                            user_id: request.user_id.clone(),
                            query,
                            top_k: None,
                            session_id: Some(request.session_id.clone()),
                            tags: Vec::new(),
                            ..Default::default()
                        };
                        self.search_checked(&request, true).await?.hits
                    }
                };
                // Scores as of an instant are ranks among keyword matches, each relevant.
                let threshold = if as_of.is_some() {
                    0.0
                } else {
                    RELEVANCE_THRESHOLD
                };
                for hit in hits.into_iter().filter(|h| h.score >= threshold) {
                    let _ = filler.add(ContextItem {
                        kind: "relevant",
                        tokens: estimate_tokens(&hit.text),
                        text: hit.text,
                        role: hit.role,
                        sequence: hit.sequence,
                        note_id: hit.note_id,
                        said_at: None,
                    });
                }
            }
        }
        Ok(Context {
            user_id: request.user_id.clone(),
            session_id: request.session_id.clone(),
            strategy,
            budget_tokens: budget,
            used_tokens: filler.used,
            items: filler.items,
        })
    }
}

/// Tokens the day a profile fact was said takes in the prompt.
const SAID_TOKENS: usize = 6;

impl Memory {
    /// The user's profile, first, within its share of the budget: the facts that fit, in
    /// the profile's order. What they say is returned rather than marked as said, so a
    /// recent turn that says the same is still offered (see `assemble_context`).
    async fn add_profile(
        &self,
        filler: &mut Filler,
        user_id: &str,
        as_of: Option<i64>,
    ) -> Result<Vec<String>> {
        let facts = self.profile(user_id, super::PROFILE_FACTS, as_of).await?;
        let full_budget = filler.budget;
        filler.budget = (filler.used + full_budget * PROFILE_SHARE_PERCENT / 100).min(full_budget);
        let mut profile = Vec::new();
        for fact in facts {
            let key = said(&fact.text);
            let said_at = fact.evidence.first().map(|e| e.said_at);
            let added = filler.add(ContextItem {
                kind: "profile",
                // With the " (said YYYY-MM-DD)" it is rendered with.
                tokens: estimate_tokens(&fact.text)
                    + if said_at.is_some() { SAID_TOKENS } else { 0 },
                text: fact.text,
                role: None,
                sequence: None,
                note_id: Some(fact.note_id),
                said_at,
            });
            if added == Added::Yes {
                filler.seen.remove(&key);
                profile.push(key);
            }
        }
        filler.budget = full_budget;
        Ok(profile)
    }
}

impl Context {
    /// The context as prompt text: the profile, summary, salient and relevant memories,
    /// recent turns.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let section = |out: &mut String, title: &str, kind: &str| {
            let items: Vec<&ContextItem> = self.items.iter().filter(|i| i.kind == kind).collect();
            if items.is_empty() {
                return;
            }
            out.push_str(title);
            out.push('\n');
            for item in items {
                match (&item.note_id, item.role) {
                    (Some(id), _) => {
                        let said = item
                            .said_at
                            .and_then(chrono::DateTime::from_timestamp_millis)
                            .map(|at| format!(" (said {})", at.format("%Y-%m-%d")))
                            .unwrap_or_default();
                        out.push_str(&format!("- [{id}] {}{said}\n", item.text))
                    }
                    (None, Some(role)) if kind != "summary" => {
                        out.push_str(&format!("- {}: {}\n", role.as_str(), item.text))
                    }
                    _ => out.push_str(&format!("{}\n", item.text)),
                }
            }
            out.push('\n');
        };
        section(&mut out, "About the user:", "profile");
        section(&mut out, "Summary of earlier turns:", "summary");
        section(&mut out, "Important:", "salient");
        section(&mut out, "Relevant memories:", "relevant");
        section(&mut out, "Recent turns:", "recent");
        out.trim_end().to_string()
    }
}

/// The last `max_chars` characters of `text`.
fn keep_tail(text: &str, max_chars: usize) -> String {
    let total = text.chars().count();
    if total <= max_chars {
        return text.to_string();
    }
    text.chars().skip(total - max_chars).collect()
}
