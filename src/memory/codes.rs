//! Vectors kept as one byte a component, and the scan that finds which rows may be among
//! the best for a query.
//!
//! Each row is kept as its own step times signed integers in -127..=127. A scan scores
//! every row in integers against the query rounded to 16 bits and knows how far each
//! estimate can be from the true score, so it returns every row that could still be in
//! the top k: the exact scores of those few (read from the f32 rows, in memory or in the
//! database) then give exactly what an exact scan of every row gives. A quarter of the
//! f32 rows' bytes, and about five times faster to scan where the CPU has AVX2.

/// Most dimensions the integer pass takes: each of its 8 lanes of i32 sums at most
/// 4096 / 8 products of 127 × 32,767 (2,130,706,432), which stays below 2³¹.
pub const MAX_DIMENSIONS: usize = 4096;

/// Rows from which a scan is split across cores: below it, starting threads costs more
/// than it saves.
const PARALLEL_ROWS: usize = 100_000;

/// Rows whose integer sums a scan computes at a time.
const SUMS_AT_ONCE: usize = 2048;

/// What every part of one scan shares: the query rounded to integers, its step, how far
/// an estimate can be from the true score per unit of a row's step, and the k sought.
struct Scan {
    rounded_query: Vec<i16>,
    query_step: f64,
    reach: f64,
    k: usize,
}

/// Rows as codes: chunk ids, a step per row, `dimensions` codes per row.
#[derive(Clone, Default)]
pub struct CodeRows {
    dimensions: usize,
    chunk_ids: Vec<i64>,
    /// Row-major, `dimensions` codes a row: the row ≈ codes × step.
    codes: Vec<i8>,
    /// Each row's largest absolute component / 127; infinite for a row holding a value
    /// that is not finite, which is then always a candidate.
    steps: Vec<f32>,
}

/// One row's codes and step.
pub fn encode(row: &[f32]) -> (f32, Vec<i8>) {
    // A row with a value that is not finite, or so small that its step is not a normal
    // number, has no rounding to bound: it is always a candidate.
    let step = Some(step_for(row, 127.0))
        .filter(|step| row.iter().all(|x| x.is_finite()) && step.is_normal())
        .unwrap_or(f32::INFINITY);
    let codes = row
        .iter()
        .map(|x| (x / step).round().clamp(-127.0, 127.0) as i8)
        .collect();
    (step, codes)
}

impl CodeRows {
    /// Rows of `dimensions` (at most [`MAX_DIMENSIONS`]) values.
    pub fn new(dimensions: usize) -> Self {
        Self {
            dimensions,
            ..Self::default()
        }
    }

    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    pub fn rows(&self) -> usize {
        self.chunk_ids.len()
    }

    /// Memory held (what is allocated, not only what is used).
    pub fn bytes(&self) -> usize {
        self.chunk_ids.capacity() * 8 + self.codes.capacity() + self.steps.capacity() * 4
    }

    /// Gives back room reserved beyond the rows held.
    pub fn shrink_to_fit(&mut self) {
        self.chunk_ids.shrink_to_fit();
        self.codes.shrink_to_fit();
        self.steps.shrink_to_fit();
    }

    pub fn reserve(&mut self, rows: usize) {
        self.chunk_ids.reserve(rows);
        self.codes.reserve(rows.saturating_mul(self.dimensions));
        self.steps.reserve(rows);
    }

    /// Adds a row of `dimensions` values.
    pub fn push(&mut self, chunk_id: i64, row: &[f32]) {
        debug_assert_eq!(row.len(), self.dimensions);
        let (step, codes) = encode(row);
        self.push_encoded(chunk_id, step, &codes);
    }

    /// Adds a row already encoded (`dimensions` codes).
    pub fn push_encoded(&mut self, chunk_id: i64, step: f32, codes: &[i8]) {
        debug_assert_eq!(codes.len(), self.dimensions);
        self.chunk_ids.push(chunk_id);
        self.steps.push(step);
        self.codes.extend_from_slice(codes);
    }

    /// Appends `other`'s rows (of the same width).
    pub fn append(&mut self, other: CodeRows) {
        debug_assert_eq!(other.dimensions, self.dimensions);
        self.chunk_ids.extend(other.chunk_ids);
        self.steps.extend(other.steps);
        self.codes.extend(other.codes);
    }

    /// Row `row`'s chunk id.
    pub fn chunk_id(&self, row: usize) -> i64 {
        self.chunk_ids[row]
    }

