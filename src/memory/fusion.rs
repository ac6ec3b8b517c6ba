//! The fusion of search's two legs: each leg's chunk hits become the notes and events
//! they came from (one candidate each, by its best chunk), each leg's scores are min-max
//! normalised and weighed, and an event lends part of its score to its neighbours.

use std::collections::{HashMap, HashSet};

use super::in_list::{of_user, placeholders, MAX_IDS_PER_STATEMENT};
use super::Result;

/// Chunks each leg reads for each candidate it brings (see
/// [`best_per_target`]).
pub(super) const CHUNKS_PER_CANDIDATE: usize = 3;

/// A note's or event's scores from each leg, before fusion.
#[derive(Default, Clone, Copy)]
pub(super) struct LegScores {
    pub(super) vector: Option<f64>,
    pub(super) keyword: Option<f64>,
}

/// Min-max normalises one leg in place: best → 1, worst → 0, a single value → 1.
pub(super) fn normalize<K>(
    scores: &mut HashMap<K, LegScores>,
    leg: fn(&mut LegScores) -> &mut Option<f64>,
) {
    let values: Vec<f64> = scores.values_mut().filter_map(|s| *leg(s)).collect();
    let (Some(min), Some(max)) = (
        values.iter().copied().reduce(f64::min),
        values.iter().copied().reduce(f64::max),
    ) else {
        return;
    };
    for s in scores.values_mut() {
        if let Some(v) = leg(s) {
            *v = if max > min {
                (*v - min) / (max - min)
            } else {
                1.0
            };
        }
    }
}

/// Lends each event's score, scaled by `weight`, to the events next to it in its session
/// (half as much two steps away). The answer to a question often sits in the turn after
/// the one that matches it, or a multi-turn exchange matches as a whole; both surface this
/// way. Notes stand alone, and so do the events of the sessions in `standing_alone`.
pub(super) fn spread_to_neighbours(
    targets: &mut HashMap<Target, f64>,
    weight: f64,
    standing_alone: &HashSet<String>,
) {
    if weight <= 0.0 {
        return;
    }
    let events: Vec<(String, i64, f64)> = targets
        .iter()
        .filter_map(|(target, score)| match target {
            Target::Event(session, sequence) if !standing_alone.contains(session) => {
                Some((session.clone(), *sequence, *score))
            }
            Target::Event(..) | Target::Note(_) => None,
        })
        .collect();
    for (session, sequence, score) in events {
        for (distance, share) in [(1, weight), (2, weight / 2.0)] {
            for neighbour in [sequence - distance, sequence + distance] {
                if neighbour >= 1 {
                    *targets
                        .entry(Target::Event(session.clone(), neighbour))
                        .or_insert(0.0) += share * score;
                }
            }
        }
    }
}

/// The best `k` notes and events of one leg's chunk hits, each with the score of its
/// best chunk: a long turn's many matching chunks are one candidate, not many.
pub(super) fn best_per_target(
    hits: impl Iterator<Item = (i64, f64)>,
    sources: &HashMap<i64, Source>,
    k: usize,
) -> Vec<(Source, f64)> {
    let mut best: HashMap<&Target, (&Source, f64)> = HashMap::new();
    for (chunk_id, score) in hits {
        let Some(source) = sources.get(&chunk_id) else {
            continue;
        };
        let entry = best
            .entry(&source.target)
            .or_insert((source, f64::NEG_INFINITY));
        entry.1 = entry.1.max(score);
    }
    let mut ranked: Vec<(Source, f64)> = best
        .into_values()
        .map(|(source, score)| (source.clone(), score))
        .collect();
    // Ties: the newer first.
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.at.cmp(&a.0.at)));
    ranked.truncate(k);
    ranked
}

/// Each leg's best `candidates` notes and events of its chunk hits (each by its best
/// chunk, see [`best_per_target`]), normalised by leg; and where each came from.
pub(super) fn candidates_by_leg(
    keyword_hits: Vec<(i64, f64)>,
    vector_hits: Vec<(i64, f32)>,
    chunk_sources: &HashMap<i64, Source>,
    candidates: usize,
) -> (HashMap<Target, LegScores>, HashMap<Target, Source>) {
    let (mut scores, sources) =
        raw_candidates_by_leg(keyword_hits, vector_hits, chunk_sources, candidates);
    normalize(&mut scores, |s| &mut s.vector);
    normalize(&mut scores, |s| &mut s.keyword);
    (scores, sources)
}

/// [`candidates_by_leg`] with each leg's raw scores (bm25, cosine).
pub(super) fn raw_candidates_by_leg(
    keyword_hits: Vec<(i64, f64)>,
    vector_hits: Vec<(i64, f32)>,
    chunk_sources: &HashMap<i64, Source>,
    candidates: usize,
) -> (HashMap<Target, LegScores>, HashMap<Target, Source>) {
    let mut scores: HashMap<Target, LegScores> = HashMap::new();
    let mut sources: HashMap<Target, Source> = HashMap::new();
    let vector_hits = vector_hits.into_iter().map(|(id, s)| (id, f64::from(s)));
    let keyword = best_per_target(keyword_hits.into_iter(), chunk_sources, candidates);
    let vector = best_per_target(vector_hits, chunk_sources, candidates);
    for (hits, leg) in [
        (
            keyword,
            (|s| &mut s.keyword) as fn(&mut LegScores) -> &mut Option<f64>,
        ),
        (vector, |s| &mut s.vector),
    ] {
        for (source, score) in hits {
            *leg(scores.entry(source.target.clone()).or_default()) = Some(score);
            sources.insert(source.target.clone(), source);
        }
    }
    (scores, sources)
}

