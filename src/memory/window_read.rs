//! A query that names a time ("what did I say about the garden in March?") is also asked
//! of the turns said then alone. Each leg reads among those turns' chunks only (at most
//! [`MAX_WINDOW_CHUNKS`], the latest), and each of their best candidates is scored as a
//! share of the leg's best over the whole conversation: the best match said then is a
//! candidate however far it is from the conversation's best few, and scores by how well
//! it matches. Search keeps the better of a turn's two scores, then prefers the turns
//! said then (`search.time_weight`).
//!
//! Measured on the chats dev set (hash): temporal questions' recall@10 0.591 → 0.705;
//! min-max normalising among the window instead gave 0.682 (docs/benchmarks.md).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::fusion::{
    raw_candidates_by_leg, scale_to_best, targets_in_window, LegScores, Source, Target,
    CHUNKS_PER_CANDIDATE,
};
use super::keywords::{self, SessionKeywords};
use super::when::TimeWindow;
use super::{vectors, Result};

/// The most chunks said inside a query's time that the legs read (the latest of them,
/// when there are more): a bound on a wide window's cost ("this year").
pub(super) const MAX_WINDOW_CHUNKS: usize = 4096;

/// What a search already has of its two legs.
pub(super) struct Legs<'a> {
    /// The session's keyword indexes and the query's terms, when it has words.
    pub(super) keyword: Option<(&'a [Arc<SessionKeywords>], &'a [u64])>,
    /// The query's vector (all zeros when search answers by keywords only).
    pub(super) query_vector: &'a [f32],
    pub(super) context_weight: f64,
    /// The embedding model whose stored vectors are read.
    pub(super) model: &'a str,
    /// The sessions searched, by key (a chunk of another is not read).
    pub(super) sessions: &'a [String],
    /// Each leg's best raw score over the whole conversation (keyword, vector).
    pub(super) best: (Option<f64>, Option<f64>),
}

/// The best `candidates` events of session `session_key` said inside `window`, by each
/// leg, each scored as a share of that leg's best over the whole conversation (`legs.best`;
/// not min-max among themselves, which would make the best of a window of small talk
/// score 1); and where each came from. Empty when nothing was said then.
pub(super) async fn candidates(
    conn: &crate::db::Conn,
    user_id: &str,
    session_key: &str,
    window: TimeWindow,
    legs: Legs<'_>,
    candidates: usize,
) -> Result<(HashMap<Target, LegScores>, HashMap<Target, Source>)> {
    let inside = targets_in_window(conn, user_id, session_key, window, MAX_WINDOW_CHUNKS).await?;
    if inside.is_empty() {
        return Ok(Default::default());
    }
    let pool = candidates.saturating_mul(CHUNKS_PER_CANDIDATE);
    let among: Arc<HashSet<i64>> = Arc::new(inside.keys().copied().collect());
    // Every copy the search read, the notes' too, though only the conversation's chunks
    // can be among these: bm25's statistics (chunks, mean length, how many hold a term)
    // must be the whole search's for a score here to be a share of the leg's best.
    let keyword_hits = match legs.keyword {
        Some((copies, terms)) => keywords::best_matches(
            copies,
            terms,
            pool,
            legs.context_weight,
            Some(among.clone()),
        ),
        None => Vec::new(),
    };
    let vector_hits = if legs.query_vector.iter().any(|x| *x != 0.0) {
        // Every chunk said then is read: no bound rules one out.
        let all: Vec<(i64, f64)> = among.iter().map(|id| (*id, f64::INFINITY)).collect();
        // Asked for all of them, so it reads them in one statement (up to 10,000).
        let mut scored = vectors::rescore(
            conn,
            legs.model,
            legs.sessions,
            &all,
            legs.query_vector,
            all.len(),
        )
        .await?;
        scored.truncate(pool);
        scored
    } else {
        Vec::new()
    };
    let (mut scores, sources) =
        raw_candidates_by_leg(keyword_hits, vector_hits, &inside, candidates);
    scale_to_best(&mut scores, |s| &mut s.keyword, legs.best.0);
    scale_to_best(&mut scores, |s| &mut s.vector, legs.best.1);
    Ok((scores, sources))
}
