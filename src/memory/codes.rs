//! Vectors kept as one byte a component, and the scan that finds which rows may be among
//! the best for a query.
//!
//! Each row is kept as its own step times signed integers in -127..=127. A scan scores
//! every row in integers against the query rounded to 16 bits and knows how far each
//! estimate can be from the true score, so it returns every row that could still be in
//! the top k: the exact scores of those few (read from the f32 rows, in memory or in the
//! database) then give exactly what an exact scan of every row gives. A quarter of the
//! f32 rows' bytes, and about five times faster to scan where the CPU has AVX2.
//!
//! A session of [`COARSE_ROWS`] rows or more keeps the same bytes split in half: each
//! code's top four bits in one array, its low four in another. Its search
//! ([`CodeRows::likely_candidates`]) ranks every row by the top halves first, reading half
//! the memory, and bounds exactly only each scan thread's best 2,048 (or 40 for each of
//! the k sought, if more): approximate (a row of the
//! true top k can rank below them when its score hangs on the low bits), which the scale
//! bench measures against an exact scan.

/// Most dimensions the integer pass takes: each of its 8 lanes of i32 sums at most
/// 4096 / 8 products of 127 × 32,767 (2,130,641,408), which stays below 2³¹.
pub const MAX_DIMENSIONS: usize = 4096;

/// Rows from which a scan is split across cores: below it, starting threads costs more
/// than it saves.
const PARALLEL_ROWS: usize = 100_000;

/// Rows a thread of a large scan takes at a time (see [`CodeRows::in_parts`]).
const PART_ROWS: usize = 32_768;

/// Rows whose integer sums a scan computes at a time.
const SUMS_AT_ONCE: usize = 2048;

/// Rows from which a session keeps its codes in half bytes for a coarse first pass:
/// below it, the exact scan takes a millisecond or two, faster than splitting them.
pub const COARSE_ROWS: usize = 250_000;

/// Rows the coarse pass keeps for each of the k sought, and at least: what the exact
/// bounds then sort. Enough that a row of the true top k is rarely ranked below them.
const COARSE_KEEP_PER_K: usize = 40;
const COARSE_KEEP_LEAST: usize = 2_048;

/// Rows the coarse pass bounds exactly at a time: their codes put back stay in the cache.
const BOUND_AT_ONCE: usize = 256;

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::dots::{coarse_dots, rounded_dots};

/// What every part of one scan shares: the query rounded to integers, its step, how far
/// an estimate can be from the true score per unit of a row's step.
struct Scan {
    rounded: Vec<i16>,
    query_step: f64,
    reach: f64,
}

impl Scan {
    /// The least and the most a row can score whose codes sum to `sum` with the rounded
    /// query.
    fn bounds(&self, sum: i64, step: f32) -> (f64, f64) {
        let step = f64::from(step);
        let estimate = sum as f64 * step * self.query_step;
        let bound = step * self.reach + 1e-6;
        if estimate.is_finite() && bound.is_finite() {
            (estimate - bound, estimate + bound)
        } else {
            (f64::NEG_INFINITY, f64::INFINITY)
        }
    }
}

/// A query holding a value that is not finite (or too small to round): no row's score can
/// be bounded, so every row is a candidate.
struct Unbounded;

/// Rows offered one at a time, with their chunk and the least and the most each can
/// score: the k best chunks' lower bounds so far (a min-heap) give a floor that only
/// rises, and a row whose upper bound is under the floor when it is offered can never be
/// of the k best chunks. Rows kept are checked against the final floor at the end.
///
/// The floor counts chunks, not rows: a user's chunk is several rows (its own vector and
/// its sentences', `memory::sentences`), and k rows of one chunk surely scoring well say
/// nothing of the k-th best chunk. A chunk's rows are consecutive (one stored blob, pushed
/// in order), so a chunk's best lower bound is settled when the next chunk's row comes.
struct Pruner {
    k: usize,
    lows: BinaryHeap<Reverse<OrderedLow>>,
    floor: f64,
    kept: Vec<(usize, f64)>,
    /// The chunk of the last row kept, with the best lower bound among its rows.
    current: Option<(i64, f64)>,
}