/// Scales one leg's raw scores in place to shares of `best` (clamped to 0..=1); all 1
/// when there is no positive best.
pub(super) fn scale_to_best<K>(
    scores: &mut HashMap<K, LegScores>,
    leg: fn(&mut LegScores) -> &mut Option<f64>,
    best: Option<f64>,
) {
    for s in scores.values_mut() {
        if let Some(v) = leg(s) {
            *v = match best {
                Some(best) if best > 0.0 => (*v / best).clamp(0.0, 1.0),
                _ => 1.0,
            };
        }
    }
}

/// Each candidate's fused score: its legs' normalised scores by `search`'s weights.
pub(super) fn fuse(
    scores: &HashMap<Target, LegScores>,
    search: &crate::config::SearchConfig,
) -> HashMap<Target, f64> {
    scores
        .iter()
        .map(|(target, s)| {
            let fused = search.vector_weight * s.vector.unwrap_or(0.0)
                + search.keyword_weight * s.keyword.unwrap_or(0.0);
            (target.clone(), fused)
        })
        .collect()
}

/// Where a chunk came from.
#[derive(Clone)]
pub(super) struct Source {
    pub(super) target: Target,
    /// When its note was written or its event happened (UTC ms).
    pub(super) at: i64,
    /// Whether it is an assistant's turn.
    pub(super) by_assistant: bool,
}

/// What a chunk points at: a note or an event.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(super) enum Target {
    Note(String),
    Event(String, i64),
}

/// Where each of `ids` came from, for the chunks of the user's that are in
/// `sessions`; the others are left out. In slices, as a statement takes at most 32,766
/// parameters.
pub(super) async fn targets_of(
    conn: &crate::db::Conn,
    user_id: &str,
    sessions: &[String],
    ids: &[i64],
) -> Result<HashMap<i64, Source>> {
    let mut targets = HashMap::with_capacity(ids.len());
    for slice in ids.chunks(MAX_IDS_PER_STATEMENT) {
        let mut params: Vec<libsql::Value> = vec![user_id.into()];
        params.extend(slice.iter().map(|id| libsql::Value::from(*id)));
        let mut rows = conn.query(&targets_sql(slice.len()), params).await?;
        while let Some(row) = rows.next().await? {
            let (chunk_id, session_id, source) = source_of(&row)?;
            if sessions.contains(&session_id) {
                targets.insert(chunk_id, source);
            }
        }
    }
    Ok(targets)
}

/// Reads `count` chunks by id (`?2`…) for user `?1`.
pub(super) fn targets_sql(count: usize) -> String {
    format!(
        "SELECT {SOURCE_COLUMNS}
         WHERE c.chunk_id IN ({}) AND {}",
        placeholders(2, count),
        of_user("c.user_id")
    )
}

/// The chunks of the events of session `session_key` (the user's) said inside `window`,
/// with where each came from: at most `limit`, the latest first.
pub(super) async fn targets_in_window(
    conn: &crate::db::Conn,
    user_id: &str,
    session_key: &str,
    window: super::when::TimeWindow,
    limit: usize,
) -> Result<HashMap<i64, Source>> {
    let mut rows = conn
        .query(
            &format!(
                "SELECT {SOURCE_COLUMNS}
                 WHERE c.user_id = ?1 AND c.created_at >= ?2 AND c.created_at < ?3
                   AND c.session_id = ?4 AND c.note_id IS NULL
                 ORDER BY c.created_at DESC, c.chunk_id DESC LIMIT ?5"
            ),
            libsql::params![
                user_id,
                window.since,
                window.until,
                session_key,
                i64::try_from(limit).unwrap_or(i64::MAX)
            ],
        )
        .await?;
    let mut targets = HashMap::new();
    while let Some(row) = rows.next().await? {
        let (chunk_id, _, source) = source_of(&row)?;
        targets.insert(chunk_id, source);
    }
    Ok(targets)
}

/// What [`source_of`] reads, from `chunks c` alone: a turn's role is kept with its chunks.
const SOURCE_COLUMNS: &str = "c.chunk_id, c.session_id, c.note_id, c.sequence_start,
        c.created_at, c.role
     FROM chunks c";

/// A chunk's id, session and where it came from, from a row of [`SOURCE_COLUMNS`].
fn source_of(row: &libsql::Row) -> std::result::Result<(i64, String, Source), libsql::Error> {
    let session_id: String = row.get(1)?;
    let target = match row.get::<Option<String>>(2)? {
        Some(note_id) => Target::Note(note_id),
        None => Target::Event(session_id.clone(), row.get(3)?),
    };
    let role: Option<String> = row.get(5)?;
    let source = Source {
        target,
        at: row.get(4)?,
        by_assistant: role.as_deref() == Some("assistant"),
    };
    Ok((row.get(0)?, session_id, source))
}