    /// The rows that may be among the `k` best for `query` by dot product: every row that
    /// can score above zero and above what `k` rows surely score, each with the most it
    /// can score. A query holding a value that is not finite has no rounding to bound:
    /// every row is returned.
    pub fn candidates(&self, query: &[f32], k: usize) -> Vec<(usize, f64)> {
        let d = self.dimensions;
        if k == 0 || query.len() != d || self.rows() == 0 {
            return Vec::new();
        }
        if !query.iter().all(|x| x.is_finite()) {
            return (0..self.rows()).map(|row| (row, f64::INFINITY)).collect();
        }
        let query_step = step_for(query, 32767.0);
        if !query_step.is_normal() {
            return (0..self.rows()).map(|row| (row, f64::INFINITY)).collect();
        }
        let rounded_query: Vec<i16> = query
            .iter()
            .map(|x| (x / query_step).round().clamp(-32767.0, 32767.0) as i16)
            .collect();
        // With row = step × codes + e and query = query_step × rounded + f, where each
        // |e| ≤ step / 2 and |f| ≤ query_step / 2:
        // row · query − step × query_step × (codes · rounded) = e · query + step × codes · f,
        // at most step / 2 × (|query|₁ + query_step × 127 × d). The exact score is itself
        // summed in f32, off by up to d × 2⁻²³ of Σ|row × query| ≤ 127 × step × |query|₁,
        // which the extra `2e-5 × d` covers; 1e-6 covers rounding the estimate.
        // In f64: a product of large steps must not overflow to a bound that excludes.
        let query_l1: f64 = query.iter().map(|x| f64::from(x.abs())).sum();
        let query_step = f64::from(query_step);
        let scan = Scan {
            reach: query_l1 * (0.5 + 2e-5 * d as f64) + query_step * 64.0 * d as f64,
            query_step,
            rounded_query,
            k,
        };
        // A large session is scanned in parts on as many threads as there are cores: the
        // scan is bound by reading the codes, and each core reads its own part. Each
        // part's candidates hold every row of it that can be among the k best overall
        // (its floor is at most the whole scan's), so their union does too.
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
        if self.rows() < PARALLEL_ROWS || threads < 2 {
            return self.candidates_in(0..self.rows(), &scan);
        }
        let part = self.rows().div_ceil(threads);
        std::thread::scope(|scope| {
            // A part whose thread cannot be started is scanned here instead.
            let (mut found, mut parts) = (Vec::new(), Vec::new());
            for t in 0..threads {
                let rows = t * part..((t + 1) * part).min(self.rows());
                let scan = &scan;
                let mine = rows.clone();
                let spawned = std::thread::Builder::new()
                    .spawn_scoped(scope, move || self.candidates_in(mine, scan));
                match spawned {
                    Ok(handle) => parts.push(handle),
                    Err(_) => found.extend(self.candidates_in(rows, scan)),
                }
            }
            for part in parts {
                found.extend(
                    part.join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                );
            }
            found
        })
    }

    /// [`CodeRows::candidates`] among `rows`: indexes of the whole.
    fn candidates_in(&self, rows: std::ops::Range<usize>, scan: &Scan) -> Vec<(usize, f64)> {
        let (d, k) = (self.dimensions, scan.k);
        // One pass: the k best lower bounds so far (a min-heap) give a floor that only
        // rises; a row whose upper bound is under the floor when it is seen can never be
        // among the k best. Rows kept are checked against the final floor at the end.
        let mut lows: std::collections::BinaryHeap<std::cmp::Reverse<OrderedLow>> =
            std::collections::BinaryHeap::with_capacity(k.min(rows.len()) + 1);
        let mut floor = 0.0f64;
        let mut kept: Vec<(usize, f64)> = Vec::new();
        // The integer sums of a stretch of rows at a time, which stay in the CPU's cache
        // between being written and read.
        let mut start = rows.start;
        while start < rows.end {
            let end = (start + SUMS_AT_ONCE).min(rows.end);
            let sums = rounded_dots(&self.codes[start * d..end * d], &scan.rounded_query);
            for (i, (sum, step)) in sums.into_iter().zip(&self.steps[start..end]).enumerate() {
                let step = f64::from(*step);
                let estimate = sum as f64 * step * scan.query_step;
                let bound = step * scan.reach + 1e-6;
                let (low, high) = if estimate.is_finite() && bound.is_finite() {
                    (estimate - bound, estimate + bound)
                } else {
                    (f64::NEG_INFINITY, f64::INFINITY)
                };
                if high <= 0.0 || high < floor {
                    continue;
                }
                kept.push((start + i, high));
                lows.push(std::cmp::Reverse(OrderedLow(low)));
                if lows.len() > k {
                    lows.pop();
                }
                if lows.len() == k {
                    if let Some(std::cmp::Reverse(OrderedLow(kth))) = lows.peek() {
                        floor = floor.max(*kth);
                    }
                }
            }
            start = end;
        }
        kept.into_iter()
            .filter(|&(_, high)| high >= floor)
            .collect()
    }

