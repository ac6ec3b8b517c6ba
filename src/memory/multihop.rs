//! Multi-hop retrieval: a question whose evidence is spread over several sessions ("where
//! has Melanie camped?") matches one of its turns well and the others less. A second
//! round asks again with the question and each of the first round's best hits together,
//! so turns that share what those hits are about surface too; the rounds' scores are
//! blended.

use std::collections::HashMap;

use super::hits::{SearchHit, SearchRequest};
use super::Memory;
use crate::config::RerankMode;

/// Characters of a seed hit added to the question: the gist, not a whole note.
const SEED_CHARS: usize = 300;

/// A hit's identity across rounds.
fn key(hit: &SearchHit) -> (Option<String>, Option<String>, Option<i64>) {
    (hit.note_id.clone(), hit.session_id.clone(), hit.sequence)
}

impl Memory {
    /// Runs the second round for `request` when `search.multi_hop_seeds` asks for one and
    /// blends it into `hits` (the first round's, best first, scores comparable with each
    /// other). A failing second round leaves the first round's hits as they are.
    pub(super) async fn second_round(&self, request: &SearchRequest, hits: &mut Vec<SearchHit>) {
        let seeds = self.search.multi_hop_seeds;
        if seeds == 0 || hits.is_empty() {
            return;
        }
        // The rounds after the first use the fusion alone: the model's time goes to the
        // first round's candidates. Nor do they prefer a speaker: their query holds the
        // seed's text, whose names and time words the user did not ask about (the first
        // round did).
        let mut plain = self.search.clone();
        plain.multi_hop_seeds = 0;
        plain.rerank = RerankMode::None;
        plain.speaker_weight = 0.0;
        plain.time_weight = 0.0;
        let plain = self.clone().with_search_config(plain);
        let depth = hits.len();
        let mut rounds: Vec<Vec<SearchHit>> = Vec::new();
        for seed in hits.iter().take(seeds) {
            let mut query = format!(
                "{}\n{}",
                request.query,
                crate::text::truncate_chars(&seed.text, SEED_CHARS)
            );
            let fits = crate::text::truncate_bytes(&query, crate::input::MAX_QUERY_BYTES).len();
            query.truncate(fits);
            let next = SearchRequest {
                query,
                top_k: Some(depth.min(self.search.max_top_k)),
                ..request.clone()
            };
            match Box::pin(plain.search_checked(&next, true)).await {
                Ok(results) => rounds.push(results.hits),
                Err(e) => {
                    tracing::debug!(error = %e, "the second search round failed; keeping the first");
                    return;
                }
            }
        }
        blend_rounds(hits, rounds, self.search.multi_hop_weight);
    }
}

/// Each hit's score becomes its first-round score plus `weight` × its mean score over the
/// later rounds, every round min-max normalised; hits only a later round found join with
/// a first-round score of 0.
fn blend_rounds(hits: &mut Vec<SearchHit>, rounds: Vec<Vec<SearchHit>>, weight: f64) {
    if rounds.is_empty() {
        return;
    }
    let first = normalised(hits);
    let mut by_key: HashMap<_, (SearchHit, f64, f64)> = hits
        .drain(..)
        .zip(first)
        .map(|(hit, score)| (key(&hit), (hit, score, 0.0)))
        .collect();
    let count = rounds.len() as f64;
    for round in rounds {
        let scores = normalised(&round);
        for (hit, score) in round.into_iter().zip(scores) {
            by_key.entry(key(&hit)).or_insert_with(|| (hit, 0.0, 0.0)).2 += score / count;
        }
    }
    hits.extend(by_key.into_values().map(|(mut hit, first, later)| {
        hit.score = first + weight * later;
        hit
    }));
    hits.sort_by(SearchHit::best_first);
}

/// The hits' scores min-max normalised (all 1 when equal).
fn normalised(hits: &[SearchHit]) -> Vec<f64> {
    let min = hits.iter().map(|h| h.score).fold(f64::INFINITY, f64::min);
    let max = hits
        .iter()
        .map(|h| h.score)
        .fold(f64::NEG_INFINITY, f64::max);
    hits.iter()
        .map(|h| {
            if max > min {
                (h.score - min) / (max - min)
            } else {
                1.0
            }
        })
        .collect()
}
