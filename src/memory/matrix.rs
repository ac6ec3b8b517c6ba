//! A matrix of f32 rows and its exact top-k scan, in two passes: the rows' one-byte codes
//! ([`CodeRows`]) find the few rows that could be among the best, and only those are
//! scored exactly. The result is the same as an exact scan of every row: rounding only
//! decides which rows to skip. (The search's own cache keeps the codes alone and scores
//! the survivors from the database; this whole matrix is for benchmarks and tests.)

use super::codes::{CodeRows, MAX_DIMENSIONS};

/// Vectors: chunk ids and their rows, in the order they were added.
#[derive(Clone, Default)]
pub struct VectorMatrix {
    dimensions: usize,
    chunk_ids: Vec<i64>,
    /// Row-major, `dimensions` values a row.
    data: Vec<f32>,
    /// The same rows as codes; `None` past [`MAX_DIMENSIONS`], where every scan is exact.
    codes: Option<CodeRows>,
}

impl VectorMatrix {
    pub fn new(dimensions: usize) -> Self {
        Self {
            dimensions,
            chunk_ids: Vec::new(),
            data: Vec::new(),
            codes: (dimensions <= MAX_DIMENSIONS).then(|| CodeRows::new(dimensions)),
        }
    }

    /// Adds a row; `row` must have `dimensions` values.
    pub fn push(&mut self, chunk_id: i64, row: &[f32]) {
        debug_assert_eq!(row.len(), self.dimensions);
        if let Some(codes) = &mut self.codes {
            codes.push(chunk_id, row);
        }
        self.chunk_ids.push(chunk_id);
        self.data.extend_from_slice(row);
    }

    /// Rows held.
    pub fn rows(&self) -> usize {
        self.chunk_ids.len()
    }

    /// The `k` rows with the highest dot product with `query` (`dimensions` values), best
    /// first, ties to the higher chunk id. Rows scoring zero or less are left out.
    pub fn top_k(&self, query: &[f32], k: usize) -> Vec<(i64, f32)> {
        if k == 0 || query.len() != self.dimensions {
            return Vec::new();
        }
        match &self.codes {
            Some(codes) => {
                let rows = codes.candidates(query, k).into_iter().map(|(row, _)| row);
                self.best_of(rows, query, k)
            }
            None => self.best_of(0..self.rows(), query, k),
        }
    }

    /// What [`VectorMatrix::top_k`] returns, from the exact score of every row: the
    /// one-pass scan, for comparison.
    pub fn exact_top_k(&self, query: &[f32], k: usize) -> Vec<(i64, f32)> {
        if k == 0 || query.len() != self.dimensions {
            return Vec::new();
        }
        self.best_of(0..self.rows(), query, k)
    }

    /// The `k` best of `rows` by their exact score.
    fn best_of(
        &self,
        rows: impl IntoIterator<Item = usize>,
        query: &[f32],
        k: usize,
    ) -> Vec<(i64, f32)> {
        let d = self.dimensions;
        best_k(
            rows.into_iter().map(|row| {
                let exact = dot(&self.data[row * d..(row + 1) * d], query);
                (self.chunk_ids[row], exact)
            }),
            k,
        )
    }
}

/// The `k` best of scored chunks, best first, ties to the higher chunk id; scores of zero
/// or less (or not a number) left out.
pub(super) fn best_k(scored: impl IntoIterator<Item = (i64, f32)>, k: usize) -> Vec<(i64, f32)> {
    let mut scored: Vec<(i64, f32)> = scored.into_iter().filter(|(_, s)| *s > 0.0).collect();
    let by_score = |a: &(i64, f32), b: &(i64, f32)| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0));
    if scored.len() > k {
        scored.select_nth_unstable_by(k, by_score);
        scored.truncate(k);
    }
    scored.sort_by(by_score);
    scored
}

/// `a · b`. Eight independent sums let the compiler keep them in SIMD lanes.
pub(super) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut sums = [0.0f32; 8];
    let (a8, a_rest) = a.split_at(a.len() - a.len() % 8);
    let (b8, b_rest) = b.split_at(a8.len());
    for (x, y) in a8.chunks_exact(8).zip(b8.chunks_exact(8)) {
        for i in 0..8 {
            sums[i] += x[i] * y[i];
        }
    }
    let tail: f32 = a_rest.iter().zip(b_rest).map(|(x, y)| x * y).sum();
    sums.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_matches_naive_for_any_length() {
        for n in [0, 1, 7, 8, 9, 257] {
            let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
            let b: Vec<f32> = (0..n).map(|i| 1.0 - i as f32 * 0.25).collect();
            let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - naive).abs() <= 1e-3 * naive.abs().max(1.0));
        }
    }

    #[test]
    fn top_k_returns_best_first() {
        let mut m = VectorMatrix::new(2);
        m.push(10, &[1.0, 0.0]);
        m.push(11, &[0.6, 0.8]);
        m.push(12, &[0.0, 1.0]);
        let hits = m.top_k(&[0.0, 1.0], 2);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), [12, 11]);
    }

    /// A deterministic unit vector with a few large components, like a bag of words.
    fn unit(seed: &mut u64, d: usize) -> Vec<f32> {
        let mut v = vec![0.0f32; d];
        for _ in 0..12 {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            let i = (*seed % d as u64) as usize;
            v[i] += if *seed >> 63 == 0 { 1.0 } else { -0.5 };
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
        v.iter().map(|x| x / norm).collect()
    }

    /// The two-pass scan gives exactly what scoring every row exactly gives, including
    /// among near-ties, which the byte estimates cannot tell apart, and for rows that hold
    /// values that are not finite.
    #[test]
    fn top_k_equals_the_exact_scan() {
        let d = 64;
        let mut seed = 0x2545_F491_4F6C_DD1D;
        let mut m = VectorMatrix::new(d);
        let mut rows: Vec<Vec<f32>> = Vec::new();
        for id in 0..3_000 {
            let mut v = unit(&mut seed, d);
            // Every third row a near copy of an earlier one: scores a hair apart.
            if id % 3 == 2 {
                v = rows[id as usize - 2].clone();
                v[0] += 1e-6;
            }
            // And two rows no rounding can bound.
            if id == 1_000 {
                v[5] = f32::INFINITY;
            }
            if id == 1_001 {
                v[7] = f32::NAN;
            }
            m.push(id, &v);
            rows.push(v);
        }
        for _ in 0..50 {
            let query = unit(&mut seed, d);
            for k in [1, 10, 100] {
                let mut exact: Vec<(i64, f32)> = rows
                    .iter()
                    .enumerate()
                    .map(|(id, row)| (id as i64, dot(row, &query)))
                    .filter(|(_, s)| *s > 0.0)
                    .collect();
                exact.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
                exact.truncate(k);
                assert_eq!(m.top_k(&query, k), exact);
            }
        }
    }
}
