//! The facts pass: lasting facts from what users (and tools) said, each stored as a note
//! unless the user deleted it or already has it; a changed fact supersedes the old note,
//! which stays as history. Steerable: `extraction_instructions` (global and per user)
//! reach the model, facts outside `fact_categories` are left out, and a dry run says what
//! would be stored without writing anything. Every model call's tokens and cost are
//! counted with the pass.

use serde::Serialize;
use serde_json::{json, Value};

use super::counts::{bump, Counts, PassOutcome};
use super::error::ConsolidateError;
use super::facts::{cosine, token_jaccard, Fact, ModelUsage};
use super::pass::{Pass, Progress};
use super::passes::{Consolidator, FACTS_TRIES};
use crate::memory::{Memory, NewNote, Origin, Role, SearchRequest, SessionKey, SessionKind};

/// Cosine and word-overlap thresholds above which two facts are the same fact.
const SAME_COSINE: f64 = 0.97;
const SAME_JACCARD: f64 = 0.85;

/// What the pass does with a fact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FactOutcome {
    /// Stored as a new note.
    Save,
    /// The user already has it (a fact or a note of theirs).
    Duplicate,
    /// Replaces the user's fact on the same subject, which stays as history.
    Supersede,
    /// The user deleted it once: not learned again.
    Tombstoned,
    /// Its category is not in `consolidation.fact_categories`.
    NotAllowed,
    /// The user is at `memory.max_notes_per_user`.
    OverLimit,
    /// Changes a fact the user said again later (read earlier in another session): what
    /// stands is the later one.
    Outdated,
}

impl FactOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            FactOutcome::Save => "save",
            FactOutcome::Duplicate => "duplicate",
            FactOutcome::Supersede => "supersede",
            FactOutcome::Tombstoned => "tombstoned",
            FactOutcome::NotAllowed => "not_allowed",
            FactOutcome::OverLimit => "over_limit",
            FactOutcome::Outdated => "outdated",
        }
    }

    fn count_key(self) -> &'static str {
        match self {
            FactOutcome::Save => "facts_saved",
            FactOutcome::Duplicate => "duplicates",
            FactOutcome::Supersede => "superseded",
            FactOutcome::Tombstoned => "tombstoned",
            FactOutcome::NotAllowed => "facts_not_allowed",
            FactOutcome::OverLimit => "facts_over_limit",
            FactOutcome::Outdated => "facts_outdated",
        }
    }
}

/// A fact a dry run found, and what the pass would do with it.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct ExtractedFact {
    pub user_id: String,
    pub session_id: String,
    pub sequence: i64,
    pub category: String,
    pub key: String,
    pub content: String,
    pub outcome: FactOutcome,
}

/// What `consolidate --pass facts --dry-run` found, and what finding it cost.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct FactsDryRun {
    pub facts: Vec<ExtractedFact>,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub cost: f64,
}

/// What judging a fact against the user's memory found (nothing written).
enum Judged {
    Tombstoned,
    /// Already known: as this note when it is one (a fact said again is more evidence).
    Duplicate(Option<String>),
    Supersede(String),
    /// Would supersede a fact the user said later.
    Outdated,
    Save,
}

/// Whether `fact` may be learned from a turn of `role`: how to answer is the user's to
/// say, so a tool's output (a fetched page, an email) saying "from now on …" never
/// becomes an instruction that steers every later prompt.
fn said_by_whom_it_may_be(fact: &Fact, role: Role) -> bool {
    fact.category != "instruction" || role == Role::User
}

/// Adds a model call's usage to a pass's counts.
pub(super) fn add_usage(counts: &mut Counts, usage: &ModelUsage) {
    if usage.is_empty() {
        return;
    }
    bump(counts, "prompt_tokens", usage.prompt_tokens);
    bump(counts, "completion_tokens", usage.completion_tokens);
    let cost = counts.get("cost").and_then(Value::as_f64).unwrap_or(0.0) + usage.cost;
    counts.insert("cost".into(), json!(cost));
}

