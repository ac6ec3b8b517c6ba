//! The vector leg. Each session's vectors are kept in memory as one-byte codes
//! ([`CodeRows`]), loaded lazily (from the session's stored blocks of codes, then its
//! newer vector rows), topped up with only the rows added since (vector ids only grow),
//! reloaded whole after any removal, and bounded by an LRU memory budget. A scan of the
//! codes finds every chunk that could be among the best; those few are scored exactly
//! from their vectors in the database. The result is exact for the sessions in scope
//! (approximate only in a session of [`COARSE_ROWS`](super::codes::COARSE_ROWS) rows or
//! more, whose scan ranks rows coarsely first), and only those sessions are scanned, so no
//! other user's rows can crowd out the right ones (the failure of a global ANN index
//! filtered afterwards).

use std::sync::Arc;

use super::blocks::{self, BLOCK_ROWS};
use super::codes::CodeRows;
use super::matrix::{best_k, dot};
use super::session_lru::{DueSessions, SessionLru, Weighed};
use crate::embed::blob_to_vectors;

/// What tells one state of a session's vectors from another besides new rows: its
/// `vector_removals` (every removal counts) and its `created_at` (a session forgotten and
/// made again under the same id starts its count over).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SessionTag {
    pub removals: i64,
    pub created_at: i64,
}

/// One session's vectors as codes.
#[derive(Clone)]
pub(super) struct SessionVectors {
    model: String,
    /// The session's tag when this copy was made.
    tag: SessionTag,
    last_vector_id: i64,
    codes: CodeRows,
    /// Rows read from stored blocks (the rest from vector rows).
    from_blocks: usize,
}

impl Weighed for SessionVectors {
    fn bytes(&self) -> usize {
        self.codes.bytes()
    }
}

impl SessionVectors {
    /// Vectors held.
    pub(super) fn rows(&self) -> usize {
        self.codes.rows()
    }
}

/// How a session's cached vectors were loaded: for diagnostics and benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachedVectors {
    pub rows: usize,
    /// Of them, rows read from stored blocks of codes.
    pub from_blocks: usize,
    pub bytes: usize,
}

pub(super) struct VectorCache {
    copies: SessionLru<SessionVectors>,
    /// Sessions with a block's worth of vectors not in stored blocks yet: packed when the
    /// embedder idles.
    pub(super) due: DueSessions,
}

impl VectorCache {
    pub(super) fn new(budget_bytes: usize) -> Self {
        Self {
            copies: SessionLru::new(budget_bytes),
            due: DueSessions::default(),
        }
    }

    /// How the cached copy of `session_id`'s vectors was loaded, if one is cached.
    pub(super) fn cached(&self, session_id: &str) -> Option<CachedVectors> {
        self.copies.peek(session_id).map(|v| CachedVectors {
            rows: v.rows(),
            from_blocks: v.from_blocks,
            bytes: v.bytes(),
        })
    }

    /// This session's vectors, brought up to date with the database. `tag` is the
    /// session's as just read: a cached copy made at another is missing a removal (or is
    /// of an earlier session of that id) and is loaded again whole.
    pub(super) async fn current(
        &self,
        conn: &crate::db::Conn,
        session_id: &str,
        tag: SessionTag,
        model: &str,
        dimensions: usize,
    ) -> Result<Arc<SessionVectors>, libsql::Error> {
        let fits = |c: &SessionVectors| {
            c.tag == tag && c.model == model && c.codes.dimensions() == dimensions
        };
        let cached = self.copies.peek(session_id).filter(|c| fits(c));
        let from = cached.as_ref().map_or(0, |c| c.last_vector_id);
        // Whole stored blocks first (each one row of a few hundred KiB, instead of
        // thousands of vector rows), then the vector rows after the last block.
        let mut added = SessionVectors {
            model: model.to_string(),
            tag,
            last_vector_id: from,
            codes: CodeRows::new(dimensions),
            from_blocks: 0,
        };
        added.last_vector_id = blocks::load_chain(
            conn,
            session_id,
            model,
            tag.removals,
            from,
            &mut added.codes,
        )
        .await;
        added.from_blocks = added.codes.rows();
        let mut rows = conn
            .query(
                "SELECT vector_id, chunk_id, embedding FROM chunk_vectors
                 WHERE session_id = ?1 AND model = ?2 AND vector_id > ?3 ORDER BY vector_id",
                libsql::params![session_id, model, added.last_vector_id],
            )
            .await?;
        let mut from_rows = 0;
        while let Some(row) = rows.next().await? {
            let blob: Vec<u8> = row.get(2)?;
            added.last_vector_id = row.get(0)?;
            from_rows += 1;
            // A chunk's own vector and its sentences' are rows of the same chunk.
            let chunk_id = row.get(1)?;
            for v in blob_to_vectors(&blob, dimensions).unwrap_or_default() {
                added.codes.push(chunk_id, &v);
            }
        }
        drop(rows);
        if from_rows >= BLOCK_ROWS {
            self.due.note_due(session_id);
        }
        if added.last_vector_id == from {
            if let Some(cached) = cached {
                return Ok(cached);
            }
        }
        // Extend in place when no other search holds this copy, else copy it once.
        let vectors = match cached {
            Some(_) => {
                // Only the copy these rows follow: another search may have replaced it
                // meanwhile with one of another tag or length.
                let arc = self
                    .copies
                    .take_if(session_id, |c| fits(c) && c.last_vector_id == from);
                match arc {
                    Some(arc) => {
                        let mut vectors = Arc::try_unwrap(arc).unwrap_or_else(|a| (*a).clone());
                        vectors.append(added);
                        vectors
                    }
                    None => {
                        return Box::pin(self.current(conn, session_id, tag, model, dimensions))
                            .await
                    }
                }
            }
            None => {
                // A whole load: its length is final until the next top-up.
                added.codes.shrink_to_fit();
                added
            }
        };
        let vectors = Arc::new(vectors);
        self.copies.put(session_id, vectors.clone());
        Ok(vectors)
    }
}