impl Pruner {
    fn new(k: usize) -> Self {
        Self {
            k,
            lows: BinaryHeap::with_capacity(k + 1),
            floor: 0.0,
            kept: Vec::new(),
            current: None,
        }
    }

    fn offer(&mut self, row: usize, chunk: i64, (low, high): (f64, f64)) {
        if self.current.is_some_and(|(id, _)| id != chunk) {
            self.settle();
        }
        if high <= 0.0 || high < self.floor {
            return;
        }
        self.kept.push((row, high));
        let best = match self.current {
            Some((_, best)) => best.max(low),
            None => low,
        };
        self.current = Some((chunk, best));
    }

    /// Counts the current chunk's best lower bound among the k best.
    fn settle(&mut self) {
        let Some((_, low)) = self.current.take() else {
            return;
        };
        self.lows.push(Reverse(OrderedLow(low)));
        if self.lows.len() > self.k {
            self.lows.pop();
        }
        if self.lows.len() == self.k {
            if let Some(Reverse(OrderedLow(kth))) = self.lows.peek() {
                self.floor = self.floor.max(*kth);
            }
        }
    }

    /// The rows that can still be of the k best chunks, each with the most it can score.
    fn kept(mut self) -> Vec<(usize, f64)> {
        self.settle();
        let floor = self.floor;
        self.kept
            .into_iter()
            .filter(|&(_, high)| high >= floor)
            .collect()
    }
}

/// The query for the coarse pass: rounded to i8 and split, for the half bytes' layout, into
/// its even and odd dimensions (`width` each, zero past the last).
struct CoarseQuery {
    even: Vec<i8>,
    odd: Vec<i8>,
    /// The sum of the rounded query.
    sum: f64,
}

impl CoarseQuery {
    /// `query` must be finite.
    fn new(query: &[f32], width: usize) -> Self {
        let step = step_for(query, 127.0);
        let rounded = |i: usize| {
            query
                .get(i)
                .map_or(0, |x| (x / step).round().clamp(-127.0, 127.0) as i8)
        };
        let even: Vec<i8> = (0..width).map(|j| rounded(2 * j)).collect();
        let odd: Vec<i8> = (0..width).map(|j| rounded(2 * j + 1)).collect();
        let sum = even.iter().chain(&odd).map(|q| f64::from(*q)).sum();
        Self { even, odd, sum }
    }
}

/// The `keep` rows with the best estimates offered, and every row whose estimate is not
/// finite (always a candidate). Rows above the bar are gathered and cut back to the best
/// `keep` whenever twice as many gather, the least of those then the bar: linear, where a
/// heap of the best paid a logarithm for every row that beat its least.
struct CoarseBest {
    keep: usize,
    found: Vec<(f64, usize)>,
    bar: f64,
    always: Vec<usize>,
}

impl CoarseBest {
    /// `keep` must be above zero.
    fn new(keep: usize) -> Self {
        Self {
            keep,
            found: Vec::with_capacity(keep.saturating_mul(2).min(PART_ROWS)),
            bar: f64::NEG_INFINITY,
            always: Vec::new(),
        }
    }

    fn offer(&mut self, row: usize, estimate: f64) {
        if !estimate.is_finite() {
            self.always.push(row);
        } else if estimate > self.bar {
            self.found.push((estimate, row));
            if self.found.len() >= self.keep.saturating_mul(2) {
                self.cut();
                self.bar = self.found[self.keep - 1].0;
            }
        }
    }

    fn cut(&mut self) {
        if self.found.len() > self.keep {
            self.found
                .select_nth_unstable_by(self.keep - 1, |a, b| b.0.total_cmp(&a.0));
            self.found.truncate(self.keep);
        }
    }

    fn rows(mut self) -> Vec<usize> {
        self.cut();
        self.always.extend(self.found.iter().map(|(_, row)| *row));
        self.always
    }
}