impl Consolidator {
    pub(super) async fn facts(
        &self,
        user: Option<&str>,
        progress: Option<&Progress>,
    ) -> Result<PassOutcome, ConsolidateError> {
        let sessions = self.sessions(user).await?;
        let mut counts = Counts::new();
        let mut first_error = None;
        for (i, key) in sessions.iter().enumerate() {
            if let Err(err) = self.facts_of_session(key, &mut counts).await {
                bump(&mut counts, "sessions_failed", 1);
                tracing::warn!(session = %key, %err, "facts pass failed for a session");
                first_error.get_or_insert_with(|| format!("session {key}: {err}"));
            }
            if let Some(progress) = progress {
                progress(Pass::Facts, i + 1, sessions.len());
            }
            // A long pass shares its thread and can be stopped between sessions.
            tokio::task::yield_now().await;
        }
        if let Some(skipped) = counts.get("facts_over_limit").and_then(Value::as_i64) {
            tracing::warn!(
                facts = skipped,
                limit = self.memory.limits().max_notes_per_user,
                "facts not stored: their users are at memory.max_notes_per_user"
            );
        }
        Ok(PassOutcome {
            counts,
            error: first_error,
        })
    }

    /// What the facts pass would store for `user` (every user when `None`) from the
    /// events it has not read yet: nothing is written, no cursor moves.
    pub async fn facts_dry_run(&self, user: Option<&str>) -> Result<FactsDryRun, ConsolidateError> {
        if let Some(user) = user {
            crate::input::check_user_id(user).map_err(crate::memory::MemoryError::from)?;
        }
        let mut out = FactsDryRun {
            facts: Vec::new(),
            prompt_tokens: 0,
            completion_tokens: 0,
            cost: 0.0,
        };
        for key in self.sessions(user).await? {
            let user_id = key.user_id().to_string();
            let memory = self.session_memory(&key).await?;
            let cursor = self.memory.facts_cursor(&key).await?;
            let events = self
                .memory
                .events_after(&key, cursor.upper_sequence)
                .await?;
            for event in events
                .iter()
                .filter(|e| matches!(e.role, Role::User | Role::Tool))
            {
                let extracted = self
                    .extractor
                    .extract(&event.content, self.instructions(&user_id).as_deref())
                    .await
                    .map_err(ConsolidateError::Extraction)?;
                out.prompt_tokens += extracted.usage.prompt_tokens;
                out.completion_tokens += extracted.usage.completion_tokens;
                out.cost += extracted.usage.cost;
                for fact in extracted.facts {
                    if !said_by_whom_it_may_be(&fact, event.role) {
                        continue;
                    }
                    let outcome = if !self.allowed(&fact) {
                        FactOutcome::NotAllowed
                    } else {
                        match self
                            .judge(&memory, &user_id, &fact, event.created_at)
                            .await?
                        {
                            Judged::Tombstoned => FactOutcome::Tombstoned,
                            Judged::Duplicate(_) => FactOutcome::Duplicate,
                            Judged::Supersede(_) => FactOutcome::Supersede,
                            Judged::Outdated => FactOutcome::Outdated,
                            Judged::Save => FactOutcome::Save,
                        }
                    };
                    out.facts.push(ExtractedFact {
                        user_id: user_id.clone(),
                        session_id: key.session_id().to_string(),
                        sequence: event.sequence,
                        category: fact.category.to_string(),
                        key: fact.key,
                        content: fact.content,
                        outcome,
                    });
                }
            }
        }
        Ok(out)
    }

    /// The operator's instructions for extraction: the global ones, then the user's.
    fn instructions(&self, user_id: &str) -> Option<String> {
        let parts: Vec<&str> = [
            self.config.extraction_instructions.as_deref(),
            self.user_instructions.get(user_id).map(String::as_str),
        ]
        .into_iter()
        .flatten()
        .filter(|s| !s.trim().is_empty())
        .collect();
        (!parts.is_empty()).then(|| parts.join("\n\n"))
    }

    fn allowed(&self, fact: &Fact) -> bool {
        self.config
            .fact_categories
            .iter()
            .any(|c| c.as_str() == fact.category)
    }