impl SessionVectors {
    /// Appends rows loaded after this copy's last vector.
    fn append(&mut self, newer: SessionVectors) {
        self.codes.append(newer.codes);
        self.from_blocks += newer.from_blocks;
        self.last_vector_id = newer.last_vector_id;
    }
}

/// The chunks of several sessions that may be among the `k` most similar to `query`,
/// each with the most its exact score can be (approximately in a session of
/// [`COARSE_ROWS`](super::codes::COARSE_ROWS) rows or more; a user's chunk is a row and one a
/// sentence).
pub(super) fn candidates_all(
    all: &[Arc<SessionVectors>],
    query: &[f32],
    k: usize,
) -> Vec<(i64, f64)> {
    all.iter()
        .flat_map(|v| {
            v.codes
                .likely_candidates(query, k)
                .into_iter()
                .map(|(row, high)| (v.codes.chunk_id(row), high))
        })
        .collect()
}

/// `session_id`'s tag, or `None` when there is no such session.
pub(super) async fn tag_of(
    conn: &impl crate::db::Queryable,
    session_id: &str,
) -> Result<Option<SessionTag>, libsql::Error> {
    crate::db::query_first_row(
        conn,
        "SELECT vector_removals, created_at FROM sessions WHERE session_id = ?1",
        [session_id],
        |row| {
            Ok(SessionTag {
                removals: row.get(0)?,
                created_at: row.get(1)?,
            })
        },
    )
    .await
}

/// Chunk ids read by one statement when rescoring.
const RESCORE_SLICE: usize = 10_000;

/// The `k` of `candidates` (chunk ids, each with the most it can score) whose stored
/// `model` vectors in `sessions` score best against `query`, best first, each with its
/// exact score (the best of its stored vectors: its own and its sentences'); chunks
/// removed meanwhile (or whose id now names a chunk of another session) are left out.
/// Candidates are read best bound first, and reading stops once `k` exact scores beat
/// every bound left: at a million rows a scan leaves a few hundred candidates, and most
/// need not be read.
pub(super) async fn rescore(
    conn: &crate::db::Conn,
    model: &str,
    sessions: &[String],
    candidates: &[(i64, f64)],
    query: &[f32],
    k: usize,
) -> Result<Vec<(i64, f32)>, libsql::Error> {
    let mut order = candidates.to_vec();
    order.sort_by(|a, b| b.1.total_cmp(&a.1));
    // A chunk's sentences are rows of their own in the scan: read each chunk once, at its
    // best bound.
    let mut seen = std::collections::HashSet::with_capacity(order.len());
    order.retain(|(id, _)| seen.insert(*id));
    let mut scored = Vec::with_capacity(order.len().min(RESCORE_SLICE));
    let mut read = 0;
    while read < order.len() {
        // A first read of half as many again as wanted, then k at a time.
        let want = if read == 0 { k + k / 2 } else { k };
        let slice = &order[read..(read + want.clamp(16, RESCORE_SLICE)).min(order.len())];
        read += slice.len();
        let mut params: Vec<libsql::Value> = vec![model.into()];
        params.extend(slice.iter().map(|(id, _)| libsql::Value::from(*id)));
        let mut rows = conn
            .query(
                &format!(
                    "SELECT chunk_id, session_id, embedding FROM chunk_vectors
                     WHERE model = ?1 AND chunk_id IN ({})",
                    super::in_list::placeholders(2, slice.len())
                ),
                params,
            )
            .await?;
        while let Some(row) = rows.next().await? {
            // A chunk id reused by another session since the codes were loaded.
            if !sessions.contains(&row.get::<String>(1)?) {
                continue;
            }
            let blob: Vec<u8> = row.get(2)?;
            // The chunk scores as the best of its own vector and its sentences'.
            let best = blob_to_vectors(&blob, query.len())
                .unwrap_or_default()
                .iter()
                .map(|v| dot(v, query))
                .reduce(f32::max);
            if let Some(best) = best {
                scored.push((row.get::<i64>(0)?, best));
            }
        }
        if let Some((_, next_bound)) = order.get(read) {
            let best = best_k(scored.iter().copied(), k);
            if best.len() == k
                && best
                    .last()
                    .is_some_and(|(_, s)| f64::from(*s) > *next_bound)
            {
                break;
            }
        }
    }
    Ok(best_k(scored, k))
}
