//! The second stage of search (`search.rerank`): the best fused candidates are read again
//! with the query and reordered by a blend of that reading and the fused score. The stage never fails a search: when it is
//! missing or fails, search answers from the fused list and says why (`degraded`).

use std::sync::{Arc, OnceLock};

use super::hits::SearchHit;
use super::Memory;
use crate::config::{EmbeddingConfig, RerankMode};
use crate::embed::{EmbedError, LateInteraction};

/// Characters of a candidate read (the model reads at most `embedding.max_length` word
/// pieces anyway).
const CANDIDATE_CHARS: usize = 1200;

/// Scores candidates against a query, higher is better, one score per candidate.
pub trait CandidateScorer: Send + Sync {
    fn score(&self, query: &str, candidates: &[&str]) -> Result<Vec<f32>, EmbedError>;
}

impl CandidateScorer for LateInteraction {
    fn score(&self, query: &str, candidates: &[&str]) -> Result<Vec<f32>, EmbedError> {
        LateInteraction::score(self, query, candidates)
    }
}

/// The scorer behind the second stage, loaded on the first search that needs it (so the
/// commands that never search do not load a model).
pub struct RerankStage {
    load: Box<dyn Fn() -> Result<Arc<dyn CandidateScorer>, String> + Send + Sync>,
    scorer: OnceLock<Result<Arc<dyn CandidateScorer>, String>>,
}

impl RerankStage {
    /// Late interaction over the configured model's token embeddings.
    pub fn late_interaction(embedding: EmbeddingConfig, cache_mib: usize) -> Self {
        Self::loading(move || {
            LateInteraction::load(&embedding, cache_mib)
                .map(|s| Arc::new(s) as Arc<dyn CandidateScorer>)
                .map_err(|e| e.to_string())
        })
    }

    /// A stage whose scorer `load` makes (an error says why there is none).
    pub fn loading(
        load: impl Fn() -> Result<Arc<dyn CandidateScorer>, String> + Send + Sync + 'static,
    ) -> Self {
        Self {
            load: Box::new(load),
            scorer: OnceLock::new(),
        }
    }

    /// The scorer, loading it the first time; a failed load is remembered, not retried on
    /// every search.
    fn scorer(&self) -> Result<Arc<dyn CandidateScorer>, String> {
        self.scorer
            .get_or_init(|| {
                let loaded = (self.load)();
                if let Err(reason) = &loaded {
                    tracing::warn!(%reason, "the search reranker is unavailable; search answers in fused order");
                }
                loaded
            })
            .clone()
    }
}

impl std::fmt::Debug for RerankStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RerankStage").finish_non_exhaustive()
    }
}

impl Memory {
    /// The same store with this second stage; `search.rerank` decides whether it runs.
    pub fn with_rerank_stage(mut self, stage: Arc<RerankStage>) -> Self {
        self.rerank = Some(stage);
        self
    }

    /// The same store searching with these settings (the same data, caches and stage):
    /// evaluation compares settings side by side with it.
    pub fn with_search_config(mut self, search: crate::config::SearchConfig) -> Self {
        self.search = search;
        self
    }

    /// How many fused candidates the second stage reads for `top_k` hits; 0 when it is off.
    pub(super) fn rerank_depth(&self, top_k: usize) -> usize {
        match self.search.rerank {
            RerankMode::None => 0,
            RerankMode::LateInteraction => self.search.rerank_candidates.max(top_k),
        }
    }