    /// The memory a session's facts go to: a scheduled session's are learned for the
    /// schedule's agent (private to it, as the conversation was), any other's are shared.
    async fn session_memory(&self, key: &SessionKey) -> Result<Memory, ConsolidateError> {
        let Some(schedule_id) = key.session_id().strip_prefix(SessionKind::SCHEDULED_PREFIX) else {
            return Ok(self.memory.clone());
        };
        // The session's user's schedule: its agent.
        let conn = self.memory.db().conn().await?;
        let agent: Option<String> = crate::db::query_scalar(
            &conn,
            "SELECT agent_id FROM schedules WHERE schedule_id = ?1 AND user_id = ?2",
            [schedule_id, key.user_id()],
        )
        .await?;
        Ok(self.memory.as_agent(agent.as_deref())?)
    }

    async fn facts_of_session(
        &self,
        key: &SessionKey,
        counts: &mut Counts,
    ) -> Result<(), ConsolidateError> {
        let memory = self.session_memory(key).await?;
        let cursor = self.memory.facts_cursor(key).await?;
        let events = self.memory.events_after(key, cursor.upper_sequence).await?;
        let Some(last) = events.last().map(|e| e.sequence) else {
            return Ok(());
        };
        bump(counts, "sessions", 1);
        for event in &events {
            bump(counts, "events", 1);
            // Facts come from what the user (or a tool) said, never the assistant.
            if !matches!(event.role, Role::User | Role::Tool) {
                continue;
            }
            if let Err(err) = self.facts_of_event(&memory, key, event, counts).await {
                let failures = self
                    .memory
                    .record_facts_failure(key, event.sequence)
                    .await?;
                if failures < FACTS_TRIES {
                    // Everything before this event is done; this one is tried again.
                    self.memory
                        .advance_facts_cursor(key, event.sequence - 1)
                        .await?;
                    return Err(err);
                }
                tracing::error!(session = %key, sequence = event.sequence, %err, tries = failures,
                    "skipping an event the facts pass cannot read");
                bump(counts, "events_skipped", 1);
            }
        }
        // Only now that every fact of these events is stored does the cursor move.
        self.memory.advance_facts_cursor(key, last).await?;
        Ok(())
    }

    /// The facts of one of the session `key`'s turns, each stored (or found already
    /// stored) with the turn as its evidence.
    async fn facts_of_event(
        &self,
        memory: &Memory,
        key: &SessionKey,
        event: &crate::memory::Event,
        counts: &mut Counts,
    ) -> Result<(), ConsolidateError> {
        let user_id = key.user_id();
        let extracted = self
            .extractor
            .extract(&event.content, self.instructions(user_id).as_deref())
            .await
            .map_err(ConsolidateError::Extraction)?;
        add_usage(counts, &extracted.usage);
        for fact in extracted.facts {
            if !said_by_whom_it_may_be(&fact, event.role) {
                continue;
            }
            let outcome = if self.allowed(&fact) {
                self.learn(memory, key, event, &fact).await?
            } else {
                FactOutcome::NotAllowed
            };
            bump(counts, outcome.count_key(), 1);
        }
        Ok(())
    }

    fn same_fact(&self, a: &str, b: &str) -> Result<bool, ConsolidateError> {
        if crate::memory::tombstone_hash(a) == crate::memory::tombstone_hash(b) {
            return Ok(true);
        }
        let vectors = self
            .memory
            .embedder()
            .embed(&[a, b])
            .map_err(crate::memory::MemoryError::from)?;
        Ok(cosine(&vectors[0], &vectors[1]) >= SAME_COSINE && token_jaccard(a, b) >= SAME_JACCARD)
    }