    /// Rows `from..` as the three blobs a stored block holds: chunk ids (i64), steps (f32)
    /// and codes, little-endian.
    pub fn to_blobs(&self, from: usize) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
        let ids = self.chunk_ids[from..]
            .iter()
            .flat_map(|id| id.to_le_bytes())
            .collect();
        let steps = self.steps[from..]
            .iter()
            .flat_map(|s| s.to_le_bytes())
            .collect();
        let codes = self.codes[from * self.dimensions..]
            .iter()
            .map(|c| *c as u8)
            .collect();
        (ids, steps, codes)
    }

    /// Appends the rows of a stored block; `false` (and nothing added) when the blobs do
    /// not hold `rows` rows of this width.
    pub fn extend_from_blobs(
        &mut self,
        rows: usize,
        ids: &[u8],
        steps: &[u8],
        codes: &[u8],
    ) -> bool {
        let whole = rows.checked_mul(8) == Some(ids.len())
            && rows.checked_mul(4) == Some(steps.len())
            && rows.checked_mul(self.dimensions) == Some(codes.len());
        if !whole {
            return false;
        }
        self.reserve(rows);
        self.chunk_ids.extend(
            ids.chunks_exact(8)
                .map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes"))),
        );
        self.steps.extend(
            steps
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes"))),
        );
        self.codes.extend(codes.iter().map(|c| *c as i8));
        true
    }
}

/// A lower bound ordered by `total_cmp`, for the heap of the best ones.
#[derive(PartialEq)]
struct OrderedLow(f64);

impl Eq for OrderedLow {}

