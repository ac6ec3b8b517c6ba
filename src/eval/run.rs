//! Ingests each conversation through the real append path, as its own user, and asks its
//! questions through the real hybrid search scoped to that user and conversation.

use std::collections::HashMap;

use super::tally::{Report, Tally};
use super::EvalError;
use crate::memory::{Memory, NewEvent, SearchRequest};

/// One conversation of a dev set, as the store will be given it.
pub struct Conversation {
    /// The user (and session) it is stored as.
    pub user: String,
    /// Each turn with its id in the dev set, in order.
    pub turns: Vec<(String, NewEvent)>,
    pub questions: Vec<Question>,
}

pub struct Question {
    pub text: String,
    /// The dev set's name for the kind of question (LoCoMo's category number, or `fact`,
    /// `temporal`…): recall is also reported per kind.
    pub kind: String,
    /// The ids of the turns that answer it.
    pub evidence: Vec<String>,
    /// When it is asked (UTC ms), for questions whose time words ("last week") are
    /// relative; now when absent.
    pub asked_at: Option<i64>,
}

/// Runs the evaluation of `conversations` on `memory` (use a scratch database) for each k
/// in `ks`.
pub async fn evaluate(
    memory: &Memory,
    conversations: &[Conversation],
    ks: &[usize],
) -> Result<Report, EvalError> {
    let stages = [(String::new(), memory.clone())];
    let mut reports = evaluate_stages(conversations, ks, &stages).await?;
    Ok(reports.remove(0).1)
}

/// Ingests the conversations once through the first store and asks every question of
/// each named store in turn (clones of one store with different search settings: see
/// [`Memory::with_search_config`]), so stages are compared on the same data in one run.
pub async fn evaluate_stages(
    conversations: &[Conversation],
    ks: &[usize],
    stages: &[(String, Memory)],
) -> Result<Vec<(String, Report)>, EvalError> {
    let Some((_, memory)) = stages.first() else {
        return Ok(Vec::new());
    };
    let max_k = ks.iter().copied().max().unwrap_or(10);
    let mut tallies: Vec<Tally> = stages.iter().map(|_| Tally::default()).collect();
    let (mut skipped, mut turns, mut refused) = (0, 0, 0);
    for conversation in conversations {
        let session = conversation.user.clone();
        // A turn the store would refuse (over memory.max_text_bytes, and not one
        // `oversize` lets it cut) is counted and left out, so one huge turn does not
        // stop the run; the questions about it count as misses.
        let kept: Vec<&(String, NewEvent)> = conversation
            .turns
            .iter()
            .filter(|(_, event)| !memory.would_refuse(event))
            .collect();
        refused += conversation.turns.len() - kept.len();
        let events: Vec<NewEvent> = kept.iter().map(|(_, e)| e.clone()).collect();
        let sequences = if events.is_empty() {
            Vec::new()
        } else {
            memory.append(&conversation.user, &session, &events).await?
        };
        turns += events.len();
        // Ask once every turn has its vector, as a live store has within seconds.
        memory.embed_pending(&|_, _| {}).await?;
        let id_by_sequence: HashMap<i64, &str> = sequences
            .iter()
            .zip(&kept)
            .map(|(seq, (id, _))| (*seq, id.as_str()))
            .collect();
        for question in &conversation.questions {
            if question.evidence.is_empty() {
                skipped += 1;
                continue;
            }
            let request = SearchRequest {
                user_id: conversation.user.clone(),
                query: question.text.clone(),
                top_k: Some(max_k),
                session_id: Some(session.clone()),
                asked_at: question.asked_at,
                ..Default::default()
            };
            for ((_, stage), tally) in stages.iter().zip(tallies.iter_mut()) {
                let started = std::time::Instant::now();
                let mut hits = stage.search(&request).await?;
                // An order question's hits are told oldest first; the set a caller
                // asking for k gets is still the k best, so each cut-off is taken by score.
                hits.sort_by(crate::memory::SearchHit::best_first);
                tally
                    .latencies
                    .push(started.elapsed().as_secs_f64() * 1000.0);
                let found: Vec<&str> = hits
                    .iter()
                    .filter_map(|h| h.sequence.and_then(|s| id_by_sequence.get(&s).copied()))
                    .collect();
                tally.add(&question.kind, &question.evidence, &found, ks);
            }
        }
    }
    Ok(stages
        .iter()
        .zip(tallies)
        .map(|((name, _), tally)| {
            (
                name.clone(),
                tally.report(conversations.len(), turns, skipped, refused),
            )
        })
        .collect())
}