    /// What storing `fact` would do, reading only.
    /// `memory` is the handle of the agent the fact is for: a fact supersedes only a note
    /// of the same scope, and is a duplicate of any note that agent sees.
    /// `said_at` is when the fact was said.
    async fn judge(
        &self,
        memory: &Memory,
        user_id: &str,
        fact: &Fact,
        said_at: i64,
    ) -> Result<Judged, ConsolidateError> {
        if self.memory.is_tombstoned(user_id, &fact.content).await? {
            return Ok(Judged::Tombstoned);
        }
        let conn = self.memory.db().conn().await?;
        let mut rows = conn
            .query(
                "SELECT note_id, content, updated_at FROM notes WHERE user_id = ?1 AND fact_key = ?2
                 AND superseded_by IS NULL AND coalesce(agent_id, '') = coalesce(?3, '')
                 ORDER BY updated_at DESC",
                libsql::params![user_id, fact.key.as_str(), memory.agent()],
            )
            .await?;
        let mut same_key = Vec::new();
        while let Some(row) = rows.next().await? {
            same_key.push((
                row.get::<String>(0)?,
                row.get::<String>(1)?,
                row.get::<i64>(2)?,
            ));
        }
        drop(rows);
        drop(conn);
        for (note_id, content, _) in &same_key {
            if self.same_fact(content, &fact.content)? {
                return Ok(Judged::Duplicate(Some(note_id.clone())));
            }
        }
        // The same fact may already be a note the user or agent saved by hand.
        let similar = memory
            .search(&SearchRequest {
                user_id: user_id.to_string(),
                query: fact.content.clone(),
                top_k: Some(5),
                ..Default::default()
            })
            .await?;
        for hit in &similar {
            if self.same_fact(&hit.text, &fact.content)? {
                return Ok(Judged::Duplicate(hit.note_id.clone()));
            }
        }
        let Some((old, _, updated_at)) = same_key.into_iter().next() else {
            return Ok(Judged::Save);
        };
        // Sessions are read one after another: a session read later may hold what the
        // user said before the fact that stands. The fact stands since it was last said,
        // or (said nowhere the pass saw: changed by hand) since it was last written; a
        // turn stamped later than now counts as said now, as its evidence does.
        let said_at = said_at.min(self.now());
        let standing = self.memory.fact_evidence(user_id, &old, None).await?;
        let since = standing.first().map_or(updated_at, |e| e.said_at);
        if since > said_at {
            return Ok(Judged::Outdated);
        }
        Ok(Judged::Supersede(old))
    }

    /// Stores a fact said in `event` of the session `key` unless the user deleted it or
    /// already has it; a changed fact supersedes the old one, which stays as history,
    /// unless the old one was said later. The turn is recorded as the evidence of the
    /// note that holds the fact (a new one, or the one that already did).
    async fn learn(
        &self,
        memory: &Memory,
        key: &SessionKey,
        event: &crate::memory::Event,
        fact: &Fact,
    ) -> Result<FactOutcome, ConsolidateError> {
        let user_id = key.user_id();
        let judged = self.judge(memory, user_id, fact, event.created_at).await?;
        let note = NewNote {
            content: fact.content.clone(),
            category: Some(fact.category.to_string()),
            source: Some("consolidation".to_string()),
            fact_key: Some(fact.key.clone()),
            expires_at: (self.config.fact_retention_days > 0)
                .then(|| self.now() + self.config.fact_retention_days * 86_400_000),
            ..Default::default()
        };
        let memory = memory.by(Origin::Consolidation("facts"));
        let (outcome, held_by) = match judged {
            Judged::Tombstoned => (FactOutcome::Tombstoned, None),
            Judged::Outdated => (FactOutcome::Outdated, None),
            Judged::Duplicate(held_by) => (FactOutcome::Duplicate, held_by),
            Judged::Supersede(old) => {
                let saved = memory.supersede_note(user_id, &old, &note).await?;
                (FactOutcome::Supersede, Some(saved.note_id))
            }
            Judged::Save => match memory.save_note(user_id, &note).await {
                Ok(saved) => (FactOutcome::Save, Some(saved.note_id)),
                // A user at the notes limit must not fail the pass on every run: the
                // fact is left out, counted, and the pass goes on.
                Err(crate::memory::MemoryError::TooManyNotes { .. }) => {
                    (FactOutcome::OverLimit, None)
                }
                Err(err) => return Err(err.into()),
            },
        };
        // After the note: a crash between the two leaves the cursor before this turn, and
        // the turn read again finds the fact stored and records it then.
        if let Some(note_id) = held_by {
            // By the agent's handle: a turn of its private session is evidence only for
            // the notes private to it.
            memory
                .add_fact_evidence(&note_id, key, event.sequence)
                .await?;
        }
        Ok(outcome)
    }
}
