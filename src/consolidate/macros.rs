//! The `macros` pass: tool chains learned from what a user's scheduled runs did.
//!
//! **Runs.** A run's transcript is stored in its schedule's session (`scheduled:{id}`) in
//! one append: its opening user turns (the goal, then its input), then assistant turns
//! (those that called tools carry `payload.tool_calls`, OpenAI format) with the tool
//! results between them, then the final answer. So within a session a run begins at a
//! user turn that follows a turn that is not a user's (or at the session's first event),
//! and its calls are those of the assistant turns up to the next such user turn. This
//! needs neither the run records (pruned by the prune pass) nor the events' times (a
//! whole run shares one). A turn whose payload was left out (over
//! `memory.max_payload_bytes`) breaks the chain there: nothing before it is paired with
//! anything after it.
//!
//! **Counting.** Per run, each distinct trigger (a call: tool and argument pattern, see
//! `memory::args_pattern`), each distinct pair (trigger → next call's tool) and chain of
//! three (trigger → next → the one after) counts once. Counts are weighted: each run of
//! the user in which a trigger occurs first multiplies the trigger's count and every
//! pair's and chain's of that trigger by `macros_decay`, so a chain that stops occurring
//! loses confidence with each run that no longer has it, and a user or tool that is idle
//! keeps what it learned. The result does not depend on how runs are split into passes
//! (but for a chain forgotten between two passes, which starts again from nothing).
//! Confidence is support / trigger runs. A row is promoted (listed, hinted) while its
//! support is at least `macros_min_support` and its confidence `macros_min_confidence`,
//! and forgotten once its support falls below `macros_floor`.
//!
//! **Incremental.** A cursor per session (the last sequence mined) moves in the
//! transaction that stores what was mined, so a pass cut short is finished by the next
//! and running it twice changes nothing the second time.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::counts::{bump, Counts};
use super::error::ConsolidateError;
use super::macro_store::{self, Cursor, Learned, Row, Trigger};
use crate::config::ConsolidationConfig;
use crate::memory::{args_pattern, call_arguments, Memory, Role};

/// One tool call: its tool, its argument pattern and its arguments.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Call {
    pub tool: String,
    pub pattern: String,
    pub arguments: Value,
}

/// A run's calls in order (`None` where a turn's calls were not kept), and when it ran.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Run {
    pub at: i64,
    pub calls: Vec<Option<Call>>,
}

/// A stored turn, as much of it as mining reads.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Turn {
    pub sequence: i64,
    pub role: Role,
    pub payload: Value,
    pub created_at: i64,
}

/// (tool, argument pattern)
pub(super) type TriggerKey = (String, String);
/// (next tool, next2 tool or "")
pub(super) type NextKey = (String, String);

/// What one run showed: its triggers, and each pair or chain with the next call's
/// arguments at each occurrence.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Observation {
    pub triggers: BTreeSet<TriggerKey>,
    pub chains: BTreeMap<(TriggerKey, NextKey), Vec<Value>>,
}

/// The calls of one assistant turn.
pub(super) fn calls_of(turn: &Turn) -> Vec<Option<Call>> {
    if turn.role != Role::Assistant {
        return Vec::new();
    }
    if turn.payload.get("omitted").is_some() {
        return vec![None];
    }
    let Some(calls) = turn.payload["tool_calls"].as_array() else {
        return Vec::new();
    };
    calls
        .iter()
        .map(|call| {
            let tool = call["function"]["name"]
                .as_str()
                .filter(|t| !t.is_empty())?;
            let arguments = call_arguments(call);
            Some(Call {
                tool: tool.to_string(),
                pattern: args_pattern(&arguments),
                arguments,
            })
        })
        .collect()
}

/// Where the runs among `turns` begin: at each user turn after a turn that is not a
/// user's, and at the first turn.
pub(super) fn run_starts(turns: &[Turn]) -> Vec<usize> {
    (0..turns.len())
        .filter(|&i| i == 0 || (turns[i].role == Role::User && turns[i - 1].role != Role::User))
        .collect()
}

