//! The exact vector leg. Each session's vectors are kept in memory as one contiguous
//! matrix, loaded lazily, topped up with only the rows added since (vector ids only grow),
//! reloaded whole after any removal, and bounded by an LRU memory budget. A scan is exact
//! for the sessions in scope, so no other user's rows can crowd out the right ones (the
//! failure of a global ANN index filtered afterwards).

use std::sync::{Arc, Mutex};

use lru::LruCache;

use super::matrix::VectorMatrix;
use crate::embed::blob_to_vector;

/// One session's vectors as a contiguous matrix.
#[derive(Clone)]
pub(super) struct SessionVectors {
    model: String,
    /// `sessions.vector_removals` when this copy was made.
    removals: i64,
    last_vector_id: i64,
    matrix: VectorMatrix,
}

impl SessionVectors {
    fn bytes(&self) -> usize {
        self.matrix.bytes()
    }

    /// Vectors held.
    pub(super) fn rows(&self) -> usize {
        self.matrix.rows()
    }
}

pub(super) struct VectorCache {
    state: Mutex<CacheState>,
    budget_bytes: usize,
}

struct CacheState {
    entries: LruCache<String, Arc<SessionVectors>>,
    bytes: usize,
}

impl VectorCache {
    pub(super) fn new(budget_bytes: usize) -> Self {
        Self {
            state: Mutex::new(CacheState {
                entries: LruCache::unbounded(),
                bytes: 0,
            }),
            budget_bytes,
        }
    }

    fn take(&self, session_id: &str) -> Option<Arc<SessionVectors>> {
        let mut state = self.state.lock().expect("vector cache lock");
        let entry = state.entries.pop(session_id)?;
        state.bytes -= entry.bytes();
        Some(entry)
    }

    fn peek(&self, session_id: &str) -> Option<Arc<SessionVectors>> {
        let mut state = self.state.lock().expect("vector cache lock");
        state.entries.get(session_id).cloned()
    }

    fn put(&self, session_id: &str, vectors: Arc<SessionVectors>) {
        let mut state = self.state.lock().expect("vector cache lock");
        state.bytes += vectors.bytes();
        if let Some(old) = state.entries.put(session_id.to_string(), vectors) {
            state.bytes -= old.bytes();
        }
        while state.bytes > self.budget_bytes && state.entries.len() > 1 {
            match state.entries.pop_lru() {
                Some((_, evicted)) => state.bytes -= evicted.bytes(),
                None => break,
            }
        }
    }

    /// The `k` chunks of `session_id` whose `model` vectors are most similar (cosine, as
    /// all vectors are unit length) to `query`, best first. Chunks with no positive
    /// similarity are left out.
    pub(super) async fn top_k(
        &self,
        conn: &crate::db::Conn,
        session_id: &str,
        model: &str,
        query: &[f32],
        k: usize,
    ) -> Result<Vec<(i64, f32)>, libsql::Error> {
        let removals: Option<i64> = crate::db::query_scalar(
            conn,
            "SELECT vector_removals FROM sessions WHERE session_id = ?1",
            [session_id],
        )
        .await?;
        // A session that does not exist has no vectors.
        let Some(removals) = removals else {
            return Ok(Vec::new());
        };
        let vectors = self
            .current(conn, session_id, removals, model, query.len())
            .await?;
        Ok(vectors.matrix.top_k(query, k))
    }