    /// Reorders `hits` (the fused candidates, best first) by the second stage. Returns why
    /// the stage did not run when it was asked for and could not; `hits` are then left
    /// as they were.
    pub(super) async fn rerank(&self, query: &str, hits: &mut [SearchHit]) -> Option<String> {
        if self.search.rerank == RerankMode::None || hits.len() < 2 {
            return None;
        }
        let Some(stage) = self.rerank.clone() else {
            return Some("the reranker is not set up; results are in fused order".into());
        };
        // Each candidate is read alone. Reading a turn between the ends of its neighbours
        // was measured on the LoCoMo dev set: no better (recall@10 0.760 against 0.764),
        // the turns beside a match scored as high as the match, and it cost three times
        // the model time. The fusion already lends a match's score to its neighbours.
        let texts: Vec<String> = hits
            .iter()
            .map(|hit| crate::text::truncate_chars(&hit.text, CANDIDATE_CHARS).to_string())
            .collect();
        let query = query.to_string();
        let scored = tokio::task::spawn_blocking(move || {
            let scorer = stage.scorer()?;
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            scorer.score(&query, &refs).map_err(|e| e.to_string())
        })
        .await;
        let scores = match scored {
            Ok(Ok(scores)) if scores.len() == hits.len() => scores,
            Ok(Ok(scores)) => {
                return Some(format!(
                    "the reranker returned {} scores for {} candidates; results are in fused order",
                    scores.len(),
                    hits.len()
                ))
            }
            Ok(Err(e)) => {
                return Some(format!(
                    "the reranker failed ({e}); results are in fused order"
                ))
            }
            // A panic inside the model is reported, not propagated: search still answers.
            Err(_) => {
                return Some("the reranker stopped unexpectedly; results are in fused order".into())
            }
        };
        blend(hits, &scores, self.search.rerank_weight);
        None
    }
}

/// Sets each hit's score to `(1 - weight) × fused + weight × rerank`, both min-max
/// normalised over the candidates, and sorts best first (ties: the newer first).
/// Blending rather than replacing keeps what the keyword leg knows that the model does
/// not (names, rare words).
fn blend(hits: &mut [SearchHit], scores: &[f32], weight: f64) {
    let fused: Vec<f64> = hits.iter().map(|h| h.score).collect();
    let reranked: Vec<f64> = scores.iter().map(|s| f64::from(*s)).collect();
    let (fused, reranked) = (min_max(&fused), min_max(&reranked));
    for ((hit, f), r) in hits.iter_mut().zip(fused).zip(reranked) {
        hit.score = (1.0 - weight) * f + weight * r;
    }
    hits.sort_by(SearchHit::best_first);
}

/// Values scaled to 0..=1 (all 1 when they are equal; a NaN counts as the worst).
fn min_max(values: &[f64]) -> Vec<f64> {
    let finite = values.iter().copied().filter(|v| v.is_finite());
    let min = finite.clone().fold(f64::INFINITY, f64::min);
    let max = finite.fold(f64::NEG_INFINITY, f64::max);
    values
        .iter()
        .map(|v| {
            if !v.is_finite() {
                0.0
            } else if max > min {
                (v - min) / (max - min)
            } else {
                1.0
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::HitSource;

    fn hit(text: &str, score: f64) -> SearchHit {
        SearchHit {
            keyword_score: None,
            vector_score: None,
            text: text.into(),
            score,
            source: HitSource::Note,
            note_id: None,
            tags: None,
            session_id: None,
            sequence: None,
            role: None,
            name: None,
            at: 0,
        }
    }

    #[test]
    fn the_blend_reorders_by_both_scores() {
        let mut hits = vec![hit("topic", 1.0), hit("answer", 0.8), hit("noise", 0.0)];
        blend(&mut hits, &[0.2, 0.9, 0.1], 0.5);
        assert_eq!(hits[0].text, "answer");
        assert_eq!(hits[2].text, "noise");
        // Weight 0 keeps the fused order.
        let mut hits = vec![hit("topic", 1.0), hit("answer", 0.8)];
        blend(&mut hits, &[0.2, 0.9], 0.0);
        assert_eq!(hits[0].text, "topic");
    }

    #[test]
    fn min_max_handles_ties_and_nan() {
        assert_eq!(min_max(&[2.0, 2.0]), [1.0, 1.0]);
        assert_eq!(min_max(&[1.0, f64::NAN, 3.0]), [0.0, 0.0, 1.0]);
    }
}