impl PartialOrd for OrderedLow {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OrderedLow {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The step that maps `values`' largest magnitude to `top`.
pub(super) fn step_for(values: &[f32], top: f32) -> f32 {
    let largest = values.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if largest > 0.0 {
        largest / top
    } else {
        1.0
    }
}

fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Each row of `codes` (`query.len()` values a row) · `query`, in integers.
fn rounded_dots(codes: &[i8], query: &[i16]) -> Vec<i64> {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: this CPU has AVX2, as just checked.
        return unsafe { rounded_dots_avx2(codes, query) };
    }
    rounded_dots_plain(codes, query)
}

/// The same sums on any CPU.
fn rounded_dots_plain(codes: &[i8], query: &[i16]) -> Vec<i64> {
    let d = query.len().max(1);
    codes
        .chunks_exact(d)
        .map(|row| {
            row.iter()
                .zip(query)
                .map(|(x, y)| *x as i64 * *y as i64)
                .sum()
        })
        .collect()
}

/// Sixteen codes at a time, widened to 16 bits and multiplied with the query's in pairs
/// (`vpmaddwd`): left to itself, the compiler widened both to 32 bits and multiplied
/// eight at a time (`vpmulld`), several times slower.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn rounded_dots_avx2(codes: &[i8], query: &[i16]) -> Vec<i64> {
    use std::arch::x86_64::{
        __m128i, __m256i, _mm256_add_epi32, _mm256_castsi256_si128, _mm256_cvtepi8_epi16,
        _mm256_extracti128_si256, _mm256_loadu_si256, _mm256_madd_epi16, _mm256_setzero_si256,
        _mm256_storeu_si256, _mm_add_epi32, _mm_cvtsi128_si32, _mm_loadu_si128, _mm_shuffle_epi32,
    };
    const LANES: usize = 16;
    let d = query.len();
    let whole = d - d % LANES;
    // A row's whole sum, at most d × 127 × 32,767, fits in an i32 up to 512 dimensions:
    // then its lanes are added in registers (storing them and adding one by one took a
    // third of the scan).
    let sum_fits_i32 = whole <= 512;
    let mut out = Vec::with_capacity(codes.len() / d.max(1));
    for row in codes.chunks_exact(d.max(1)) {
        let mut sums = _mm256_setzero_si256();
        let mut at = 0;
        while at < whole {
            // SAFETY: `at + 16 <= whole <= d`, and `row` and `query` hold `d` values each;
            // the loads need no alignment.
            let (x, y) = unsafe {
                (
                    _mm_loadu_si128(row.as_ptr().add(at).cast::<__m128i>()),
                    _mm256_loadu_si256(query.as_ptr().add(at).cast::<__m256i>()),
                )
            };
            // Each of the 8 lanes of i32 sums at most 4096 / 8 products of 127 × 32,767:
            // below 2³¹ (see MAX_DIMENSIONS).
            sums = _mm256_add_epi32(sums, _mm256_madd_epi16(_mm256_cvtepi8_epi16(x), y));
            at += LANES;
        }
        let mut total: i64 = if sum_fits_i32 {
            let four = _mm_add_epi32(
                _mm256_castsi256_si128(sums),
                _mm256_extracti128_si256::<1>(sums),
            );
            let two = _mm_add_epi32(four, _mm_shuffle_epi32::<0b01_00_11_10>(four));
            let one = _mm_add_epi32(two, _mm_shuffle_epi32::<0b10_11_00_01>(two));
            i64::from(_mm_cvtsi128_si32(one))
        } else {
            let mut lanes = [0i32; 8];
            // SAFETY: `lanes` is 32 bytes; the store needs no alignment.
            unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast::<__m256i>(), sums) };
            lanes.iter().map(|s| i64::from(*s)).sum()
        };
        for i in whole..d {
            total += i64::from(row[i]) * i64::from(query[i]);
        }
        out.push(total);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plain_sums_equal_the_simd_ones() {
        let d: usize = 37;
        let codes: Vec<i8> = (0..d * 5).map(|i| ((i * 37) % 255) as i8).collect();
        let query: Vec<i16> = (0..d).map(|i| (i as i32 * 997 - 16_000) as i16).collect();
        let plain = rounded_dots_plain(&codes, &query);
        assert_eq!(rounded_dots(&codes, &query), plain);
        assert_eq!(plain.len(), 5);
    }

    /// The widest sums there can be, of either sign, at every width up to the most
    /// dimensions: the SIMD sums never wrap.
    #[test]
    fn the_largest_sums_do_not_overflow() {
        for d in [
            1,
            15,
            16,
            17,
            255,
            256,
            511,
            512,
            513,
            527,
            528,
            4095,
            MAX_DIMENSIONS,
        ] {
            for (code, value) in [(127i8, 32_767i16), (-127, 32_767), (127, -32_767)] {
                let codes = vec![code; d * 3];
                let query = vec![value; d];
                let want = i64::from(code) * i64::from(value) * d as i64;
                assert_eq!(rounded_dots(&codes, &query), vec![want; 3], "d = {d}");
            }
        }
    }

    proptest::proptest! {
        /// Any codes and query (any width, any values) give the plain sums.
        #[test]
        fn any_codes_give_the_plain_sums(
            query in proptest::collection::vec(-32_767i16..=32_767, 1..700),
            rows in 0usize..5,
            seed in proptest::prelude::any::<u64>(),
        ) {
            let mut state = seed;
            let codes: Vec<i8> = (0..rows * query.len())
                .map(|_| {
                    state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    ((state >> 56) as u8 as i16 - 128).clamp(-127, 127) as i8
                })
                .collect();
            proptest::prop_assert_eq!(
                rounded_dots(&codes, &query),
                rounded_dots_plain(&codes, &query)
            );
        }
    }

    #[test]
    fn blobs_round_trip_and_refuse_the_wrong_size() {
        let mut rows = CodeRows::new(3);
        rows.push(7, &[0.5, -0.25, 1.0]);
        rows.push(9, &[f32::NAN, 0.0, 0.0]);
        let (ids, steps, codes) = rows.to_blobs(0);
        let mut back = CodeRows::new(3);
        assert!(back.extend_from_blobs(2, &ids, &steps, &codes));
        assert_eq!(
            back.to_blobs(0),
            (ids.clone(), steps.clone(), codes.clone())
        );
        assert_eq!(back.chunk_id(1), 9);
        let mut wrong = CodeRows::new(3);
        assert!(!wrong.extend_from_blobs(3, &ids, &steps, &codes));
        assert!(!wrong.extend_from_blobs(2, &ids, &steps, &codes[1..]));
        assert_eq!(wrong.rows(), 0);
    }

    /// A session large enough to be scanned in parts (on this machine's cores) still
    /// yields every row of the exact top k, and the same candidates as one part would.
    #[test]
    fn a_scan_in_parts_finds_every_row_of_the_exact_top_k() {
        let d = 8;
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        let mut rows = CodeRows::new(d);
        let mut exact = Vec::new();
        for i in 0..PARALLEL_ROWS + 1_234 {
            let v: Vec<f32> = (0..d).map(|_| next()).collect();
            rows.push(i as i64, &v);
            exact.push(v);
        }
        let query: Vec<f32> = (0..d).map(|_| next()).collect();
        for k in [1, 10, 100] {
            let found: Vec<usize> = rows.candidates(&query, k).iter().map(|c| c.0).collect();
            let mut scored: Vec<(usize, f32)> = exact
                .iter()
                .enumerate()
                .map(|(i, v)| (i, v.iter().zip(&query).map(|(a, b)| a * b).sum()))
                .collect();
            scored.sort_by(|a, b| b.1.total_cmp(&a.1));
            for (row, score) in scored.iter().take(k) {
                if *score > 0.0 {
                    assert!(found.contains(row), "row {row} of the top {k} missed");
                }
            }
            assert!(found.len() < rows.rows() / 10, "a scan that prunes");
        }
    }
}