/// The runs among `turns` (all of them complete).
pub(super) fn split_runs(turns: &[Turn]) -> Vec<Run> {
    let starts = run_starts(turns);
    let ends = starts.iter().skip(1).copied().chain([turns.len()]);
    starts
        .iter()
        .zip(ends)
        .map(|(&start, end)| Run {
            at: turns[start].created_at,
            calls: turns[start..end].iter().flat_map(calls_of).collect(),
        })
        .filter(|run| !run.calls.is_empty())
        .collect()
}

/// How much of a batch read with `limit` is whole runs: all of it when it is the
/// session's end, else up to the last run's start (the rest is read again with what
/// follows). A single run longer than the batch is taken as it is.
pub(super) fn complete_prefix(turns: &[Turn], limit: usize) -> usize {
    if turns.len() < limit {
        return turns.len();
    }
    match run_starts(turns).last() {
        Some(&last) if last > 0 => last,
        _ => turns.len(),
    }
}

fn key(call: &Call) -> TriggerKey {
    (call.tool.clone(), call.pattern.clone())
}

/// The triggers, pairs and chains of three of one run.
pub(super) fn observe(run: &Run) -> Observation {
    let mut seen = Observation::default();
    for (i, call) in run.calls.iter().enumerate() {
        let Some(a) = call else { continue };
        seen.triggers.insert(key(a));
        let Some(Some(b)) = run.calls.get(i + 1) else {
            continue;
        };
        let pair = (key(a), (b.tool.clone(), String::new()));
        seen.chains
            .entry(pair)
            .or_default()
            .push(b.arguments.clone());
        if let Some(Some(c)) = run.calls.get(i + 2) {
            let chain = (key(a), (b.tool.clone(), c.tool.clone()));
            seen.chains
                .entry(chain)
                .or_default()
                .push(b.arguments.clone());
        }
    }
    seen
}

/// The next call's arguments template with one more occurrence: names are added, a
/// value kept while it stays the same and null once it differs.
pub(super) fn merge_args(template: &mut Value, arguments: &Value) {
    let Value::Object(arguments) = arguments else {
        return;
    };
    if !template.is_object() {
        *template = Value::Object(Default::default());
    }
    let Value::Object(template) = template else {
        return;
    };
    for (name, value) in arguments {
        match template.get_mut(name) {
            Some(kept) if kept != value => *kept = Value::Null,
            Some(_) => {}
            None => {
                template.insert(name.clone(), value.clone());
            }
        }
    }
}

/// A user's learned state, updated run by run.
pub(super) struct Learning {
    pub decay: f64,
    pub triggers: BTreeMap<TriggerKey, Trigger>,
    pub rows: BTreeMap<TriggerKey, BTreeMap<NextKey, Row>>,
}

impl Learning {
    /// Takes one run in: its triggers' counts (and their rows') decay, then what it
    /// showed is added.
    pub fn add(&mut self, run: &Run) {
        let seen = observe(run);
        for trigger in &seen.triggers {
            let stored = self
                .triggers
                .entry(trigger.clone())
                .or_insert_with(|| Trigger::new(run.at));
            stored.runs = stored.runs * self.decay + 1.0;
            stored.last_seen_at = stored.last_seen_at.max(run.at);
            stored.touched = true;
            for row in self.rows.entry(trigger.clone()).or_default().values_mut() {
                row.support *= self.decay;
                row.touched = true;
            }
        }
        for ((trigger, next), occurrences) in seen.chains {
            let row = self
                .rows
                .entry(trigger)
                .or_default()
                .entry(next)
                .or_insert_with(|| Row::new(run.at));
            row.support += 1.0;
            row.seen_count += 1;
            row.seen_now = true;
            row.last_seen_at = row.last_seen_at.max(run.at);
            for arguments in &occurrences {
                merge_args(&mut row.next_args, arguments);
            }
        }
    }