/// Rows as codes: chunk ids, a step per row, `dimensions` codes per row.
#[derive(Clone, Default)]
pub struct CodeRows {
    dimensions: usize,
    chunk_ids: Vec<i64>,
    /// Below [`COARSE_ROWS`] rows: row-major, `dimensions` codes a row (the row ≈ codes ×
    /// step). Empty from it on.
    codes: Vec<i8>,
    /// Each row's largest absolute component / 127; infinite for a row holding a value
    /// that is not finite, which is then always a candidate.
    steps: Vec<f32>,
    /// From [`COARSE_ROWS`] rows, the same codes in half bytes: the code c as the byte
    /// c + 128, its top four bits (0..=15) in `high` and its low four in `low`,
    /// [`CodeRows::half_width`] bytes a row in each, dimension 2j in the low half of byte j
    /// and 2j + 1 in its high half. Empty below.
    high: Vec<u8>,
    low: Vec<u8>,
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
        self.chunk_ids.capacity() * 8
            + self.codes.capacity()
            + self.steps.capacity() * 4
            + self.high.capacity()
            + self.low.capacity()
    }

    /// Gives back room reserved beyond the rows held.
    pub fn shrink_to_fit(&mut self) {
        self.chunk_ids.shrink_to_fit();
        self.codes.shrink_to_fit();
        self.steps.shrink_to_fit();
        self.high.shrink_to_fit();
        self.low.shrink_to_fit();
    }

    /// Bytes of a row in each half.
    fn half_width(&self) -> usize {
        self.dimensions.div_ceil(2)
    }

    /// Whether the codes are kept in half bytes (from [`COARSE_ROWS`] rows on).
    fn split(&self) -> bool {
        !self.high.is_empty()
    }

    /// The codes of `rows`: borrowed below [`COARSE_ROWS`], put back together from their
    /// halves from it on.
    fn codes_of(&self, rows: Range<usize>) -> Cow<'_, [i8]> {
        let d = self.dimensions;
        if !self.split() {
            return Cow::Borrowed(&self.codes[rows.start * d..rows.end * d]);
        }
        let w = self.half_width();
        let mut out = Vec::with_capacity(rows.len() * d);
        for row in rows {
            let halves = self.high[row * w..(row + 1) * w]
                .iter()
                .zip(&self.low[row * w..(row + 1) * w]);
            for (j, (high, low)) in halves.enumerate() {
                out.push(even_code(*high, *low));
                if 2 * j + 1 < d {
                    out.push(odd_code(*high, *low));
                }
            }
        }
        Cow::Owned(out)
    }

    /// Appends the codes of rows whose ids and steps were just added (`dimensions` a
    /// row), splitting every row in half bytes once there are [`COARSE_ROWS`].
    fn extend_codes(&mut self, codes: &[i8]) {
        if self.split() {
            self.push_halves(codes);
        } else {
            self.codes.extend_from_slice(codes);
            if self.rows() >= COARSE_ROWS && self.dimensions > 0 {
                let whole = std::mem::take(&mut self.codes);
                self.push_halves(&whole);
            }
        }
    }

    fn push_halves(&mut self, codes: &[i8]) {
        let (d, w) = (self.dimensions, self.half_width());
        let rows = codes.len() / d.max(1);
        self.high.reserve(rows * w);
        self.low.reserve(rows * w);
        // Each pair of codes as their bytes c + 128; an odd width's last code is paired
        // with the byte of a zero code.
        let byte = |c: &i8| *c as u8 ^ 0x80;
        for row in codes.chunks_exact(d.max(1)) {
            let pairs = row.chunks_exact(2);
            let last = pairs.remainder().first().map(|c| (byte(c), 0x80u8));
            let pairs = pairs.map(|p| (byte(&p[0]), byte(&p[1]))).chain(last);
            // Two passes over the row, each a plain map the compiler turns into SIMD.
            self.high
                .extend(pairs.clone().map(|(even, odd)| even >> 4 | odd & 0xF0));
            self.low
                .extend(pairs.map(|(even, odd)| even & 15 | odd << 4));
        }
    }

    pub fn reserve(&mut self, rows: usize) {
        self.chunk_ids.reserve(rows);
        if self.split() {
            let bytes = rows.saturating_mul(self.half_width());
            self.high.reserve(bytes);
            self.low.reserve(bytes);
        } else {
            self.codes.reserve(rows.saturating_mul(self.dimensions));
        }
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
        self.extend_codes(codes);
    }

    /// Appends `other`'s rows (of the same width).
    pub fn append(&mut self, other: CodeRows) {
        debug_assert_eq!(other.dimensions, self.dimensions);
        let codes = match other.codes_of(0..other.rows()) {
            Cow::Owned(codes) => codes,
            Cow::Borrowed(_) => other.codes,
        };
        self.chunk_ids.extend(other.chunk_ids);
        self.steps.extend(other.steps);
        self.extend_codes(&codes);
    }

    /// Row `row`'s chunk id.
    pub fn chunk_id(&self, row: usize) -> i64 {
        self.chunk_ids[row]
    }
    /// The rows that may be of the `k` best chunks for `query` by dot product (a chunk
    /// scored by its best row): every row that can score above zero and above what `k`
    /// chunks surely score, each with the most it can score. A query holding a value that is not finite has no rounding to bound:
    /// every row is returned.
    pub fn candidates(&self, query: &[f32], k: usize) -> Vec<(usize, f64)> {
        let scan = match self.scan(query, k) {
            Ok(Some(scan)) => scan,
            Ok(None) => return Vec::new(),
            Err(Unbounded) => return (0..self.rows()).map(|row| (row, f64::INFINITY)).collect(),
        };
        let offer = |pruner: &mut Pruner, rows: Range<usize>| {
            let mut start = rows.start;
            // The integer sums of a stretch of rows at a time, which stay in the CPU's
            // cache between being written and read.
            while start < rows.end {
                let end = (start + SUMS_AT_ONCE).min(rows.end);
                let sums = rounded_dots(&self.codes_of(start..end), &scan.rounded);
                for (i, sum) in sums.into_iter().enumerate() {
                    let row = start + i;
                    pruner.offer(row, self.chunk_ids[row], scan.bounds(sum, self.steps[row]));
                }
                start = end;
            }
        };
        self.in_parts(|| Pruner::new(k), offer, Pruner::kept)
    }

    /// What [`CodeRows::candidates`] returns, found faster and approximately in a session
    /// of [`COARSE_ROWS`] rows or more: its rows are ranked by their codes' top four bits,
    /// and only each scan thread's best 2,048 (or 40 for each row sought, if more) are
    /// bounded exactly. A row of the exact top k is missed only when its score hangs on the
    /// bits dropped. Below [`COARSE_ROWS`], the
    /// same as [`CodeRows::candidates`].
    pub fn likely_candidates(&self, query: &[f32], k: usize) -> Vec<(usize, f64)> {
        if !self.split() {
            return self.candidates(query, k);
        }
        let scan = match self.scan(query, k) {
            Ok(Some(scan)) => scan,
            Ok(None) => return Vec::new(),
            Err(Unbounded) => return (0..self.rows()).map(|row| (row, f64::INFINITY)).collect(),
        };
        let keep = k
            .saturating_mul(COARSE_KEEP_PER_K)
            .max(COARSE_KEEP_LEAST)
            .min(self.rows());
        let w = self.half_width();
        let coarse = CoarseQuery::new(query, w);
        let rounded = |i: usize| scan.rounded.get(i).copied().unwrap_or(0);
        let even: Vec<i16> = (0..w).map(|j| rounded(2 * j)).collect();
        let odd: Vec<i16> = (0..w).map(|j| rounded(2 * j + 1)).collect();
        // Each thread bounds its own best rows: what it keeps holds every one of them that
        // can be among the k best overall, so the union does too.
        let bound = |best: CoarseBest| {
            let mut rows = best.rows();
            // In row order, so that the halves are read front to back.
            rows.sort_unstable();
            let mut pruner = Pruner::new(k);
            for rows in rows.chunks(BOUND_AT_ONCE) {
                let sums = self.half_sums(rows, &even, &odd);
                for (row, sum) in rows.iter().zip(sums) {
                    pruner.offer(
                        *row,
                        self.chunk_ids[*row],
                        scan.bounds(sum, self.steps[*row]),
                    );
                }
            }
            pruner.kept()
        };
        let offer = |best: &mut CoarseBest, rows| self.coarse_best(best, rows, &coarse);
        self.in_parts(|| CoarseBest::new(keep), offer, bound)
    }

    /// The query rounded for an integer scan; `Ok(None)` when nothing can be found (no
    /// rows, k = 0, another width).
    fn scan(&self, query: &[f32], k: usize) -> Result<Option<Scan>, Unbounded> {
        let d = self.dimensions;
        if k == 0 || query.len() != d || self.rows() == 0 {
            return Ok(None);
        }
        if !query.iter().all(|x| x.is_finite()) {
            return Err(Unbounded);
        }
        let query_step = step_for(query, 32767.0);
        if !query_step.is_normal() {
            return Err(Unbounded);
        }
        let rounded: Vec<i16> = query
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
        Ok(Some(Scan {
            reach: query_l1 * (0.5 + 2e-5 * d as f64) + query_step * 64.0 * d as f64,
            query_step,
            rounded,
        }))
    }

    /// A scan of every row: each thread starts a state (`start`), hands it parts of
    /// [`PART_ROWS`] rows at a time (`scan`), taking the next part not yet taken until none
    /// is left, and ends it (`finish`); the threads' results are joined. Parts taken as
    /// they come, rather than a fixed share a thread, let the other threads take over the
    /// work of one whose core is busy with something else (the keyword leg runs beside
    /// the vector scan). Below [`PARALLEL_ROWS`] rows, one thread (this one).
    fn in_parts<S, T: Send>(
        &self,
        start: impl Fn() -> S + Sync,
        scan: impl Fn(&mut S, Range<usize>) + Sync,
        finish: impl Fn(S) -> Vec<T> + Sync,
    ) -> Vec<T> {
        let rows = self.rows();
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
        if rows < PARALLEL_ROWS || threads < 2 {
            let mut state = start();
            scan(&mut state, 0..rows);
            return finish(state);
        }
        let next = AtomicUsize::new(0);
        let work = || {
            let mut state = start();
            loop {
                let from = next
                    .fetch_add(1, Ordering::Relaxed)
                    .saturating_mul(PART_ROWS);
                if from >= rows {
                    break;
                }
                scan(&mut state, from..(from + PART_ROWS).min(rows));
            }
            finish(state)
        };
        std::thread::scope(|scope| {
            // This thread works too; a thread that cannot be started leaves its parts to
            // the others.
            let helpers: Vec<_> = (1..threads)
                .map_while(|_| std::thread::Builder::new().spawn_scoped(scope, work).ok())
                .collect();
            let mut found = work();
            for helper in helpers {
                found.extend(
                    helper
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                );
            }
            found
        })
    }

    /// Offers `rows` to `best` by their half bytes' estimate against `query`.
    fn coarse_best(&self, best: &mut CoarseBest, rows: Range<usize>, query: &CoarseQuery) {
        let w = self.half_width();
        let mut start = rows.start;
        while start < rows.end {
            let end = (start + SUMS_AT_ONCE).min(rows.end);
            let sums = coarse_dots(&self.high[start * w..end * w], &query.even, &query.odd);
            // codes · query ≈ Σ q × (16 × top − 128), the low bits taken as zero: most
            // components of a sparse vector are zero codes, which this gets exactly. A
            // plain map, which the compiler turns into SIMD.
            let base = 128.0 * query.sum;
            let estimates: Vec<f64> = sums
                .iter()
                .zip(&self.steps[start..end])
                .map(|(sum, step)| (16.0 * f64::from(*sum) - base) * f64::from(*step))
                .collect();
            // Most rows of a large set fall below the bar: a test of eight at a time,
            // without a branch a row, finds the few groups that hold one above it or one
            // not finite.
            for (group, estimates) in estimates.chunks(8).enumerate() {
                let bar = best.bar;
                let offered = estimates
                    .iter()
                    .fold(false, |any, e| any | (*e > bar) | !e.is_finite());
                if offered {
                    for (i, estimate) in estimates.iter().enumerate() {
                        best.offer(start + group * 8 + i, *estimate);
                    }
                }
            }
            start = end;
        }
    }

    /// Each of `rows`' codes · the rounded query (its even and odd dimensions apart,
    /// [`CodeRows::half_width`] each), from the rows' half bytes: their even and odd codes
    /// put back, then summed by the exact scan's kernel.
    fn half_sums(&self, rows: &[usize], even: &[i16], odd: &[i16]) -> Vec<i64> {
        let w = self.half_width();
        let mut even_codes = Vec::with_capacity(rows.len() * w);
        let mut odd_codes = Vec::with_capacity(rows.len() * w);
        for row in rows {
            let halves = self.high[row * w..(row + 1) * w]
                .iter()
                .zip(&self.low[row * w..(row + 1) * w]);
            even_codes.extend(halves.clone().map(|(high, low)| even_code(*high, *low)));
            odd_codes.extend(halves.map(|(high, low)| odd_code(*high, *low)));
        }
        rounded_dots(&even_codes, even)
            .into_iter()
            .zip(rounded_dots(&odd_codes, odd))
            .map(|(even, odd)| even + odd)
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
        let codes = self
            .codes_of(from..self.rows())
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
        let codes: Vec<i8> = codes.iter().map(|c| *c as i8).collect();
        self.extend_codes(&codes);
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

/// The code of dimension 2j from byte j of the top and low halves (the code c is kept as the
/// byte c + 128, dimension 2j in each byte's low half); the inverse of
/// [`CodeRows::push_halves`].
fn even_code(high: u8, low: u8) -> i8 {
    ((high << 4 | low & 15) ^ 0x80) as i8
}

/// The code of dimension 2j + 1 (each byte's high half); see [`even_code`].
fn odd_code(high: u8, low: u8) -> i8 {
    ((high & 0xF0 | low >> 4) ^ 0x80) as i8
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let (rows, exact, query) = random_rows(8, PARALLEL_ROWS + 1_234, 0x9E37_79B9_7F4A_7C15);
        for k in [1, 10, 100] {
            let found: Vec<usize> = rows.candidates(&query, k).iter().map(|c| c.0).collect();
            for row in exact_top(&exact, &query, k) {
                assert!(found.contains(&row), "row {row} of the top {k} missed");
            }
            assert!(found.len() < rows.rows() / 10, "a scan that prunes");
        }
    }

    /// Chunks of several rows each (a user's chunk: its own vector and its sentences'):
    /// the scan keeps a row of every chunk of the exact top k chunks, each chunk scored by
    /// its best row, however many rows the best chunks have. Counting rows, k rows of one
    /// chunk would set the floor and lose the next chunks.
    #[test]
    fn a_scan_counts_chunks_not_rows() {
        let (_, noise, query) = random_rows(16, PARALLEL_ROWS + 777, 0x5DEE_CE66_D1CE_4E5B);
        let (_, bases, _) = random_rows(16, noise.len(), 0x2545_F491_4F6C_DD1D);
        // Chunks of 1 to 13 rows in turn, a chunk's rows alike (its sentences share its
        // topic): the best rows crowd into the best chunks.
        let mut rows = CodeRows::new(16);
        let (mut exact, mut chunk_of) = (Vec::new(), Vec::new());
        let (mut chunk, mut left) = (0i64, 1usize);
        for (row, noise) in noise.iter().enumerate() {
            if left == 0 {
                chunk += 1;
                left = 1 + row % 13;
            }
            left -= 1;
            let base = &bases[chunk as usize];
            let v: Vec<f32> = base.iter().zip(noise).map(|(b, n)| b + 0.1 * n).collect();
            rows.push(chunk, &v);
            exact.push(v);
            chunk_of.push(chunk);
        }
        let mut best: std::collections::HashMap<i64, f32> = Default::default();
        for (row, v) in exact.iter().enumerate() {
            let score: f32 = v.iter().zip(&query).map(|(a, b)| a * b).sum();
            let entry = best.entry(chunk_of[row]).or_insert(f32::MIN);
            *entry = entry.max(score);
        }
        let mut ranked: Vec<(i64, f32)> = best.into_iter().filter(|(_, s)| *s > 0.0).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
        for k in [1, 10, 100] {
            let found: std::collections::HashSet<i64> = rows
                .candidates(&query, k)
                .iter()
                .map(|c| rows.chunk_id(c.0))
                .collect();
            for (chunk, _) in ranked.iter().take(k) {
                assert!(found.contains(chunk), "chunk {chunk} of the top {k} missed");
            }
            assert!(found.len() < chunk as usize / 5, "a scan that prunes");
        }
    }

    /// Random rows of `d` values in -0.5..0.5 from `seed`, and a query.
    fn random_rows(d: usize, rows: usize, seed: u64) -> (CodeRows, Vec<Vec<f32>>, Vec<f32>) {
        let mut state = seed;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        let mut codes = CodeRows::new(d);
        let mut exact = Vec::new();
        for i in 0..rows {
            let v: Vec<f32> = (0..d).map(|_| next()).collect();
            codes.push(i as i64, &v);
            exact.push(v);
        }
        let query = (0..d).map(|_| next()).collect();
        (codes, exact, query)
    }

    /// The rows of the exact top `k`, best first, those scoring above zero.
    fn exact_top(exact: &[Vec<f32>], query: &[f32], k: usize) -> Vec<usize> {
        let mut scored: Vec<(usize, f32)> = exact
            .iter()
            .enumerate()
            .map(|(i, v)| (i, v.iter().zip(query).map(|(a, b)| a * b).sum()))
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        scored
            .into_iter()
            .take(k)
            .filter(|(_, s)| *s > 0.0)
            .map(|(i, _)| i)
            .collect()
    }

    /// From COARSE_ROWS rows on the codes are kept in half bytes, however the rows came
    /// (pushed, appended, from blobs): the top halves hold each code's top four bits, the
    /// codes put back together are the ones stored, and the sums from the halves are the
    /// sums of those codes.
    #[test]
    fn the_codes_split_in_half_bytes_from_coarse_rows_on() {
        let d = 5;
        let (small, _, _) = random_rows(d, COARSE_ROWS - 1, 1);
        assert!(!small.split() && small.codes.len() == small.rows() * d);
        let (ids, steps, blobs) = small.to_blobs(0);
        let (more, _, _) = random_rows(d, 3, 2);
        let mut appended = small.clone();
        appended.append(more.clone());
        let mut loaded = CodeRows::new(d);
        assert!(loaded.extend_from_blobs(COARSE_ROWS - 1, &ids, &steps, &blobs));
        let row = [0.1, -0.2, 0.3, -0.4, 0.5];
        loaded.push(1, &row);
        let pushed = encode(&row).1;
        // Rows added to a split set, and a split set appended.
        let mut grown = appended.clone();
        grown.push(2, &row);
        grown.append(more.clone());
        let mut onto = more.clone();
        onto.append(appended.clone());
        let (ids, steps, codes) = more.to_blobs(0);
        assert!(grown.extend_from_blobs(3, &ids, &steps, &codes));
        for (set, rows) in [(&grown, COARSE_ROWS + 9), (&onto, COARSE_ROWS + 5)] {
            assert!(set.split() && set.rows() == rows && set.high.len() == rows * 3);
        }
        let stored = grown.to_blobs(0).2;
        let tail = [&pushed[..], &more.codes_of(0..3), &more.codes_of(0..3)].concat();
        let tail: Vec<u8> = tail.iter().map(|c| *c as u8).collect();
        assert_eq!(stored[(COARSE_ROWS + 2) * d..], tail[..]);
        let (more_blobs, appended_blobs) = (more.to_blobs(0).2, appended.to_blobs(0).2);
        assert_eq!(onto.to_blobs(0).2, [more_blobs, appended_blobs].concat());

        for (whole, last) in [(appended, more.codes_of(0..3)), (loaded, pushed.into())] {
            assert!(whole.split() && whole.codes.is_empty());
            let w = whole.half_width();
            assert_eq!(
                (w, whole.high.len(), whole.low.len()),
                (3, whole.rows() * w, whole.rows() * w)
            );
            let stored = whole.to_blobs(0).2;
            assert_eq!(
                stored[..blobs.len()],
                blobs[..],
                "the rows before the split"
            );
            let tail: Vec<u8> = last.iter().map(|c| *c as u8).collect();
            assert_eq!(stored[blobs.len()..], tail[..], "the rows after it");
            let rounded = [-32_767i16, 32_767, -1, 12_345, 7];
            let (even, odd) = ([-32_767i16, -1, 7], [32_767i16, 12_345, 0]);
            let rows = [0, COARSE_ROWS / 2, whole.rows() - 1];
            let wants: Vec<i64> = rows
                .iter()
                .map(|row| rounded_dots(&whole.codes_of(*row..*row + 1), &rounded)[0])
                .collect();
            assert_eq!(whole.half_sums(&rows, &even, &odd), wants, "the rows' sums");
            for row in rows {
                for i in 0..d {
                    let byte = whole.high[row * w + i / 2];
                    let top = if i % 2 == 0 { byte & 15 } else { byte >> 4 };
                    assert_eq!(top, (stored[row * d + i] ^ 0x80) >> 4, "row {row}, {i}");
                }
            }
        }
    }

    /// Below COARSE_ROWS the likely candidates are the exact ones; from it on they still
    /// hold the exact top k of random rows, prune, and keep a row that is not finite.
    #[test]
    fn likely_candidates_hold_the_exact_top_k() {
        // An odd width: the half bytes' padding is scanned too.
        let d = 25;
        let (small, _, query) = random_rows(d, 5_000, 3);
        assert_eq!(
            small.likely_candidates(&query, 10),
            small.candidates(&query, 10)
        );

        let (mut large, mut exact_large, query) = random_rows(d, COARSE_ROWS + 1_000, 4);
        large.push(-1, &[f32::NAN; 25]);
        exact_large.push(vec![0.0; d]);
        for k in [1, 10, 50] {
            let found: Vec<usize> = large
                .likely_candidates(&query, k)
                .iter()
                .map(|c| c.0)
                .collect();
            for row in exact_top(&exact_large, &query, k) {
                assert!(found.contains(&row), "row {row} of the top {k} missed");
            }
            assert!(
                found.contains(&(large.rows() - 1)),
                "the row that is not finite"
            );
            // The exact scan of a split set rebuilds its codes: still every row.
            let exact_found: Vec<usize> = large.candidates(&query, k).iter().map(|c| c.0).collect();
            for row in exact_top(&exact_large, &query, k) {
                assert!(exact_found.contains(&row), "exact scan: row {row} missed");
            }
            assert!(found.len() <= k * COARSE_KEEP_PER_K + COARSE_KEEP_LEAST + 1);
        }
    }

    /// The best `keep` of the estimates offered, ties among them, and every estimate
    /// that is not finite, however many rows are offered and in whatever order.
    #[test]
    fn coarse_best_keeps_the_best_and_every_row_not_finite() {
        // Rows 0..1000 with every estimate 0..1000 once, in a scrambled order; row 1000
        // ties the best; rows 1001.. are not finite.
        let estimate = |row: usize| match row {
            0..=999 => ((row * 7_919) % 1_000) as f64,
            1_000 => 999.0,
            1_001 => f64::NAN,
            1_002 => f64::INFINITY,
            _ => f64::NEG_INFINITY,
        };
        let mut best = CoarseBest::new(3);
        for row in 0..1_004 {
            best.offer(row, estimate(row));
        }
        let (always, kept): (Vec<usize>, Vec<usize>) =
            best.rows().into_iter().partition(|row| *row > 1_000);
        let mut always = always;
        always.sort_unstable();
        assert_eq!(always, [1_001, 1_002, 1_003]);
        let mut kept: Vec<f64> = kept.into_iter().map(estimate).collect();
        kept.sort_by(f64::total_cmp);
        assert_eq!(kept, [998.0, 999.0, 999.0]);
    }
}