    /// This session's vectors, brought up to date with the database. `removals` is the
    /// session's `vector_removals` as just read: a cached copy made at another count is
    /// missing a removal and is loaded again whole.
    pub(super) async fn current(
        &self,
        conn: &crate::db::Conn,
        session_id: &str,
        removals: i64,
        model: &str,
        dimensions: usize,
    ) -> Result<Arc<SessionVectors>, libsql::Error> {
        let cached = self.peek(session_id).filter(|c| {
            c.removals == removals && c.model == model && c.matrix.dimensions() == dimensions
        });
        let from = cached.as_ref().map_or(0, |c| c.last_vector_id);
        let mut rows = conn
            .query(
                "SELECT vector_id, chunk_id, embedding FROM chunk_vectors
                 WHERE session_id = ?1 AND model = ?2 AND vector_id > ?3 ORDER BY vector_id",
                libsql::params![session_id, model, from],
            )
            .await?;
        let mut added: Vec<(i64, i64, Vec<f32>)> = Vec::new();
        while let Some(row) = rows.next().await? {
            let blob: Vec<u8> = row.get(2)?;
            match blob_to_vector(&blob) {
                Some(v) if v.len() == dimensions => added.push((row.get(0)?, row.get(1)?, v)),
                _ => continue,
            }
        }
        if added.is_empty() {
            if let Some(cached) = cached {
                return Ok(cached);
            }
        }
        // Extend in place when no other search holds this copy, else copy it once.
        let mut vectors = match cached {
            Some(_) => {
                let arc = self.take(session_id).filter(|c| c.last_vector_id == from);
                match arc {
                    Some(arc) => Arc::try_unwrap(arc).unwrap_or_else(|a| (*a).clone()),
                    None => {
                        return Box::pin(
                            self.current(conn, session_id, removals, model, dimensions),
                        )
                        .await
                    }
                }
            }
            None => SessionVectors {
                model: model.to_string(),
                removals,
                last_vector_id: 0,
                matrix: VectorMatrix::new(dimensions),
            },
        };
        vectors.matrix.reserve(added.len());
        for (vector_id, chunk_id, v) in added {
            vectors.last_vector_id = vector_id;
            vectors.matrix.push(chunk_id, &v);
        }
        let vectors = Arc::new(vectors);
        self.put(session_id, vectors.clone());
        Ok(vectors)
    }
}

/// The `k` best chunks over several sessions' matrices, best first.
pub(super) fn scan_all(all: &[Arc<SessionVectors>], query: &[f32], k: usize) -> Vec<(i64, f32)> {
    let mut hits: Vec<(i64, f32)> = all.iter().flat_map(|v| v.matrix.top_k(query, k)).collect();
    hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
    hits.truncate(k);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(rows: usize) -> Arc<SessionVectors> {
        let mut matrix = VectorMatrix::new(16);
        for i in 0..rows {
            matrix.push(i as i64, &[0.25; 16]);
        }
        Arc::new(SessionVectors {
            model: "m".into(),
            removals: 0,
            last_vector_id: rows as i64,
            matrix,
        })
    }

    fn held(cache: &VectorCache) -> (usize, usize) {
        let state = cache.state.lock().unwrap();
        (state.entries.len(), state.bytes)
    }

    /// `search.vector_cache_mib` bounds the sessions kept: filling the budget exactly keeps
    /// them all, one more session evicts the least recently used, and the bytes counted
    /// never go over the budget (only a single session larger than it is kept alone,
    /// for the search using it).
    #[test]
    fn the_cache_stays_within_its_budget_evicting_the_least_recently_used() {
        let one = session(10).bytes();
        let cache = VectorCache::new(3 * one);
        for id in ["a", "b", "c"] {
            cache.put(id, session(10));
        }
        assert_eq!(held(&cache), (3, 3 * one), "at the budget: all kept");
        // `a` is used, so `b` is now the least recently used.
        assert!(cache.peek("a").is_some());
        cache.put("d", session(10));
        assert_eq!(held(&cache), (3, 3 * one), "one past it: one evicted");
        assert!(cache.peek("b").is_none(), "the least recently used went");
        for id in ["a", "c", "d"] {
            assert!(cache.peek(id).is_some(), "{id} kept");
        }
        // A session bigger than the whole budget is kept alone, never beside others.
        cache.put("huge", session(40));
        let (entries, _) = held(&cache);
        assert_eq!(entries, 1);
        cache.put("e", session(10));
        let (entries, bytes) = held(&cache);
        assert_eq!((entries, bytes), (1, one), "the huge one went first");
        // A budget of 0 (vector_cache_mib = 0) keeps at most the session in use.
        let none = VectorCache::new(0);
        none.put("a", session(10));
        none.put("b", session(10));
        assert_eq!(held(&none).0, 1);
    }
}