    /// Each touched row's confidence and standing under `config`, counted.
    pub fn settle(&mut self, config: &ConsolidationConfig, counts: &mut Counts) {
        for (trigger, rows) in &mut self.rows {
            let Some(runs) = self.triggers.get(trigger).map(|t| t.runs) else {
                continue;
            };
            for row in rows.values_mut().filter(|r| r.touched || r.seen_now) {
                row.trigger_runs = runs;
                row.confidence = if runs > 0.0 { row.support / runs } else { 0.0 };
                let was = row.promoted;
                row.learned = if row.support < config.macros_floor {
                    Learned::Removed
                } else {
                    Learned::Kept
                };
                row.promoted = row.learned == Learned::Kept
                    && row.support >= config.macros_min_support as f64
                    && row.confidence >= config.macros_min_confidence;
                let outcome = match (row.learned, was, row.promoted) {
                    (Learned::Removed, _, _) if row.stored => Some("removed"),
                    (Learned::Removed, _, _) => None,
                    (_, false, true) => Some("promoted"),
                    (_, true, false) => Some("demoted"),
                    _ if !row.seen_now => Some("decayed"),
                    (_, true, true) => Some("updated"),
                    _ => None,
                };
                if let Some(outcome) = outcome {
                    bump(counts, outcome, 1);
                }
            }
        }
    }
}

/// Runs the pass for every user with scheduled sessions (or one user).
pub(super) async fn run(
    memory: &Memory,
    config: &ConsolidationConfig,
    user: Option<&str>,
) -> Result<(Counts, Option<String>), ConsolidateError> {
    let mut counts = Counts::new();
    let mut first_error = None;
    for user_id in macro_store::users(memory, user).await? {
        if let Err(err) = mine_user(memory, config, &user_id, &mut counts).await {
            bump(&mut counts, "users_failed", 1);
            tracing::warn!(%user_id, %err, "macros pass failed for a user");
            first_error.get_or_insert_with(|| format!("user `{user_id}`: {err}"));
        }
        tokio::task::yield_now().await;
    }
    Ok((counts, first_error))
}

/// One user's new runs, in the order they ran, with where each session's cursor goes.
async fn new_runs(
    memory: &Memory,
    user_id: &str,
) -> Result<(Vec<Run>, Vec<Cursor>), ConsolidateError> {
    let mut runs = Vec::new();
    let mut cursors = Vec::new();
    for mut cursor in macro_store::cursors(memory, user_id).await? {
        loop {
            let limit = macro_store::BATCH_TURNS;
            let turns = macro_store::turns_after(memory, user_id, &cursor).await?;
            let whole = complete_prefix(&turns, limit);
            let Some(last) = turns[..whole].last() else {
                break;
            };
            runs.extend(split_runs(&turns[..whole]));
            cursor.upper = last.sequence;
            if turns.len() < limit {
                break;
            }
        }
        if cursor.upper != cursor.read {
            cursors.push(cursor);
        }
    }
    // Stable: within a session (and a shared instant) the order they were stored in.
    runs.sort_by_key(|run| run.at);
    Ok((runs, cursors))
}

async fn mine_user(
    memory: &Memory,
    config: &ConsolidationConfig,
    user_id: &str,
    counts: &mut Counts,
) -> Result<(), ConsolidateError> {
    let (runs, cursors) = new_runs(memory, user_id).await?;
    if cursors.is_empty() {
        return Ok(());
    }
    bump(counts, "users", 1);
    bump(counts, "sessions", cursors.len() as i64);
    bump(counts, "runs", runs.len() as i64);
    let mined: usize = runs.iter().map(|r| r.calls.iter().flatten().count()).sum();
    bump(counts, "mined_calls", mined as i64);
    let mut learning = macro_store::load(memory, user_id, config.macros_decay).await?;
    for run in &runs {
        learning.add(run);
    }
    let mut outcome = Counts::new();
    learning.settle(config, &mut outcome);
    if macro_store::save(memory, user_id, &learning, &cursors).await? {
        for (key, value) in outcome {
            bump(counts, &key, value.as_i64().unwrap_or(0));
        }
    } else {
        bump(counts, "users_raced", 1);
    }
    Ok(())
}

#[cfg(test)]
#[path = "macros_tests.rs"]
mod tests;
